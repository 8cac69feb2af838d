"""The IPv6 prefixes routed to sessions (WAN /64s and delegated prefixes),
by prefix, and which of them a new prefix would overlap.

Equality is not enough: an AAA prefix may lie inside a pooled prefix of
another length (a static /64 inside a pool of /56s), or hold one. The data
plane routes each /64 of a prefix, so two overlapping prefixes meet in one
/64 entry and the later session's insert fails. Checking every live prefix
would cost a scan per session set-up at 2,000 set-ups a second, so the
prefixes are also kept as a sorted list of address spans: prefixes admitted
through `overlapping()` never overlap, and for disjoint spans a new one
overlaps a held one exactly when the held span that starts last at or before
its start reaches it, or the next one starts inside it. A look-up is then
one bisection; an insert or a delete moves part of a list of at most two
entries per session.
"""
from __future__ import annotations

import bisect
import ipaddress
from typing import Generic, Iterator, TypeVar

IPv6Network = ipaddress.IPv6Network
Owner = TypeVar("Owner")


def _span(p: IPv6Network) -> tuple[int, int]:
    start = int(p.network_address)
    return start, start + p.num_addresses - 1


class PrefixIndex(Generic[Owner]):
    """A mapping of live prefixes to their sessions, with overlap look-up."""

    def __init__(self) -> None:
        self._owners: dict[IPv6Network, Owner] = {}
        self._spans: list[tuple[int, int]] = []     # sorted (start, end) of the prefixes held

    def __len__(self) -> int:
        return len(self._owners)

    def __iter__(self) -> Iterator[IPv6Network]:
        return iter(self._owners)

    def __contains__(self, p: object) -> bool:
        return p in self._owners

    def get(self, p: IPv6Network, default: Owner | None = None) -> Owner | None:
        return self._owners.get(p, default)

    def __getitem__(self, p: IPv6Network) -> Owner:
        return self._owners[p]

    def __setitem__(self, p: IPv6Network, owner: Owner) -> None:
        if p not in self._owners:
            bisect.insort(self._spans, _span(p))
        self._owners[p] = owner

    def __delitem__(self, p: IPv6Network) -> None:
        del self._owners[p]
        span = _span(p)
        i = bisect.bisect_left(self._spans, span)
        if i < len(self._spans) and self._spans[i] == span:
            del self._spans[i]

    def overlapping(self, p: IPv6Network) -> IPv6Network | None:
        """A held prefix that shares an address with `p` (equal to it,
        inside it or holding it), None if none does."""
        start, end = _span(p)
        i = bisect.bisect_right(self._spans, (start, end))
        for j in (i - 1, i):
            if 0 <= j < len(self._spans):
                s, e = self._spans[j]
                if s <= end and start <= e:
                    return IPv6Network((s, 128 - (e - s + 1).bit_length() + 1))
        return None

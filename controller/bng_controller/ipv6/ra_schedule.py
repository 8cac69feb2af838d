"""When each session's next unsolicited Router Advertisement is due.

One heap for all sessions, so a tick costs O(due · log n) and not a walk
over 40k sessions; each session's next RA is drawn uniformly from
[0.75, 1] × the interval, so the sessions that came up together (a
controller restart, a line card reboot) drift apart instead of sending in
bursts, and no gap exceeds the interval (RFC 4861 6.2.4 MaxRtrAdvInterval).
Right after a session comes up it gets a few RAs at a short interval
(RFC 4861 6.2.4, MAX_INITIAL_RTR_ADVERTISEMENTS), in case the first is lost.
"""
from __future__ import annotations

import heapq
import itertools
import random
from typing import Generic, Hashable, TypeVar

K = TypeVar("K", bound=Hashable)

INITIAL_ADVERTISEMENTS = 3             # the one sent at network up included
INITIAL_INTERVAL = 16.0                # MAX_INITIAL_RTR_ADVERT_INTERVAL


class RaSchedule(Generic[K]):
    def __init__(self, interval: float, rng: random.Random | None = None):
        self.interval = interval
        self.rng = rng or random.Random()
        self._heap: list[tuple[float, int, K]] = []
        self._current: dict[K, int] = {}           # key -> sequence number of its live heap entry
        self._initial_left: dict[K, int] = {}
        self._seq = itertools.count()

    def __len__(self) -> int:
        return len(self._current)

    def __contains__(self, key: K) -> bool:
        return key in self._current

    def _push(self, key: K, at: float) -> None:
        seq = next(self._seq)
        self._current[key] = seq
        heapq.heappush(self._heap, (at, seq, key))
        if len(self._heap) > 4 * len(self._current) + 1024:
            self._compact()

    def _compact(self) -> None:
        """Drop heap entries of removed or rescheduled sessions."""
        self._heap = [e for e in self._heap if self._current.get(e[2]) == e[1]]
        heapq.heapify(self._heap)

    def announced(self, key: K, now: float) -> None:
        """The session came up and was just sent an RA: the initial ones follow."""
        self._initial_left[key] = INITIAL_ADVERTISEMENTS - 1
        self._push(key, now + min(INITIAL_INTERVAL, self.interval) * self.rng.uniform(0.5, 1.0))

    def adopt(self, key: K, now: float) -> None:
        """A session that is up already (restored after a restart): its next
        RA anywhere within one interval."""
        self._initial_left.pop(key, None)
        self._push(key, now + self.interval * self.rng.random())

    def remove(self, key: K) -> None:
        self._current.pop(key, None)
        self._initial_left.pop(key, None)

    def pop_due(self, now: float, limit: int) -> list[K]:
        """Up to `limit` sessions whose RA is due, each rescheduled; the
        rest wait for the next call."""
        out: list[K] = []
        heap = self._heap
        while heap and heap[0][0] <= now and len(out) < limit:
            _, seq, key = heapq.heappop(heap)
            if self._current.get(key) != seq:
                continue
            out.append(key)
            left = self._initial_left.get(key, 0)
            if left > 1:
                self._initial_left[key] = left - 1
                nxt = min(INITIAL_INTERVAL, self.interval) * self.rng.uniform(0.5, 1.0)
            else:
                self._initial_left.pop(key, None)
                nxt = self.interval * self.rng.uniform(0.75, 1.0)
            self._push(key, now + nxt)
        return out

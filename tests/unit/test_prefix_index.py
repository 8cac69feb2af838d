"""The index of live IPv6 prefixes (ipv6/prefix_index.py): its overlap
look-up against a scan of every held prefix, over random prefixes of the
lengths a session holds, admitted the way the session manager admits them
(only when they overlap nothing) and removed again."""
from __future__ import annotations

import ipaddress

from hypothesis import given, settings, strategies as st

from bng_controller.ipv6.prefix_index import PrefixIndex

N = ipaddress.IPv6Network
BASE = int(ipaddress.IPv6Address("2001:db8::"))

# prefixes of 48..64 bits in a small corner of 2001:db8::/32, so that they collide
prefixes = st.builds(lambda length, bits: N((BASE + ((bits << (128 - 64)) & ~((1 << (128 - length)) - 1)),
                                             length)),
                     st.integers(48, 64), st.integers(0, (1 << 20) - 1))


def scan(held: dict, p: N) -> list[N]:
    return [q for q in held if q.overlaps(p)]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.booleans(), prefixes), max_size=80))
def test_overlap_lookup_agrees_with_a_scan(ops):
    index: PrefixIndex[int] = PrefixIndex()
    held: dict[N, int] = {}
    for n, (remove, p) in enumerate(ops):
        found = index.overlapping(p)
        expected = scan(held, p)
        if expected:
            assert found in expected
        else:
            assert found is None
        if remove and held:
            victim = sorted(held)[n % len(held)]
            del index[victim]
            del held[victim]
        elif not expected:
            index[p] = n
            held[p] = n
        assert len(index) == len(held) and set(index) == set(held)
        assert all(index[q] == held[q] and q in index for q in held)


def test_equal_inside_and_holding():
    index: PrefixIndex[str] = PrefixIndex()
    index[N("2001:db8:100::/56")] = "pd"
    index[N("2001:db8:1::/64")] = "wan"
    assert index.overlapping(N("2001:db8:100::/56")) == N("2001:db8:100::/56")
    assert index.overlapping(N("2001:db8:100:5::/64")) == N("2001:db8:100::/56")     # inside a held one
    assert index.overlapping(N("2001:db8:100::/48")) == N("2001:db8:100::/56")     # holds one
    assert index.overlapping(N("2001:db8::/48")) is None
    assert index.overlapping(N("2001:db8:101::/56")) is None
    assert index.overlapping(N("2001:db8:1:1::/64")) is None
    del index[N("2001:db8:100::/56")]
    assert index.overlapping(N("2001:db8:100:5::/64")) is None and index.get(N("2001:db8:1::/64")) == "wan"

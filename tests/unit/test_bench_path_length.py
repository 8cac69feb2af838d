"""The trace reading of bench/bench_path_length.py: packets are cut per
pipeline thread from rx to tx, instructions sorted by kind, notes skipped,
and a dropped packet refused."""
from __future__ import annotations

import pytest

from bench.bench_path_length import count_paths

TRACE = """\
[Thread  0] rx 1 pkt from port 1
[Thread  0] mov m.f 0
[Thread  0] mov m.f e
[Thread  0]: extract header 3 (14 bytes)
[Thread  1] mov (mh)
[Thread  1] rx 1 pkt from port 1
[Thread  1] mov m.f 2100
[Thread  0]: emit header 2 (invalid)
[Thread  0] *** The next 9 instructions are fused. ***
[Thread  0]: emit header 3 (valid)
[Thread  0]: tx 1 pkt to port 1
Emit handler: complex case.
[Thread  1] mov (hm)
"""


def test_packets_cut_per_thread_and_counted_by_kind():
    # thread 1's packet has no tx yet: not counted; its line before rx is not either
    assert count_paths(TRACE) == [{"const_stores": 2, "emit_invalid": 1, "other": 3}]


def test_a_second_packet_on_a_thread_starts_a_new_count():
    trace = TRACE + "[Thread  1]: tx 1 pkt to port 1\n[Thread  1] rx 1 pkt from port 1\n[Thread  1]: tx 1 pkt to port 1\n"
    assert count_paths(trace)[1:] == [{"const_stores": 1, "emit_invalid": 0, "other": 2},
                                      {"const_stores": 0, "emit_invalid": 0, "other": 1}]


def test_a_dropped_packet_is_refused():
    with pytest.raises(SystemExit, match="dropped"):
        count_paths("[Thread  0] rx 1 pkt from port 1\n[Thread  0] drop\n")

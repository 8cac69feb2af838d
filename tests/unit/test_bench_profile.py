"""The sample accounting of bench/bench_profile.py: each worker sample goes
to the pipeline whose library ran last and to a part of the data path by
its symbol, and a part's nanoseconds are its share of 1000 / Mpps."""
from __future__ import annotations

from bench.bench_profile import PARTS, attribute, ns_per_packet, part_of, render

BNG = "/tmp/s/bench-bng-1/pipeline-aaaa.so"
BASE = "/tmp/s/bench-bng-1/pipeline-bbbb.so"
NAMES = {"pipeline-aaaa.so": "bng", "pipeline-bbbb.so": "p4_l2fwd"}


def line(t: float, sym: str, dso: str) -> str:
    return f"  {t:.6f}:      7f359693a202 {sym} ({dso})"


def test_parts_by_symbol() -> None:
    assert part_of("[unknown]", "/usr/lib/x86_64-linux-gnu/librte_port.so.23.0") == "port I/O"
    assert part_of("frame_length_rx", "/x/libbsw.so") == "port I/O"
    assert part_of("rte_swx_pipeline_run", "/usr/lib/librte_pipeline.so.23.0") == "run loop"
    assert part_of("em_lookup_20", "/x/libbsw.so") == "table lookups"
    assert part_of("lpm32_lookup", "/x/libbsw.so") == "table lookups"
    assert part_of("bsw_table_af_chain", BNG) == "lookup glue + actions"
    assert part_of("action_bng_pppoe_term_0_run", BNG) == "lookup glue + actions"
    assert part_of("pipeline_func_1", BNG) == "parser + control start"
    assert part_of("bsw_group_59", BNG) == "other generated code"
    assert part_of("main", "/usr/bin/python3.11") == "other"


def test_samples_go_to_the_pipeline_that_ran_last() -> None:
    lines = [
        line(1.0, "em_lookup_6", "/x/libbsw.so"),         # before any pipeline: not counted
        line(1.1, "bsw_table_af_chain", BASE),
        line(1.2, "em_lookup_6", "/x/libbsw.so"),
        line(2.0, "pipeline_func_1", BNG),
        line(2.1, "em_lookup_20", "/x/libbsw.so"),
        line(2.2, "[unknown]", "/usr/lib/librte_port.so.23.0"),
        "not a sample line",
    ]
    got = attribute(lines, NAMES)
    assert dict(got["p4_l2fwd"]) == {"lookup glue + actions": 1, "table lookups": 1}
    assert dict(got["bng"]) == {"parser + control start": 1, "table lookups": 1, "port I/O": 1}


def test_ns_are_shares_of_the_packet_time() -> None:
    got = attribute([line(1.0, "pipeline_func_1", BNG)] +
                    [line(1.1, "em_lookup_20", "/x/libbsw.so")] * 3, NAMES)
    ns = ns_per_packet(got["bng"], 10.0)            # 100 ns per packet
    assert ns["parser + control start"] == 25.0 and ns["table lookups"] == 75.0
    assert sum(ns.values()) == 100.0 and set(ns) == set(PARTS)
    assert ns_per_packet(got["p4_l2fwd"], 20.0) == {}
    table = render([{"role": "pppoe_up", "mpps": 10.0, "p4_l2fwd_mpps": 20.0, "ns": ns,
                     "p4_l2fwd_ns": {}}])
    assert "table lookups" in table and "75.0" in table and "50.0" in table

"""The switch's array type for exact tables keyed by one small id
(targets/dpdk/src/bsw_table_index.c) on a real pipeline; and, on the same
build, what the switch's passes over the generated code made of the BNG
program.

An entry's index (bsw_table_entry_index: 1 + the entry id a lookup reports)
tells which type holds it: the array reports the key itself as the id,
DPDK's exact type numbers entries from 0 in the order they came. So a first
entry with key 7 has index 8 in an array and 1 in DPDK's type.

Each pipeline is built in a child process (this file run as a script): DPDK's
EAL can be set up once per process, and pytest's process is shared.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import child_build, child_eal, child_main, run_child

pytestmark = pytest.mark.root


def child(work: str) -> dict:
    from bng_switch import libbsw

    lib, cfg = child_eal(work, "it")
    out = {}

    def pipeline(program: str):
        return child_build(lib, cfg, work, program)

    def table(pmap, suffix):
        return next(t for t in pmap.tables.values() if t.name.endswith(suffix))

    def key(t, k: int) -> bytes:
        return next(iter(t.fields.values())).encode(k)

    def entry(t, action_suffix, k: int, args: dict) -> libbsw.EntryBytes:
        act = next(a for a in t.actions.values() if a.name.endswith(action_suffix))
        return libbsw.EntryBytes(key(t, k), act.swx_id, act.encode(args, t.data_size))

    def commit(p, *ops) -> None:
        batch = libbsw.OpBatch()
        for kind, t, e in ops:
            if kind == "add":
                batch.add(t.swx_id, e, None)
            else:
                batch.delete(t.swx_id, e)
        p.table_commit(batch)

    # bng: nexthop (1024 ids) and l2tp_tunnel (4096) are arrays.
    p, pmap = pipeline("bng")
    # Its generated code, as gcc got it: what the switch's passes made of it.
    code = max(Path(work).glob("pipeline-*.c"), key=lambda f: f.stat().st_size).read_text()
    out["bng_code"] = {"run_tx": code.count("bsw_hdr_emit_run_tx(p, t, "),
                       "run": code.count("bsw_hdr_emit_run(p, t, "),
                       "single_emits": code.count("__instr_hdr_emit_exec(p, t, &pipeline_instructions["),
                       "chained": code.count("BSW_CHAIN(p);")}
    nh = table(pmap, "nexthop")
    size = nh.size

    def nh_entry(k: int) -> libbsw.EntryBytes:
        return entry(nh, "set_l2", k, {1: 1, 2: 0x02bb00000001, 3: 0x02ee00000000 | k, 4: 0})

    def index(k: int):
        return p.table_entry_index(nh.swx_id, key(nh, k))

    beyond = size + 100_000                     # a key P4Runtime allows but no slot holds
    commit(p, ("add", nh, nh_entry(7)), ("add", nh, nh_entry(beyond)), ("add", nh, nh_entry(size - 1)))
    out["bng_added"] = {"7": index(7), "last": index(size - 1), "beyond": index(beyond),
                        "absent": index(8), "size": size}
    commit(p, ("add", nh, nh_entry(7)))          # an add of a present key replaces it
    commit(p, ("del", nh, nh_entry(7)), ("del", nh, nh_entry(beyond)))
    out["bng_deleted"] = {"7": index(7), "beyond": index(beyond), "last": index(size - 1)}
    tun = table(pmap, "l2tp_tunnel")
    commit(p, ("add", tun, entry(tun, "set_tunnel", 3, {1: 1, 2: 2, 3: 3, 4: 1701, 5: 1})))
    out["bng_tunnel"] = p.table_entry_index(tun.swx_id, key(tun, 3))
    p.free()

    # Handed to stock rte_swx_ctl (make bench-tables does this), a pipeline gets
    # DPDK's own table objects back: rte_swx_ctl applies DPDK's ops to them.
    p, pmap = pipeline("bng")
    nh = table(pmap, "nexthop")
    set_l2 = next(a for a in nh.actions.values() if a.name.endswith("set_l2"))
    out["stock_ctl_ns"] = p.bench_stock_ctl(nh.swx_name, set_l2.swx_id, 100, 10, [100])
    p.free()

    # switch_test reads entry ids (a direct counter): DPDK's type, so ids stay below the size.
    p, pmap = pipeline("switch_test")
    pf = table(pmap, "port_fwd")
    commit(p, ("add", pf, entry(pf, "forward", 7, {1: 1})))
    out["switch_test_port_fwd"] = p.table_entry_index(pf.swx_id, key(pf, 7))
    p.free()
    return out


@pytest.fixture(scope="module")
def result():
    return run_child(__file__)


def test_small_ids_are_array_slots(result):
    added = result["bng_added"]
    assert added["7"] == 8 and added["last"] == added["size"]
    assert added["absent"] is None


def test_a_key_beyond_the_size_is_held_beside_the_array(result):
    beyond = result["bng_added"]["beyond"]
    assert beyond is not None and beyond > result["bng_added"]["size"]


def test_deletes_reach_both(result):
    assert result["bng_deleted"]["7"] is None and result["bng_deleted"]["beyond"] is None
    assert result["bng_deleted"]["last"] == result["bng_added"]["size"]


def test_the_deparser_is_one_fused_run_of_emits(result):
    """The BNG's deparser (21 emits, the last eight fused with tx) reaches
    gcc as one call (bsw_emit_run.c), none of its emits left on its own."""
    assert result["bng_code"]["run_tx"] == 1 and result["bng_code"]["run"] == 0
    assert result["bng_code"]["single_emits"] == 0
    assert result["bng_code"]["chained"] > 0


def test_tunnels_are_arrays_too(result):
    assert result["bng_tunnel"] == 4


def test_stock_rte_swx_ctl_gets_dpdk_tables_back(result):
    assert len(result["stock_ctl_ns"]) == 1 and result["stock_ctl_ns"][0] > 0


def test_a_program_that_reads_entry_ids_keeps_dpdk_numbering(result):
    assert result["switch_test_port_fwd"] == 1


if __name__ == "__main__":
    child_main(child, "index-tables-")

"""The switch's one-step exact-match lookup (bsw_table_em_lookup.c) against
DPDK's, on the bng program's tables filled by the table manager.

The switch's lookup reads DPDK's private table object through a copy of its
layout; if that copy were wrong, or its hash differed from DPDK's, lookups
would miss or return another entry's data. So every exact-match table of
the bng program that gets the switch's lookup is filled with random keys
(and some deleted again, leaving holes in buckets and their extensions),
and each inserted, deleted and never-inserted key is looked up both ways
(bsw_table_em_compare): the hit, action id, action data and entry id must
agree. Built in a child process (this file run as a script): the EAL is
once per process.
"""
from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from tests.support import child_main, run_child

pytestmark = pytest.mark.root


def child(work: str) -> dict:
    import ctypes

    from bng_lab.in_process import load_program, start_eal
    from bng_switch import libbsw, switch_config

    prog = load_program("bng", Path(work))
    cfg = switch_config.from_dict({"name": "em", "work_dir": work, "ports": [], "workers": 1,
                                   "mempool_mbufs": 4096})
    lib = start_eal(cfg)
    p = lib.pipeline_build(str(prog.spec_path), work, cfg.dpdk_include, [cfg.iospec(0)], "compiled-only")
    pmap = prog.pipeline_map()
    pmap.bind(p)
    rng = random.Random(7)

    def compare(table, keys: list[bytes]) -> tuple[int, int, int]:
        buf = b"".join(keys)
        arr = (ctypes.c_char * max(1, len(buf))).from_buffer(bytearray(buf or b"\0"))
        hits, differ = ctypes.c_uint32(), ctypes.c_uint32()
        status = lib.lib.bsw_table_em_compare(p.handle, table.swx_id, arr, len(keys), ctypes.byref(hits),
                                              ctypes.byref(differ))
        return status, hits.value, differ.value

    out: dict = {}
    for table in pmap.tables.values():
        if not table.is_exact or not table.key_size:
            continue
        status, _, _ = compare(table, [])
        if status:                        # an array, or a key DPDK's lookup keeps
            out[table.name] = {"status": status}
            continue
        action = next(a for a in table.actions.values() if a.id in table.entry_action_ids)
        n = min(table.size, 4000)
        keys = list({rng.randbytes(table.key_size) for _ in range(n)})
        entries = [libbsw.EntryBytes(key, action.swx_id, bytes((i + j) & 0xFF for j in range(table.data_size))
                                     if table.data_size else None) for i, key in enumerate(keys)]
        batch = libbsw.OpBatch()
        for e in entries:
            batch.add(table.swx_id, e, None)
        p.table_commit(batch)
        gone = entries[::5]
        batch = libbsw.OpBatch()
        for e in gone:
            batch.delete(table.swx_id, e)
        p.table_commit(batch)
        absent = [rng.randbytes(table.key_size) for _ in range(2000)]
        status, hits, differ = compare(table, keys + absent)
        out[table.name] = {"status": status, "keys": len(keys), "deleted": len(gone), "hits": hits,
                           "differ": differ, "key_size": table.key_size}
    p.free()
    return out


@pytest.fixture(scope="module")
def result():
    return run_child(__file__)


def test_the_big_session_tables_get_the_switchs_lookup(result):
    fast = [name for name, r in result.items() if r["status"] == 0]
    assert any("session" in name for name in fast), result
    assert all(r["status"] in (0, -95) for r in result.values()), result     # -ENOTSUP


def test_every_lookup_agrees_with_dpdks(result):
    for name, r in result.items():
        if r["status"]:
            continue
        assert r["differ"] == 0, (name, r)
        # Every key still in the table is found (and, by the comparison,
        # with its own data); no deleted or random key is.
        assert r["hits"] == r["keys"] - r["deleted"], (name, r)


if __name__ == "__main__":
    child_main(child, "table-em-")

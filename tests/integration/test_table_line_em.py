"""The switch's line tables (targets/dpdk/src/bsw_table_line_em.c: large
exact tables with whole entries in 64-byte buckets) on the bng program,
filled by the table manager.

A line table hashes a key to one bucket of two (or more) slots; keys of a
full bucket go to its neighbour, then to an overflow of DPDK's exact type,
and a bit per bucket sends a lookup on to each. So besides random keys
each table gets groups of keys with one hash (their CRC-32C differences
zero: the hash is linear), five to a bucket, which fill their bucket and
(where a bucket has two slots) its neighbour and spill: the lookups that
go on into the neighbour and the overflow, deletes from each, adds that
replace an entry where it is, and a new key that takes a slot a delete
freed in a bucket that has spilled. Every key still
in the table must be found with its own action and data, by the
manager's lookup (bsw_table_entry_read, through the table's lookup
function, which is the bucket lookup the straight-line code inlines plus
the overflow's); no deleted or random key may be. And a batch that wants
more of one bucket than the overflow holds fails as a whole, leaving the
table as it was. Built in a child process (this file run as a script):
the EAL is once per process.
"""
from __future__ import annotations

import random

import pytest

from tests.integration.test_table_em_lookup import crc32c, xor, zero_crc_differences
from tests.support import child_main, child_pipeline, run_child

pytestmark = pytest.mark.root

COLLIDING_GROUPS = 20


def colliding_keys(rng: random.Random, key_size: int, n: int) -> list[bytes]:
    """n distinct keys of one CRC-32C: a random key xored with each subset
    of a basis of zero-CRC differences."""
    ds = zero_crc_differences(key_size)
    k = rng.randbytes(key_size)
    out = []
    for combo in range(n):
        x = k
        for i, d in enumerate(ds):
            if combo >> i & 1:
                x = xor(x, d)
        out.append(x)
    return out


def child(work: str) -> dict:
    from bng_switch import libbsw

    _, p, pmap = child_pipeline(work, "lem")
    rng = random.Random(11)
    out: dict = {"types": {t.name: p.table_type(t.swx_id) for t in pmap.tables.values()}}

    def commit(*ops) -> None:
        batch = libbsw.OpBatch()
        for kind, table, e in ops:
            if kind == "add":
                batch.add(table.swx_id, e, None)
            else:
                batch.delete(table.swx_id, e)
        p.table_commit(batch)

    for table in pmap.tables.values():
        if out["types"][table.name] != "line":
            continue
        actions = [a for a in table.actions.values() if a.id in table.entry_action_ids]

        def entry(key: bytes, n: int) -> libbsw.EntryBytes:
            action = actions[n % len(actions)]
            data = bytes((n * 7 + j) & 0xFF for j in range(table.data_size)) if table.data_size else None
            return libbsw.EntryBytes(key, action.swx_id, data)

        # five keys of one hash per group, and a sixth kept for later
        groups = [colliding_keys(rng, table.key_size, 6) for _ in range(COLLIDING_GROUPS)]
        assert all(len({crc32c(k) for k in g}) == 1 for g in groups)
        newcomers = [g.pop() for g in groups]
        keys = list(dict.fromkeys([k for g in groups for k in g]
                                  + [rng.randbytes(table.key_size) for _ in range(4000)]))
        model: dict[bytes, libbsw.EntryBytes] = {k: entry(k, i) for i, k in enumerate(keys)}
        commit(*[("add", table, e) for e in model.values()])
        # deletes: every fifth key, and in each group one of the first two
        # (in its bucket) and the last (in the overflow)
        gone = keys[5 * COLLIDING_GROUPS::5] + [g[i] for g in groups for i in (0, 4)]
        commit(*[("del", table, model.pop(k)) for k in gone])
        # replaces, in buckets and in the overflow; and a new key of each
        # group's hash, which takes the slot its bucket's delete freed
        for i, k in enumerate([g[j] for g in groups for j in (1, 2, 3)] + keys[-50:]):
            if k in model:
                model[k] = entry(k, 1000 + i)
        for i, k in enumerate(newcomers):
            model[k] = entry(k, 2000 + i)
        commit(*[("add", table, model[k]) for k in [g[j] for g in groups for j in (1, 2, 3)]
                 + keys[-50:] + newcomers if k in model])
        absent = gone + [rng.randbytes(table.key_size) for _ in range(2000)]

        wrong, found, indices = [], 0, set()
        for k, e in model.items():
            got = p.table_entry_read(table.swx_id, k, table.data_size)
            want = (e.action_id, e.action_data or b"")
            if got is None or got[:2] != want:
                wrong.append((k.hex(), got, want))
            else:
                found += 1
                indices.add(got[2])
        ghosts = [k.hex() for k in absent if k not in model and p.table_entry_read(table.swx_id, k, 0)]

        # more keys of one hash than the overflow (1/4 of the table size)
        # and two buckets (at most 21 entries each) hold: the batch fails and
        # leaves the table as it was
        flood = colliding_keys(rng, table.key_size, table.size // 4 + 64)
        try:
            commit(*[("add", table, entry(k, i)) for i, k in enumerate(flood)])
            flood_error = ""
        except libbsw.BswError as e:
            flood_error = str(e)
        flood_left = sum(p.table_entry_read(table.swx_id, k, 0) is not None for k in flood[:50] + flood[-50:])
        still = sum(p.table_entry_read(table.swx_id, k, 0) is not None for k in list(model)[:500])
        out[table.name] = {"keys": len(model), "found": found, "wrong": wrong[:5], "n_wrong": len(wrong),
                           "unique_indices": len(indices), "ghosts": ghosts[:5], "n_absent": len(absent),
                           "flood_error": flood_error, "flood_left": flood_left, "still": still,
                           "still_want": min(500, len(model))}
    p.free()
    return out


@pytest.fixture(scope="module")
def result():
    return run_child(__file__)


def test_the_session_tables_are_line_tables(result):
    types = {name.rsplit(".", 1)[-1]: t for name, t in result["types"].items()}
    assert types["pppoe_up_v4"] == "line" and types["l2tp_up_v4"] == "line", types
    # a small table and one whose entries do not fit two to a line keep DPDK's type
    assert types["my_station"] == "exact", types
    assert types["ipv4_session"] == "exact", types


def test_every_entry_is_found_with_its_own_action_and_data(result):
    for name, r in result.items():
        if name == "types":
            continue
        assert r["n_wrong"] == 0 and r["found"] == r["keys"], (name, r)
        assert r["unique_indices"] == r["keys"], (name, r)


def test_no_deleted_or_random_key_is_found(result):
    for name, r in result.items():
        if name != "types":
            assert r["n_absent"] > 2000 and not r["ghosts"], (name, r)


def test_a_batch_beyond_the_overflow_fails_whole(result):
    for name, r in result.items():
        if name == "types":
            continue
        assert "No space" in r["flood_error"] or "ENOSPC" in r["flood_error"], (name, r)
        assert r["flood_left"] == 0 and r["still"] == r["still_want"], (name, r)


if __name__ == "__main__":
    child_main(child, "table-lem-")

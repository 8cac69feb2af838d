"""The switch's one-step exact-match lookup (bsw_table_em_lookup.c) against
DPDK's, on the bng program's tables filled by the table manager.

The switch's lookup reads DPDK's private table object through a copy of its
layout; if that copy were wrong, or its hash differed from DPDK's, lookups
would miss or return another entry's data. So every exact-match table of
the bng program that gets the switch's lookup is filled with random keys
(and some deleted again, leaving holes in buckets and their extensions),
and each inserted, deleted and never-inserted key is looked up both ways
(bsw_table_em_compare): the hit, action id, action data and entry id must
agree. Random keys seldom share a bucket and a signature, so groups of
keys that do (their CRC-32C differences zero: the hash is linear) are added
too, five to a bucket: a lookup must go on past a slot whose signature
matches but whose key is another, into the bucket's extension. Built in a
child process (this file run as a script): the EAL is once per process.
"""
from __future__ import annotations

import random
import sys

import pytest

from tests.support import child_main, child_pipeline, run_child

pytestmark = pytest.mark.root


def crc32c(data: bytes, crc: int = 0) -> int:
    """rte_hash_crc(data, len, crc): CRC-32C, reflected, no final XOR (the
    tables hash from 0)."""
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc


def zero_crc_differences(key_size: int) -> list[bytes]:
    """Nonzero differences d of key_size bytes with crc32c(d) == 0: as the
    CRC from 0 is linear, k and k ^ d then have the same hash, so the same
    bucket and signature. From the null space of the CRC's matrix over
    GF(2) (Gaussian elimination over the key's bits)."""
    basis: dict[int, tuple[int, int]] = {}
    out = []
    for i in range(8 * key_size):
        e = bytearray(key_size)
        e[i // 8] = 1 << (i % 8)
        v, combo = crc32c(bytes(e)), 1 << i
        while v:
            top = v.bit_length() - 1
            if top not in basis:
                basis[top] = (v, combo)
                break
            v, combo = v ^ basis[top][0], combo ^ basis[top][1]
        if not v:
            out.append(combo.to_bytes(key_size, "little"))
    return out


def xor(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b))


def child(work: str) -> dict:
    import ctypes

    from bng_switch import libbsw

    lib, p, pmap = child_pipeline(work, "em")
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
        # 20 groups of 5 keys of one bucket and signature: a bucket's four
        # slots and one in its extension. Only where the key has room for
        # such differences (over 32 bits, beyond the CRC's) and the table
        # for 100 such keys beside the random ones.
        ds = zero_crc_differences(table.key_size)[:3]
        colliding = []
        if len(ds) == 3 and table.size >= 1000:
            for _ in range(20):
                k = rng.randbytes(table.key_size)
                colliding += [k, xor(k, ds[0]), xor(k, ds[1]), xor(xor(k, ds[0]), ds[1]), xor(k, ds[2])]
            assert len({crc32c(k) for k in colliding[:5]}) == 1
        n = min(table.size, 4000) - len(colliding)
        keys = list(dict.fromkeys(colliding + [rng.randbytes(table.key_size) for _ in range(n)]))
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
                           "differ": differ, "key_size": table.key_size, "colliding": len(colliding)}
    p.free()
    return out


@pytest.fixture(scope="module")
def result():
    return run_child(__file__)


def test_the_big_session_tables_get_the_switchs_lookup(result):
    fast = [name for name, r in result.items() if r["status"] == 0]
    assert any("session" in name for name in fast), result
    assert all(r["status"] in (0, -95) for r in result.values()), result     # -ENOTSUP


def test_crc32c_is_the_standard_one():
    """The CRC the colliding keys are made with: with CRC-32C's usual start
    and final XOR it gives the standard check value."""
    assert crc32c(b"123456789", 0xFFFFFFFF) ^ 0xFFFFFFFF == 0xE3069283
    for d in zero_crc_differences(12):
        assert any(d) and crc32c(d) == 0


def test_keys_sharing_a_bucket_and_signature_were_looked_up(result):
    assert any(r.get("colliding") for name, r in result.items() if "session" in name), result


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

"""bsw_table_commit_packed() on a real pipeline: every op kind the Python
side packs reaches the tables, and a malformed byte string is refused as a
whole, with nothing applied.

The pipeline is built in a child process (this file run as a script): DPDK's
EAL can be set up once per process, and pytest's process is shared.
"""
from __future__ import annotations

import sys

import pytest

from tests.support import child_main, child_pipeline, run_child

pytestmark = pytest.mark.root

PROGRAM = "switch_test"


def child(work: str) -> dict:
    from bng_switch import libbsw

    _, p, pmap = child_pipeline(work, "tc", PROGRAM)
    p.workers_start(200)

    def table(suffix):
        return next(t for t in pmap.tables.values() if t.name.endswith(suffix))

    l2, route = table("l2_fwd"), table("ipv4_route")
    fwd = next(a for a in l2.actions.values() if a.name.endswith("forward"))
    rfwd = next(a for a in route.actions.values() if a.name.endswith("forward"))
    field = next(iter(l2.fields.values()))

    def key(mac: int) -> bytes:
        return field.encode(mac)

    def entry(mac: int, port: int) -> libbsw.EntryBytes:
        return libbsw.EntryBytes(key(mac), fwd.swx_id, fwd.encode({1: port}, l2.data_size))

    def present(mac: int) -> bool:
        return p.table_entry_index(l2.swx_id, key(mac)) is not None

    def commit_raw(buf: bytes, n_ops: int) -> str:
        """Send a hand-made packed batch; the error it gets ('' if none)."""
        import ctypes
        arr = (ctypes.c_char * max(1, len(buf))).from_buffer(bytearray(buf or b"\0"))
        n_done = ctypes.c_uint32()
        try:
            p._call("bsw_table_commit_packed", p.handle, arr, ctypes.c_size_t(len(buf)), n_ops,
                    ctypes.byref(n_done))
        except libbsw.BswError as e:
            return f"{e.errno}: {e}"
        return ""

    out = {}
    # Every op kind in one batch.
    batch = libbsw.OpBatch()
    batch.add(l2.swx_id, entry(1, 1), None)
    batch.add(l2.swx_id, entry(2, 1), None)
    batch.add(l2.swx_id, entry(2, 3), entry(2, 1))        # overwrite within the batch
    batch.delete(l2.swx_id, entry(1, 1))
    batch.set_default(l2.swx_id, fwd.swx_id, fwd.encode({1: 2}, l2.data_size))
    route_key = (0x0A000000).to_bytes(route.key_size, "big")
    batch.rebuild(route.swx_id, [libbsw.EntryBytes(route_key, rfwd.swx_id, rfwd.encode({1: 1}, route.data_size),
                                                   (0xFF000000).to_bytes(route.key_size, "big"), 24)])
    p.table_commit(batch)
    out["after_every_kind"] = {"1": present(1), "2": present(2)}

    # Malformed byte strings: refused whole, nothing applied.
    good = libbsw.OpBatch()
    good.add(l2.swx_id, entry(7, 1), None)
    good.add(l2.swx_id, entry(8, 1), None)
    buf = bytes(good.pack())

    def u32_at(b: bytes, at: int, value: int) -> bytes:
        return b[:at] + value.to_bytes(4, sys.byteorder) + b[at + 4:]

    flags_at = 12                                   # the first entry's flags, after the op header
    action_at = 20                                  # its action id, after flags and priority
    no_data = libbsw.OpBatch()                      # an ADD without the action data its table needs
    no_data.add(l2.swx_id, libbsw.EntryBytes(key(7), fwd.swx_id, None), None)
    other_default = libbsw.OpBatch()                # l2_fwd's default set to ipv4_route's forward
    other_default.set_default(l2.swx_id, rfwd.swx_id, rfwd.encode({1: 2}, l2.data_size))
    huge_rebuild = libbsw.OpBatch()
    huge_rebuild.rebuild(route.swx_id, [])
    out["errors"] = {
        "truncated": commit_raw(buf[:-1], 2),
        "trailing": commit_raw(buf + b"\0", 2),
        "too_few_ops": commit_raw(buf, 3),
        "ops_cannot_fit": commit_raw(buf, 1000),
        "bad_flags": commit_raw(u32_at(buf, flags_at, 8), 2),
        "bad_table": commit_raw(u32_at(buf, 4, 10_000), 2),
        "entries_on_add": commit_raw(u32_at(buf, 8, 1), 2),
        "rebuild_too_big": commit_raw(u32_at(bytes(huge_rebuild.pack()), 8, 1 << 30) + buf, 3),
        "add_without_data": commit_raw(bytes(no_data.pack()) + buf, 3),
        # An action past the pipeline's would be called through memory past
        # p->action_funcs; one of another table runs that table's code.
        "action_past_pipeline": commit_raw(u32_at(buf, action_at, 10_000), 2),
        "action_of_other_table": commit_raw(u32_at(buf, action_at, rfwd.swx_id), 2),
        "default_of_other_table": commit_raw(
            bytes(other_default.pack()) + buf, 3),
    }
    out["after_errors"] = {"7": present(7), "8": present(8)}
    out["good"] = commit_raw(buf, 2)
    out["after_good"] = {"7": present(7), "8": present(8)}
    p.free()
    return out


@pytest.fixture(scope="module")
def result():
    return run_child(__file__)


def test_every_op_kind_applies(result):
    assert result["after_every_kind"] == {"1": False, "2": True}


@pytest.mark.parametrize("case,words", [
    ("truncated", "runs past"), ("trailing", "1 bytes after its 2 ops"), ("too_few_ops", "runs past"),
    ("ops_cannot_fit", "1000 ops cannot fit"), ("bad_flags", "op 0 of 2 is malformed"),
    ("bad_table", "op 0 of 2 is malformed"), ("entries_on_add", "op 0 of 2 is malformed"),
    ("rebuild_too_big", "op 0 of 3 is malformed"), ("add_without_data", "operation 0 is not valid"),
    ("action_past_pipeline", "an action id the table does not have there"),
    ("action_of_other_table", "an action id the table does not have there"),
    ("default_of_other_table", "an action id the table does not have there"),
])
def test_malformed_batch_is_refused_whole(result, case, words):
    assert result["errors"][case].startswith("22: bsw_table_commit_packed: ")   # EINVAL
    assert words in result["errors"][case]
    assert result["after_errors"] == {"7": False, "8": False}


def test_the_same_batch_well_formed_applies(result):
    assert result["good"] == ""
    assert result["after_good"] == {"7": True, "8": True}


if __name__ == "__main__":
    child_main(child, "table-commit-")

"""Packets looped through the CPU port of a compiled pipeline come back
once each and in the order they were sent: with its threads rotating over
4 (bsw_thread_rotation.c) and over DPDK's 16, and in a pipeline built after
another was freed in the same process.

Rotation: the generated code yields within 4 threads, DPDK's library within
16. An instruction the library runs (the rx of a thread waiting for a
packet) once sent packets into threads 4-15 in a prototype that only
patched the generated code: they waited there until the pipeline next went
idle, while the packets behind them went out first. Here 40 packets wait in
the CPU port's ring before the worker starts, so the first rx of every
thread finds one; each goes out of the CPU port again (packet_out to port
0). BSW_SWX_THREADS=16 keeps DPDK's rotation (nothing of it compiled).

Rebuild: DPDK's ring and ethdev readers free, with the port, every packet of
their last burst, also those already handed to the pipeline and sent on; the
mempool then held those mbufs twice, and the next pipeline sent packet 1
twice and packet 0 never (bsw_port_reader_free.c).

The pipelines are built in a child process (this file run as a script):
DPDK's EAL can be set up once per process, and pytest's process is shared.
"""
from __future__ import annotations

import ctypes
import os
import struct
import time
from pathlib import Path

import pytest

from tests.support import child_main, run_child

pytestmark = pytest.mark.root

N_PACKETS = 40


def child(work: str) -> dict:
    from p4.v1 import p4runtime_pb2 as p4r

    from bng_lab.in_process import load_program, start_eal
    from bng_switch import libbsw, switch_config
    from bng_switch.device import PNA_DIRECTION_REGARRAY, PNA_HOST_TO_NET
    from bng_switch.table_store import TableStore

    cfg = switch_config.from_dict({"name": "rot", "work_dir": work, "workers": 1, "ports": [],
                                   "mempool_mbufs": 4096})
    lib = start_eal(cfg)
    prog = load_program("switch_test", Path(work))
    table = next(t for t in prog.p4info.tables if t.preamble.name.endswith("packet_out_port"))
    forward = next(a for a in prog.p4info.actions if a.preamble.name.endswith(".forward"))
    out = {}
    for run, threads in enumerate(("4", "16", "4")):
        os.environ["BSW_SWX_THREADS"] = threads
        d = Path(work) / f"run{run}"
        d.mkdir()
        p = lib.pipeline_build(str(prog.spec_path), str(d), cfg.dpdk_include, [cfg.iospec(0)], "compiled-only")
        try:
            pmap = prog.pipeline_map()
            pmap.bind(p)
            p.table_lookup_set(True)
            p.cpu_port_config(switch_config.cpu_ring_prefix(cfg.name), switch_config.MEMPOOL)
            p.regarray_write(PNA_DIRECTION_REGARRAY, cfg.cpu_port, PNA_HOST_TO_NET)
            te = p4r.TableEntry(table_id=table.preamble.id)
            te.match.add(field_id=table.match_fields[0].id).exact.value = struct.pack("!I", cfg.cpu_port)
            te.action.action.action_id = forward.preamble.id
            te.action.action.params.add(param_id=forward.params[0].id).value = struct.pack("!I", cfg.cpu_port)
            ops = libbsw.OpBatch()
            store = TableStore(pmap)
            store.apply(p4r.Update(type=p4r.Update.INSERT, entity=p4r.Entity(table_entry=te)), ops, [])
            store.add_rebuilds(ops)
            p.table_commit(ops)
            for seq in range(N_PACKETS):
                frame = b"\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02\x88\xb5" + struct.pack("!I", seq) + bytes(42)
                p.packet_out_send(struct.pack("!I", cfg.cpu_port) + frame)
            p.workers_start(0)
            got, buf, deadline = [], ctypes.create_string_buffer(2048), time.monotonic() + 10
            while len(got) < N_PACKETS and time.monotonic() < deadline:
                n = p.packet_in_recv(buf, 100_000)
                if n > 0:
                    got.append(struct.unpack("!I", buf.raw[14:18])[0])
            p.workers_stop()
            out[f"run{run}"] = {"threads": threads, "order": got, "rotation": list(p.thread_rotation()),
                                "dirs": sorted(x.name for x in d.iterdir() if x.is_dir())}
        finally:
            p.free()
    return out


@pytest.fixture(scope="module")
def result():
    return run_child(__file__)


def test_four_threads_with_every_yielding_handler_of_their_own(result):
    """Four threads: the header copy is made and all 13 handlers of
    yielding instructions (rx, tx, drop, the emit+tx forms, table) are the
    library's copies; 16: neither."""
    assert result["run0"]["dirs"] == ["swx-threads-4"]
    assert result["run0"]["rotation"] == [4, 13]
    assert result["run1"]["dirs"] == [] and result["run1"]["rotation"] == [16, 0]


@pytest.mark.parametrize("run", ["run0", "run1"])
def test_packets_leave_in_the_order_they_came(result, run):
    assert result[run]["order"] == list(range(N_PACKETS)), result[run]["threads"]


@pytest.mark.parametrize("run", ["run1", "run2"])
def test_a_rebuilt_pipeline_sends_each_packet_once(result, run):
    assert sorted(result[run]["order"]) == list(range(N_PACKETS)), result[run]["threads"]


if __name__ == "__main__":
    child_main(child, "thread-rotation-")

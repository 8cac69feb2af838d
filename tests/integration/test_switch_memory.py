"""The switch's EAL memory without hugepages, with the BNG program.

Without hugepages the EAL's memory is fixed at start (`-m`, from
SwitchConfig.eal_memory()). These tests hold the three things that rely on
it, on a switch of four workers (instances):
  - one BNG pipeline instance fits in PIPELINE_INSTANCE_MB, the figure the
    default size is computed from;
  - with the default size a second program is built beside the running one
    (what a SetForwardingPipelineConfig does) and a FIB change, which builds
    a second rte_lpm per instance, is committed on it;
  - wherever the memory runs out during a build, the build is refused with
    a message naming it, nothing leaks, and the process lives on. Before the
    fix, a standby table array that failed half-way was freed with the
    pipeline's own default action data in it: a double free that aborted
    the switch;
  - a FIB change that finds room for fewer new rte_lpm objects than there
    are instances is refused as ENOMEM (RESOURCE_EXHAUSTED over P4Runtime)
    and frees those it built; before, they leaked, 66 MB each.

The pipelines are built in a child process (this file run as a script):
DPDK's EAL can be set up once per process, and pytest's process is shared.
"""
from __future__ import annotations

import ctypes
import errno
import sys
from pathlib import Path

import pytest

from tests.support import child_main, run_child

pytestmark = pytest.mark.root

WORKERS = 4
SESSIONS = 1000
SWEEP_STEP_MB = 8


class _HeapStats(ctypes.Structure):
    """struct rte_malloc_socket_stats (rte_malloc.h)."""
    _fields_ = [("heap_totalsz_bytes", ctypes.c_size_t), ("heap_freesz_bytes", ctypes.c_size_t),
                ("greatest_free_size", ctypes.c_size_t), ("free_count", ctypes.c_uint),
                ("alloc_count", ctypes.c_uint), ("heap_allocsz_bytes", ctypes.c_size_t)]


def child(work: str) -> dict:
    from bench.bench_bng import BNG_MAC, CORE_MAC, PORT, entries
    from bench.bench_dataplane import insert_update, make_pcap, pipeline_with_entries
    from bng_lab.in_process import load_program, start_eal
    from bng_switch import libbsw, switch_config

    cfg = switch_config.from_dict({"name": "mem", "work_dir": work, "workers": WORKERS,
                                   "ports": [{"id": 1, "type": "pcap", "rx_pcap": f"{work}/in.pcap",
                                              "tx_pcap": "none"}]})
    make_pcap(Path(work) / "in.pcap", "64", 4)
    lib = start_eal(cfg)
    iospecs = [cfg.iospec(k) for k in range(WORKERS)]
    prog = load_program("bng", Path(work), "bng.spec")

    eal = ctypes.CDLL("librte_eal.so.23")
    eal.rte_malloc.restype = ctypes.c_void_p
    eal.rte_malloc.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint]
    eal.rte_free.argtypes = [ctypes.c_void_p]

    def heap() -> _HeapStats:
        s = _HeapStats()
        eal.rte_malloc_get_socket_stats(0, ctypes.byref(s))
        return s

    def leave_free(mb: int) -> list:
        """Blocks taken from the EAL heap until about mb MB of it is left
        free (in whatever pieces it is): free them with rte_free."""
        taken = []
        while True:
            s = heap()
            extra = s.heap_freesz_bytes - mb * 2**20
            if extra <= 2**20 or s.greatest_free_size <= 2**20:
                return taken
            # the largest free element holds its own header too
            block = eal.rte_malloc(None, min(extra, s.greatest_free_size - 2**17), 0)
            if not block:
                return taken
            taken.append(block)

    def build():
        return lib.pipeline_build(str(prog.spec_path), work, cfg.dpdk_include, iospecs, "compiled-only")

    def with_sessions():
        return pipeline_with_entries(lib, prog, Path(work), iospecs, cfg.dpdk_include, "compiled-only", True,
                                     lambda pmap: entries("pppoe_up", SESSIONS,
                                                          lambda *e: insert_update(pmap, *e)))[0]

    out: dict = {"eal_mb": cfg.eal_memory()}

    before = heap().heap_allocsz_bytes
    p = build()
    out["instance_mb"] = (heap().heap_allocsz_bytes - before) / WORKERS / 2**20
    p.free()

    def fib_change(p):
        """A host route committed on p: the FIB (rte_lpm) rebuilt in every instance."""
        from bng_switch.table_store import TableStore
        pmap = prog.pipeline_map()
        pmap.bind(p)
        store = TableStore(pmap)
        ops, undo = libbsw.OpBatch(), []
        fib = next(t for t in pmap.tables.values() if t.name.endswith(".fib_v4"))
        dst = next(iter(fib.fields.values())).name
        store.apply(insert_update(pmap, "fib_v4", {dst: 0x0a000001}, "set_nexthop_l2",
                                  {"port": PORT, "smac": BNG_MAC, "dmac": CORE_MAC, "vid": 0}), ops, undo)
        store.add_rebuilds(ops)
        p.table_commit(ops)

    # A new program beside the running one, then a FIB change on it.
    running = with_sessions()
    new = with_sessions()
    fib_change(new)
    out["swap"] = "ok"
    running.free()

    # A FIB change with room for one new rte_lpm object of the four:
    # refused, and the one it built is freed.
    before = heap().heap_allocsz_bytes
    hole = eal.rte_malloc(None, 100 * 2**20, 0)     # room for one, in one piece
    taken = leave_free(0)
    eal.rte_free(hole)
    try:
        fib_change(new)
        out["fib_short"] = "committed"
    except libbsw.BswError as e:
        out["fib_short"] = f"{e.errno}: {e}"
    for block in taken:
        eal.rte_free(block)
    out["fib_short_leak"] = heap().heap_allocsz_bytes - before
    fib_change(new)

    # A FIB rebuild the table type itself refuses keeps the type's reason.
    pmap = prog.pipeline_map()
    pmap.bind(new)
    fib = next(t for t in pmap.tables.values() if t.name.endswith(".fib_v4"))
    act = next(a for a in fib.actions.values() if a.name.endswith("set_nexthop_l2"))
    hole_mask = libbsw.OpBatch()
    hole_mask.rebuild(fib.swx_id, [libbsw.EntryBytes(
        (0x0A000000).to_bytes(fib.key_size, sys.byteorder), act.swx_id,
        act.encode({}, fib.data_size), (0xFF00FF00).to_bytes(fib.key_size, sys.byteorder), 24)])
    try:
        new.table_commit(hole_mask)
        out["fib_not_prefix"] = "committed"
    except libbsw.BswError as e:
        out["fib_not_prefix"] = f"{e.errno}: {e}"
    new.free()

    # Leave less and less EAL memory free: every build either works or is
    # refused, and a refused one gives back all it took.
    base = heap().heap_allocsz_bytes
    out["refusals"], out["built"], out["leaks"] = [], 0, []
    need_mb = int(out["instance_mb"] * WORKERS) + 2 * SWEEP_STEP_MB
    for free_mb in range(0, need_mb, SWEEP_STEP_MB):
        taken = leave_free(free_mb)
        try:
            build().free()
            out["built"] += 1
        except libbsw.BswError as e:
            out["refusals"].append(str(e))
        for block in taken:
            eal.rte_free(block)
        if heap().heap_allocsz_bytes != base:
            out["leaks"].append(free_mb)
    return out


@pytest.fixture(scope="module")
def result():
    return run_child(__file__, timeout=600)


def test_an_instance_fits_the_figure_the_default_is_sized_by(result):
    from bng_switch import switch_config
    assert 0 < result["instance_mb"] <= switch_config.PIPELINE_INSTANCE_MB, result["instance_mb"]


def test_a_new_program_builds_beside_the_running_one_and_takes_a_fib_change(result):
    assert result["swap"] == "ok"


def test_a_fib_change_without_memory_for_it_is_refused_and_frees_what_it_built(result):
    assert result["fib_short"].startswith(f"{errno.ENOMEM}: ") and "out of EAL memory" in result["fib_short"]
    assert result["fib_short_leak"] == 0


def test_a_fib_rebuild_the_lpm_refuses_says_why(result):
    assert result["fib_not_prefix"].startswith(f"{errno.EINVAL}: ") and \
        "rebuild with 1 entries failed: LPM entry 0a000000/ff00ff00: the mask is no prefix" in result["fib_not_prefix"]


def test_running_out_of_eal_memory_is_refused_cleanly_wherever_it_happens(result):
    assert result["refusals"] and result["built"], result
    assert result["leaks"] == []
    for msg in result["refusals"]:
        assert msg.startswith("bsw_pipeline_build: ") and "EAL memory" in msg, msg
    # the sweep reached the tables' own allocations, where the double free was
    assert any("standby table object" in m for m in result["refusals"]), result["refusals"]


if __name__ == "__main__":
    child_main(child, "switch-memory-")

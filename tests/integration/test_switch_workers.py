"""Workers started and stopped on a switch whose worker lcore is 0.

`eal_args` may name any lcores, so a worker can run on lcore 0 (with
--main-lcore elsewhere). The switch once took lcore id 0 to mean "never
launched": it did not wait for such a worker when stopping it, so the next
start found the lcore busy, and a pipeline freed after the stop could still
be running on it.

The pipeline is built in a child process (this file run as a script):
DPDK's EAL can be set up once per process, and pytest's process is shared.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support import child_main, run_child

pytestmark = pytest.mark.root

CYCLES = 200


def child(work: str) -> dict:
    from bng_lab.in_process import load_program, start_eal
    from bng_switch import libbsw, switch_config

    cpus = sorted(os.sched_getaffinity(0))
    cfg = switch_config.from_dict({
        "name": "wk", "work_dir": work, "workers": 1, "ports": [], "mempool_mbufs": 4096,
        "eal_args": ["--lcores", f"0@{cpus[-1]},1@{cpus[0]}", "--main-lcore", "1", "--no-huge", "--no-shconf",
                     "--no-pci", "-m", "512", "--no-telemetry", "--log-level", "*:notice"]})
    lib = start_eal(cfg)
    prog = load_program("switch_test", Path(work))
    p = lib.pipeline_build(str(prog.spec_path), work, cfg.dpdk_include, [cfg.iospec(0)], "compiled-only")
    out = {"cycles": 0, "error": ""}
    try:
        for _ in range(CYCLES):
            p.workers_start(0)
            p.workers_stop()
            out["cycles"] += 1
    except libbsw.BswError as e:
        out["error"] = str(e)
    p.workers_start(0)
    p.free()            # stops the worker first: it must have left the pipeline
    out["freed"] = True
    return out


def test_a_worker_on_lcore_0_is_waited_for_when_stopped():
    out = run_child(__file__)
    assert out == {"cycles": CYCLES, "error": "", "freed": True}


if __name__ == "__main__":
    child_main(child, "switch-workers-")

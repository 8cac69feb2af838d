"""Test helpers shared by unit and integration tests."""
from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import pytest

from bng_lab import netlab, switch_process
from bng_lab.switch_process import ROOT, SwitchProcess  # noqa: F401  (re-exported for tests)


def run_child(test_file: str, timeout: float = 300, cwd: Path | None = None) -> dict:
    """Runs a test file as a script (its `child_main`) in a child process,
    which owns DPDK's EAL: a process sets that up once, and pytest's is
    shared. Returns the JSON object the child printed last; fails the test
    with the child's output if it did not exit 0."""
    r = subprocess.run([sys.executable, str(Path(test_file).resolve())], capture_output=True, text=True,
                       timeout=timeout, env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=cwd)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def child_main(child: Callable[[str], dict], prefix: str) -> None:
    """The script side of run_child: child(work_dir) in a scratch
    directory, its result printed as JSON."""
    with tempfile.TemporaryDirectory(prefix=prefix) as work_dir:
        print(json.dumps(child(work_dir)))


def child_eal(work: str, name: str):
    """In a run_child script: the EAL up for one worker without ports.
    Returns (library, switch config)."""
    from bng_lab.in_process import start_eal
    from bng_switch import switch_config

    cfg = switch_config.from_dict({"name": name, "work_dir": work, "ports": [], "workers": 1,
                                   "mempool_mbufs": 4096})
    return start_eal(cfg), cfg


def child_build(lib, cfg, work: str, program: str):
    """`program` built on child_eal's EAL (compiled, no workers) with its
    pipeline map bound to it. Returns (pipeline, pipeline map)."""
    from bng_lab.in_process import load_program

    prog = load_program(program, Path(work))
    p = lib.pipeline_build(str(prog.spec_path), work, cfg.dpdk_include, [cfg.iospec(0)], "compiled-only")
    pmap = prog.pipeline_map()
    pmap.bind(p)
    return p, pmap


def child_pipeline(work: str, name: str, program: str = "bng"):
    """child_eal and one child_build: (library, pipeline, pipeline map)."""
    lib, cfg = child_eal(work, name)
    return (lib, *child_build(lib, cfg, work, program))


def program_files(program: str) -> tuple[Path, Path]:
    """A compiled program's files, or skip the test with the reason."""
    try:
        return switch_process.program_files(program)
    except switch_process.MissingProgram as e:
        pytest.skip(str(e))


@dataclass
class TwoHosts:
    """Namespaces h1 and h2, each joined by a veth to the root namespace:
    t1/t2 are the hosts' ends, sw1/sw2 the ends a switch takes as ports."""
    lab: netlab.NetLab
    h1: str
    h2: str
    t1: str
    t2: str
    sw1: str
    sw2: str
    switch: SwitchProcess | None = None


@contextlib.contextmanager
def two_hosts() -> Iterator[TwoHosts]:
    """Two hosts for a switch between them. The switch a test sets in
    `.switch` is stopped at the end and must stop cleanly on SIGTERM; its
    log is printed for the test report."""
    lab = netlab.NetLab()
    hosts = None
    try:
        h1, h2 = lab.ns("h1"), lab.ns("h2")
        sw1, t1 = lab.veth("sw1", "t1", ns_b=h1)
        sw2, t2 = lab.veth("sw2", "t2", ns_b=h2)
        hosts = TwoHosts(lab, h1, h2, t1, t2, sw1, sw2)
        yield hosts
    finally:
        if hosts is not None and hosts.switch is not None:
            rc = hosts.switch.stop()
            print(hosts.switch.log()[-4000:])
            assert rc == 0, "switch did not stop cleanly on SIGTERM"
        lab.cleanup()

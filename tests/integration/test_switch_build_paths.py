"""The work and include directories a pipeline is compiled with.

Both go into file names of fixed size and, single-quoted, into the gcc
command the switch runs. A work_dir of 484 characters once had its .c, .so
and .log names cut to one name: the shell emptied the C file, gcc "built"
an empty library from it and the switch cached that, so every later build
failed. A single quote ended the quoting: `q';touch X;'` ran touch. Both are
refused now, naming the limit, and a build that may fall back to the
interpreter does.

The pipelines are built in a child process (this file run as a script):
DPDK's EAL can be set up once per process, and pytest's process is shared.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import child_main, run_child

pytestmark = pytest.mark.root


def child(work: str) -> dict:
    from bng_lab.in_process import load_program, start_eal
    from bng_switch import libbsw, switch_config

    cfg = switch_config.from_dict({"name": "bp", "work_dir": work, "workers": 1, "ports": [],
                                   "mempool_mbufs": 4096})
    lib = start_eal(cfg)
    prog = load_program("switch_test", Path(work))
    long_dir = Path(work)
    while len(str(long_dir)) < 490:
        long_dir /= "d" * 100
    quote_dir = Path(work) / "q';touch INJECTED;'"
    out = {}
    for label, d in (("long", long_dir), ("quote", quote_dir)):
        d.mkdir(parents=True)
        for mode in ("compiled-only", "compiled"):
            try:
                p = lib.pipeline_build(str(prog.spec_path), str(d), cfg.dpdk_include, [cfg.iospec(0)], mode)
                out[f"{label} {mode}"] = p.mode
                p.free()
            except libbsw.BswError as e:
                out[f"{label} {mode}"] = f"{e.errno}: {e}"
        out[f"{label} files"] = sorted(x.name for x in d.iterdir())
    out["injected"] = any(Path(work).rglob("INJECTED")) or Path("INJECTED").exists()
    p = lib.pipeline_build(str(prog.spec_path), work, cfg.dpdk_include, [cfg.iospec(0)], "compiled-only")
    out["plain"] = p.mode
    p.free()
    return out


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("cwd")          # where an injected command would run
    out = run_child(__file__, cwd=cwd)
    out["injected"] = out["injected"] or (cwd / "INJECTED").exists()
    return out


@pytest.mark.parametrize("label", ["long", "quote"])
def test_a_directory_that_cannot_be_used_is_refused_by_name(result, label):
    msg = result[f"{label} compiled-only"]
    assert msg.startswith("36: ") and "at most 480 characters and hold no single quote" in msg, msg
    assert result[f"{label} compiled"] == "interpreted"        # the switch still runs
    assert result[f"{label} files"] == []                     # nothing half-built left behind


def test_nothing_in_a_path_reaches_the_shell(result):
    assert result["injected"] is False


def test_an_ordinary_directory_still_compiles(result):
    assert result["plain"] == "compiled"


if __name__ == "__main__":
    child_main(child, "switch-build-")

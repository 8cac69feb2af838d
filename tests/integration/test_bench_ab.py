"""bench/bench_ab.py at a tiny size: it builds the bng program both ways,
each way twice, measures every build turn about, and exits 0 only if every
build forwarded every packet by its session (bench_bng's check). No figure is asserted
(benchmarks measure, tests do not time); this keeps the tool from rotting.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.root

ROOT = Path(__file__).resolve().parents[2]
SMALL = ["--rounds", "2", "--seconds", "0.2", "--sessions", "256", "--flows", "16"]


def bench_ab(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "bench" / "bench_ab.py"), *SMALL, *args],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)


def test_two_builds_measured_turn_about(tmp_path):
    out = tmp_path / "ab.json"
    r = bench_ab("--roles", "pppoe_down,lns_up", "--env", "BSW_SWX_GROUP_CHAIN=1,0", "--json", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    res = json.loads(out.read_text())
    assert (res["env"], res["a"], res["b"]) == ("BSW_SWX_GROUP_CHAIN", "1", "0")
    assert res["builds"] == 2
    for role in ("pppoe_down", "lns_up"):
        got = res["roles"][role]
        assert len(got["a_builds"]) == len(got["b_builds"]) == 2
        assert all(len(runs) == 2 for runs in got["a_builds"] + got["b_builds"])
        assert sorted(got["a_runs"]) == sorted(got["a_builds"][0] + got["a_builds"][1])
        assert min(got["a_runs"] + got["b_runs"]) > 0
        assert any(line.startswith(role) for line in r.stdout.splitlines())


"""bench/bench_bng.py at a tiny size, with every session policed: it exits 0
only if the meters could be set (a meter array the program does not have
fails) and each role forwarded every packet by its session and dropped none
(bench_bng's check: a policer that drops fails it). No figure is asserted
(benchmarks measure, tests do not time); this keeps the --policed path
from rotting."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.root

ROOT = Path(__file__).resolve().parents[2]


def test_policed_roles_forward(tmp_path):
    out = tmp_path / "bng.json"
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_bng.py"), "--policed",
                        "--seconds", "0.2", "--runs", "1", "--sessions", "256", "--flows", "16",
                        "--roles", "pppoe_up,lns_down", "--json", str(out)],
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "(policed)" in r.stdout.splitlines()[0]
    res = json.loads(out.read_text())["compiled"]["64"]
    for role in ("pppoe_up", "lns_down"):
        assert res[role]["median_mpps"] > 0


def test_hand_written_paths_forward(tmp_path):
    """--hand-written runs pppoe_up and lns_up as hand-written C over the
    pipeline's own tables and counters; bench_bng refuses (exit != 0) a run in
    which any packet was not forwarded by its session, so a 0 exit says the
    hand-written paths did the program's work on every packet."""
    out = tmp_path / "bng.json"
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_bng.py"), "--hand-written",
                        "--seconds", "0.2", "--runs", "1", "--sessions", "256", "--flows", "16",
                        "--roles", "pppoe_up,lns_up,lns_down", "--json", str(out)],
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    res = json.loads(out.read_text())["compiled"]["64"]
    for role in ("pppoe_up", "lns_up"):
        assert res[role]["hand_written"]["median_mpps"] > 0
    assert "hand_written" not in res["lns_down"]      # only the two paths it writes out
    assert "hand-written" in r.stdout

"""bench/bench_bng.py at a tiny size, for its options that a plain
`make bench-bng` does not take. bench_bng exits 0 only if each role forwarded
every packet by its session and dropped none, so these keep those paths from
rotting. No figure is asserted (benchmarks measure, tests do not time)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.root

ROOT = Path(__file__).resolve().parents[2]


def run_tiny(tmp_path, *options: str, roles: str) -> tuple[str, dict]:
    """bench_bng.py with 256 sessions and one short run per role: its
    stdout and its 64-byte results. Fails the test if it exits non-zero."""
    out = tmp_path / "bng.json"
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_bng.py"), *options,
                        "--seconds", "0.2", "--runs", "1", "--sessions", "256", "--flows", "16",
                        "--roles", roles, "--json", str(out)],
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout, json.loads(out.read_text())["compiled"]["64"]


def test_policed_roles_forward(tmp_path):
    """Every session policed: the meters could be set (a meter array the
    program does not have fails) and a policer that drops fails the run."""
    stdout, res = run_tiny(tmp_path, "--policed", roles="pppoe_up,lns_down")
    assert "(policed)" in stdout.splitlines()[0]
    for role in ("pppoe_up", "lns_down"):
        assert res[role]["median_mpps"] > 0


def test_hand_written_paths_forward(tmp_path):
    """--hand-written runs pppoe_up and lns_up as hand-written C over the
    pipeline's own tables and counters; a run in which any packet was not
    forwarded by its session fails, so the hand-written paths did the
    program's work on every packet."""
    stdout, res = run_tiny(tmp_path, "--hand-written", roles="pppoe_up,lns_up,lns_down")
    for role in ("pppoe_up", "lns_up"):
        assert res[role]["hand_written"]["median_mpps"] > 0
    assert "hand_written" not in res["lns_down"]      # only the two paths it writes out
    assert "hand-written" in stdout

"""bench/bench_path_length.py on two roles at a small size: it builds the
traced pipeline, sends each role's frames and counts per packet the
instructions DPDK's trace shows. No figure is asserted beyond what must hold
for any program (a count per kind adding up to the total, every packet of a
role taking the same path); this keeps the tool from rotting."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.root

ROOT = Path(__file__).resolve().parents[2]


def test_instructions_counted_per_role(tmp_path):
    out = tmp_path / "path.json"
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_path_length.py"), "--roles",
                        "pppoe_down,lns_up", "--sessions", "8", "--packets", "32", "--json", str(out)],
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    res = json.loads(out.read_text())
    assert set(res) == {"pppoe_down", "lns_up"}
    for role, c in res.items():
        assert c["packets"] >= 8, role
        assert c["min"] == c["max"] == c["total"], role
        assert c["const_stores"] + c["emit_invalid"] + c["other"] == c["total"], role
        assert c["const_stores"] > 0 and c["other"] > 0, role
        assert any(line.startswith(role) for line in r.stdout.splitlines())

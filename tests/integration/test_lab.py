"""The README's first command (`make lab`), run non-interactively for a few
seconds: traffic passes, and nothing is left behind."""
import subprocess
import sys

import pytest

from tests.support import ROOT, program_files

pytestmark = pytest.mark.root


def netns_names() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def test_lab_passes_traffic_and_cleans_up():
    program_files("switch_test")  # the lab's program must be compiled
    before = netns_names()
    r = subprocess.run([sys.executable, str(ROOT / "scripts/lab.py"), "--duration", "4"],
                       capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    assert " 0% packet loss" in r.stdout
    assert netns_names() == before
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert "sw1lab" not in links and "sw2lab" not in links
    assert subprocess.run(["pgrep", "-f", "bng_switch --config .*lab.yaml"]).returncode == 1

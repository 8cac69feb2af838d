"""The README's first command (`make lab`), run non-interactively: both
topologies bring emulated subscribers up, pass traffic both ways, and leave
no namespace, link, process or hugepage behind."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import ROOT, program_files

pytestmark = pytest.mark.root

LAB_PROCESSES = r"bng_switch --config|bng_controller --config|subemu --iface|bng_lab.udp_sink|bng_lab.lossy_bridge"


def netns_names() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def link_names() -> set[str]:
    out = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    return {line.split(":")[1].strip().split("@")[0] for line in out.splitlines()}


def hugepage_files() -> set[str]:
    return {str(p) for p in Path("/dev/hugepages").glob("*")} if Path("/dev/hugepages").is_dir() else set()


def free_hugepages() -> int:
    m = re.search(r"HugePages_Free:\s+(\d+)", Path("/proc/meminfo").read_text())
    return int(m.group(1)) if m else 0


@pytest.mark.parametrize("topology", ["pppoe", "l2tp"])
def test_lab_brings_subscribers_up_passes_traffic_and_cleans_up(topology):
    program_files("bng")
    before = (netns_names(), link_names(), hugepage_files(), free_hugepages())
    assert subprocess.run(["pgrep", "-f", LAB_PROCESSES]).returncode == 1, "a lab is already running"
    args = ["--subscribers", "40", "--rate", "50", "--pps", "200", "--duration", "4", "--status-interval", "1"]
    if topology == "l2tp":
        args.append("--l2tp")
    r = subprocess.run([sys.executable, str(ROOT / "scripts/lab.py"), *args],
                       capture_output=True, text=True, timeout=300)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "every subscriber has an outcome: 40 up, 0 failed" in out
    last = [ln for ln in r.stdout.splitlines() if ln.startswith("[")][-1]
    up, down, lost = map(int, re.search(r"traffic up (\d+) down (\d+) lost (\d+)", last).groups())
    assert up > 0 and down > 0, last
    assert lost <= up // 20, last                     # the reflected stream comes back, give or take in flight
    assert " silent 0" in last, last                   # every subscriber got its stream back
    assert "bngctl" in out and "p4runtime_sh" in out  # it says how to look inside
    after = (netns_names(), link_names(), hugepage_files(), free_hugepages())
    assert after == before, f"left behind: {after} vs {before}"
    assert subprocess.run(["pgrep", "-f", LAB_PROCESSES]).returncode == 1, "a lab process survived"


def test_lab_stops_cleanly_on_ctrl_c():
    """Ctrl-C (SIGINT to the whole foreground group, as a terminal sends it)
    while subscribers are connecting."""
    import os
    import signal
    import time
    program_files("bng")
    before = (netns_names(), link_names())
    p = subprocess.Popen([sys.executable, str(ROOT / "scripts/lab.py"), "--subscribers", "100", "--rate", "20"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    lines = []
    deadline = time.time() + 120
    for line in p.stdout:
        lines.append(line)
        if line.startswith("[") or time.time() > deadline:
            break
    os.killpg(p.pid, signal.SIGINT)
    rest, _ = p.communicate(timeout=120)
    out = "".join(lines) + rest
    assert "lab: stopped" in out, out
    kept = re.search(r"lab: logs kept in (\S+)", out)           # stopped before all were up: logs kept
    assert kept, out
    shutil.rmtree(kept.group(1))
    assert (netns_names(), link_names()) == before
    assert subprocess.run(["pgrep", "-f", LAB_PROCESSES]).returncode == 1, "a lab process survived"

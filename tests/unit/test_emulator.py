"""subemu, the PPPoE subscriber emulator (emulator/, Go): its own test suite
and the command-line contract the lab relies on (--help exits 0, a usage
error exits 2). Skipped, with the reason, where no Go toolchain is installed
(scripts/setup.sh installs Debian's golang-go)."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EMULATOR = ROOT / "emulator"
BINARY = EMULATOR / "build" / "subemu"


def _go():
    return shutil.which("go") or next(
        (p for p in ("/usr/local/go/bin/go", "/usr/lib/go/bin/go") if os.access(p, os.X_OK)), None)


GO = _go()
pytestmark = pytest.mark.skipif(GO is None, reason="no Go toolchain (apt install golang-go)")


def _make(*targets, timeout=900):
    env = dict(os.environ, GO=GO)
    # The Makefile keeps Go's caches under emulator/build when HOME is unset.
    return subprocess.run(["make", "-s", "-C", str(EMULATOR), *targets], env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_go_unit_tests_pass():
    """Codecs, the RFC 1661 automaton, MD4/MS-CHAPv2/CHAP vectors, fuzz seed
    corpora, and whole sessions against the fake access concentrator (the
    veth test among them runs only as root)."""
    r = _make("test")
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]


@pytest.fixture(scope="module")
def subemu():
    r = _make("all")
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    assert BINARY.is_file()
    return str(BINARY)


def test_help_exits_zero(subemu):
    r = subprocess.run([subemu, "--help"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0
    for flag in ("--iface", "--sessions", "--svlan", "--cvlan", "--report", "--status-file", "--wrong-password-every"):
        assert flag in r.stdout


@pytest.mark.parametrize("args", [
    ["--bogus-flag"],
    ["--sessions", "3"],                                   # no --iface
    ["--iface", "lo", "--cvlan", "10"],                    # c-VLAN without s-VLAN
    ["--iface", "lo", "--svlan", "5000"],                  # VLAN id out of range
    ["--iface", "lo", "--sessions", "10", "--svlan", "7"],  # 10 sessions, 1 line
    ["--iface", "lo", "--dhcpv6-pd"],                      # needs --ipv6
    ["--iface", "lo", "--discovery-timeout", "2", "--discovery-max-wait", "1"],   # cap below the first wait
])
def test_usage_errors_exit_two(subemu, args):
    r = subprocess.run([subemu, *args], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2, (args, r.stderr)
    assert r.stderr.strip()

"""Network namespaces and veth pairs for tests, cleaned up on exit.

Raw sockets are opened inside a namespace by switching only the calling
thread there (setns), so one test process can send and receive on the
hosts of several namespaces without spawning helpers.
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import socket
import subprocess
import uuid

CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL("libc.so.6", use_errno=True)


def sh(*cmd: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, check=check, capture_output=True, text=True)


def have_root_and_netns() -> bool:
    if os.geteuid() != 0:
        return False
    name = f"probe{uuid.uuid4().hex[:6]}"
    ok = sh("ip", "netns", "add", name, check=False).returncode == 0
    sh("ip", "netns", "del", name, check=False)
    return ok


@contextlib.contextmanager
def in_netns(ns: str):
    """Run the calling thread inside namespace ns."""
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    target = os.open(f"/run/netns/{ns}", os.O_RDONLY)
    try:
        if _libc.setns(target, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns {ns}")
        yield
    finally:
        _libc.setns(own, CLONE_NEWNET)
        os.close(own)
        os.close(target)


def raw_socket(iface: str, ns: str | None = None, timeout: float = 1.0) -> socket.socket:
    ctx = in_netns(ns) if ns else contextlib.nullcontext()
    with ctx:
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
        s.bind((iface, 0))
    s.settimeout(timeout)
    return s


class NetLab:
    """Namespaces and veth pairs named with a per-run suffix."""

    def __init__(self, tag: str = ""):
        self.tag = tag or uuid.uuid4().hex[:5]
        self.namespaces: list[str] = []
        self.links: list[str] = []

    def ns(self, name: str) -> str:
        full = f"{name}-{self.tag}"
        sh("ip", "netns", "add", full)
        self.namespaces.append(full)
        sh("ip", "-n", full, "link", "set", "lo", "up")
        return full

    def veth(self, a: str, b: str, ns_b: str | None = None, mtu: int = 1500) -> tuple[str, str]:
        """veth a <-> b; a stays in the root namespace (the switch side)."""
        a, b = f"{a}{self.tag}"[:15], f"{b}{self.tag}"[:15]
        sh("ip", "link", "add", a, "mtu", str(mtu), "type", "veth", "peer", "name", b, "mtu", str(mtu))
        self.links.append(a)
        quiet(a)
        if ns_b:
            sh("ip", "link", "set", b, "netns", ns_b)
            sh("ip", "netns", "exec", ns_b, "sysctl", "-qw", f"net.ipv6.conf.{b}.disable_ipv6=1")
            sh("ip", "-n", ns_b, "link", "set", b, "up")
        else:
            quiet(b)
            sh("ip", "link", "set", b, "up")
        sh("ip", "link", "set", a, "up")
        return a, b

    def cleanup(self) -> None:
        for link in self.links:
            sh("ip", "link", "del", link, check=False)
        for ns in self.namespaces:
            sh("ip", "netns", "del", ns, check=False)


def full_checksums(ns: str, dev: str) -> None:
    """Make a namespace's kernel compute its TCP/UDP checksums in software on
    `dev`: a veth offloads them, so the frames the switch reads through
    af_packet would carry partial checksums that a real NIC never sends
    (and that subscribers rightly count as corrupt)."""
    sh("ip", "netns", "exec", ns, "ethtool", "-K", dev, "tx", "off")


def quiet(dev: str) -> None:
    """No IPv6 autoconf chatter on a link the tests sniff."""
    sh("sysctl", "-qw", f"net.ipv6.conf.{dev}.disable_ipv6=1", check=False)

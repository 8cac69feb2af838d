"""Third-party L2TP daemons from Debian, run in a test's network namespace
in the foreground with private configs, as LoggedProcesses (so a lab's
`helpers` list stops them, whatever happens to the test).

- Xl2tpd: xl2tpd as a LAC. Each call is a [lac NAME] section (autodial);
  xl2tpd runs under `unshare --mount` with our fake pppd bind-mounted over
  /usr/sbin/pppd (its compiled-in path), so only its process tree sees the
  fake: without kernel PPP, a real pppd could not run and the call would
  drop right after ICCN.
- L2tpns: l2tpns as an LNS, with RADIUS, its tun device in the namespace,
  and its compiled-in /etc/l2tpns/ip_pool bind-mounted from a private file
  (again under `unshare --mount`).
"""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from bng_lab import netlab
from bng_lab.processes import LoggedProcess

HERE = Path(__file__).resolve().parent
FAKE_PPPD = HERE / "fake_pppd.py"
XL2TPD = Path("/usr/sbin/xl2tpd")
PPPD = Path("/usr/sbin/pppd")               # xl2tpd's compiled-in PPPD
L2TPNS = Path("/usr/sbin/l2tpns")
L2TPNS_IP_POOL = Path("/etc/l2tpns/ip_pool")  # l2tpns's compiled-in IPPOOLFILE
TUN = Path("/dev/net/tun")                  # l2tpns's subscriber interface


def missing_tools(*paths: Path) -> list[str]:
    """What of `paths` and of private bind mounts this machine lacks."""
    out = [str(p) for p in paths if not p.exists()]
    if shutil.which("unshare") is None:
        out.append("unshare (util-linux)")
    elif subprocess.run(["unshare", "--mount", "--propagation", "private", "mount", "--bind", "/dev/null",
                         "/dev/null"], capture_output=True).returncode != 0:
        out.append("private mount namespaces (unshare --mount; mount --bind)")
    return out


def _in_private_mounts(netns: str, binds: list[tuple[Path, Path]], cmd: list[str]) -> list[str]:
    """cmd in netns, in a mount namespace of its own with `binds` (src, dst)."""
    mounts = " && ".join(f"mount --bind {shlex.quote(str(src))} {shlex.quote(str(dst))}" for src, dst in binds)
    return ["ip", "netns", "exec", netns, "unshare", "--mount", "--propagation", "private",
            "sh", "-c", f"{mounts} && exec {shlex.join(cmd)}"]


@dataclass
class LacCall:
    """One [lac NAME] section of xl2tpd.conf: a tunnel (xl2tpd 1.3.18 opens
    one per section) with one call to the LNS, PPP by the fake pppd as
    `user`/`password`; `pppd_options` go to its options file."""
    name: str
    user: str
    password: str
    pppd_options: list[str] = field(default_factory=list)
    length_bit: bool = False        # L bit (and Length) in data messages; xl2tpd's default: no


class Xl2tpd(LoggedProcess):
    def __init__(self, tmp: Path, netns: str, *, local_ip: str, lns_ip: str, host_name: str, secret: str,
                 peer_host_name: str, calls: list[LacCall], challenge: bool = True, ping: str | None = None,
                 echo: bool = False, name: str = "xl2tpd"):
        super().__init__(name, echo)
        self.dir = tmp / name
        self.dir.mkdir(parents=True, exist_ok=True)
        self.netns = netns
        self.control = self.dir / "l2tp-control"
        self.ping = ping
        # the fake pppd: a wrapper with absolute paths (it runs as /usr/sbin/pppd)
        self.wrapper = self.dir / "pppd"
        # (the pty is raw only once someone makes it so: stty does it sooner than Python)
        self.wrapper.write_text(f"#!/bin/sh\nstty raw -echo 2>/dev/null\nexec {sys.executable} {FAKE_PPPD} \"$@\"\n")
        self.wrapper.chmod(0o755)
        (self.dir / "l2tp-secrets").write_text(f"{host_name} {peer_host_name} {secret}\n")
        sections = [f"[global]\nlisten-addr = {local_ip}\nport = 1701\nauth file = {self.dir / 'l2tp-secrets'}\n"
                    "force userspace = yes\ndebug tunnel = yes\ndebug state = yes\n"]
        for c in calls:
            opts = self.dir / f"options.{c.name}"
            opts.write_text("".join(f"{o}\n" for o in [f"user {c.user}", f"password {c.password}",
                                                         *c.pppd_options]))
            sections.append(f"[lac {c.name}]\nlns = {lns_ip}\nhostname = {host_name}\nname = {c.user}\n"
                            f"challenge = {'yes' if challenge else 'no'}\nautodial = yes\nredial = no\n"
                            f"length bit = {'yes' if c.length_bit else 'no'}\npppoptfile = {opts}\n")
        self.config = self.dir / "xl2tpd.conf"
        self.config.write_text("\n".join(sections))

    def start(self) -> "Xl2tpd":
        cmd = [str(XL2TPD), "-D", "-c", str(self.config), "-s", str(self.dir / "l2tp-secrets"),
               "-p", str(self.dir / "xl2tpd.pid"), "-C", str(self.control)]
        env = {"FAKE_PPPD_STATUS": str(self.dir / "pppd-{pid}.json")}
        if self.ping:
            env["FAKE_PPPD_PING"] = self.ping
        self._launch(_in_private_mounts(self.netns, [(self.wrapper, PPPD)], cmd), env=env)
        self.wait_for("Listening on IP address", 15)
        return self

    def command(self, line: str) -> None:
        """A command on xl2tpd's control FIFO: `h CALLID` hangs a call up
        (CDN), `d LACNAME` disconnects that section's tunnel (StopCCN)."""
        fd = os.open(self.control, os.O_WRONLY | os.O_NONBLOCK)
        try:
            os.write(fd, (line + "\n").encode())
        finally:
            os.close(fd)
        # xl2tpd takes one command per read of the FIFO: two written
        # back to back would arrive as one (garbled) command
        time.sleep(0.5)

    def pppd_status(self) -> dict[str, dict]:
        """The fake pppds' status files, by user (the latest per user)."""
        out: dict[str, dict] = {}
        for f in sorted(self.dir.glob("pppd-*.json"), key=lambda p: p.stat().st_mtime):
            try:
                st = json.loads(f.read_text())
            except (json.JSONDecodeError, FileNotFoundError):
                continue
            out[st["user"]] = st
        return out


class L2tpns(LoggedProcess):
    """l2tpns (LNS) in `netns` on `bind_address`, RADIUS on the namespace's
    127.0.0.1; `pool` is its ip_pool; subscribers get `peer_address` as
    their IPCP peer address."""

    def __init__(self, tmp: Path, netns: str, *, bind_address: str, secret: str, cluster_interface: str = "lo",
                 radius_secret: str, radius_port: int = 1812, pool: str = "10.20.1.0/24",
                 peer_address: str = "10.20.0.1", host_name: str = "l2tpns-lns", echo: bool = False,
                 name: str = "l2tpns"):
        super().__init__(name, echo)
        self.dir = tmp / name
        self.dir.mkdir(parents=True, exist_ok=True)
        self.netns = netns
        self.host_name = host_name
        self.ip_pool = self.dir / "ip_pool"
        self.ip_pool.write_text(pool + "\n")
        self.config = self.dir / "startup-config"
        self.config.write_text("\n".join([
            "set debug 3",                                   # information: control messages, logins
            f'set pid_file "{self.dir / "l2tpns.pid"}"',
            f'set hostname "{host_name}"',
            f'set l2tp_secret "{secret}"',
            f"set bind_address {bind_address}",
            # clustering cannot be switched off: its multicast heartbeats go
            # to the namespace's loopback (not to the LAC), and it elects
            # itself master after 1.5 s instead of 15 s
            f'set cluster_interface "{cluster_interface}"',
            "set cluster_hb_interval 1",
            "set cluster_hb_timeout 15",
            "set primary_radius 127.0.0.1",
            f"set primary_radius_port {radius_port}",          # accounting: the port after it
            f'set radius_secret "{radius_secret}"',
            'set radius_authtypes "chap,pap"',
            "set radius_accounting yes",
            "set primary_dns 192.0.2.53",
            "set secondary_dns 192.0.2.54",
            f"set peer_address {peer_address}",
            'set tundevicename "tun-l2tpns"',
            "set cli_bind_address 127.0.0.1",
            "set send_garp no",
            "",
        ]))

    def start(self) -> "L2tpns":
        self._launch(_in_private_mounts(self.netns, [(self.ip_pool, L2TPNS_IP_POOL)],
                                        [str(L2TPNS), "-c", str(self.config)]))
        self.wait_for("I am declaring myself the master", 20)
        return self

    def cli(self, *commands: str, timeout: float = 5.0) -> str:
        """Commands on l2tpns's CLI (telnet, port 23 of the namespace's
        127.0.0.1, where it asks for no login); its output, telnet
        negotiation and terminal escapes removed."""
        script = (
            "import socket,sys,time\n"
            f"s=socket.create_connection(('127.0.0.1',23),{timeout}); s.settimeout(1.0)\n"
            "out=b''\n"
            "def drain(t):\n"
            "    global out\n"
            "    end=time.time()+t\n"
            "    while time.time()<end:\n"
            "        try:\n"
            "            d=s.recv(65536)\n"
            "        except socket.timeout:\n"
            "            continue\n"
            "        except OSError:\n"                   # reset after `exit`
            "            return\n"
            "        if not d: return\n"
            "        out+=d\n"
            "drain(0.5)\n"
            f"for c in {list(commands)!r}:\n"
            "    s.sendall(c.encode()+b'\\r\\n'); drain(1.0)\n"
            "s.sendall(b'exit\\r\\n'); drain(0.3)\n"
            "import re\n"
            "out=re.sub(rb'\\xff[\\xfb-\\xfe].|\\xff[\\xf0-\\xfa]',b'',out,flags=re.S)\n"   # telnet IAC sequences
            "sys.stdout.write(out.decode('utf-8','replace'))\n")
        r = netlab.sh("ip", "netns", "exec", self.netns, sys.executable, "-c", script, check=False)
        text = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", r.stdout)             # terminal escapes
        return text.replace("\r", "") + r.stderr

    def cli_sessions(self) -> dict[str, dict]:
        """`show session`, by user: sid, tid, ip and the whole line."""
        out = {}
        for line in self.cli("show session").splitlines():
            f = line.split()                 # SID LkToSID TID Username IP ...
            if len(f) >= 5 and f[0].isdigit() and f[2].isdigit():
                out[f[3]] = {"sid": int(f[0]), "tid": int(f[2]), "ip": f[4], "line": line}
        return out

    def cli_tunnels(self) -> list[dict]:
        """`show tunnels`: tid, host name, peer address, state, sessions."""
        out = []
        for line in self.cli("show tunnels").splitlines():
            f = line.split()                 # TID Hostname IP State Sessions ...
            if len(f) >= 5 and f[0].isdigit() and f[4].isdigit():
                out.append({"tid": int(f[0]), "host_name": f[1], "ip": f[2], "state": f[3], "sessions": int(f[4])})
        return out

    def drop(self, what: str, ident: int) -> str:
        """`drop session SID` / `drop tunnel TID` (privileged: `enable`
        needs no password when none is configured)."""
        return self.cli("enable", f"drop {what} {ident}")

    def logins(self) -> dict[str, str]:
        """`Login by USER at ADDRESS from LAC (HOST)` lines of its log."""
        out = {}
        for line in self.output:
            m = re.search(r"Login by (\S+) at (\S+) from (\S+) \((\S*)\)", line)
            if m:
                out[m.group(1)] = m.group(2)
        return out

"""Half of LacLnsLab each: our LNS with a third-party LAC in a namespace, or
our LAC with a third-party LNS in a namespace.

    LnsLab:  [peer ns: the LAC, 100.65.0.1] --veth-- our LNS switch (1 transit, 2 core)
                 -- [core ns: 100.64.0.254]
    LacLab:  [access ns: subemu] --veth-- our LAC switch (1 access, 2 transit)
                 --veth-- [peer ns: the LNS, 100.65.0.2]

The controllers are configured exactly like LacLnsLab's LNS and LAC parts;
the third-party daemon is started by the test inside `peer_ns` (its
interface `peer_if` already has its address). `stop()` removes everything,
helpers (the daemon, when it was added to `helpers`) first.
"""
from __future__ import annotations

import ipaddress

from bng_lab import netlab
from bng_lab.processes import ControllerProcess
from bng_lab.switch_process import BUILD, SwitchProcess
from bng_lab.topology import PppoeLab, merge

LAC_IP = "100.65.0.1"
LNS_IP = "100.65.0.2"
SECRET = "l2tp-secret"


class LnsLab(PppoeLab):
    """Our LNS; the LAC is whatever the test runs in `peer_ns` (LAC_IP)."""

    def __init__(self, *args, lns: dict | None = None, **kw):
        super().__init__(*args, **kw)
        self.addr.pool = "10.1.0.0/16"
        self.addr.gateway = "10.1.0.1"
        self.lns_overrides = lns or {}
        self.peer_ns = self.peer_if = ""

    def _build(self) -> None:
        a = self.addr
        self.peer_ns = self.net.ns("lac")
        self.core_ns = self.net.ns("core")
        sw_tr, self.peer_if = self.net.veth("snt", "lac", ns_b=self.peer_ns, mtu=1600)
        sw_core, self.core_if = self.net.veth("snc", "cor", ns_b=self.core_ns, mtu=1600)
        netlab.sh("ip", "-n", self.peer_ns, "addr", "add", f"{LAC_IP}/24", "dev", self.peer_if)
        netlab.sh("ip", "-n", self.core_ns, "addr", "add", a.core_host, "dev", self.core_if)
        netlab.sh("ip", "-n", self.core_ns, "route", "add", a.pool, "via",
                  str(ipaddress.IPv4Interface(a.core_bng).ip))
        self.switch = SwitchProcess(self.tmp, f"lns{self.tag}", [
            {"id": 1, "type": "af_packet", "iface": sw_tr}, {"id": 2, "type": "af_packet", "iface": sw_core}],
            workers=self.workers, idle_us=self.idle_us, **self.switch_cpus()).start()
        subs = self.write_subscribers("lns-subscribers", self.subscribers)
        cfg = merge({
            "name": f"lns-{self.tag}", "pipeline": {"build_dir": str(BUILD / "bng"), "program": "bng"},
            "metrics_listen": "", "ipv6": {"enabled": False},
            "switch": {"address": self.switch.address, "election_id": 10},
            "state_dir": str(self.tmp / "lns-state"), "bng_mac": "02:bb:00:00:00:02",
            "access_ports": [],
            "core": [{"port": 2, "ipv4": a.core_bng, "gateway": str(ipaddress.IPv4Interface(a.core_host).ip)},
                     {"port": 1, "ipv4": f"{LNS_IP}/24"}],
            "ppp": {"auth": ["chap-md5", "pap"], "ipv6": False},
            "pools": {"default": {"prefix": a.pool, "gateway": a.gateway, "dns": a.dns}},
            "l2tp": {"local_address": LNS_IP, "lac": False, "lns": True,
                     "lns_peers": [{"address": LAC_IP, "secret": SECRET}],
                     "tunnel": {"host_name": "lns1", "hello_interval": 10}},
            "aaa": {"backend": "local", "local": {"subscribers": str(subs),
                                                  "accounting_file": str(self.tmp / "lns-acct.jsonl")}},
            "api_socket": str(self.tmp / "lns-api.sock"), **self.controller_cpus()}, self.lns_overrides)
        self.controller = ControllerProcess(self.tmp, f"lns{self.tag}", cfg, echo=self.echo).start()
        self.wait_next_hops()

    def peer(self, *cmd: str, check: bool = True):
        """Run a command in the LAC's namespace."""
        return netlab.sh("ip", "netns", "exec", self.peer_ns, *cmd, check=check)


class LacLab(PppoeLab):
    """Our LAC; the LNS is whatever the test runs in `peer_ns` (LNS_IP).
    `controller` is the LAC's controller, `switch` its switch."""

    def __init__(self, *args, lac: dict | None = None, lac_subscribers: dict | None = None, **kw):
        super().__init__(*args, **kw)
        self.lac_overrides = lac or {}
        self.lac_subscribers = lac_subscribers
        self.peer_ns = self.peer_if = ""

    def _build(self) -> None:
        self.access_ns = self.net.ns("access")
        self.peer_ns = self.net.ns("lns")
        sw_acc, self.access_if = self.net.veth("sla", "acc", ns_b=self.access_ns, mtu=1600)
        sw_tr, self.peer_if = self.net.veth("slt", "lns", ns_b=self.peer_ns, mtu=1600)
        netlab.sh("ip", "-n", self.peer_ns, "addr", "add", f"{LNS_IP}/24", "dev", self.peer_if)
        self.switch = SwitchProcess(self.tmp, f"lac{self.tag}", [
            {"id": 1, "type": self.access_port_type, "iface": sw_acc}, {"id": 2, "type": "af_packet", "iface": sw_tr}],
            workers=self.workers, idle_us=self.idle_us, **self.switch_cpus()).start()
        subs = self.write_subscribers("lac-subscribers", self.lac_subscribers)
        cfg = merge({
            "name": f"lac-{self.tag}", "pipeline": {"build_dir": str(BUILD / "bng"), "program": "bng"},
            "metrics_listen": "", "ipv6": {"enabled": False},
            "switch": {"address": self.switch.address, "election_id": 10},
            "state_dir": str(self.tmp / "lac-state"), "bng_mac": "02:bb:00:00:00:01",
            "access_ports": [1], "core": [{"port": 2, "ipv4": f"{LAC_IP}/24"}],
            "ppp": {"auth": ["chap-md5", "pap"], "ipv6": False},
            "pools": {"local": {"prefix": "10.255.0.0/24", "gateway": "10.255.0.1"}},
            "l2tp": {"local_address": LAC_IP, "lac": True, "tunnel": {"host_name": "lac1", "hello_interval": 10}},
            "aaa": {"backend": "local", "local": {"subscribers": str(subs)}},
            "api_socket": str(self.tmp / "lac-api.sock"), **self.controller_cpus()}, self.lac_overrides)
        self.controller = ControllerProcess(self.tmp, f"lac{self.tag}", cfg, echo=self.echo).start()

    def peer(self, *cmd: str, check: bool = True):
        """Run a command in the LNS's namespace."""
        return netlab.sh("ip", "netns", "exec", self.peer_ns, *cmd, check=check)

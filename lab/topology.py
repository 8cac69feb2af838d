"""The PPPoE BNG topology in network namespaces:

    [access ns: subscribers (subemu)] --veth-- switch port 1 (access)
                                              switch (DPDK SWX, bng.p4) -- CPU port 0 -- controller
    [core ns: a host, 100.64.0.254]  --veth-- switch port 2 (core)

The core host routes the subscriber pool toward the BNG's core address, so
traffic flows both ways with nothing but Linux on the core side. Every
piece is a process or a namespace that `stop()` removes.
"""
from __future__ import annotations

import ipaddress
import sys
import tempfile
import time

import yaml
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from . import netlab
from .cpu_layout import CpuLayout, lab_layout, taskset
from .processes import ControllerProcess, EmulatorProcess, LoggedProcess
from .switch_process import BUILD, SwitchProcess

BNG_MAC = "02:bb:00:00:00:01"


@dataclass
class LabAddresses:
    core_bng: str = "100.64.0.1/24"
    core_host: str = "100.64.0.254/24"
    pool: str = "10.0.0.0/16"
    gateway: str = "10.0.0.1"
    dns: list[str] = field(default_factory=lambda: ["192.0.2.53", "192.0.2.54"])
    core_bng6: str = "2001:db8:ffff::1/64"
    core_host6: str = "2001:db8:ffff::fe/64"
    wan_pool6: str = "2001:db8:100::/48"
    pd_pool6: str = "2001:db8:200::/40"


def merge(cfg: dict, overrides: dict) -> dict:
    """Config overrides, at every depth: a dict updates the section it lands
    on key by key (so {"aaa": {"radius": {"timeout": 1}}} keeps the rest of
    aaa.radius); anything else replaces what was there."""
    for k, v in overrides.items():
        if isinstance(v, dict) and isinstance(cfg.get(k), dict):
            cfg[k] = merge(dict(cfg[k]), v)
        else:
            cfg[k] = v
    return cfg


class PppoeLab:
    n_controllers = 1                 # CPUs the layout sets apart for controllers, at most

    def __init__(self, tmp: Path | None = None, tag: str = "", access_port_type: str = "libpcap",
                 controller: dict | None = None, subscribers: dict | None = None,
                 addresses: LabAddresses | None = None, workers: int = 1, idle_us: int = 100,
                 echo: bool = False, packet_channel: bool = True, pin_cpus: bool = True):
        """packet_channel: the controller exchanges PacketIn/PacketOut with
        its switch over the switch's local socket instead of the P4Runtime
        stream (bng_switch/packet_socket.py).
        pin_cpus: controllers on a CPU of their own, switches and emulators
        on the others (cpu_layout.py); False: wherever the kernel puts them."""
        self.tmp = tmp or Path(tempfile.mkdtemp(prefix="bng-lab-"))
        self.tag = tag or uuid.uuid4().hex[:4]
        self.net = netlab.NetLab(self.tag)
        self.addr = addresses or LabAddresses()
        self.access_port_type = access_port_type
        self.controller_overrides = controller or {}
        self.subscribers = subscribers
        self.workers = workers
        self.idle_us = idle_us
        self.echo = echo
        self.packet_channel = packet_channel
        self.cpus: CpuLayout | None = lab_layout(workers, self.n_controllers) if pin_cpus else None
        self.switch: SwitchProcess | None = None
        self.controller: ControllerProcess | None = None
        self.emulators: list[EmulatorProcess] = []
        self.helpers: list[LoggedProcess] = []
        self.access_ns = self.core_ns = ""
        self.access_if = self.core_if = ""

    # ------------------------------------------------------------------
    def start(self) -> "PppoeLab":
        try:
            self._build()
        except BaseException:
            self.stop()
            raise
        return self

    def _build(self) -> None:
        a = self.addr
        self.access_ns = self.net.ns("access")
        self.core_ns = self.net.ns("core")
        sw_acc, self.access_if = self.net.veth("swa", "acc", ns_b=self.access_ns, mtu=1600)
        sw_core, self.core_if = self.net.veth("swc", "cor", ns_b=self.core_ns, mtu=1600)
        # the access side carries PPPoE only: no IPv6 autoconf chatter either way
        ns = self.core_ns
        netlab.full_checksums(ns, self.core_if)
        netlab.sh("ip", "netns", "exec", ns, "sysctl", "-qw", f"net.ipv6.conf.{self.core_if}.disable_ipv6=0")
        netlab.sh("ip", "-n", ns, "addr", "add", a.core_host, "dev", self.core_if)
        netlab.sh("ip", "-n", ns, "addr", "add", a.core_host6, "dev", self.core_if, "nodad")
        bng = str(ipaddress.IPv4Interface(a.core_bng).ip)
        netlab.sh("ip", "-n", ns, "route", "add", a.pool, "via", bng)
        netlab.sh("ip", "-n", ns, "-6", "route", "add", a.wan_pool6, "via", str(ipaddress.IPv6Interface(a.core_bng6).ip))
        netlab.sh("ip", "-n", ns, "-6", "route", "add", a.pd_pool6, "via", str(ipaddress.IPv6Interface(a.core_bng6).ip))
        ports = [self._access_port(sw_acc),
                 {"id": 2, "type": "af_packet", "iface": sw_core}]
        self.switch = SwitchProcess(self.tmp, f"lab{self.tag}", ports, workers=self.workers,
                                    idle_us=self.idle_us, **self._pktio(f"lab{self.tag}"),
                                    **self.switch_cpus()).start()
        self.controller = ControllerProcess(self.tmp, f"ctl{self.tag}", self.controller_config(),
                                            echo=self.echo).start()
        self.wait_next_hops()

    def wait_next_hops(self, timeout: float = 20.0, controller: ControllerProcess | None = None) -> None:
        """Until the controller has resolved every next hop of its routes:
        before that, upstream traffic is dropped as NO_ROUTE."""
        deadline = time.time() + timeout
        while True:
            hops = (controller or self.controller).api("status")["next_hops"]
            if all(hops.values()):
                return
            if time.time() > deadline:
                raise RuntimeError(f"next hops not resolved: {hops}")
            time.sleep(0.2)

    def _access_port(self, iface: str) -> dict:
        """Port 1, toward the subscribers. libpcap keeps 802.1ad tags but has
        one queue pair: with several workers the switch distributes it."""
        port = {"id": 1, "type": self.access_port_type, "iface": iface}
        if self.workers > 1 and self.access_port_type == "libpcap":
            port["distribute"] = True
        return port

    def switch_cpus(self) -> dict:
        """The switch config's cpus key, where the lab pins."""
        return {"cpus": list(self.cpus.switch)} if self.cpus else {}

    def controller_cpus(self, index: int = 0) -> dict:
        """The controller config's cpus key, where the lab pins."""
        return {"cpus": self.cpus.controller(index)} if self.cpus else {}

    def helper_cmd(self, cmd: list[str]) -> list[str]:
        """A helper process (traffic sink, lossy bridge) kept off the
        controllers' CPUs, where the lab pins."""
        return taskset(self.cpus.emulator, cmd) if self.cpus else cmd

    def _pktio(self, name: str) -> dict:
        return {"packet_socket": str(self.tmp / f"{name}.pkt")} if self.packet_channel else {}

    def _switch_section(self, sw: SwitchProcess) -> dict:
        d = {"address": sw.address, "election_id": 10}
        if self.packet_channel:
            d["packet_socket"] = sw.config["packet_socket"]
        return d

    def write_subscribers(self, name: str, subs: dict | None) -> Path:
        path = self.tmp / f"{name}.yaml"
        path.write_text(yaml.safe_dump(subs or {
            "defaults": {"interim_interval": 60},
            "patterns": [{"match": r"user(\d+)@lab\.test", "password": "secret{1}"}],   # subemu defaults
            "users": {"alice@lab.test": {"password": "alice-secret"}},
        }))
        return path

    def controller_config(self) -> dict:
        a = self.addr
        subs_file = self.write_subscribers("subscribers", self.subscribers)
        cfg = {
            "name": f"lab-{self.tag}",
            "switch": self._switch_section(self.switch),
            "pipeline": {"build_dir": str(BUILD / "bng"), "program": "bng"},
            "state_dir": str(self.tmp / "state"),
            "bng_mac": BNG_MAC,
            "access_ports": [1],
            "ppp": {"auth": ["chap-md5", "mschapv2", "pap"]},
            "core": [{"port": 2, "ipv4": a.core_bng, "gateway": str(ipaddress.IPv4Interface(a.core_host).ip),
                      "ipv6": a.core_bng6, "gateway6": str(ipaddress.IPv6Interface(a.core_host6).ip)}],
            "pools": {"default": {"prefix": a.pool, "gateway": a.gateway, "dns": a.dns}},
            "ipv6": {"enabled": True, "wan_pool": a.wan_pool6, "pd_pool": a.pd_pool6, "pd_length": 56,
                     "dns": ["2001:db8::53"]},
            "aaa": {"backend": "local", "local": {"subscribers": str(subs_file),
                                                  "accounting_file": str(self.tmp / "accounting.jsonl")}},
            "api_socket": str(self.tmp / "api.sock"),
            "metrics_listen": "",
            **self.controller_cpus(),
        }
        return merge(cfg, self.controller_overrides)

    # ------------------------------------------------------------------
    def emulator(self, name: str, *args: str) -> EmulatorProcess:
        e = EmulatorProcess(self.tmp, name, self.access_ns, self.access_if, list(args), echo=self.echo,
                            cpus=self.cpus.emulator if self.cpus else ())
        self.emulators.append(e)
        return e.start()

    def udp_sink(self, port: int = 9, reflect: bool = False) -> LoggedProcess:
        """A UDP receiver on the core host (streams end there, silently; with
        reflect, each datagram goes back to its sender: downstream traffic).
        Its counters are in `self.tmp / f"sink{port}.json"`."""
        p = LoggedProcess(f"sink{port}", self.echo)
        p._launch(self.helper_cmd(["ip", "netns", "exec", self.core_ns, sys.executable, "-m", "bng_lab.udp_sink",
                                   "--port", str(port), "--status", str(self.tmp / f"sink{port}.json"),
                                   *(["--reflect"] if reflect else [])]))
        p.wait_for("udp sink", 10)
        self.helpers.append(p)
        return p

    def core(self, *cmd: str, check: bool = True):
        """Run a command on the core host."""
        return netlab.sh("ip", "netns", "exec", self.core_ns, *cmd, check=check)

    @property
    def core_host_ip(self) -> str:
        return str(ipaddress.IPv4Interface(self.addr.core_host).ip)

    def stop(self) -> None:
        for e in self.emulators + self.helpers:
            e.stop(timeout=10)
        if self.controller is not None:
            self.controller.stop()
        if self.switch is not None:
            self.switch.stop()
        self.net.cleanup()


class LacLnsLab(PppoeLab):
    """The reference lab's shape: subscribers -> LAC (switch + controller)
    -> L2TP over a transit link -> LNS (switch + controller) -> core host.

        [access ns: subemu] -- LAC switch (1 access, 2 transit) -- transit veth
            -- LNS switch (1 transit, 2 core) -- [core ns: 100.64.0.254]

    The LAC switches every subscriber of realm lab.test to the LNS
    (100.65.0.2, tunnel secret `l2tp-secret`); the LNS authenticates them
    (proxy authentication), gives them addresses from 10.1.0.0/16 and routes
    them to the core. `controller` is the LNS (where subscribers terminate),
    `lac` the LAC's controller."""

    LAC_IP = "100.65.0.1"
    LNS_IP = "100.65.0.2"
    SECRET = "l2tp-secret"
    n_controllers = 2

    def __init__(self, *args, lac: dict | None = None, lns: dict | None = None, transit_loss: float = 0.0,
                 lac_subscribers: dict | None = None, **kw):
        """transit_loss: percent of L2TP control messages lost on the LAC-LNS
        link (a user-space bridge then sits in the middle of it).
        lac_subscribers: the LAC's subscriber file (its realms); default:
        realm lab.test to this lab's LNS."""
        super().__init__(*args, **kw)
        self.lac_subscribers = lac_subscribers
        self.transit_loss = transit_loss
        self.addr.pool = "10.1.0.0/16"
        self.addr.gateway = "10.1.0.1"
        self.lac_overrides = lac or {}
        self.lns_overrides = lns or {}
        self.lac: ControllerProcess | None = None
        self.lac_switch: SwitchProcess | None = None

    def _build(self) -> None:
        a = self.addr
        self.access_ns = self.net.ns("access")
        self.core_ns = self.net.ns("core")
        sw_acc, self.access_if = self.net.veth("sla", "acc", ns_b=self.access_ns, mtu=1600)
        if self.transit_loss:
            lac_tr, br_a = self.net.veth("slt", "bra", mtu=1600)
            lns_tr, br_b = self.net.veth("snt", "brb", mtu=1600)
            p = LoggedProcess("bridge", self.echo)
            self.bridge_status = self.tmp / "bridge.json"
            p._launch(self.helper_cmd([sys.executable, "-m", "bng_lab.lossy_bridge", br_a, br_b,
                                       "--loss", str(self.transit_loss), "--status", str(self.bridge_status)]))
            p.wait_for("bridging", 10)
            self.helpers.append(p)
        else:
            lac_tr, lns_tr = self.net.veth("slt", "snt", mtu=1600)
        sw_core, self.core_if = self.net.veth("snc", "cor", ns_b=self.core_ns, mtu=1600)
        ns = self.core_ns
        netlab.full_checksums(ns, self.core_if)
        netlab.sh("ip", "-n", ns, "addr", "add", a.core_host, "dev", self.core_if)
        netlab.sh("ip", "-n", ns, "route", "add", a.pool, "via", str(ipaddress.IPv4Interface(a.core_bng).ip))
        self.lac_switch = SwitchProcess(self.tmp, f"lac{self.tag}", [
            self._access_port(sw_acc), {"id": 2, "type": "af_packet", "iface": lac_tr}],
            workers=self.workers, idle_us=self.idle_us, **self._pktio(f"lac{self.tag}"), **self.switch_cpus()).start()
        self.switch = SwitchProcess(self.tmp, f"lns{self.tag}", [
            {"id": 1, "type": "af_packet", "iface": lns_tr}, {"id": 2, "type": "af_packet", "iface": sw_core}],
            workers=self.workers, idle_us=self.idle_us, **self._pktio(f"lns{self.tag}"), **self.switch_cpus()).start()
        lac_subs = self.write_subscribers("lac-subscribers", self.lac_subscribers or {"realms": {"lab.test": {
            "tunnels": [{"server": self.LNS_IP, "password": self.SECRET, "client_auth_id": "lac1",
                         "preference": 1}]}}})
        lns_subs = self.write_subscribers("lns-subscribers", self.subscribers)
        common = {"pipeline": {"build_dir": str(BUILD / "bng"), "program": "bng"}, "metrics_listen": "",
                  "ipv6": {"enabled": False}}
        lac_cfg = merge({**common, "name": f"lac-{self.tag}",
                         "switch": self._switch_section(self.lac_switch),
                         "state_dir": str(self.tmp / "lac-state"), "bng_mac": "02:bb:00:00:00:01",
                         "access_ports": [1], "core": [{"port": 2, "ipv4": f"{self.LAC_IP}/24"}],
                         "ppp": {"auth": ["chap-md5", "pap"], "ipv6": False},
                         "pools": {"local": {"prefix": "10.255.0.0/24", "gateway": "10.255.0.1"}},
                         "l2tp": {"local_address": self.LAC_IP, "lac": True,
                                  "tunnel": {"host_name": "lac1", "hello_interval": 10}},
                         "aaa": {"backend": "local", "local": {"subscribers": str(lac_subs)}},
                         "api_socket": str(self.tmp / "lac-api.sock"), **self.controller_cpus(1)},
                        self.lac_overrides)
        lns_cfg = merge({**common, "name": f"lns-{self.tag}",
                         "switch": self._switch_section(self.switch),
                         "state_dir": str(self.tmp / "lns-state"), "bng_mac": "02:bb:00:00:00:02",
                         "access_ports": [],
                         "core": [{"port": 2, "ipv4": a.core_bng,
                                   "gateway": str(ipaddress.IPv4Interface(a.core_host).ip)},
                                  {"port": 1, "ipv4": f"{self.LNS_IP}/24"}],
                         "ppp": {"auth": ["chap-md5", "pap"], "ipv6": False},
                         "pools": {"default": {"prefix": a.pool, "gateway": a.gateway, "dns": a.dns}},
                         "l2tp": {"local_address": self.LNS_IP, "lac": False, "lns": True,
                                  "lns_peers": [{"address": self.LAC_IP, "secret": self.SECRET}],
                                  "tunnel": {"host_name": "lns1", "hello_interval": 10}},
                         "aaa": {"backend": "local", "local": {"subscribers": str(lns_subs),
                                                               "accounting_file": str(self.tmp / "lns-acct.jsonl")}},
                         "api_socket": str(self.tmp / "lns-api.sock"), **self.controller_cpus(0)},
                        self.lns_overrides)
        self.controller = ControllerProcess(self.tmp, f"lns{self.tag}", lns_cfg, echo=self.echo).start()
        self.lac = ControllerProcess(self.tmp, f"lac{self.tag}", lac_cfg, echo=self.echo).start()
        self.wait_next_hops(controller=self.controller)

    def stop(self) -> None:
        for e in self.emulators + self.helpers:
            e.stop(timeout=10)
        for c in (self.lac, self.controller):
            if c is not None:
                c.stop()
        for sw in (self.lac_switch, self.switch):
            if sw is not None:
                sw.stop()
        self.net.cleanup()

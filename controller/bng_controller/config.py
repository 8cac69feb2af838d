"""The controller's configuration file (YAML), checked as it is read.

Every section maps to a dataclass here; an unknown key or a bad value
fails at start-up with the path of the setting (`ppp.echo_intervall:
unknown setting`), never later at the first subscriber. The annotated
example is configs/controller/pppoe.yaml.
"""
from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

from .ip_pool import PoolConfig
from .ppp.lcp import LcpConfig
from .ppp.link import LinkConfig
from .pppoe.codec import mac_bytes
from .pppoe.discovery import DiscoveryConfig

ROOT = Path(__file__).resolve().parents[2]


class ConfigError(ValueError):
    pass


def _fill(obj: Any, d: dict | None, path: str) -> Any:
    """Set obj's dataclass fields from d, refusing unknown keys."""
    names = {f.name for f in fields(obj)}
    for k, v in (d or {}).items():
        if k not in names:
            raise ConfigError(f"{path}.{k}: unknown setting (known: {', '.join(sorted(names))})")
        setattr(obj, k, v)
    return obj


@dataclass
class SwitchConfig:
    address: str = "127.0.0.1:9559"
    device_id: int = 1
    election_id: int = 10                 # a standby uses a lower one (p4runtime_async: takeover)
    packet_socket: str = ""               # the switch's local PacketIn/PacketOut channel (same host); "" = P4Runtime stream


@dataclass
class PipelineConfig:
    build_dir: str = "p4src/build/bng"    # P4Info, device config and enums of the program
    program: str = "bng"
    push: str = "auto"                    # auto: only if the switch does not run it already; always; never

    def path(self, suffix: str) -> Path:
        d = Path(self.build_dir)
        if not d.is_absolute():
            d = ROOT / d
        return d / f"{self.program}.{suffix}"


@dataclass
class CoreInterface:
    port: int
    ipv4: ipaddress.IPv4Interface
    gateway: ipaddress.IPv4Address | None = None
    vlan: int = 0
    ipv6: ipaddress.IPv6Interface | None = None
    gateway6: ipaddress.IPv6Address | None = None


@dataclass
class StaticRoute:
    prefix: ipaddress.IPv4Network
    via: ipaddress.IPv4Address


@dataclass
class Ipv6Config:
    enabled: bool = True
    wan_pool: ipaddress.IPv6Network | None = None   # carved into /64s, one per session (SLAAC)
    pd_pool: ipaddress.IPv6Network | None = None    # carved into pd_length prefixes (DHCPv6-PD)
    pd_length: int = 64
    # the shortest delegated prefix AAA may give: each /64 of it is a pair of
    # data-plane entries (a /56 is 512, a /48 131,072)
    pd_min_length: int = 56
    dns: list[ipaddress.IPv6Address] = field(default_factory=list)
    ra_interval: float = 200.0                       # unsolicited RAs (RFC 4861 MaxRtrAdvInterval)
    preferred_lifetime: int = 3600
    valid_lifetime: int = 7200


@dataclass
class SessionsConfig:
    max_sessions: int = 60000
    max_sessions_per_line: int = 0        # 0: no limit
    mss_clamp: str | int = "auto"         # auto: MRU - 40; 0: off; or a value
    setup_timeout: float = 60.0           # PADS to network up
    shutdown: str = "terminate"           # SIGTERM: terminate sessions (LCP + PADT) or keep them
    policer_burst_ms: int = 100           # a session policer's burst, in time at its rate


@dataclass
class AccountingConfig:
    interim_interval: int = 300           # when AAA does not say (Acct-Interim-Interval)
    min_interim_interval: int = 60        # floor for AAA's value (RFC 2869 5.16); lower only in a lab
    tick: float = 5.0                     # how often due interims and idle timers are checked


@dataclass
class DynAuthConfig:
    """The controller config's `dynauth` section. aaa/dynauth.py's
    DynAuthConfig says what each key does and holds the defaults: a key
    left unset (None or "") here keeps its default there."""
    listen: str = ""                      # "127.0.0.1:3799"; empty: no CoA/DM server
    clients: list[dict] = field(default_factory=list)   # [{address, secret}]
    nas_identifier: str = ""
    nas_ip_address: str = ""
    nas_ipv6_address: str = ""
    require_message_authenticator: bool | None = None
    duplicate_window: float | None = None
    event_timestamp_window: float | None = None


@dataclass
class PuntPolicerConfig:
    """Packets/s the data plane hands the controller, per punt reason: what
    the controller can digest, so a flood of one kind (PADIs, TTL-expired
    traffic) cannot starve the others or, on shared cores, the forwarding
    path. The defaults fit the controller's measured capacity on a 2-core
    box (P4Runtime streaming costs ~100-250 us of CPU per packet each way);
    raise them with the hardware."""
    default_pps: int = 500
    burst_seconds: float = 1.0         # a setup burst of this long at full rate passes
    rates: dict[str, int] = field(default_factory=lambda: {
        "PPPOE_DISCOVERY": 500, "PPP_CONTROL": 3000, "L2TP_CONTROL": 2000, "L2TP_PPP_CONTROL": 3000,
        "ARP": 200, "LOCAL_IPV4": 300, "LOCAL_IPV6": 300, "SUBSCRIBER_IPV6_CONTROL": 1000,
        "TTL_EXPIRED": 100, "PACKET_TOO_BIG": 200})


@dataclass
class ControllerConfig:
    name: str = "bng"
    switch: SwitchConfig = field(default_factory=SwitchConfig)
    pipeline: PipelineConfig = field(default_factory=PipelineConfig)
    state_dir: str = "/var/lib/bng-controller"
    bng_mac: bytes = field(default_factory=lambda: mac_bytes("02:bb:00:00:00:01"))
    access_ports: list[int] = field(default_factory=list)
    core: list[CoreInterface] = field(default_factory=list)
    routes: list[StaticRoute] = field(default_factory=list)
    pppoe: DiscoveryConfig = field(default_factory=DiscoveryConfig)
    ppp: LinkConfig = field(default_factory=LinkConfig)
    pools: list[PoolConfig] = field(default_factory=list)
    default_pool: str | None = None
    ipv6: Ipv6Config = field(default_factory=Ipv6Config)
    sessions: SessionsConfig = field(default_factory=SessionsConfig)
    aaa: dict = field(default_factory=lambda: {"backend": "local", "local": {"subscribers": "configs/subscribers.yaml"}})
    accounting: AccountingConfig = field(default_factory=AccountingConfig)
    dynauth: DynAuthConfig = field(default_factory=DynAuthConfig)
    api_socket: str = "/run/bng-controller/api.sock"
    metrics_listen: str = "127.0.0.1:9101"   # empty: no Prometheus endpoint
    log_level: str = "info"
    log_format: str = "text"              # text or json (one object per line)
    l2tp: dict = field(default_factory=dict)   # LAC/LNS (l2tp/config.py)
    punt_policer: PuntPolicerConfig = field(default_factory=PuntPolicerConfig)
    # CPUs the controller runs on (empty: wherever the kernel puts it). Its
    # event loop is what bounds the setup rate: give it a CPU the switch's
    # workers do not use (the switch config's cpus).
    cpus: list[int] = field(default_factory=list)

    @property
    def state_path(self) -> Path:
        return Path(self.state_dir)

    def own_ipv4(self) -> set[ipaddress.IPv4Address]:
        """The BNG's own IPv4 addresses named here: core interfaces and pool
        gateways (the L2TP local address is in the l2tp section)."""
        return {c.ipv4.ip for c in self.core} | {p.gateway for p in self.pools}


def _core(d: dict, path: str) -> CoreInterface:
    c = _fill(CoreInterface(port=0, ipv4=ipaddress.IPv4Interface("0.0.0.0/32")), d, path)
    c.ipv4 = ipaddress.IPv4Interface(c.ipv4)
    c.gateway = ipaddress.IPv4Address(c.gateway) if c.gateway else None
    c.ipv6 = ipaddress.IPv6Interface(c.ipv6) if c.ipv6 else None
    c.gateway6 = ipaddress.IPv6Address(c.gateway6) if c.gateway6 else None
    return c


def _ppp(d: dict) -> LinkConfig:
    d = dict(d or {})
    lcp_keys = {f.name for f in fields(LcpConfig)}
    lcp = LcpConfig.from_dict({k: d.pop(k) for k in list(d) if k in lcp_keys})
    return _fill(LinkConfig(lcp=lcp), d, "ppp")


def _ipv6(d: dict) -> Ipv6Config:
    c = _fill(Ipv6Config(), d, "ipv6")
    c.wan_pool = ipaddress.IPv6Network(c.wan_pool) if c.wan_pool else None
    c.pd_pool = ipaddress.IPv6Network(c.pd_pool) if c.pd_pool else None
    c.dns = [ipaddress.IPv6Address(x) for x in c.dns]
    if not 48 <= c.pd_length <= 64:
        raise ConfigError("ipv6.pd_length: must be 48..64")
    if not 48 <= c.pd_min_length <= 64:
        raise ConfigError("ipv6.pd_min_length: must be 48..64")
    # RFC 4861 6.2.1: MaxRtrAdvInterval 4..1800 s. Lifetimes are 32-bit, the
    # preferred no longer than the valid one, and a prefix must outlive the
    # gap between two RAs or SLAAC addresses expire before they are renewed.
    if not 4 <= c.ra_interval <= 1800:
        raise ConfigError("ipv6.ra_interval: must be 4..1800 s (RFC 4861 MaxRtrAdvInterval)")
    if not 0 < c.preferred_lifetime <= c.valid_lifetime <= 0xFFFFFFFF:
        raise ConfigError("ipv6: 0 < preferred_lifetime <= valid_lifetime <= 4294967295 (infinity) needed")
    if c.valid_lifetime <= c.ra_interval:
        raise ConfigError(f"ipv6.valid_lifetime {c.valid_lifetime} s must exceed ra_interval {c.ra_interval} s")
    return c


def load(path: str | Path) -> ControllerConfig:
    raw = yaml.safe_load(Path(path).read_text()) or {}
    return from_dict(raw)


def from_dict(raw: dict) -> ControllerConfig:
    c = ControllerConfig()
    raw = dict(raw)
    try:
        c.switch = _fill(SwitchConfig(), raw.pop("switch", None), "switch")
        c.pipeline = _fill(PipelineConfig(), raw.pop("pipeline", None), "pipeline")
        c.core = [_core(x, f"core[{i}]") for i, x in enumerate(raw.pop("core", []) or [])]
        c.routes = [StaticRoute(ipaddress.IPv4Network(r["prefix"]), ipaddress.IPv4Address(r["via"]))
                    for r in raw.pop("routes", []) or []]
        c.pppoe = DiscoveryConfig.from_dict(raw.pop("pppoe", None) or {})
        c.ppp = _ppp(raw.pop("ppp", None))
        c.pools = [PoolConfig.from_dict(n, d) for n, d in (raw.pop("pools", None) or {}).items()]
        c.ipv6 = _ipv6(raw.pop("ipv6", None))
        c.sessions = _fill(SessionsConfig(), raw.pop("sessions", None), "sessions")
        c.accounting = _fill(AccountingConfig(), raw.pop("accounting", None), "accounting")
        c.dynauth = _fill(DynAuthConfig(), raw.pop("dynauth", None), "dynauth")
        pp = raw.pop("punt_policer", None) or {}
        c.punt_policer = _fill(PuntPolicerConfig(), {k: v for k, v in pp.items() if k != "rates"},
                               "punt_policer")
        c.punt_policer.rates.update(pp.get("rates") or {})
        for what, rate in {"default_pps": c.punt_policer.default_pps, **c.punt_policer.rates}.items():
            # a meter's rate must be above 0 (DPDK refuses a profile of 0)
            if isinstance(rate, bool) or not isinstance(rate, int) or rate < 1:
                raise ConfigError(f"punt_policer: {what} must be a whole number of packets a second, 1 or more")
        if isinstance(c.sessions.policer_burst_ms, bool) or not isinstance(c.sessions.policer_burst_ms, int) \
                or not 1 <= c.sessions.policer_burst_ms <= 10_000:
            raise ConfigError("sessions.policer_burst_ms: a whole number of milliseconds, 1 to 10000")
        if c.punt_policer.burst_seconds <= 0:
            raise ConfigError("punt_policer.burst_seconds: must be above 0")
        if "bng_mac" in raw:
            raw["bng_mac"] = mac_bytes(raw["bng_mac"])
        _fill(c, raw, "config")
    except ConfigError:
        raise
    except (ValueError, KeyError, TypeError) as e:
        raise ConfigError(f"bad configuration: {e}") from e
    if not c.pools:
        raise ConfigError("pools: at least one IPv4 pool is needed")
    if c.default_pool and c.default_pool not in {p.name for p in c.pools}:
        raise ConfigError(f"default_pool: no pool named {c.default_pool!r}")
    if c.cpus:
        allowed = os.sched_getaffinity(0)
        outside = sorted(set(c.cpus) - allowed)
        if outside:
            raise ConfigError(f"cpus: {outside} are not among the CPUs this process may use "
                              f"({','.join(map(str, sorted(allowed)))})")
    if c.sessions.shutdown not in ("terminate", "keep"):
        raise ConfigError("sessions.shutdown: terminate or keep")
    own = c.own_ipv4()
    if c.l2tp:
        from .l2tp.service import L2tpConfig        # its own parser: a typo fails at load, not at start
        try:
            own.add(L2tpConfig.from_dict(c.l2tp).local_address)
        except KeyError as e:
            raise ConfigError(f"l2tp: missing setting {e}") from e
        except (ValueError, TypeError) as e:
            raise ConfigError(str(e) if str(e).startswith("l2tp") else f"l2tp: {e}") from e
    for r in c.routes:
        if r.prefix.prefixlen == 32 and r.prefix.network_address in own:
            # the controller puts each of its own addresses in the FIB as a /32
            raise ConfigError(f"routes: {r.prefix} is one of the BNG's own addresses")
    return c

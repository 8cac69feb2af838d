"""The shipped configs (configs/): every file loads with the loader that
reads it in production, the pieces that name each other fit together
(controller <-> switch, controller <-> subscriber file, LAC <-> LNS), and
the BNG Blaster configs use only keys BNG Blaster's config parser accepts
(it stops at an unknown one)."""
from __future__ import annotations

import ipaddress
import json
from pathlib import Path

import pytest

from bng_controller import config
from bng_controller.aaa import make_backend
from bng_controller.aaa.local import LocalAaa
from bng_controller.aaa.radius import RadiusConfig
from bng_controller.aaa.subscribers import SubscriberDB, load_subscribers
from bng_controller.l2tp.service import L2tpConfig
from bng_controller.l2tp.tunnel import TunnelConfig
from bng_switch import switch_config

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "configs"
CONTROLLER = sorted((CONFIGS / "controller").glob("*.yaml"))
SWITCH = sorted((CONFIGS / "switch").glob("*.yaml"))
SUBSCRIBERS = sorted(CONFIGS.glob("subscribers*.yaml")) + sorted((CONFIGS / "bngblaster").glob("*.yaml"))
BNGBLASTER = sorted((CONFIGS / "bngblaster").glob("*.json"))

# Which switch config each controller config programs.
SWITCH_OF = {"pppoe.yaml": "example.yaml", "lac.yaml": "lac.yaml", "lns.yaml": "lns.yaml"}


def ids(p: Path) -> str:
    return p.name


@pytest.fixture(autouse=True)
def at_repo_root(monkeypatch):
    """Configs name other files relative to the repository root (the
    subscriber file), as the controller started from there reads them."""
    monkeypatch.chdir(ROOT)


def load_controller(name: str) -> config.ControllerConfig:
    return config.load(CONFIGS / "controller" / name)


def subscribers_of(cfg: config.ControllerConfig) -> SubscriberDB:
    return load_subscribers(cfg.aaa["local"]["subscribers"])


def test_there_is_something_to_test():
    assert {p.name for p in CONTROLLER} >= {"pppoe.yaml", "lac.yaml", "lns.yaml"}
    assert {p.name for p in SWITCH} >= {"example.yaml", "lac.yaml", "lns.yaml"}
    assert {p.name for p in BNGBLASTER} >= {"pppoe-pap.json", "pppoe-chap.json", "lns.json"}


# ---------------------------------------------------------------- controller
@pytest.mark.parametrize("path", CONTROLLER, ids=ids)
def test_controller_config_loads(path):
    cfg = config.load(path)
    assert cfg.pools and cfg.switch.address
    if cfg.l2tp:
        l2 = L2tpConfig.from_dict(cfg.l2tp)
        TunnelConfig.from_dict(l2.tunnel)
        local = {c.ipv4.ip for c in cfg.core}
        assert l2.local_address in local, "l2tp.local_address should be one of the core addresses"


@pytest.mark.parametrize("path", CONTROLLER, ids=ids)
def test_every_aaa_backend_section_loads(path):
    """The active backend as the controller builds it (the local one reads
    its subscriber file), and the inactive sections too: switching backend
    is one word, a broken section should not wait for that day."""
    cfg = config.load(path)
    make_backend(cfg.aaa)
    if "local" in cfg.aaa:
        LocalAaa.from_dict(cfg.aaa["local"])
    if "radius" in cfg.aaa:
        RadiusConfig.from_dict(cfg.aaa["radius"])


@pytest.mark.parametrize("path", CONTROLLER, ids=ids)
def test_pools_named_by_the_subscriber_file_exist(path):
    cfg = config.load(path)
    db = subscribers_of(cfg)
    profiles = list(db.users.values()) + [p.profile for p in db.patterns]
    named = {p.pool for p in profiles if p.pool}
    assert named <= {p.name for p in cfg.pools}


@pytest.mark.parametrize("path", CONTROLLER, ids=ids)
def test_controller_fits_its_switch(path):
    cfg = config.load(path)
    sw = switch_config.load(CONFIGS / "switch" / SWITCH_OF[path.name])
    assert cfg.switch.address.rsplit(":", 1)[1] == sw.grpc_address.rsplit(":", 1)[1]
    assert cfg.switch.device_id == sw.device_id
    assert cfg.switch.packet_socket == sw.packet_socket
    ports = {p.id for p in sw.ports}
    assert set(cfg.access_ports) <= ports
    assert {c.port for c in cfg.core} <= ports
    assert sw.cpu_port not in set(cfg.access_ports) | {c.port for c in cfg.core}


def test_lac_and_lns_fit_each_other():
    lac, lns = load_controller("lac.yaml"), load_controller("lns.yaml")
    lac_l2, lns_l2 = L2tpConfig.from_dict(lac.l2tp), L2tpConfig.from_dict(lns.l2tp)
    assert lac_l2.lac and not lac_l2.lns and lns_l2.lns and not lns_l2.lac
    peer = {p.address: p for p in lns_l2.lns_peers}[lac_l2.local_address]
    realm = subscribers_of(lac).realm_for("user1@lab.test")
    assert realm is not None and not realm.authenticate
    first = realm.tunnels[0]                       # the most preferred
    assert ipaddress.IPv4Address(first.server_endpoint) == lns_l2.local_address
    assert first.password == peer.secret
    # the LNS knows the realm's users
    assert subscribers_of(lns).lookup("user1@lab.test").password == "secret1"
    assert lac.bng_mac != lns.bng_mac              # they share the transit link


def test_lac_reaches_every_lns_of_its_realms():
    lac = load_controller("lac.yaml")
    nets = [c.ipv4.network for c in lac.core] + [r.prefix for r in lac.routes]
    for name, realm in subscribers_of(lac).realms.items():
        prefs = [t.preference for t in realm.tunnels]
        assert prefs == sorted(prefs)
        for t in realm.tunnels:
            addr = ipaddress.IPv4Address(t.server_endpoint)
            assert any(addr in n for n in nets) or any(c.gateway for c in lac.core), (name, addr)


# ---------------------------------------------------------------- subscribers
@pytest.mark.parametrize("path", SUBSCRIBERS, ids=lambda p: str(p.relative_to(CONFIGS)))
def test_subscriber_file_loads(path):
    db = load_subscribers(path)
    assert db.users or db.patterns or db.realms


# ---------------------------------------------------------------- switch
@pytest.mark.parametrize("path", SWITCH, ids=ids)
def test_switch_config_loads(path):
    cfg = switch_config.load(path)
    assert cfg.ports


def test_switches_of_lac_and_lns_can_share_a_host():
    lac, lns = (switch_config.load(CONFIGS / "switch" / n) for n in ("lac.yaml", "lns.yaml"))
    assert lac.name != lns.name and lac.work_dir != lns.work_dir and lac.packet_socket != lns.packet_socket
    assert lac.grpc_address != lns.grpc_address
    assert not {p.iface for p in lac.ports} & {p.iface for p in lns.ports}


# ---------------------------------------------------------------- BNG Blaster
# The attributes BNG Blaster's config parser accepts per section: the
# schema_validate() lists of code/bngblaster/src/bbl_config.c (rtbrick/
# bngblaster commit 17f4fcaf). Keys starting with "_" are ignored by it.
# Only the sections these configs use; add one before using it.
BBL_KEYS: dict[str, set[str]] = {
    "root": {"interfaces", "sessions", "ipoe", "pppoe", "ppp", "dhcp", "dhcpv6", "igmp", "access-line",
             "access-line-profiles", "traffic", "session-traffic", "streams", "isis", "ospf", "bgp",
             "bgp-raw-update-files", "ldp", "ldp-raw-update-files", "l2tp-server", "icmp-client",
             "http-client", "http-server", "arp-client"},
    "interfaces": {"io-mode", "io-slots", "io-burst", "qdisc-bypass", "jumbo-frames", "tx-interval",
                   "rx-interval", "tx-threads", "tun-name", "rx-threads", "tx-auto-cpuset", "rx-auto-cpuset",
                   "capture-include-streams", "mac-modifier", "lag", "network", "access", "a10nsp", "links",
                   "a10nsp-dynamic"},
    "interfaces.network": {"interface", "address", "gateway", "address-ipv6", "gateway-ipv6",
                           "ipv6-router-advertisement", "gateway-mac", "vlan", "inner-vlan", "qinq", "mtu",
                           "gateway-resolve-wait", "isis-instance-id", "isis-level", "isis-p2p",
                           "isis-l1-metric", "isis-l2-metric", "isis-l1-priority", "isis-l2-priority",
                           "ospfv2-instance-id", "ospfv2-metric", "ospfv2-type", "ospfv3-instance-id",
                           "ospfv3-metric", "ospfv3-type", "cfm-cc", "cfm-level", "cfm-interval", "cfm-md-name",
                           "cfm-md-name-format", "cfm-ma-id", "cfm-ma-name", "cfm-ma-name-format", "cfm-seq",
                           "cfm-vlan-priority", "ldp-instance-id", "a10nsp", "a10nsp-tx-label"},
    "interfaces.access": {"interface", "network-interface", "a10nsp-interface", "i1-start", "i1-step",
                          "i2-start", "i2-step", "type", "vlan-mode", "tun", "monkey", "qinq", "outer-vlan",
                          "outer-vlan-min", "outer-vlan-max", "outer-vlan-step", "inner-vlan", "inner-vlan-min",
                          "inner-vlan-max", "inner-vlan-step", "third-vlan", "ppp-mru", "address",
                          "address-iter", "gateway", "gateway-iter", "ipv6-link-local", "address-ipv6",
                          "gateway-ipv6", "username", "password", "authentication-protocol",
                          "agent-circuit-id", "agent-remote-id", "access-aggregation-circuit-id", "rate-up",
                          "rate-down", "dsl-type", "access-line-profile-id", "ipcp", "dhcp",
                          "dhcp-vendor-class-id", "ipv4", "ip6cp", "dhcpv6", "dhcpv6-ldra", "ipv6",
                          "igmp-autostart", "igmp-version", "session-traffic-autostart", "session-group-id",
                          "stream-group-id", "session-limit", "arp-client-group-id", "http-client-group-id",
                          "icmp-client-group-id", "cfm-cc", "cfm-level", "cfm-interval", "cfm-md-name",
                          "cfm-md-name-format", "cfm-ma-id", "cfm-ma-name", "cfm-ma-name-format", "cfm-seq",
                          "cfm-vlan-priority"},
    "sessions": {"count", "max-outstanding", "start-rate", "stop-rate", "iterate-vlan-outer", "start-delay",
                 "autostart", "reconnect", "monkey-autostart"},
    "pppoe": {"sessions", "max-outstanding", "start-rate", "stop-rate", "session-time", "reconnect",
              "discovery-timeout", "discovery-retry", "service-name", "host-uniq", "max-payload",
              "vlan-priority"},
    "ppp": {"mru", "authentication", "lcp", "ipcp", "ip6cp"},
    "ppp.authentication": {"username", "password", "timeout", "retry", "protocol"},
    "ppp.lcp": {"conf-request-timeout", "conf-request-retry", "keepalive-interval", "keepalive-retry",
                "start-delay", "ignore-vendor-specific", "connection-status-message"},
    "ppp.ipcp": {"enable", "request-ip", "request-dns1", "request-dns2", "conf-reject-ignore",
                 "conf-request-timeout", "conf-request-retry"},
    "ppp.ip6cp": {"enable", "conf-request-timeout", "conf-request-retry"},
    "dhcpv6": {"enable", "ldra", "ia-na", "timeout", "ia-pd", "rapid-commit", "ia-separate", "retry",
               "access-line", "vlan-priority"},
    "access-line": {"agent-circuit-id", "agent-remote-id", "access-aggregation-circuit-id", "rate-up",
                    "rate-down", "dsl-type"},
    "session-traffic": {"autostart", "ipv4-pps", "ipv6-pps", "ipv6pd-pps", "ipv4-label", "ipv4-address",
                        "ipv6-label", "ipv6-address"},
    "streams": {"name", "stream-group-id", "type", "autostart", "direction", "network-interface",
                "a10nsp-interface", "source-port", "source-port-max", "source-port-step", "destination-port",
                "destination-port-max", "destination-port-step", "priority", "vlan-priority",
                "inner-vlan-priority", "pps", "bps", "Kbps", "Mbps", "length", "ttl", "count", "pps-upstream",
                "bps-upstream", "Kbps-upstream", "Mbps-upstream", "Gbps", "max-packets", "start-delay",
                "ldp-ipv4-lookup-address", "ldp-ipv6-lookup-address", "access-ipv4-source-address",
                "access-ipv6-source-address", "network-ipv4-address", "network-ipv6-address",
                "destination-ipv4-address", "destination-ipv6-address", "destination-mac", "ipv4-df",
                "tx-label1", "tx-label1-exp", "tx-label1-ttl", "tx-label2", "tx-label2-exp", "tx-label2-ttl",
                "rx-label1", "rx-label2", "nat", "raw-tcp", "setup-interval"},
    "l2tp-server": {"name", "secret", "address", "client-auth-id", "receive-window-size", "max-retry",
                    "congestion-mode", "data-control-priority", "data-length", "data-offset", "control-tos",
                    "data-control-tos", "hello-interval", "lcp-padding"},
}
# Sections whose value is an object holding further checked sections.
BBL_NESTED = {"interfaces": ("network", "access"), "ppp": ("authentication", "lcp", "ipcp", "ip6cp")}


def bbl(name: str) -> dict:
    return json.loads((CONFIGS / "bngblaster" / name).read_text())


def bbl_unknown_keys(doc: dict) -> list[str]:
    """Keys BNG Blaster's parser would refuse, as section.key paths."""
    bad: list[str] = []

    def check(obj, section: str) -> None:
        for item in obj if isinstance(obj, list) else [obj]:
            if not isinstance(item, dict):
                bad.append(f"{section}: not an object")
                continue
            if section not in BBL_KEYS:
                bad.append(f"{section}: section not in BBL_KEYS (add its list from bbl_config.c)")
                continue
            bad.extend(f"{section}.{k}" for k in item if not k.startswith("_") and k not in BBL_KEYS[section])
            for sub in BBL_NESTED.get(section, ()):
                if sub in item:
                    check(item[sub], f"{section}.{sub}")

    bad.extend(f"root.{k}" for k in doc if not k.startswith("_") and k not in BBL_KEYS["root"])
    for k, v in doc.items():
        if not k.startswith("_") and k in BBL_KEYS["root"]:
            check(v, k)
    return bad


@pytest.mark.parametrize("path", BNGBLASTER, ids=ids)
def test_bngblaster_config_parses_with_known_keys(path):
    doc = json.loads(path.read_text())
    assert {"interfaces", "sessions", "pppoe", "ppp", "session-traffic"} <= set(doc)
    assert {"network", "access"} <= set(doc["interfaces"])
    assert doc["ppp"]["authentication"]["username"] and doc["ppp"]["authentication"]["password"]
    assert not bbl_unknown_keys(doc)
    for s in doc.get("streams", []):
        assert s["name"] and s["type"] in ("ipv4", "ipv6", "ipv6pd")
        assert s.get("stream-group-id"), "a stream bound to sessions needs a stream-group-id"
    for s in doc.get("l2tp-server", []):
        assert s["name"] and ipaddress.IPv4Address(s["address"])


def test_bngblaster_key_check_catches_a_mistake():
    doc = bbl("lns.json")
    doc["l2tp-server"][0]["receive-window"] = 8            # the published JSON schema's name for it
    doc["ppp"]["lcp"]["keepalive"] = 1
    assert sorted(bbl_unknown_keys(doc)) == ["l2tp-server.receive-window", "ppp.lcp.keepalive"]


def expand(template: str, i: int) -> str:
    return template.replace("{session-global}", str(i)).replace("{session}", str(i))


@pytest.mark.parametrize("name", ["pppoe-pap.json", "pppoe-chap.json"])
def test_bngblaster_pppoe_fits_the_bng(name):
    doc = bbl(name)
    bng = load_controller("pppoe.yaml")
    core = bng.core[0]
    net = doc["interfaces"]["network"]
    assert ipaddress.IPv4Interface(net["address"]).ip == core.gateway
    assert ipaddress.IPv4Address(net["gateway"]) == core.ipv4.ip
    if "address-ipv6" in net:
        assert ipaddress.IPv6Interface(net["address-ipv6"]).ip == core.gateway6
        assert ipaddress.IPv6Address(net["gateway-ipv6"]) == core.ipv6.ip
    # the users log in with what configs/bngblaster/subscribers.yaml accepts
    db = load_subscribers(CONFIGS / "bngblaster" / "subscribers.yaml")
    auth = doc["ppp"]["authentication"]
    for i in (1, 2, 9999):
        profile = db.lookup(expand(auth["username"], i))
        assert profile is not None and profile.password == expand(auth["password"], i)
        assert profile.pool is None or profile.pool in {p.name for p in bng.pools}
    methods = {a.get("authentication-protocol") for a in doc["interfaces"]["access"]}
    assert {m.lower().replace("chap", "chap-md5") for m in methods if m} <= {m.value for m in bng.ppp.lcp.auth}
    if doc["ppp"]["ipcp"].get("request-dns2", True):      # BNG Blaster fails a session given fewer
        assert all(len(p.dns) >= 2 for p in bng.pools)


def test_bngblaster_lns_fits_our_lac():
    doc = bbl("lns.json")
    lac = load_controller("lac.yaml")
    l2 = L2tpConfig.from_dict(lac.l2tp)
    net = doc["interfaces"]["network"]
    assert ipaddress.IPv4Address(net["gateway"]) == l2.local_address
    assert any(ipaddress.IPv4Interface(net["address"]).ip in c.ipv4.network for c in lac.core)
    servers = {s["address"]: s for s in doc["l2tp-server"]}
    user = expand(doc["ppp"]["authentication"]["username"], 1)
    realm = subscribers_of(lac).realm_for(user)
    assert realm is not None and not realm.authenticate
    for t in realm.tunnels:                                  # every LNS of the realm is emulated
        s = servers[t.server_endpoint]
        assert s["secret"].encode() == t.password
        assert s.get("client-auth-id", t.client_auth_id) == (t.client_auth_id or l2.tunnel["host_name"])
    methods = {a.get("authentication-protocol") for a in doc["interfaces"]["access"]}
    assert methods == {"PAP"}                                # README.md: why not CHAP

"""The BNG's own IPv4 addresses in local_ipv4: only an L2TP endpoint with
the LNS role on gets set_local, where the data plane looks LNS IPv4
upstream up in l2tp_up_v4. Everywhere else set_local_no_lns spares L2TP
data that lookup; were the LNS endpoint to get it, its subscribers' IPv4
would all drop as SPOOFED on Tofino, which looks local_ipv4 up first (the
DPDK build looks up sessions first and treats both actions alike). And the IPv4 routes and the L2TP tunnels: each
carries its next hop's L2 rewrite once ARP has resolved it."""
from __future__ import annotations

import asyncio
import ipaddress
from pathlib import Path
from types import SimpleNamespace

import pytest
from p4.v1 import p4runtime_pb2 as p4r

from bng_controller import config
from bng_controller.aaa import make_backend
from bng_controller.config import StaticRoute
from bng_controller.controller import BngController
from bng_controller.l2tp.service import L2tpService, TunnelData
from bng_controller.l2tp.tunnel import TunnelState

from .fake_switch import FakeSwitch

ROOT = Path(__file__).resolve().parents[2]


def local_ipv4_actions(role: str, tmp_path: Path) -> tuple[dict, config.Config]:
    cfg = config.load(ROOT / "configs" / "controller" / f"{role}.yaml")
    cfg.state_dir = str(tmp_path)
    cfg.aaa["local"]["accounting_file"] = str(tmp_path / "accounting.jsonl")
    cfg.aaa["local"]["subscribers"] = str(ROOT / cfg.aaa["local"]["subscribers"])
    ctl = BngController(cfg, make_backend(cfg.aaa))
    if cfg.l2tp:                                # as __main__ does
        ctl.l2tp = L2tpService(ctl, cfg.l2tp)
    table_id = ctl.tables.table_id("local_ipv4")
    out = {}
    for e in ctl.infrastructure_entries():
        if e.table_id == table_id:
            addr = ipaddress.IPv4Address(int.from_bytes(e.match[0].exact.value, "big"))
            out[addr] = ctl.names.action_by_id(e.action.action.action_id).preamble.name.split(".")[-1]
    return out, cfg


@pytest.mark.parametrize("role", ["pppoe", "lac", "lns"])
def test_only_the_lns_endpoint_looks_up_l2tp_up_v4(role, tmp_path):
    actions, cfg = local_ipv4_actions(role, tmp_path)
    assert actions, "the BNG has addresses of its own"
    lns = {ipaddress.IPv4Address(cfg.l2tp["local_address"])} if cfg.l2tp and cfg.l2tp.get("lns") else set()
    assert (role == "lns") == bool(lns)
    for addr, action in actions.items():
        assert action == ("set_local" if addr in lns else "set_local_no_lns"), addr
    assert lns <= set(actions)


def fib_v4_routes(ctl: BngController, entries) -> dict[ipaddress.IPv4Network, tuple[str, dict]]:
    table_id = ctl.tables.table_id("fib_v4")
    out = {}
    for e in entries:
        if e.table_id == table_id:
            if e.match:
                lpm = e.match[0].lpm
                net = ipaddress.IPv4Network((int.from_bytes(lpm.value, "big"), lpm.prefix_len))
            else:                                   # P4Runtime leaves out a /0 match
                net = ipaddress.IPv4Network("0.0.0.0/0")
            out[net] = ctl.tables.b.action_params(e)
    return out


def test_resolved_routes_carry_their_next_hops_l2(tmp_path):
    """A route's entry carries its next hop's port and MACs once ARP has
    resolved it (set_nexthop_l2: routed packets skip the nexthop lookup),
    is rewritten when the MAC changes, and points at the next hop id again
    (set_nexthop, which drops as NO_ROUTE) when it ages out. Routes via
    other next hops are left alone."""
    cfg = config.load(ROOT / "configs" / "controller" / "pppoe.yaml")
    cfg.state_dir = str(tmp_path)
    cfg.aaa["local"]["accounting_file"] = str(tmp_path / "accounting.jsonl")
    cfg.aaa["local"]["subscribers"] = str(ROOT / cfg.aaa["local"]["subscribers"])
    other = ipaddress.IPv4Network("198.51.100.0/24")
    cfg.routes.append(StaticRoute(other, ipaddress.IPv4Address("100.64.0.253")))
    ctl = BngController(cfg, make_backend(cfg.aaa))
    gw = cfg.core[0].gateway
    default = ipaddress.IPv4Network("0.0.0.0/0")
    bng_mac = int.from_bytes(cfg.bng_mac, "big")

    routes = fib_v4_routes(ctl, ctl.infrastructure_entries())
    assert routes[default] == ("set_nexthop", {"nexthop_id": ctl.nexthops[gw]})
    assert routes[other][0] == "set_nexthop"

    async def run():
        sw = FakeSwitch()
        ctl.switch = sw
        for e in ctl.infrastructure_entries():
            await sw.write([p4r.Update(type=p4r.Update.INSERT, entity=p4r.Entity(table_entry=e))])
        n = ctl.arp.neighbors[gw]
        for mac in ("02:ee:00:00:00:01", "02:ee:00:00:00:02"):
            n.mac = bytes.fromhex(mac.replace(":", ""))
            await ctl._write_nexthop(n)
            routes = fib_v4_routes(ctl, sw.entries.values())
            assert routes[default] == ("set_nexthop_l2", {"port": cfg.core[0].port, "smac": bng_mac,
                                                          "dmac": int.from_bytes(n.mac, "big"), "vid": 0})
            assert routes[other][0] == "set_nexthop"
            assert fib_v4_routes(ctl, ctl.infrastructure_entries()) == routes
        n.mac = None
        await ctl._write_nexthop(n)
        routes = fib_v4_routes(ctl, sw.entries.values())
        assert routes[default] == ("set_nexthop", {"nexthop_id": ctl.nexthops[gw]})
        assert not sw.tables_named(ctl.names, "nexthop")

    asyncio.run(run())


def test_tunnels_carry_their_next_hops_l2(tmp_path):
    """As routes do: an installed tunnel's l2tp_tunnel entry carries the L2
    rewrite toward its peer (set_tunnel_l2) once ARP has resolved that next
    hop, and goes back to set_tunnel (the next hop's id) when it ages out."""
    cfg = config.load(ROOT / "configs" / "controller" / "lac.yaml")
    cfg.state_dir = str(tmp_path)
    cfg.aaa["local"]["accounting_file"] = str(tmp_path / "accounting.jsonl")
    cfg.aaa["local"]["subscribers"] = str(ROOT / cfg.aaa["local"]["subscribers"])
    ctl = BngController(cfg, make_backend(cfg.aaa))
    ctl.l2tp = svc = L2tpService(ctl, cfg.l2tp)
    peer = ipaddress.IPv4Address("100.65.0.2")                 # an LNS on the core link
    t = SimpleNamespace(data=TunnelData(tunnel_idx=5, role="lac"), peer=(str(peer), 1701), peer_id=0x1234,
                        state=TunnelState.ESTABLISHED, local_id=9)
    svc.endpoint.tunnels[9] = t
    nh = ctl.nexthop_for(peer)

    def tunnel_action() -> tuple[str, dict]:
        (e,) = sw.tables_named(ctl.names, "l2tp_tunnel")
        return ctl.tables.b.action_params(e)

    async def run():
        await svc._install_tunnel(t)
        name, params = tunnel_action()
        assert name == "set_tunnel" and params["nexthop_id"] == nh
        n = ctl.arp.neighbors[peer]
        n.mac = bytes.fromhex("02ee00000042")
        await ctl._write_nexthop(n)
        name, params = tunnel_action()
        assert name == "set_tunnel_l2"
        assert (params["port"], params["dmac"], params["peer_ip"], params["peer_tunnel_id"]) == \
               (n.port, 0x02ee00000042, int(peer), 0x1234)
        assert svc.desired_entries() == sw.tables_named(ctl.names, "l2tp_tunnel")
        n.mac = None
        await ctl._write_nexthop(n)
        name, params = tunnel_action()
        assert name == "set_tunnel" and params["nexthop_id"] == nh

    sw = FakeSwitch()
    ctl.switch = sw
    asyncio.run(run())


def test_an_on_link_peer_that_never_answers_is_forgotten(tmp_path):
    """Any SCCRQ from an address of a core subnet made the BNG resolve that
    address, and it was asked for, and held a next-hop id, for ever: a
    spoofed /24 meant 254 ARP requests a second. A looked-up address that
    never answered is forgotten after DYNAMIC_NEIGHBOR_TTL once no tunnel
    is with it; configured gateways and peers that answered once stay."""
    from bng_controller import controller as controller_module
    cfg = config.load(ROOT / "configs" / "controller" / "lac.yaml")
    cfg.state_dir = str(tmp_path)
    cfg.aaa["local"]["accounting_file"] = str(tmp_path / "accounting.jsonl")
    cfg.aaa["local"]["subscribers"] = str(ROOT / cfg.aaa["local"]["subscribers"])
    now = [1000.0]
    ctl = BngController(cfg, make_backend(cfg.aaa), clock=lambda: now[0])
    ctl.l2tp = svc = L2tpService(ctl, cfg.l2tp)
    gateways = set(ctl.nexthops)
    spoofed, answered, tunnelled = (ipaddress.IPv4Address(f"100.65.0.{i}") for i in (50, 51, 52))
    for a in (spoofed, answered, tunnelled):
        ctl.nexthop_for(a)
    svc._unrouted.append((b"stopccn", (str(spoofed), 1701), None))
    ctl.arp.neighbors[answered].last_seen = 1001.0
    svc.endpoint.tunnels[9] = SimpleNamespace(peer=(str(tunnelled), 1701), data=None)
    used = ctl.nexthop_ids.in_use
    now[0] += controller_module.DYNAMIC_NEIGHBOR_TTL - 1
    ctl._forget_silent_neighbors(now[0])
    assert spoofed in ctl.arp.neighbors
    now[0] += 2
    ctl._forget_silent_neighbors(now[0])
    assert spoofed not in ctl.arp.neighbors and spoofed not in ctl.nexthops
    assert ctl.nexthop_ids.in_use == used - 1 and svc._unrouted == []
    assert {answered, tunnelled} | gateways <= set(ctl.arp.neighbors)
    assert ctl.sessions.counters["core neighbor forgotten: never answered"] == 1


@pytest.mark.parametrize("role", ["pppoe", "lac", "lns"])
def test_my_station_only_on_routed_ports(role, tmp_path):
    """Plain IP that a subscriber sends to the BNG's MAC on an access port
    must not be routed around its session (anti-spoofing, counters,
    policer): only core and L2TP ports get a my_station entry, while every
    port keeps its packet_out entry."""
    _, cfg = local_ipv4_actions(role, tmp_path)
    ctl = BngController(cfg, make_backend(cfg.aaa))
    if cfg.l2tp:
        ctl.l2tp = L2tpService(ctl, cfg.l2tp)
    entries = ctl.infrastructure_entries()

    def ports_of(table: str, field: str) -> set[int]:
        table_id = ctl.tables.table_id(table)
        info = ctl.names.table(table)
        fid = next(f.id for f in info.match_fields if f.name == field)
        return {int.from_bytes(m.exact.value, "big") for e in entries if e.table_id == table_id
                for m in e.match if m.field_id == fid}

    routed = {c.port for c in cfg.core} | set(ctl.l2tp.ports() if ctl.l2tp else ())
    assert ports_of("my_station", "port") == routed
    assert ports_of("packet_out_port", "egress_port") == set(cfg.access_ports) | routed
    if role != "lns":
        assert set(cfg.access_ports) - routed, "the config has an access-only port to check"

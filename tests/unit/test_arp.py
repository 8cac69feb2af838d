"""ARP for the core next hops (arp.py): when requests go out. A gateway
that stopped answering was forgotten only after three unanswered
refreshes a minute apart (240 s of black-holed traffic toward a dead MAC),
and an address that never answered was asked for once a second for ever,
whoever had made the BNG look it up."""
from __future__ import annotations

import ipaddress
import struct

from bng_controller.arp import ARP_FMT, ARP_REPLY, ArpAgent

BNG_MAC, GW_MAC = bytes.fromhex("02bb00000001"), bytes.fromhex("02aa000000fe")
GW, OURS = ipaddress.IPv4Address("192.0.2.1"), ipaddress.IPv4Address("192.0.2.2")


def reply() -> bytes:
    return (BNG_MAC + GW_MAC + struct.pack("!H", 0x0806)
            + ARP_FMT.pack(1, 0x0800, 6, 4, ARP_REPLY, GW_MAC, GW.packed, BNG_MAC, OURS.packed))


def sent_at(agent: ArpAgent, times: list[float]) -> list[float]:
    return [t for t in times if agent.tick(t)]


def test_an_unresolved_neighbor_is_asked_less_and_less_often():
    agent = ArpAgent(BNG_MAC)
    agent.watch(GW, 1, 0, OURS)
    ticks = [i / 2 for i in range(0, 80)]
    assert sent_at(agent, ticks) == [0.0, 2.0, 6.0, 14.0, 22.0, 30.0, 38.0]      # 2, 4, 8 s, then every 8


def test_a_silent_gateway_is_forgotten_three_seconds_after_a_missed_refresh():
    changes = []
    agent = ArpAgent(BNG_MAC, on_resolved=lambda n: changes.append(n.mac))
    agent.watch(GW, 1, 0, OURS)
    assert agent.tick(0.0)
    agent.handle(1, reply(), 0.1)
    assert changes == [GW_MAC]
    assert sent_at(agent, [t / 2 for t in range(1, 120)]) == []                 # resolved: quiet for 60 s
    assert sent_at(agent, [60.0, 60.5, 61.0, 62.0]) == [60.0, 61.0, 62.0]          # refresh, then 1 s probes
    assert changes == [GW_MAC]
    assert agent.tick(63.0) and changes == [GW_MAC, None]                         # forgotten at 63 s
    # an answer to a probe keeps it, and the next request is a minute later
    agent.handle(1, reply(), 63.5)
    assert changes[-1] == GW_MAC and sent_at(agent, [64.0, 100.0, 123.0]) == [123.0]


def arp(op: int, sha: bytes, spa: ipaddress.IPv4Address, tpa: ipaddress.IPv4Address, vlan: int = 0) -> bytes:
    tag = struct.pack("!HH", 0x8100, vlan) if vlan else b""
    return (b"\xff" * 6 + sha + tag + struct.pack("!H", 0x0806)
            + ARP_FMT.pack(1, 0x0800, 6, 4, op, sha, spa.packed, b"\0" * 6, tpa.packed))


def test_only_a_unicast_neighbor_on_its_own_vlan_is_learned_and_answered():
    """A MAC was learned from any ARP from the gateway's address on the
    port (a broadcast, zero or our own sender MAC would have become the
    next hop's), on any VLAN; and our address was answered on every VLAN of
    the port."""
    changes = []
    agent = ArpAgent(BNG_MAC, addresses={(1, 10): {OURS}}, on_resolved=lambda n: changes.append(n.mac))
    agent.watch(GW, 1, 10, OURS)
    for sha in (b"\xff" * 6, b"\x01\x00\x5e\0\0\1", b"\0" * 6, BNG_MAC):
        assert agent.handle(1, arp(1, sha, GW, OURS, vlan=10), 0.0) is None
    assert agent.handle(1, arp(3, GW_MAC, GW, OURS, vlan=10), 0.0) is None        # RARP: not ARP's
    assert changes == [] and agent.stats.malformed == 5
    assert agent.handle(1, arp(1, GW_MAC, GW, OURS, vlan=20), 0.0) is None        # another VLAN
    assert changes == []
    answer = agent.handle(1, arp(1, GW_MAC, GW, OURS, vlan=10), 0.0)
    assert answer is not None and changes == [GW_MAC]
    assert answer[12:16] == struct.pack("!HH", 0x8100, 10)                        # on its VLAN


def test_a_gratuitous_arp_from_the_gateway_teaches_its_new_mac():
    """The data plane now punts gratuitous ARP (sender = target address):
    a replaced router's announcement moves the next hop at once."""
    changes = []
    agent = ArpAgent(BNG_MAC, on_resolved=lambda n: changes.append(n.mac))
    agent.watch(GW, 1, 0, OURS)
    agent.handle(1, reply(), 0.0)
    new_mac = bytes.fromhex("02aa00000099")
    assert agent.handle(1, arp(1, new_mac, GW, GW), 5.0) is None                  # nothing to answer
    assert changes == [GW_MAC, new_mac]

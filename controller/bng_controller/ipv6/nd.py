"""Neighbor Discovery on the core ports (RFC 4861), the IPv6 twin of
arp.py: answer Neighbor Solicitations for the BNG's addresses, resolve the
IPv6 gateways its default route points to, and keep them fresh.

Sans-I/O like `ArpAgent`: `handle()` takes a received NS/NA and returns the
frame to send (if any); a gateway whose MAC appears, changes or goes stale
is reported through `on_resolved` (the controller rewrites its `nexthop`
entry, exactly as for ARP: `NdNeighbor` has the fields `Neighbor` has);
`tick()` returns the solicitations due: multicast to the solicited-node
group while unresolved, unicast to the known MAC to refresh (NUD probes,
RFC 4861 7.3.3), and after `stale_after` unanswered ones the MAC is
forgotten, so the route blackholes instead of feeding a dead router.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Callable

from ..neighbor_timing import request_interval
from ..pppoe.codec import ETH_P_IPV6, L2Header
from .codec import (ALL_NODES, ND_HOP_LIMIT, Ipv6Packet, NeighborAdvertisement, NeighborSolicitation,
                    icmpv6_packet, multicast_mac, solicited_node)

IPv6Address = ipaddress.IPv6Address


@dataclass
class NdNeighbor:
    addr: IPv6Address
    port: int
    vlan: int
    our_addr: IPv6Address                 # source address of our solicitations
    mac: bytes | None = None
    last_seen: float = 0.0
    last_request: float = -1e9
    requests_unanswered: int = 0


@dataclass
class NdStats:
    solicitations_answered: int = 0
    advertisements_learned: int = 0
    solicitations_sent: int = 0
    ignored: int = 0


@dataclass
class NdAgent:
    mac: bytes
    addresses: dict[int, set[IPv6Address]] = field(default_factory=dict)   # port -> our unicast addresses
    refresh: float = 60.0
    retry: float = 1.0
    stale_after: int = 3
    retry_cap: float = 8.0            # an unresolved neighbor's requests back off to this
    on_resolved: Callable[[NdNeighbor], None] | None = None
    neighbors: dict[IPv6Address, NdNeighbor] = field(default_factory=dict)
    stats: NdStats = field(default_factory=NdStats)

    def watch(self, addr: IPv6Address, port: int, vlan: int, our_addr: IPv6Address) -> NdNeighbor:
        n = self.neighbors.get(addr)
        if n is None:
            n = self.neighbors[addr] = NdNeighbor(addr, port, vlan, our_addr)
        return n

    def _learn(self, n: NdNeighbor, mac: bytes | None, now: float) -> None:
        if mac is None:
            if n.mac is None:
                return            # RFC 4861 7.2.5: no lladdr, nothing to resolve with
            mac = n.mac
        changed = n.mac != mac
        n.mac, n.last_seen, n.requests_unanswered = mac, now, 0
        self.stats.advertisements_learned += 1
        if changed and self.on_resolved is not None:
            self.on_resolved(n)

    def handle(self, port: int, l2: L2Header, pkt: Ipv6Packet,
               msg: NeighborSolicitation | NeighborAdvertisement, now: float) -> bytes | None:
        """The reply frame to an NS for one of our addresses on this port;
        NAs (and NSs carrying a source lladdr) from a watched neighbor
        teach us its MAC."""
        if pkt.hop_limit != ND_HOP_LIMIT:
            self.stats.ignored += 1                 # not from this link: forged
            return None
        if isinstance(msg, NeighborAdvertisement):
            n = self.neighbors.get(msg.target)
            if n is None or n.port != port or pkt.src.is_unspecified:
                self.stats.ignored += 1
                return None
            if not msg.override and n.mac is not None and msg.target_lladdr not in (None, n.mac):
                # RFC 4861 7.2.5: without Override, a different address
                # does not replace the one we have
                self.stats.ignored += 1
                return None
            self._learn(n, msg.target_lladdr, now)
            return None
        n = self.neighbors.get(pkt.src)
        if n is not None and n.port == port and msg.source_lladdr is not None:
            self._learn(n, msg.source_lladdr, now)
        if msg.target not in self.addresses.get(port, ()):
            self.stats.ignored += 1
            return None
        if pkt.src.is_unspecified:
            # DAD: to the solicited-node address, and (RFC 4861 7.1.1) with
            # no source link-layer address option
            if pkt.dst != solicited_node(msg.target) or msg.source_lladdr is not None:
                self.stats.ignored += 1
                return None
            dst, dst_mac, solicited = ALL_NODES, multicast_mac(ALL_NODES), False   # DAD: defend
        else:
            dst, dst_mac, solicited = pkt.src, msg.source_lladdr or l2.src, True
        self.stats.solicitations_answered += 1
        na = NeighborAdvertisement(msg.target, router=True, solicited=solicited, override=True,
                                   target_lladdr=self.mac)
        return (l2.reply_header(self.mac, dst_mac).encode(ETH_P_IPV6)
                + icmpv6_packet(msg.target, dst, na.icmp(), ND_HOP_LIMIT))

    def solicitation(self, n: NdNeighbor) -> bytes:
        """NS for a neighbor: to its solicited-node group while unresolved,
        to itself once known."""
        if n.mac is None:
            dst = solicited_node(n.addr)
            dst_mac = multicast_mac(dst)
        else:
            dst, dst_mac = n.addr, n.mac
        ns = NeighborSolicitation(n.addr, source_lladdr=self.mac)
        return (L2Header(dst=dst_mac, src=self.mac, s_vid=n.vlan).encode(ETH_P_IPV6)
                + icmpv6_packet(n.our_addr, dst, ns.icmp(), ND_HOP_LIMIT))

    def _interval(self, n) -> float:
        return request_interval(n.mac is not None, n.requests_unanswered, self.refresh, self.retry,
                                self.retry_cap)

    def tick(self, now: float) -> list[tuple[bytes, int]]:
        """(frame, port) solicitations due now."""
        out = []
        for n in self.neighbors.values():
            if now - n.last_request < self._interval(n):
                continue
            if n.mac is not None and n.requests_unanswered >= self.stale_after:
                n.mac = None
                if self.on_resolved is not None:
                    self.on_resolved(n)
            n.last_request = now
            n.requests_unanswered += 1
            self.stats.solicitations_sent += 1
            out.append((self.solicitation(n), n.port))
        return out

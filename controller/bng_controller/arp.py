"""ARP on the core ports: answer for the BNG's addresses, resolve the next
hops its routes point to, and keep them fresh.

Sans-I/O: `handle()` takes a received ARP frame and returns the reply to
send (if any); learned next-hop MACs are reported through `on_resolved`,
which the controller turns into `nexthop` entries. `tick()` returns the
requests to send for unresolved or ageing next hops.
"""
from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass, field
from typing import Callable

from .neighbor_timing import request_interval
from .pppoe.codec import BROADCAST, ETH_P_ARP, CodecError, L2Header, parse_l2

IPv4 = ipaddress.IPv4Address
ARP_REQUEST = 1
ARP_REPLY = 2
ARP_FMT = struct.Struct("!HHBBH6s4s6s4s")


@dataclass
class Neighbor:
    addr: IPv4
    port: int
    vlan: int
    our_addr: IPv4                    # source address of our requests
    mac: bytes | None = None
    last_seen: float = 0.0
    last_request: float = -1e9
    requests_unanswered: int = 0


@dataclass
class ArpStats:
    requests_answered: int = 0
    replies_learned: int = 0
    requests_sent: int = 0
    ignored: int = 0
    malformed: int = 0


def arp_frame(l2: L2Header, op: int, sha: bytes, spa: IPv4, tha: bytes, tpa: IPv4) -> bytes:
    return l2.encode(ETH_P_ARP) + ARP_FMT.pack(1, 0x0800, 6, 4, op, sha, spa.packed, tha, tpa.packed)


@dataclass
class ArpAgent:
    mac: bytes
    # (port, vlan) -> our addresses there
    addresses: dict[tuple[int, int], set[IPv4]] = field(default_factory=dict)
    refresh: float = 60.0             # re-request a resolved neighbor this often
    retry: float = 1.0                # unresolved: request this often
    stale_after: int = 3
    retry_cap: float = 8.0            # an unresolved neighbor's requests back off to this              # unanswered refreshes before the MAC is forgotten
    on_resolved: Callable[[Neighbor], None] | None = None
    neighbors: dict[IPv4, Neighbor] = field(default_factory=dict)
    stats: ArpStats = field(default_factory=ArpStats)

    def watch(self, addr: IPv4, port: int, vlan: int, our_addr: IPv4) -> Neighbor:
        n = self.neighbors.get(addr)
        if n is None:
            n = self.neighbors[addr] = Neighbor(addr, port, vlan, our_addr)
        return n

    def handle(self, port: int, frame: bytes, now: float) -> bytes | None:
        try:
            l2, etype, off = parse_l2(frame)
            if etype != ETH_P_ARP or len(frame) < off + ARP_FMT.size:
                raise CodecError("short arp")
            htype, ptype, hlen, plen, op, sha, spa, tha, tpa = ARP_FMT.unpack_from(frame, off)
        except CodecError:
            self.stats.malformed += 1
            return None
        if htype != 1 or ptype != 0x0800 or hlen != 6 or plen != 4:
            self.stats.malformed += 1
            return None
        if op not in (ARP_REQUEST, ARP_REPLY) or sha[0] & 1 or sha == b"\0" * 6 or sha == self.mac:
            self.stats.malformed += 1       # no neighbor has a group, zero or our MAC
            return None
        spa_a, tpa_a = IPv4(spa), IPv4(tpa)
        n = self.neighbors.get(spa_a)
        if n is not None and n.port == port and n.vlan == l2.s_vid:
            changed = n.mac != sha
            n.mac, n.last_seen, n.requests_unanswered = sha, now, 0
            self.stats.replies_learned += 1
            if changed and self.on_resolved is not None:
                self.on_resolved(n)
        if op == ARP_REQUEST and tpa_a in self.addresses.get((port, l2.s_vid), ()):
            self.stats.requests_answered += 1
            return arp_frame(l2.reply_header(self.mac), ARP_REPLY, self.mac, tpa_a, sha, spa_a)
        if op != ARP_REPLY:
            self.stats.ignored += 1
        return None

    def _interval(self, n) -> float:
        return request_interval(n.mac is not None, n.requests_unanswered, self.refresh, self.retry,
                                self.retry_cap)

    def tick(self, now: float) -> list[tuple[bytes, int]]:
        """(frame, port) requests due now."""
        out = []
        for n in self.neighbors.values():
            if now - n.last_request < self._interval(n):
                continue
            if n.mac is not None and n.requests_unanswered >= self.stale_after:
                n.mac = None                         # gone: the route blackholes until it is back
                if self.on_resolved is not None:
                    self.on_resolved(n)
            n.last_request = now
            n.requests_unanswered += 1
            self.stats.requests_sent += 1
            l2 = L2Header(dst=BROADCAST, src=self.mac, s_vid=n.vlan)
            out.append((arp_frame(l2, ARP_REQUEST, self.mac, n.our_addr, b"\0" * 6, n.addr), n.port))
        return out

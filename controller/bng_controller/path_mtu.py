"""Downstream packets larger than their session's MRU (punt PACKET_TOO_BIG).

The data plane compares each downstream IP packet with the MRU of the
session it goes to (to_pppoe / to_l2tp's max_len) and punts what is larger,
rather than sending a frame the subscriber's CPE would drop without a word.
Here each gets what a router owes it:

- IPv4 with DF set: ICMP Fragmentation Needed with the session's MRU as
  the next-hop MTU (RFC 1191 4), from the BNG's address on the core port
  the packet came in on, back to the neighbour that sent it;
- IPv4 without DF: fragmented to the MRU (RFC 791), TTL lowered as
  forwarding does, and sent into the session;
- IPv6: ICMPv6 Packet Too Big with the MRU (RFC 4443 3.2, RFC 8201); a
  router never fragments IPv6.

This is the slow path for what path MTU discovery and the MSS clamp did
not prevent; the punt meter's PACKET_TOO_BIG rate bounds it. Fragments go
out by packet-out, which the session's data-plane counters do not see: they
are added to its accounting totals here.
"""
from __future__ import annotations

import collections
import ipaddress
from typing import Callable, Protocol

from . import icmp
from .ipv4_fragment import dont_fragment, fragment
from .ipv6 import icmp6
from .ipv6.codec import Ignored, parse_ipv6
from .ipv6.codec import ParseError as Ipv6ParseError
from .ppp.codec import PPP_IPV4
from .pppoe import codec as pppoe

IPv4Address = ipaddress.IPv4Address
IPv6Address = ipaddress.IPv6Address


class SessionFinder(Protocol):
    def by_address(self, addr: IPv4Address | IPv6Address): ...


class PacketTooBig:
    """Answers the PACKET_TOO_BIG punts. `core_v4` / `core_v6`: the BNG's
    address on each core port, the source of its ICMP errors."""

    def __init__(self, sessions: SessionFinder, packet_out: Callable[[bytes, int], None], bng_mac: bytes,
                 core_v4: dict[int, IPv4Address], core_v6: dict[int, IPv6Address]):
        self.sessions = sessions
        self.packet_out = packet_out
        self.bng_mac = bng_mac
        self.core_v4 = core_v4
        self.core_v6 = core_v6
        self.counters: collections.Counter[str] = collections.Counter()

    def on_packet_in(self, port: int, frame: bytes) -> None:
        try:
            l2, etype, off = pppoe.parse_l2(frame)
            if etype == pppoe.ETH_P_IPV4:
                self._ipv4(port, l2, frame[off:])
            elif etype == pppoe.ETH_P_IPV6:
                self._ipv6(port, l2, frame[off:])
            else:
                self.counters["not ip"] += 1
        except (pppoe.CodecError, icmp.ParseError, Ipv6ParseError):
            self.counters["malformed"] += 1
        except Ignored as e:
            self.counters[f"ignored: {e}"] += 1

    def _session_mru(self, dst: IPv4Address | IPv6Address) -> tuple[object, int] | None:
        sub = self.sessions.by_address(dst)
        if sub is None:
            self.counters["no session"] += 1      # gone since the packet was punted
            return None
        return sub, sub.link.lcp_neg.peer_mru

    def _source(self, addresses: dict, port: int):
        """Our address on the core port, or on any where that has none."""
        return addresses.get(port, next(iter(addresses.values()), None))

    def _ipv4(self, port: int, l2: pppoe.L2Header, pkt: bytes) -> None:
        _, dst, _, _, _ = icmp.parse_ipv4(pkt)
        found = self._session_mru(dst)
        if found is None:
            return
        sub, mru = found
        if not dont_fragment(pkt):
            pieces = fragment(pkt, mru)
            for piece in pieces:
                sub.transport.send_ppp(PPP_IPV4, piece)
            sub.count_sent_by_controller(len(pieces), sum(len(p) for p in pieces))
            self.counters["ipv4 fragmented"] += 1
            return
        src = self._source(self.core_v4, port)
        reply = icmp.frag_needed(pkt, src, mru) if src is not None else None
        if reply is None:
            self.counters["ipv4 no icmp allowed" if src is not None else "no source address"] += 1
            return
        self.packet_out(l2.reply_header(self.bng_mac).encode(pppoe.ETH_P_IPV4) + reply, port)
        self.counters["ipv4 fragmentation needed sent"] += 1

    def _ipv6(self, port: int, l2: pppoe.L2Header, pkt: bytes) -> None:
        found = self._session_mru(parse_ipv6(pkt).dst)
        if found is None:
            return
        _, mru = found
        src = self._source(self.core_v6, port)
        if src is None:
            self.counters["no source address"] += 1
            return
        reply = icmp6.packet_too_big(pkt, src, mru)
        self.packet_out(l2.reply_header(self.bng_mac).encode(pppoe.ETH_P_IPV6) + reply, port)
        self.counters["ipv6 packet too big sent"] += 1

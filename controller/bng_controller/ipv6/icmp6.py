"""ICMPv6 as the BNG answers it on a subscriber's PPP link: Router
Advertisements (solicited and not), Neighbor Advertisements for its own
link-local address, echo replies, Time Exceeded, and Packet Too Big for
what is larger than a session's MRU.

Pure functions over the codec: each takes the facts of one session
(`SessionLink`) and a received packet, and returns the packet to send or
raises `Ignored` with the reason the packet gets no answer (the responder
counts it). RFC 4861's validity checks live here, next to the answers they
guard, so that a forged or off-link ND packet (hop limit below 255) can
never make the BNG speak.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from .codec import (ALL_NODES, ICMPV6_ECHO_REQUEST, ICMPV6_PACKET_TOO_BIG, ICMPV6_TIME_EXCEEDED, IPPROTO_ICMPV6,
                    ND_HOP_LIMIT,
                    Echo, Icmpv6, Ignored, Ipv6Packet, NeighborAdvertisement, NeighborSolicitation, PrefixInfo,
                    Rdnss, RouterAdvertisement, RouterSolicitation, icmpv6_packet, parse_ipv6, solicited_node)

IPv6Address = ipaddress.IPv6Address
IPv6Network = ipaddress.IPv6Network

MIN_MTU = 1280                 # RFC 8200 5: an IPv6 link's MTU is at least this
MAX_ERROR_QUOTE = MIN_MTU - 48  # RFC 4443 2.4(c): an error fits the minimum MTU


@dataclass(frozen=True, slots=True)
class SessionLink:
    """The IPv6 facts of one PPP session that the BNG's answers depend on."""
    our_ll: IPv6Address                       # fe80::<our IPv6CP interface identifier>
    peer_ll: IPv6Address
    mtu: int | None                           # None: too small for IPv6, not advertised
    wan_prefix: IPv6Network | None            # the session's /64, for SLAAC
    delegated_prefix: IPv6Network | None      # DHCPv6-PD


@dataclass(frozen=True, slots=True)
class RaPolicy:
    """What every RA says, from the configuration."""
    router_lifetime: int = 1800
    valid_lifetime: int = 7200
    preferred_lifetime: int = 3600
    dns: tuple[IPv6Address, ...] = ()
    dns_lifetime: int = 1800                  # RFC 8106 5.1: at least 3 x MaxRtrAdvInterval
    dhcpv6: bool = True                       # the BNG runs a DHCPv6 server (O flag)


def router_advertisement(link: SessionLink, policy: RaPolicy) -> RouterAdvertisement:
    """M=0 (addresses by SLAAC from the session's /64), O=1 when DHCPv6
    has something to give (DNS, a delegated prefix). No source link-layer
    option: PPP has no link-layer addresses (RFC 5072)."""
    prefixes = ()
    if link.wan_prefix is not None:
        prefixes = (PrefixInfo(link.wan_prefix, on_link=True, autonomous=link.wan_prefix.prefixlen == 64,
                               valid_lifetime=policy.valid_lifetime,
                               preferred_lifetime=min(policy.preferred_lifetime, policy.valid_lifetime)),)
    other = policy.dhcpv6 and bool(policy.dns or link.delegated_prefix is not None)
    return RouterAdvertisement(cur_hop_limit=64, managed=False, other=other,
                               router_lifetime=policy.router_lifetime, mtu=link.mtu, prefixes=prefixes,
                               rdnss=Rdnss(policy.dns, policy.dns_lifetime) if policy.dns else None)


def ra_packet(link: SessionLink, policy: RaPolicy, dst: IPv6Address = ALL_NODES) -> bytes:
    return icmpv6_packet(link.our_ll, dst, router_advertisement(link, policy).icmp(), ND_HOP_LIMIT)


def answer_rs(link: SessionLink, policy: RaPolicy, pkt: Ipv6Packet, rs: RouterSolicitation) -> bytes:
    """The RA for a Router Solicitation (RFC 4861 6.1.1 checks, 6.2.6
    answer): unicast to the soliciting address (RFC 7772), to all nodes
    when it came from the unspecified address."""
    if pkt.hop_limit != ND_HOP_LIMIT:
        raise Ignored("rs hop limit not 255")
    if pkt.src.is_unspecified and rs.source_lladdr is not None:
        raise Ignored("rs from :: with lladdr")
    if pkt.src.is_multicast:
        raise Ignored("rs from multicast")
    return ra_packet(link, policy, ALL_NODES if pkt.src.is_unspecified else pkt.src)


def answer_ns(link: SessionLink, pkt: Ipv6Packet, ns: NeighborSolicitation) -> bytes:
    """The NA for a Neighbor Solicitation of our link-local address (RFC
    4861 7.1.1 checks, 7.2.4 answer). Solicitations for any other target
    (the subscriber's own duplicate address detection) stay unanswered, or
    its DAD would fail."""
    if pkt.hop_limit != ND_HOP_LIMIT:
        raise Ignored("ns hop limit not 255")
    if ns.target != link.our_ll:
        raise Ignored("ns not for our address")
    if pkt.src.is_multicast:
        raise Ignored("ns from multicast")
    if pkt.src.is_unspecified:
        if pkt.dst != solicited_node(ns.target) or ns.source_lladdr is not None:
            raise Ignored("bad dad ns")
        dst, solicited = ALL_NODES, False     # someone else's DAD for our address: defend it
    else:
        dst, solicited = pkt.src, True
    na = NeighborAdvertisement(ns.target, router=True, solicited=solicited, override=True)
    return icmpv6_packet(ns.target, dst, na.icmp(), ND_HOP_LIMIT)


def answer_echo(pkt: Ipv6Packet, echo: Echo, ours: set[IPv6Address] | frozenset[IPv6Address]) -> bytes:
    """Echo Reply from the address the request went to (RFC 4443 4.2);
    requests to groups are not answered."""
    if not echo.request:
        raise Ignored("echo reply to us")
    if pkt.dst not in ours or pkt.dst.is_multicast:
        raise Ignored("echo not for our address")
    if pkt.src.is_multicast or pkt.src.is_unspecified:
        raise Ignored("echo from bad source")
    return icmpv6_packet(pkt.dst, pkt.src, Echo(False, echo.ident, echo.seq, echo.data).icmp())


def time_exceeded(packet: bytes, our_address: IPv6Address) -> bytes:
    """ICMPv6 Time Exceeded (hop limit) for a packet the data plane could
    not forward, quoting as much of it as fits the minimum MTU (RFC 4443
    3.3); never for multicast, unspecified sources or ICMPv6 errors (2.4)."""
    return _error(packet, our_address, ICMPV6_TIME_EXCEEDED, b"\0" * 4)


def packet_too_big(packet: bytes, our_address: IPv6Address, mtu: int) -> bytes:
    """ICMPv6 Packet Too Big with the session's MRU (RFC 4443 3.2), which
    the sender's path MTU discovery (RFC 8201) needs: a router never
    fragments IPv6."""
    return _error(packet, our_address, ICMPV6_PACKET_TOO_BIG, mtu.to_bytes(4, "big"))


def _error(packet: bytes, our_address: IPv6Address, icmp_type: int, rest: bytes) -> bytes:
    """An ICMPv6 error about `packet` to its sender: `rest` is the type's
    4 bytes, then the quote. Raises Ignored where RFC 4443 2.4 forbids one."""
    pkt = parse_ipv6(packet)
    if pkt.src.is_multicast or pkt.src.is_unspecified or pkt.dst.is_multicast:
        raise Ignored("no icmpv6 error for that address")
    if pkt.next_header == IPPROTO_ICMPV6 and (not pkt.payload or pkt.payload[0] < ICMPV6_ECHO_REQUEST):
        raise Ignored("no icmpv6 error about an error")
    quote = pkt.encode()[:MAX_ERROR_QUOTE]
    return icmpv6_packet(our_address, pkt.src, Icmpv6(icmp_type, 0, rest + quote))

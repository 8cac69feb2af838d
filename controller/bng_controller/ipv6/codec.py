"""IPv6, ICMPv6, Neighbor Discovery and UDP as bytes (RFC 8200, 4443,
4861, 8106, 768).

The BNG speaks these itself on every subscriber session (RA, NA, echo,
DHCPv6 over UDP) and on its core ports (ND for its gateway), so the codec
must be exact and cheap; scapy does not belong on the controller's packet
path. Parsing never trusts a length field: every problem raises
`ParseError` whose text is short enough to be a counter label. Building is
the inverse of parsing, so `parse(build(x)) == x` holds for what the BNG
builds (the tests check it, and a fuzz test checks that nothing but
`ParseError` ever escapes a parser).
"""
from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass, field

IPv6Address = ipaddress.IPv6Address
IPv6Network = ipaddress.IPv6Network

IPPROTO_HOPOPTS = 0
IPPROTO_UDP = 17
IPPROTO_ICMPV6 = 58

ALL_NODES = IPv6Address("ff02::1")
ALL_ROUTERS = IPv6Address("ff02::2")
ALL_DHCP_AGENTS = IPv6Address("ff02::1:2")      # All_DHCP_Relay_Agents_and_Servers
UNSPECIFIED = IPv6Address("::")
LINK_LOCAL_NET = IPv6Network("fe80::/10")

# ICMPv6 types (RFC 4443, RFC 4861)
ICMPV6_DEST_UNREACH = 1
ICMPV6_PACKET_TOO_BIG = 2
ICMPV6_TIME_EXCEEDED = 3
ICMPV6_PARAM_PROBLEM = 4
ICMPV6_ECHO_REQUEST = 128
ICMPV6_ECHO_REPLY = 129
ND_ROUTER_SOLICIT = 133
ND_ROUTER_ADVERT = 134
ND_NEIGHBOR_SOLICIT = 135
ND_NEIGHBOR_ADVERT = 136
ND_REDIRECT = 137

# ND option types
ND_OPT_SOURCE_LLADDR = 1
ND_OPT_TARGET_LLADDR = 2
ND_OPT_PREFIX_INFO = 3
ND_OPT_MTU = 5
ND_OPT_RDNSS = 25               # RFC 8106

ND_HOP_LIMIT = 255              # RFC 4861: ND packets with anything else are forged
INFINITE = 0xFFFFFFFF           # lifetime "forever" (RFC 4861 4.6.2)

IPV6_HEADER = struct.Struct("!IHBB16s16s")
UDP_HEADER = struct.Struct("!HHHH")


class ParseError(ValueError):
    """A packet that cannot be decoded; str() is a short reason."""


class Ignored(Exception):
    """A well-formed packet the BNG does not answer (not for it, not valid
    in its context); str() is the reason, a counter label."""


# ----------------------------------------------------------------------
# addresses
def solicited_node(addr: IPv6Address) -> IPv6Address:
    """ff02::1:ffXX:XXXX, the group an address's Neighbor Solicitations go to."""
    return IPv6Address(int(IPv6Address("ff02::1:ff00:0")) | (int(addr) & 0xFFFFFF))


def multicast_mac(group: IPv6Address) -> bytes:
    """The Ethernet address of an IPv6 multicast group (RFC 2464 7)."""
    return b"\x33\x33" + group.packed[12:]


def eui64_iid(mac: bytes) -> int:
    """Modified EUI-64 interface identifier of a MAC (RFC 4291 appendix A)."""
    b = bytes([mac[0] ^ 0x02]) + mac[1:3] + b"\xff\xfe" + mac[3:6]
    return int.from_bytes(b, "big")


def link_local(iid: int) -> IPv6Address:
    """fe80::IID: on PPP the IID is what IPv6CP negotiated (RFC 5072 5)."""
    return IPv6Address((0xFE80 << 112) | (iid & 0xFFFF_FFFF_FFFF_FFFF))


def is_link_local(addr: IPv6Address) -> bool:
    return addr in LINK_LOCAL_NET


# ----------------------------------------------------------------------
# checksums
def checksum(data: bytes) -> int:
    """RFC 1071 ones' complement sum."""
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def pseudo_header(src: IPv6Address, dst: IPv6Address, length: int, next_header: int) -> bytes:
    """The upper-layer checksum's IPv6 pseudo-header (RFC 8200 8.1)."""
    return src.packed + dst.packed + struct.pack("!IxxxB", length, next_header)


def l4_checksum(src: IPv6Address, dst: IPv6Address, next_header: int, segment: bytes) -> int:
    """Checksum of an ICMPv6 or UDP segment whose checksum field is zero;
    over a segment that carries its checksum the result is 0 when valid."""
    return checksum(pseudo_header(src, dst, len(segment), next_header) + segment)


# ----------------------------------------------------------------------
# IPv6
@dataclass(frozen=True, slots=True)
class Ipv6Packet:
    src: IPv6Address
    dst: IPv6Address
    next_header: int
    payload: bytes
    hop_limit: int = 64
    traffic_class: int = 0
    flow_label: int = 0

    def encode(self) -> bytes:
        vtf = (6 << 28) | (self.traffic_class << 20) | self.flow_label
        return IPV6_HEADER.pack(vtf, len(self.payload), self.next_header, self.hop_limit,
                                self.src.packed, self.dst.packed) + self.payload


def parse_ipv6(data: bytes) -> Ipv6Packet:
    """The fixed header and its payload, cut at the payload length (bytes
    after it are link padding). Extension headers stay in the payload:
    nothing the BNG answers carries any."""
    if len(data) < 40:
        raise ParseError("short ipv6 header")
    vtf, plen, nh, hlim, src, dst = IPV6_HEADER.unpack_from(data)
    if vtf >> 28 != 6:
        raise ParseError("not ipv6")
    if 40 + plen > len(data):
        raise ParseError("ipv6 payload length beyond packet")
    return Ipv6Packet(IPv6Address(src), IPv6Address(dst), nh, bytes(data[40:40 + plen]), hlim,
                      (vtf >> 20) & 0xFF, vtf & 0xFFFFF)


# ----------------------------------------------------------------------
# ICMPv6
@dataclass(frozen=True, slots=True)
class Icmpv6:
    type: int
    code: int
    body: bytes                 # what follows the checksum

    def encode(self, src: IPv6Address, dst: IPv6Address) -> bytes:
        raw = struct.pack("!BBH", self.type, self.code, 0) + self.body
        c = l4_checksum(src, dst, IPPROTO_ICMPV6, raw)
        return raw[:2] + struct.pack("!H", c) + raw[4:]


def icmpv6_packet(src: IPv6Address, dst: IPv6Address, msg: Icmpv6, hop_limit: int = 64) -> bytes:
    """A whole IPv6 packet carrying one ICMPv6 message."""
    return Ipv6Packet(src, dst, IPPROTO_ICMPV6, msg.encode(src, dst), hop_limit).encode()


def parse_icmpv6(pkt: Ipv6Packet) -> Icmpv6:
    if pkt.next_header != IPPROTO_ICMPV6:
        raise ParseError("not icmpv6")
    if len(pkt.payload) < 4:
        raise ParseError("short icmpv6")
    if l4_checksum(pkt.src, pkt.dst, IPPROTO_ICMPV6, pkt.payload) != 0:
        raise ParseError("bad icmpv6 checksum")
    return Icmpv6(pkt.payload[0], pkt.payload[1], pkt.payload[4:])


# ----------------------------------------------------------------------
# ND options (RFC 4861 4.6): type, length in units of 8 octets, value
NdOption = tuple[int, bytes]        # (type, value without type/length, padding included)


def encode_options(options: list[NdOption]) -> bytes:
    out = []
    for t, v in options:
        units = (len(v) + 2 + 7) // 8
        if units > 255:
            raise ValueError("nd option too long")
        out.append(struct.pack("!BB", t, units) + v + b"\0" * (units * 8 - 2 - len(v)))
    return b"".join(out)


def parse_options(data: bytes) -> list[NdOption]:
    opts: list[NdOption] = []
    off = 0
    while off < len(data):
        if off + 2 > len(data):
            raise ParseError("truncated nd option")
        t, units = data[off], data[off + 1]
        if units == 0:
            raise ParseError("nd option length 0")
        end = off + units * 8
        if end > len(data):
            raise ParseError("nd option beyond packet")
        opts.append((t, bytes(data[off + 2:end])))
        off = end
    return opts


def _lladdr(v: bytes) -> bytes:
    """A link-layer address option's value: Ethernet's is 6 bytes in one
    unit (RFC 2464 6); a longer one keeps its padding."""
    return v[:6] if len(v) == 6 else v


def _single(opts: list[NdOption], kind: int, name: str) -> bytes | None:
    found = [v for t, v in opts if t == kind]
    if len(found) > 1:
        raise ParseError(f"duplicate {name} option")
    return found[0] if found else None


@dataclass(frozen=True, slots=True)
class PrefixInfo:
    prefix: IPv6Network
    on_link: bool = True
    autonomous: bool = True
    valid_lifetime: int = 7200
    preferred_lifetime: int = 3600

    def option(self) -> NdOption:
        flags = (0x80 if self.on_link else 0) | (0x40 if self.autonomous else 0)
        return (ND_OPT_PREFIX_INFO, struct.pack("!BBIII16s", self.prefix.prefixlen, flags, self.valid_lifetime,
                                                self.preferred_lifetime, 0, self.prefix.network_address.packed))

    @classmethod
    def decode(cls, v: bytes) -> "PrefixInfo":
        if len(v) != 30:
            raise ParseError("bad prefix information length")
        plen, flags, valid, preferred, _, prefix = struct.unpack("!BBIII16s", v)
        if plen > 128:
            raise ParseError("bad prefix length")
        if preferred > valid:
            raise ParseError("preferred lifetime above valid")
        net = IPv6Network((IPv6Address(prefix), plen), strict=False)
        return cls(net, bool(flags & 0x80), bool(flags & 0x40), valid, preferred)


@dataclass(frozen=True, slots=True)
class Rdnss:
    servers: tuple[IPv6Address, ...]
    lifetime: int

    def option(self) -> NdOption:
        return (ND_OPT_RDNSS, struct.pack("!HI", 0, self.lifetime) + b"".join(a.packed for a in self.servers))

    @classmethod
    def decode(cls, v: bytes) -> "Rdnss":
        # RFC 8106 5.1: length 3 + 2n units, at least one address
        if len(v) < 22 or (len(v) - 6) % 16:
            raise ParseError("bad rdnss length")
        lifetime = struct.unpack_from("!I", v, 2)[0]
        return cls(tuple(IPv6Address(v[i:i + 16]) for i in range(6, len(v), 16)), lifetime)


@dataclass(frozen=True, slots=True)
class RouterSolicitation:
    source_lladdr: bytes | None = None
    other_options: tuple[NdOption, ...] = ()

    def icmp(self) -> Icmpv6:
        opts = [(ND_OPT_SOURCE_LLADDR, self.source_lladdr)] if self.source_lladdr is not None else []
        return Icmpv6(ND_ROUTER_SOLICIT, 0, b"\0" * 4 + encode_options(opts + list(self.other_options)))

    @classmethod
    def decode(cls, m: Icmpv6) -> "RouterSolicitation":
        if m.type != ND_ROUTER_SOLICIT or m.code != 0:
            raise ParseError("not a router solicitation")
        if len(m.body) < 4:
            raise ParseError("short router solicitation")
        opts = parse_options(m.body[4:])
        sll = _single(opts, ND_OPT_SOURCE_LLADDR, "source lladdr")
        return cls(_lladdr(sll) if sll is not None else None,
                   tuple(o for o in opts if o[0] != ND_OPT_SOURCE_LLADDR))


@dataclass(frozen=True, slots=True)
class RouterAdvertisement:
    cur_hop_limit: int = 64
    managed: bool = False                 # M: addresses by DHCPv6
    other: bool = False                   # O: other configuration (DNS, ...) by DHCPv6
    router_lifetime: int = 1800
    reachable_time: int = 0
    retrans_timer: int = 0
    source_lladdr: bytes | None = None    # none on PPP: it has no link-layer addresses
    mtu: int | None = None
    prefixes: tuple[PrefixInfo, ...] = ()
    rdnss: Rdnss | None = None
    extra_flags: int = 0                  # the other flag bits (H, Prf, ...), kept as they came
    other_options: tuple[NdOption, ...] = ()

    def icmp(self) -> Icmpv6:
        flags = (0x80 if self.managed else 0) | (0x40 if self.other else 0) | (self.extra_flags & 0x3F)
        opts: list[NdOption] = []
        if self.source_lladdr is not None:
            opts.append((ND_OPT_SOURCE_LLADDR, self.source_lladdr))
        if self.mtu is not None:
            opts.append((ND_OPT_MTU, struct.pack("!HI", 0, self.mtu)))
        opts += [p.option() for p in self.prefixes]
        if self.rdnss is not None:
            opts.append(self.rdnss.option())
        body = struct.pack("!BBHII", self.cur_hop_limit, flags, self.router_lifetime, self.reachable_time,
                           self.retrans_timer) + encode_options(opts + list(self.other_options))
        return Icmpv6(ND_ROUTER_ADVERT, 0, body)

    @classmethod
    def decode(cls, m: Icmpv6) -> "RouterAdvertisement":
        if m.type != ND_ROUTER_ADVERT or m.code != 0:
            raise ParseError("not a router advertisement")
        if len(m.body) < 12:
            raise ParseError("short router advertisement")
        hop, flags, lifetime, reachable, retrans = struct.unpack_from("!BBHII", m.body)
        opts = parse_options(m.body[12:])
        sll = _single(opts, ND_OPT_SOURCE_LLADDR, "source lladdr")
        mtu_v = _single(opts, ND_OPT_MTU, "mtu")
        if mtu_v is not None and len(mtu_v) != 6:
            raise ParseError("bad mtu option length")
        rdnss_v = _single(opts, ND_OPT_RDNSS, "rdnss")
        known = (ND_OPT_SOURCE_LLADDR, ND_OPT_MTU, ND_OPT_PREFIX_INFO, ND_OPT_RDNSS)
        return cls(hop, bool(flags & 0x80), bool(flags & 0x40), lifetime, reachable, retrans,
                   _lladdr(sll) if sll is not None else None,
                   struct.unpack_from("!I", mtu_v, 2)[0] if mtu_v is not None else None,
                   tuple(PrefixInfo.decode(v) for t, v in opts if t == ND_OPT_PREFIX_INFO),
                   Rdnss.decode(rdnss_v) if rdnss_v is not None else None,
                   flags & 0x3F, tuple(o for o in opts if o[0] not in known))


@dataclass(frozen=True, slots=True)
class NeighborSolicitation:
    target: IPv6Address
    source_lladdr: bytes | None = None

    def icmp(self) -> Icmpv6:
        opts = [(ND_OPT_SOURCE_LLADDR, self.source_lladdr)] if self.source_lladdr is not None else []
        return Icmpv6(ND_NEIGHBOR_SOLICIT, 0, b"\0" * 4 + self.target.packed + encode_options(opts))

    @classmethod
    def decode(cls, m: Icmpv6) -> "NeighborSolicitation":
        if m.type != ND_NEIGHBOR_SOLICIT or m.code != 0:
            raise ParseError("not a neighbor solicitation")
        if len(m.body) < 20:
            raise ParseError("short neighbor solicitation")
        target = IPv6Address(m.body[4:20])
        if target.is_multicast:
            raise ParseError("multicast ns target")
        sll = _single(parse_options(m.body[20:]), ND_OPT_SOURCE_LLADDR, "source lladdr")
        return cls(target, _lladdr(sll) if sll is not None else None)


@dataclass(frozen=True, slots=True)
class NeighborAdvertisement:
    target: IPv6Address
    router: bool = False
    solicited: bool = False
    override: bool = False
    target_lladdr: bytes | None = None

    def icmp(self) -> Icmpv6:
        flags = (0x80 if self.router else 0) | (0x40 if self.solicited else 0) | (0x20 if self.override else 0)
        opts = [(ND_OPT_TARGET_LLADDR, self.target_lladdr)] if self.target_lladdr is not None else []
        return Icmpv6(ND_NEIGHBOR_ADVERT, 0, bytes([flags, 0, 0, 0]) + self.target.packed + encode_options(opts))

    @classmethod
    def decode(cls, m: Icmpv6) -> "NeighborAdvertisement":
        if m.type != ND_NEIGHBOR_ADVERT or m.code != 0:
            raise ParseError("not a neighbor advertisement")
        if len(m.body) < 20:
            raise ParseError("short neighbor advertisement")
        target = IPv6Address(m.body[4:20])
        if target.is_multicast:
            raise ParseError("multicast na target")
        tll = _single(parse_options(m.body[20:]), ND_OPT_TARGET_LLADDR, "target lladdr")
        f = m.body[0]
        return cls(target, bool(f & 0x80), bool(f & 0x40), bool(f & 0x20), _lladdr(tll) if tll is not None else None)


@dataclass(frozen=True, slots=True)
class Echo:
    request: bool
    ident: int
    seq: int
    data: bytes = b""

    def icmp(self) -> Icmpv6:
        return Icmpv6(ICMPV6_ECHO_REQUEST if self.request else ICMPV6_ECHO_REPLY, 0,
                      struct.pack("!HH", self.ident, self.seq) + self.data)

    @classmethod
    def decode(cls, m: Icmpv6) -> "Echo":
        if m.type not in (ICMPV6_ECHO_REQUEST, ICMPV6_ECHO_REPLY) or m.code != 0:
            raise ParseError("not an echo")
        if len(m.body) < 4:
            raise ParseError("short echo")
        ident, seq = struct.unpack_from("!HH", m.body)
        return cls(m.type == ICMPV6_ECHO_REQUEST, ident, seq, m.body[4:])


NdMessage = RouterSolicitation | RouterAdvertisement | NeighborSolicitation | NeighborAdvertisement | Echo

_DECODERS = {ND_ROUTER_SOLICIT: RouterSolicitation, ND_ROUTER_ADVERT: RouterAdvertisement,
             ND_NEIGHBOR_SOLICIT: NeighborSolicitation, ND_NEIGHBOR_ADVERT: NeighborAdvertisement,
             ICMPV6_ECHO_REQUEST: Echo, ICMPV6_ECHO_REPLY: Echo}


def decode_message(m: Icmpv6) -> NdMessage | None:
    """The ND or echo message of an ICMPv6 packet; None for other types."""
    cls = _DECODERS.get(m.type)
    return cls.decode(m) if cls is not None else None


# ----------------------------------------------------------------------
# UDP (RFC 768; RFC 8200 8.1: the checksum is mandatory over IPv6)
@dataclass(frozen=True, slots=True)
class Udp:
    sport: int
    dport: int
    payload: bytes = field(default=b"")

    def encode(self, src: IPv6Address, dst: IPv6Address) -> bytes:
        raw = UDP_HEADER.pack(self.sport, self.dport, 8 + len(self.payload), 0) + self.payload
        c = l4_checksum(src, dst, IPPROTO_UDP, raw) or 0xFFFF
        return raw[:6] + struct.pack("!H", c) + raw[8:]


def udp_packet(src: IPv6Address, dst: IPv6Address, udp: Udp, hop_limit: int = 64) -> bytes:
    return Ipv6Packet(src, dst, IPPROTO_UDP, udp.encode(src, dst), hop_limit).encode()


def parse_udp(pkt: Ipv6Packet) -> Udp:
    if pkt.next_header != IPPROTO_UDP:
        raise ParseError("not udp")
    p = pkt.payload
    if len(p) < 8:
        raise ParseError("short udp")
    sport, dport, length, csum = UDP_HEADER.unpack_from(p)
    if length < 8 or length > len(p):
        raise ParseError("bad udp length")
    if csum == 0:
        raise ParseError("udp without checksum")
    seg = p[:length]
    if l4_checksum(pkt.src, pkt.dst, IPPROTO_UDP, seg) != 0:
        raise ParseError("bad udp checksum")
    return Udp(sport, dport, bytes(seg[8:]))

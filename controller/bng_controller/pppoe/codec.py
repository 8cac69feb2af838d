"""PPPoE frames (RFC 2516) with their Ethernet and VLAN header, as bytes.

Parsing never trusts a length field: every error raises `CodecError` with
a reason short enough to be a counter label. Building is the exact inverse,
so `parse(build(x)) == x` holds and the fuzz tests can check it.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

ETH_P_VLAN = 0x8100
ETH_P_QINQ = 0x88A8
ETH_P_PPPOE_DISC = 0x8863
ETH_P_PPPOE_SESS = 0x8864
ETH_P_IPV4 = 0x0800
ETH_P_ARP = 0x0806
ETH_P_IPV6 = 0x86DD

BROADCAST = b"\xff" * 6

# Discovery codes (RFC 2516 section 5)
PADI = 0x09
PADO = 0x07
PADR = 0x19
PADS = 0x65
PADT = 0xA7
CODE_NAMES = {PADI: "PADI", PADO: "PADO", PADR: "PADR", PADS: "PADS", PADT: "PADT"}

# Tags (RFC 2516 appendix A, RFC 4638)
TAG_END_OF_LIST = 0x0000
TAG_SERVICE_NAME = 0x0101
TAG_AC_NAME = 0x0102
TAG_HOST_UNIQ = 0x0103
TAG_AC_COOKIE = 0x0104
TAG_VENDOR_SPECIFIC = 0x0105
TAG_RELAY_SESSION_ID = 0x0110
TAG_PPP_MAX_PAYLOAD = 0x0120
TAG_SERVICE_NAME_ERROR = 0x0201
TAG_AC_SYSTEM_ERROR = 0x0202
TAG_GENERIC_ERROR = 0x0203

VER_TYPE = 0x11
PPPOE_HEADER = struct.Struct("!BBHH")


class CodecError(ValueError):
    """A frame that cannot be decoded; str() is a short reason."""


@dataclass(frozen=True, slots=True)
class L2Header:
    """Ethernet addresses and VLAN tags of a frame. An untagged frame has
    s_vid = c_vid = 0; a single-tagged one has only s_vid (as the data plane's
    line_map keys it)."""
    dst: bytes
    src: bytes
    s_vid: int = 0
    c_vid: int = 0
    s_tpid: int = ETH_P_VLAN

    def reply_header(self, src: bytes, dst: bytes | None = None) -> "L2Header":
        """The same line, the other direction."""
        return L2Header(dst=self.src if dst is None else dst, src=src, s_vid=self.s_vid,
                        c_vid=self.c_vid, s_tpid=self.s_tpid)

    def encode(self, ethertype: int) -> bytes:
        if self.s_vid and self.c_vid:
            return (self.dst + self.src
                    + struct.pack("!HHHHH", self.s_tpid, self.s_vid, ETH_P_VLAN, self.c_vid, ethertype))
        if self.s_vid:
            return self.dst + self.src + struct.pack("!HHH", self.s_tpid, self.s_vid, ethertype)
        return self.dst + self.src + struct.pack("!H", ethertype)


def parse_l2(frame: bytes) -> tuple[L2Header, int, int]:
    """(header, ethertype, payload offset). Up to two VLAN tags; VLAN ids
    keep only their 12 VID bits (PCP/DEI are not part of a line's identity)."""
    if len(frame) < 14:
        raise CodecError("short ethernet")
    etype = (frame[12] << 8) | frame[13]
    off = 14
    s_vid = c_vid = 0
    s_tpid = ETH_P_VLAN
    if etype in (ETH_P_VLAN, ETH_P_QINQ):
        if len(frame) < 18:
            raise CodecError("short vlan")
        s_tpid = etype
        s_vid = ((frame[14] << 8) | frame[15]) & 0x0FFF
        etype = (frame[16] << 8) | frame[17]
        off = 18
        if etype == ETH_P_VLAN:
            if len(frame) < 22:
                raise CodecError("short vlan")
            c_vid = ((frame[18] << 8) | frame[19]) & 0x0FFF
            etype = (frame[20] << 8) | frame[21]
            off = 22
        if etype in (ETH_P_VLAN, ETH_P_QINQ):
            raise CodecError("more than two vlan tags")
    return L2Header(frame[0:6], frame[6:12], s_vid, c_vid, s_tpid), etype, off


@dataclass(slots=True)
class DiscoveryPacket:
    code: int
    session_id: int
    tags: list[tuple[int, bytes]] = field(default_factory=list)

    def tag(self, tag_type: int) -> bytes | None:
        """The first tag of a type (RFC 2516: a tag appears once unless
        stated otherwise; Service-Name may repeat only in PADO)."""
        for t, v in self.tags:
            if t == tag_type:
                return v
        return None

    def count(self, tag_type: int) -> int:
        return sum(1 for t, _ in self.tags if t == tag_type)

    def encode(self) -> bytes:
        body = b"".join(struct.pack("!HH", t, len(v)) + v for t, v in self.tags)
        return PPPOE_HEADER.pack(VER_TYPE, self.code, self.session_id, len(body)) + body


def parse_discovery(data: bytes) -> DiscoveryPacket:
    """A PPPoE discovery packet (after the L2 header). Trailing bytes past
    the PPPoE length are Ethernet padding and are ignored."""
    if len(data) < 6:
        raise CodecError("short pppoe header")
    ver_type, code, sid, length = PPPOE_HEADER.unpack_from(data)
    if ver_type != VER_TYPE:
        raise CodecError("bad pppoe version/type")
    if 6 + length > len(data):
        raise CodecError("pppoe length beyond frame")
    tags: list[tuple[int, bytes]] = []
    off, end = 6, 6 + length
    while off < end:
        if off + 4 > end:
            raise CodecError("truncated tag header")
        t, n = struct.unpack_from("!HH", data, off)
        off += 4
        if off + n > end:
            raise CodecError("tag length beyond payload")
        if t == TAG_END_OF_LIST:
            break
        tags.append((t, bytes(data[off:off + n])))
        off += n
    return DiscoveryPacket(code, sid, tags)


def parse_session(data: bytes) -> tuple[int, int, bytes]:
    """(session id, PPP protocol, PPP information) of a PPPoE session packet."""
    if len(data) < 8:
        raise CodecError("short pppoe session")
    ver_type, code, sid, length = PPPOE_HEADER.unpack_from(data)
    if ver_type != VER_TYPE or code != 0:
        raise CodecError("bad pppoe session header")
    if length < 2 or 6 + length > len(data):
        raise CodecError("pppoe length beyond frame")
    proto = (data[6] << 8) | data[7]
    return sid, proto, bytes(data[8:6 + length])


def encode_session(session_id: int, protocol: int, info: bytes) -> bytes:
    return PPPOE_HEADER.pack(VER_TYPE, 0, session_id, len(info) + 2) + struct.pack("!H", protocol) + info


def session_frame(l2: L2Header, session_id: int, protocol: int, info: bytes) -> bytes:
    """A whole PPPoE session frame toward a subscriber."""
    return l2.encode(ETH_P_PPPOE_SESS) + encode_session(session_id, protocol, info)


def discovery_frame(l2: L2Header, pkt: DiscoveryPacket) -> bytes:
    return l2.encode(ETH_P_PPPOE_DISC) + pkt.encode()


def mac_str(mac: bytes) -> str:
    return mac.hex(":")


def mac_bytes(mac: str) -> bytes:
    b = bytes(int(x, 16) for x in mac.split(":"))
    if len(b) != 6:
        raise ValueError(f"bad MAC address {mac!r}")
    return b

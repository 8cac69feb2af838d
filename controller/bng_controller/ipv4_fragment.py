"""IPv4 fragmentation (RFC 791 3.2, RFC 815's view of offsets), for the
downstream packets without DF that are larger than their session's MRU.

A router forwarding such a packet onto a smaller link fragments it; the
data plane cannot, so it punts them (PACKET_TOO_BIG) and the controller
sends the fragments into the session. Bytes in, bytes out: no scapy on the
controller's packet path.
"""
from __future__ import annotations

import struct

from .icmp import ParseError, checksum, ipv4_lengths

IPV4_DF = 0x4000
IPV4_MF = 0x2000
IPV4_OFFSET_MASK = 0x1FFF
_OPT_END = 0
_OPT_NOP = 1
_OPT_COPIED = 0x80          # copied into every fragment (RFC 791 3.1, option type)


def dont_fragment(pkt: bytes) -> bool:
    """Whether the header's DF flag is set."""
    if len(pkt) < 20:
        raise ParseError("short ipv4 header")
    return bool(struct.unpack_from("!H", pkt, 6)[0] & IPV4_DF)


def _later_options(options: bytes) -> bytes:
    """The options a fragment after the first carries: those with the
    copied flag, padded to a whole word."""
    out = bytearray()
    i = 0
    while i < len(options):
        kind = options[i]
        if kind == _OPT_END:
            break
        if kind == _OPT_NOP:
            i += 1
            continue
        if i + 1 >= len(options) or options[i + 1] < 2 or i + options[i + 1] > len(options):
            raise ParseError("bad ipv4 option length")
        if kind & _OPT_COPIED:
            out += options[i:i + options[i + 1]]
        i += options[i + 1]
    out += bytes(-len(out) % 4)
    return bytes(out)


def fragment(pkt: bytes, mtu: int, ttl_decrement: int = 1) -> list[bytes]:
    """The fragments of `pkt`, none longer than `mtu` bytes, TTL lowered by
    `ttl_decrement` as forwarding does. Each fragment's data but the last
    is a multiple of 8 bytes; the offsets add to the packet's own, so a
    fragment is fragmented again correctly, and the last keeps the
    packet's MF. A packet that fits comes back alone (with its TTL
    lowered). Raises ParseError for a packet that is not sound IPv4 or
    whose header leaves no 8 data bytes within `mtu`."""
    ihl, total = ipv4_lengths(pkt)
    if pkt[8] <= ttl_decrement:
        raise ParseError("ttl expires here")
    flags_off = struct.unpack_from("!H", pkt, 6)[0]
    base_off = (flags_off & IPV4_OFFSET_MASK) * 8
    last_mf = flags_off & IPV4_MF
    header, data = bytearray(pkt[:ihl]), pkt[ihl:total]
    header[8] -= ttl_decrement
    if total <= mtu:
        return [_finish(header, data, flags_off)]
    later = bytearray(header[:20]) + _later_options(bytes(header[20:]))
    later[0] = 0x40 | len(later) // 4
    out = []
    pos = 0
    while pos < len(data):
        h = header if pos == 0 else later
        room = (mtu - len(h)) & ~7
        if room <= 0:
            raise ParseError(f"mtu {mtu} leaves no room past a {len(h)}-byte header")
        chunk = data[pos:pos + room]
        more = IPV4_MF if pos + len(chunk) < len(data) else last_mf
        off = (base_off + pos) // 8
        if off > IPV4_OFFSET_MASK:
            raise ParseError("fragment offset out of range")
        out.append(_finish(h, chunk, (flags_off & IPV4_DF) | more | off))
        pos += len(chunk)
    return out


def _finish(header: bytearray, data: bytes, flags_off: int) -> bytes:
    h = bytearray(header)
    struct.pack_into("!HHH", h, 2, len(h) + len(data), struct.unpack_from("!H", h, 4)[0], flags_off)
    h[10:12] = b"\0\0"
    h[10:12] = struct.pack("!H", checksum(bytes(h)))
    return bytes(h) + data

"""IPv4 and ICMP as the BNG itself speaks them: echo replies from its own
addresses, Time Exceeded for packets the data plane punted with TTL 1, and
Fragmentation Needed for packets larger than their session's MRU.

Built on bytes: the replies are few (punted, policed) but must be exact,
and scapy does not belong on a controller's packet path.
"""
from __future__ import annotations

import ipaddress
import struct

IPPROTO_ICMP = 1
ICMP_ECHO_REPLY = 0
ICMP_DEST_UNREACH = 3
ICMP_FRAG_NEEDED = 4                 # code of ICMP_DEST_UNREACH (RFC 1191)
ICMP_ECHO_REQUEST = 8
ICMP_TIME_EXCEEDED = 11

IPv4 = ipaddress.IPv4Address


class ParseError(ValueError):
    pass


def checksum(data: bytes) -> int:
    """RFC 1071 ones' complement sum."""
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def ipv4_header(src: IPv4, dst: IPv4, proto: int, payload_len: int, ttl: int = 64, ident: int = 0) -> bytes:
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + payload_len, ident, 0x4000, ttl, proto, 0,
                    src.packed, dst.packed)
    return h[:10] + struct.pack("!H", checksum(h)) + h[12:]


def ipv4_lengths(pkt: bytes) -> tuple[int, int]:
    """(header length, total length) of a sound IPv4 packet: version 4, a
    header of at least 20 bytes, a total length within the bytes given."""
    if len(pkt) < 20 or pkt[0] >> 4 != 4:
        raise ParseError("not ipv4")
    ihl = (pkt[0] & 0x0F) * 4
    total = struct.unpack_from("!H", pkt, 2)[0]
    if ihl < 20 or total < ihl or total > len(pkt):
        raise ParseError("bad ipv4 lengths")
    return ihl, total


def parse_ipv4(pkt: bytes) -> tuple[IPv4, IPv4, int, int, bytes]:
    """(src, dst, protocol, ttl, payload), options skipped; the payload is
    cut at the header's total length."""
    ihl, total = ipv4_lengths(pkt)
    return IPv4(pkt[12:16]), IPv4(pkt[16:20]), pkt[9], pkt[8], pkt[ihl:total]


def echo_reply(pkt: bytes, our_addresses: set[IPv4]) -> bytes | None:
    """The IPv4 echo reply to an echo request for one of our addresses."""
    src, dst, proto, _, payload = parse_ipv4(pkt)
    if proto != IPPROTO_ICMP or dst not in our_addresses or len(payload) < 8 \
            or payload[0] != ICMP_ECHO_REQUEST or checksum(payload) != 0:
        return None
    body = bytes([ICMP_ECHO_REPLY, 0, 0, 0]) + payload[4:]
    icmp = body[:2] + struct.pack("!H", checksum(body)) + body[4:]
    return ipv4_header(dst, src, IPPROTO_ICMP, len(icmp)) + icmp


def time_exceeded(pkt: bytes, our_address: IPv4) -> bytes | None:
    """ICMP Time Exceeded (TTL) for a packet, quoting its header and 8
    bytes (RFC 792); None for packets that must not get ICMP errors."""
    return _error(pkt, our_address, ICMP_TIME_EXCEEDED, 0, b"\0" * 4)


def frag_needed(pkt: bytes, our_address: IPv4, mtu: int) -> bytes | None:
    """ICMP Fragmentation Needed and DF Set with the next-hop MTU (RFC
    1191 4), so that the sender's path MTU discovery learns the session's
    MRU; None for packets that must not get ICMP errors."""
    return _error(pkt, our_address, ICMP_DEST_UNREACH, ICMP_FRAG_NEEDED, struct.pack("!HH", 0, mtu))


def _error(pkt: bytes, our_address: IPv4, icmp_type: int, code: int, rest: bytes) -> bytes | None:
    """An ICMP error about `pkt` from `our_address` to its sender: `rest`
    is the type's second word, then the header and 8 bytes quoted."""
    src, dst, proto, _, payload = parse_ipv4(pkt)
    if src.is_multicast or src.is_unspecified or dst.is_multicast or src == IPv4("255.255.255.255"):
        return None
    if proto == IPPROTO_ICMP and payload and payload[0] not in (ICMP_ECHO_REQUEST, ICMP_ECHO_REPLY):
        return None                      # never an error about an error (RFC 1122 3.2.2)
    if struct.unpack_from("!H", pkt, 6)[0] & 0x1FFF:
        return None                      # only about a first fragment (RFC 1122 3.2.2)
    ihl = (pkt[0] & 0x0F) * 4
    quote = pkt[:ihl + 8]
    body = bytes([icmp_type, code, 0, 0]) + rest + quote
    icmp = body[:2] + struct.pack("!H", checksum(body)) + body[4:]
    return ipv4_header(our_address, src, IPPROTO_ICMP, len(icmp)) + icmp

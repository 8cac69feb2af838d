"""PPP control packets and configuration options (RFC 1661 section 5-6).

Every PPP control protocol (LCP, IPCP, IPv6CP, PAP, CHAP) shares the
code/identifier/length header; option-negotiating ones share the
type/length/value option list. Decoding is strict about lengths, so a
malformed packet is a `CodecError` (counted and dropped by the caller, per
RFC 1661: "silently discarded").
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

PPP_LCP = 0xC021
PPP_PAP = 0xC023
PPP_CHAP = 0xC223
PPP_IPCP = 0x8021
PPP_IPV6CP = 0x8057
PPP_IPV4 = 0x0021
PPP_IPV6 = 0x0057

PROTOCOL_NAMES = {PPP_LCP: "LCP", PPP_PAP: "PAP", PPP_CHAP: "CHAP", PPP_IPCP: "IPCP",
                  PPP_IPV6CP: "IPv6CP", PPP_IPV4: "IPv4", PPP_IPV6: "IPv6"}

# Codes shared by LCP and the NCPs (RFC 1661 section 5)
CONF_REQ = 1
CONF_ACK = 2
CONF_NAK = 3
CONF_REJ = 4
TERM_REQ = 5
TERM_ACK = 6
CODE_REJ = 7
# LCP only
PROTO_REJ = 8
ECHO_REQ = 9
ECHO_REPLY = 10
DISCARD_REQ = 11
IDENTIFICATION = 12     # RFC 1570
TIME_REMAINING = 13     # RFC 1570

CODE_NAMES = {CONF_REQ: "Configure-Request", CONF_ACK: "Configure-Ack", CONF_NAK: "Configure-Nak",
              CONF_REJ: "Configure-Reject", TERM_REQ: "Terminate-Request", TERM_ACK: "Terminate-Ack",
              CODE_REJ: "Code-Reject", PROTO_REJ: "Protocol-Reject", ECHO_REQ: "Echo-Request",
              ECHO_REPLY: "Echo-Reply", DISCARD_REQ: "Discard-Request"}

HEADER = struct.Struct("!BBH")


class CodecError(ValueError):
    """A malformed PPP packet; str() is a short reason (a counter label)."""


@dataclass(frozen=True, slots=True)
class ControlPacket:
    code: int
    identifier: int
    data: bytes = b""

    def encode(self) -> bytes:
        return HEADER.pack(self.code, self.identifier, 4 + len(self.data)) + self.data


def parse_control(info: bytes) -> ControlPacket:
    """A control packet from the PPP information field. Octets past the
    packet's Length are padding and are dropped (RFC 1661 section 5)."""
    if len(info) < 4:
        raise CodecError("short control packet")
    code, ident, length = HEADER.unpack_from(info)
    if length < 4 or length > len(info):
        raise CodecError("bad control packet length")
    return ControlPacket(code, ident, bytes(info[4:length]))


Option = tuple[int, bytes]


def parse_options(data: bytes) -> list[Option]:
    """Configuration options in order; a length below 2 or past the end is
    malformed (the whole packet is discarded)."""
    out: list[Option] = []
    off = 0
    n = len(data)
    while off < n:
        if off + 2 > n:
            raise CodecError("truncated option")
        t, ln = data[off], data[off + 1]
        if ln < 2 or off + ln > n:
            raise CodecError("bad option length")
        out.append((t, bytes(data[off + 2:off + ln])))
        off += ln
    return out


def encode_options(options: list[Option]) -> bytes:
    return b"".join(bytes((t, len(v) + 2)) + v for t, v in options)


def parse_protocol(frame: bytes) -> tuple[int, bytes]:
    """Protocol and information of a PPP frame without address/control
    (PPPoE and L2TP carry it so; a leading 0xff03 is tolerated)."""
    if len(frame) >= 2 and frame[0] == 0xFF and frame[1] == 0x03:
        frame = frame[2:]
    if len(frame) < 2:
        raise CodecError("short ppp frame")
    return (frame[0] << 8) | frame[1], bytes(frame[2:])

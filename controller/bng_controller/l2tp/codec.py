"""L2TPv2 messages (RFC 2661 sections 3 and 4): header, AVPs, AVP hiding,
and data messages carrying PPP frames.

Decoding is in two steps because hidden AVPs need the tunnel's secret and
the tunnel is only known after the header (and, for a new tunnel, its Host
Name) has been read: `decode_control()` checks the header and the AVP
framing and leaves hidden values hidden; `ControlMessage.unhide(secret)`
reveals what it can (a hidden AVP it cannot reveal stays hidden, and
typed() refuses it). Malformed framing (short header, wrong version, an AVP
shorter than 6 octets or running past the message, a hidden AVP with no
Random Vector before it, the first AVP not a Message Type) is a
`CodecError` whose str() is a short reason, usable as a counter label.

The codec knows which AVPs exist (`AVP_SPECS`) but does not judge them:
`ControlMessage.unknown_mandatory()` names an unrecognised AVP with the M
bit set, and the tunnel layer decides what that tears down (RFC 2661 4.1:
the session for a session message, the tunnel otherwise). Typed values come
from `ControlMessage.get()`, which raises `CodecError` for a value of the
wrong size; the caller looks at the AVP's M bit to decide whether that is
fatal (RFC 2661 7.1).

Encoding goes through `MessageBuilder` (a Message Type AVP first, a Random
Vector inserted before the first hidden AVP) and `encode_control()`, which
puts the header in front of the AVP bytes. The reliable transport keeps
only the AVP bytes and re-packs the header on every (re)transmission, so a
retransmission carries the current Nr (RFC 2661 5.8).
"""
from __future__ import annotations

import hashlib
import os
import struct
from dataclasses import dataclass
from typing import Callable

L2TP_PORT = 1701
VERSION = 2

# ---- header (RFC 2661 3.1) ----
FLAG_T = 0x8000
FLAG_L = 0x4000
FLAG_S = 0x0800
FLAG_O = 0x0200
FLAG_P = 0x0100
VERSION_MASK = 0x000F
CONTROL_FLAGS = FLAG_T | FLAG_L | FLAG_S | VERSION
CONTROL_HEADER = struct.Struct("!HHHHHH")   # flags/ver, length, tunnel, session, Ns, Nr
CONTROL_HEADER_LEN = 12

# ---- message types (RFC 2661 3.2; RFC 5515 for CSUN/CSURQ) ----
SCCRQ = 1
SCCRP = 2
SCCCN = 3
STOPCCN = 4
HELLO = 6
OCRQ = 7
OCRP = 8
OCCN = 9
ICRQ = 10
ICRP = 11
ICCN = 12
CDN = 14
WEN = 15
SLI = 16
CSUN = 28
CSURQ = 29

MESSAGE_NAMES = {SCCRQ: "SCCRQ", SCCRP: "SCCRP", SCCCN: "SCCCN", STOPCCN: "StopCCN", HELLO: "HELLO",
                 OCRQ: "OCRQ", OCRP: "OCRP", OCCN: "OCCN", ICRQ: "ICRQ", ICRP: "ICRP", ICCN: "ICCN",
                 CDN: "CDN", WEN: "WEN", SLI: "SLI", CSUN: "CSUN", CSURQ: "CSURQ"}
TUNNEL_MESSAGES = frozenset({SCCRQ, SCCRP, SCCCN, STOPCCN, HELLO})
SESSION_MESSAGES = frozenset({OCRQ, OCRP, OCCN, ICRQ, ICRP, ICCN, CDN, WEN, SLI, CSUN, CSURQ})

# ---- vendors ----
VENDOR_IETF = 0
VENDOR_BBF = 3561       # Broadband Forum (ex ADSL Forum): RFC 5515 access line AVPs

# ---- IETF AVP attribute types (RFC 2661 4.4, RFC 3145, RFC 5515) ----
MESSAGE_TYPE = 0
RESULT_CODE = 1
PROTOCOL_VERSION = 2
FRAMING_CAPABILITIES = 3
BEARER_CAPABILITIES = 4
TIE_BREAKER = 5
FIRMWARE_REVISION = 6
HOST_NAME = 7
VENDOR_NAME = 8
ASSIGNED_TUNNEL_ID = 9
RECEIVE_WINDOW_SIZE = 10
CHALLENGE = 11
Q931_CAUSE = 12
CHALLENGE_RESPONSE = 13
ASSIGNED_SESSION_ID = 14
CALL_SERIAL_NUMBER = 15
MINIMUM_BPS = 16
MAXIMUM_BPS = 17
BEARER_TYPE = 18
FRAMING_TYPE = 19
CALLED_NUMBER = 21
CALLING_NUMBER = 22
SUB_ADDRESS = 23
TX_CONNECT_SPEED = 24
PHYSICAL_CHANNEL_ID = 25
INITIAL_RECEIVED_LCP_CONFREQ = 26
LAST_SENT_LCP_CONFREQ = 27
LAST_RECEIVED_LCP_CONFREQ = 28
PROXY_AUTHEN_TYPE = 29
PROXY_AUTHEN_NAME = 30
PROXY_AUTHEN_CHALLENGE = 31
PROXY_AUTHEN_ID = 32
PROXY_AUTHEN_RESPONSE = 33
CALL_ERRORS = 34
ACCM = 35
RANDOM_VECTOR = 36
PRIVATE_GROUP_ID = 37
RX_CONNECT_SPEED = 38
SEQUENCING_REQUIRED = 39
PPP_DISCONNECT_CAUSE = 46         # RFC 3145
CONNECT_SPEED_UPDATE = 97         # RFC 5515 (CSUN)
CONNECT_SPEED_UPDATE_ENABLE = 98  # RFC 5515 (ICRQ)

# AVPs each message MUST carry besides its Message Type (RFC 2661 section 6).
# A peer that leaves one out is answered as for a malformed one: the tunnel
# (SCCRQ, SCCRP) or the call (ICRQ, ICCN) is refused; a message that ends
# something anyway (StopCCN, CDN) or asks nothing of us (WEN, SLI) still
# does, and is counted.
REQUIRED_AVPS: dict[int, tuple[int, ...]] = {
    SCCRQ: (PROTOCOL_VERSION, HOST_NAME, FRAMING_CAPABILITIES, ASSIGNED_TUNNEL_ID),
    SCCRP: (PROTOCOL_VERSION, FRAMING_CAPABILITIES, HOST_NAME, ASSIGNED_TUNNEL_ID),
    STOPCCN: (ASSIGNED_TUNNEL_ID, RESULT_CODE),
    OCRQ: (ASSIGNED_SESSION_ID, CALL_SERIAL_NUMBER, MINIMUM_BPS, MAXIMUM_BPS, BEARER_TYPE, FRAMING_TYPE,
           CALLED_NUMBER),
    OCRP: (ASSIGNED_SESSION_ID,),
    OCCN: (TX_CONNECT_SPEED, FRAMING_TYPE),
    ICRQ: (ASSIGNED_SESSION_ID, CALL_SERIAL_NUMBER),
    ICRP: (ASSIGNED_SESSION_ID,),
    ICCN: (TX_CONNECT_SPEED, FRAMING_TYPE),
    CDN: (RESULT_CODE, ASSIGNED_SESSION_ID),
    WEN: (CALL_ERRORS,),
    SLI: (ACCM,),
}

# ---- Broadband Forum AVPs (vendor 3561, RFC 5515 section 3) ----
BBF_AGENT_CIRCUIT_ID = 1
BBF_AGENT_REMOTE_ID = 2
BBF_ACTUAL_RATE_UP = 129
BBF_ACTUAL_RATE_DOWN = 130
BBF_MIN_RATE_UP = 131
BBF_MIN_RATE_DOWN = 132
BBF_ATTAINABLE_RATE_UP = 133
BBF_ATTAINABLE_RATE_DOWN = 134
BBF_MAX_RATE_UP = 135
BBF_MAX_RATE_DOWN = 136
BBF_MIN_RATE_UP_LOW_POWER = 137
BBF_MIN_RATE_DOWN_LOW_POWER = 138
BBF_MAX_INTERLEAVING_DELAY_UP = 139
BBF_ACTUAL_INTERLEAVING_DELAY_UP = 140
BBF_MAX_INTERLEAVING_DELAY_DOWN = 141
BBF_ACTUAL_INTERLEAVING_DELAY_DOWN = 142
BBF_ACCESS_LOOP_ENCAPSULATION = 144
BBF_ANCP_ACCESS_LINE_TYPE = 145
BBF_IWF_SESSION = 254
BBF_RATE_ATTRIBUTES = tuple(range(BBF_ACTUAL_RATE_UP, BBF_ACTUAL_INTERLEAVING_DELAY_DOWN + 1))

# ---- values ----
FRAMING_SYNC = 0x1
FRAMING_ASYNC = 0x2
BEARER_DIGITAL = 0x1
BEARER_ANALOG = 0x2

PROXY_AUTH_TEXT = 1
PROXY_AUTH_CHAP = 2
PROXY_AUTH_PAP = 3
PROXY_AUTH_NONE = 4
PROXY_AUTH_MSCHAPV1 = 5

# StopCCN result codes (RFC 2661 4.4.2)
STOP_CLEAR = 1
STOP_GENERAL_ERROR = 2
STOP_ALREADY_EXISTS = 3
STOP_NOT_AUTHORIZED = 4
STOP_BAD_VERSION = 5
STOP_SHUTTING_DOWN = 6
STOP_FSM_ERROR = 7
# CDN result codes
CDN_LOST_CARRIER = 1
CDN_GENERAL_ERROR = 2
CDN_ADMIN = 3
CDN_NO_FACILITIES_TEMPORARY = 4
CDN_NO_FACILITIES_PERMANENT = 5
CDN_INVALID_DESTINATION = 6
CDN_NO_CARRIER = 7
CDN_BUSY = 8
CDN_NO_DIAL_TONE = 9
CDN_TIMEOUT = 10
CDN_NO_FRAMING = 11
# General error codes
ERR_NONE = 0
ERR_NO_CONTROL_CONNECTION = 1
ERR_BAD_LENGTH = 2
ERR_OUT_OF_RANGE = 3
ERR_NO_RESOURCES = 4
ERR_BAD_SESSION_ID = 5
ERR_VENDOR = 6
ERR_TRY_ANOTHER = 7
ERR_UNKNOWN_MANDATORY_AVP = 8

# RFC 3145 PPP Disconnect Cause direction
DIRECTION_GLOBAL = 0
DIRECTION_AT_PEER = 1
DIRECTION_AT_LOCAL = 2

AVP_M = 0x8000
AVP_H = 0x4000
AVP_RESERVED = 0x3C00
AVP_LENGTH_MASK = 0x03FF
AVP_HEADER = struct.Struct("!HHH")
MAX_AVP_VALUE = AVP_LENGTH_MASK - 6

_U16 = struct.Struct("!H")
_U32 = struct.Struct("!I")


class CodecError(ValueError):
    """A malformed L2TP message; str() is a short reason (a counter label)."""


# ---- typed values ----
@dataclass(frozen=True, slots=True)
class ResultCode:
    """Result Code AVP: result, optional general error code and message."""
    result: int
    error: int | None = None
    message: str = ""

    def encode(self) -> bytes:
        if self.error is None and not self.message:
            return _U16.pack(self.result)
        return struct.pack("!HH", self.result, self.error or 0) + self.message.encode()

    @classmethod
    def decode(cls, v: bytes) -> "ResultCode":
        n = len(v)
        if n == 2:
            return cls(_U16.unpack(v)[0])
        if n < 4:
            raise CodecError("bad result code length")
        r, e = struct.unpack_from("!HH", v)
        return cls(r, e, v[4:].decode("utf-8", "replace"))

    def __str__(self) -> str:
        s = f"{self.result}"
        if self.error is not None:
            s += f"/{self.error}"
        return f"{s} {self.message}" if self.message else s


@dataclass(frozen=True, slots=True)
class Q931Cause:
    """Q.931 Cause Code AVP: cause code, cause message, advisory text."""
    cause: int
    msg: int = 0
    advisory: str = ""

    def encode(self) -> bytes:
        return struct.pack("!HB", self.cause, self.msg) + self.advisory.encode()

    @classmethod
    def decode(cls, v: bytes) -> "Q931Cause":
        if len(v) < 3:
            raise CodecError("bad q931 cause length")
        c, m = struct.unpack_from("!HB", v)
        return cls(c, m, v[3:].decode("utf-8", "replace"))


@dataclass(frozen=True, slots=True)
class PppDisconnectCause:
    """PPP Disconnect Cause Code AVP (RFC 3145): why PPP went down."""
    code: int
    protocol: int = 0
    direction: int = DIRECTION_GLOBAL
    message: str = ""

    def encode(self) -> bytes:
        return struct.pack("!HHB", self.code, self.protocol, self.direction) + self.message.encode()

    @classmethod
    def decode(cls, v: bytes) -> "PppDisconnectCause":
        if len(v) < 5:
            raise CodecError("bad ppp disconnect cause length")
        c, p, d = struct.unpack_from("!HHB", v)
        return cls(c, p, d, v[5:].decode("utf-8", "replace"))


@dataclass(frozen=True, slots=True)
class CallErrors:
    """Call Errors AVP (WEN): cumulative error counters of the call."""
    crc: int = 0
    framing: int = 0
    hardware_overruns: int = 0
    buffer_overruns: int = 0
    timeouts: int = 0
    alignment: int = 0

    _S = struct.Struct("!HIIIIII")

    def encode(self) -> bytes:
        return self._S.pack(0, self.crc, self.framing, self.hardware_overruns, self.buffer_overruns,
                            self.timeouts, self.alignment)

    @classmethod
    def decode(cls, v: bytes) -> "CallErrors":
        if len(v) != 26:
            raise CodecError("bad call errors length")
        return cls(*cls._S.unpack(v)[1:])


@dataclass(frozen=True, slots=True)
class Accm:
    """ACCM AVP (SLI): send and receive async control character maps."""
    send: int = 0xFFFFFFFF
    recv: int = 0xFFFFFFFF

    def encode(self) -> bytes:
        return struct.pack("!HII", 0, self.send, self.recv)

    @classmethod
    def decode(cls, v: bytes) -> "Accm":
        if len(v) != 10:
            raise CodecError("bad accm length")
        _, s, r = struct.unpack("!HII", v)
        return cls(s, r)


def _fixed(n: int, what: str) -> Callable[[bytes], bytes]:
    def dec(v: bytes) -> bytes:
        if len(v) != n:
            raise CodecError(f"bad {what} length")
        return bytes(v)
    return dec


def _dec_u16(v: bytes) -> int:
    if len(v) != 2:
        raise CodecError("bad avp length")
    return (v[0] << 8) | v[1]


def _dec_u32(v: bytes) -> int:
    if len(v) != 4:
        raise CodecError("bad avp length")
    return _U32.unpack(v)[0]


def _dec_str(v: bytes) -> str:
    return v.decode("utf-8", "replace")


def _dec_nonempty_str(v: bytes) -> str:
    if not v:
        raise CodecError("empty string avp")
    return v.decode("utf-8", "replace")


def _dec_bytes(v: bytes) -> bytes:
    return bytes(v)


def _dec_nonempty_bytes(v: bytes) -> bytes:
    if not v:
        raise CodecError("empty avp")
    return bytes(v)


def _dec_empty(v: bytes) -> bool:
    if v:
        raise CodecError("avp should be empty")
    return True


def _dec_version(v: bytes) -> tuple[int, int]:
    if len(v) != 2:
        raise CodecError("bad protocol version length")
    return v[0], v[1]


def _dec_authen_id(v: bytes) -> int:
    if len(v) != 2:
        raise CodecError("bad proxy authen id length")
    return v[1]            # the high octet is reserved (MUST be 0), ignored


def _dec_nonzero_u16(v: bytes) -> int:
    x = _dec_u16(v)
    if x == 0:
        raise CodecError("zero id")
    return x


def _enc_str(x: str | bytes) -> bytes:
    return x.encode() if isinstance(x, str) else bytes(x)


KINDS: dict[str, tuple[Callable[[object], bytes], Callable[[bytes], object]]] = {
    "u16": (lambda x: _U16.pack(x), _dec_u16),
    "id16": (lambda x: _U16.pack(x), _dec_nonzero_u16),
    "u32": (lambda x: _U32.pack(x), _dec_u32),
    "u64": (lambda x: x if isinstance(x, bytes) else struct.pack("!Q", x), _fixed(8, "tie breaker")),
    "str": (_enc_str, _dec_str),
    "name": (_enc_str, _dec_nonempty_str),
    "bytes": (bytes, _dec_bytes),
    "challenge": (bytes, _dec_nonempty_bytes),
    "digest": (bytes, _fixed(16, "challenge response")),
    "empty": (lambda x: b"", _dec_empty),
    "version": (lambda x: bytes(x), _dec_version),
    "authen_id": (lambda x: _U16.pack(x & 0xFF), _dec_authen_id),
    "result": (lambda x: x.encode(), ResultCode.decode),
    "q931": (lambda x: x.encode(), Q931Cause.decode),
    "ppp_cause": (lambda x: x.encode(), PppDisconnectCause.decode),
    "call_errors": (lambda x: x.encode(), CallErrors.decode),
    "accm": (lambda x: x.encode(), Accm.decode),
    "ale": (bytes, _fixed(3, "access loop encapsulation")),
}


@dataclass(frozen=True, slots=True)
class AvpSpec:
    name: str
    kind: str              # a key of KINDS
    mandatory: bool        # the M bit we send
    hideable: bool         # RFC: "may be hidden"


def _s(name: str, kind: str, m: bool, h: bool) -> AvpSpec:
    return AvpSpec(name, kind, m, h)


AVP_SPECS: dict[tuple[int, int], AvpSpec] = {
    (0, MESSAGE_TYPE): _s("Message Type", "u16", True, False),
    (0, RESULT_CODE): _s("Result Code", "result", True, False),
    (0, PROTOCOL_VERSION): _s("Protocol Version", "version", True, False),
    (0, FRAMING_CAPABILITIES): _s("Framing Capabilities", "u32", True, True),
    (0, BEARER_CAPABILITIES): _s("Bearer Capabilities", "u32", True, True),
    (0, TIE_BREAKER): _s("Tie Breaker", "u64", False, False),
    (0, FIRMWARE_REVISION): _s("Firmware Revision", "u16", False, True),
    (0, HOST_NAME): _s("Host Name", "name", True, False),
    (0, VENDOR_NAME): _s("Vendor Name", "str", False, True),
    (0, ASSIGNED_TUNNEL_ID): _s("Assigned Tunnel ID", "id16", True, True),
    (0, RECEIVE_WINDOW_SIZE): _s("Receive Window Size", "id16", True, False),
    (0, CHALLENGE): _s("Challenge", "challenge", True, True),
    (0, Q931_CAUSE): _s("Q.931 Cause Code", "q931", True, False),
    (0, CHALLENGE_RESPONSE): _s("Challenge Response", "digest", True, True),
    (0, ASSIGNED_SESSION_ID): _s("Assigned Session ID", "id16", True, True),
    (0, CALL_SERIAL_NUMBER): _s("Call Serial Number", "u32", True, True),
    (0, MINIMUM_BPS): _s("Minimum BPS", "u32", True, True),
    (0, MAXIMUM_BPS): _s("Maximum BPS", "u32", True, True),
    (0, BEARER_TYPE): _s("Bearer Type", "u32", True, True),
    (0, FRAMING_TYPE): _s("Framing Type", "u32", True, True),
    (0, CALLED_NUMBER): _s("Called Number", "str", True, True),
    (0, CALLING_NUMBER): _s("Calling Number", "str", True, True),
    (0, SUB_ADDRESS): _s("Sub-Address", "str", True, True),
    (0, TX_CONNECT_SPEED): _s("Tx Connect Speed", "u32", True, True),
    (0, PHYSICAL_CHANNEL_ID): _s("Physical Channel ID", "u32", False, True),
    (0, INITIAL_RECEIVED_LCP_CONFREQ): _s("Initial Received LCP CONFREQ", "bytes", False, True),
    (0, LAST_SENT_LCP_CONFREQ): _s("Last Sent LCP CONFREQ", "bytes", False, True),
    (0, LAST_RECEIVED_LCP_CONFREQ): _s("Last Received LCP CONFREQ", "bytes", False, True),
    (0, PROXY_AUTHEN_TYPE): _s("Proxy Authen Type", "u16", False, True),
    (0, PROXY_AUTHEN_NAME): _s("Proxy Authen Name", "bytes", False, True),
    (0, PROXY_AUTHEN_CHALLENGE): _s("Proxy Authen Challenge", "bytes", False, True),
    (0, PROXY_AUTHEN_ID): _s("Proxy Authen ID", "authen_id", False, True),
    (0, PROXY_AUTHEN_RESPONSE): _s("Proxy Authen Response", "bytes", False, True),
    (0, CALL_ERRORS): _s("Call Errors", "call_errors", True, True),
    (0, ACCM): _s("ACCM", "accm", True, True),
    (0, RANDOM_VECTOR): _s("Random Vector", "bytes", True, False),
    (0, PRIVATE_GROUP_ID): _s("Private Group ID", "bytes", False, True),
    (0, RX_CONNECT_SPEED): _s("Rx Connect Speed", "u32", False, True),
    (0, SEQUENCING_REQUIRED): _s("Sequencing Required", "empty", True, False),
    (0, PPP_DISCONNECT_CAUSE): _s("PPP Disconnect Cause Code", "ppp_cause", False, False),
    (0, CONNECT_SPEED_UPDATE): _s("Connect Speed Update", "bytes", False, False),
    (0, CONNECT_SPEED_UPDATE_ENABLE): _s("Connect Speed Update Enable", "empty", False, False),
    (VENDOR_BBF, BBF_AGENT_CIRCUIT_ID): _s("Agent-Circuit-Id", "str", False, True),
    (VENDOR_BBF, BBF_AGENT_REMOTE_ID): _s("Agent-Remote-Id", "str", False, True),
    (VENDOR_BBF, BBF_ACCESS_LOOP_ENCAPSULATION): _s("Access-Loop-Encapsulation", "ale", False, True),
    (VENDOR_BBF, BBF_ANCP_ACCESS_LINE_TYPE): _s("ANCP Access Line Type", "u32", False, True),
    (VENDOR_BBF, BBF_IWF_SESSION): _s("IWF-Session", "u32", False, True),
}
for _a, _n in zip(BBF_RATE_ATTRIBUTES,
                  ("Actual-Data-Rate-Upstream", "Actual-Data-Rate-Downstream",
                   "Minimum-Data-Rate-Upstream", "Minimum-Data-Rate-Downstream",
                   "Attainable-Data-Rate-Upstream", "Attainable-Data-Rate-Downstream",
                   "Maximum-Data-Rate-Upstream", "Maximum-Data-Rate-Downstream",
                   "Minimum-Data-Rate-Upstream-Low-Power", "Minimum-Data-Rate-Downstream-Low-Power",
                   "Maximum-Interleaving-Delay-Upstream", "Actual-Interleaving-Delay-Upstream",
                   "Maximum-Interleaving-Delay-Downstream", "Actual-Interleaving-Delay-Downstream")):
    AVP_SPECS[(VENDOR_BBF, _a)] = _s(_n, "u32", False, True)
del _a, _n
_REVEALED = 0x10000            # Avp.flags: a hidden value has been revealed
# (vendor << 16 | attribute) -> value decoder / (encoder, M bit, may be hidden)
_DECODERS = {(v << 16) | a: KINDS[s.kind][1] for (v, a), s in AVP_SPECS.items()}
_ENCODERS = {(v << 16) | a: (KINDS[s.kind][0], s.mandatory, s.hideable)
             for (v, a), s in AVP_SPECS.items()}


def avp_key(vendor: int, attr: int) -> int:
    return (vendor << 16) | attr


def hide_keys(pairs) -> frozenset[int]:
    """`MessageBuilder`'s `hide` from (vendor, attribute) pairs or bare
    attribute numbers (vendor 0)."""
    return frozenset(p if isinstance(p, int) else avp_key(*p) for p in pairs)


def avp_label(vendor: int, attr: int) -> str:
    spec = AVP_SPECS.get((vendor, attr))
    if spec is not None:
        return spec.name
    return f"avp {vendor}:{attr}" if vendor else f"avp {attr}"


# ---- AVPs ----
class Avp:
    """One AVP as received. `value` is the clear value once revealed;
    `hidden` records that it arrived hidden. `flags` is the AVP's first
    16-bit word (M, H, reserved bits, length)."""
    __slots__ = ("vendor", "attr", "value", "flags")

    def __init__(self, vendor: int, attr: int, value: bytes, flags: int = AVP_M):
        self.vendor = vendor
        self.attr = attr
        self.value = value
        self.flags = flags

    @classmethod
    def make(cls, vendor: int, attr: int, value: bytes, mandatory: bool = True, hidden: bool = False,
             reserved: bool = False) -> "Avp":
        return cls(vendor, attr, value, (AVP_M if mandatory else 0) | (AVP_H if hidden else 0)
                   | (0x0400 if reserved else 0))

    @property
    def mandatory(self) -> bool:
        return self.flags & AVP_M != 0

    @property
    def hidden(self) -> bool:
        return self.flags & AVP_H != 0

    @property
    def reserved(self) -> bool:
        """A reserved bit was set: the AVP counts as unrecognised (RFC 2661 4.1)."""
        return self.flags & AVP_RESERVED != 0

    @property
    def revealed(self) -> bool:
        return self.flags & (AVP_H | _REVEALED) != AVP_H

    @property
    def known(self) -> bool:
        return self.flags & AVP_RESERVED == 0 and ((self.vendor << 16) | self.attr) in _DECODERS

    def typed(self) -> object:
        """The value decoded per its spec (raw bytes for an unknown AVP);
        CodecError if malformed or still hidden."""
        dec = _DECODERS.get((self.vendor << 16) | self.attr)
        if dec is None:
            return bytes(self.value)
        if self.flags & (AVP_H | _REVEALED) == AVP_H:
            raise CodecError("hidden avp not revealed")
        return dec(self.value)

    def __repr__(self) -> str:
        flags = ("M" if self.mandatory else "") + ("H" if self.hidden else "")
        name = avp_label(self.vendor, self.attr) + ("," + flags if flags else "")
        return f"Avp({name}, {bytes(self.value)!r})"


def encode_avp(attr: int, value: bytes, mandatory: bool = True, vendor: int = 0,
               hidden: bool = False) -> bytes:
    n = 6 + len(value)
    if n > AVP_LENGTH_MASK:
        raise ValueError(f"{avp_label(vendor, attr)}: value too long ({len(value)} octets)")
    flags = (AVP_M if mandatory else 0) | (AVP_H if hidden else 0) | n
    return AVP_HEADER.pack(flags, vendor, attr) + value


def _md5(*parts: bytes) -> bytes:
    h = hashlib.md5()
    for p in parts:
        h.update(p)
    return h.digest()


def _xor(a: bytes, b: bytes) -> bytes:
    """a XOR the first len(a) octets of b."""
    n = len(a)
    return (int.from_bytes(a, "big") ^ int.from_bytes(b[:n], "big")).to_bytes(n, "big")


def hide_value(attr: int, value: bytes, secret: bytes, rv: bytes, pad: bytes = b"") -> bytes:
    """RFC 2661 4.3: the Hidden AVP Subformat (original length, value,
    padding) XORed with MD5(type + secret + RV), then MD5(secret + c(i-1))."""
    sub = _U16.pack(len(value)) + value + pad
    out = bytearray()
    b = _md5(_U16.pack(attr), secret, rv)
    for i in range(0, len(sub), 16):
        c = _xor(sub[i:i + 16], b)
        out += c
        b = _md5(secret, c)
    return bytes(out)


def unhide_value(attr: int, hidden: bytes, secret: bytes, rv: bytes) -> bytes:
    """The inverse of `hide_value`; CodecError if the recovered length does
    not fit (a wrong secret or a corrupted AVP)."""
    out = bytearray()
    b = _md5(_U16.pack(attr), secret, rv)
    for i in range(0, len(hidden), 16):
        c = hidden[i:i + 16]
        out += _xor(c, b)
        b = _md5(secret, c)
    if len(out) < 2:
        raise CodecError("short hidden avp")
    n = (out[0] << 8) | out[1]
    if n > len(out) - 2:
        raise CodecError("bad hidden avp length")
    return bytes(out[2:2 + n])


# ---- control messages ----
class ControlMessage:
    """A decoded control message. `msg_type` is None for a ZLB (an
    acknowledgement without AVPs)."""
    __slots__ = ("tunnel_id", "session_id", "ns", "nr", "msg_type", "type_mandatory", "avps",
                 "has_hidden", "_index")

    def __init__(self, tunnel_id: int, session_id: int, ns: int, nr: int, msg_type: int | None,
                 avps: list[Avp], type_mandatory: bool = True, has_hidden: bool = False):
        self.tunnel_id = tunnel_id
        self.session_id = session_id
        self.ns = ns
        self.nr = nr
        self.msg_type = msg_type
        self.type_mandatory = type_mandatory
        self.avps = avps
        self.has_hidden = has_hidden
        self._index: dict[int, Avp] | None = None

    @property
    def is_zlb(self) -> bool:
        return self.msg_type is None

    @property
    def name(self) -> str:
        if self.msg_type is None:
            return "ZLB"
        return MESSAGE_NAMES.get(self.msg_type, f"type {self.msg_type}")

    def find(self, attr: int, vendor: int = 0) -> Avp | None:
        """The first AVP of this type (RFC 2661 defines no repeated AVPs
        except Random Vector)."""
        idx = self._index
        if idx is None:
            idx = {}
            for a in self.avps:
                idx.setdefault((a.vendor << 16) | a.attr, a)
            self._index = idx
        return idx.get((vendor << 16) | attr)

    def get(self, attr: int, vendor: int = 0, default: object = None) -> object:
        """The typed value of an AVP, `default` if absent; CodecError if
        malformed (the caller consults the AVP's M bit)."""
        a = self.find(attr, vendor)
        return default if a is None else a.typed()

    def missing_required(self) -> int | None:
        """The first AVP type this message must carry (REQUIRED_AVPS) and
        does not, if any."""
        for attr in REQUIRED_AVPS.get(self.msg_type, ()):
            if self.find(attr) is None:
                return attr
        return None

    def unknown_mandatory(self) -> Avp | None:
        """The first unrecognised AVP with the M bit set, if any."""
        for a in self.avps:
            f = a.flags
            if f & AVP_M and (f & AVP_RESERVED or ((a.vendor << 16) | a.attr) not in _DECODERS):
                return a
        return None

    def unhide(self, secret: bytes | None) -> list[str]:
        """Reveal hidden AVPs, each with the Random Vector closest before it
        (RFC 2661 4.3). One that cannot be revealed (no secret, no Random
        Vector, a length that does not fit: a wrong secret) stays hidden and
        its reason is returned: typed() then refuses it, and the tunnel
        judges it by its M bit like any bad AVP, so that an optional one
        costs nothing and the message is still acknowledged."""
        errors: list[str] = []
        if not self.has_hidden:
            return errors
        rv = None
        for a in self.avps:
            if a.vendor == 0 and a.attr == RANDOM_VECTOR:
                rv = a.value
            elif a.flags & (AVP_H | _REVEALED) == AVP_H:
                if not secret:
                    errors.append("hidden avp without secret")
                elif rv is None:                    # decode_control checks this too
                    errors.append("hidden avp without random vector")
                else:
                    try:
                        a.value = unhide_value(a.attr, a.value, secret, rv)
                        a.flags |= _REVEALED
                    except CodecError as e:
                        errors.append(str(e))
        self._index = None
        return errors

    def __repr__(self) -> str:
        return (f"ControlMessage({self.name} t={self.tunnel_id} s={self.session_id} ns={self.ns} "
                f"nr={self.nr} {self.avps!r})")


def decode_header(data: bytes) -> tuple[bool, int, int]:
    """(is_control, tunnel id, session id) of any L2TPv2 message, for
    routing; CodecError for a short message or another version."""
    if len(data) < 6:
        raise CodecError("short header")
    flags = (data[0] << 8) | data[1]
    if flags & VERSION_MASK != VERSION:
        raise CodecError("bad version")
    off = 4 if flags & FLAG_L else 2
    if len(data) < off + 4:
        raise CodecError("short header")
    tid, sid = struct.unpack_from("!HH", data, off)
    return bool(flags & FLAG_T), tid, sid


def decode_control(data: bytes) -> ControlMessage:
    """Header and AVP framing of a control message. Octets past the
    header's Length are ignored; hidden AVPs stay hidden (see `unhide`)."""
    if type(data) is not bytes:
        data = bytes(data)
    n = len(data)
    if n < CONTROL_HEADER_LEN:
        raise CodecError("short control header")
    flags, length, tid, sid, ns, nr = CONTROL_HEADER.unpack_from(data)
    if flags & VERSION_MASK != VERSION:
        raise CodecError("bad version")
    if not flags & FLAG_T:
        raise CodecError("not a control message")
    if flags & (FLAG_L | FLAG_S) != (FLAG_L | FLAG_S):
        raise CodecError("control message without length or sequence")
    if length < CONTROL_HEADER_LEN or length > n:
        raise CodecError("bad message length")
    off = CONTROL_HEADER_LEN
    if flags & FLAG_O:                 # MUST be 0 on control messages; skipped if present
        if length < off + 2:
            raise CodecError("short offset field")
        off += 2 + ((data[off] << 8) | data[off + 1])
        if off > length:
            raise CodecError("offset beyond message")
    avps: list[Avp] = []
    unpack = AVP_HEADER.unpack_from
    rv_seen = False
    has_hidden = False
    while off < length:
        if length - off < 6:
            raise CodecError("truncated avp")
        fl, vendor, attr = unpack(data, off)
        alen = fl & AVP_LENGTH_MASK
        if alen < 6:
            raise CodecError("avp length below 6")
        end = off + alen
        if end > length:
            raise CodecError("avp beyond message")
        if fl & AVP_H:
            if not rv_seen:
                raise CodecError("hidden avp without random vector")
            has_hidden = True
        elif attr == RANDOM_VECTOR and vendor == 0:
            rv_seen = True
        avps.append(Avp(vendor, attr, data[off + 6:end], fl))
        off = end
    if not avps:
        return ControlMessage(tid, sid, ns, nr, None, avps)
    first = avps[0]
    if first.attr != MESSAGE_TYPE or first.vendor != 0 or first.flags & AVP_H or len(first.value) != 2:
        raise CodecError("first avp is not message type")
    v = first.value
    return ControlMessage(tid, sid, ns, nr, (v[0] << 8) | v[1], avps, first.flags & AVP_M != 0, has_hidden)


def encode_control(tunnel_id: int, session_id: int, ns: int, nr: int, body: bytes = b"") -> bytes:
    """A control message: header + AVP bytes (empty body: a ZLB)."""
    return CONTROL_HEADER.pack(CONTROL_FLAGS, CONTROL_HEADER_LEN + len(body), tunnel_id, session_id,
                               ns, nr) + body


_MSG_TYPE_AVP = {t: encode_avp(MESSAGE_TYPE, _U16.pack(t)) for t in range(32)}


class MessageBuilder:
    """The AVP bytes of one control message, Message Type first. AVPs whose
    key (`hide_keys()`) is in `hide` are hidden when a secret exists and
    the AVP may be hidden; a Random Vector goes in front of the first."""
    __slots__ = ("msg_type", "parts", "secret", "hide", "randbytes", "_rv")

    def __init__(self, msg_type: int, secret: bytes | None = None, hide: frozenset[int] = frozenset(),
                 randbytes: Callable[[int], bytes] = os.urandom):
        self.msg_type = msg_type
        mt = _MSG_TYPE_AVP.get(msg_type)
        self.parts = [mt if mt is not None else encode_avp(MESSAGE_TYPE, _U16.pack(msg_type))]
        self.secret = secret
        self.hide = hide if secret else frozenset()
        self.randbytes = randbytes
        self._rv: bytes | None = None

    def add(self, attr: int, value: object, vendor: int = 0, mandatory: bool | None = None,
            hidden: bool | None = None) -> "MessageBuilder":
        """Add an AVP from its typed value (see AVP_SPECS; raw bytes for an
        AVP the codec does not know)."""
        key = (vendor << 16) | attr
        e = _ENCODERS.get(key)
        if e is None:
            raw = bytes(value)           # type: ignore[arg-type]
            m = True if mandatory is None else mandatory
            can_hide = True
        else:
            enc, m, can_hide = e
            raw = enc(value)
            if mandatory is not None:
                m = mandatory
        if hidden is None:
            hidden = key in self.hide
        if hidden and can_hide and self.secret:
            if self._rv is None:
                self._rv = self.randbytes(16)
                self.parts.append(encode_avp(RANDOM_VECTOR, self._rv))
            raw = hide_value(attr, raw, self.secret, self._rv)
            self.parts.append(encode_avp(attr, raw, m, vendor, hidden=True))
            return self
        n = 6 + len(raw)
        if n > AVP_LENGTH_MASK:
            raise ValueError(f"{avp_label(vendor, attr)}: value too long ({len(raw)} octets)")
        self.parts.append(AVP_HEADER.pack((AVP_M | n) if m else n, vendor, attr) + raw)
        return self

    def raw(self, avp_bytes: bytes) -> "MessageBuilder":
        """Append an already encoded AVP (tests: unknown or broken AVPs)."""
        self.parts.append(avp_bytes)
        return self

    def body(self) -> bytes:
        return b"".join(self.parts)


def challenge_response(msg_type: int, secret: bytes, challenge: bytes) -> bytes:
    """RFC 2661 4.4.3 / 5.1.1: CHAP-style MD5(ID + secret + challenge), the
    ID being the Message Type of the message carrying the response."""
    return _md5(bytes((msg_type,)), secret, challenge)


# ---- data messages ----
@dataclass(slots=True)
class DataMessage:
    """A data message: one PPP frame of a session (address/control
    removed, protocol field expanded)."""
    tunnel_id: int
    session_id: int
    protocol: int
    info: bytes
    ns: int | None = None
    nr: int | None = None
    priority: bool = False


def decode_data(data: bytes) -> DataMessage:
    """A data message with its optional Length, Ns/Nr and Offset fields; the
    PPP frame may start with 0xff03 and may use a compressed protocol."""
    n = len(data)
    if n < 6:
        raise CodecError("short data header")
    flags = (data[0] << 8) | data[1]
    if flags & VERSION_MASK != VERSION:
        raise CodecError("bad version")
    if flags & FLAG_T:
        raise CodecError("not a data message")
    off = 2
    end = n
    if flags & FLAG_L:
        length = (data[2] << 8) | data[3]
        if length > n:
            raise CodecError("bad message length")
        end = length
        off = 4
    if end < off + 4:
        raise CodecError("short data header")
    tid, sid = struct.unpack_from("!HH", data, off)
    off += 4
    ns = nr = None
    if flags & FLAG_S:
        if end < off + 4:
            raise CodecError("short data header")
        ns, nr = struct.unpack_from("!HH", data, off)
        off += 4
    if flags & FLAG_O:
        if end < off + 2:
            raise CodecError("short data header")
        off += 2 + ((data[off] << 8) | data[off + 1])
        if off > end:
            raise CodecError("offset beyond message")
    if end - off >= 2 and data[off] == 0xFF and data[off + 1] == 0x03:
        off += 2
    if end - off < 1:
        raise CodecError("short ppp frame")
    if data[off] & 1:                  # RFC 1661 6.5: compressed protocol field
        protocol = data[off]
        off += 1
    else:
        if end - off < 2:
            raise CodecError("short ppp frame")
        protocol = (data[off] << 8) | data[off + 1]
        off += 2
    return DataMessage(tid, sid, protocol, bytes(data[off:end]), ns, nr, bool(flags & FLAG_P))


_DATA_HDR = struct.Struct("!HHH")
_DATA_HDR_SEQ = struct.Struct("!HHHHH")


def encode_data(tunnel_id: int, session_id: int, protocol: int, info: bytes, ns: int | None = None,
                priority: bool = False, address_control: bool = True) -> bytes:
    """A data message as the data plane sends them (no Length, no Offset),
    with Ns when sequencing is on, 0xff03 unless told otherwise."""
    flags = VERSION | (FLAG_P if priority else 0)
    ppp = (b"\xff\x03" if address_control else b"") + _U16.pack(protocol) + info
    if ns is None:
        return _DATA_HDR.pack(flags, tunnel_id, session_id) + ppp
    return _DATA_HDR_SEQ.pack(flags | FLAG_S, tunnel_id, session_id, ns, 0) + ppp

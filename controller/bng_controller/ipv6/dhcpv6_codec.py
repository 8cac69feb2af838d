"""DHCPv6 messages (RFC 8415) as bytes: the client/server header and the
options a prefix-delegating server on a PPP link needs.

A message decodes into `Dhcpv6Message`, whose typed fields are the options
the server acts on (identifiers, IA_PD/IA_NA, ORO, Rapid Commit, ...);
every other option is kept raw in `other` so nothing is lost. Parsing is
strict: a length that overruns its container, a singleton option given
twice or a malformed IA is a `ParseError` (the server drops the message,
as RFC 8415 16 asks for invalid ones). Encoding writes the options in a
fixed order, so `parse(m.encode()) == m` for what the server builds.
"""
from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass, field

from .codec import ParseError

IPv6Address = ipaddress.IPv6Address
IPv6Network = ipaddress.IPv6Network

CLIENT_PORT = 546
SERVER_PORT = 547

# message types (RFC 8415 7.3)
SOLICIT = 1
ADVERTISE = 2
REQUEST = 3
CONFIRM = 4
RENEW = 5
REBIND = 6
REPLY = 7
RELEASE = 8
DECLINE = 9
RECONFIGURE = 10
INFORMATION_REQUEST = 11
RELAY_FORW = 12
RELAY_REPL = 13
MESSAGE_NAMES = {SOLICIT: "solicit", ADVERTISE: "advertise", REQUEST: "request", CONFIRM: "confirm",
                 RENEW: "renew", REBIND: "rebind", REPLY: "reply", RELEASE: "release", DECLINE: "decline",
                 RECONFIGURE: "reconfigure", INFORMATION_REQUEST: "information-request",
                 RELAY_FORW: "relay-forward", RELAY_REPL: "relay-reply"}

# option codes (RFC 8415 21, RFC 3646)
OPT_CLIENTID = 1
OPT_SERVERID = 2
OPT_IA_NA = 3
OPT_IA_TA = 4
OPT_IAADDR = 5
OPT_ORO = 6
OPT_PREFERENCE = 7
OPT_ELAPSED_TIME = 8
OPT_STATUS_CODE = 13
OPT_RAPID_COMMIT = 14
OPT_DNS_SERVERS = 23
OPT_IA_PD = 25
OPT_IAPREFIX = 26

# status codes (RFC 8415 21.13)
SUCCESS = 0
UNSPEC_FAIL = 1
NO_ADDRS_AVAIL = 2
NO_BINDING = 3
NOT_ON_LINK = 4
USE_MULTICAST = 5
NO_PREFIX_AVAIL = 6

DUID_LLT = 1
DUID_LL = 3
HWTYPE_ETHERNET = 1
MAX_DUID = 130                  # type code + 128 octets (RFC 8415 11.1)

Option = tuple[int, bytes]


def duid_ll(mac: bytes) -> bytes:
    """DUID-LL (RFC 8415 11.4): the server's identifier from its MAC; it
    stays the same across restarts, which Renew needs."""
    return struct.pack("!HH", DUID_LL, HWTYPE_ETHERNET) + mac


def encode_options(options: list[Option]) -> bytes:
    out = []
    for code, v in options:
        if len(v) > 0xFFFF:
            raise ValueError("dhcpv6 option too long")
        out.append(struct.pack("!HH", code, len(v)) + v)
    return b"".join(out)


def parse_options(data: bytes) -> list[Option]:
    opts: list[Option] = []
    off = 0
    while off < len(data):
        if off + 4 > len(data):
            raise ParseError("truncated dhcpv6 option")
        code, n = struct.unpack_from("!HH", data, off)
        off += 4
        if off + n > len(data):
            raise ParseError("dhcpv6 option beyond its container")
        opts.append((code, bytes(data[off:off + n])))
        off += n
    return opts


def _single(opts: list[Option], code: int, name: str) -> bytes | None:
    found = [v for c, v in opts if c == code]
    if len(found) > 1:
        raise ParseError(f"duplicate {name}")
    return found[0] if found else None


@dataclass(frozen=True, slots=True)
class StatusCode:
    code: int
    message: str = ""

    def option(self) -> Option:
        return (OPT_STATUS_CODE, struct.pack("!H", self.code) + self.message.encode())

    @classmethod
    def decode(cls, v: bytes) -> "StatusCode":
        if len(v) < 2:
            raise ParseError("short status code")
        try:
            msg = v[2:].decode()
        except UnicodeDecodeError as e:
            raise ParseError("status message not utf-8") from e
        return cls(struct.unpack_from("!H", v)[0], msg)


def _status(opts: list[Option]) -> StatusCode | None:
    v = _single(opts, OPT_STATUS_CODE, "status code")
    return StatusCode.decode(v) if v is not None else None


@dataclass(frozen=True, slots=True)
class IaPrefix:
    """IA Prefix option (RFC 8415 21.22)."""
    prefix: IPv6Network
    preferred: int
    valid: int
    status: StatusCode | None = None

    def option(self) -> Option:
        sub = [self.status.option()] if self.status is not None else []
        return (OPT_IAPREFIX, struct.pack("!IIB16s", self.preferred, self.valid, self.prefix.prefixlen,
                                          self.prefix.network_address.packed) + encode_options(sub))

    @classmethod
    def decode(cls, v: bytes) -> "IaPrefix":
        if len(v) < 25:
            raise ParseError("short ia prefix")
        preferred, valid, plen, raw = struct.unpack_from("!IIB16s", v)
        if plen > 128:
            raise ParseError("bad ia prefix length")
        opts = parse_options(v[25:])
        # host bits of a hint are not ours to keep (RFC 8415 18.2.1 lets
        # clients send just a length: ::/56)
        return cls(IPv6Network((IPv6Address(raw), plen), strict=False), preferred, valid, _status(opts))


@dataclass(frozen=True, slots=True)
class IaAddress:
    """IA Address option (RFC 8415 21.6); the BNG never assigns one, but
    Confirm, Renew and Decline may carry them."""
    address: IPv6Address
    preferred: int
    valid: int
    status: StatusCode | None = None

    def option(self) -> Option:
        sub = [self.status.option()] if self.status is not None else []
        return (OPT_IAADDR, self.address.packed + struct.pack("!II", self.preferred, self.valid)
                + encode_options(sub))

    @classmethod
    def decode(cls, v: bytes) -> "IaAddress":
        if len(v) < 24:
            raise ParseError("short ia address")
        preferred, valid = struct.unpack_from("!II", v, 16)
        return cls(IPv6Address(v[:16]), preferred, valid, _status(parse_options(v[24:])))


@dataclass(frozen=True, slots=True)
class IaPd:
    """Identity Association for Prefix Delegation (RFC 8415 21.21)."""
    iaid: int
    t1: int = 0
    t2: int = 0
    prefixes: tuple[IaPrefix, ...] = ()
    status: StatusCode | None = None

    def option(self) -> Option:
        sub = [p.option() for p in self.prefixes] + ([self.status.option()] if self.status is not None else [])
        return (OPT_IA_PD, struct.pack("!III", self.iaid, self.t1, self.t2) + encode_options(sub))

    @classmethod
    def decode(cls, v: bytes) -> "IaPd":
        if len(v) < 12:
            raise ParseError("short ia_pd")
        iaid, t1, t2 = struct.unpack_from("!III", v)
        opts = parse_options(v[12:])
        return cls(iaid, t1, t2, tuple(IaPrefix.decode(x) for c, x in opts if c == OPT_IAPREFIX), _status(opts))


@dataclass(frozen=True, slots=True)
class IaNa:
    """Identity Association for Non-temporary Addresses (RFC 8415 21.4)."""
    iaid: int
    t1: int = 0
    t2: int = 0
    addresses: tuple[IaAddress, ...] = ()
    status: StatusCode | None = None

    def option(self) -> Option:
        sub = [a.option() for a in self.addresses] + ([self.status.option()] if self.status is not None else [])
        return (OPT_IA_NA, struct.pack("!III", self.iaid, self.t1, self.t2) + encode_options(sub))

    @classmethod
    def decode(cls, v: bytes) -> "IaNa":
        if len(v) < 12:
            raise ParseError("short ia_na")
        iaid, t1, t2 = struct.unpack_from("!III", v)
        opts = parse_options(v[12:])
        return cls(iaid, t1, t2, tuple(IaAddress.decode(x) for c, x in opts if c == OPT_IAADDR), _status(opts))


_TYPED = (OPT_CLIENTID, OPT_SERVERID, OPT_IA_NA, OPT_ORO, OPT_PREFERENCE, OPT_ELAPSED_TIME, OPT_STATUS_CODE,
          OPT_RAPID_COMMIT, OPT_DNS_SERVERS, OPT_IA_PD)


@dataclass(frozen=True, slots=True)
class Dhcpv6Message:
    msg_type: int
    transaction_id: int
    client_id: bytes | None = None
    server_id: bytes | None = None
    ia_na: tuple[IaNa, ...] = ()
    ia_pd: tuple[IaPd, ...] = ()
    oro: tuple[int, ...] | None = None
    preference: int | None = None
    elapsed_time: int | None = None
    status: StatusCode | None = None
    rapid_commit: bool = False
    dns_servers: tuple[IPv6Address, ...] | None = None
    other: tuple[Option, ...] = field(default=())

    @property
    def name(self) -> str:
        return MESSAGE_NAMES.get(self.msg_type, f"type {self.msg_type}")

    def encode(self) -> bytes:
        opts: list[Option] = []
        if self.client_id is not None:
            opts.append((OPT_CLIENTID, self.client_id))
        if self.server_id is not None:
            opts.append((OPT_SERVERID, self.server_id))
        opts += [ia.option() for ia in self.ia_na]
        opts += [ia.option() for ia in self.ia_pd]
        if self.oro is not None:
            opts.append((OPT_ORO, b"".join(struct.pack("!H", c) for c in self.oro)))
        if self.preference is not None:
            opts.append((OPT_PREFERENCE, bytes([self.preference])))
        if self.elapsed_time is not None:
            opts.append((OPT_ELAPSED_TIME, struct.pack("!H", self.elapsed_time)))
        if self.status is not None:
            opts.append(self.status.option())
        if self.rapid_commit:
            opts.append((OPT_RAPID_COMMIT, b""))
        if self.dns_servers is not None:
            opts.append((OPT_DNS_SERVERS, b"".join(a.packed for a in self.dns_servers)))
        opts += list(self.other)
        return struct.pack("!I", (self.msg_type << 24) | self.transaction_id) + encode_options(opts)


def _duid(v: bytes | None, name: str) -> bytes | None:
    if v is not None and not 2 < len(v) <= MAX_DUID:
        raise ParseError(f"bad {name} length")
    return v


def parse_message(data: bytes) -> Dhcpv6Message:
    """A client/server message (not a relay message: no relay agent sits
    on a PPP link)."""
    if len(data) < 4:
        raise ParseError("short dhcpv6 message")
    head = struct.unpack_from("!I", data)[0]
    msg_type = head >> 24
    if msg_type in (RELAY_FORW, RELAY_REPL):
        raise ParseError("relay message")
    opts = parse_options(data[4:])
    oro_v = _single(opts, OPT_ORO, "oro")
    if oro_v is not None and len(oro_v) % 2:
        raise ParseError("odd oro length")
    pref_v = _single(opts, OPT_PREFERENCE, "preference")
    if pref_v is not None and len(pref_v) != 1:
        raise ParseError("bad preference length")
    el_v = _single(opts, OPT_ELAPSED_TIME, "elapsed time")
    if el_v is not None and len(el_v) != 2:
        raise ParseError("bad elapsed time length")
    rc_v = _single(opts, OPT_RAPID_COMMIT, "rapid commit")
    if rc_v is not None and rc_v:
        raise ParseError("rapid commit with data")
    dns_v = _single(opts, OPT_DNS_SERVERS, "dns servers")
    if dns_v is not None and len(dns_v) % 16:
        raise ParseError("bad dns servers length")
    return Dhcpv6Message(
        msg_type=msg_type, transaction_id=head & 0xFFFFFF,
        client_id=_duid(_single(opts, OPT_CLIENTID, "client id"), "client id"),
        server_id=_duid(_single(opts, OPT_SERVERID, "server id"), "server id"),
        ia_na=tuple(IaNa.decode(v) for c, v in opts if c == OPT_IA_NA),
        ia_pd=tuple(IaPd.decode(v) for c, v in opts if c == OPT_IA_PD),
        oro=tuple(struct.unpack(f"!{len(oro_v) // 2}H", oro_v)) if oro_v is not None else None,
        preference=pref_v[0] if pref_v is not None else None,
        elapsed_time=struct.unpack("!H", el_v)[0] if el_v is not None else None,
        status=_status(opts),
        rapid_commit=rc_v is not None,
        dns_servers=tuple(IPv6Address(dns_v[i:i + 16]) for i in range(0, len(dns_v), 16))
        if dns_v is not None else None,
        other=tuple(o for o in opts if o[0] not in _TYPED))

"""The access concentrator's side of PPPoE discovery (RFC 2516 section 5).

Sans-I/O: `PppoeDiscovery.handle()` takes a decoded frame and returns what
to do (send a reply, open a session, tear one down, or drop it with a
reason). Session ids and the data plane are the session manager's; this
module only decides.

Nothing is kept per PADI: the AC-Cookie is an HMAC over the client's MAC
and line plus a coarse timestamp, so a PADI flood costs CPU but no memory,
and a PADR proves the client saw our PADO on that line recently. PADIs are
rate-limited per client MAC and per line with token buckets.
"""
from __future__ import annotations

import hashlib
import hmac
import struct
import time
from dataclasses import dataclass, field
from typing import Callable

from ..aaa.base import LineInfo
from .codec import (BROADCAST, PADI, PADO, PADR, PADS, PADT, TAG_AC_COOKIE, TAG_AC_NAME,
                    TAG_GENERIC_ERROR, TAG_HOST_UNIQ, TAG_PPP_MAX_PAYLOAD, TAG_RELAY_SESSION_ID,
                    TAG_SERVICE_NAME, TAG_SERVICE_NAME_ERROR, TAG_VENDOR_SPECIFIC, DiscoveryPacket,
                    L2Header)

# Broadband Forum (ex DSL Forum) enterprise number, TR-101 vendor tag.
BBF_ENTERPRISE = 3561
BBF_CIRCUIT_ID = 0x01
BBF_REMOTE_ID = 0x02

ETHERNET_MTU_PAYLOAD = 1492    # 1500 - PPPoE 6 - PPP protocol 2 (RFC 2516 section 7)
SERVICE_NOT_OFFERED = b"service not offered"
PADI_MAX_OCTETS = 1484         # RFC 2516 5.1: room left for a relay's Relay-Session-Id
DISCOVERY_MAX_OCTETS = 1500    # a discovery packet (PPPoE header and tags) in one Ethernet frame


def _octets(tags: list[tuple[int, bytes]]) -> int:
    """A discovery packet's size with these tags: PPPoE header and TLVs."""
    return 6 + sum(4 + len(v) for _, v in tags)


@dataclass
class RateLimit:
    rate: float        # tokens per second
    burst: float

    @classmethod
    def parse(cls, value: "str | dict | RateLimit") -> "RateLimit":
        """`"5/s"`, `"5/s burst 10"` or {rate, burst}."""
        if isinstance(value, RateLimit):
            return value
        if isinstance(value, dict):
            return cls(float(value["rate"]), float(value.get("burst", value["rate"])))
        parts = value.replace("/s", "").split()
        rate = float(parts[0])
        burst = float(parts[2]) if len(parts) >= 3 and parts[1] == "burst" else max(1.0, rate)
        return cls(rate, burst)


@dataclass
class DiscoveryConfig:
    ac_name: str = "p4-bng"
    # Service names offered; a PADI/PADR asking for another is refused. The
    # empty name ("any service", RFC 2516 5.1) is always accepted when
    # `accept_any_service` is set.
    service_names: list[str] = field(default_factory=lambda: ["internet"])
    accept_any_service: bool = True
    cookie_lifetime: float = 60.0          # a PADR must follow its PADO within 1-2 lifetimes
    padi_per_mac: RateLimit = field(default_factory=lambda: RateLimit(2.0, 5.0))
    padi_per_line: RateLimit = field(default_factory=lambda: RateLimit(50.0, 100.0))
    max_payload: int = 1500                # RFC 4638: largest PPP payload we grant

    @classmethod
    def from_dict(cls, d: dict) -> "DiscoveryConfig":
        c = cls()
        for k, v in (d or {}).items():
            if k in ("padi_per_mac", "padi_per_line"):
                v = RateLimit.parse(v)
            if not hasattr(c, k):
                raise ValueError(f"pppoe: unknown setting {k!r}")
            setattr(c, k, v)
        return c


@dataclass(frozen=True, slots=True)
class Reply:
    """Send this discovery packet back on the line it came from."""
    packet: DiscoveryPacket


@dataclass(frozen=True, slots=True)
class Drop:
    """Nothing to send; `reason` is a counter label."""
    reason: str


@dataclass(frozen=True, slots=True)
class SessionRequest:
    """A valid PADR: the session manager allocates a session id (or finds
    the one it already gave this PADR) and answers with `pads()`."""
    client_mac: bytes
    line: LineInfo
    l2: L2Header
    service_name: bytes
    host_uniq: bytes | None
    relay_session_id: bytes | None
    max_payload: int                   # PPP payload both sides may use (LCP MRU bound)


@dataclass(frozen=True, slots=True)
class PeerTerminate:
    """A PADT from the client."""
    client_mac: bytes
    session_id: int
    line: LineInfo


Action = Reply | Drop | SessionRequest | PeerTerminate


class TokenBuckets:
    """Token buckets by key, bounded: idle full buckets are forgotten."""

    def __init__(self, limit: RateLimit, max_keys: int = 65536):
        self.limit = limit
        self.max_keys = max_keys
        self._b: dict[object, tuple[float, float]] = {}

    def take(self, key: object, now: float) -> bool:
        tokens, last = self._b.get(key, (self.limit.burst, now))
        tokens = min(self.limit.burst, tokens + (now - last) * self.limit.rate)
        ok = tokens >= 1.0
        self._b[key] = (tokens - 1.0 if ok else tokens, now)
        if len(self._b) > self.max_keys:
            self._prune(now)
        return ok

    def _prune(self, now: float) -> None:
        full_after = self.limit.burst / self.limit.rate if self.limit.rate else float("inf")
        self._b = {k: v for k, v in self._b.items() if now - v[1] < full_after}
        if len(self._b) > self.max_keys:   # all active: keep the newest half
            keep = sorted(self._b.items(), key=lambda kv: kv[1][1])[len(self._b) // 2:]
            self._b = dict(keep)


def parse_bbf_line_tag(value: bytes) -> tuple[str, str]:
    """Agent-Circuit-Id and Agent-Remote-Id from a TR-101 vendor tag
    (enterprise 3561, then sub-options type/len/value); ("", "") if absent."""
    if len(value) < 4 or struct.unpack_from("!I", value)[0] != BBF_ENTERPRISE:
        return "", ""
    circuit = remote = ""
    off = 4
    while off + 2 <= len(value):
        t, n = value[off], value[off + 1]
        v = value[off + 2:off + 2 + n]
        if len(v) != n:
            break
        if t == BBF_CIRCUIT_ID:
            circuit = v.decode("utf-8", "replace")
        elif t == BBF_REMOTE_ID:
            remote = v.decode("utf-8", "replace")
        off += 2 + n
    return circuit, remote


class PppoeDiscovery:
    def __init__(self, config: DiscoveryConfig, our_mac: bytes, secret: bytes,
                 clock: Callable[[], float] = time.monotonic, wallclock: Callable[[], float] = time.time):
        self.cfg = config
        self.our_mac = our_mac
        self._secret = secret
        self._clock = clock
        self._wallclock = wallclock     # cookies survive a controller restart
        self._per_mac = TokenBuckets(config.padi_per_mac)
        self._per_line = TokenBuckets(config.padi_per_line)
        self._services = {s.encode() for s in config.service_names}

    # ---- cookies ----
    def _cookie(self, mac: bytes, line: LineInfo, bucket: int) -> bytes:
        msg = struct.pack("!I6sIHH", bucket, mac, line.port, line.s_vid, line.c_vid)
        return struct.pack("!I", bucket) + hmac.new(self._secret, msg, hashlib.sha256).digest()[:16]

    def make_cookie(self, mac: bytes, line: LineInfo) -> bytes:
        return self._cookie(mac, line, int(self._wallclock() // self.cfg.cookie_lifetime))

    def cookie_valid(self, cookie: bytes | None, mac: bytes, line: LineInfo) -> bool:
        if cookie is None or len(cookie) != 20:
            return False
        bucket = struct.unpack_from("!I", cookie)[0]
        now_bucket = int(self._wallclock() // self.cfg.cookie_lifetime)
        if bucket not in (now_bucket, now_bucket - 1):
            return False
        return hmac.compare_digest(cookie, self._cookie(mac, line, bucket))

    # ---- service names ----
    def _service_ok(self, name: bytes) -> bool:
        return (not name and self.cfg.accept_any_service) or name in self._services

    def _granted_payload(self, pkt: DiscoveryPacket) -> int:
        """RFC 4638: a client asking for more than 1492 gets what it asked,
        up to our maximum; a client that did not ask gets 1492."""
        v = pkt.tag(TAG_PPP_MAX_PAYLOAD)
        if v is None or len(v) != 2:
            return ETHERNET_MTU_PAYLOAD
        asked = struct.unpack("!H", v)[0]
        return max(ETHERNET_MTU_PAYLOAD, min(asked, self.cfg.max_payload))

    def line_info(self, l2: L2Header, port: int, line_id: int, pkt: DiscoveryPacket) -> LineInfo:
        circuit = remote = ""
        v = pkt.tag(TAG_VENDOR_SPECIFIC)
        if v is not None:
            circuit, remote = parse_bbf_line_tag(v)
        return LineInfo(port=port, s_vid=l2.s_vid, c_vid=l2.c_vid, line_id=line_id,
                        circuit_id=circuit, remote_id=remote)

    # ---- the stage ----
    def handle(self, l2: L2Header, pkt: DiscoveryPacket, line: LineInfo) -> Action:
        if l2.src[0] & 1:
            return Drop("multicast source")
        if pkt.code == PADI:
            return self._padi(l2, pkt, line)
        if pkt.code == PADR:
            return self._padr(l2, pkt, line)
        if pkt.code == PADT:
            if l2.dst != self.our_mac:
                return Drop("padt not for us")
            return PeerTerminate(l2.src, pkt.session_id, line)
        return Drop(f"unexpected code 0x{pkt.code:02x}")   # PADO/PADS from a rogue AC

    def _echo_tags(self, pkt: DiscoveryPacket) -> list[tuple[int, bytes]]:
        out = []
        for t in (TAG_HOST_UNIQ, TAG_RELAY_SESSION_ID):
            v = pkt.tag(t)
            if v is not None:
                out.append((t, v))
        return out

    def _padi(self, l2: L2Header, pkt: DiscoveryPacket, line: LineInfo) -> Action:
        if l2.dst != BROADCAST and l2.dst != self.our_mac:
            return Drop("padi not broadcast")
        if pkt.session_id != 0:
            return Drop("padi with session id")
        if pkt.count(TAG_SERVICE_NAME) != 1:
            return Drop("padi without exactly one service-name")
        if _octets(pkt.tags) > PADI_MAX_OCTETS:
            return Drop("padi over 1484 octets")
        now = self._clock()
        # the host's own limit first: PADIs it is refused must not spend the
        # line's tokens, or one flooding host locks its neighbours out
        if not self._per_mac.take(l2.src, now):
            return Drop("padi rate limit (mac)")
        if not self._per_line.take((line.port, line.s_vid, line.c_vid), now):
            return Drop("padi rate limit (line)")
        service = pkt.tag(TAG_SERVICE_NAME) or b""
        if not self._service_ok(service):
            return Drop("padi for a service not offered")   # RFC 2516 5.2: no PADO
        tags: list[tuple[int, bytes]] = [(TAG_AC_NAME, self.cfg.ac_name.encode())]
        tags.append((TAG_SERVICE_NAME, service))
        for s in sorted(self._services - {service}):
            tags.append((TAG_SERVICE_NAME, s))
        tags.append((TAG_AC_COOKIE, self.make_cookie(l2.src, line)))
        tags += self._echo_tags(pkt)
        if pkt.tag(TAG_PPP_MAX_PAYLOAD) is not None:
            tags.append((TAG_PPP_MAX_PAYLOAD, struct.pack("!H", self._granted_payload(pkt))))
        if _octets(tags) > DISCOVERY_MAX_OCTETS:
            return Drop("pado would not fit one frame")    # Host-Uniq may not be cut
        return Reply(DiscoveryPacket(PADO, 0, tags))

    def _padr(self, l2: L2Header, pkt: DiscoveryPacket, line: LineInfo) -> Action:
        if l2.dst != self.our_mac:
            return Drop("padr not for us")
        if pkt.session_id != 0:
            return Drop("padr with session id")
        if not self.cookie_valid(pkt.tag(TAG_AC_COOKIE), l2.src, line):
            return Drop("padr with bad or stale cookie")
        service = pkt.tag(TAG_SERVICE_NAME)
        echoed = self._echo_tags(pkt)
        # The PADS that answers it must fit one frame, and the tags it
        # echoes may not be cut: the PADS that grants it (pads(), counted
        # with a PPP-Max-Payload tag whether or not it gets one), or one
        # that refuses it (a Service-Name-Error, or pads_error() whose text
        # is ours and is cut to fit).
        granted = self._pads_tags(service or b"", echoed, 0xFFFF)
        refused = [(TAG_SERVICE_NAME_ERROR, SERVICE_NOT_OFFERED)] + echoed
        if max(_octets(granted), _octets(refused)) > DISCOVERY_MAX_OCTETS:
            return Drop("padr whose pads would not fit one frame")
        if service is None or pkt.count(TAG_SERVICE_NAME) != 1 or not self._service_ok(service):
            return Reply(DiscoveryPacket(PADS, 0, refused))
        return SessionRequest(client_mac=l2.src, line=line, l2=l2, service_name=service,
                              host_uniq=pkt.tag(TAG_HOST_UNIQ),
                              relay_session_id=pkt.tag(TAG_RELAY_SESSION_ID),
                              max_payload=self._granted_payload(pkt)
                              if pkt.tag(TAG_PPP_MAX_PAYLOAD) is not None else ETHERNET_MTU_PAYLOAD)

    def _pads_tags(self, service: bytes, echoed: list[tuple[int, bytes]],
                   max_payload: int) -> list[tuple[int, bytes]]:
        """The tags of the PADS that grants a session."""
        tags = [(TAG_SERVICE_NAME, service), (TAG_AC_NAME, self.cfg.ac_name.encode()), *echoed]
        if max_payload > ETHERNET_MTU_PAYLOAD:
            tags.append((TAG_PPP_MAX_PAYLOAD, struct.pack("!H", max_payload)))
        return tags

    @staticmethod
    def _req_echo_tags(req: SessionRequest) -> list[tuple[int, bytes]]:
        """_echo_tags of the PADR the request came from (RFC 2516 appendix
        A: Host-Uniq and Relay-Session-Id go back in every response)."""
        echoed = []
        if req.host_uniq is not None:
            echoed.append((TAG_HOST_UNIQ, req.host_uniq))
        if req.relay_session_id is not None:
            echoed.append((TAG_RELAY_SESSION_ID, req.relay_session_id))
        return echoed

    def pads(self, req: SessionRequest, session_id: int) -> DiscoveryPacket:
        return DiscoveryPacket(PADS, session_id,
                               self._pads_tags(req.service_name, self._req_echo_tags(req), req.max_payload))

    def pads_error(self, req: SessionRequest, message: str) -> DiscoveryPacket:
        """A PADS refusing the session (RFC 2516 5.4: session id 0 and an
        error tag), e.g. when no session id or line is left."""
        echoed = self._req_echo_tags(req)
        room = DISCOVERY_MAX_OCTETS - _octets(echoed) - 4       # _padr saw to it that the tags fit
        return DiscoveryPacket(PADS, 0, [(TAG_GENERIC_ERROR, message.encode()[:max(room, 0)])] + echoed)

    @staticmethod
    def padt(session_id: int, reason: str = "", host_uniq: bytes | None = None) -> DiscoveryPacket:
        tags: list[tuple[int, bytes]] = []
        if reason:
            tags.append((TAG_GENERIC_ERROR, reason.encode()))
        if host_uniq is not None:
            tags.append((TAG_HOST_UNIQ, host_uniq))
        return DiscoveryPacket(PADT, session_id, tags)

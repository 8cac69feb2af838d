"""RFC 5176 Dynamic Authorization Server: Disconnect-Request and
CoA-Request from the operator's RADIUS side, answered ACK or NAK.

A request is only acted on when it comes from a listed client and its
Request Authenticator (MD5 over the packet with 16 zero octets in place of
the authenticator, and the secret) and, when present, its
Message-Authenticator verify; anything else is dropped without an answer,
as RFC 5176 3.5 and 2865 require, so a forger learns nothing. A
retransmitted request (same source, identifier and authenticator within
`duplicate_window`) gets the cached answer and does not run the handler
twice: a Disconnect must not be applied to a session that took the freed
address in the meantime. A request whose Event-Timestamp is further than
`event_timestamp_window` from our clock is dropped without an answer and
counted (RFC 5176 3.5, 6.3: replay protection beyond the duplicate cache);
one without Event-Timestamp is taken (the RFC does not require it), and a
window of 0 turns the check off. A client at an IPv4 address matches a request
that reaches an IPv6 socket as an IPv4-mapped address.

What the session layer sees is a `DynAuthRequest`: the session
identification attributes and, for CoA, the new authorization (rates from
Filter-Id in the accel-ppp convention, see rates.py; Session-Timeout,
Idle-Timeout, Acct-Interim-Interval). The handler answers None (ACK) or a
`DynAuthError` (NAK with that Error-Cause; 2xx causes ride on an ACK).
Requests are refused before the handler with the RFC's causes:

- NAS-Identifier / NAS-IP-Address / NAS-IPv6-Address present and not ours: 403
- an attribute we cannot honour (e.g. Framed-Pool, Tunnel-*, authorization
  attributes in a Disconnect): 401
- Service-Type Authorize-Only (RFC 5176 3.2, not supported): 405
- no session identification attribute: 402
- an authorization value we cannot parse (Filter-Id that is not a rate): 407
- the handler raised: 506, logged

Config (`DynAuthConfig.from_dict`)::

    bind: 0.0.0.0
    port: 3799                      # or listen: "0.0.0.0:3799"
    clients:                        # who may send requests
      - {address: 192.0.2.1, secret: s3cret}
    nas_identifier: bng1            # what NAS-Identifier must say, if sent
    nas_ip_address: 192.0.2.254
    require_message_authenticator: false
    duplicate_window: 30            # seconds a reply is kept for retransmissions
    event_timestamp_window: 300     # seconds an Event-Timestamp may be off our clock
"""
from __future__ import annotations

import asyncio
import dataclasses
import ipaddress
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from pyrad import packet as rp

from .base import AuthResult, DynAuthError, DynAuthHandler, DynAuthRequest
from .radius_codec import parse_authorization
from .raddict import Attr, ServiceType, first, int_value, load_dictionary
from .rates import parse_filter_id

log = logging.getLogger(__name__)

__all__ = ["DynAuthServer", "DynAuthConfig", "DynAuthCounters"]

_NAS_ATTRS = {Attr.NAS_IDENTIFIER, Attr.NAS_IP_ADDRESS, Attr.NAS_IPV6_ADDRESS}
# the session identification attributes of RFC 5176 3 that our accounting
# sends, so that a server may echo them back
_SESSION_ATTRS = {Attr.ACCT_SESSION_ID, Attr.USER_NAME, Attr.FRAMED_IP_ADDRESS,
                  Attr.CALLING_STATION_ID, Attr.NAS_PORT_ID, Attr.NAS_PORT, Attr.FRAMED_IPV6_PREFIX}
_AUTHZ_ATTRS = {Attr.FILTER_ID, Attr.SESSION_TIMEOUT, Attr.IDLE_TIMEOUT,
                Attr.ACCT_INTERIM_INTERVAL}
# Carried by servers and proxies, no meaning for the session.
_HOUSEKEEPING_ATTRS = {Attr.MESSAGE_AUTHENTICATOR, Attr.EVENT_TIMESTAMP, Attr.PROXY_STATE,
                       Attr.STATE, Attr.REPLY_MESSAGE, Attr.ACCT_TERMINATE_CAUSE}
_ACK = {rp.DisconnectRequest: rp.DisconnectACK, rp.CoARequest: rp.CoAACK}
_NAK = {rp.DisconnectRequest: rp.DisconnectNAK, rp.CoARequest: rp.CoANAK}
_KIND = {rp.DisconnectRequest: "disconnect", rp.CoARequest: "coa"}
_FIRST_NAK_CAUSE = 400           # RFC 5176 3.5: 2xx succeed, 4xx/5xx fail
_MAX_CACHED = 8192


@dataclass
class DynAuthConfig:
    clients: dict[str, bytes]
    bind: str = "0.0.0.0"
    port: int = 3799
    nas_identifier: str | None = None
    nas_ip_address: str | None = None
    nas_ipv6_address: str | None = None
    require_message_authenticator: bool = False
    duplicate_window: float = 30.0
    event_timestamp_window: float = 300.0

    @classmethod
    def from_dict(cls, d: dict) -> "DynAuthConfig":
        """From a config mapping; `listen: "host:port"` may stand for
        `bind` and `port` (IPv6 as "[addr]:port")."""
        kw = dict(d)
        if kw.get("listen"):
            kw["bind"], kw["port"] = split_listen(str(kw["listen"]))
        kw.pop("listen", None)
        unknown = set(kw) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise ValueError(f"dynauth: unknown keys {sorted(unknown)}")
        raw_clients = d.get("clients") or []
        if isinstance(raw_clients, dict):
            raw_clients = [{"address": a, "secret": s} for a, s in raw_clients.items()]
        clients: dict[str, bytes] = {}
        for c in raw_clients:
            secret = c.get("secret")
            if not secret:
                raise ValueError(f"dynauth client {c.get('address')!r} needs a secret")
            addr = str(ipaddress.ip_address(c["address"]))
            clients[addr] = secret if isinstance(secret, bytes) else str(secret).encode()
        kw["clients"] = clients
        if "port" in kw:
            kw["port"] = int(kw["port"])
        return cls(**kw)


def split_listen(listen: str) -> tuple[str, int]:
    """"127.0.0.1:3799" / "[::]:3799" / "3799" -> (address, port)."""
    host, sep, port = listen.rpartition(":")
    if not sep:
        return "0.0.0.0", int(listen)
    return host.strip("[]") or "0.0.0.0", int(port)


@dataclass
class DynAuthCounters:
    received: int = 0
    unknown_client: int = 0
    malformed: int = 0
    bad_authenticator: int = 0
    stale: int = 0                  # Event-Timestamp outside the window
    duplicates: int = 0
    disconnect_ack: int = 0
    disconnect_nak: int = 0
    coa_ack: int = 0
    coa_nak: int = 0
    handler_errors: int = 0
    nak_causes: dict[int, int] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


class _Refused(Exception):
    """A request answered with a NAK before reaching the handler."""

    def __init__(self, cause: DynAuthError, why: str) -> None:
        super().__init__(why)
        self.cause = cause


class DynAuthServer(asyncio.DatagramProtocol):
    """The BNG's RFC 5176 listener; `start()`, then `close()` (or `stop()`)."""

    def __init__(self, config: DynAuthConfig, handler: DynAuthHandler) -> None:
        self.config = config
        self.handler = handler
        self.counters = DynAuthCounters()
        self._transport: asyncio.DatagramTransport | None = None
        # (src ip, src port, identifier, authenticator) -> (expiry, reply or None while running)
        self._recent: OrderedDict[tuple, tuple[float, bytes | None]] = OrderedDict()
        self._tasks: set[asyncio.Task] = set()

    @classmethod
    def from_dict(cls, d: dict, handler: DynAuthHandler) -> "DynAuthServer":
        return cls(DynAuthConfig.from_dict(d), handler)

    @classmethod
    def from_config(cls, cfg: Any, handler: DynAuthHandler) -> "DynAuthServer":
        """From the controller config's `dynauth` section, an object with
        `listen` and `clients` and any other DynAuthConfig field as an
        attribute (empty values mean "not set")."""
        d: dict[str, Any] = {"listen": cfg.listen, "clients": cfg.clients}
        for f in dataclasses.fields(DynAuthConfig):
            value = getattr(cfg, f.name, None)
            if f.name not in ("clients", "bind", "port") and value not in (None, ""):
                d[f.name] = value
        return cls.from_dict(d, handler)

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        await loop.create_datagram_endpoint(lambda: self,
                                            local_addr=(self.config.bind, self.config.port))

    @property
    def port(self) -> int:
        """The bound port (useful with port 0)."""
        assert self._transport is not None, "not started"
        return self._transport.get_extra_info("sockname")[1]

    async def close(self) -> None:
        """Stop listening; requests being handled are cancelled."""
        if self._transport is not None:
            self._transport.close()
            self._transport = None
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    stop = close

    # ---------------------------------------------------------- datagrams

    def connection_made(self, transport) -> None:  # asyncio callback
        self._transport = transport

    def connection_lost(self, exc) -> None:  # asyncio callback
        self._transport = None

    def datagram_received(self, data: bytes, addr) -> None:  # asyncio callback
        task = asyncio.get_running_loop().create_task(self._receive(data, addr))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _send(self, raw: bytes, addr) -> None:
        if self._transport is not None:
            self._transport.sendto(raw, addr)

    async def _receive(self, data: bytes, addr) -> None:
        self.counters.received += 1
        ip = ipaddress.ip_address(addr[0].split("%")[0])
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped             # an IPv4 client on a dual-stack socket
        source = str(ip)
        secret = self.config.clients.get(source)
        if secret is None:
            self.counters.unknown_client += 1
            log.warning("dynauth: request from unknown client %s dropped", source)
            return
        try:
            request = rp.CoAPacket(packet=data, secret=secret, dict=load_dictionary())
        except (rp.PacketError, ValueError, KeyError) as e:
            self.counters.malformed += 1
            log.warning("dynauth: undecodable packet from %s: %s", source, e)
            return
        if request.code not in _KIND:
            self.counters.malformed += 1
            log.warning("dynauth: code %d from %s is not a request we serve", request.code, source)
            return
        if not self._authentic(request):
            self.counters.bad_authenticator += 1
            log.warning("dynauth: request from %s failed authentication (id %d), dropped",
                        source, request.id)
            return
        skew = self._clock_skew(request)
        if skew is not None:
            self.counters.stale += 1
            log.warning("dynauth: request from %s (id %d) has an Event-Timestamp %.0f s off our clock, "
                        "dropped", source, request.id, skew)
            return

        key = (source, addr[1], request.id, request.authenticator)
        now = time.monotonic()
        self._expire(now)
        cached = self._recent.get(key)
        if cached is not None:
            self.counters.duplicates += 1
            if cached[1] is not None:
                self._send(cached[1], addr)
            return      # still being handled: the answer goes out when done
        self._recent[key] = (now + self.config.duplicate_window, None)

        raw = await self._answer(request, source)
        self._recent[key] = (time.monotonic() + self.config.duplicate_window, raw)
        self._recent.move_to_end(key)       # keep the cache ordered by expiry
        self._send(raw, addr)

    def _authentic(self, request: rp.CoAPacket) -> bool:
        if not request.VerifyCoARequest():
            return False
        if request.message_authenticator:
            return request.verify_message_authenticator()
        return not self.config.require_message_authenticator

    def _clock_skew(self, request: rp.CoAPacket) -> float | None:
        """How far the request's Event-Timestamp is from our clock, if
        further than the window allows (None: acceptable or absent)."""
        window = self.config.event_timestamp_window
        if not window:
            return None
        try:
            stamp = int_value(request, Attr.EVENT_TIMESTAMP)
        except (ValueError, TypeError, KeyError):
            return float("inf")
        if stamp is None:
            return None
        skew = abs(time.time() - stamp)
        return skew if skew > window else None

    def _expire(self, now: float) -> None:
        while self._recent:
            key, (expiry, raw) = next(iter(self._recent.items()))
            if expiry > now and len(self._recent) < _MAX_CACHED:
                break
            if raw is None and expiry > now:
                break   # never forget a request still being handled
            self._recent.popitem(last=False)

    # ------------------------------------------------------------ decisions

    async def _answer(self, request: rp.CoAPacket, source: str) -> bytes:
        kind = _KIND[request.code]
        cause: DynAuthError | None
        try:
            dar = self._parse(request, kind)
        except _Refused as refused:
            log.info("dynauth: %s from %s refused (%d): %s", kind, source,
                     refused.cause, refused)
            cause = refused.cause
        else:
            try:
                cause = await self.handler(dar)
            except Exception:
                log.exception("dynauth: %s handler failed for %s", kind, dar)
                self.counters.handler_errors += 1
                cause = DynAuthError.RESOURCES_UNAVAILABLE
        return self._reply(request, kind, cause)

    def _reply(self, request: rp.CoAPacket, kind: str, cause) -> bytes:
        nak = cause is not None and int(cause) >= _FIRST_NAK_CAUSE
        reply = request.CreateReply()
        reply.code = _NAK[request.code] if nak else _ACK[request.code]
        if cause is not None:
            reply[Attr.ERROR_CAUSE] = int(cause)
        if request.message_authenticator:
            reply.message_authenticator = True
        if nak:
            self.counters.nak_causes[int(cause)] = self.counters.nak_causes.get(int(cause), 0) + 1
        name = f"{kind}_{'nak' if nak else 'ack'}"
        setattr(self.counters, name, getattr(self.counters, name) + 1)
        return reply.ReplyPacket()

    def _check_nas(self, request: rp.CoAPacket) -> None:
        ours = ((Attr.NAS_IDENTIFIER, self.config.nas_identifier, str),
                (Attr.NAS_IP_ADDRESS, self.config.nas_ip_address, ipaddress.ip_address),
                (Attr.NAS_IPV6_ADDRESS, self.config.nas_ipv6_address, ipaddress.ip_address))
        for name, mine, norm in ours:
            theirs = first(request, name)
            if theirs is None or mine is None:
                continue
            if norm(theirs) != norm(mine):
                raise _Refused(DynAuthError.NAS_IDENTIFICATION_MISMATCH,
                               f"{name} {theirs} is not ours")

    def _parse(self, request: rp.CoAPacket, kind: str) -> DynAuthRequest:
        try:
            return self._parse_checked(request, kind)
        except _Refused:
            raise
        except (ValueError, TypeError, KeyError, rp.PacketError) as e:
            raise _Refused(DynAuthError.INVALID_ATTRIBUTE_VALUE, str(e)) from e

    def _parse_checked(self, request: rp.CoAPacket, kind: str) -> DynAuthRequest:
        self._check_nas(request)
        allowed = _NAS_ATTRS | _SESSION_ATTRS | _HOUSEKEEPING_ATTRS
        if kind == "coa":
            allowed |= _AUTHZ_ATTRS | {Attr.SERVICE_TYPE}
        names = set(request.keys())
        unsupported = sorted(str(n) for n in names - allowed)
        if unsupported:
            raise _Refused(DynAuthError.UNSUPPORTED_ATTRIBUTE,
                           f"unsupported attributes {unsupported}")
        if Attr.SERVICE_TYPE in names:
            raise _Refused(DynAuthError.UNSUPPORTED_SERVICE,
                           f"Service-Type {int_value(request, Attr.SERVICE_TYPE)} "
                           f"(Authorize-Only is {int(ServiceType.AUTHORIZE_ONLY)}) not supported")
        if not names & _SESSION_ATTRS:
            raise _Refused(DynAuthError.MISSING_ATTRIBUTE, "no session identification attribute")

        def text(name: str) -> str | None:
            value = first(request, name)
            if value is None:
                return None
            return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)

        framed_ip = first(request, Attr.FRAMED_IP_ADDRESS)
        prefix = first(request, Attr.FRAMED_IPV6_PREFIX)
        dar = DynAuthRequest(kind=kind,
                             acct_session_id=text(Attr.ACCT_SESSION_ID),
                             username=text(Attr.USER_NAME),
                             framed_ip=ipaddress.IPv4Address(framed_ip) if framed_ip else None,
                             client_mac=text(Attr.CALLING_STATION_ID),
                             nas_port_id=text(Attr.NAS_PORT_ID),
                             nas_port=int_value(request, Attr.NAS_PORT),
                             framed_ipv6_prefix=ipaddress.IPv6Network(prefix, strict=False) if prefix else None)
        if kind == "coa":
            for value in request.get(Attr.FILTER_ID) or []:
                if parse_filter_id(value) is None:
                    raise _Refused(DynAuthError.INVALID_ATTRIBUTE_VALUE,
                                   f"Filter-Id {value!r} is not a rate")
            dar.new_auth = parse_authorization(request, AuthResult(accepted=True), strict=True)
        return dar

"""One UDP socket toward one RADIUS server: identifiers, retransmission,
reply verification.

The Identifier is what ties a reply to its request (RFC 2865 3), so it is
allocated per socket: at most 256 requests are in flight on one socket and
further requests wait for a free identifier instead of reusing a live one.
A retransmission re-sends the very same octets (same identifier, same
Request Authenticator), which lets the server's duplicate detection answer
from its cache instead of authenticating twice. Replies whose Response
Authenticator or Message-Authenticator does not verify are dropped and
counted: they are forgeries or noise, and the real answer may still come.
"""
from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import secrets
import socket
from dataclasses import asdict, dataclass

from pyrad import packet as rp

log = logging.getLogger(__name__)

IDENTIFIERS = 256
_REPLY_CODES = {
    rp.AccessRequest: frozenset({rp.AccessAccept, rp.AccessReject, rp.AccessChallenge}),
    rp.AccountingRequest: frozenset({rp.AccountingResponse}),
}


@dataclass
class RadiusCounters:
    """What an operator graphs to see RADIUS health."""
    requests: int = 0            # requests sent (first transmissions)
    retransmits: int = 0
    timeouts: int = 0            # a server did not answer one request after all retries
    bad_authenticators: int = 0  # replies dropped: Response/Message-Authenticator wrong
    malformed: int = 0           # replies that did not decode or had an unexpected code
    accepts: int = 0
    rejects: int = 0
    acct_sent: int = 0           # accounting records a server acknowledged
    acct_dropped: int = 0        # accounting records lost (queue full, or closed unsent)
    failovers: int = 0           # moved on to the next server

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass
class _Pending:
    request: rp.Packet
    port: int
    future: asyncio.Future
    unverified: int = 0          # replies dropped for a wrong authenticator


class RadiusEndpoint(asyncio.DatagramProtocol):
    """The client side of RADIUS toward one server (auth and acct ports
    share the socket and its identifier space)."""

    def __init__(self, host: str, secret: bytes, counters: RadiusCounters, *,
                 require_message_authenticator: bool = True) -> None:
        self.host = host
        self.secret = secret
        self.counters = counters
        self.require_message_authenticator = require_message_authenticator
        self._ip = ipaddress.ip_address(host)
        self._transport: asyncio.DatagramTransport | None = None
        self._pending: dict[int, _Pending] = {}
        self._in_use: set[int] = set()
        self._next_id = secrets.randbelow(IDENTIFIERS)
        self._id_slots = asyncio.Semaphore(IDENTIFIERS)

    # ------------------------------------------------------------ lifecycle

    async def open(self, source_address: str | None = None) -> None:
        """Bind an unconnected socket (auth and acct ports differ)."""
        loop = asyncio.get_running_loop()
        family = socket.AF_INET6 if self._ip.version == 6 else socket.AF_INET
        local = (source_address or ("::" if family == socket.AF_INET6 else "0.0.0.0"), 0)
        await loop.create_datagram_endpoint(lambda: self, local_addr=local, family=family)

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()
            self._transport = None
        for pending in self._pending.values():
            if not pending.future.done():
                pending.future.set_result(None)   # as if the server stayed silent

    def connection_made(self, transport) -> None:  # asyncio callback
        self._transport = transport

    def connection_lost(self, exc) -> None:  # asyncio callback
        self._transport = None

    # ----------------------------------------------------------- identifiers

    @property
    def in_flight(self) -> int:
        return len(self._in_use)

    async def acquire_id(self) -> int:
        """A free identifier; waits while all 256 are in flight."""
        await self._id_slots.acquire()
        while self._next_id in self._in_use:
            self._next_id = (self._next_id + 1) % IDENTIFIERS
        ident = self._next_id
        # rotate, so that a just-finished identifier is not reused at once
        self._next_id = (ident + 1) % IDENTIFIERS
        self._in_use.add(ident)
        return ident

    def release_id(self, ident: int) -> None:
        self._in_use.discard(ident)
        self._id_slots.release()

    @contextlib.asynccontextmanager
    async def identifier(self):
        ident = await self.acquire_id()
        try:
            yield ident
        finally:
            self.release_id(ident)

    # -------------------------------------------------------------- exchange

    async def exchange(self, request: rp.Packet, raw: bytes, port: int, *,
                       timeout: float, retries: int) -> rp.Packet | None:
        """Send `raw` (the encoded `request`) and wait for its verified
        reply, retransmitting the same octets up to `retries` times. None
        when the server stayed silent (or the socket was closed)."""
        if self._transport is None:
            return None     # closed: no answer can come
        future = asyncio.get_running_loop().create_future()
        pending = _Pending(request, port, future)
        self._pending[request.id] = pending
        try:
            for attempt in range(retries + 1):
                if attempt:
                    self.counters.retransmits += 1
                else:
                    self.counters.requests += 1
                if self._transport is None:
                    return None
                self._transport.sendto(raw, (self.host, port))
                try:
                    return await asyncio.wait_for(asyncio.shield(future), timeout)
                except TimeoutError:
                    continue
            self.counters.timeouts += 1
            if pending.unverified:
                # a server that answers but cannot be verified is as useless
                # as a silent one; the likely cause differs, so say it
                log.warning("RADIUS server %s:%d sent %d replies to request id %d, none of "
                            "which verified: is the shared secret the server's?",
                            self.host, port, pending.unverified, request.id)
            return None
        finally:
            self._pending.pop(request.id, None)
            if not future.done():
                future.cancel()

    def datagram_received(self, data: bytes, addr) -> None:  # asyncio callback
        if len(data) < 20:
            self.counters.malformed += 1
            return
        pending = self._pending.get(data[1])
        if pending is None or pending.future.done():
            return  # late duplicate of an answered or abandoned request
        if ipaddress.ip_address(addr[0].split("%")[0]) != self._ip or addr[1] != pending.port:
            log.debug("RADIUS reply from unexpected %s dropped", addr)
            self.counters.malformed += 1
            return
        request = pending.request
        try:
            reply = request.CreateReply(packet=data)
        except (rp.PacketError, ValueError, KeyError) as e:
            log.warning("RADIUS reply from %s does not decode: %s", addr, e)
            self.counters.malformed += 1
            return
        if reply.code not in _REPLY_CODES.get(request.code, ()):
            log.warning("RADIUS reply code %d to request code %d from %s dropped",
                        reply.code, request.code, addr)
            self.counters.malformed += 1
            return
        enforce_ma = self.require_message_authenticator and request.code == rp.AccessRequest
        if not request.VerifyReply(reply, data, enforce_ma=enforce_ma):
            log.warning("RADIUS reply from %s failed authenticator verification (id %d)",
                        addr, reply.id)
            self.counters.bad_authenticators += 1
            pending.unverified += 1
            return
        pending.future.set_result(reply)

    def error_received(self, exc: Exception) -> None:  # asyncio callback
        # ICMP port unreachable and the like: the retransmission timer
        # decides, so only note it.
        log.debug("RADIUS socket toward %s: %s", self.host, exc)

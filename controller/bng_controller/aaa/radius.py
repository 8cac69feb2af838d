"""RADIUS backend: authentication (RFC 2865) and accounting (RFC 2866)
against a list of servers, with failover.

Servers are tried in the configured order. One that did not answer a
request (after `retries` retransmissions of `timeout` seconds each) is
marked dead for `dead_time` seconds: live servers are tried before it
until then, so one dead primary costs one timeout, not one per subscriber.
When no server answers an authentication, `AaaUnavailable` tells the
session layer that this was an outage, not a reject.

Accounting never blocks a session: `account()` queues the record and
returns; `acct_concurrency` worker tasks deliver the queue, several
sessions at once but each session's records in order, one after the other,
and Accounting-On/-Off alone (acct_queue.py), and put a record back
when no server took it, pausing `acct_retry_interval` before trying again,
so an outage delays Stops but does not lose them (see acct_queue.py for
what is shed when the queue is full). Acct-Delay-Time says how long a
record waited (RFC 2866 5.2). Call `flush()` before `close()` on shutdown.

Rates come from Filter-Id in the accel-ppp convention (rates.py):
`"<down_kbps>/<up_kbps>"` or one number for both directions.

Config (`RadiusConfig.from_dict`)::

    servers:                      # tried in this order
      - {address: 192.0.2.1, secret: s3cret, auth_port: 1812, acct_port: 1813}
    timeout: 3.0                  # seconds per transmission
    retries: 2                    # retransmissions per server
    dead_time: 60                 # seconds a silent server is tried last
    nas_identifier: bng1
    nas_ip_address: 192.0.2.254   # optional
    nas_port_type: virtual        # or ethernet (NAS-Port-Type 5 / 15)
    source_address: null          # bind address of the client sockets
    require_message_authenticator: true   # replies to Access-Request must have one
    acct_queue_max: 100000        # records waiting for a server
    acct_concurrency: 8           # accounting requests in flight
    acct_retry_interval: 5.0      # pause after a record found no server
"""
from __future__ import annotations

import asyncio
import dataclasses
import ipaddress
import logging
import secrets
import time
from dataclasses import dataclass
from typing import Any, Callable

from pyrad import packet as rp

from .acct_queue import BARRIER, RANK_INTERIM, RANK_START, RANK_STOP, AcctItem, AcctQueue
from .base import AaaUnavailable, AcctRecord, AcctStatus, AuthRequest, AuthResult, TerminateCause
from .radius_codec import (NasIdentity, build_access_request, build_accounting_onoff,
                           build_accounting_request, parse_access_reply)
from .radius_transport import RadiusCounters, RadiusEndpoint
from .raddict import AcctStatusType, NasPortType

log = logging.getLogger(__name__)

__all__ = ["RadiusAaa", "RadiusConfig", "RadiusServerConfig", "RadiusCounters"]

_RANK = {AcctStatus.INTERIM: RANK_INTERIM, AcctStatus.START: RANK_START,
         AcctStatus.STOP: RANK_STOP}
_PORT_TYPES = {"virtual": NasPortType.VIRTUAL, "ethernet": NasPortType.ETHERNET}


def _secret(value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str) and value:
        return value.encode("utf-8")
    raise ValueError("RADIUS server needs a non-empty secret")


def _check_keys(what: str, d: dict, cls) -> None:
    unknown = set(d) - {f.name for f in dataclasses.fields(cls)}
    if unknown:
        raise ValueError(f"{what}: unknown keys {sorted(unknown)}")


@dataclass
class RadiusServerConfig:
    address: str
    secret: bytes
    auth_port: int = 1812
    acct_port: int = 1813

    @classmethod
    def from_dict(cls, d: dict) -> "RadiusServerConfig":
        _check_keys("radius server", d, cls)
        if "address" not in d:
            raise ValueError("radius server: 'address' is required")
        try:    # sockets and reply checks work on addresses, not names
            address = str(ipaddress.ip_address(str(d["address"])))
        except ValueError as e:
            raise ValueError(f"radius server: address must be an IP address: {e}") from e
        return cls(address=address, secret=_secret(d.get("secret")),
                   auth_port=int(d.get("auth_port", 1812)),
                   acct_port=int(d.get("acct_port", 1813)))


@dataclass
class RadiusConfig:
    servers: list[RadiusServerConfig]
    timeout: float = 3.0
    retries: int = 2
    dead_time: float = 60.0
    nas_identifier: str = "bng"
    nas_ip_address: str | None = None
    nas_port_type: str = "virtual"
    source_address: str | None = None
    require_message_authenticator: bool = True
    acct_queue_max: int = 100_000
    acct_concurrency: int = 8
    acct_retry_interval: float = 5.0

    def __post_init__(self) -> None:
        if not self.servers:
            raise ValueError("radius: at least one server is needed")
        if self.nas_port_type not in _PORT_TYPES:
            raise ValueError(f"radius: nas_port_type must be one of {sorted(_PORT_TYPES)}")
        if self.timeout <= 0 or self.retries < 0 or self.acct_concurrency < 1:
            raise ValueError("radius: timeout > 0, retries >= 0, acct_concurrency >= 1")

    @classmethod
    def from_dict(cls, d: dict) -> "RadiusConfig":
        _check_keys("radius", d, cls)
        kw = dict(d)
        kw["servers"] = [RadiusServerConfig.from_dict(s) for s in d.get("servers") or []]
        for key, conv in (("timeout", float), ("retries", int), ("dead_time", float),
                          ("acct_queue_max", int), ("acct_concurrency", int),
                          ("acct_retry_interval", float)):
            if key in kw:
                kw[key] = conv(kw[key])
        return cls(**kw)


@dataclass
class _Server:
    config: RadiusServerConfig
    endpoint: RadiusEndpoint
    dead_until: float = 0.0


@dataclass
class _OnOff:
    """An Accounting-On/Off waiting in the queue."""
    status: AcctStatusType
    acct_session_id: str
    event_time: float
    terminate_cause: int | None = None


BuildFn = Callable[[int, bytes], rp.Packet]


class RadiusAaa:
    """`AaaBackend` over RADIUS. Sockets and workers start on first use
    (or `start()`), so it can be built before the event loop runs."""

    def __init__(self, config: RadiusConfig) -> None:
        self.config = config
        self.counters = RadiusCounters()
        self._nas = NasIdentity(nas_identifier=config.nas_identifier,
                                nas_ip_address=config.nas_ip_address,
                                nas_port_type=_PORT_TYPES[config.nas_port_type])
        self._servers = [
            _Server(s, RadiusEndpoint(s.address, s.secret, self.counters,
                                      require_message_authenticator=config.require_message_authenticator))
            for s in config.servers]
        self._queue = AcctQueue(config.acct_queue_max)
        self._workers: list[asyncio.Task] = []
        self._pause_until = 0.0
        self._started = False
        self._closed = False
        self._start_lock: asyncio.Lock | None = None

    @classmethod
    def from_dict(cls, d: dict) -> "RadiusAaa":
        return cls(RadiusConfig.from_dict(d))

    # ------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        if self._started:
            return
        if self._closed:
            raise AaaUnavailable("RADIUS client is closed")
        if self._start_lock is None:
            self._start_lock = asyncio.Lock()
        async with self._start_lock:
            if self._started:
                return
            for server in self._servers:
                await server.endpoint.open(self.config.source_address)
            self._workers = [asyncio.create_task(self._acct_worker(), name=f"radius-acct-{i}")
                             for i in range(self.config.acct_concurrency)]
            self._started = True

    async def close(self) -> None:
        """Stop at once; records still queued are counted as dropped (call
        `flush()` first to give them a chance)."""
        if self._closed:
            return
        self._closed = True
        for task in self._workers:
            task.cancel()
        await asyncio.gather(*self._workers, return_exceptions=True)
        lost = len(self._queue.drain_all()) + self._queue.in_flight
        if lost:
            self.counters.acct_dropped += lost
            log.warning("RADIUS closed with %d accounting records undelivered", lost)
        for server in self._servers:
            server.endpoint.close()

    # -------------------------------------------------------- server choice

    def _server_order(self) -> list[_Server]:
        """Live servers in config order, then dead ones, longest dead first."""
        now = time.monotonic()
        alive = [s for s in self._servers if s.dead_until <= now]
        dead = sorted((s for s in self._servers if s.dead_until > now), key=lambda s: s.dead_until)
        return alive + dead

    async def _transact(self, build: BuildFn, acct: bool) -> tuple[rp.Packet, rp.Packet] | None:
        """One request, failing over across servers: (request, reply) from
        the first server that answers, None when none does."""
        for i, server in enumerate(self._server_order()):
            if i:
                self.counters.failovers += 1
            port = server.config.acct_port if acct else server.config.auth_port
            async with server.endpoint.identifier() as ident:
                request = build(ident, server.config.secret)
                raw = request.RequestPacket()
                reply = await server.endpoint.exchange(request, raw, port,
                                                       timeout=self.config.timeout,
                                                       retries=self.config.retries)
            if reply is not None:
                server.dead_until = 0.0
                return request, reply
            server.dead_until = time.monotonic() + self.config.dead_time
            log.warning("RADIUS server %s:%d gave no verified answer; dead for %.0fs",
                        server.config.address, port, self.config.dead_time)
        return None

    # ------------------------------------------------------- authentication

    async def authenticate(self, req: AuthRequest) -> AuthResult:
        await self.start()

        def build(ident: int, secret: bytes) -> rp.Packet:
            return build_access_request(req, ident=ident, secret=secret, nas=self._nas)

        try:
            answered = await self._transact(build, acct=False)
        except ValueError as e:   # a request we cannot encode: the peer's fault
            log.warning("RADIUS: cannot build Access-Request for %r: %s", req.username, e)
            return AuthResult(accepted=False, reply_message=str(e))
        if answered is None:
            raise AaaUnavailable(f"no RADIUS server answered for {req.username!r}")
        request, reply = answered
        result = parse_access_reply(reply, request.authenticator)
        if result.accepted:
            self.counters.accepts += 1
        else:
            self.counters.rejects += 1
        return result

    # ----------------------------------------------------------- accounting

    async def account(self, rec: AcctRecord) -> None:
        """Queue a record; returns at once (delivery is the workers' job)."""
        await self.start()
        if not rec.event_time:
            rec = dataclasses.replace(rec, event_time=time.time())
        self._enqueue(AcctItem(rec, _RANK[rec.status], key=rec.acct_session_id))

    async def accounting_on(self) -> None:
        """Accounting-On (status 7): send when the controller starts, before
        any session's Start, so the server closes what we had open."""
        await self.start()
        self._enqueue(AcctItem(_OnOff(AcctStatusType.ACCOUNTING_ON, secrets.token_hex(8),
                                      time.time()), RANK_STOP, key=BARRIER))

    async def accounting_off(self, cause: TerminateCause = TerminateCause.ADMIN_REBOOT) -> None:
        """Accounting-Off (status 8): on an orderly stop, then `flush()`."""
        await self.start()
        self._enqueue(AcctItem(_OnOff(AcctStatusType.ACCOUNTING_OFF, secrets.token_hex(8),
                                      time.time(), int(cause)), RANK_STOP, key=BARRIER))

    def _enqueue(self, item: AcctItem) -> None:
        dropped = self._queue.put_nowait(item)
        if dropped is not None:
            self.counters.acct_dropped += 1
            log.warning("RADIUS accounting queue full (%d): dropped a record of %s",
                        self._queue.maxlen, _describe(dropped.payload))

    @property
    def acct_queue_length(self) -> int:
        return len(self._queue) + self._queue.in_flight

    async def flush(self, timeout: float | None = None) -> bool:
        """Wait until every queued record was delivered; False on timeout."""
        if not self._started:
            return True
        try:
            await asyncio.wait_for(self._queue.wait_empty(), timeout)
            return True
        except TimeoutError:
            return False

    async def _acct_worker(self) -> None:
        while True:
            item = await self._queue.get()
            delay = self._pause_until - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            try:
                delivered = await self._deliver(item)
            except asyncio.CancelledError:
                raise
            except ValueError as e:
                # a record that cannot be encoded (pyrad refuses a value)
                # never will be: retrying it would hold its session's later
                # records, and pause everyone's, for ever
                log.error("RADIUS accounting of %s cannot be encoded, dropped: %s", _describe(item.payload), e)
                self.counters.acct_dropped += 1
                self._queue.done(item)
                continue
            except Exception:   # a bug must not stop accounting for everyone
                log.exception("RADIUS accounting of %s failed", _describe(item.payload))
                delivered = False
            if delivered:
                self.counters.acct_sent += 1
                self._queue.done(item)
            else:
                item.attempts += 1
                self._pause_until = time.monotonic() + self.config.acct_retry_interval
                self._queue.requeue(item)

    async def _deliver(self, item: AcctItem) -> bool:
        payload = item.payload

        def build(ident: int, secret: bytes) -> rp.Packet:
            delay = int(time.monotonic() - item.queued_at)
            if isinstance(payload, AcctRecord):
                return build_accounting_request(payload, ident=ident, secret=secret,
                                                nas=self._nas, delay=delay)
            return build_accounting_onoff(payload.status, ident=ident, secret=secret,
                                          nas=self._nas, acct_session_id=payload.acct_session_id,
                                          event_time=payload.event_time, delay=delay,
                                          terminate_cause=payload.terminate_cause)

        return await self._transact(build, acct=True) is not None


def _describe(payload: AcctRecord | _OnOff) -> str:
    if isinstance(payload, AcctRecord):
        return f"{payload.status.name} {payload.acct_session_id}"
    return payload.status.name

"""Subscriber sessions from PADR to PADT.

The manager owns every subscriber, feeds each one's PPP link with the
packets punted for it, answers its link's requests (AAA, addresses, data
plane), and keeps the invariant an operator relies on: a session that is
UP has exactly its entries in the switch, a session that is gone has none,
its address and counters index are free again, and its accounting was
stopped with the session's final counters.

Ordering: data-plane writes go through one EntryWriter, which applies
them in submission order, so a session's entries are always recorded in
`Subscriber.installed` before the write that installs them is awaited and
a teardown racing with an install deletes what the install adds.
"""
from __future__ import annotations

import asyncio
import collections
import dataclasses
import ipaddress
import logging
import random
import sqlite3
import time
from typing import Callable

from p4.v1 import p4runtime_pb2 as p4r

from .aaa.base import (AaaBackend, AaaUnavailable, AcctRecord, AcctStatus, AuthRequest, AuthResult,
                       DynAuthError, DynAuthRequest, LineInfo, SessionCounters, TerminateCause, TunnelSpec)
from .config import ControllerConfig
from .dataplane import BngTables
from .ip_pool import Ipv6PrefixPool, PoolExhausted, PoolSet
from .ipv6.prefix_index import PrefixIndex
from .lines import Exhausted, IndexAllocator, Line, LineTable
from .p4runtime_async import AsyncP4RuntimeClient, deletes, inserts, modifies
from .p4runtime_entries import entry_key
from .p4runtime_client import UpdateError
from .ppp.auth import Credentials, Verdict
from .ppp.codec import CONF_ACK, PPP_IPCP, PPP_IPV6CP
from .ppp.link import (AuthAttempt, Ipv4Assignment, LinkDown, LinkSnapshot, NetworkDown, NetworkFinished,
                       NetworkUp, PppLink)
from .pppoe import codec as pppoe
from .pppoe.discovery import Drop, PeerTerminate, PppoeDiscovery, Reply, SessionRequest
from .session_store import SessionStore
from .subscriber import PppoeTransport, State, Subscriber
from .timers import TimerHeap

CONF_ACK_CODE = bytes([CONF_ACK])
NCP_ENTRIES = {PPP_IPCP: "ipv4", PPP_IPV6CP: "ipv6"}   # an NCP -> its key in Subscriber.installed

log = logging.getLogger("bng.sessions")
# longest an Accounting-Start waits for its session to be stored (seconds)
STORE_WAIT = 5.0

SETUP_SAMPLES = 4096


def auth_to_dict(a: AuthResult | None) -> dict | None:
    if a is None:
        return None
    d = dict(vars(a))        # flat: every non-primitive field is replaced below
    for k in ("framed_ip", "framed_ipv6_prefix", "delegated_ipv6_prefix"):
        d[k] = str(d[k]) if d[k] is not None else None
    d["dns"] = [str(x) for x in a.dns]
    d["classes"] = [c.hex() for c in a.classes]
    d["mschapv2_success"] = ""
    d["mppe_keys"] = None
    d["tunnels"] = []
    return d


def auth_from_dict(d: dict | None) -> AuthResult | None:
    if d is None:
        return None
    d = dict(d)
    d["framed_ip"] = ipaddress.IPv4Address(d["framed_ip"]) if d.get("framed_ip") else None
    for k in ("framed_ipv6_prefix", "delegated_ipv6_prefix"):
        d[k] = ipaddress.IPv6Network(d[k]) if d.get(k) else None
    d["dns"] = [ipaddress.IPv4Address(x) for x in d.get("dns", [])]
    old = d.pop("class_attr", None)         # a snapshot from before several Class attributes
    d["classes"] = tuple(bytes.fromhex(c) for c in d.get("classes") or ([old] if old else []))
    d["mschapv2_success"] = b""
    d["tunnels"] = [TunnelSpec(**t) for t in d.get("tunnels", [])]
    return AuthResult(**d)


class RestoreRefused(ValueError):
    """A stored session that cannot be taken over: it would collide with
    one restored before it."""


# The groups of sub.installed that the session manager writes for a
# terminated session (the L2TP service adds "lac" for a switched one).
SESSION_GROUPS = ("session", "ipv4", "ipv6")


class SessionManager:
    def __init__(self, cfg: ControllerConfig, tables: BngTables, switch: AsyncP4RuntimeClient,
                 aaa: AaaBackend, pools: PoolSet, store: SessionStore | None = None,
                 discovery_secret: bytes = b"", n_session_indices: int = 65536,
                 clock: Callable[[], float] = time.monotonic, rng: random.Random | None = None):
        self.cfg = cfg
        self.tables = tables
        self.switch = switch
        self.aaa = aaa
        self.pools = pools
        self.store = store
        self._store_failing = False        # the last flush failed: log the next success
        # set by the controller, whose loop calls flush() every 0.2 s: then an
        # Accounting-Start waits for its session's row to be on disk
        self.flushes_itself = False
        self._flush_waiters: list[asyncio.Future] = []
        self.clock = clock
        self.rng = rng or random.Random()
        self.bng_mac = cfg.bng_mac
        self.discovery = PppoeDiscovery(cfg.pppoe, cfg.bng_mac, discovery_secret or self.rng.randbytes(32),
                                        clock=clock)
        self.lines = LineTable(65536, self.rng)
        self.sess_idx = IndexAllocator(1, n_session_indices - 1, "session indices")
        self.v6_wan = Ipv6PrefixPool(cfg.ipv6.wan_pool, 64) if cfg.ipv6.wan_pool else None
        self.v6_pd = Ipv6PrefixPool(cfg.ipv6.pd_pool, cfg.ipv6.pd_length) if cfg.ipv6.pd_pool else None
        self.subs: dict[int, Subscriber] = {}
        self.pppoe_sessions: dict[tuple[int, int], Subscriber] = {}
        self.by_padr: dict[tuple, Subscriber] = {}
        self.by_ipv4: dict[ipaddress.IPv4Address, Subscriber] = {}
        self.by_ipv6: PrefixIndex[Subscriber] = PrefixIndex()   # WAN and delegated prefixes
        self.by_acct: dict[str, Subscriber] = {}
        self.timers = TimerHeap(self._on_timer, clock)
        self.counters: collections.Counter[str] = collections.Counter()
        self.setup_times: collections.deque[float] = collections.deque(maxlen=SETUP_SAMPLES)
        self.setups_total = 0
        self.setup_seconds_sum = 0.0     # of every setup (setup_times holds the recent ones)
        self._next_sid = 1
        self._boot = f"{int(time.time()) & 0xFFFFFFFF:08x}"
        self._acct_seq = 0
        self._tasks: set[asyncio.Task] = set()
        self._ncp_writes: dict[tuple[int, int], asyncio.Future] = {}   # (session, NCP) -> its entry write
        self._line_ready: dict[int, asyncio.Future] = {}
        self._unknown_padt = {}               # (port, mac) -> last PADT time (rate limit)
        self.on_session_up: list[Callable[[Subscriber], None]] = []
        self.on_session_down: list[Callable[[Subscriber], None]] = []
        self.ipv6 = None                      # ipv6.responder.Ipv6Responder, set by the controller
        self.l2tp = None                      # l2tp.service.L2tpService, set by the controller

    # ------------------------------------------------------------------
    # plumbing
    def _spawn(self, coro) -> asyncio.Task:
        t = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(t)
        t.add_done_callback(self._task_done)
        return t

    def _task_done(self, t: asyncio.Task) -> None:
        self._tasks.discard(t)
        if not t.cancelled() and t.exception() is not None:
            self.counters["internal errors"] += 1
            log.error("session task failed", exc_info=t.exception())

    def packet_out(self, frame: bytes, port: int) -> None:
        self.switch.packet_out(frame, port)

    def _count(self, what: str) -> None:
        self.counters[what] += 1

    def _new_acct_id(self) -> str:
        while True:
            self._acct_seq += 1
            acct = f"{self._boot}{self._acct_seq:08x}"
            # a restored session may hold it: its process started in the same
            # second, or the clock stepped back (a box without an RTC)
            if acct not in self.by_acct:
                return acct

    def _persist(self, sub: Subscriber) -> None:
        if self.store is not None and sub.state == State.UP and sub.transport.persistent and sub.lac is None:
            self.store.put(sub.sid, self.snapshot(sub))

    def flush(self) -> None:
        """Write the stored sessions' changes. A store that cannot be
        written is counted and logged once until it can again; the changes
        wait for the next flush."""
        if self.store is None:
            return
        try:
            self.store.flush()
        except sqlite3.Error as e:
            self._count("session store write failed")
            if not self._store_failing:
                log.error("session store %s: cannot write (%s); %d changes wait for the next try",
                          self.store.path, e, self.store.pending)
            self._store_failing = True
            return
        if self._store_failing:
            log.warning("session store %s: written again", self.store.path)
            self._store_failing = False
        waiters, self._flush_waiters = self._flush_waiters, []
        for w in waiters:
            if not w.done():
                w.set_result(None)

    async def _stored(self) -> None:
        """Return once what is marked for the store is on disk (the next
        flush), at most STORE_WAIT later. An Accounting-Start waits for
        it: a session that a crash before the flush would make a restart
        forget must not be open at the AAA server, which no Stop would ever
        close. Without a flush loop (tests, tools) it returns at once."""
        if self.store is None or not self.flushes_itself or not self.store.pending:
            return
        waiter = asyncio.get_running_loop().create_future()
        self._flush_waiters.append(waiter)
        try:
            await asyncio.wait_for(waiter, STORE_WAIT)
        except TimeoutError:
            self._count("accounting start sent before its session was stored")

    @property
    def sessions_by_state(self) -> dict[str, int]:
        c = collections.Counter(s.state.value for s in self.subs.values())
        return {st.value: c.get(st.value, 0) for st in State}

    # ------------------------------------------------------------------
    # PPPoE discovery
    def on_discovery(self, port: int, frame: bytes) -> None:
        try:
            l2, etype, off = pppoe.parse_l2(frame)
            if etype != pppoe.ETH_P_PPPOE_DISC:
                raise pppoe.CodecError("not pppoe discovery")
            pkt = pppoe.parse_discovery(frame[off:])
        except pppoe.CodecError as e:
            self._count(f"pppoe malformed: {e}")
            return
        line = self.lines.get(port, l2.s_vid, l2.c_vid)
        info = self.discovery.line_info(l2, port, line.line_id if line else 0, pkt)
        action = self.discovery.handle(l2, pkt, info)
        if isinstance(action, Reply):
            self._count(f"pppoe {pppoe.CODE_NAMES.get(action.packet.code, '?')} sent")
            self.packet_out(pppoe.discovery_frame(l2.reply_header(self.bng_mac), action.packet), port)
        elif isinstance(action, Drop):
            self._count(f"pppoe dropped: {action.reason}")
        elif isinstance(action, SessionRequest):
            self._padr(port, action)
        elif isinstance(action, PeerTerminate):
            self._padt_from_peer(port, l2, action)

    def _padr(self, port: int, req: SessionRequest) -> None:
        key = (port, req.l2.s_vid, req.l2.c_vid, req.client_mac, req.host_uniq)
        sub = self.by_padr.get(key)
        if sub is not None and sub.live:
            # the client lost our PADS: same answer, same session
            self._count("pppoe PADR retransmitted")
            t = sub.transport
            self.packet_out(pppoe.discovery_frame(req.l2.reply_header(self.bng_mac),
                                                  self.discovery.pads(req, t.session_id)), port)
            sub.link.lower_layer_repeated()
            self._drain(sub)
            return
        reply_l2 = req.l2.reply_header(self.bng_mac)
        sc = self.cfg.sessions
        refuse = None
        if len(self.subs) >= sc.max_sessions:
            refuse = "session limit reached"
        line = self.lines.get(port, req.l2.s_vid, req.l2.c_vid)
        if refuse is None and line is not None and sc.max_sessions_per_line \
                and len(line.sessions) >= sc.max_sessions_per_line:
            refuse = "line session limit reached"
        if refuse is None:
            try:
                line = self.lines.get_or_create(port, req.l2.s_vid, req.l2.c_vid, req.l2.s_tpid)
                session_id = self.lines.new_session_id(line)
            except Exhausted as e:
                refuse = str(e)
        if refuse is None:
            try:
                sess_idx = self.sess_idx.allocate()
            except Exhausted as e:
                line.sessions.discard(session_id)
                refuse = str(e)
        if refuse is not None:
            self._count(f"pppoe refused: {refuse}")
            self.packet_out(pppoe.discovery_frame(reply_l2, self.discovery.pads_error(req, refuse)), port)
            return
        transport = PppoeTransport(line, req.client_mac, session_id, self.bng_mac, req.host_uniq,
                                   req.max_payload, self.packet_out)
        link = PppLink(self.cfg.ppp, self.clock, self.rng, req.max_payload)
        info = LineInfo(port=port, s_vid=line.s_vid, c_vid=line.c_vid, line_id=line.line_id,
                        circuit_id=req.line.circuit_id, remote_id=req.line.remote_id)
        sub = Subscriber(sid=self._next_sid, transport=transport, link=link, line_info=info,
                         sess_idx=sess_idx, acct_session_id=self._new_acct_id(), created=self.clock())
        self._next_sid += 1
        sub.session_deadline = sub.created + sc.setup_timeout
        self.subs[sub.sid] = sub
        self.pppoe_sessions[transport.key] = sub
        self.by_padr[key] = sub
        self.by_acct[sub.acct_session_id] = sub
        pads = pppoe.discovery_frame(reply_l2, self.discovery.pads(req, session_id))
        if line.installed:
            self._start(sub, pads)
        else:
            self._spawn(self._install_line_then_start(line, sub, pads))

    async def _install_line_then_start(self, line: Line, sub: Subscriber, pads: bytes) -> None:
        fut = self._line_ready.get(line.line_id)
        if fut is None:
            fut = asyncio.get_running_loop().create_future()
            self._line_ready[line.line_id] = fut
            try:
                errors = await self.switch.write(inserts([self.tables.line(line.port, line.s_vid, line.c_vid,
                                                                           line.line_id)]))
                ok = not errors or errors[0].code.name == "ALREADY_EXISTS"
                if not ok:
                    log.error("line %s: line_map insert failed: %s", line.line_id, errors[0].message)
            except Exception as e:                       # switch gone: the CPE will retry
                log.error("line %s: line_map insert failed: %s", line.line_id, e)
                ok = False
            line.installed = ok
            fut.set_result(ok)
            del self._line_ready[line.line_id]
        ok = await fut
        if not sub.live:
            return
        if not ok:
            self._count("pppoe refused: line install failed")
            await self._teardown(sub, "line install failed", None, send_lower_down=False)
            return
        self._start(sub, pads)

    def _start(self, sub: Subscriber, pads: bytes) -> None:
        t = sub.transport
        self.packet_out(pads, t.line.port)
        self._count("pppoe PADS sent")
        sub.link.start()
        self._drain(sub)

    def _padt_from_peer(self, port: int, l2: pppoe.L2Header, act: PeerTerminate) -> None:
        line = self.lines.get(port, l2.s_vid, l2.c_vid)
        sub = self.pppoe_sessions.get((line.line_id, act.session_id)) if line else None
        if sub is None or sub.transport.client_mac != act.client_mac:
            self._count("pppoe PADT for unknown session")
            return
        self._count("pppoe PADT received")
        sub.transport.padt_received = True
        sub.cause = sub.cause or TerminateCause.USER_REQUEST
        if sub.lac is not None:
            self._spawn(self._teardown(sub, "PADT from client", sub.cause))
            return
        sub.link.abort("PADT from client")
        self._drain(sub)

    # ------------------------------------------------------------------
    # subscribers of other transports (L2TP at the LNS)
    def attach(self, transport, line_info: LineInfo, max_payload: int = 1492) -> Subscriber | None:
        """A subscriber whose PPP rides on `transport`; None when no session
        index is left. The caller starts its link with `run()`."""
        if len(self.subs) >= self.cfg.sessions.max_sessions:
            self._count("session refused: session limit reached")
            return None
        try:
            sess_idx = self.sess_idx.allocate()
        except Exhausted:
            self._count("session refused: no session index")
            return None
        sub = Subscriber(sid=self._next_sid, transport=transport,
                         link=PppLink(self.cfg.ppp, self.clock, self.rng, max_payload), line_info=line_info,
                         sess_idx=sess_idx, acct_session_id=self._new_acct_id(), created=self.clock())
        self._next_sid += 1
        sub.session_deadline = sub.created + self.cfg.sessions.setup_timeout
        self.subs[sub.sid] = sub
        self.by_acct[sub.acct_session_id] = sub
        return sub

    def run(self, sub: Subscriber, start: Callable[[PppLink], object]) -> None:
        """Start (or resume) the subscriber's link and act on what it says."""
        start(sub.link)
        self._drain(sub)

    def deliver(self, sub: Subscriber, protocol: int, info: bytes) -> None:
        """A PPP frame for the subscriber's link."""
        sub.link.receive(protocol, info)
        self._drain(sub)

    def switched_up(self, sub: Subscriber) -> None:
        """LAC: the subscriber's call reached its LNS and the data plane
        switches it: up from here on (accounting starts)."""
        if sub.live:
            self._spawn(self._send_accounting(sub.sid, self._session_up(sub)))

    def lower_layer_down(self, sub: Subscriber, reason: str, cause: TerminateCause) -> None:
        """The transport went away (L2TP CDN, tunnel lost): no goodbye to send."""
        if not sub.live:
            return
        sub.cause = sub.cause or cause
        if sub.lac is not None:
            self._spawn(self._teardown(sub, reason, sub.cause))
            return
        sub.link.abort(reason)
        self._drain(sub)

    # ------------------------------------------------------------------
    # PPP control from PPPoE sessions
    def on_ppp_control(self, port: int, line_id: int, frame: bytes) -> None:
        try:
            l2, etype, off = pppoe.parse_l2(frame)
            session_id, proto, info = pppoe.parse_session(frame[off:])
        except pppoe.CodecError as e:
            self._count(f"ppp malformed: {e}")
            return
        sub = self.pppoe_sessions.get((line_id, session_id))
        if sub is None or sub.transport.client_mac != l2.src:
            self._count("ppp for unknown session")
            self._padt_unknown(port, l2, session_id)
            return
        if sub.lac is not None:
            if self.l2tp is None or not self.l2tp.relay_upstream(sub, proto, info):
                self._count("ppp for a switched session dropped")
            return
        sub.link.receive(proto, info)
        self._drain(sub)

    def _padt_unknown(self, port: int, l2: pppoe.L2Header, session_id: int) -> None:
        """A CPE still talking in a session we do not have (we restarted
        without it, or tore it down and the PADT was lost): tell it, at
        most once a second per client, so it rediscovers."""
        now = self.clock()
        key = (port, l2.src)
        if now - self._unknown_padt.get(key, -10.0) < 1.0:
            return
        if len(self._unknown_padt) > 10000:
            self._unknown_padt.clear()
        self._unknown_padt[key] = now
        self._count("pppoe PADT sent for unknown session")
        self.packet_out(pppoe.discovery_frame(l2.reply_header(self.bng_mac),
                                              PppoeDiscovery.padt(session_id, "session unknown")), port)

    def find_pppoe(self, line_id: int, session_id: int, mac: bytes) -> Subscriber | None:
        sub = self.pppoe_sessions.get((line_id, session_id))
        return sub if sub is not None and sub.transport.client_mac == mac else None

    def by_address(self, addr: ipaddress.IPv4Address | ipaddress.IPv6Address) -> Subscriber | None:
        """The live session a downstream packet to `addr` is for: its IPv4
        address, or a WAN or delegated prefix holding it."""
        if isinstance(addr, ipaddress.IPv4Address):
            sub = self.by_ipv4.get(addr)
        else:
            held = self.by_ipv6.overlapping(ipaddress.IPv6Network((addr, 128)))
            sub = self.by_ipv6.get(held) if held is not None else None
        return sub if sub is not None and sub.live else None

    # ------------------------------------------------------------------
    # the link's output and events
    def _drain(self, sub: Subscriber) -> None:
        frames, events = sub.link.drain()
        held = any(isinstance(e, NetworkUp) for e in events)
        if not held:
            early = self._acks_ahead_of_entries(sub, frames)
            if early:
                self._spawn(self._install_then_send(sub, early, frames))
            else:
                for proto, info in frames:
                    sub.transport.send_ppp(proto, info)
            frames = []
        for ev in events:
            if isinstance(ev, AuthAttempt):
                sub.state = State.AUTHENTICATING
                self._spawn(self._authenticate(sub, ev.credentials))
            elif isinstance(ev, NetworkUp):
                # Our last Configure-Ack waits until the entries are in:
                # the peer sends data as soon as it sees it.
                self._spawn(self._network_up(sub, ev.protocol, frames))
                frames = []
            elif isinstance(ev, NetworkDown):
                # Renegotiation: the address stays the peer's (we Nak any
                # other), so its entries stay and traffic keeps flowing.
                if sub.link.lcp.state.name == "OPENED":
                    self._count("ncp renegotiation")
            elif isinstance(ev, NetworkFinished):
                self._spawn(self._network_down(sub, ev.protocol))
            elif isinstance(ev, LinkDown):
                cause = sub.cause or (TerminateCause.LOST_CARRIER if ev.peer_dead
                                      else TerminateCause.USER_REQUEST)
                self._spawn(self._teardown(sub, ev.reason, cause))
        if sub.live:
            self.timers.schedule(sub)

    def _on_timer(self, sub: Subscriber) -> None:
        if not sub.live:
            return
        now = self.clock()
        if sub.session_deadline is not None and sub.session_deadline <= now:
            sub.session_deadline = None
            if sub.state == State.UP:
                self._count("session timeout")
                self.close(sub, "session timeout", TerminateCause.SESSION_TIMEOUT)
            else:
                self._count("setup timeout")
                self.close(sub, "setup timed out", TerminateCause.NAS_ERROR)
            return
        sub.link.on_timer()
        self._drain(sub)

    def close(self, sub: Subscriber, reason: str, cause: TerminateCause) -> None:
        """Administrative close: LCP Terminate, then PADT and cleanup. A LAC
        session's PPP belongs to its LNS: it is torn down directly (CDN to
        the LNS, PADT to the subscriber)."""
        if not sub.live:
            return
        sub.cause = sub.cause or cause
        if sub.lac is not None:
            self._spawn(self._teardown(sub, reason, sub.cause))
            return
        sub.link.close(reason)
        self._drain(sub)

    # ------------------------------------------------------------------
    # authentication
    async def _authenticate(self, sub: Subscriber, creds: Credentials) -> None:
        req = AuthRequest(username=creds.username, method=creds.method,
                          client_mac=sub.transport.calling_station,
                          line=sub.line_info, session_id=getattr(sub.transport, "session_id", 0),
                          password=creds.password, chap_id=creds.chap_id, challenge=creds.challenge,
                          response=creds.response, acct_session_id=sub.acct_session_id)
        sub.username = creds.username
        try:
            result = await self.aaa.authenticate(req)
        except AaaUnavailable as e:
            self._count("aaa unavailable")
            log.warning("session %d (%s): AAA unavailable: %s", sub.sid, creds.username, e)
            result = AuthResult(False, "authentication service unavailable")
        if not sub.live:
            return
        if not sub.link.awaits_verdict(creds):
            # LCP renegotiated while AAA decided: the new exchange's own
            # Response is (or will be) with AAA; this verdict answers nothing
            self._count("auth verdict for a superseded attempt")
            log.info("session %d: %s: verdict discarded, authentication restarted meanwhile",
                     sub.sid, creds.username)
            return
        if not result.accepted:
            self._count("auth rejected")
            log.info("session %d: %s rejected: %s", sub.sid, creds.username, result.reply_message)
            sub.cause = TerminateCause.USER_ERROR
            sub.link.auth_result(creds, Verdict(False, result.reply_message or "authentication failed"), None)
            self._drain(sub)
            return
        self._count("auth accepted")
        sub.auth = result
        sub.rate_up_kbps, sub.rate_down_kbps = result.rate_up_kbps, result.rate_down_kbps
        if result.tunnels and sub.transport.kind == "pppoe":
            # LAC: the subscriber belongs to an LNS; it answers the authentication
            if self.l2tp is None or not self.l2tp.lac_enabled:
                self._count("auth rejected: tunnelled realm without L2TP")
                sub.link.auth_result(creds, Verdict(False, "service unavailable"), None)
                self._drain(sub)
                return
            await self.l2tp.lac_switch(sub, creds, result)
            return
        ipv4 = self._assign_ipv4(sub, result)
        if ipv4 is None:
            sub.cause = TerminateCause.NAS_ERROR
            sub.link.auth_result(creds, Verdict(False, "no address available"), None)
            self._drain(sub)
            return
        sub.state = State.NETWORK
        sub.link.auth_result(creds, Verdict(True, result.reply_message or "Welcome",
                                     mschapv2_success=result.mschapv2_success), ipv4)
        self._drain(sub)

    def _assign_ipv4(self, sub: Subscriber, result: AuthResult) -> Ipv4Assignment | None:
        if sub.ipv4 is not None:
            # re-authentication after an LCP renegotiation: the session keeps its address
            return Ipv4Assignment(peer=sub.ipv4, gateway=sub.link.ipv4.gateway, dns=sub.link.ipv4.dns) \
                if sub.link.ipv4 is not None else None
        try:
            if result.framed_ip is not None:
                if result.framed_ip in self.by_ipv4 or not self.pools.take_static(result.framed_ip):
                    self._count("address conflict")
                    log.warning("session %d: %s is in use by another session", sub.sid, result.framed_ip)
                    return None
                addr, pool = result.framed_ip, self.pools.owner(result.framed_ip)
                sub.pool = None
            else:
                addr, pool = self.pools.allocate(result.framed_pool)
                sub.pool = pool.cfg.name
        except PoolExhausted as e:
            self._count("pool exhausted")
            log.warning("session %d: %s", sub.sid, e)
            return None
        sub.ipv4 = addr
        self.by_ipv4[addr] = sub
        pcfg = (pool or self.pools.pool(None)).cfg
        dns = result.dns or pcfg.dns
        return Ipv4Assignment(peer=addr, gateway=pcfg.gateway, dns=dns)

    def _release_addresses(self, sub: Subscriber) -> None:
        if sub.ipv4 is not None:
            if self.by_ipv4.get(sub.ipv4) is sub:
                del self.by_ipv4[sub.ipv4]
            self.pools.release(sub.ipv4)
            sub.ipv4 = None
        for p, pool in ((sub.ipv6_prefix, self.v6_wan), (sub.delegated_prefix, self.v6_pd)):
            if p is not None:
                if self.by_ipv6.get(p) is sub:
                    del self.by_ipv6[p]
                if pool is not None:
                    pool.release(p)           # a prefix not of the pool is left alone

    def _assign_ipv6(self, sub: Subscriber) -> bool:
        """The session's WAN /64 (SLAAC) and delegated prefix, from AAA or
        the pools. True if it has either: a delegated prefix alone is a
        setup of its own (an unnumbered WAN, RFC 7084)."""
        a = sub.auth
        try:
            if sub.ipv6_prefix is None:
                if a is not None and a.framed_ipv6_prefix is not None:
                    sub.ipv6_prefix = self._claim_ipv6(sub, a.framed_ipv6_prefix, self.v6_wan, 64, 64,
                                                       "Framed-IPv6-Prefix")
                elif self.v6_wan is not None:
                    sub.ipv6_prefix = self._allocate_ipv6(self.v6_wan)
                if sub.ipv6_prefix is not None:
                    self.by_ipv6[sub.ipv6_prefix] = sub
            if sub.delegated_prefix is None:
                if a is not None and a.delegated_ipv6_prefix is not None:
                    sub.delegated_prefix = self._claim_ipv6(sub, a.delegated_ipv6_prefix, self.v6_pd,
                                                            self.cfg.ipv6.pd_min_length, 64,
                                                            "Delegated-IPv6-Prefix")
                elif self.v6_pd is not None:
                    sub.delegated_prefix = self._allocate_ipv6(self.v6_pd)
                if sub.delegated_prefix is not None:
                    self.by_ipv6[sub.delegated_prefix] = sub
        except PoolExhausted as e:
            self._count("ipv6 pool exhausted")
            log.warning("session %d: %s", sub.sid, e)
        return sub.ipv6_prefix is not None or sub.delegated_prefix is not None

    def _claim_ipv6(self, sub: Subscriber, p: ipaddress.IPv6Network, pool, shortest: int, longest: int,
                    what: str) -> ipaddress.IPv6Network | None:
        """An AAA-given prefix for this session, if it may have it: of a
        length the data plane holds (one entry pair per /64), held by no
        other session, and taken out of the pool it lies in so that the
        pool does not hand it out again."""
        if not shortest <= p.prefixlen <= longest:
            self._count("ipv6 prefix length refused")
            log.warning("session %d: %s %s refused: its length must be /%d to /%d", sub.sid, what, p,
                        shortest, longest)
            return None
        held = self.by_ipv6.overlapping(p)
        if held is not None or (pool is not None and not pool.take(p)):
            self._count("ipv6 prefix conflict")
            log.warning("session %d: %s %s is in use by another session%s", sub.sid, what, p,
                        f" (it overlaps {held})" if held not in (None, p) else "")
            return None
        return p

    def _allocate_ipv6(self, pool: Ipv6PrefixPool) -> ipaddress.IPv6Network:
        """The pool's next prefix that overlaps no live one: an AAA prefix
        of another length may lie inside a pooled one, or hold it. Those
        passed over go back to the pool, to be tried again later."""
        passed_over = []
        try:
            while True:
                p = pool.allocate()
                if self.by_ipv6.overlapping(p) is None:
                    return p
                passed_over.append(p)
        finally:
            if passed_over:
                self.counters["ipv6 pool prefix passed over"] += len(passed_over)
            for p in passed_over:
                pool.release(p)

    # ------------------------------------------------------------------
    # the data plane
    def _mss(self, sub: Subscriber) -> int:
        m = self.cfg.sessions.mss_clamp
        if m == "auto":
            return sub.mss_clamp
        return int(m)

    def _acks_ahead_of_entries(self, sub: Subscriber, frames: list[tuple[int, bytes]]) -> list[int]:
        """The NCPs whose Configure-Ack to the peer is among `frames` while
        their entries are not in. The peer opens the NCP, and sends data,
        on the later of our Ack and its own Ack received; when our Ack is
        the earlier one we reach Opened only on the peer's Ack, after the
        peer may already have sent. So every NCP Ack waits for the entries."""
        out = []
        for proto, info in frames:
            key = NCP_ENTRIES.get(proto)
            if key is None or info[:1] != CONF_ACK_CODE or proto in out:
                continue
            if key not in sub.installed or (sub.sid, proto) in self._ncp_writes:
                out.append(proto)
        return out

    async def _install_then_send(self, sub: Subscriber, protocols: list[int], frames: list[tuple[int, bytes]]) -> None:
        """Entries for NCPs we are acknowledging, then the held frames."""
        for protocol in protocols:
            if not await self._install_ncp(sub, protocol, frames):
                return
        for proto, info in frames:
            if sub.live:
                sub.transport.send_ppp(proto, info)

    async def _network_up(self, sub: Subscriber, protocol: int, held: list[tuple[int, bytes]]) -> None:
        if not await self._install_ncp(sub, protocol, held):
            return
        for proto, info in held:
            if sub.live:
                sub.transport.send_ppp(proto, info)
        if not sub.live:
            return
        start = None
        if sub.up_since is None:
            start = self._session_up(sub)
        else:                               # an NCP back after renegotiation
            sub.state = State.UP
            self._persist(sub)
        if protocol == PPP_IPV6CP and self.ipv6 is not None:
            self.ipv6.network_up(sub)
        if start is not None:               # in this task: one task less per session set up
            await self._stored()
            await self._send_accounting(sub.sid, start)

    async def _install_ncp(self, sub: Subscriber, protocol: int, held: list[tuple[int, bytes]]) -> bool:
        """The session's entries and the NCP's (each once: whoever comes
        first writes them, a later caller waits for that write). False if
        the session is gone or the write failed (then the session is
        closed, after the held frames)."""
        if not sub.live:
            return False
        pending = self._ncp_writes.get((sub.sid, protocol))
        if pending is not None:
            return await asyncio.shield(pending)
        fut: asyncio.Future = asyncio.get_running_loop().create_future()
        self._ncp_writes[(sub.sid, protocol)] = fut
        ok = False
        try:
            ok = await self._write_ncp(sub, protocol, held)
        finally:
            del self._ncp_writes[(sub.sid, protocol)]
            fut.set_result(ok)
        return ok

    def _session_group_entries(self, sub: Subscriber, group: str) -> list:
        """The entries of one of a session's SESSION_GROUPS as its state
        asks for them now: mss_clamp and max_len follow the MRU its LCP
        negotiated."""
        t, tables, mss, mru = sub.transport, self.tables, self._mss(sub), sub.link.lcp_neg.peer_mru
        if group == "session":
            return t.session_entries(tables, sub.sess_idx, mss)
        if group == "ipv4":
            return t.ipv4_entries(tables, sub.sess_idx, sub.ipv4, mss, mru) if sub.ipv4 is not None else []
        assert group == "ipv6", group
        return [e for p in (sub.ipv6_prefix, sub.delegated_prefix) if p is not None
                for e in t.ipv6_entries(tables, sub.sess_idx, p, mss, mru)]

    def _renegotiated_entries(self, sub: Subscriber) -> dict[str, list]:
        """The installed groups whose entries an LCP renegotiation changed
        (another MRU: mss_clamp, max_len), as they should be now. A group
        that lost an entry to a failed insert is left as it is."""
        out = {}
        for group in SESSION_GROUPS:
            have = sub.installed.get(group)
            if have is None:
                continue
            want = self._session_group_entries(sub, group)
            if len(want) == len(have) and want != have and \
                    all(entry_key(w) == entry_key(h) for w, h in zip(want, have)):
                out[group] = want
        return out

    async def _write_ncp(self, sub: Subscriber, protocol: int, held: list[tuple[int, bytes]]) -> bool:
        tables = self.tables
        new: dict[str, list] = {}
        if "session" not in sub.installed:
            new["session"] = self._session_group_entries(sub, "session")
        if protocol == PPP_IPCP and sub.ipv4 is not None and "ipv4" not in sub.installed:
            new["ipv4"] = self._session_group_entries(sub, "ipv4")
        if protocol == PPP_IPV6CP and "ipv6" not in sub.installed and self._assign_ipv6(sub):
            new["ipv6"] = self._session_group_entries(sub, "ipv6")
        changed = self._renegotiated_entries(sub)
        updates = []
        if "session" in new:
            updates += modifies(tables.session_counters_zero(sub.sess_idx)
                                + tables.session_meters(sub.sess_idx, sub.rate_up_kbps, sub.rate_down_kbps))
        first_insert = len(updates)
        updates += inserts([e for ents in new.values() for e in ents])
        first_modify = len(updates)
        updates += modifies([e for ents in changed.values() for e in ents])
        if changed:
            self._count("entries rewritten for a new mru")
        sub.installed.update(new)                    # before the await: see module docstring
        sub.installed.update(changed)
        try:
            errors = await self.switch.write(updates)
        except Exception as e:
            errors = [e]
        if errors:
            self._count("data plane install failed")
            log.error("session %d: installing entries failed: %s", sub.sid, errors[0])
            # What did go in stays listed in sub.installed: the teardown
            # removes it. An insert that failed is not ours: with
            # ALREADY_EXISTS the entry is another session's (a prefix both
            # were given), which the teardown must not delete.
            self._unlist_failed(sub, new, {e.index - first_insert for e in errors
                                           if isinstance(e, UpdateError)
                                           and first_insert <= e.index < first_modify})
            for proto, info in held:
                sub.transport.send_ppp(proto, info)
            self.close(sub, "data plane error", TerminateCause.NAS_ERROR)
            return False
        return sub.live

    @staticmethod
    def _unlist_failed(sub: Subscriber, new: dict[str, list], failed: set[int]) -> None:
        """Takes out of sub.installed the entries of `new` (in insert order)
        whose inserts failed."""
        if not failed:
            return
        i = 0
        for group, ents in new.items():
            kept = [e for k, e in enumerate(ents, i) if k not in failed]
            i += len(ents)
            sub.installed[group] = kept

    def _session_up(self, sub: Subscriber) -> AcctRecord:
        """The session is up: timers, persistence, callbacks. Returns the
        Accounting-Start record, which the caller sends."""
        now = self.clock()
        sub.state = State.UP
        sub.up_since = now
        sub.up_since_wall = time.time()
        self.setups_total += 1
        self.setup_times.append(now - sub.created)
        self.setup_seconds_sum += now - sub.created
        a = sub.auth
        sub.session_deadline = now + a.session_timeout if a is not None and a.session_timeout else None
        interval = self._interim_interval(a)
        sub.next_interim = now + interval if interval else None
        sub.idle_since = now
        self.timers.schedule(sub)
        self._persist(sub)
        log.info("session %d up: %s %s %s", sub.sid, sub.username, sub.ipv4 or "", sub.transport.describe())
        for cb in self.on_session_up:
            cb(sub)
        sub.acct_started = True
        return self._acct_record(sub, AcctStatus.START, SessionCounters())

    async def _network_down(self, sub: Subscriber, protocol: int) -> None:
        """An NCP finished while the link stays: withdraw its entries."""
        key = NCP_ENTRIES[protocol]
        ents = sub.installed.pop(key, None)
        self._persist(sub)          # a restart must not put the entries back
        if ents and sub.live:
            errors = await self.switch.write(deletes(ents))
            if errors:
                log.error("session %d: removing %s entries: %s", sub.sid, key, errors[0].message)

    async def _teardown(self, sub: Subscriber, reason: str, cause: TerminateCause | None,
                        send_lower_down: bool = True) -> None:
        if sub.state in (State.TERMINATING, State.DOWN):
            return
        was_up = sub.acct_started
        sub.state = State.TERMINATING
        sub.session_deadline = None
        t = sub.transport
        if send_lower_down:
            t.lower_down(reason)
        if self.pppoe_sessions.get(getattr(t, "key", None)) is sub:
            del self.pppoe_sessions[t.key]
        ents = [e for group in sub.installed.values() for e in group]
        sub.installed = {}
        # if the data plane cannot be read, the Stop carries the totals last
        # reported: a Stop below its own Interims would undo billed traffic
        final = sub.reported or SessionCounters()
        if ents:
            try:
                errors = await self.switch.write(deletes(ents) + modifies(
                    self.tables.session_meters(sub.sess_idx, None, None)))
                for e in errors:
                    log.error("session %d: removing entries: %s", sub.sid, e.message)
                if was_up:
                    final = (await self.read_counters([sub])).get(sub.sess_idx, final)
            except Exception as e:
                self._count("data plane remove failed")
                log.error("session %d: removing entries failed: %s", sub.sid, e)
        stop = None
        if was_up:
            sub.cause = cause or TerminateCause.NAS_REQUEST
            stop = self._acct_record(sub, AcctStatus.STOP, final)
        self._release_addresses(sub)
        self.sess_idx.release(sub.sess_idx)
        if t.kind == "pppoe":
            t.line.sessions.discard(t.session_id)
            for k, s in list(self.by_padr.items()):
                if s is sub:
                    del self.by_padr[k]
                    break
        self.subs.pop(sub.sid, None)
        self.by_acct.pop(sub.acct_session_id, None)
        if self.store is not None and was_up:
            self.store.delete(sub.sid)
        sub.state = State.DOWN
        self._count(f"session down: {reason}")
        log.info("session %d down (%s): %s", sub.sid, reason, sub.username)
        for cb in self.on_session_down:
            cb(sub)
        if stop is not None:
            await self._send_accounting(sub.sid, stop)

    # ------------------------------------------------------------------
    # accounting
    def _interim_interval(self, a: AuthResult | None) -> int:
        """Seconds between a session's Interims: AAA's Acct-Interim-Interval,
        else the configured one (0: none), never below the configured
        minimum (RFC 2869 5.16: 60 s; one wrong value from a server would
        otherwise have every session report at every accounting tick)."""
        interval = a.interim_interval if a is not None and a.interim_interval else self.cfg.accounting.interim_interval
        return max(interval, self.cfg.accounting.min_interim_interval) if interval else 0

    def _acct_record(self, sub: Subscriber, status: AcctStatus, counters: SessionCounters) -> AcctRecord:
        now = self.clock()
        sub.reported = counters
        return AcctRecord(status=status, acct_session_id=sub.acct_session_id, username=sub.username,
                          client_mac=sub.transport.calling_station,
                          line=sub.line_info, session_id=getattr(sub.transport, "session_id", 0),
                          framed_ip=sub.ipv4,
                          session_time=int(now - sub.up_since) if sub.up_since else 0, counters=counters,
                          terminate_cause=sub.cause if status == AcctStatus.STOP else None,
                          classes=sub.auth.classes if sub.auth else (),
                          framed_ipv6_prefix=sub.ipv6_prefix, delegated_ipv6_prefix=sub.delegated_prefix,
                          event_time=time.time())

    async def _accounting(self, sub: Subscriber, status: AcctStatus, counters: SessionCounters) -> None:
        rec = self._acct_record(sub, status, counters)
        if status == AcctStatus.INTERIM:
            self._persist(sub)          # its totals, for a switch that loses its counters
        await self._send_accounting(sub.sid, rec)

    @staticmethod
    def _with_base(sub: Subscriber, c: SessionCounters) -> SessionCounters:
        b = sub.counter_base
        if b is None:
            return c
        return SessionCounters(c.packets_in + b.packets_in, c.octets_in + b.octets_in,
                               c.packets_out + b.packets_out, c.octets_out + b.octets_out)

    def counters_lost(self) -> int:
        """The switch starts counting from zero (a pipeline was pushed):
        each session's totals go on from the ones it last reported. The
        traffic since that report is lost; a total that went down would
        undo traffic already billed. Returns the sessions concerned."""
        n = 0
        for sub in self.subs.values():
            if sub.reported is not None:
                sub.counter_base = sub.reported
                self._persist(sub)
                n += 1
        return n

    async def _send_accounting(self, sid: int, rec: AcctRecord) -> None:
        try:
            await self.aaa.account(rec)
            self._count(f"accounting {rec.status.name.lower()}")
        except Exception as e:
            self._count("accounting failed")
            log.warning("session %d: accounting %s failed: %s", sid, rec.status.name, e)

    async def read_counters(self, subs: list[Subscriber]) -> dict[int, SessionCounters]:
        out: dict[int, SessionCounters] = {}
        reads = [r for s in subs for r in self.tables.session_counter_reads(s.sess_idx)]
        for i in range(0, len(reads), 4000):
            out.update(self.tables.session_counters(await self.switch.read(*reads[i:i + 4000])))
        for s in subs:
            if s.counter_base is not None and s.sess_idx in out:
                out[s.sess_idx] = self._with_base(s, out[s.sess_idx])
        return out

    async def read_policers(self, sub: Subscriber) -> dict[str, dict[str, dict[str, int]]]:
        """The session's policer colour counts by direction (bngctl show session)."""
        return self.tables.session_policers(await self.switch.read(*self.tables.session_policer_reads(sub.sess_idx)))

    async def accounting_loop(self) -> None:
        """Interim updates and idle timeouts, checked every tick for the
        sessions that are due (one counters read for all of them)."""
        tick = self.cfg.accounting.tick
        while True:
            await asyncio.sleep(tick)
            try:
                await self._accounting_tick()
            except Exception:
                log.exception("accounting tick")

    async def _accounting_tick(self) -> None:
        now = self.clock()
        due_interim, due_idle = [], []
        for s in self.subs.values():
            if s.state != State.UP:
                continue
            if s.next_interim is not None and s.next_interim <= now:
                due_interim.append(s)
            idle = s.auth.idle_timeout if s.auth else None
            if idle and now - s.idle_since >= min(idle, 60) / 2:
                due_idle.append(s)
        if not due_interim and not due_idle:
            return
        counters = await self.read_counters(list({id(s): s for s in due_interim + due_idle}.values()))
        for s in due_interim:
            if s.state != State.UP:
                continue
            a = s.auth
            interval = self._interim_interval(a)
            s.next_interim = now + interval
            self._spawn(self._accounting(s, AcctStatus.INTERIM, counters.get(s.sess_idx, SessionCounters())))
        for s in due_idle:
            if s.state != State.UP:
                continue
            c = counters.get(s.sess_idx, SessionCounters())
            octets = c.octets_in + c.octets_out
            if octets != s.idle_octets:
                s.idle_octets = octets
                s.idle_since = now
            elif now - s.idle_since >= s.auth.idle_timeout:
                self._count("idle timeout")
                self.close(s, "idle timeout", TerminateCause.IDLE_TIMEOUT)

    # ------------------------------------------------------------------
    # operator and RADIUS-initiated changes
    def find(self, *, sid: int | None = None, acct_session_id: str | None = None, username: str | None = None,
             ipv4: ipaddress.IPv4Address | None = None, mac: str | None = None) -> list[Subscriber]:
        """The sessions that match every criterion given; none when no
        criterion is given (never all of them by accident)."""
        if sid is None and acct_session_id is None and username is None and ipv4 is None and mac is None:
            return []
        if sid is not None:
            s = self.subs.get(sid)
            return [s] if s else []
        if acct_session_id is not None:
            s = self.by_acct.get(acct_session_id)
            cands = [s] if s else []
        elif ipv4 is not None:
            s = self.by_ipv4.get(ipv4)
            cands = [s] if s else []
        else:
            cands = list(self.subs.values())
        out = []
        for s in cands:
            if username is not None and s.username != username:
                continue
            if ipv4 is not None and s.ipv4 != ipv4:
                continue
            if mac is not None and s.transport.calling_station != mac.lower():
                continue
            out.append(s)
        return out

    async def change_rates(self, sub: Subscriber, up_kbps: int | None, down_kbps: int | None) -> None:
        """CoA: new policer rates for a live session, without dropping it."""
        errors = await self.switch.write(modifies(self.tables.session_meters(sub.sess_idx, up_kbps, down_kbps)))
        if errors:
            raise RuntimeError(errors[0].message)
        sub.rate_up_kbps, sub.rate_down_kbps = up_kbps, down_kbps
        if sub.auth is not None:
            sub.auth.rate_up_kbps, sub.auth.rate_down_kbps = up_kbps, down_kbps
        self._persist(sub)

    async def dynauth(self, req: DynAuthRequest) -> DynAuthError | None:
        """RFC 5176 Disconnect-Request and CoA-Request."""
        if any(v is not None for v in (req.acct_session_id, req.username, req.framed_ip, req.client_mac)):
            subs = self.find(acct_session_id=req.acct_session_id, username=req.username, ipv4=req.framed_ip,
                             mac=req.client_mac)
        else:       # named by the line or the prefix alone (dynauth.py refuses a request naming nothing)
            subs = list(self.subs.values())
        if req.nas_port_id is not None:
            subs = [s for s in subs if s.line_info.nas_port_id == req.nas_port_id]
        if req.nas_port is not None:
            subs = [s for s in subs if s.line_info.line_id == req.nas_port]
        if req.framed_ipv6_prefix is not None:
            subs = [s for s in subs if s.ipv6_prefix == req.framed_ipv6_prefix]
        subs = [s for s in subs if s.live]
        if not subs:
            self._count(f"dynauth {req.kind}: no session")
            return DynAuthError.SESSION_CONTEXT_NOT_FOUND
        if req.kind == "disconnect":
            for s in subs:
                self.close(s, "disconnect request", TerminateCause.ADMIN_RESET)
            self._count("dynauth disconnect")
            return None
        new = req.new_auth
        if new is None:
            return DynAuthError.MISSING_ATTRIBUTE
        # A CoA is applied whole or not at all (RFC 5176 2.3): the rates of
        # every matching session first, undone if one cannot be changed;
        # then what cannot fail.
        changed: list[tuple[Subscriber, int | None, int | None]] = []
        for s in subs:
            up = new.rate_up_kbps if new.rate_up_kbps is not None else s.rate_up_kbps
            down = new.rate_down_kbps if new.rate_down_kbps is not None else s.rate_down_kbps
            before = (s, s.rate_up_kbps, s.rate_down_kbps)
            try:
                await self.change_rates(s, up, down)
            except Exception as e:
                log.error("session %d: CoA failed: %s", s.sid, e)
                for t, old_up, old_down in reversed(changed + [before]):   # this one may be half written
                    try:
                        await self.change_rates(t, old_up, old_down)
                    except Exception as e2:
                        self._count("dynauth coa: roll-back failed")
                        log.error("session %d: undoing the CoA failed, its new rates stay: %s", t.sid, e2)
                return DynAuthError.RESOURCES_UNAVAILABLE
            changed.append(before)
        for s in subs:
            if new.session_timeout is not None and s.auth is not None:
                s.auth.session_timeout = new.session_timeout
                s.session_deadline = (s.up_since or self.clock()) + new.session_timeout
                self.timers.schedule(s)
            if new.idle_timeout is not None and s.auth is not None:
                s.auth.idle_timeout = new.idle_timeout
            if new.interim_interval is not None and s.auth is not None:
                s.auth.interim_interval = new.interim_interval
                s.next_interim = self.clock() + self._interim_interval(s.auth)
            self._persist(s)        # a restarted controller keeps the CoA's limits
        self._count("dynauth coa")
        return None

    async def terminate_all(self, reason: str, cause: TerminateCause, timeout: float = 5.0) -> None:
        """Graceful shutdown: LCP Terminate everyone, wait for the acks (or
        the Restart timer), then whatever is left is torn down directly."""
        for s in list(self.subs.values()):
            self.close(s, reason, cause)
        deadline = self.clock() + timeout
        while self.subs and self.clock() < deadline:
            await asyncio.sleep(0.05)
        for s in list(self.subs.values()):
            s.cause = s.cause or cause
            await self._teardown(s, reason, s.cause)
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=timeout)

    # ------------------------------------------------------------------
    # controller restarts
    def snapshot(self, sub: Subscriber) -> dict:
        return {"sid": sub.sid, "transport": sub.transport.snapshot(),
                "link": dict(vars(sub.link.snapshot())), "sess_idx": sub.sess_idx,
                "acct_session_id": sub.acct_session_id, "username": sub.username,
                "auth": auth_to_dict(sub.auth), "ipv4": str(sub.ipv4) if sub.ipv4 else None, "pool": sub.pool,
                "ipv6_prefix": str(sub.ipv6_prefix) if sub.ipv6_prefix else None,
                "delegated_prefix": str(sub.delegated_prefix) if sub.delegated_prefix else None,
                "up_since_wall": sub.up_since_wall, "installed": sorted(sub.installed),
                "rate_up_kbps": sub.rate_up_kbps, "rate_down_kbps": sub.rate_down_kbps,
                "line_info": dict(vars(sub.line_info)),
                "reported": dataclasses.asdict(sub.reported) if sub.reported else None,
                "counter_base": dataclasses.asdict(sub.counter_base) if sub.counter_base else None}

    def restore(self, snap: dict) -> Subscriber | None:
        """Rebuild a session from its snapshot: no packet is sent, the
        entries are derived again (the caller reconciles the switch).
        Everything in the snapshot is read and checked against the sessions
        already restored before anything is reserved, so a snapshot that
        cannot be restored (a pool renamed, a field this version does not
        know, an address or index another session holds) raises
        `RestoreRefused` or the parse error and leaves nothing behind."""
        ts = snap["transport"]
        if ts["type"] != "pppoe":
            return None                                  # L2TP sessions: l2tp/ restores its own
        ls = dict(snap["link"])
        ls["ipv4"] = tuple(ls["ipv4"]) if ls["ipv4"] else None
        ls["ipv6_iids"] = tuple(ls["ipv6_iids"]) if ls["ipv6_iids"] else None
        link_snap = LinkSnapshot(**ls)
        line_info = LineInfo(**snap["line_info"])
        auth = auth_from_dict(snap["auth"])
        pool = snap.get("pool")
        ipv4 = ipaddress.IPv4Address(snap["ipv4"]) if snap.get("ipv4") else None
        v4_pool = self.pools.pool(pool) if ipv4 is not None and pool else None
        v6 = {k: ipaddress.IPv6Network(snap[k]) for k in ("ipv6_prefix", "delegated_prefix") if snap.get(k)}
        reported = SessionCounters(**snap["reported"]) if snap.get("reported") else None
        counter_base = SessionCounters(**snap["counter_base"]) if snap.get("counter_base") else None
        client_mac = bytes.fromhex(ts["client_mac"])
        host_uniq = bytes.fromhex(ts["host_uniq"]) if ts.get("host_uniq") else None
        sess_idx = snap["sess_idx"]
        if not self.sess_idx.lo <= sess_idx <= self.sess_idx.hi or sess_idx in self.sess_idx.used:
            raise RestoreRefused(f"session index {sess_idx} in use or out of range")
        if ipv4 is not None and ipv4 in self.by_ipv4:
            raise RestoreRefused(f"IPv4 {ipv4} is session {self.by_ipv4[ipv4].sid}'s")
        for p in v6.values():
            if (held := self.by_ipv6.overlapping(p)) is not None:
                raise RestoreRefused(f"IPv6 prefix {p} overlaps {held} of session {self.by_ipv6[held].sid}")
        if snap["acct_session_id"] in self.by_acct:
            raise RestoreRefused(f"Acct-Session-Id {snap['acct_session_id']} twice")

        line = self.lines.restore(ts["line_id"], ts["port"], ts["s_vid"], ts["c_vid"], ts["s_tpid"])
        line.s_tpid = ts["s_tpid"]          # line_map does not record the TPID; the session does
        if ts["session_id"] in line.sessions:
            raise RestoreRefused(f"PPPoE session {ts['session_id']} on line {line.line_id} twice")
        self.sess_idx.take(sess_idx)
        line.sessions.add(ts["session_id"])
        transport = PppoeTransport(line, client_mac, ts["session_id"], self.bng_mac, host_uniq,
                                   ts["max_payload"], self.packet_out)
        link = PppLink.restore(self.cfg.ppp, self.clock, link_snap, self.rng, ts["max_payload"])
        now = self.clock()
        up_wall = snap.get("up_since_wall") or time.time()
        sub = Subscriber(sid=snap["sid"], transport=transport, link=link, line_info=line_info,
                         sess_idx=sess_idx, acct_session_id=snap["acct_session_id"], created=now,
                         state=State.UP, username=snap["username"], auth=auth, pool=pool,
                         rate_up_kbps=snap.get("rate_up_kbps"), rate_down_kbps=snap.get("rate_down_kbps"))
        sub.up_since = now - max(0.0, time.time() - up_wall)
        sub.up_since_wall = up_wall
        sub.acct_started = True
        sub.reported, sub.counter_base = reported, counter_base
        if ipv4 is not None:
            sub.ipv4 = ipv4
            if v4_pool is not None:
                v4_pool.take(ipv4)
            else:
                self.pools.take_static(ipv4)
            self.by_ipv4[ipv4] = sub
        for k, p in v6.items():
            setattr(sub, k, p)
        for p, pool in ((sub.ipv6_prefix, self.v6_wan), (sub.delegated_prefix, self.v6_pd)):
            if p is not None:
                self.by_ipv6[p] = sub
                if pool is not None:
                    pool.take(p)
        inst = set(snap.get("installed", []))
        sub.installed["session"] = self._session_group_entries(sub, "session")
        if "ipv4" in inst and sub.ipv4 is not None:
            sub.installed["ipv4"] = self._session_group_entries(sub, "ipv4")
        if "ipv6" in inst:
            sub.installed["ipv6"] = self._session_group_entries(sub, "ipv6")
        a = sub.auth
        if a is not None and a.session_timeout:
            sub.session_deadline = sub.up_since + a.session_timeout
        interval = self._interim_interval(a)
        sub.next_interim = now + interval if interval else None
        sub.idle_since = now
        self._next_sid = max(self._next_sid, sub.sid + 1)
        self.subs[sub.sid] = sub
        self.pppoe_sessions[transport.key] = sub
        self.by_acct[sub.acct_session_id] = sub
        self.timers.schedule(sub)
        return sub

    def unrestored_stop(self, snap: dict) -> AcctRecord | None:
        """The Accounting-Stop of a stored session that is not taken over
        (refused, or unreadable), so that the AAA server does not keep it
        open for ever (and refuse the subscriber's next login where it
        limits simultaneous sessions). Built from what of the snapshot can
        be read, with the totals last reported; None without an
        Acct-Session-Id to close."""
        acct = snap.get("acct_session_id")
        if not acct:
            return None

        def readable(build, default):
            try:
                return build()
            except (TypeError, ValueError, KeyError, AttributeError):
                return default
        ts = snap.get("transport") or {}
        auth = readable(lambda: auth_from_dict(snap.get("auth")), None)
        up_wall = snap.get("up_since_wall")
        return AcctRecord(
            status=AcctStatus.STOP, acct_session_id=str(acct), username=str(snap.get("username") or ""),
            client_mac=readable(lambda: pppoe.mac_str(bytes.fromhex(ts["client_mac"])), ""),
            line=readable(lambda: LineInfo(**snap["line_info"]), LineInfo(port=int(ts.get("port") or 0))),
            session_id=int(ts.get("session_id") or 0),
            framed_ip=readable(lambda: ipaddress.IPv4Address(snap["ipv4"]), None),
            session_time=int(max(0.0, time.time() - up_wall)) if isinstance(up_wall, (int, float)) else 0,
            counters=readable(lambda: SessionCounters(**snap["reported"]), SessionCounters()),
            terminate_cause=TerminateCause.NAS_ERROR, classes=auth.classes if auth else (),
            framed_ipv6_prefix=readable(lambda: ipaddress.IPv6Network(snap["ipv6_prefix"]), None),
            delegated_ipv6_prefix=readable(lambda: ipaddress.IPv6Network(snap["delegated_prefix"]), None),
            event_time=time.time())

    async def send_unrestored_stop(self, snap: dict) -> None:
        rec = self.unrestored_stop(snap)
        if rec is not None:
            self._count("accounting stop of an unrestored session")
            await self._send_accounting(int(snap.get("sid") or 0), rec)

    def desired_session_entries(self) -> list[p4r.TableEntry]:
        return [e for s in self.subs.values() for g in s.installed.values() for e in g]

    def desired_meters(self) -> list[p4r.MeterEntry]:
        return [m for s in self.subs.values() if s.rate_up_kbps or s.rate_down_kbps
                for m in self.tables.session_meters(s.sess_idx, s.rate_up_kbps, s.rate_down_kbps)]

"""The L2TP side of the BNG as one sans-I/O object: every tunnel, LAC and
LNS, behind one UDP address (or several).

How the owner (l2tp/service.py) drives it:

- Input: `receive(payload, peer, local)` for every L2TP payload (what
  follows the UDP header) that reached the controller, i.e. control
  messages punted by the data plane and data messages it punted (PPP
  control frames of LNS sessions, frames for unknown sessions). `peer` is
  the sender's (address, port), `local` the address it was sent to (kept
  per tunnel, opaque here).
- Output: after every call, `drain()` returns the `Datagram`s to send
  (payload, peer, local: a packet-out from local:1701 to peer) and the
  events; the owner reacts to events (install data-plane entries on
  `SessionUp`, remove them on `SessionDown`/`TunnelDown`, run PPP on
  `PppFrame`, answer `IncomingCall` with `accept_session()` or
  `refuse_session()`, count and log `TunnelFailed`: a tunnel a peer opened
  that ended before it was up, e.g. for a wrong tunnel secret) and sends
  the datagrams.
- Time: `next_deadline()` is the earliest time `on_timer()` must be called
  (None: nothing pending). Tunnels sit in one heap, so 40k sessions over a
  few tunnels cost a few heap entries. The endpoint has `scheduled` and
  `next_deadline()`, the `Timed` protocol of timers.TimerHeap.
- Requests: `open_tunnel(peer)` (LAC: to the LNS at peer, normally port
  1701), `open_session(tunnel, CallParams)` (LAC: may be called before
  the tunnel is up; the ICRQ waits), `close_session()`, `close_tunnel()`,
  `send_ppp(session, protocol, info)` (a PPP frame on a session, for the
  PPP control the controller does itself).

Demultiplexing: the header's Tunnel ID is ours, except in messages sent
before the peer learned it (its SCCRQ and their retransmissions, a StopCCN
sent early), which carry 0 and the peer's Assigned Tunnel ID; those are
found by (peer, peer's tunnel id). A new SCCRQ creates a responder tunnel
(with `policy(peer, host_name)`'s config, or the default one if
`accept_tunnels`; a refused one gets StopCCN result 4), after the
tie-breaker check against our own SCCRQs to that peer (RFC 2661 4.4.3: the
lower Tie Breaker wins; our losing tunnel becomes the responder for the
peer's SCCRQ and keeps its waiting sessions). Messages for unknown tunnels,
from the wrong address, or malformed are counted in `counters` and
dropped: there is nobody to send a StopCCN to. `counters` also keeps what
outlives the tunnels themselves (theirs go with them): "tunnel refused"
(by policy), "tunnel authentication failed" (a peer's wrong or missing
Challenge Response, either role) and "tunnel setup failed" (a tunnel that
ended before it was up, other than refused).
"""
from __future__ import annotations

import heapq
import itertools
import os
import random
import time
from typing import Callable

from .codec import (ASSIGNED_TUNNEL_ID, HOST_NAME, SCCRQ, STOP_NOT_AUTHORIZED, TIE_BREAKER, CodecError,
                    ControlMessage, ResultCode, decode_control, decode_data, encode_data)
from .ids import IdAllocator
from .tunnel import (Address, CallParams, Datagram, Event, L2tpError, PppFrame, Session, SessionState,
                     Tunnel, TunnelConfig, TunnelState)

Policy = Callable[[Address, str], "TunnelConfig | None"]


class L2tpEndpoint:
    def __init__(self, config: TunnelConfig | None = None, clock: Callable[[], float] = time.monotonic,
                 rng: random.Random | None = None, tunnel_ids: IdAllocator | None = None,
                 policy: Policy | None = None):
        self.config = config or TunnelConfig()
        self.clock = clock
        self.rng = rng
        self.randbytes: Callable[[int], bytes] = rng.randbytes if rng is not None else os.urandom
        self.tunnel_ids = tunnel_ids or IdAllocator(rng)
        self.policy = policy
        self.tunnels: dict[int, Tunnel] = {}
        self._by_peer_tid: dict[tuple[Address, int], Tunnel] = {}
        self.out: list[Datagram] = []
        self.events: list[Event] = []
        self.counters: dict[str, int] = {}
        self._serial = itertools.count(1)
        self._heap: list[tuple[float, int, Tunnel]] = []
        self._seq = itertools.count()
        self.scheduled: float | None = None     # for timers.TimerHeap

    # ---- plumbing ----
    def _count(self, what: str) -> None:
        self.counters[what] = self.counters.get(what, 0) + 1

    def next_serial(self) -> int:
        """Call Serial Numbers: increasing, shared by all tunnels (RFC 2661 4.4.4)."""
        return next(self._serial) % 0xFFFFFFFF + 1

    def drain(self) -> tuple[list[Datagram], list[Event]]:
        out, ev = self.out, self.events
        self.out, self.events = [], []
        return out, ev

    def _done(self, t: Tunnel) -> None:
        """After anything that touched t: its output out, its timer armed."""
        t.flush()
        if t.state is not TunnelState.CLOSED:
            self._schedule(t)

    def _remove(self, t: Tunnel) -> None:
        """Called by the tunnel when it is finished."""
        t.flush()
        if self.tunnels.get(t.local_id) is t:
            del self.tunnels[t.local_id]
            self.tunnel_ids.release(t.local_id)
        key = (t.peer, t.peer_id)
        if self._by_peer_tid.get(key) is t:
            del self._by_peer_tid[key]
        t.scheduled = None

    # ---- timers ----
    def _schedule(self, t: Tunnel) -> None:
        d = t.next_deadline()
        if d is None:
            t.scheduled = None
            return
        if t.scheduled is not None and t.scheduled <= d:
            return                          # fires early, finds nothing due, re-arms
        t.scheduled = d
        heapq.heappush(self._heap, (d, next(self._seq), t))

    def next_deadline(self) -> float | None:
        h = self._heap
        while h and h[0][2].scheduled != h[0][0]:
            heapq.heappop(h)                 # stale
        return h[0][0] if h else None

    def on_timer(self) -> None:
        now = self.clock()
        h = self._heap
        while h and h[0][0] <= now:
            d, _, t = heapq.heappop(h)
            if t.scheduled != d:
                continue
            t.scheduled = None
            t.on_timer()
            self._done(t)

    # ---- tunnels ----
    def open_tunnel(self, peer: Address, local: Address = None, config: TunnelConfig | None = None) -> Tunnel:
        """Initiate a tunnel (SCCRQ) to peer. TunnelUp or TunnelDown follows."""
        tid = self.tunnel_ids.allocate()
        if tid is None:
            raise L2tpError("no free tunnel id")
        t = Tunnel(self, config or self.config, tid, peer, local, initiator=True)
        self.tunnels[tid] = t
        t.start()
        self._done(t)
        return t

    def close_tunnel(self, t: Tunnel, result: ResultCode | None = None, reason: str = "closed") -> None:
        """StopCCN (default result 1); SessionDowns and TunnelDown at once."""
        t.close(result, reason)
        self._done(t)

    def tunnel(self, local_id: int) -> Tunnel | None:
        return self.tunnels.get(local_id)

    # ---- sessions ----
    def open_session(self, t: Tunnel, call: CallParams | None = None) -> Session:
        """LAC: an incoming call (ICRQ now or once the tunnel is up)."""
        s = t.open_session(call or CallParams())
        self._done(t)
        return s

    def accept_session(self, s: Session) -> bool:
        """LNS: take the call announced by IncomingCall (ICRP)."""
        ok = s.tunnel.accept(s)
        self._done(s.tunnel)
        return ok

    def refuse_session(self, s: Session, result: ResultCode | None = None) -> None:
        """LNS: refuse the call announced by IncomingCall (CDN, default
        result 4: no resources for now)."""
        s.tunnel.close_session(s, result or ResultCode(4), reason="refused")
        self._done(s.tunnel)

    def close_session(self, s: Session, result: ResultCode | None = None, q931=None, ppp_cause=None,
                      reason: str = "closed") -> None:
        """CDN (default result 3, administrative) and SessionDown."""
        s.tunnel.close_session(s, result, q931, ppp_cause, reason)
        self._done(s.tunnel)

    def session(self, tunnel_id: int, session_id: int) -> Session | None:
        t = self.tunnels.get(tunnel_id)
        return t.sessions.get(session_id) if t is not None else None

    def send_ppp(self, s: Session, protocol: int, info: bytes) -> bool:
        """A PPP frame to the peer on an established session."""
        if s.state is not SessionState.ESTABLISHED:
            return False
        t = s.tunnel
        self.out.append(Datagram(encode_data(t.peer_id, s.peer_id, protocol, info), t.peer, t.local))
        return True

    # ---- input ----
    def receive(self, payload: bytes, peer: Address, local: Address = None) -> None:
        """An L2TP payload from peer (what followed the UDP header)."""
        if not payload or not payload[0] & 0x80:        # T bit clear: a data message
            self._data(payload, peer)
            return
        try:
            msg = decode_control(payload)
        except CodecError as e:
            self._count(str(e))
            return
        tid = msg.tunnel_id
        if tid == 0:
            self._tunnel_zero(msg, peer, local)
            return
        t = self.tunnels.get(tid)
        if t is None:
            self._count("unknown tunnel")
            return
        if not self._from_peer(t, peer):
            return
        # an AVP left hidden is the tunnel's to judge by its M bit; the
        # message itself is still acknowledged (RFC 2661 5.8)
        for reason in msg.unhide(t.secret):
            t._count(reason)
        t.handle(msg)
        self._done(t)

    def _from_peer(self, t: Tunnel, peer: Address) -> bool:
        if peer == t.peer:
            return True
        if peer[0] != t.peer[0]:
            self._count("wrong peer address")
            return False
        if t.initiator and t.state is TunnelState.WAIT_CTL_REPLY:
            t.peer = peer                   # the responder answers from a port of its choice (8.1)
            return True
        self._count("wrong peer port")
        return False

    def _config_for(self, peer: Address, msg: ControlMessage) -> TunnelConfig | None:
        if self.policy is not None:
            try:
                host = msg.get(HOST_NAME) or ""
            except CodecError:
                host = ""
            return self.policy(peer, host)
        return self.config if self.config.accept_tunnels else None

    def _tunnel_zero(self, msg: ControlMessage, peer: Address, local: Address) -> None:
        """A message sent before the peer knew our tunnel id."""
        if msg.msg_type is None:
            self._count("zlb for tunnel 0")
            return
        if not msg.has_hidden:
            # A retransmitted SCCRQ (or an early StopCCN) of a tunnel we
            # have: no new policy decision (nor its counter and log line).
            try:
                known = self._by_peer_tid.get((peer, msg.get(ASSIGNED_TUNNEL_ID)))
            except CodecError:
                known = None
            if known is not None:
                known.handle(msg)
                self._done(known)
                return
        cfg = self._config_for(peer, msg)
        secret = (cfg or self.config).secret
        for reason in msg.unhide(secret.encode() if isinstance(secret, str) else secret):
            self._count(reason)
        try:
            peer_tid = msg.get(ASSIGNED_TUNNEL_ID)
        except CodecError as e:
            self._count(str(e))
            return
        if not peer_tid:
            self._count("tunnel 0 without assigned tunnel id")
            return
        t = self._by_peer_tid.get((peer, peer_tid))
        if t is not None:
            t.handle(msg)                  # a retransmitted SCCRQ, an early StopCCN
            self._done(t)
            return
        if msg.msg_type != SCCRQ:
            self._count("unknown tunnel")
            return
        if not self._tie_break(msg, peer, local, peer_tid):
            return
        tid = self.tunnel_ids.allocate()
        if tid is None:
            self._count("no free tunnel id")
            return
        t = Tunnel(self, cfg or self.config, tid, peer, local, initiator=False)
        if cfg is None:
            t.refusal = ResultCode(STOP_NOT_AUTHORIZED, None, "not accepting tunnels")
            self._count("tunnel refused")
        self.tunnels[tid] = t
        self._by_peer_tid[(peer, peer_tid)] = t
        t.handle(msg)
        self._done(t)

    def _tie_break(self, msg: ControlMessage, peer: Address, local: Address, peer_tid: int) -> bool:
        """An SCCRQ from a peer we are ourselves sending an SCCRQ to: True
        to answer it with a new tunnel, False if it was dealt with."""
        try:
            theirs = msg.get(TIE_BREAKER)
        except CodecError:
            theirs = None
        for t in list(self.tunnels.values()):
            if not (t.initiator and t.state is TunnelState.WAIT_CTL_REPLY and t.peer[0] == peer[0]):
                continue
            ours = t.tie_breaker
            if ours is None and theirs is None:
                continue                          # no tie breakers: two tunnels
            if ours is not None and (theirs is None or ours < theirs):
                self._count("won tie-breaker")    # the peer drops its tunnel; we ignore its SCCRQ
                return False
            if theirs is not None and (ours is None or theirs < ours):
                self._by_peer_tid[(peer, peer_tid)] = t
                t.restart_as_responder(msg, peer, local)
                self._done(t)
                return False
            self._count("tie-breaker equal")      # both drop their tunnels
            t.channel.abandon()
            t._teardown("equal tie-breakers", None, False)
            t._remove()
            return False
        return True

    def _data(self, payload: bytes, peer: Address) -> None:
        try:
            dm = decode_data(payload)
        except CodecError as e:
            self._count(str(e))
            return
        t = self.tunnels.get(dm.tunnel_id)
        if t is None:
            self._count("data for unknown tunnel")
            return
        if peer[0] != t.peer[0]:
            self._count("wrong peer address")
            return
        s = t.sessions.get(dm.session_id)
        if s is None or s.state is not SessionState.ESTABLISHED:
            t._count("data for unknown session")
            return
        t.channel.touch()
        self.events.append(PppFrame(s, dm.protocol, dm.info))

"""One PPP link from the BNG's side: the phases of RFC 1661 section 3.

`PppLink` strings together LCP, authentication (PAP/CHAP), the NCPs
(IPCP, IPv6CP) and LCP echo keepalive. It is sans-I/O: `receive()` and
`on_timer()` append frames to `out` and events to `events`; the owner
(a PPPoE session or an L2TP session) drains both after each call, sends
the frames in its own encapsulation, and answers `AuthAttempt` events
with `auth_result()` once AAA has decided.
"""
from __future__ import annotations

import enum
import ipaddress
import random
import struct
from dataclasses import dataclass, field
from typing import Callable

from ..aaa.base import AuthMethod
from .auth import ChapAuthenticator, Credentials, PapAuthenticator, Verdict
from .codec import (CONF_REQ, DISCARD_REQ, ECHO_REPLY, ECHO_REQ, IDENTIFICATION, PPP_CHAP, PPP_IPCP, PPP_IPV4,
                    PPP_IPV6, PPP_IPV6CP, PPP_LCP, PPP_PAP, PROTO_REJ, TIME_REMAINING, CodecError,
                    ControlPacket, parse_control)
from .fsm import Fsm, State
from .ipcp import IpcpNegotiator
from .ipv6cp import Ipv6cpNegotiator
from .lcp import LcpConfig, LcpNegotiator


class Phase(enum.Enum):
    DEAD = "dead"
    ESTABLISH = "establish"
    AUTHENTICATE = "authenticate"
    NETWORK = "network"
    TERMINATE = "terminate"


@dataclass
class LinkConfig:
    lcp: LcpConfig = field(default_factory=LcpConfig)
    auth_name: str = "p4-bng"          # our name in CHAP Challenges
    auth_timeout: float = 30.0         # from LCP Opened to an AAA verdict
    ipv6: bool = True                  # run IPv6CP after authentication
    ncp_restart_time: float = 3.0
    ncp_max_configure: int = 10


@dataclass(frozen=True)
class AuthAttempt:
    credentials: Credentials


@dataclass(frozen=True)
class NetworkUp:
    protocol: int                      # PPP_IPCP or PPP_IPV6CP


@dataclass(frozen=True)
class NetworkDown:
    """An NCP left Opened: the peer renegotiates (RFC 1661: a
    Configure-Request in Opened restarts negotiation) or it closes."""
    protocol: int


@dataclass(frozen=True)
class NetworkFinished:
    """An NCP gave up or was closed for good: its addresses are no longer
    the peer's to use."""
    protocol: int


@dataclass(frozen=True)
class LinkDown:
    reason: str
    peer_dead: bool = False            # echo timeout: the peer is gone


Event = AuthAttempt | NetworkUp | NetworkDown | NetworkFinished | LinkDown


@dataclass
class Ipv4Assignment:
    peer: ipaddress.IPv4Address
    gateway: ipaddress.IPv4Address
    dns: list[ipaddress.IPv4Address] = field(default_factory=list)


@dataclass
class LinkSnapshot:
    """What survives a controller restart: the values both ends agreed on,
    so a restored link carries on without renegotiating."""
    our_magic: int
    peer_magic: int
    our_mru: int
    peer_mru: int
    auth: str | None
    ipv4: tuple[str, str, list[str]] | None        # peer, gateway, dns
    ipv6_iids: tuple[int, int] | None              # ours, peer's
    lcp_ident: int = 0


class PppLink:
    def __init__(self, cfg: LinkConfig, clock: Callable[[], float], rng: random.Random | None = None,
                 max_payload: int = 1492):
        self.cfg = cfg
        self.clock = clock
        self.rng = rng or random.Random()
        self.out: list[tuple[int, bytes]] = []
        self.events: list[Event] = []
        self.phase = Phase.DEAD
        self.lcp_neg = LcpNegotiator(cfg.lcp, self, max_payload, self.rng)
        lc = cfg.lcp
        self.lcp = Fsm(PPP_LCP, self.lcp_neg, self._sink, clock, restart_time=lc.restart_time,
                       max_configure=lc.max_configure, max_terminate=lc.max_terminate,
                       max_failure=lc.max_failure, name="LCP", peer_mru=self._peer_mru)
        self.auth: PapAuthenticator | ChapAuthenticator | None = None
        self.auth_method: AuthMethod | None = None
        self.auth_deadline: float | None = None
        self.ipv4: Ipv4Assignment | None = None
        self.ipcp: Fsm | None = None
        self.ipcp_neg: IpcpNegotiator | None = None
        self.ipv6cp: Fsm | None = None
        self.ipv6cp_neg: Ipv6cpNegotiator | None = None
        self.echo_deadline: float | None = None
        self.echo_outstanding = 0
        self.echo_id = 0
        self.counters: dict[str, int] = {}
        self._finished = False
        # the peer's LCP Configure-Requests (options), for L2TP proxy LCP
        self.lcp_first_confreq: bytes | None = None
        self.lcp_last_confreq: bytes | None = None

    # ---- plumbing ----
    def _sink(self, protocol: int, info: bytes) -> None:
        self.out.append((protocol, info))

    def _count(self, what: str) -> None:
        self.counters[what] = self.counters.get(what, 0) + 1

    def drain(self) -> tuple[list[tuple[int, bytes]], list[Event]]:
        out, ev = self.out, self.events
        self.out, self.events = [], []
        return out, ev

    def next_deadline(self) -> float | None:
        ds = [self.lcp.deadline, self.auth_deadline, self.echo_deadline,
              self.auth.deadline if self.auth else None,
              self.ipcp.deadline if self.ipcp else None,
              self.ipv6cp.deadline if self.ipv6cp else None]
        ds = [d for d in ds if d is not None]
        return min(ds) if ds else None

    # ---- life cycle ----
    def start(self) -> None:
        """The lower layer (PPPoE or L2TP session) is up: negotiate LCP."""
        self.phase = Phase.ESTABLISH
        self.lcp.open()
        self.lcp.up()

    def lower_layer_repeated(self) -> None:
        """The peer asked for the session again (PPPoE: a retransmitted
        PADR, because our PADS was lost): none of our LCP
        Configure-Requests reached it before, so they must not use up
        Max-Configure, or LCP gives up just as the peer starts."""
        if not self._finished:
            self.lcp.restart_requests()

    def close(self, reason: str) -> None:
        """Administrative close: Terminate-Request, then LinkDown once the
        peer acks or the Restart timer gives up."""
        if self._finished:
            return
        self.lcp.close(reason)
        if self.lcp.state in (State.INITIAL, State.CLOSED):
            self._link_down(reason)       # nothing to negotiate away

    def start_proxied(self, last_sent: bytes | None, last_received: bytes | None,
                      creds: Credentials | None) -> bool:
        """LNS: take over a link an L2TP LAC negotiated (RFC 2661 proxy LCP
        and proxy authentication). `last_sent` is the LAC's last LCP
        Configure-Request to the peer (our side now), `last_received` the
        peer's; `creds` what the peer sent to authenticate, which we answer.
        False if the proxied LCP cannot be taken over (then start() it anew)."""
        from .codec import parse_options
        from .lcp import OPT_AUTH, OPT_MAGIC, OPT_MRU, auth_from_option
        if last_sent is None or last_received is None:
            return False
        try:
            ours, theirs = parse_options(last_sent), parse_options(last_received)
        except CodecError:
            return False
        n = self.lcp_neg
        auth: AuthMethod | None = None
        for t, v in ours:
            if t == OPT_MRU and len(v) == 2:
                n.our_mru = struct.unpack("!H", v)[0]
            elif t == OPT_MAGIC and len(v) == 4:
                n.our_magic = struct.unpack("!I", v)[0]
            elif t == OPT_AUTH:
                auth = auth_from_option(v)
        for t, v in theirs:
            if t == OPT_MRU and len(v) == 2:
                n.peer_mru = min(struct.unpack("!H", v)[0], n.max_mru)
            elif t == OPT_MAGIC and len(v) == 4:
                n.peer_magic = struct.unpack("!I", v)[0]
        if auth is not None and auth not in self.cfg.lcp.auth:
            return False                      # the LAC agreed on a method we do not allow
        if creds is not None and creds.method != auth:
            return False
        n.auth = auth
        self.lcp.force_opened()
        self.phase = Phase.ESTABLISH
        # the peer already answered the LAC's Challenge: no new one from us
        self._enter_authentication(challenge=creds is None)
        if creds is not None and self.auth is not None:
            if isinstance(self.auth, PapAuthenticator):
                self.auth.proxied(creds, creds.chap_id)
            else:
                self.auth.proxied(creds)
            self.events.append(AuthAttempt(creds))
        return True

    def detach(self) -> None:
        """LAC: the link now belongs to an LNS (its frames are switched into
        a tunnel by the data plane): no more timers, output or events here."""
        self._finished = True
        self.phase = Phase.DEAD
        self.echo_deadline = self.auth_deadline = None
        for fsm in (self.lcp, self.ipcp, self.ipv6cp):
            if fsm is not None:
                fsm.deadline = None
        if self.auth is not None:
            self.auth.deadline = None
        self.out.clear()

    def abort(self, reason: str, peer_dead: bool = False) -> None:
        """The lower layer went away (PADT, L2TP CDN): no more packets. A
        peer answering our Terminate-Request with a PADT hides why we
        closed, so the reason keeps both."""
        if self.lcp.state in (State.CLOSING, State.STOPPING) and self.lcp.close_reason:
            reason = f"{reason}, after we closed: {self.lcp.close_reason}"
        self.lcp.down()
        self._link_down(reason, peer_dead)

    # ---- input ----
    def receive(self, protocol: int, info: bytes) -> None:
        if self._finished:
            return
        try:
            if protocol == PPP_LCP:
                self._lcp_packet(parse_control(info))
            elif protocol in (PPP_PAP, PPP_CHAP):
                self._auth_packet(protocol, info)
            elif protocol == PPP_IPCP:
                self._ncp_packet(self.ipcp, info)
            elif protocol == PPP_IPV6CP and self.cfg.ipv6:
                self._ncp_packet(self.ipv6cp, info)
            elif protocol in (PPP_IPV4, PPP_IPV6):
                self._count("data before network phase")   # never Protocol-Reject IP
            elif self.lcp.state == State.OPENED:
                # RFC 1661 5.7: unknown (or disabled) protocol
                self._count("protocol rejected")
                data = struct.pack("!H", protocol) + info
                mtu = self.lcp_neg.peer_mru - 4
                self._sink(PPP_LCP, ControlPacket(PROTO_REJ, self.lcp.next_id(), data[:mtu]).encode())
            else:
                self._count("discarded")
        except CodecError as e:
            self._count(f"malformed: {e}")

    def _lcp_packet(self, pkt: ControlPacket) -> None:
        if pkt.code == CONF_REQ:
            if self.lcp_first_confreq is None and self.lcp.state != State.OPENED:
                self.lcp_first_confreq = pkt.data
            self.lcp_last_confreq = pkt.data
        if self.lcp.receive(pkt):
            return
        opened = self.lcp.state == State.OPENED
        c = pkt.code
        if c == ECHO_REQ:
            if opened:
                self._sink(PPP_LCP, ControlPacket(ECHO_REPLY, pkt.identifier,
                                                  struct.pack("!I", self.lcp_neg.our_magic)
                                                  + pkt.data[4:]).encode())
        elif c == ECHO_REPLY:
            if opened and len(pkt.data) >= 4:
                magic = struct.unpack_from("!I", pkt.data)[0]
                if magic and magic == self.lcp_neg.our_magic:
                    self._count("looped-back echo reply")
                else:
                    self.echo_outstanding = 0
        elif c == PROTO_REJ:
            if opened and len(pkt.data) >= 2:
                self._protocol_rejected(struct.unpack_from("!H", pkt.data)[0])
        elif c in (DISCARD_REQ, IDENTIFICATION, TIME_REMAINING):
            pass
        else:
            self.lcp.unknown_code(pkt)

    def _protocol_rejected(self, protocol: int) -> None:
        if protocol == PPP_IPV6CP and self.ipv6cp is not None:
            self.ipv6cp.rxj_minus()
        elif protocol == PPP_IPCP and self.ipcp is not None:
            self.ipcp.rxj_minus()
        elif protocol in (PPP_PAP, PPP_CHAP, PPP_LCP):
            self.close("peer rejected a required protocol")

    def _auth_packet(self, protocol: int, info: bytes) -> None:
        if self.auth is None or self.auth.protocol != protocol or \
                self.phase not in (Phase.AUTHENTICATE, Phase.NETWORK):
            self._count("auth packet out of phase")
            return
        creds = self.auth.receive(info)
        if creds is not None and self.phase == Phase.AUTHENTICATE:
            self.events.append(AuthAttempt(creds))

    def _ncp_packet(self, fsm: Fsm | None, info: bytes) -> None:
        if fsm is None or self.phase != Phase.NETWORK:
            self._count("ncp before network phase")     # RFC 1661 3.5: discard
            return
        pkt = parse_control(info)
        if not fsm.receive(pkt):
            fsm.unknown_code(pkt)

    # ---- timers ----
    def on_timer(self) -> None:
        now = self.clock()
        for fsm in (self.lcp, self.ipcp, self.ipv6cp):
            if fsm is not None and fsm.deadline is not None and fsm.deadline <= now:
                fsm.timeout()
        if self.auth is not None and self.auth.deadline is not None and self.auth.deadline <= now:
            if not self.auth.timeout():
                self.close("no authentication response")
        if self.auth_deadline is not None and self.auth_deadline <= now:
            self.auth_deadline = None
            self.close("authentication timed out")
        if self.echo_deadline is not None and self.echo_deadline <= now:
            self._echo_tick(now)

    def _echo_tick(self, now: float) -> None:
        lc = self.cfg.lcp
        if self.echo_outstanding >= lc.echo_failures:
            self.echo_deadline = None
            self._count("echo timeout")
            self.abort("lcp echo timeout", peer_dead=True)
            return
        self.echo_outstanding += 1
        self.echo_id = (self.echo_id + 1) & 0xFF
        self._sink(PPP_LCP, ControlPacket(ECHO_REQ, self.echo_id,
                                          struct.pack("!I", self.lcp_neg.our_magic)).encode())
        self.echo_deadline = now + lc.echo_interval

    def _start_echo(self) -> None:
        if self.cfg.lcp.echo_interval > 0:
            self.echo_outstanding = 0
            self.echo_deadline = self.clock() + self.cfg.lcp.echo_interval

    # ---- upcalls from the automata ----
    def lcp_up(self) -> None:
        self._enter_authentication(challenge=True)

    def _enter_authentication(self, challenge: bool) -> None:
        self.phase = Phase.AUTHENTICATE
        self._start_echo()
        self.auth_method = self.lcp_neg.auth
        if self.auth_method is None:
            self.phase = Phase.NETWORK
            return
        if self.auth_method == AuthMethod.PAP:
            self.auth = PapAuthenticator(self._sink)
        else:
            previous = self.auth.identifier if isinstance(self.auth, ChapAuthenticator) else None
            self.auth = ChapAuthenticator(self._sink, self.auth_method, self.cfg.auth_name, self.clock,
                                          restart_time=self.cfg.lcp.restart_time,
                                          max_challenges=self.cfg.lcp.max_configure,
                                          identifier=None if previous is None else previous + 1)
        self.auth_deadline = self.clock() + self.cfg.auth_timeout
        if challenge:
            self.auth.start()

    def lcp_down(self) -> None:
        self.phase = Phase.TERMINATE
        self.echo_deadline = None
        self.auth_deadline = None
        for fsm in (self.ipcp, self.ipv6cp):
            if fsm is not None:
                fsm.down()

    def lcp_finished(self) -> None:
        self._link_down(self.lcp.close_reason or "lcp finished")

    def ncp_up(self, neg) -> None:
        self.events.append(NetworkUp(PPP_IPCP if neg is self.ipcp_neg else PPP_IPV6CP))

    def ncp_down(self, neg) -> None:
        self.events.append(NetworkDown(PPP_IPCP if neg is self.ipcp_neg else PPP_IPV6CP))

    def ncp_finished(self, neg) -> None:
        """An NCP gave up or was closed by the peer. Without any network
        protocol left the link has no purpose (and would hold an address)."""
        if self.phase != Phase.NETWORK:
            return
        self.events.append(NetworkFinished(PPP_IPCP if neg is self.ipcp_neg else PPP_IPV6CP))
        finished = (State.INITIAL, State.STARTING, State.CLOSED, State.STOPPED)
        alive = [f for f in (self.ipcp, self.ipv6cp) if f is not None and f.state not in finished]
        if not alive:
            self.close("no network protocol")

    def _link_down(self, reason: str, peer_dead: bool = False) -> None:
        if self._finished:
            return
        self._finished = True
        self.phase = Phase.DEAD
        self.echo_deadline = self.auth_deadline = None
        for fsm in (self.lcp, self.ipcp, self.ipv6cp):
            if fsm is not None:
                fsm.deadline = None
        if self.auth is not None:
            self.auth.deadline = None
        self.events.append(LinkDown(reason, peer_dead))

    # ---- AAA's answer ----
    def awaits_verdict(self, creds: Credentials) -> bool:
        """Whether `creds` are what the current authenticator waits on. An
        LCP renegotiation while AAA was deciding restarts authentication
        (a new Challenge with a new identifier): a verdict on the earlier
        credentials must not answer the new exchange, whose own Response
        goes to AAA in turn."""
        return self.phase == Phase.AUTHENTICATE and self.auth is not None and self.auth.pending is creds

    def auth_result(self, creds: Credentials, verdict: Verdict, ipv4: Ipv4Assignment | None) -> bool:
        """Answer the peer and, if accepted, start the network phase.
        `ipv4` None: no IPv4 for this subscriber (IPCP is not run). False,
        and nothing sent, when `creds` are no longer awaited."""
        if not self.awaits_verdict(creds):
            return False
        self.auth_deadline = None
        self.auth.answer(verdict)
        if not verdict.accepted:
            self.close("authentication failed")
            return True
        self.phase = Phase.NETWORK
        self.start_ncps(ipv4)
        return True

    def start_ncps(self, ipv4: Ipv4Assignment | None) -> None:
        """Open IPCP (with the address already decided) and IPv6CP."""
        if self.phase != Phase.NETWORK:
            self.phase = Phase.NETWORK
        if ipv4 is not None:
            self.ipv4 = ipv4
            self.ipcp_neg = IpcpNegotiator(self, ipv4.gateway, ipv4.peer, ipv4.dns)
            self.ipcp = self._ncp_fsm(PPP_IPCP, self.ipcp_neg, "IPCP")
        if self.cfg.ipv6:
            self.ipv6cp_neg = Ipv6cpNegotiator(self, self.rng)
            self.ipv6cp = self._ncp_fsm(PPP_IPV6CP, self.ipv6cp_neg, "IPv6CP")
        for fsm in (self.ipcp, self.ipv6cp):
            if fsm is not None:
                fsm.open()
                fsm.up()

    def _ncp_fsm(self, protocol: int, neg, name: str) -> Fsm:
        return Fsm(protocol, neg, self._sink, self.clock, restart_time=self.cfg.ncp_restart_time,
                   max_configure=self.cfg.ncp_max_configure, name=name, peer_mru=self._peer_mru)

    def _peer_mru(self) -> int:
        return self.lcp_neg.peer_mru

    @property
    def lcp_last_sent(self) -> bytes:
        """Options of our last LCP Configure-Request (L2TP proxy LCP)."""
        from .codec import encode_options
        return encode_options(self.lcp._req_options)

    # ---- state for restarts ----
    @property
    def ipv4_up(self) -> bool:
        return self.ipcp is not None and self.ipcp.state == State.OPENED

    @property
    def ipv6_up(self) -> bool:
        return self.ipv6cp is not None and self.ipv6cp.state == State.OPENED

    def snapshot(self) -> LinkSnapshot:
        n = self.lcp_neg
        v4 = None
        if self.ipv4 is not None and self.ipv4_up:
            v4 = (str(self.ipv4.peer), str(self.ipv4.gateway), [str(d) for d in self.ipv4.dns])
        v6 = (self.ipv6cp_neg.our_iid, self.ipv6cp_neg.peer_iid) if self.ipv6_up else None
        return LinkSnapshot(our_magic=n.our_magic, peer_magic=n.peer_magic, our_mru=n.our_mru,
                            peer_mru=n.peer_mru, auth=self.auth_method.value if self.auth_method else None,
                            ipv4=v4, ipv6_iids=v6, lcp_ident=self.lcp._ident)

    @classmethod
    def restore(cls, cfg: LinkConfig, clock: Callable[[], float], snap: LinkSnapshot,
                rng: random.Random | None = None, max_payload: int = 1492) -> "PppLink":
        """A link in the network phase, as it was when snapshotted: no
        packet is sent, keepalive resumes."""
        link = cls(cfg, clock, rng, max_payload)
        n = link.lcp_neg
        n.our_magic, n.peer_magic, n.our_mru, n.peer_mru = (snap.our_magic, snap.peer_magic,
                                                            snap.our_mru, snap.peer_mru)
        link.auth_method = AuthMethod(snap.auth) if snap.auth else None
        link.lcp.force_opened(snap.lcp_ident)
        link.phase = Phase.NETWORK
        if snap.ipv4 is not None:
            peer, gw, dns = snap.ipv4
            link.ipv4 = Ipv4Assignment(ipaddress.IPv4Address(peer), ipaddress.IPv4Address(gw),
                                       [ipaddress.IPv4Address(d) for d in dns])
            link.ipcp_neg = IpcpNegotiator(link, link.ipv4.gateway, link.ipv4.peer, link.ipv4.dns)
            link.ipcp = link._ncp_fsm(PPP_IPCP, link.ipcp_neg, "IPCP")
            link.ipcp.force_opened()
        if snap.ipv6_iids is not None and cfg.ipv6:
            link.ipv6cp_neg = Ipv6cpNegotiator(link, link.rng, our_iid=snap.ipv6_iids[0])
            link.ipv6cp_neg.peer_iid = snap.ipv6_iids[1]
            link.ipv6cp = link._ncp_fsm(PPP_IPV6CP, link.ipv6cp_neg, "IPv6CP")
            link.ipv6cp.force_opened()
        link._start_echo()
        return link

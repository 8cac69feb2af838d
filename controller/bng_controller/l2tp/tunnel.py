"""Tunnel and session state machines (RFC 2661 sections 7.2-7.4), both
roles, over the reliable channel of control.py.

A `Tunnel` is one control connection: the initiator sends SCCRQ (waits in
wait-ctl-reply), the responder answers SCCRP (wait-ctl-conn) and the
initiator completes with SCCCN. With a shared secret each side may put a
Challenge in its SCCRQ/SCCRP and must then find MD5(message type of the
reply || secret || challenge) in the Challenge Response of the SCCRP
(type 2) or SCCCN (type 3); a wrong or missing response is refused with
StopCCN result 4 (RFC 2661 5.1.1). StopCCN closes a tunnel and all its
sessions: the sender keeps the tunnel until its StopCCN is acknowledged
(or the retransmissions give up); the receiver acknowledges and keeps
answering retransmissions for `stop_hold` (31 s, RFC 2661 5.7).

Sessions are incoming calls only. The LAC opens one with `open_session()`
(it is queued until the tunnel is up), sends ICRQ, gets ICRP, sends ICCN
with the proxy LCP and proxy authentication it got from the subscriber,
and the session is up. The LNS gets ICRQ, tells its owner (`IncomingCall`,
answered with `accept()`/`refuse()`, or `auto_accept`), sends ICRP, and
takes the session up on ICCN, exposing what the LAC sent (`Session.call`).
Either side ends a session with CDN (Result Code, optional Q.931 and RFC
3145 causes). A session that is not up within `session_setup_timeout` is
closed, but only for silence, not for queueing: while the tunnel is not up,
or our last message for the session (ICRQ, ICRP) is not yet acknowledged
(the channel either delivers it or declares the peer dead), or the peer
delivered anything to us since the timer was set (its answer may be queued
behind what it is sending), the timer starts over. A burst of 40k calls
queued behind each other on a lossy path therefore does not time out; a
peer that acknowledges and then says nothing, or an owner that never
answers `IncomingCall`, does. The timeouts of a tunnel's sessions share one FIFO (the
timeout is the same for all): 40k sessions cost no timers of their own.

Errors follow RFC 2661 4.1 and 7.1: an unknown AVP with the M bit, or a
malformed mandatory one, ends the session (CDN result 2, error 8 or 2/3)
in a session message and the tunnel (StopCCN result 2) in a tunnel
message; a malformed optional AVP is ignored and counted; an unknown
Message Type with the M bit clears the tunnel, without it the message is
ignored; a message that the state tables do not allow ends the tunnel
(StopCCN result 7) or the session (CDN result 2, error 6 with the reason).

The owner is an `L2tpEndpoint` (endpoint.py), which demultiplexes received
payloads to tunnels, runs the timers and collects what tunnels produce:
`Datagram`s to send and events (`TunnelUp`, `TunnelDown`, `TunnelFailed`,
`IncomingCall`, `SessionUp`, `SessionDown`, `PppFrame`). Every tunnel and
session the owner learned of (it opened it, or got `TunnelUp`/
`IncomingCall`/`SessionUp` for it) ends with exactly one `TunnelDown`/
`SessionDown`; when a tunnel goes down its sessions' `SessionDown`s come
first. A tunnel the peer opened that ends before it is up (its SCCCN fails
authentication, the peer stops or goes silent during setup, a malformed or
unexpected message) was never announced: it ends with one `TunnelFailed`
instead, unless the owner refused it itself (policy, `accept_tunnels`).
Both carry `auth_failed` when the cause is the peer's wrong or missing
Challenge Response, detected by us in either role.
"""
from __future__ import annotations

import enum
import hmac
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from .codec import (ASSIGNED_SESSION_ID, ASSIGNED_TUNNEL_ID, BBF_ACCESS_LOOP_ENCAPSULATION,
                    BBF_AGENT_CIRCUIT_ID, BBF_AGENT_REMOTE_ID, BEARER_CAPABILITIES,
                    BEARER_TYPE, CALL_SERIAL_NUMBER, CALLED_NUMBER, CALLING_NUMBER, CDN, CDN_ADMIN,
                    CDN_GENERAL_ERROR, CDN_NO_FACILITIES_PERMANENT, CDN_NO_FACILITIES_TEMPORARY,
                    CDN_TIMEOUT, CHALLENGE, CHALLENGE_RESPONSE, CSUN, CSURQ, ERR_BAD_LENGTH,
                    ERR_BAD_SESSION_ID, ERR_NO_RESOURCES, ERR_OUT_OF_RANGE, ERR_UNKNOWN_MANDATORY_AVP,
                    ERR_VENDOR, FIRMWARE_REVISION, FRAMING_ASYNC, FRAMING_CAPABILITIES, FRAMING_SYNC,
                    FRAMING_TYPE, HELLO, HOST_NAME, ICCN, ICRP, ICRQ, INITIAL_RECEIVED_LCP_CONFREQ,
                    LAST_RECEIVED_LCP_CONFREQ, LAST_SENT_LCP_CONFREQ, MESSAGE_NAMES, OCRP, OCRQ,
                    PHYSICAL_CHANNEL_ID, PPP_DISCONNECT_CAUSE, PRIVATE_GROUP_ID, PROTOCOL_VERSION,
                    PROXY_AUTH_CHAP, PROXY_AUTH_PAP, PROXY_AUTH_TEXT, PROXY_AUTHEN_CHALLENGE,
                    PROXY_AUTHEN_ID, PROXY_AUTHEN_NAME, PROXY_AUTHEN_RESPONSE, PROXY_AUTHEN_TYPE, Q931_CAUSE,
                    RECEIVE_WINDOW_SIZE, RESULT_CODE, RX_CONNECT_SPEED,
                    SCCCN, SCCRP, SCCRQ, SEQUENCING_REQUIRED, SESSION_MESSAGES, SLI, STOP_BAD_VERSION,
                    STOP_CLEAR, STOP_FSM_ERROR, STOP_GENERAL_ERROR, STOP_NOT_AUTHORIZED, STOPCCN,
                    SUB_ADDRESS, TIE_BREAKER, TX_CONNECT_SPEED, VENDOR_BBF, VENDOR_NAME, WEN, Avp,
                    CodecError, ControlMessage, MessageBuilder, PppDisconnectCause, Q931Cause, ResultCode,
                    avp_label, challenge_response, hide_keys)
from .control import ChannelConfig, ControlChannel
from .ids import IdAllocator

if TYPE_CHECKING:
    from .endpoint import L2tpEndpoint

Address = Any          # whatever the owner uses for (ip, port); compared with ==


class L2tpError(RuntimeError):
    """A request the tunnel cannot carry out (closing tunnel, ids exhausted)."""


# ---- configuration ----
@dataclass
class TunnelConfig:
    host_name: str = "p4-bng"
    secret: bytes | None = None        # tunnel authentication and AVP hiding
    challenge: bool = True             # with a secret: challenge the peer, require its response
    # AVPs hidden when a secret exists, as (vendor, attribute)
    hide: frozenset = frozenset({(0, PROXY_AUTHEN_RESPONSE)})
    vendor_name: str = "p4-bng"
    firmware_revision: int | None = 0x0100
    framing_capabilities: int = FRAMING_SYNC | FRAMING_ASYNC
    bearer_capabilities: int | None = None   # only LACs placing outgoing calls send it
    tie_breaker: bool = True           # put a Tie Breaker in our SCCRQs
    accept_tunnels: bool = True        # answer SCCRQs (a policy callback may decide per peer)
    accept_calls: bool = True          # answer ICRQs (the LNS role)
    auto_accept: bool = False          # answer ICRQs without an IncomingCall round trip
    session_setup_timeout: float = 30.0
    # SCCRQ to SCCCN: RFC 2661 has no timer for it, but a peer that acks our
    # SCCRQ and never answers, or sends an SCCRQ and never an SCCCN, would
    # otherwise hold the tunnel (and its id, and the sessions waiting on it)
    # for ever
    tunnel_setup_timeout: float = 60.0
    stop_hold: float = 31.0            # keep a closed tunnel this long (RFC 2661 5.7)
    channel: ChannelConfig = field(default_factory=ChannelConfig)

    @classmethod
    def from_dict(cls, d: dict | None) -> "TunnelConfig":
        """From YAML: `secret` a string, `hide` AVP attribute numbers
        (vendor 0) or [vendor, attribute] pairs, channel settings inline
        or under `channel`."""
        c = cls()
        ch = ChannelConfig()
        items = dict(d or {})
        items.update(items.pop("channel", None) or {})
        for k, v in items.items():
            if hasattr(ch, k):
                setattr(ch, k, v)
            elif k == "secret":
                c.secret = v.encode() if isinstance(v, str) else v
            elif k == "hide":
                c.hide = frozenset((0, x) if isinstance(x, int) else (int(x[0]), int(x[1])) for x in v)
            elif hasattr(c, k) and k != "channel":
                setattr(c, k, v)
            else:
                raise ValueError(f"l2tp: unknown setting {k!r}")
        c.channel = ch
        return c


# ---- what a call carries (ICRQ + ICCN) ----
@dataclass
class ProxyLcp:
    """RFC 2661 4.4.5: LCP options (the CONFREQ bodies) the LAC saw."""
    initial_received: bytes | None = None
    last_sent: bytes | None = None
    last_received: bytes | None = None


@dataclass
class ProxyAuth:
    """RFC 2661 4.4.5: the authentication the LAC did with the subscriber.
    `type`: PROXY_AUTH_PAP (response = password), PROXY_AUTH_CHAP (challenge,
    ident, response), PROXY_AUTH_MSCHAPV1, PROXY_AUTH_NONE, PROXY_AUTH_TEXT."""
    type: int
    name: bytes = b""
    challenge: bytes | None = None
    ident: int | None = None
    response: bytes | None = None


@dataclass
class AccessLine:
    """RFC 5515 access line AVPs (Broadband Forum vendor 3561)."""
    circuit_id: str | None = None
    remote_id: str | None = None
    rates: dict[int, int] = field(default_factory=dict)      # BBF_*_RATE_* / *_DELAY_* -> value
    loop_encapsulation: bytes | None = None                   # 3 octets


@dataclass
class CallParams:
    """An incoming call: what the LAC puts in ICRQ and ICCN, and what the
    LNS exposes from them. The LAC fills it for `open_session()`."""
    bearer_type: int | None = 0               # ICRQ; 0: neither analog nor digital
    physical_channel: int | None = None
    calling_number: str | None = None         # e.g. the subscriber's MAC
    called_number: str | None = None
    sub_address: str | None = None
    line: AccessLine | None = None
    tx_speed: int = 0                         # ICCN (Tx Connect Speed, bps)
    rx_speed: int | None = None
    framing_type: int = FRAMING_SYNC
    proxy_lcp: ProxyLcp | None = None
    proxy_auth: ProxyAuth | None = None
    private_group_id: bytes | None = None
    sequencing_required: bool = False
    serial: int = 0                           # Call Serial Number (the LAC's)


@dataclass
class PeerInfo:
    """What the peer said about itself in SCCRQ/SCCRP."""
    host_name: str = ""
    vendor_name: str | None = None
    firmware_revision: int | None = None
    protocol_version: tuple[int, int] | None = None
    framing_capabilities: int | None = None
    bearer_capabilities: int | None = None
    receive_window: int = 4


# ---- events and output ----
class Datagram(NamedTuple):
    """An L2TP payload for UDP: from `local` (None: the owner's default) to `peer`."""
    payload: bytes
    peer: Address
    local: Address


@dataclass(slots=True)
class TunnelUp:
    tunnel: "Tunnel"


@dataclass(slots=True)
class TunnelDown:
    tunnel: "Tunnel"
    reason: str
    result: ResultCode | None         # the StopCCN's (sent or received); None: peer dead
    by_peer: bool
    auth_failed: bool = False         # we refused the peer's Challenge Response (StopCCN result 4)


@dataclass(slots=True)
class TunnelFailed:
    """A tunnel the peer opened (we answered its SCCRQ) that ended before
    it was up, so without TunnelUp or TunnelDown: the peer failed our
    challenge, stopped it, went silent, or broke the protocol. Not sent for
    a tunnel the owner's policy refused. The tunnel may linger (closing,
    hold) for the StopCCN exchange, then goes without another event."""
    tunnel: "Tunnel"
    reason: str
    result: ResultCode | None         # the StopCCN's (sent or received); None: peer dead
    by_peer: bool
    auth_failed: bool = False

    @property
    def peer(self) -> Address:
        return self.tunnel.peer


@dataclass(slots=True)
class IncomingCall:
    """LNS: answer with `L2tpEndpoint.accept_session()` or `refuse_session()`."""
    session: "Session"


@dataclass(slots=True)
class SessionUp:
    session: "Session"


@dataclass(slots=True)
class SessionDown:
    session: "Session"
    reason: str
    result: ResultCode | None = None
    q931: Q931Cause | None = None
    ppp_cause: PppDisconnectCause | None = None
    by_peer: bool = False


@dataclass(slots=True)
class PppFrame:
    """A PPP frame the data plane punted, for an established session."""
    session: "Session"
    protocol: int
    info: bytes


Event = TunnelUp | TunnelDown | TunnelFailed | IncomingCall | SessionUp | SessionDown | PppFrame


# ---- states ----
class TunnelState(enum.Enum):
    IDLE = "idle"
    WAIT_CTL_REPLY = "wait-ctl-reply"
    WAIT_CTL_CONN = "wait-ctl-conn"
    ESTABLISHED = "established"
    CLOSING = "closing"          # our StopCCN awaits its acknowledgement
    HOLD = "hold"                # the peer's StopCCN: re-acknowledge its retransmissions
    CLOSED = "closed"


class SessionState(enum.Enum):
    WAIT_TUNNEL = "wait-tunnel"      # LAC: the tunnel is not up yet
    WAIT_REPLY = "wait-reply"        # LAC: ICRQ sent
    WAIT_ANSWER = "wait-answer"      # LNS: ICRQ received, the owner decides
    WAIT_CONNECT = "wait-connect"    # LNS: ICRP sent
    ESTABLISHED = "established"
    CLOSED = "closed"


_ICRQ_FIELDS = {BEARER_TYPE: "bearer_type", PHYSICAL_CHANNEL_ID: "physical_channel",
                CALLING_NUMBER: "calling_number", CALLED_NUMBER: "called_number", SUB_ADDRESS: "sub_address",
                CALL_SERIAL_NUMBER: "serial"}
_ICCN_FIELDS = {TX_CONNECT_SPEED: "tx_speed", FRAMING_TYPE: "framing_type", RX_CONNECT_SPEED: "rx_speed",
                PRIVATE_GROUP_ID: "private_group_id", SEQUENCING_REQUIRED: "sequencing_required"}
_PROXY_LCP_FIELDS = {INITIAL_RECEIVED_LCP_CONFREQ: "initial_received", LAST_SENT_LCP_CONFREQ: "last_sent",
                     LAST_RECEIVED_LCP_CONFREQ: "last_received"}
_PROXY_TYPES_WITH_NAME = (PROXY_AUTH_TEXT, PROXY_AUTH_CHAP, PROXY_AUTH_PAP)   # the name MUST be present
_PROXY_AUTH_FIELDS = {PROXY_AUTHEN_TYPE: "type", PROXY_AUTHEN_NAME: "name",
                      PROXY_AUTHEN_CHALLENGE: "challenge", PROXY_AUTHEN_ID: "ident",
                      PROXY_AUTHEN_RESPONSE: "response"}
_ACTIVE = (TunnelState.IDLE, TunnelState.WAIT_CTL_REPLY, TunnelState.WAIT_CTL_CONN, TunnelState.ESTABLISHED)
_ESTABLISHING = (TunnelState.IDLE, TunnelState.WAIT_CTL_REPLY, TunnelState.WAIT_CTL_CONN)
_RX = {t: f"rx {n}" for t, n in MESSAGE_NAMES.items()}
_TX = {t: f"tx {n}" for t, n in MESSAGE_NAMES.items()}


class Session:
    """One call. `local_id` is ours (the Session ID the peer puts in its
    headers), `peer_id` the peer's (0 until known). `data` is the owner's."""
    __slots__ = ("tunnel", "local_id", "peer_id", "state", "lac", "call", "data", "announced", "wait_ns")

    def __init__(self, tunnel: "Tunnel", local_id: int, lac: bool, call: CallParams):
        self.tunnel = tunnel
        self.local_id = local_id
        self.peer_id = 0
        self.state = SessionState.WAIT_TUNNEL
        self.lac = lac
        self.call = call
        self.data: Any = None
        self.announced = False
        self.wait_ns: int | None = None     # Ns of our ICRQ/ICRP: the setup timer waits for its ack

    @property
    def established(self) -> bool:
        return self.state is SessionState.ESTABLISHED

    def __repr__(self) -> str:
        return (f"Session({'LAC' if self.lac else 'LNS'} {self.tunnel.local_id}/{self.local_id} "
                f"peer {self.tunnel.peer_id}/{self.peer_id} {self.state.value})")


class _Malformed(Exception):
    def __init__(self, message: str, error: int = ERR_BAD_LENGTH):
        super().__init__(message)
        self.error = error


def _missing(vendor: int, attr: int) -> _Malformed:
    """An AVP the message must carry is absent: RFC 2661 has no error code
    of its own for it; "a field value out of range" is the nearest."""
    return _Malformed(f"missing {avp_label(vendor, attr)}", ERR_OUT_OF_RANGE)


class Tunnel:
    """One control connection and its sessions. Driven by `L2tpEndpoint`;
    the methods the owner calls go through the endpoint."""

    def __init__(self, ep: "L2tpEndpoint", cfg: TunnelConfig, local_id: int, peer: Address,
                 local: Address, initiator: bool):
        self.ep = ep
        self.cfg = cfg
        self.secret = cfg.secret.encode() if isinstance(cfg.secret, str) else cfg.secret
        self._hide = hide_keys(cfg.hide)
        self.local_id = local_id
        self.peer_id = 0
        self.peer = peer
        self.local = local
        self.initiator = initiator
        self.state = TunnelState.IDLE
        self.counters: dict[str, int] = {}
        self.channel = ControlChannel(ep.clock, cfg.channel, self.counters)
        self.sessions: dict[int, Session] = {}
        self._by_peer_sid: dict[int, Session] = {}
        self.session_ids = IdAllocator(ep.rng)
        self.peer_info = PeerInfo()
        self.announced = initiator
        self.tie_breaker: bytes | None = None
        self.refusal: ResultCode | None = None     # refuse the SCCRQ we are created for
        self.down_reason = ""
        self.was_up = False                        # reached established (TunnelUp sent)
        # the owner checks the peer on TunnelUp before any call goes out
        # (the LAC's Tunnel-Server-Auth-Id), then calls send_waiting_calls()
        self.hold_calls = False
        self.auth_failed = False                   # the peer's Challenge Response was wrong or missing
        self.data: Any = None                      # the owner's
        self._challenge: bytes | None = None
        self._setup: deque[tuple[float, Session, int]] = deque()   # deadline, session, delivered
        self._hold_until: float | None = None
        self._setup_until = ep.clock() + cfg.tunnel_setup_timeout    # until established
        self.scheduled: float | None = None        # the endpoint's timer heap

    def __repr__(self) -> str:
        return (f"Tunnel({self.local_id} peer {self.peer_id}@{self.peer} {self.state.value} "
                f"{len(self.sessions)} sessions)")

    @property
    def established(self) -> bool:
        return self.state is TunnelState.ESTABLISHED

    def touch(self) -> None:
        """The peer is alive (e.g. the data plane counted its packets): no
        Hello needed for another interval."""
        self.channel.touch()

    # ---- plumbing ----
    def _count(self, what: str) -> None:
        self.counters[what] = self.counters.get(what, 0) + 1

    def _mb(self, msg_type: int) -> MessageBuilder:
        return MessageBuilder(msg_type, self.secret, self._hide, self.ep.randbytes)

    def _send(self, mb: MessageBuilder, session_id: int = 0) -> int:
        ns = self.channel.send(session_id, mb.body())
        self._count(_TX[mb.msg_type])
        return ns

    def _event(self, ev: Event) -> None:
        self.ep.events.append(ev)

    def flush(self) -> None:
        """Move what the channel produced to the endpoint's output."""
        ch = self.channel
        if ch.out:
            out = self.ep.out
            peer, local = self.peer, self.local
            for p in ch.out:
                out.append(Datagram(p, peer, local))
            ch.out.clear()

    def _val(self, m: ControlMessage, attr: int, vendor: int = 0, required: bool = False) -> Any:
        """A typed AVP value; a malformed one is fatal if mandatory (or
        required), else ignored and counted (RFC 2661 7.1)."""
        a = m.find(attr, vendor)
        if a is None:
            if required:
                raise _missing(vendor, attr)
            return None
        return self._typed(a, required)

    def _require(self, m: ControlMessage) -> None:
        """Refuses (_Malformed) a message without an AVP that RFC 2661
        section 6 says it must carry."""
        attr = m.missing_required()
        if attr is not None:
            self._count("missing required avp")
            raise _missing(0, attr)

    def _note_missing(self, m: ControlMessage) -> None:
        """Counts a message that lacks a required AVP but is acted on all
        the same (it ends something, or asks nothing of us)."""
        if m.missing_required() is not None:
            self._count("missing required avp")

    def _typed(self, a: Avp, required: bool = False) -> Any:
        try:
            return a.typed()
        except CodecError as e:
            if a.mandatory or required:
                raise _Malformed(f"{avp_label(a.vendor, a.attr)}: {e}") from None
            self._count("malformed optional avp")
            return None

    # ---- tunnel establishment ----
    def start(self) -> None:
        """Initiator: send SCCRQ."""
        rb = self.ep.randbytes
        if self.secret and self.cfg.challenge:
            self._challenge = rb(16)
        if self.cfg.tie_breaker:
            self.tie_breaker = rb(8)
        mb = self._scc_avps(SCCRQ)
        if self.tie_breaker is not None:
            mb.add(TIE_BREAKER, self.tie_breaker)
        self.state = TunnelState.WAIT_CTL_REPLY
        self._send(mb)

    def _scc_avps(self, msg_type: int) -> MessageBuilder:
        c = self.cfg
        mb = self._mb(msg_type)
        mb.add(PROTOCOL_VERSION, (1, 0)).add(HOST_NAME, c.host_name)
        mb.add(FRAMING_CAPABILITIES, c.framing_capabilities)
        if c.bearer_capabilities is not None:
            mb.add(BEARER_CAPABILITIES, c.bearer_capabilities)
        mb.add(ASSIGNED_TUNNEL_ID, self.local_id)
        mb.add(RECEIVE_WINDOW_SIZE, c.channel.receive_window)
        if c.firmware_revision is not None:
            mb.add(FIRMWARE_REVISION, c.firmware_revision)
        if c.vendor_name:
            mb.add(VENDOR_NAME, c.vendor_name)
        if self._challenge is not None:
            mb.add(CHALLENGE, self._challenge)
        return mb

    def restart_as_responder(self, msg: ControlMessage, peer: Address, local: Address) -> None:
        """We lost the tie-breaker (RFC 2661 4.4.3): our SCCRQ is dropped
        and this tunnel answers the peer's instead; waiting sessions stay."""
        self._count("lost tie-breaker")
        self.initiator = False
        self.state = TunnelState.IDLE
        self.channel = ControlChannel(self.ep.clock, self.cfg.channel, self.counters)
        self.peer = peer
        if local is not None:
            self.local = local
        self._challenge = None
        self.tie_breaker = None
        self.handle(msg)

    def _learn_peer(self, m: ControlMessage) -> bool:
        pi = self.peer_info
        pi.host_name = self._val(m, HOST_NAME) or ""
        pi.vendor_name = self._val(m, VENDOR_NAME)
        pi.firmware_revision = self._val(m, FIRMWARE_REVISION)
        pi.framing_capabilities = self._val(m, FRAMING_CAPABILITIES)
        pi.bearer_capabilities = self._val(m, BEARER_CAPABILITIES)
        pi.protocol_version = self._val(m, PROTOCOL_VERSION)
        rw = self._val(m, RECEIVE_WINDOW_SIZE)
        pi.receive_window = rw or 4
        self.channel.set_peer_window(pi.receive_window)
        pv = pi.protocol_version
        if pv is not None and pv[0] != 1:
            self._fail(ResultCode(STOP_BAD_VERSION, 0x0100, "version 1.0 only"),
                       f"unsupported protocol version {pv[0]}.{pv[1]}")
            return False
        return True

    def _learn_peer_id(self, m: ControlMessage) -> None:
        """The Assigned Tunnel ID of an SCCRQ, SCCRP or StopCCN (one that
        refuses our SCCRQ: our acks must reach the peer's tunnel), if it can
        be read, before any check that may refuse the message;
        _on_sccrq/_on_sccrp then require it."""
        try:
            peer_id = m.get(ASSIGNED_TUNNEL_ID)
        except CodecError:
            return
        if peer_id:
            self._set_peer_id(peer_id)

    def _set_peer_id(self, peer_id: int) -> None:
        """The peer's tunnel id, which the channel puts in every header."""
        self.peer_id = self.channel.peer_tunnel_id = peer_id

    def _on_sccrq(self, m: ControlMessage) -> None:
        self._set_peer_id(self._val(m, ASSIGNED_TUNNEL_ID, required=True))
        self._require(m)
        if not self._learn_peer(m):
            return
        if self.refusal is not None:
            self._fail(self.refusal, "tunnel refused")
            return
        peer_challenge = self._val(m, CHALLENGE)
        if peer_challenge is not None and not self.secret:
            self._fail(ResultCode(STOP_NOT_AUTHORIZED, None, "challenge without a shared secret"),
                       "peer challenged, no secret")
            return
        if self.secret and self.cfg.challenge:
            self._challenge = self.ep.randbytes(16)
        mb = self._scc_avps(SCCRP)
        if peer_challenge is not None:
            mb.add(CHALLENGE_RESPONSE, challenge_response(SCCRP, self.secret, peer_challenge))
        self.state = TunnelState.WAIT_CTL_CONN
        self._send(mb)

    def _response_ok(self, m: ControlMessage, msg_type: int) -> bool:
        if self._challenge is None:
            return True
        resp = self._val(m, CHALLENGE_RESPONSE)
        if resp is not None and hmac.compare_digest(resp, challenge_response(msg_type, self.secret,
                                                                              self._challenge)):
            return True
        self._count("authentication failed")
        self.auth_failed = True
        self._fail(ResultCode(STOP_NOT_AUTHORIZED, None,
                              "bad challenge response" if resp is not None else "no challenge response"),
                   "peer failed tunnel authentication")
        return False

    def _on_sccrp(self, m: ControlMessage) -> None:
        self._set_peer_id(self._val(m, ASSIGNED_TUNNEL_ID, required=True))
        self._require(m)
        if not self._learn_peer(m) or not self._response_ok(m, SCCRP):
            return
        peer_challenge = self._val(m, CHALLENGE)
        if peer_challenge is not None and not self.secret:
            self._fail(ResultCode(STOP_NOT_AUTHORIZED, None, "challenge without a shared secret"),
                       "peer challenged, no secret")
            return
        mb = self._mb(SCCCN)
        if peer_challenge is not None:
            mb.add(CHALLENGE_RESPONSE, challenge_response(SCCCN, self.secret, peer_challenge))
        self._send(mb)
        self._established()

    def _on_scccn(self, m: ControlMessage) -> None:
        if self._response_ok(m, SCCCN):
            self._established()

    def _established(self) -> None:
        self.state = TunnelState.ESTABLISHED
        self.channel.hello = True
        self.announced = True
        self.was_up = True
        self._event(TunnelUp(self))
        if not self.hold_calls:
            self.send_waiting_calls()

    def send_waiting_calls(self) -> None:
        """The ICRQs of the calls that waited for the tunnel to come up."""
        for s in list(self.sessions.values()):
            if s.state is SessionState.WAIT_TUNNEL:
                self._send_icrq(s)

    # ---- input ----
    def handle(self, msg: ControlMessage) -> None:
        """A control message from the peer (header checked, AVPs revealed)."""
        if self.state is TunnelState.CLOSED:
            return
        if self.state is TunnelState.IDLE and not self.initiator:
            self.channel.start_receiving(msg.ns)        # the SCCRQ that creates us
        if not self.peer_id and msg.msg_type in (SCCRQ, SCCRP, STOPCCN):
            # the peer's id goes in the header of all we send from now on
            # (RFC 2661 4.4.3): a StopCCN refusing this very message, or one
            # of ours queued behind the SCCRQ this acks, too
            self._learn_peer_id(msg)
        for m in self.channel.receive(msg):
            self._dispatch(m)
        self.channel.after_input()
        self._check_finished()
        self.flush()

    def _dispatch(self, m: ControlMessage) -> None:
        t = m.msg_type
        self._count(_RX.get(t, "rx unknown type"))
        st = self.state
        if st not in _ACTIVE:
            if t == STOPCCN and st is TunnelState.CLOSING:
                # both sides closed at once: theirs must still be acked and
                # its retransmissions re-acked for a full cycle (RFC 2661
                # 5.7), even once ours is acked: hold, as for a StopCCN in
                # any other state
                self.channel.request_ack()
                self.state = TunnelState.HOLD
                self._hold_until = max(self._hold_until or 0.0, self.ep.clock() + self.cfg.stop_hold)
                return
            self._count("ignored while closing")       # CLOSING, HOLD: only the transport runs
            return
        if t not in MESSAGE_NAMES:
            if m.type_mandatory:
                self._fail(ResultCode(STOP_GENERAL_ERROR, ERR_OUT_OF_RANGE, f"unknown message type {t}"),
                           "unknown mandatory message type")
            return
        if t in SESSION_MESSAGES:
            self._session_message(m)
            return
        if t == STOPCCN:
            self._peer_stop(m)
            return
        if self._cleared_by_unknown_mandatory(m) or t == HELLO:
            return
        try:
            if t == SCCRQ and st is TunnelState.IDLE:
                self._on_sccrq(m)
            elif t == SCCRP and st is TunnelState.WAIT_CTL_REPLY:
                self._on_sccrp(m)
            elif t == SCCCN and st is TunnelState.WAIT_CTL_CONN:
                self._on_scccn(m)
            else:
                self._fail(ResultCode(STOP_FSM_ERROR, None, f"unexpected {m.name} in {st.value}"),
                           f"unexpected {m.name}")
        except _Malformed as e:
            self._fail(ResultCode(STOP_GENERAL_ERROR, e.error, str(e)), f"malformed {m.name}")

    def _cleared_by_unknown_mandatory(self, m: ControlMessage) -> bool:
        """A tunnel message with an AVP we must understand and do not
        clears the tunnel (RFC 2661 4.2): True if this one did."""
        bad = m.unknown_mandatory()
        if bad is None:
            return False
        label = avp_label(bad.vendor, bad.attr)
        self._fail(ResultCode(STOP_GENERAL_ERROR, ERR_UNKNOWN_MANDATORY_AVP, label),
                   f"unknown mandatory {label} in {m.name}")
        return True

    # ---- tunnel teardown ----
    def _peer_stop(self, m: ControlMessage) -> None:
        self._note_missing(m)
        try:
            result = self._val(m, RESULT_CODE)
        except _Malformed:
            result = None
        self.channel.abandon()
        self.channel.request_ack()
        self.state = TunnelState.HOLD
        self._hold_until = self.ep.clock() + self.cfg.stop_hold
        self._teardown(f"closed by peer ({result})" if result else "closed by peer", result, True)

    def close(self, result: ResultCode | None = None, reason: str = "closed") -> None:
        """Send StopCCN: every session goes down at once (no CDNs, RFC 2661
        6.4); the tunnel stays until the StopCCN is acknowledged."""
        if self.state not in _ACTIVE:
            return
        result = result or ResultCode(STOP_CLEAR)
        self.channel.drop_unsent()
        self.channel.hello = False
        mb = self._mb(STOPCCN).add(ASSIGNED_TUNNEL_ID, self.local_id).add(RESULT_CODE, result)
        self.state = TunnelState.CLOSING
        self._hold_until = self.ep.clock() + self.cfg.stop_hold
        self._send(mb)
        self._teardown(reason, result, False)

    _fail = close

    def _teardown(self, reason: str, result: ResultCode | None, by_peer: bool) -> None:
        self.down_reason = reason
        why = f"tunnel down: {reason}"
        for s in list(self.sessions.values()):
            s.state = SessionState.CLOSED
            if s.announced:
                self._event(SessionDown(s, why, None, None, None, by_peer))
        self.sessions.clear()
        self._by_peer_sid.clear()
        self._setup.clear()
        refused = self.refusal is not None          # by the owner's policy: it knows, and counted it
        if self.auth_failed:
            self.ep._count("tunnel authentication failed")
        if not self.was_up and not refused:
            self.ep._count("tunnel setup failed")
        if self.announced:
            self._event(TunnelDown(self, reason, result, by_peer, self.auth_failed))
        elif not refused:
            self._event(TunnelFailed(self, reason, result, by_peer, self.auth_failed))

    def _check_finished(self) -> None:
        st = self.state
        ch = self.channel
        if ch.dead and st in _ACTIVE:
            self._teardown("peer not responding", None, False)
            self._remove()
        elif st is TunnelState.CLOSING and (ch.idle or ch.dead):
            self._remove()
        elif st is TunnelState.HOLD and ch.dead:
            self._remove()

    def _remove(self) -> None:
        self.state = TunnelState.CLOSED
        self.ep._remove(self)

    # ---- timers ----
    def next_deadline(self) -> float | None:
        if self.state is TunnelState.CLOSED:
            return None
        d = self.channel.next_deadline()
        if self._setup:
            s = self._setup[0][0]
            if d is None or s < d:
                d = s
        h = self._hold_until
        if h is not None and self.state in (TunnelState.CLOSING, TunnelState.HOLD) and (d is None or h < d):
            d = h
        if self.state in _ESTABLISHING and (d is None or self._setup_until < d):
            d = self._setup_until
        return d

    def on_timer(self) -> None:
        if self.state is TunnelState.CLOSED:
            return
        now = self.ep.clock()
        self.channel.on_timer()
        self._check_finished()
        if self.state is TunnelState.CLOSED:
            return
        if self.state in (TunnelState.CLOSING, TunnelState.HOLD):
            if self._hold_until is not None and now >= self._hold_until:
                self._remove()
                return
        if self.state in _ESTABLISHING and now >= self._setup_until:
            self._count("tunnel setup timeout")
            self.close(ResultCode(STOP_GENERAL_ERROR, None, "tunnel setup timed out"), reason="setup timed out")
            self.flush()
            return
        setup = self._setup
        ch = self.channel
        while setup and setup[0][0] <= now:
            _, s, delivered = setup.popleft()
            st = s.state
            if st is SessionState.ESTABLISHED or st is SessionState.CLOSED:
                continue
            if st is not SessionState.WAIT_ANSWER and (
                    st is SessionState.WAIT_TUNNEL or delivered != ch.delivered or
                    (s.wait_ns is not None and not ch.acked(s.wait_ns))):
                setup.append((now + self.cfg.session_setup_timeout, s, ch.delivered))
                continue
            self._count("session setup timeout")
            self.close_session(s, ResultCode(CDN_TIMEOUT if s.lac else CDN_ADMIN, None, "setup timed out"),
                               reason="setup timed out")
        self.flush()

    # ---- sessions: LAC ----
    def open_session(self, call: CallParams) -> Session:
        if self.state not in _ACTIVE:
            raise L2tpError("tunnel is closing")
        sid = self.session_ids.allocate()
        if sid is None:
            raise L2tpError("no free session id")
        if not call.serial:
            call.serial = self.ep.next_serial()
        s = Session(self, sid, True, call)
        s.announced = True
        self.sessions[sid] = s
        self._setup.append((self.ep.clock() + self.cfg.session_setup_timeout, s, self.channel.delivered))
        if self.state is TunnelState.ESTABLISHED:
            self._send_icrq(s)
        return s

    def _send_icrq(self, s: Session) -> None:
        c = s.call
        mb = self._mb(ICRQ).add(ASSIGNED_SESSION_ID, s.local_id).add(CALL_SERIAL_NUMBER, c.serial)
        if c.bearer_type is not None:
            mb.add(BEARER_TYPE, c.bearer_type)
        if c.physical_channel is not None:
            mb.add(PHYSICAL_CHANNEL_ID, c.physical_channel)
        if c.calling_number is not None:
            mb.add(CALLING_NUMBER, c.calling_number)
        if c.called_number is not None:
            mb.add(CALLED_NUMBER, c.called_number)
        if c.sub_address is not None:
            mb.add(SUB_ADDRESS, c.sub_address)
        ln = c.line
        if ln is not None:
            if ln.circuit_id is not None:
                mb.add(BBF_AGENT_CIRCUIT_ID, ln.circuit_id, VENDOR_BBF)
            if ln.remote_id is not None:
                mb.add(BBF_AGENT_REMOTE_ID, ln.remote_id, VENDOR_BBF)
            for attr, v in ln.rates.items():
                mb.add(attr, v, VENDOR_BBF)
            if ln.loop_encapsulation is not None:
                mb.add(BBF_ACCESS_LOOP_ENCAPSULATION, ln.loop_encapsulation, VENDOR_BBF)
        s.state = SessionState.WAIT_REPLY
        s.wait_ns = self._send(mb, 0)

    def _send_iccn(self, s: Session) -> None:
        c = s.call
        mb = self._mb(ICCN).add(TX_CONNECT_SPEED, c.tx_speed).add(FRAMING_TYPE, c.framing_type)
        if c.rx_speed is not None:
            mb.add(RX_CONNECT_SPEED, c.rx_speed)
        lcp = c.proxy_lcp
        if lcp is not None:
            if lcp.initial_received is not None:
                mb.add(INITIAL_RECEIVED_LCP_CONFREQ, lcp.initial_received)
            if lcp.last_sent is not None:
                mb.add(LAST_SENT_LCP_CONFREQ, lcp.last_sent)
            if lcp.last_received is not None:
                mb.add(LAST_RECEIVED_LCP_CONFREQ, lcp.last_received)
        pa = c.proxy_auth
        if pa is not None:
            mb.add(PROXY_AUTHEN_TYPE, pa.type)
            if pa.name or pa.type in _PROXY_TYPES_WITH_NAME:
                mb.add(PROXY_AUTHEN_NAME, pa.name or b"")     # RFC 2661 4.4.5: present for these
            if pa.challenge is not None:
                mb.add(PROXY_AUTHEN_CHALLENGE, pa.challenge)
            if pa.ident is not None:
                mb.add(PROXY_AUTHEN_ID, pa.ident)
            if pa.response is not None:
                mb.add(PROXY_AUTHEN_RESPONSE, pa.response)
        if c.private_group_id is not None:
            mb.add(PRIVATE_GROUP_ID, c.private_group_id)
        if c.sequencing_required:
            mb.add(SEQUENCING_REQUIRED, True)
        self._send(mb, s.peer_id)

    # ---- sessions: LNS ----
    def _read_icrq(self, m: ControlMessage) -> CallParams:
        """One pass over the AVPs (40k calls: no per-AVP lookups)."""
        c = CallParams(bearer_type=None)
        line = None
        typed = self._typed
        for a in m.avps:
            if a.vendor == 0:
                f = _ICRQ_FIELDS.get(a.attr)
                if f is not None:
                    v = typed(a)
                    if v is not None:
                        setattr(c, f, v)
            elif a.vendor == VENDOR_BBF and a.known:
                v = typed(a)
                if v is None:
                    continue
                if line is None:
                    line = AccessLine()
                attr = a.attr
                if attr == BBF_AGENT_CIRCUIT_ID:
                    line.circuit_id = v
                elif attr == BBF_AGENT_REMOTE_ID:
                    line.remote_id = v
                elif attr == BBF_ACCESS_LOOP_ENCAPSULATION:
                    line.loop_encapsulation = v
                else:
                    line.rates[attr] = v
        c.line = line
        return c

    def _read_iccn(self, m: ControlMessage, c: CallParams) -> None:
        lcp: ProxyLcp | None = None
        auth: dict[str, Any] = {}
        typed = self._typed
        for a in m.avps:
            if a.vendor != 0:
                continue
            attr = a.attr
            f = _ICCN_FIELDS.get(attr)
            if f is not None:
                v = typed(a)
                if v is not None:
                    setattr(c, f, v)
                continue
            f = _PROXY_LCP_FIELDS.get(attr)
            if f is not None:
                v = typed(a)
                if v is not None:
                    if lcp is None:
                        lcp = ProxyLcp()
                    setattr(lcp, f, v)
                continue
            f = _PROXY_AUTH_FIELDS.get(attr)
            if f is not None:
                v = typed(a)
                if v is not None:
                    auth[f] = v
        c.sequencing_required = bool(c.sequencing_required)
        if lcp is not None:
            c.proxy_lcp = lcp
        if "type" in auth:
            c.proxy_auth = ProxyAuth(**auth)

    def _new_call(self, m: ControlMessage) -> None:
        try:
            peer_sid = self._val(m, ASSIGNED_SESSION_ID, required=True)
        except _Malformed:
            self._count("call request without session id")     # nobody to answer
            return
        if m.msg_type == OCRQ:
            self._refuse_new(peer_sid, ResultCode(CDN_NO_FACILITIES_PERMANENT, None, "no outgoing calls"))
            return
        if not self.cfg.accept_calls:
            self._refuse_new(peer_sid, ResultCode(CDN_NO_FACILITIES_PERMANENT, None, "no incoming calls"))
            return
        bad = m.unknown_mandatory()
        if bad is not None:
            self._count("unknown mandatory avp")
            self._refuse_new(peer_sid, ResultCode(CDN_GENERAL_ERROR, ERR_UNKNOWN_MANDATORY_AVP,
                                                  avp_label(bad.vendor, bad.attr)))
            return
        try:
            self._require(m)
            call = self._read_icrq(m)
        except _Malformed as e:
            self._refuse_new(peer_sid, ResultCode(CDN_GENERAL_ERROR, e.error, str(e)))
            return
        sid = self.session_ids.allocate()
        if sid is None:
            self._refuse_new(peer_sid, ResultCode(CDN_NO_FACILITIES_TEMPORARY, ERR_NO_RESOURCES))
            return
        s = Session(self, sid, False, call)
        s.peer_id = peer_sid
        s.state = SessionState.WAIT_ANSWER
        self.sessions[sid] = s
        self._by_peer_sid[peer_sid] = s
        self._setup.append((self.ep.clock() + self.cfg.session_setup_timeout, s, self.channel.delivered))
        if self.cfg.auto_accept:
            self.accept(s)
        else:
            s.announced = True
            self._event(IncomingCall(s))

    def _refuse_new(self, peer_sid: int, result: ResultCode) -> None:
        """CDN for a call we never took on: it needs an Assigned Session ID
        of ours, so borrow one."""
        self._count("call refused")
        sid = self.session_ids.allocate()
        self._send_cdn(peer_sid, sid or 0xFFFF, result)
        if sid is not None:
            self.session_ids.release(sid)

    def accept(self, s: Session) -> bool:
        """LNS: answer the ICRQ with ICRP."""
        if s.state is not SessionState.WAIT_ANSWER or s.tunnel is not self:
            return False
        s.state = SessionState.WAIT_CONNECT
        s.wait_ns = self._send(self._mb(ICRP).add(ASSIGNED_SESSION_ID, s.local_id), s.peer_id)
        return True

    # ---- sessions: both ----
    def _session_message(self, m: ControlMessage) -> None:
        t = m.msg_type
        if self.state is not TunnelState.ESTABLISHED:
            self._fail(ResultCode(STOP_FSM_ERROR, None, f"{m.name} before the tunnel is up"),
                       f"unexpected {m.name}")
            return
        if t == ICRQ or t == OCRQ:
            self._new_call(m)
            return
        if t == CSUN or t == CSURQ:
            # RFC 5515 speed updates, of the tunnel (they list sessions):
            # not used, but an AVP we must understand and do not clears the
            # tunnel as in any other tunnel message
            self._cleared_by_unknown_mandatory(m)
            return
        s = self.sessions.get(m.session_id) if m.session_id else None
        if s is None and t == CDN:
            try:
                asid = self._val(m, ASSIGNED_SESSION_ID)
            except _Malformed:
                asid = None
            s = self._by_peer_sid.get(asid) if asid else None
        if s is None:
            self._count("unknown session")
            if t in (ICRP, OCRP) and m.session_id:
                # RFC 2661 7.4.1: a reply for a call we do not have: CDN
                try:
                    asid = self._val(m, ASSIGNED_SESSION_ID)
                except _Malformed:
                    asid = None
                if asid:
                    self._send_cdn(asid, m.session_id, ResultCode(CDN_GENERAL_ERROR, ERR_BAD_SESSION_ID))
            return
        bad = m.unknown_mandatory()
        try:
            if t == CDN:
                self._note_missing(m)
                self._on_cdn(s, m)
            elif bad is not None:
                label = avp_label(bad.vendor, bad.attr)
                self._count("unknown mandatory avp")
                self.close_session(s, ResultCode(CDN_GENERAL_ERROR, ERR_UNKNOWN_MANDATORY_AVP, label),
                                   reason=f"unknown mandatory {label} in {m.name}")
            elif s.lac and t == ICRP and s.state is SessionState.WAIT_REPLY:
                self._on_icrp(s, m)
            elif not s.lac and t == ICCN and s.state is SessionState.WAIT_CONNECT:
                self._on_iccn(s, m)
            elif (t == SLI and s.lac) or (t == WEN and not s.lac):
                self._note_missing(m)               # ACCM / call errors: nothing to do with them here
            else:
                self.close_session(s, ResultCode(CDN_GENERAL_ERROR, ERR_VENDOR,
                                                 f"unexpected {m.name} in {s.state.value}"),
                                   reason=f"unexpected {m.name}")
        except _Malformed as e:
            self.close_session(s, ResultCode(CDN_GENERAL_ERROR, e.error, str(e)),
                               reason=f"malformed {m.name}")

    def _on_icrp(self, s: Session, m: ControlMessage) -> None:
        peer_sid = self._val(m, ASSIGNED_SESSION_ID, required=True)
        s.peer_id = peer_sid
        self._by_peer_sid[peer_sid] = s
        self._send_iccn(s)
        s.state = SessionState.ESTABLISHED
        self._event(SessionUp(s))

    def _on_iccn(self, s: Session, m: ControlMessage) -> None:
        self._require(m)
        self._read_iccn(m, s.call)
        s.state = SessionState.ESTABLISHED
        s.announced = True
        self._event(SessionUp(s))

    def _on_cdn(self, s: Session, m: ControlMessage) -> None:
        def opt(attr: int) -> Any:
            try:
                return self._val(m, attr)
            except _Malformed:
                return None
        result, q931, cause = opt(RESULT_CODE), opt(Q931_CAUSE), opt(PPP_DISCONNECT_CAUSE)
        self._remove_session(s)
        if s.announced:
            self._event(SessionDown(s, "disconnected by peer", result, q931, cause, True))

    def _send_cdn(self, peer_sid: int, local_sid: int, result: ResultCode, q931: Q931Cause | None = None,
                  cause: PppDisconnectCause | None = None) -> None:
        mb = self._mb(CDN).add(RESULT_CODE, result).add(ASSIGNED_SESSION_ID, local_sid)
        if q931 is not None:
            mb.add(Q931_CAUSE, q931)
        if cause is not None:
            mb.add(PPP_DISCONNECT_CAUSE, cause)
        self._send(mb, peer_sid)

    def close_session(self, s: Session, result: ResultCode | None = None, q931: Q931Cause | None = None,
                      cause: PppDisconnectCause | None = None, reason: str = "closed") -> None:
        """Send CDN (unless the peer never heard of the session) and forget it."""
        if s.state is SessionState.CLOSED or s.tunnel is not self or self.sessions.get(s.local_id) is not s:
            return
        result = result or ResultCode(CDN_ADMIN)
        if s.state is not SessionState.WAIT_TUNNEL and self.state is TunnelState.ESTABLISHED:
            self._send_cdn(s.peer_id, s.local_id, result, q931, cause)
        self._remove_session(s)
        if s.announced:
            self._event(SessionDown(s, reason, result, q931, cause, False))

    def _remove_session(self, s: Session) -> None:
        s.state = SessionState.CLOSED
        self.sessions.pop(s.local_id, None)
        if s.peer_id and self._by_peer_sid.get(s.peer_id) is s:
            del self._by_peer_sid[s.peer_id]
        self.session_ids.release(s.local_id)

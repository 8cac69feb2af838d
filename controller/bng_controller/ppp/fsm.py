"""The PPP option negotiation automaton (RFC 1661 section 4).

One `Fsm` runs each of LCP, IPCP and IPv6CP. It follows the state
transition table of section 4.1 event by event (the comments name the
table's cells), owns the Restart timer and the restart counters, and asks
a `Negotiator` what to put in Configure-Requests and what to answer to the
peer's. It does no I/O: frames go to `sink(protocol, info)`, and time is
whatever `clock()` says, so tests drive it with a fake clock.
"""
from __future__ import annotations

import enum
from typing import Callable, Protocol

from .codec import (CODE_REJ, CONF_ACK, CONF_NAK, CONF_REJ, CONF_REQ, TERM_ACK, TERM_REQ, CodecError,
                    ControlPacket, Option, encode_options, parse_options)


class State(enum.IntEnum):
    INITIAL = 0
    STARTING = 1
    CLOSED = 2
    STOPPED = 3
    CLOSING = 4
    STOPPING = 5
    REQ_SENT = 6
    ACK_RCVD = 7
    ACK_SENT = 8
    OPENED = 9


class Negotiator(Protocol):
    """The protocol-specific half: options and the layer's upcalls."""

    # Options the layer cannot come up without (IPCP's IP-Address): their
    # Naks are never turned into Rejects by Max-Failure, since the
    # negotiator would Nak the request that leaves them out.
    required_options: frozenset[int]

    def request_options(self) -> list[Option]:
        """Options of our next Configure-Request."""

    def check_request(self, options: list[Option]) -> tuple[int, list[Option]]:
        """Judge the peer's Configure-Request: (CONF_ACK, options as
        received), (CONF_NAK, suggested values) or (CONF_REJ, rejected
        options as received). Naks and Rejects list only the options
        concerned, in the peer's order (RFC 1661 5.3, 5.4)."""

    def acked(self, options: list[Option]) -> None:
        """Our request was acknowledged: these values are in force."""

    def nak_received(self, options: list[Option]) -> bool:
        """Adjust the next request to the peer's suggestions; False if
        nothing the peer suggests is acceptable (the layer closes)."""

    def reject_received(self, options: list[Option]) -> bool:
        """Drop the rejected options from the next request; False if an
        option we cannot do without was rejected (the layer closes)."""

    def layer_up(self) -> None: ...

    def layer_down(self) -> None: ...

    def layer_started(self) -> None: ...

    def layer_finished(self) -> None: ...


Sink = Callable[[int, bytes], None]


def _in_order_subset(got: list[Option], sent: list[Option]) -> bool:
    """Whether got is sent with some options left out, order and bytes kept."""
    it = iter(sent)
    return all(any(o == g for o in it) for g in got)


class Fsm:
    def __init__(self, protocol: int, negotiator: Negotiator, sink: Sink, clock: Callable[[], float],
                 restart_time: float = 3.0, max_configure: int = 10, max_terminate: int = 2,
                 max_failure: int = 5, name: str = "", peer_mru: Callable[[], int] = lambda: 1500):
        self.protocol = protocol
        self.neg = negotiator
        self.sink = sink
        self.clock = clock
        self.name = name or f"0x{protocol:04x}"
        self.restart_time = restart_time
        self.max_configure = max_configure
        self.max_terminate = max_terminate
        self.max_failure = max_failure
        self.state = State.INITIAL
        self.restart_count = 0
        self.deadline: float | None = None
        self.failures = 0            # Naks sent in a row (Max-Failure)
        self._naked: tuple[int, bytes] | None = None   # the peer's request we last Naked
        self.naks_received = 0       # Naks of our requests since one was acked
        self.naks_as_rejects = 0     # of those, taken as Rejects (see _rcn)
        self._req_id = 0
        self._req_options: list[Option] = []
        self._req_pending = False    # our last request awaits a reply
        self._ident = 0
        self.passive = False         # the "p" of TO- in Req-Sent/Ack-Rcvd/Ack-Sent
        self.silent_discards = 0     # invalid Ack/Nak/Rej ids, unexpected packets
        self.reacked = 0             # duplicate requests answered in Opened
        self.close_reason = ""
        self._acked: tuple[int, bytes] | None = None   # the peer's request we last acked
        # the peer's MRU, which a Code-Reject must fit (RFC 1661 5.6): the
        # link gives LCP's negotiated value
        self.peer_mru = peer_mru

    # ---- identifiers ----
    def next_id(self) -> int:
        self._ident = (self._ident + 1) & 0xFF
        return self._ident

    # ---- actions (RFC 1661 4.4) ----
    def _tlu(self) -> None:
        self.neg.layer_up()

    def _tld(self) -> None:
        self.neg.layer_down()

    def _tls(self) -> None:
        self.neg.layer_started()

    def _tlf(self) -> None:
        self.neg.layer_finished()

    def _irc_conf(self) -> None:
        self.restart_count = self.max_configure

    def _irc_term(self) -> None:
        self.restart_count = self.max_terminate

    def _zrc(self) -> None:
        self.restart_count = 0
        self._start_timer()

    def _start_timer(self) -> None:
        self.deadline = self.clock() + self.restart_time

    def _stop_timer(self) -> None:
        self.deadline = None

    def _send(self, pkt: ControlPacket) -> None:
        self.sink(self.protocol, pkt.encode())

    def _scr(self, retransmit: bool = False) -> None:
        """Send-Configure-Request. A retransmission of unchanged options
        keeps its identifier, so a late Ack of the first copy still counts."""
        opts = self.neg.request_options()
        if not (retransmit and opts == self._req_options and self._req_pending):
            self._req_id = self.next_id()
        self._req_options = opts
        self._req_pending = True
        self.restart_count -= 1
        self._start_timer()
        self._send(ControlPacket(CONF_REQ, self._req_id, encode_options(opts)))

    def _str(self) -> None:
        self.restart_count -= 1
        self._start_timer()
        self._send(ControlPacket(TERM_REQ, self.next_id(), self.close_reason.encode()))

    def _sta(self, ident: int) -> None:
        self._send(ControlPacket(TERM_ACK, ident))

    def _scj(self, pkt: ControlPacket) -> None:
        # Code-Reject carries the rejected packet, cut to the peer's MRU less
        # its own 4-byte header (RFC 1661 5.6).
        self._send(ControlPacket(CODE_REJ, self.next_id(), pkt.encode()[:self.peer_mru() - 4]))

    # ---- administrative events ----
    def up(self) -> None:
        """The lower layer is up."""
        s = self.state
        if s == State.INITIAL:
            self.state = State.CLOSED
        elif s == State.STARTING:
            self._irc_conf()
            self.naks_received = 0
            self._scr()
            self.state = State.REQ_SENT

    def down(self) -> None:
        """The lower layer is down."""
        s = self.state
        if s in (State.CLOSED, State.CLOSING):
            self.state = State.INITIAL
        elif s == State.STOPPED:
            self._tls()
            self.state = State.STARTING
        elif s in (State.STOPPING, State.REQ_SENT, State.ACK_RCVD, State.ACK_SENT):
            self.state = State.STARTING
        elif s == State.OPENED:
            self._tld()
            self.state = State.STARTING
        if self.state in (State.INITIAL, State.STARTING):
            self._stop_timer()

    def open(self, passive: bool = False) -> None:
        """Administrative Open. `passive`: wait for the peer's request
        instead of sending ours (used for NCPs that the peer starts)."""
        self.passive = passive
        s = self.state
        if s == State.INITIAL:
            self._tls()
            self.state = State.STARTING
        elif s == State.CLOSED:
            self._irc_conf()
            self.naks_received = 0
            if passive:
                self.state = State.STOPPED
            else:
                self._scr()
                self.state = State.REQ_SENT
        elif s == State.CLOSING:
            self.state = State.STOPPING          # 5r: restart option not taken

    def close(self, reason: str = "") -> None:
        """Administrative Close."""
        self.close_reason = reason
        s = self.state
        if s == State.STARTING:
            self._tlf()
            self.state = State.INITIAL
        elif s == State.STOPPED:
            self.state = State.CLOSED
        elif s == State.STOPPING:
            self.state = State.CLOSING
        elif s in (State.REQ_SENT, State.ACK_RCVD, State.ACK_SENT):
            self._irc_term()
            self._str()
            self.state = State.CLOSING
        elif s == State.OPENED:
            self._tld()
            self._irc_term()
            self._str()
            self.state = State.CLOSING

    def restart_requests(self) -> None:
        """Our Configure-Requests so far cannot have reached the peer (the
        layer below tells us so): count Max-Configure anew and send the
        request now. Only in Req-Sent, where nothing of the peer's has
        arrived that would prove otherwise (RFC 1661 4.6 bounds the
        attempts the peer could answer, not the ones lost before it
        could)."""
        if self.state == State.REQ_SENT:
            self._irc_conf()
            self._scr(retransmit=True)

    # ---- timer ----
    def timeout(self) -> None:
        """The Restart timer expired (the caller checks `deadline`)."""
        self.deadline = None
        s = self.state
        if self.restart_count > 0:                       # TO+
            if s in (State.CLOSING, State.STOPPING):
                self._str()
            elif s in (State.REQ_SENT, State.ACK_RCVD):
                self._scr(retransmit=True)
                self.state = State.REQ_SENT
            elif s == State.ACK_SENT:
                self._scr(retransmit=True)
        else:                                            # TO-
            if s == State.CLOSING:
                self._tlf()
                self.state = State.CLOSED
            elif s == State.STOPPING:
                self._tlf()
                self.state = State.STOPPED
            elif s in (State.REQ_SENT, State.ACK_RCVD, State.ACK_SENT):
                self.close_reason = self.close_reason or "negotiation timed out"
                self._tlf()
                self.state = State.STOPPED

    # ---- received packets ----
    def receive(self, pkt: ControlPacket) -> bool:
        """Handle a received packet of this protocol's common codes.
        False: not one of them (the owner handles or Code-Rejects it)."""
        c = pkt.code
        if self.state in (State.INITIAL, State.STARTING):
            # No packets are expected before the layer is up (4.1: "-").
            self.silent_discards += 1
            return True
        if c == CONF_REQ:
            self._rcr(pkt)
        elif c == CONF_ACK:
            self._rca(pkt)
        elif c in (CONF_NAK, CONF_REJ):
            self._rcn(pkt)
        elif c == TERM_REQ:
            self._rtr(pkt)
        elif c == TERM_ACK:
            self._rta()
        elif c == CODE_REJ:
            self._rxj_code(pkt)
        else:
            return False
        return True

    def unknown_code(self, pkt: ControlPacket) -> None:
        """RUC: Code-Reject it (all states from Closed on)."""
        if self.state not in (State.INITIAL, State.STARTING):
            self._scj(pkt)

    def _rcr(self, pkt: ControlPacket) -> None:
        s = self.state
        if s == State.CLOSED:
            self._sta(pkt.identifier)
            return
        if s == State.OPENED and self._acked == (pkt.identifier, pkt.data):
            # The request we acked, again: our Ack was lost (the peer waits
            # in Ack-Sent) or the line duplicated it. Acking again converges
            # as if the first Ack had arrived; a peer that really restarts
            # negotiation must use a new Identifier (RFC 1661 5.1), which
            # renegotiates below as the state table says.
            self.reacked += 1
            self._send(ControlPacket(CONF_ACK, pkt.identifier, pkt.data))
            return
        if s in (State.CLOSING, State.STOPPING):
            return
        try:
            options = parse_options(pkt.data)
        except CodecError:
            self.silent_discards += 1
            return
        code, reply = self.neg.check_request(options)
        if code == CONF_NAK:
            # The same request again (same Identifier, same options) is a
            # retransmission: our Nak was lost, the peer did not refuse it.
            # Counting those, a lossy line ran into Max-Failure and rejected
            # options (DNS) that a peer would have taken.
            if self._naked != (pkt.identifier, pkt.data):
                self.failures += 1
                self._naked = (pkt.identifier, pkt.data)
            if self.failures > self.max_failure:
                # Max-Failure (RFC 1661 4.6): stop suggesting, reject the
                # options we would Nak. A Reject lists options the peer
                # sent, so a Nak prompting for one it left out stands, as
                # does one for a required option; Max-Configure and the
                # setup timeout bound that exchange.
                kinds = {t for t, _ in reply} - self.neg.required_options
                rejected = [o for o in options if o[0] in kinds]
                if rejected:
                    code, reply = CONF_REJ, rejected
        good = code == CONF_ACK
        if good:
            self.failures = 0
            self._naked = None
            self._acked = (pkt.identifier, pkt.data)
        if s == State.OPENED:
            self._tld()
            self._scr()
        elif s == State.STOPPED:
            self._irc_conf()
            self._scr()
        self._send(ControlPacket(code, pkt.identifier, encode_options(reply)))
        if good:
            if s == State.ACK_RCVD:
                self.state = State.OPENED
                self._stop_timer()
                self._tlu()
            else:
                self.state = State.ACK_SENT
        else:
            self.state = State.ACK_RCVD if s == State.ACK_RCVD else State.REQ_SENT

    def _matches_request(self, pkt: ControlPacket) -> bool:
        return self._req_pending and pkt.identifier == self._req_id

    def _rca(self, pkt: ControlPacket) -> None:
        s = self.state
        if not self._matches_request(pkt) or pkt.data != encode_options(self._req_options):
            if s not in (State.CLOSED, State.STOPPED):
                self.silent_discards += 1      # not a valid Ack: ignore
                return
        if s in (State.CLOSED, State.STOPPED):
            self._sta(pkt.identifier)
            return
        if s in (State.CLOSING, State.STOPPING):
            return
        self._req_pending = False
        self.naks_received = 0
        if s == State.REQ_SENT:
            self._irc_conf()
            self._stop_timer()
            self.neg.acked(self._req_options)
            self.state = State.ACK_RCVD
            # The Restart timer keeps running for the peer's request.
            self._start_timer()
        elif s == State.ACK_RCVD:
            self._scr()                       # 6x: crossed connection
            self.state = State.REQ_SENT
        elif s == State.ACK_SENT:
            self._irc_conf()
            self.neg.acked(self._req_options)
            self._stop_timer()
            self.state = State.OPENED
            self._tlu()
        elif s == State.OPENED:
            self._tld()
            self._scr()
            self.state = State.REQ_SENT

    def _rcn(self, pkt: ControlPacket) -> None:
        s = self.state
        if s in (State.CLOSED, State.STOPPED):
            self._sta(pkt.identifier)
            return
        if s in (State.CLOSING, State.STOPPING):
            return
        if not self._matches_request(pkt):
            self.silent_discards += 1
            return
        try:
            options = parse_options(pkt.data)
        except CodecError:
            self.silent_discards += 1
            return
        if pkt.code == CONF_REJ and not _in_order_subset(options, self._req_options):
            # RFC 1661 5.4: a Reject lists options of our request, in its
            # order and unchanged; anything else is not a valid Reject
            self.silent_discards += 1
            return
        self._req_pending = False
        if pkt.code == CONF_NAK:
            self.naks_received += 1
            if self.naks_received > self.max_failure:
                # Every Nak refills the restart counter (RFC 1661 4.6), so a
                # peer that Naks whatever we send would keep the layer
                # negotiating for ever, Max-Configure never reached. Past
                # Max-Failure Naks in a row, take them as Rejects of those
                # options, as pppd does after its maxnakloops: we stop
                # sending them, or close if we cannot do without one.
                self.naks_as_rejects += 1
                if not self.neg.reject_received(options):
                    self.close(f"peer Naked {self.naks_received} requests in a row")
                    return
            elif not self.neg.nak_received(options):
                self.close("no acceptable value for a required option")
                return
        elif not self.neg.reject_received(options):
            self.close("required option rejected")
            return
        if s == State.OPENED:
            self._tld()
            self._scr()
            self.state = State.REQ_SENT
        elif s in (State.REQ_SENT, State.ACK_SENT):
            self._irc_conf()
            self._scr()
        elif s == State.ACK_RCVD:
            self._scr()
            self.state = State.REQ_SENT

    def _rtr(self, pkt: ControlPacket) -> None:
        s = self.state
        if s == State.OPENED:
            self._tld()
            self.restart_count = 0
            self._sta(pkt.identifier)
            self._start_timer()          # zrc: wait one Restart period in Stopping
            self.state = State.STOPPING
            self.close_reason = self.close_reason or "peer requested termination"
            return
        self._sta(pkt.identifier)
        if s in (State.ACK_RCVD, State.ACK_SENT):
            self.state = State.REQ_SENT

    def _rta(self) -> None:
        s = self.state
        if s == State.CLOSING:
            self._stop_timer()
            self._tlf()
            self.state = State.CLOSED
        elif s == State.STOPPING:
            self._stop_timer()
            self._tlf()
            self.state = State.STOPPED
        elif s == State.ACK_RCVD:
            self.state = State.REQ_SENT
        elif s == State.OPENED:
            self._tld()
            self._scr()
            self.state = State.REQ_SENT

    def _rxj_code(self, pkt: ControlPacket) -> None:
        """Code-Reject: fatal if it rejects one of the codes negotiation
        needs (1-7), harmless otherwise (e.g. Identification)."""
        rejected = pkt.data[0] if pkt.data else 0
        if 1 <= rejected <= 7:
            self.rxj_minus()
        # RXJ+: no state change

    def rxj_minus(self) -> None:
        """A catastrophic reject (Code-Reject of a core code, or a
        Protocol-Reject of this protocol, handled by the owner)."""
        s = self.state
        self.close_reason = self.close_reason or "rejected by peer"
        if s in (State.CLOSED, State.CLOSING):
            self._stop_timer()
            self._tlf()
            self.state = State.CLOSED
        elif s in (State.STOPPED, State.STOPPING, State.REQ_SENT, State.ACK_RCVD, State.ACK_SENT):
            self._stop_timer()
            self._tlf()
            self.state = State.STOPPED
        elif s == State.OPENED:
            self._tld()
            self._irc_term()
            self._str()
            self.state = State.STOPPING

    # ---- for restored sessions ----
    def force_opened(self, ident: int = 0) -> None:
        """Put an automaton straight into Opened (a session restored after a
        controller restart, whose peer never saw us go away)."""
        self.state = State.OPENED
        self.restart_count = self.max_configure     # as tlu after irc: a renegotiation gets its tries
        self.deadline = None
        self._ident = ident & 0xFF
        self._req_pending = False

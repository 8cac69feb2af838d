"""The reliable control channel of one tunnel (RFC 2661 section 5.8).

`ControlChannel` is the transport under the tunnel and session state
machines: it numbers what the tunnel sends (Ns), acknowledges what it
receives (Nr), delivers received messages in order and once, and resends
what the peer does not acknowledge. It is sans-I/O: `send()`,
`receive()` and `on_timer()` append complete L2TP payloads (header + AVPs)
to `out`, which the owner drains and sends to the peer; time is whatever
`clock()` says.

Sending. A message gets its Ns when queued and leaves when the window
allows: at most min(peer's Receive Window Size, congestion window) messages
are unacknowledged (RFC 2661 Appendix A slow start: the congestion window
starts at 1, grows by one per acknowledged message up to the threshold,
then by 1/cwnd; a retransmission halves the threshold and restarts at 1).
The oldest unacknowledged message is retransmitted after 1 s, then 2, 4,
8, 8 ... (cap 8 s, RFC: at least 8); after `max_retransmits`
retransmissions without progress the channel is `dead` (31 s with the
defaults, the "full retransmission cycle" of section 5.7) and the owner
clears the tunnel. A retransmission timeout goes back to the oldest
unacknowledged message and resends in order as the window reopens
(go-back-N; the receiver discards and re-acknowledges what it already had).
Three ZLBs in a row that acknowledge nothing new while messages are in
flight mean the peer is receiving past a hole (it acknowledges every
out-of-order arrival at once): the oldest message is resent at once and
the congestion window halved (TCP's fast retransmit, in the spirit of
Appendix A), so one loss costs a round trip instead of a 1 s timeout; the
retry count and back-off are untouched.
Only AVP bytes are stored; the header is packed at each transmission, so
a retransmission carries the current Nr.

Receiving. A message with the expected Ns is delivered, followed by any
queued successors; one ahead of it within our receive window is queued
and acknowledged at once (the duplicate ZLB tells the peer of the hole);
one behind it (RFC 2661 5.8: the preceding 32767 values) is a duplicate,
not delivered but acknowledged at once (our ZLB may have been lost). An
acknowledgement rides on the next message the owner sends; if the owner
sends nothing, a ZLB follows after `ack_delay` (100 ms), or at once when
half our receive window is waiting to be acknowledged (the peer is
probably window-blocked). The owner calls `after_input()` once it has
handled what `receive()` delivered, so that replies it queued carry the
acknowledgement instead of a separate ZLB.

Keepalive. With `hello` set (the owner sets it once the tunnel is
established) a HELLO is queued when nothing has been received for
`hello_interval` (section 5.5) and nothing of ours is awaiting an
acknowledgement (then the retransmissions already test the peer).
Data messages are the data plane's, so the owner calls `touch()` when it
learns of peer activity some other way.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Callable

from .codec import CONTROL_FLAGS, CONTROL_HEADER, CONTROL_HEADER_LEN, HELLO, ControlMessage, MessageBuilder

HELLO_BODY = MessageBuilder(HELLO).body()


@dataclass
class ChannelConfig:
    receive_window: int = 16        # what we advertise; out-of-order messages queued up to this
    retransmit_initial: float = 1.0
    retransmit_cap: float = 8.0
    max_retransmits: int = 5
    ack_delay: float = 0.1          # wait this long for a reply to piggy-back an ack on
    hello_interval: float = 60.0    # 0: no keepalive
    slow_start: bool = True         # RFC 2661 Appendix A


def seq_lt(a: int, b: int) -> bool:
    """a precedes b in the 16-bit sequence space (RFC 2661 5.8)."""
    return a != b and ((b - a) & 0xFFFF) < 0x8000


class ControlChannel:
    def __init__(self, clock: Callable[[], float], cfg: ChannelConfig | None = None,
                 counters: dict[str, int] | None = None, peer_window: int = 4):
        self.clock = clock
        self.cfg = cfg or ChannelConfig()
        self.counters = counters if counters is not None else {}
        self.out: list[bytes] = []
        self.peer_tunnel_id = 0          # 0 until the peer's Assigned Tunnel ID is known
        self.peer_window = max(1, peer_window)
        # sending
        self.next_ns = 0                 # Ns of the next message queued
        self._queue: deque[list] = deque()   # [ns, session id, body], oldest unacknowledged first
        self._in_flight = 0              # transmitted ones at the front of _queue
        self._snd_max = 0                # one past the highest Ns transmitted so far
        self.cwnd = 1.0
        self.ssthresh = float(self.peer_window)
        self._rto = self.cfg.retransmit_initial
        self.retries = 0
        self._rtx_at: float | None = None
        self._dup_zlbs = 0
        # receiving
        self.nr = 0                      # Ns expected next from the peer
        self.delivered = 0               # messages delivered so far (progress, for the owner)
        self._ooo: dict[int, ControlMessage] = {}
        self._ack_at: float | None = None
        self._ack_now = False
        self._rx_unacked = 0
        # keepalive and failure
        self.hello = False
        self._last_rx = clock()
        self.dead = False

    # ---- state ----
    @property
    def idle(self) -> bool:
        """Nothing queued or awaiting acknowledgement."""
        return not self._queue

    @property
    def queued(self) -> int:
        return len(self._queue)

    def acked(self, ns: int) -> bool:
        """The peer has acknowledged our message `ns`."""
        q = self._queue
        return not q or seq_lt(ns, q[0][0])

    def _count(self, what: str, n: int = 1) -> None:
        self.counters[what] = self.counters.get(what, 0) + n

    def set_peer_window(self, n: int) -> None:
        """The peer's Receive Window Size (0 is invalid: treated as 1)."""
        self.peer_window = max(1, n)
        self.ssthresh = float(self.peer_window)
        self._pump()

    def start_receiving(self, ns: int) -> None:
        """Expect `ns` next (the first message of a new tunnel)."""
        self.nr = ns & 0xFFFF

    def touch(self) -> None:
        """The peer showed signs of life outside the control channel."""
        self._last_rx = self.clock()

    # ---- sending ----
    def send(self, session_id: int, body: bytes) -> int:
        """Queue a control message (its AVP bytes); returns its Ns."""
        ns = self.next_ns
        self.next_ns = (ns + 1) & 0xFFFF
        self._queue.append([ns, session_id, body])
        self._pump()
        return ns

    def _window(self) -> int:
        if not self.cfg.slow_start:
            return self.peer_window
        return max(1, min(self.peer_window, int(self.cwnd)))

    def _pump(self) -> None:
        if self.dead:
            return
        q = self._queue
        win = self._window()
        sent = False
        while self._in_flight < win and self._in_flight < len(q):
            item = q[self._in_flight]
            self._transmit(item)
            self._in_flight += 1
            nxt = (item[0] + 1) & 0xFFFF
            if seq_lt(self._snd_max, nxt):
                self._snd_max = nxt
            sent = True
        if sent and self._rtx_at is None:
            self._rtx_at = self.clock() + self._rto

    def _transmit(self, item: list) -> None:
        ns, sid, body = item
        self.out.append(CONTROL_HEADER.pack(CONTROL_FLAGS, CONTROL_HEADER_LEN + len(body),
                                            self.peer_tunnel_id, sid, ns, self.nr) + body)
        self._acked()

    def _acked(self) -> None:
        self._ack_at = None
        self._ack_now = False
        self._rx_unacked = 0

    def send_zlb(self) -> None:
        """An explicit acknowledgement (Ns is not consumed)."""
        self.out.append(CONTROL_HEADER.pack(CONTROL_FLAGS, CONTROL_HEADER_LEN, self.peer_tunnel_id, 0,
                                            self._snd_max, self.nr))
        self._count("tx ZLB")
        self._acked()

    def drop_unsent(self) -> int:
        """Forget queued messages never transmitted (a tunnel being torn
        down: its StopCCN must not wait behind them); their Ns are reused."""
        q = self._queue
        n = 0
        while q and not seq_lt(q[-1][0], self._snd_max):
            q.pop()
            n += 1
        if n:
            self.next_ns = self._snd_max
            self._in_flight = min(self._in_flight, len(q))
        return n

    def abandon(self) -> None:
        """Stop sending altogether (the peer closed the tunnel); keep
        acknowledging what it sends."""
        self._queue.clear()
        self._in_flight = 0
        self._rtx_at = None
        self.hello = False

    # ---- receiving ----
    def receive(self, msg: ControlMessage) -> list[ControlMessage]:
        """Process Ns/Nr of a received message; returns the messages now
        deliverable, in order (none for a ZLB, a duplicate or a gap)."""
        self._last_rx = self.clock()
        self._process_ack(msg.nr, msg.msg_type is None)
        if msg.msg_type is None:
            self._count("rx ZLB")
            return []
        d = (msg.ns - self.nr) & 0xFFFF
        if d == 0:
            out = [msg]
            nr = (self.nr + 1) & 0xFFFF
            ooo = self._ooo
            while ooo:
                nxt = ooo.pop(nr, None)
                if nxt is None:
                    break
                out.append(nxt)
                nr = (nr + 1) & 0xFFFF
            self.nr = nr
            self.delivered += len(out)
            self._rx_unacked += len(out)
            if self._ack_at is None:
                self._ack_at = self.clock() + self.cfg.ack_delay
            return out
        if d >= 0x8000:
            self._count("duplicate")
            self._ack_now = True
        elif d < self.cfg.receive_window:
            if msg.ns not in self._ooo:
                self._ooo[msg.ns] = msg
                self._count("out of order")
            else:
                self._count("duplicate")
            self._ack_now = True
        else:
            self._count("beyond window")
        return []

    def after_input(self) -> None:
        """The owner has handled what `receive()` delivered (and queued its
        replies): acknowledge now if a ZLB is due at once."""
        if self._ack_now:
            self.send_zlb()
        elif self._ack_at is not None and (self.cfg.ack_delay <= 0 or
                                          self._rx_unacked >= max(1, self.cfg.receive_window // 2)):
            self.send_zlb()

    def request_ack(self) -> None:
        """Acknowledge at the next `after_input()` instead of after the delay."""
        self._ack_now = True

    def _process_ack(self, nr: int, zlb: bool) -> None:
        q = self._queue
        if not q:
            return
        una = q[0][0]
        d = (nr - una) & 0xFFFF
        if d == 0:
            if zlb and self._in_flight:
                self._dup_zlbs += 1
                if self._dup_zlbs == 3:
                    self._fast_retransmit()
            return
        if d > ((self._snd_max - una) & 0xFFFF):
            if d < 0x8000:
                self._count("bad nr")        # acknowledges what we never sent
            return                           # else an older ack, overtaken by a newer one
        for _ in range(d):
            q.popleft()
        self._dup_zlbs = 0
        self._in_flight = max(0, self._in_flight - d)
        self.retries = 0
        self._rto = self.cfg.retransmit_initial
        if self.cwnd < self.ssthresh:
            self.cwnd = min(self.cwnd + d, float(self.peer_window))
        else:
            self.cwnd = min(self.cwnd + d / self.cwnd, float(self.peer_window))
        self._rtx_at = self.clock() + self._rto if self._in_flight else None
        self._pump()

    def _fast_retransmit(self) -> None:
        self._count("fast retransmit")
        self.ssthresh = max(self.cwnd / 2, 1.0)
        self.cwnd = self.ssthresh
        self._transmit(self._queue[0])
        self._rtx_at = self.clock() + self._rto

    # ---- timers ----
    def next_deadline(self) -> float | None:
        if self.dead:
            return None
        d = self._rtx_at
        a = self._ack_at
        if a is not None and (d is None or a < d):
            d = a
        if self.hello and self.cfg.hello_interval > 0:
            h = self._last_rx + self.cfg.hello_interval
            if d is None or h < d:
                d = h
        return d

    def on_timer(self) -> None:
        if self.dead:
            return
        now = self.clock()
        if self._rtx_at is not None and now >= self._rtx_at:
            self._rtx_at = None
            if self.retries >= self.cfg.max_retransmits:
                self.dead = True
                self._ack_at = None
                self._count("peer not responding")
                return
            self.retries += 1
            self._dup_zlbs = 0
            self._count("retransmit")
            self.ssthresh = max(self.cwnd / 2, 1.0)
            self.cwnd = 1.0
            self._in_flight = 0                  # go back to the oldest unacknowledged
            self._rto = min(self._rto * 2, self.cfg.retransmit_cap)
            self._pump()
        if self._ack_at is not None and now >= self._ack_at:
            self.send_zlb()
        if self.hello and self.cfg.hello_interval > 0 and now >= self._last_rx + self.cfg.hello_interval:
            self._last_rx = now                  # the next one an interval later
            if not self._queue:
                self._count("tx HELLO")
                self.send(0, HELLO_BODY)

    def drain(self) -> list[bytes]:
        out, self.out = self.out, []
        return out

"""The reliable control channel (RFC 2661 5.8) on a fake clock: ordering,
duplicates, windows, retransmission back-off, dead peers, ZLBs, Hello."""
from __future__ import annotations

import random

import pytest

from bng_controller.l2tp import codec as C
from bng_controller.l2tp.codec import MessageBuilder, decode_control
from bng_controller.l2tp.control import ChannelConfig, ControlChannel, seq_lt


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def body(i: int) -> bytes:
    """A distinguishable message: an ICRQ carrying i as its Call Serial Number."""
    return MessageBuilder(C.ICRQ).add(C.CALL_SERIAL_NUMBER, i).body()


def serial(m: C.ControlMessage) -> int:
    return m.get(C.CALL_SERIAL_NUMBER)


def pair(clock: Clock, **kw) -> tuple[ControlChannel, ControlChannel]:
    cfg = ChannelConfig(**kw)
    a, b = ControlChannel(clock, cfg), ControlChannel(clock, cfg)
    a.peer_tunnel_id, b.peer_tunnel_id = 2, 1
    a.set_peer_window(cfg.receive_window)
    b.set_peer_window(cfg.receive_window)
    return a, b


def decoded(ch: ControlChannel) -> list[C.ControlMessage]:
    return [decode_control(p) for p in ch.drain()]


def deliver(dst: ControlChannel, msgs: list[C.ControlMessage]) -> list[C.ControlMessage]:
    got = []
    for m in msgs:
        got += dst.receive(m)
    dst.after_input()
    return got


def test_seq_compare():
    assert seq_lt(1, 2) and not seq_lt(2, 1) and not seq_lt(3, 3)
    assert seq_lt(65535, 0) and seq_lt(65000, 10) and not seq_lt(10, 65000)


def test_duplicate_range_of_rfc_example():
    """RFC 2661 5.8: last received 15 -> 0..15 and 32784..65535 are duplicates."""
    clk = Clock()
    b = ControlChannel(clk, ChannelConfig(receive_window=4))
    b.start_receiving(16)
    for ns in (0, 15, 32784, 65535):
        b.receive(decode_control(C.encode_control(1, 0, ns, 0, body(ns))))
    assert b.counters["duplicate"] == 4
    for ns in (32783, 20):
        b.receive(decode_control(C.encode_control(1, 0, ns, 0, body(ns))))
    assert b.counters["beyond window"] == 2 and b.nr == 16


def test_in_order_delivery_under_reordering():
    clk = Clock()
    a, b = pair(clk, slow_start=False, receive_window=8)
    for i in range(6):
        a.send(0, body(i))
    sent = decoded(a)
    assert [m.ns for m in sent] == list(range(6)) and all(m.nr == 0 for m in sent)
    order = [sent[i] for i in (2, 0, 5, 1, 4, 3)]
    got = []
    for m in order:
        got += b.receive(m)
    assert [serial(m) for m in got] == list(range(6))
    assert b.nr == 6 and b.counters["out of order"] == 3


def test_duplicates_acknowledged_not_delivered():
    clk = Clock()
    a, b = pair(clk)
    a.send(0, body(1))
    (m,) = decoded(a)
    assert deliver(b, [m]) == [m]
    assert b.drain() == []                          # ack delayed: a reply may carry it
    assert deliver(b, [m]) == []                    # the duplicate (our ack was lost)
    (zlb,) = decoded(b)
    assert zlb.is_zlb and zlb.nr == 1 and b.counters["duplicate"] == 1
    a.receive(zlb)
    # an older duplicate after more traffic: still re-acknowledged with the current Nr
    a.send(0, body(2))
    deliver(b, decoded(a))
    b.drain()
    deliver(b, [m])
    (zlb,) = decoded(b)
    assert zlb.nr == 2


def test_window_limits_unacknowledged_messages():
    clk = Clock()
    a = ControlChannel(clk, ChannelConfig(slow_start=False))
    assert a.peer_window == 4                       # RFC 2661: 4 when the peer did not say
    for i in range(10):
        a.send(0, body(i))
    assert [m.ns for m in decoded(a)] == [0, 1, 2, 3]
    b = ControlChannel(clk)
    b.peer_tunnel_id = 1
    ack = C.encode_control(1, 0, 0, 2)              # ZLB acknowledging 0 and 1
    a.receive(decode_control(ack))
    assert [m.ns for m in decoded(a)] == [4, 5]
    a.set_peer_window(8)
    assert [m.ns for m in decoded(a)] == [6, 7, 8, 9]
    assert a.queued == 8


def test_slow_start_grows_the_window():
    clk = Clock()
    a = ControlChannel(clk, ChannelConfig())
    a.set_peer_window(8)
    for i in range(20):
        a.send(0, body(i))
    assert [m.ns for m in decoded(a)] == [0]        # cwnd starts at 1
    a.receive(decode_control(C.encode_control(1, 0, 0, 1)))
    assert [m.ns for m in decoded(a)] == [1, 2]     # 2
    a.receive(decode_control(C.encode_control(1, 0, 0, 3)))
    assert [m.ns for m in decoded(a)] == [3, 4, 5, 6]
    a.receive(decode_control(C.encode_control(1, 0, 0, 7)))
    assert [m.ns for m in decoded(a)] == [7, 8, 9, 10, 11, 12, 13, 14]   # capped at the peer's 8


def test_retransmission_back_off_and_dead_peer():
    clk = Clock()
    a = ControlChannel(clk, ChannelConfig())
    a.send(0, body(1))
    times = []
    for step in range(4000):
        clk.t = step / 100
        d = a.next_deadline()
        if d is not None and d <= clk.t:
            a.on_timer()
        for m in decoded(a):
            assert m.ns == 0
            times.append(clk.t)
        if a.dead:
            break
    # sent at 0, retransmitted after 1, 2, 4, 8, 8 s (cap 8); dead 8 s later: 31 s in all
    assert times == [0, 1, 3, 7, 15, 23]
    assert a.dead and clk.t == 31 and a.counters["retransmit"] == 5
    assert a.counters["peer not responding"] == 1 and a.next_deadline() is None


def test_retransmission_configurable_and_reset_by_acks():
    clk = Clock()
    a = ControlChannel(clk, ChannelConfig(retransmit_initial=0.5, retransmit_cap=1.0, max_retransmits=2))
    a.send(0, body(1))
    a.drain()
    clk.t = 0.5
    a.on_timer()
    assert len(a.drain()) == 1 and a.next_deadline() == 1.5
    # the ack arrives: back-off resets for the next message
    a.receive(decode_control(C.encode_control(1, 0, 0, 1)))
    assert a.idle and a.next_deadline() is None and a.retries == 0
    a.send(0, body(2))
    a.drain()
    assert a.next_deadline() == 1.0                 # 0.5 again, not the doubled 1.0
    for t in (1.0, 2.0, 3.0):
        clk.t = t
        a.on_timer()
    assert a.dead


def test_retransmission_carries_current_nr():
    clk = Clock()
    a, b = pair(clk)
    a.send(0, body(1))
    a.drain()                                       # lost
    b.send(0, body(9))
    deliver(a, decoded(b))                          # a now expects Ns 1 from b
    a.drain()
    clk.t = 1.0
    a.on_timer()
    (m,) = decoded(a)
    assert m.ns == 0 and m.nr == 1


def test_go_back_after_timeout_then_window_reopens():
    clk = Clock()
    a, b = pair(clk, slow_start=True, receive_window=4)
    a.send(0, body(0))
    deliver(b, decoded(a))
    clk.t = 0.1
    b.on_timer()                                    # b's delayed ZLB
    a.receive(decode_control(b.drain()[0]))
    for i in range(1, 4):
        a.send(0, body(i))
    first = decoded(a)
    assert [m.ns for m in first] == [1, 2]          # cwnd 2
    clk.t = 1.1                                     # both lost
    a.on_timer()
    assert [m.ns for m in decoded(a)] == [1]        # cwnd back to 1, oldest first
    assert deliver(b, [first[1]]) == []             # a late copy of 2 arrives first: queued,
    (dup,) = decoded(b)                             # and a duplicate ZLB tells of the hole
    assert dup.is_zlb and dup.nr == 1
    got = deliver(b, [first[0]])
    assert [serial(m) for m in got] == [1, 2]
    (ack,) = decoded(b)                             # at once: half the window was waiting
    assert ack.nr == 3
    a.receive(dup)
    a.receive(ack)
    assert [m.ns for m in decoded(a)] == [3]


def test_fast_retransmit_on_three_duplicate_zlbs():
    clk = Clock()
    a, b = pair(clk, slow_start=False, receive_window=8)
    for i in range(6):
        a.send(0, body(i))
    sent = decoded(a)
    dups = []
    for m in sent[1:4]:                             # 0 is lost; 1, 2, 3 arrive
        deliver(b, [m])
        dups += decoded(b)
    assert [(z.is_zlb, z.nr) for z in dups] == [(True, 0)] * 3
    for z in dups[:2]:
        a.receive(z)
    assert a.out == []
    a.receive(dups[2])                              # the third: resend the oldest now, not after 1 s
    (m,) = decoded(a)
    assert m.ns == 0 and a.counters["fast retransmit"] == 1 and a.retries == 0
    got = deliver(b, [m])
    assert [serial(x) for x in got] == [0, 1, 2, 3]


def test_zlb_only_when_nothing_to_piggy_back():
    clk = Clock()
    a, b = pair(clk, ack_delay=0.1)
    a.send(0, body(1))
    deliver(b, decoded(a))
    assert b.out == [] and b.next_deadline() == pytest.approx(0.1)
    b.send(0, body(2))                              # a reply within the delay carries the ack
    (reply,) = decoded(b)
    assert reply.nr == 1 and not reply.is_zlb
    deliver(a, [reply])
    a.drain()
    clk.t = 0.5
    b.on_timer()
    assert b.out == []                              # no ZLB: already acknowledged
    # nothing to reply: ZLB once the delay is over
    a.send(0, body(3))
    deliver(b, decoded(a))
    clk.t = 0.55
    b.on_timer()
    assert b.out == []
    clk.t = 0.65
    b.on_timer()
    (zlb,) = decoded(b)
    assert zlb.is_zlb and zlb.nr == 2 and zlb.ns == 1   # a ZLB does not consume an Ns
    assert b.next_ns == 1


def test_zlb_at_once_when_half_the_window_waits():
    clk = Clock()
    a, b = pair(clk, receive_window=4, slow_start=False)
    a.send(0, body(1))
    deliver(b, decoded(a))
    assert b.out == []
    a.send(0, body(2))
    deliver(b, decoded(a))
    (zlb,) = decoded(b)
    assert zlb.is_zlb and zlb.nr == 2


def test_zero_ack_delay_acknowledges_at_once():
    clk = Clock()
    a, b = pair(clk, ack_delay=0)
    a.send(0, body(1))
    deliver(b, decoded(a))
    assert decoded(b)[0].is_zlb


def test_messages_beyond_window_dropped():
    clk = Clock()
    a, b = pair(clk, receive_window=4, slow_start=False)
    a.set_peer_window(10)
    for i in range(8):
        a.send(0, body(i))
    msgs = decoded(a)
    got = deliver(b, msgs[4:])                      # 4..7: 4..7 ahead of 0, window 4
    assert got == [] and b.counters["beyond window"] == 4
    got = deliver(b, msgs[1:4] + msgs[:1])
    assert [serial(m) for m in got] == [0, 1, 2, 3]


def test_bad_nr_ignored():
    clk = Clock()
    a = ControlChannel(clk)
    a.send(0, body(1))
    a.receive(decode_control(C.encode_control(1, 0, 0, 5)))     # acks what was never sent
    assert a.queued == 1 and a.counters["bad nr"] == 1


def test_sequence_numbers_wrap():
    clk = Clock()
    a, b = pair(clk, slow_start=False, receive_window=8)
    a.next_ns = a._snd_max = 65533
    b.start_receiving(65533)
    for i in range(6):
        a.send(0, body(i))
    msgs = decoded(a)
    assert [m.ns for m in msgs] == [65533, 65534, 65535, 0, 1, 2]
    random.Random(3).shuffle(msgs)
    got = deliver(b, msgs)
    assert [serial(m) for m in got] == list(range(6)) and b.nr == 3
    a.receive(decode_control(b.drain()[0]))
    assert a.idle


def test_hello_after_idle():
    clk = Clock()
    a, b = pair(clk, hello_interval=60)
    a.hello = True
    assert a.next_deadline() == 60
    clk.t = 30
    a.receive(decode_control(C.encode_control(1, 0, 0, 0)))     # any message resets the idle time
    assert a.next_deadline() == 90
    clk.t = 90
    a.on_timer()
    (hello,) = decoded(a)
    assert hello.msg_type == C.HELLO and hello.session_id == 0 and a.counters["tx HELLO"] == 1
    # no second Hello while the first is unacknowledged: retransmission tests the peer
    clk.t = 150.5
    a.on_timer()
    assert all(m.msg_type == C.HELLO and m.ns == 0 for m in decoded(a))
    assert a.counters["tx HELLO"] == 1
    deliver(b, [hello])
    assert b.nr == 1


def test_touch_defers_hello_and_no_hello_when_disabled():
    clk = Clock()
    a = ControlChannel(clk, ChannelConfig(hello_interval=60))
    a.hello = True
    clk.t = 50
    a.touch()
    assert a.next_deadline() == 110
    a.hello = False
    assert a.next_deadline() is None
    b = ControlChannel(clk, ChannelConfig(hello_interval=0))
    b.hello = True
    assert b.next_deadline() is None


def test_drop_unsent_and_abandon():
    clk = Clock()
    a = ControlChannel(clk, ChannelConfig(slow_start=False))
    for i in range(10):
        a.send(0, body(i))
    assert len(a.drain()) == 4
    assert a.drop_unsent() == 6 and a.queued == 4 and a.next_ns == 4
    a.send(0, body(99))                             # e.g. a StopCCN: next in sequence
    a.receive(decode_control(C.encode_control(1, 0, 0, 4)))
    (m,) = decoded(a)
    assert m.ns == 4 and serial(m) == 99
    a.abandon()
    assert a.idle and a.next_deadline() is None

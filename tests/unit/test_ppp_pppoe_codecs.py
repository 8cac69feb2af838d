"""PPPoE and PPP codecs: round trips, malformed input refused with a
reason, and hypothesis fuzzing of every decoder and of the protocol objects
that consume their output (only CodecError may come out of a decoder;
nothing may come out of a PPP link or the discovery stage)."""
from __future__ import annotations

import random
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bng_controller.aaa.base import LineInfo
from bng_controller.ppp import codec as ppp
from bng_controller.ppp.link import LinkConfig, PppLink
from bng_controller.pppoe import codec as pppoe
from bng_controller.pppoe.discovery import (DiscoveryConfig, Drop, PppoeDiscovery, Reply, SessionRequest,
                                            parse_bbf_line_tag)

BNG = bytes.fromhex("02bb00000001")
CPE = bytes.fromhex("02cc00000001")
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---- PPPoE ----------------------------------------------------------------
@pytest.mark.parametrize("s_vid,c_vid,tpid", [(0, 0, 0x8100), (100, 0, 0x8100), (100, 200, 0x88A8),
                                              (7, 9, 0x8100)])
def test_l2_header_round_trip(s_vid, c_vid, tpid):
    h = pppoe.L2Header(CPE, BNG, s_vid, c_vid, tpid)
    frame = h.encode(pppoe.ETH_P_PPPOE_DISC) + b"rest"
    got, etype, off = pppoe.parse_l2(frame)
    assert (got, etype, frame[off:]) == (h, pppoe.ETH_P_PPPOE_DISC, b"rest")


def test_l2_header_refuses_three_tags_and_short_frames():
    with pytest.raises(pppoe.CodecError, match="more than two"):
        pppoe.parse_l2(BNG + CPE + struct.pack("!HHHHHHH", 0x88A8, 1, 0x8100, 2, 0x8100, 3, 0x8863))
    for n in (0, 13, 17):
        with pytest.raises(pppoe.CodecError):
            pppoe.parse_l2((BNG + CPE + struct.pack("!HH", 0x8100, 5) + b"\x88")[:n])


def test_discovery_round_trip_and_padding():
    pkt = pppoe.DiscoveryPacket(pppoe.PADI, 0, [(pppoe.TAG_SERVICE_NAME, b""), (pppoe.TAG_HOST_UNIQ, b"\x01\x02")])
    data = pkt.encode()
    assert pppoe.parse_discovery(data + b"\0" * 20) == pkt       # Ethernet padding ignored


@pytest.mark.parametrize("data,reason", [
    (b"\x11\x09\x00", "short pppoe header"),
    (b"\x12\x09\x00\x00\x00\x00", "bad pppoe version/type"),
    (b"\x11\x09\x00\x00\x00\x08\x01\x01", "pppoe length beyond frame"),
    (b"\x11\x09\x00\x00\x00\x02\x01\x01", "truncated tag header"),
    (b"\x11\x09\x00\x00\x00\x04\x01\x01\x00\x05", "tag length beyond payload"),
])
def test_discovery_malformed(data, reason):
    with pytest.raises(pppoe.CodecError, match=reason):
        pppoe.parse_discovery(data)


def test_session_codec():
    data = pppoe.encode_session(0x1234, ppp.PPP_LCP, b"\x01\x02\x00\x04")
    assert pppoe.parse_session(data + b"pad") == (0x1234, ppp.PPP_LCP, b"\x01\x02\x00\x04")
    for bad in (data[:7], b"\x11\x00\x12\x34\x00\x01\xc0\x21", b"\x11\x00\x12\x34\x00\x10\xc0\x21",
                b"\x11\x07" + data[2:]):
        with pytest.raises(pppoe.CodecError):
            pppoe.parse_session(bad)


def test_bbf_line_tag():
    v = struct.pack("!I", 3561) + b"\x01\x05eth/1" + b"\x02\x03cpe"
    assert parse_bbf_line_tag(v) == ("eth/1", "cpe")
    assert parse_bbf_line_tag(struct.pack("!I", 9) + b"\x01\x01x") == ("", "")
    assert parse_bbf_line_tag(struct.pack("!I", 3561) + b"\x01\x09short") == ("", "")


@FUZZ
@given(st.binary(max_size=300))
def test_fuzz_pppoe_decoders(data):
    for fn in (pppoe.parse_l2, pppoe.parse_discovery, pppoe.parse_session):
        try:
            fn(data)
        except pppoe.CodecError:
            pass


def _discovery() -> PppoeDiscovery:
    cfg = DiscoveryConfig(padi_per_mac=DiscoveryConfig().padi_per_mac)
    return PppoeDiscovery(cfg, BNG, b"s" * 32, clock=lambda: 0.0, wallclock=lambda: 1000.0)


@FUZZ
@given(code=st.sampled_from([0x09, 0x19, 0xA7, 0x07, 0x65, 0x00]), sid=st.integers(0, 0xFFFF),
       tags=st.lists(st.tuples(st.sampled_from([0x0101, 0x0102, 0x0103, 0x0104, 0x0105, 0x0110, 0x0120, 0x0201,
                                                0x9999]), st.binary(max_size=40)), max_size=8),
       dst=st.sampled_from([BNG, pppoe.BROADCAST, CPE]))
def test_fuzz_discovery_stage(code, sid, tags, dst):
    """Any well-formed discovery packet gets an answer, a session request or
    a counted drop; never an exception."""
    d = _discovery()
    l2 = pppoe.L2Header(dst, CPE)
    line = d.line_info(l2, 1, 0, pppoe.DiscoveryPacket(code, sid, tags))
    act = d.handle(l2, pppoe.DiscoveryPacket(code, sid, tags), line)
    assert isinstance(act, (Reply, Drop, SessionRequest)) or type(act).__name__ == "PeerTerminate"
    if isinstance(act, Reply):
        assert pppoe.parse_discovery(act.packet.encode()) == act.packet


def test_padr_needs_our_recent_cookie():
    d = _discovery()
    l2 = pppoe.L2Header(BNG, CPE)
    line = LineInfo(port=1)
    good = d.make_cookie(CPE, line)
    padr = lambda c: pppoe.DiscoveryPacket(pppoe.PADR, 0, [(pppoe.TAG_SERVICE_NAME, b""),  # noqa: E731
                                                           (pppoe.TAG_AC_COOKIE, c)])
    assert isinstance(d.handle(l2, padr(good), line), SessionRequest)
    assert isinstance(d.handle(l2, padr(good[:-1] + bytes([good[-1] ^ 1])), line), Drop)
    other_line = LineInfo(port=2)
    assert isinstance(d.handle(l2, padr(good), other_line), Drop)          # bound to the line
    d._wallclock = lambda: 1000.0 + 3 * d.cfg.cookie_lifetime
    assert isinstance(d.handle(l2, padr(good), line), Drop)                # stale


# ---- PPP ------------------------------------------------------------------
def test_control_and_options_round_trip():
    opts = [(1, b"\x05\xd4"), (5, b"\x01\x02\x03\x04"), (3, b"\xc0\x23")]
    pkt = ppp.ControlPacket(ppp.CONF_REQ, 7, ppp.encode_options(opts))
    got = ppp.parse_control(pkt.encode() + b"\0\0")                     # padding dropped
    assert got == pkt and ppp.parse_options(got.data) == opts


@pytest.mark.parametrize("data,reason", [(b"\x01\x01\x00", "short control packet"),
                                         (b"\x01\x01\x00\x03", "bad control packet length"),
                                         (b"\x01\x01\x00\x09abcd", "bad control packet length")])
def test_control_malformed(data, reason):
    with pytest.raises(ppp.CodecError, match=reason):
        ppp.parse_control(data)


@pytest.mark.parametrize("data", [b"\x01", b"\x01\x01", b"\x01\x05\x00\x00", b"\x01\x02\x05"])
def test_options_malformed(data):
    with pytest.raises(ppp.CodecError):
        ppp.parse_options(data)


@FUZZ
@given(st.binary(max_size=200))
def test_fuzz_ppp_decoders(data):
    for fn in (ppp.parse_control, ppp.parse_options, ppp.parse_protocol):
        try:
            fn(data)
        except ppp.CodecError:
            pass


class _Clock:
    t = 0.0

    def __call__(self):
        return self.t


@FUZZ
@given(frames=st.lists(st.tuples(st.sampled_from([ppp.PPP_LCP, ppp.PPP_PAP, ppp.PPP_CHAP, ppp.PPP_IPCP,
                                                  ppp.PPP_IPV6CP, ppp.PPP_IPV4, 0x80FD, 0xC025]),
                                 st.binary(max_size=60)), max_size=25),
       ticks=st.lists(st.floats(0, 5), max_size=5))
def test_fuzz_ppp_link(frames, ticks):
    """A link fed arbitrary frames of every protocol, with timers firing in
    between, never raises and always ends up either alive or reporting
    exactly one LinkDown."""
    clock = _Clock()
    link = PppLink(LinkConfig(), clock, random.Random(1))
    link.start()
    downs = 0
    for i, (proto, info) in enumerate(frames):
        link.receive(proto, info)
        if ticks and i % 5 == 0:
            clock.t += ticks[i % len(ticks)]
            link.on_timer()
        _, events = link.drain()
        downs += sum(1 for e in events if type(e).__name__ == "LinkDown")
    assert downs <= 1


def test_fuzz_ppp_link_with_valid_control_packets():
    """Structured fuzz: valid headers with random codes and options, which
    reach deep into the automaton (random.Random, many rounds)."""
    rnd = random.Random(42)
    for round_ in range(300):
        clock = _Clock()
        link = PppLink(LinkConfig(), clock, random.Random(round_))
        link.start()
        for _ in range(40):
            proto = rnd.choice([ppp.PPP_LCP, ppp.PPP_IPCP, ppp.PPP_IPV6CP, ppp.PPP_PAP, ppp.PPP_CHAP])
            opts = [(rnd.randrange(0, 140), rnd.randbytes(rnd.randrange(0, 6))) for _ in range(rnd.randrange(4))]
            pkt = ppp.ControlPacket(rnd.randrange(0, 15), rnd.randrange(256), ppp.encode_options(opts))
            link.receive(proto, pkt.encode())
            if rnd.random() < 0.2:
                clock.t += rnd.random() * 4
                link.on_timer()
            link.drain()

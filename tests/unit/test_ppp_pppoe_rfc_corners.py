"""PPP and PPPoE discovery corners an audit against RFCs 1661 and 2516 found
handled wrongly; each test names what the code did before."""
from __future__ import annotations

import random
import struct

from bng_controller.aaa.base import LineInfo
from bng_controller.ppp import lcp as L
from bng_controller.ppp.codec import (CODE_REJ, CONF_ACK, CONF_REJ, CONF_REQ, ECHO_REQ, PPP_LCP, PPP_PAP,
                                      ControlPacket, encode_options, parse_control, parse_options)
from bng_controller.ppp.fsm import State
from bng_controller.ppp.link import LinkConfig, LinkSnapshot, PppLink
from bng_controller.pppoe import codec as pppoe
from bng_controller.pppoe.discovery import DiscoveryConfig, Drop, PppoeDiscovery, Reply, SessionRequest

PEER_MAGIC = (L.OPT_MAGIC, struct.pack("!I", 0x11223344))


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def new_link(**kw):
    clock = Clock()
    return PppLink(LinkConfig(**kw), clock, random.Random(1)), clock


def lcp_sent(link) -> list[ControlPacket]:
    out, _ = link.drain()
    return [parse_control(info) for proto, info in out if proto == PPP_LCP]


def opened(link, peer_opts) -> None:
    link.start()
    [req] = lcp_sent(link)
    link.receive(PPP_LCP, ControlPacket(CONF_ACK, req.identifier, req.data).encode())
    link.receive(PPP_LCP, ControlPacket(CONF_REQ, 1, encode_options(peer_opts)).encode())
    assert link.lcp.state == State.OPENED
    link.drain()


def test_a_code_reject_fits_the_peers_mru():
    """RFC 1661 5.6: the rejected packet is cut to the peer's MRU; it was cut at 1400."""
    link, _ = new_link()
    opened(link, [(L.OPT_MRU, struct.pack("!H", 576)), PEER_MAGIC])
    link.receive(PPP_LCP, ControlPacket(0x42, 7, b"x" * 1200).encode())
    [cj] = lcp_sent(link)
    assert cj.code == CODE_REJ and len(cj.encode()) == 576


def test_a_configure_reject_must_list_options_of_our_request_unchanged():
    """RFC 1661 5.4: a Reject of an option we never sent, or of a value we did
    not send, is not a valid Reject. One was taken as valid (the restart
    counter refilled); the other closed the link."""
    link, _ = new_link()
    link.start()
    [req] = lcp_sent(link)
    link.lcp.restart_count = 3
    link.receive(PPP_LCP, ControlPacket(CONF_REJ, req.identifier, encode_options([(99, b"zz")])).encode())
    assert link.lcp.silent_discards == 1 and link.lcp.restart_count == 3 and lcp_sent(link) == []
    pap = (L.OPT_AUTH, struct.pack("!H", PPP_PAP))
    assert pap not in parse_options(req.data)
    link.receive(PPP_LCP, ControlPacket(CONF_REJ, req.identifier, encode_options([pap])).encode())
    assert link.lcp.silent_discards == 2 and link.lcp.state == State.REQ_SENT
    magic = next(o for o in parse_options(req.data) if o[0] == L.OPT_MAGIC)
    link.receive(PPP_LCP, ControlPacket(CONF_REJ, req.identifier, encode_options([magic])).encode())
    assert link.lcp.silent_discards == 2 and [p.code for p in lcp_sent(link)] == [CONF_REQ]   # valid: retried


def test_a_restored_link_renegotiates_with_all_its_tries():
    """A link restored after a controller restart entered Opened with its
    restart counter at 0: when the peer renegotiated, one lost request
    ended the link at the first timeout (3 s) instead of after 9 (30 s)."""
    snap = LinkSnapshot(our_magic=0x1234, peer_magic=0x11223344, our_mru=1492, peer_mru=1492, auth="pap",
                        ipv4=("100.64.0.9", "100.64.0.1", []), ipv6_iids=None, lcp_ident=5)
    clock = Clock()
    link = PppLink.restore(LinkConfig(), clock, snap, random.Random(1))
    link.receive(PPP_LCP, ControlPacket(CONF_REQ, 77, encode_options([PEER_MAGIC])).encode())
    link.drain()
    tries = 0
    while link.lcp.deadline is not None and tries < 20:
        clock.t = link.lcp.deadline
        link.on_timer()
        out, events = link.drain()
        tries += sum(1 for proto, info in out if proto == PPP_LCP and parse_control(info).code == CONF_REQ)
        if any(type(e).__name__ == "LinkDown" for e in events):
            break
    assert (tries, clock.t) == (9, 30.0)


def test_our_magic_number_stays_the_one_the_peer_may_still_ack():
    """RFC 1661 6.4: a peer request with our magic number is Naked, and ours
    changes when a Nak of it arrives. It changed at once, so when the peer
    acked our outstanding request, echoes carried a number never negotiated."""
    link, clock = new_link(lcp=L.LcpConfig(echo_interval=10))
    link.start()
    [req] = lcp_sent(link)
    ours = dict(parse_options(req.data))[L.OPT_MAGIC]
    link.receive(PPP_LCP, ControlPacket(CONF_REQ, 1, encode_options([(L.OPT_MAGIC, ours)])).encode())
    link.drain()
    link.receive(PPP_LCP, ControlPacket(CONF_ACK, req.identifier, req.data).encode())
    link.receive(PPP_LCP, ControlPacket(CONF_REQ, 2, encode_options([PEER_MAGIC])).encode())
    link.drain()
    assert link.lcp.state == State.OPENED
    clock.t = link.echo_deadline
    link.on_timer()
    [echo] = [p for p in lcp_sent(link) if p.code == ECHO_REQ]
    assert echo.data[:4] == ours


BNG = bytes.fromhex("02bb00000001")


def discovery() -> PppoeDiscovery:
    return PppoeDiscovery(DiscoveryConfig(), BNG, b"s" * 32, clock=lambda: 0.0, wallclock=lambda: 1000.0)


def test_a_host_over_its_own_padi_limit_does_not_spend_its_lines():
    """The line's bucket was charged before the host's: one flooding host
    locked every other host on its line out of discovery."""
    d = discovery()
    padi = pppoe.DiscoveryPacket(pppoe.PADI, 0, [(pppoe.TAG_SERVICE_NAME, b"")])
    line = LineInfo(port=1, s_vid=10, c_vid=20)
    flood = [d.handle(pppoe.L2Header(pppoe.BROADCAST, bytes.fromhex("02cc000000ff")), padi, line)
             for _ in range(100)]
    assert any(isinstance(r, Drop) and r.reason == "padi rate limit (mac)" for r in flood)
    assert isinstance(d.handle(pppoe.L2Header(pppoe.BROADCAST, bytes.fromhex("02cc00000001")), padi, line), Reply)


def test_discovery_replies_fit_one_frame():
    """RFC 2516 5.1: a PADI is at most 1484 octets, and a reply must fit 1500;
    Host-Uniq is echoed whole, so a reply that would not fit is not sent. A
    1484-octet PADI drew a 1530-octet PADO."""
    d = discovery()
    l2 = pppoe.L2Header(pppoe.BROADCAST, bytes.fromhex("02cc00000001"))
    for host_uniq, fits in ((1400, True), (1470, False), (1490, False)):
        padi = pppoe.DiscoveryPacket(pppoe.PADI, 0, [(pppoe.TAG_SERVICE_NAME, b""),
                                                     (pppoe.TAG_HOST_UNIQ, b"h" * host_uniq)])
        act = d.handle(l2, padi, LineInfo(port=1))
        assert isinstance(act, Reply) == fits, (host_uniq, act)
        if fits:
            assert len(act.packet.encode()) <= 1500


def test_a_refusal_pads_echoes_relay_session_id():
    """RFC 2516 appendix A: Relay-Session-Id goes back in every response; the
    PADS refusing a session for want of resources left it out."""
    req = SessionRequest(client_mac=bytes(6), line=LineInfo(port=1), l2=None, service_name=b"",
                         host_uniq=b"\x01\x02", relay_session_id=b"relay-42", max_payload=1492)
    pads = discovery().pads_error(req, "session limit reached")
    assert pads.tag(pppoe.TAG_RELAY_SESSION_ID) == b"relay-42" and pads.tag(pppoe.TAG_HOST_UNIQ) == b"\x01\x02"

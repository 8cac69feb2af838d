"""The negotiation automaton's Max-Failure rule (RFC 1661 4.6) with the
BNG's IPCP: after too many Naks it rejects what the peer sent, but never
the address it must assign, and never with an empty Configure-Reject.
(On a lossy line five Naks lost in a row once made it reject the peer's
IP-Address and then answer every address-less request with an empty
Reject until the setup timeout.)"""
from __future__ import annotations

import ipaddress

from bng_controller.ppp.codec import (CONF_ACK, CONF_NAK, CONF_REJ, CONF_REQ, ControlPacket, encode_options,
                                      parse_control, parse_options)
from bng_controller.ppp.fsm import Fsm, State
from bng_controller.ppp.ipcp import OPT_IP_ADDRESS, OPT_PRIMARY_DNS, IpcpNegotiator

A = ipaddress.IPv4Address
GATEWAY, PEER, DNS = A("100.64.0.1"), A("100.64.0.9"), A("192.0.2.53")
ZERO = bytes(4)


class Link:
    def __init__(self):
        self.up = False

    def ncp_up(self, neg) -> None:
        self.up = True

    def ncp_down(self, neg) -> None:
        self.up = False

    def ncp_finished(self, neg) -> None:
        pass


def ipcp() -> tuple[Fsm, list[ControlPacket], Link, ControlPacket]:
    """IPCP in Req-Sent, and its Configure-Request."""
    sent: list[ControlPacket] = []
    link = Link()
    fsm = Fsm(0x8021, IpcpNegotiator(link, GATEWAY, PEER, [DNS]), lambda proto, info: sent.append(parse_control(info)),
              lambda: 0.0, restart_time=3, max_configure=20, max_failure=5)
    fsm.open()
    fsm.up()
    [ours] = sent
    return fsm, sent, link, ours


def answer(fsm: Fsm, sent: list[ControlPacket], ident: int, options) -> ControlPacket:
    sent.clear()
    fsm.receive(ControlPacket(CONF_REQ, ident, encode_options(options)))
    [reply] = [p for p in sent if p.code != CONF_REQ]
    return reply


def test_max_failure_rejects_dns_but_keeps_naking_for_the_address():
    fsm, sent, link, ours = ipcp()
    asked = [(OPT_IP_ADDRESS, ZERO), (OPT_PRIMARY_DNS, ZERO)]
    for i in range(5):                                   # every Nak lost: the peer repeats itself
        r = answer(fsm, sent, 10 + i, asked)
        assert r.code == CONF_NAK
    r = answer(fsm, sent, 15, asked)
    assert r.code == CONF_REJ and parse_options(r.data) == [(OPT_PRIMARY_DNS, ZERO)]
    for i in range(3):                                   # past Max-Failure, still steered to its address
        r = answer(fsm, sent, 16 + i, [(OPT_IP_ADDRESS, ZERO)])
        assert r.code == CONF_NAK and parse_options(r.data) == [(OPT_IP_ADDRESS, PEER.packed)]
    r = answer(fsm, sent, 19, [(OPT_IP_ADDRESS, PEER.packed)])
    assert r.code == CONF_ACK and fsm.state == State.ACK_SENT
    fsm.receive(ControlPacket(CONF_ACK, ours.identifier, ours.data))
    assert fsm.state == State.OPENED and link.up


def test_a_request_without_the_address_is_naked_never_rejected_empty():
    fsm, sent, _, _ = ipcp()
    for i in range(12):
        r = answer(fsm, sent, 30 + i, [])
        assert r.code == CONF_NAK and parse_options(r.data) == [(OPT_IP_ADDRESS, PEER.packed)], i


def _nak_ours(fsm: Fsm, sent: list[ControlPacket], ours: ControlPacket, options) -> ControlPacket:
    """Nak our pending request with `options`; our next request."""
    sent.clear()
    fsm.receive(ControlPacket(CONF_NAK, ours.identifier, encode_options(options)))
    [req] = [p for p in sent if p.code == CONF_REQ]
    return req


def test_a_peer_that_naks_our_address_for_ever_is_taken_as_rejecting_it():
    """Each Nak refills the restart counter (RFC 1661 4.6), and the gateway
    address is ours to choose: a peer that Naked it with another address
    kept IPCP renegotiating for ever (never ended during a renegotiation,
    where no setup timeout runs). Past Max-Failure Naks in a row they are
    taken as a Reject, as pppd does: we stop sending the address."""
    fsm, sent, link, ours = ipcp()
    other = [(OPT_IP_ADDRESS, A("10.9.9.9").packed)]
    for _ in range(5):
        ours = _nak_ours(fsm, sent, ours, other)
        assert parse_options(ours.data) == [(OPT_IP_ADDRESS, GATEWAY.packed)]
    assert fsm.naks_as_rejects == 0
    ours = _nak_ours(fsm, sent, ours, other)
    assert parse_options(ours.data) == [] and fsm.naks_as_rejects == 1
    fsm.receive(ControlPacket(CONF_ACK, ours.identifier, ours.data))
    assert answer(fsm, sent, 50, [(OPT_IP_ADDRESS, PEER.packed)]).code == CONF_ACK
    assert fsm.state == State.OPENED and link.up and fsm.naks_received == 0


def test_naks_counted_in_a_row_start_again_after_an_ack():
    fsm, sent, link, ours = ipcp()
    other = [(OPT_IP_ADDRESS, A("10.9.9.9").packed)]
    for _ in range(5):
        ours = _nak_ours(fsm, sent, ours, other)
    fsm.receive(ControlPacket(CONF_ACK, ours.identifier, ours.data))
    assert answer(fsm, sent, 60, [(OPT_IP_ADDRESS, PEER.packed)]).code == CONF_ACK and link.up
    # the peer renegotiates: five more Naks are five, not ten
    sent.clear()
    fsm.receive(ControlPacket(CONF_REQ, 61, encode_options([(OPT_IP_ADDRESS, PEER.packed)])))
    [ours] = [p for p in sent if p.code == CONF_REQ]
    for _ in range(5):
        ours = _nak_ours(fsm, sent, ours, other)
        assert parse_options(ours.data) == [(OPT_IP_ADDRESS, GATEWAY.packed)]
    assert fsm.naks_as_rejects == 0


def test_naks_taken_as_rejects_show_in_the_session_detail():
    from types import SimpleNamespace

    from bng_controller.api import _link_events
    fsm, sent, _, ours = ipcp()
    for _ in range(6):
        ours = _nak_ours(fsm, sent, ours, [(OPT_IP_ADDRESS, A("10.9.9.9").packed)])
    fsm.receive(ControlPacket(CONF_NAK, 99, b""))                    # a stale id: discarded
    link = SimpleNamespace(counters={"echo timeout": 1}, lcp=SimpleNamespace(silent_discards=0, naks_as_rejects=0),
                           ipcp=fsm, ipv6cp=None)
    assert _link_events(link) == {"echo timeout": 1, "ipcp discarded": 1, "ipcp naks taken as rejects": 1}


def test_a_retransmitted_request_is_not_a_failure():
    """Our Naks lost on a lossy line: the peer retransmits the same request
    (same Identifier, RFC 1661 5.1 allows it). Each retransmission counted
    toward Max-Failure, so five lost Naks in a row made us reject the DNS
    options the peer would have taken. A new Identifier is a new attempt
    and still counts."""
    fsm, sent, _, _ = ipcp()
    asked = [(OPT_IP_ADDRESS, ZERO), (OPT_PRIMARY_DNS, ZERO)]
    for _ in range(12):
        r = answer(fsm, sent, 10, asked)
        assert r.code == CONF_NAK and parse_options(r.data) == [(OPT_IP_ADDRESS, PEER.packed),
                                                                 (OPT_PRIMARY_DNS, DNS.packed)]
    assert fsm.failures == 1
    for i in range(4):                                   # Max-Failure 5, counting the first
        assert answer(fsm, sent, 11 + i, asked).code == CONF_NAK
    assert answer(fsm, sent, 15, asked).code == CONF_REJ


def test_ipv6cp_asks_a_peer_without_an_interface_identifier_for_one():
    """RFC 5072 4.1: a Configure-Request without the Interface-Identifier
    gets a Nak suggesting one. It was acked with no peer identifier, so the
    session's RAs and DHCPv6 answers had nowhere to go while its prefixes
    stayed allocated; and Max-Failure could turn a zero identifier's Nak
    into a Reject with the same end."""
    from bng_controller.ppp.ipv6cp import OPT_INTERFACE_ID, Ipv6cpNegotiator
    sent: list[ControlPacket] = []
    link = Link()
    neg = Ipv6cpNegotiator(link, our_iid=0x1111)
    fsm = Fsm(0x8057, neg, lambda proto, info: sent.append(parse_control(info)), lambda: 0.0,
              restart_time=3, max_configure=20, max_failure=5)
    fsm.open()
    fsm.up()
    [ours] = sent
    for i in range(12):                           # never Acked, never an empty Reject, past Max-Failure too
        r = answer(fsm, sent, 40 + i, [] if i % 2 else [(OPT_INTERFACE_ID, bytes(8))])
        assert r.code == CONF_NAK, i
        [(t, v)] = parse_options(r.data)
        suggested = int.from_bytes(v, "big")
        assert t == OPT_INTERFACE_ID and suggested not in (0, 0x1111)
    assert answer(fsm, sent, 60, [(OPT_INTERFACE_ID, v)]).code == CONF_ACK and neg.peer_iid == suggested
    fsm.receive(ControlPacket(CONF_ACK, ours.identifier, ours.data))
    assert fsm.state == State.OPENED and link.up

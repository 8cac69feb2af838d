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

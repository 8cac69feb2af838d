"""Downstream packets over a session's MRU (PACKET_TOO_BIG punts): IPv4
fragmentation, ICMP Fragmentation Needed, ICMPv6 Packet Too Big, checked
field by field with scapy's dissectors."""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

import pytest
from scapy.layers.inet import ICMP, IP, UDP, IPOption_RR, IPOption_Security
from scapy.layers.inet6 import ICMPv6PacketTooBig, IPv6
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Raw

from bng_controller import icmp
from bng_controller.ipv4_fragment import fragment
from bng_controller.ipv6 import icmp6
from bng_controller.path_mtu import PacketTooBig
from bng_controller.ppp.codec import PPP_IPV4

BNG_MAC = bytes.fromhex("02bb00000001")
ROUTER_MAC = "02:ee:00:00:00:01"
CORE_V4 = ipaddress.IPv4Address("192.0.2.1")
CORE_V6 = ipaddress.IPv6Address("2001:db8:ffff::1")
SUB_V4 = ipaddress.IPv4Address("10.0.0.2")


def reassemble(frags: list[bytes]) -> bytes:
    """The payload the fragments carry, each placed at its offset."""
    out = bytearray()
    for f in frags:
        ip = IP(f)
        off = ip.frag * 8
        data = f[ip.ihl * 4:ip.len]
        out[off:off + len(data)] = data
    return bytes(out)


@pytest.mark.parametrize("mtu", [1492, 1400, 576, 68])
def test_fragments_fit_the_mtu_and_rebuild_the_packet(mtu):
    pkt = bytes(IP(src="198.51.100.7", dst=str(SUB_V4), ttl=9, id=0x4242) / UDP(sport=5, dport=6)
                / Raw(bytes(range(256)) * 6))
    frags = fragment(pkt, mtu)
    assert len(frags) > 1
    for i, f in enumerate(frags):
        ip = IP(f)
        assert len(f) <= mtu and ip.len == len(f)
        assert ip.ttl == 8 and ip.id == 0x4242
        assert icmp.checksum(f[:20]) == 0                          # header checksum right
        last = i == len(frags) - 1
        assert bool(ip.flags.MF) is not last
        if not last:
            assert (len(f) - 20) % 8 == 0
    assert reassemble(frags) == pkt[20:]


def test_a_fragment_is_fragmented_at_its_own_offset_and_keeps_more_fragments():
    whole = bytes(IP(src="198.51.100.7", dst=str(SUB_V4), id=7) / Raw(b"x" * 3000))
    first = fragment(whole, 2000, ttl_decrement=0)
    assert len(first) == 2
    again = fragment(first[0], 1000) + fragment(first[1], 1000)
    assert [bool(IP(f).flags.MF) for f in again] == [True, True, True, True, False]
    assert [IP(f).frag * 8 for f in again] == [0, 976, 1952, 1976, 2952]
    assert reassemble(again) == whole[20:]


def test_only_copied_options_follow_into_later_fragments():
    pkt = bytes(IP(src="198.51.100.7", dst=str(SUB_V4), options=[IPOption_Security(), IPOption_RR()])
                / Raw(b"y" * 1200))
    frags = fragment(pkt, 600)
    first, later = IP(frags[0]), IP(frags[1])
    assert first.ihl * 4 == IP(pkt).ihl * 4
    assert [o.option for o in later.options if o.option] == [2]     # security: copied; RR: not
    assert later.ihl * 4 == 20 + 12 and len(frags[1]) <= 600        # 11-byte option, padded
    assert reassemble(frags) == pkt[IP(pkt).ihl * 4:]


def test_a_packet_that_fits_comes_back_alone_with_its_ttl_lowered():
    pkt = bytes(IP(src="198.51.100.7", dst=str(SUB_V4), ttl=3) / Raw(b"z" * 100))
    [f] = fragment(pkt, 1492)
    assert IP(f).ttl == 2 and f[20:] == pkt[20:] and icmp.checksum(f[:20]) == 0


@pytest.mark.parametrize("bad", [b"\x45" + bytes(10), bytes(IP(ttl=1) / Raw(b"a" * 2000))])
def test_unsound_or_expiring_packets_are_refused(bad):
    with pytest.raises(icmp.ParseError):
        fragment(bad, 1000)


def test_frag_needed_carries_the_mtu_and_quotes_the_header():
    pkt = bytes(IP(src="198.51.100.7", dst=str(SUB_V4), flags="DF") / UDP(sport=5, dport=6) / Raw(b"q" * 1600))
    reply = IP(icmp.frag_needed(pkt, CORE_V4, 1492))
    assert reply.src == str(CORE_V4) and reply.dst == "198.51.100.7"
    assert reply[ICMP].type == 3 and reply[ICMP].code == 4 and reply[ICMP].nexthopmtu == 1492
    assert bytes(reply[ICMP].payload)[:28] == pkt[:28]
    assert icmp.checksum(bytes(reply[ICMP])) == 0


def test_no_icmp_error_about_an_error_or_a_later_fragment():
    err = bytes(IP(src="198.51.100.7", dst=str(SUB_V4), flags="DF") / ICMP(type=3, code=1) / Raw(b"e" * 1600))
    assert icmp.frag_needed(err, CORE_V4, 1492) is None
    later = bytes(IP(src="198.51.100.7", dst=str(SUB_V4), frag=100) / Raw(b"e" * 1600))
    assert icmp.frag_needed(later, CORE_V4, 1492) is None
    assert icmp.time_exceeded(later, CORE_V4) is None


def test_packet_too_big_for_ipv6():
    pkt = bytes(IPv6(src="2001:db8:9::1", dst="2001:db8:1::10") / UDP(sport=5, dport=6) / Raw(b"6" * 1500))
    reply = IPv6(icmp6.packet_too_big(pkt, CORE_V6, 1492))
    assert reply.src == str(CORE_V6) and reply.dst == "2001:db8:9::1"
    ptb = reply[ICMPv6PacketTooBig]
    assert ptb.mtu == 1492 and bytes(ptb.payload) == pkt[:1280 - 48]
    assert IPv6(bytes(reply))[ICMPv6PacketTooBig].cksum == ptb.cksum   # scapy agrees with our checksum


# ---- the handler -----------------------------------------------------------
@dataclass
class FakeTransport:
    sent: list[tuple[int, bytes]] = field(default_factory=list)

    def send_ppp(self, protocol: int, info: bytes) -> None:
        self.sent.append((protocol, info))


@dataclass
class FakeNeg:
    peer_mru: int


@dataclass
class FakeLink:
    lcp_neg: FakeNeg


@dataclass
class FakeSub:
    transport: FakeTransport
    link: FakeLink
    sent_by_controller: list[tuple[int, int]] = field(default_factory=list)

    def count_sent_by_controller(self, packets: int, octets: int) -> None:
        self.sent_by_controller.append((packets, octets))


class FakeSessions:
    def __init__(self, subs: dict):
        self.subs = subs

    def by_address(self, addr):
        for key, sub in self.subs.items():
            if addr == key or (isinstance(key, ipaddress.IPv6Network) and addr in key):
                return sub
        return None


def handler(mru=1480):
    sub = FakeSub(FakeTransport(), FakeLink(FakeNeg(mru)))
    sessions = FakeSessions({SUB_V4: sub, ipaddress.IPv6Network("2001:db8:1::/64"): sub})
    out: list[tuple[bytes, int]] = []
    h = PacketTooBig(sessions, lambda frame, port: out.append((frame, port)), BNG_MAC, {3: CORE_V4}, {3: CORE_V6})
    return h, sub, out


def core_frame(ip, vlan=None):
    eth = Ether(src=ROUTER_MAC, dst="02:bb:00:00:00:01")
    return bytes(eth / Dot1Q(vlan=vlan) / ip if vlan else eth / ip)


def test_without_df_the_packet_is_fragmented_into_the_session():
    h, sub, out = handler(1480)
    ip = IP(src="198.51.100.7", dst=str(SUB_V4), ttl=30) / UDP() / Raw(b"d" * 1700)
    h.on_packet_in(3, core_frame(ip))
    assert out == [] and len(sub.transport.sent) == 2
    assert all(proto == PPP_IPV4 and len(f) <= 1480 for proto, f in sub.transport.sent)
    assert reassemble([f for _, f in sub.transport.sent]) == bytes(ip)[20:]
    assert h.counters == {"ipv4 fragmented": 1}
    assert sub.sent_by_controller == [(2, sum(len(f) for _, f in sub.transport.sent))]   # for accounting


def test_with_df_the_sender_learns_the_mru_on_the_port_and_vlan_it_used():
    h, sub, out = handler(1480)
    ip = IP(src="198.51.100.7", dst=str(SUB_V4), flags="DF") / UDP() / Raw(b"d" * 1700)
    h.on_packet_in(3, core_frame(ip, vlan=20))
    [(frame, port)] = out
    eth = Ether(frame)
    assert port == 3 and eth.dst == ROUTER_MAC and eth.src == "02:bb:00:00:00:01" and eth[Dot1Q].vlan == 20
    assert eth[ICMP].type == 3 and eth[ICMP].code == 4 and eth[ICMP].nexthopmtu == 1480
    assert eth[IP].src == str(CORE_V4) and eth[IP].dst == "198.51.100.7"
    assert sub.transport.sent == []


def test_ipv6_gets_packet_too_big():
    h, sub, out = handler(1480)
    ip = IPv6(src="2001:db8:9::1", dst="2001:db8:1::10") / UDP() / Raw(b"d" * 1500)
    h.on_packet_in(3, core_frame(ip))
    [(frame, port)] = out
    assert Ether(frame)[ICMPv6PacketTooBig].mtu == 1480 and Ether(frame)[IPv6].src == str(CORE_V6)
    assert h.counters == {"ipv6 packet too big sent": 1}


def test_gone_sessions_and_garbage_are_counted_not_raised():
    h, sub, out = handler()
    h.on_packet_in(3, core_frame(IP(src="198.51.100.7", dst="10.9.9.9") / Raw(b"a" * 1600)))
    h.on_packet_in(3, bytes(Ether(src=ROUTER_MAC, dst="02:bb:00:00:00:01", type=0x0800) / Raw(b"\x45\x00\xff")))
    h.on_packet_in(3, bytes(Ether(src=ROUTER_MAC, dst="02:bb:00:00:00:01", type=0x0806) / Raw(b"a" * 30)))
    assert out == [] and sub.transport.sent == []
    assert h.counters == {"no session": 1, "malformed": 1, "not ip": 1}


def test_the_controller_hands_packet_too_big_punts_to_the_handler(tmp_path):
    import asyncio

    from bng_controller.p4runtime_async import PacketIn

    from .test_controller_startup import controller_on_ready_switch, pppoe_config

    cfg = pppoe_config(tmp_path)

    async def run():
        ctl, sw = controller_on_ready_switch(cfg)
        await ctl.on_connected()
        sw.take_sent()
        frame = core_frame(IP(src="198.51.100.7", dst=str(SUB_V4), flags="DF") / Raw(b"a" * 1600))
        ctl.on_packet_in(PacketIn(frame, {"reason": ctl.punt_values["PACKET_TOO_BIG"], "ingress_port": 3}))
        assert ctl.too_big.counters == {"no session": 1}     # none has that address here
        assert (await ctl.counters())["packet_too_big"] == {"no session": 1}
        assert ctl.unhandled_punts == 0

    asyncio.run(run())

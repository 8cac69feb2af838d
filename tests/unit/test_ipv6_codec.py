"""IPv6/ICMPv6/ND/UDP and DHCPv6 codecs: round trips, interop with scapy
in both directions (scapy only here, never in product code), malformed
input, and a hypothesis fuzz of every parser."""
from __future__ import annotations

import ipaddress
import socket
import struct

import pytest
from hypothesis import given, settings, strategies as st
from scapy.layers import dhcp6 as sd
from scapy.layers import inet6 as si
from scapy.utils6 import in6_getnsma, in6_getnsmac, in6_mactoifaceid

from bng_controller.ipv6 import codec as c
from bng_controller.ipv6 import dhcpv6_codec as d

A = ipaddress.IPv6Address
N = ipaddress.IPv6Network
LL1, LL2 = A("fe80::1"), A("fe80::2")
MAC = bytes.fromhex("02bb00000001")


def scapy_checksum_ok(raw: bytes) -> si.IPv6:
    """Parse with scapy, and check that scapy computes the same L4 checksum."""
    p = si.IPv6(raw)
    l4 = p.payload
    got = l4.cksum if hasattr(l4, "cksum") else l4.chksum
    field = "cksum" if hasattr(l4, "cksum") else "chksum"
    q = p.copy()
    delattr(q.payload, field)
    rebuilt = si.IPv6(bytes(q))
    assert getattr(rebuilt.payload, field) == got
    return p


# ----------------------------------------------------------------------
# addresses and checksums
def test_addresses_match_scapy():
    assert c.link_local(c.eui64_iid(MAC)) == A("fe80::" + in6_mactoifaceid("02:bb:00:00:00:01"))
    assert c.link_local(c.eui64_iid(MAC)) == A("fe80::bb:ff:fe00:1")
    a = A("2001:db8::12:3456")
    group = c.solicited_node(a)
    assert group == A(socket.inet_ntop(socket.AF_INET6, in6_getnsma(a.packed))) == A("ff02::1:ff12:3456")
    assert c.multicast_mac(group) == bytes.fromhex(in6_getnsmac(group.packed).replace(":", ""))
    assert c.link_local(0x0200_5efe_c000_0201) == A("fe80::200:5efe:c000:201")


def test_checksum_odd_length_and_verification():
    seg = c.Icmpv6(128, 0, b"\x00\x01\x00\x02abc").encode(LL1, LL2)
    assert c.l4_checksum(LL1, LL2, c.IPPROTO_ICMPV6, seg) == 0
    assert c.l4_checksum(LL1, LL2 + 1, c.IPPROTO_ICMPV6, seg) != 0


# ----------------------------------------------------------------------
# IPv6
def test_ipv6_round_trip_and_padding():
    p = c.Ipv6Packet(LL1, A("ff02::1"), 59, b"xyz", hop_limit=7, traffic_class=0xB8, flow_label=0x12345)
    raw = p.encode()
    assert c.parse_ipv6(raw) == p
    assert c.parse_ipv6(raw + b"\0" * 10) == p              # link padding cut at the payload length
    s = si.IPv6(raw)
    assert (s.src, s.dst, s.nh, s.hlim, s.tc, s.fl, s.plen) == ("fe80::1", "ff02::1", 59, 7, 0xB8, 0x12345, 3)


@pytest.mark.parametrize("raw,reason", [
    (b"\x60" + b"\0" * 38, "short ipv6 header"),
    (b"\x40" + b"\0" * 39, "not ipv6"),
    (c.Ipv6Packet(LL1, LL2, 59, b"abcd").encode()[:-1], "ipv6 payload length beyond packet"),
])
def test_ipv6_malformed(raw, reason):
    with pytest.raises(c.ParseError, match=reason):
        c.parse_ipv6(raw)


# ----------------------------------------------------------------------
# ICMPv6 and ND
def test_echo_round_trip_and_scapy():
    e = c.Echo(True, 0x1234, 7, b"ping data")
    raw = c.icmpv6_packet(LL1, LL2, e.icmp())
    p = c.parse_ipv6(raw)
    assert c.decode_message(c.parse_icmpv6(p)) == e
    s = scapy_checksum_ok(raw)
    assert s[si.ICMPv6EchoRequest].id == 0x1234 and s[si.ICMPv6EchoRequest].data == b"ping data"


def test_icmpv6_bad_checksum_and_short():
    raw = bytearray(c.icmpv6_packet(LL1, LL2, c.Echo(True, 1, 1).icmp()))
    raw[-1] ^= 1
    with pytest.raises(c.ParseError, match="checksum"):
        c.parse_icmpv6(c.parse_ipv6(bytes(raw)))
    with pytest.raises(c.ParseError, match="short icmpv6"):
        c.parse_icmpv6(c.Ipv6Packet(LL1, LL2, 58, b"\x80\0"))
    with pytest.raises(c.ParseError, match="not icmpv6"):
        c.parse_icmpv6(c.Ipv6Packet(LL1, LL2, 17, b"\x80\0\0\0"))


def full_ra() -> c.RouterAdvertisement:
    return c.RouterAdvertisement(
        cur_hop_limit=64, managed=True, other=True, router_lifetime=1800, reachable_time=30000, retrans_timer=1000,
        source_lladdr=MAC, mtu=1492,
        prefixes=(c.PrefixInfo(N("2001:db8:1:2::/64"), True, True, 7200, 3600),
                  c.PrefixInfo(N("2001:db8:ff::/48"), True, False, 100, 50)),
        rdnss=c.Rdnss((A("2001:db8::53"), A("2001:db8::54")), 600), extra_flags=0x08,
        other_options=((31, b"\x00" * 6 + b"\x07example\x03com\x00" + b"\0" * 3),))


def test_ra_round_trip_and_scapy_view():
    ra = full_ra()
    raw = c.icmpv6_packet(LL1, c.ALL_NODES, ra.icmp(), 255)
    assert c.decode_message(c.parse_icmpv6(c.parse_ipv6(raw))) == ra
    s = scapy_checksum_ok(raw)
    r = s[si.ICMPv6ND_RA]
    assert (r.chlim, r.M, r.O, r.routerlifetime, r.reachabletime, r.retranstimer) == (64, 1, 1, 1800, 30000, 1000)
    assert r.prf == 1                                            # extra flags kept: Prf high
    assert s[si.ICMPv6NDOptSrcLLAddr].lladdr == "02:bb:00:00:00:01"
    assert s[si.ICMPv6NDOptMTU].mtu == 1492
    pios = [o for o in s.iterpayloads() if isinstance(o, si.ICMPv6NDOptPrefixInfo)]
    assert [(o.prefix, o.prefixlen, o.L, o.A, o.validlifetime, o.preferredlifetime) for o in pios] == [
        ("2001:db8:1:2::", 64, 1, 1, 7200, 3600), ("2001:db8:ff::", 48, 1, 0, 100, 50)]
    rd = s[si.ICMPv6NDOptRDNSS]
    assert rd.dns == ["2001:db8::53", "2001:db8::54"] and rd.lifetime == 600 and rd.len == 5


def test_scapy_built_nd_decodes():
    rs = si.IPv6(src="fe80::2", dst="ff02::2", hlim=255) / si.ICMPv6ND_RS() / \
        si.ICMPv6NDOptSrcLLAddr(lladdr="02:00:00:00:00:02")
    m = c.decode_message(c.parse_icmpv6(c.parse_ipv6(bytes(rs))))
    assert m == c.RouterSolicitation(source_lladdr=bytes.fromhex("020000000002"))
    ns = si.IPv6(src="2001:db8::2", dst="ff02::1:ff00:1", hlim=255) / si.ICMPv6ND_NS(tgt="2001:db8::1") / \
        si.ICMPv6NDOptSrcLLAddr(lladdr="02:00:00:00:00:02")
    m = c.decode_message(c.parse_icmpv6(c.parse_ipv6(bytes(ns))))
    assert m == c.NeighborSolicitation(A("2001:db8::1"), bytes.fromhex("020000000002"))
    na = si.IPv6(src="2001:db8::2", dst="2001:db8::1", hlim=255) / \
        si.ICMPv6ND_NA(tgt="2001:db8::2", R=1, S=1, O=0) / si.ICMPv6NDOptDstLLAddr(lladdr="02:00:00:00:00:02")
    m = c.decode_message(c.parse_icmpv6(c.parse_ipv6(bytes(na))))
    assert m == c.NeighborAdvertisement(A("2001:db8::2"), True, True, False, bytes.fromhex("020000000002"))


@pytest.mark.parametrize("msg", [
    c.NeighborSolicitation(A("fe80::1"), MAC), c.NeighborSolicitation(A("2001:db8::1")),
    c.NeighborAdvertisement(A("2001:db8::1"), True, False, True, MAC), c.RouterSolicitation(),
    c.RouterAdvertisement(), c.Echo(False, 0, 0xFFFF, b"\xff" * 100),
])
def test_nd_round_trips(msg):
    raw = c.icmpv6_packet(LL1, LL2, msg.icmp(), 255)
    assert c.decode_message(c.parse_icmpv6(c.parse_ipv6(raw))) == msg
    scapy_checksum_ok(raw)


def _icmp(t: int, body: bytes) -> c.Icmpv6:
    return c.Icmpv6(t, 0, body)


@pytest.mark.parametrize("icmp,reason", [
    (_icmp(133, b"\0\0\0"), "short router solicitation"),
    (_icmp(133, b"\0" * 4 + b"\x01\x00" + b"\0" * 6), "nd option length 0"),
    (_icmp(133, b"\0" * 4 + b"\x01\x02" + b"\0" * 6), "nd option beyond packet"),
    (_icmp(133, b"\0" * 4 + b"\x01"), "truncated nd option"),
    (_icmp(133, b"\0" * 4 + (b"\x01\x01" + MAC) * 2), "duplicate source lladdr"),
    (_icmp(134, b"\0" * 11), "short router advertisement"),
    (_icmp(134, b"\0" * 12 + b"\x05\x02" + b"\0" * 14), "bad mtu option length"),
    (_icmp(134, b"\0" * 12 + b"\x03\x03" + b"\0" * 22), "bad prefix information length"),
    (_icmp(134, b"\0" * 12 + b"\x03\x04\x81" + b"\0" * 29), "bad prefix length"),
    (_icmp(134, b"\0" * 12 + b"\x03\x04\x40\xc0" + struct.pack("!II", 1, 2) + b"\0" * 20),
     "preferred lifetime above valid"),
    (_icmp(134, b"\0" * 12 + b"\x19\x01" + b"\0" * 6), "bad rdnss length"),
    (_icmp(134, b"\0" * 12 + b"\x19\x04" + b"\0" * 30), "bad rdnss length"),
    (_icmp(135, b"\0" * 19), "short neighbor solicitation"),
    (_icmp(135, b"\0" * 4 + A("ff02::1").packed), "multicast ns target"),
    (_icmp(136, b"\0" * 4 + A("ff02::1").packed), "multicast na target"),
    (_icmp(136, b"\0" * 4 + A("fe80::1").packed + (b"\x02\x01" + MAC) * 2), "duplicate target lladdr"),
    (_icmp(128, b"\0\0\0"), "short echo"),
    (c.Icmpv6(133, 1, b"\0" * 4), "not a router solicitation"),
    (c.Icmpv6(135, 1, b"\0" * 20), "not a neighbor solicitation"),
])
def test_nd_malformed(icmp, reason):
    with pytest.raises(c.ParseError, match=reason):
        c.decode_message(icmp)


def test_unknown_icmpv6_type_is_not_decoded():
    assert c.decode_message(c.Icmpv6(1, 4, b"\0" * 20)) is None


# ----------------------------------------------------------------------
# UDP
def test_udp_round_trip_and_scapy():
    u = c.Udp(546, 547, b"\x01\x00\x00\x01")
    raw = c.udp_packet(LL2, c.ALL_DHCP_AGENTS, u)
    assert c.parse_udp(c.parse_ipv6(raw)) == u
    s = scapy_checksum_ok(raw)
    assert s[si.UDP].sport == 546 and s[si.UDP].dport == 547


def test_udp_checksum_zero_sent_as_ffff():
    # find a payload whose checksum computes to 0: it must go out as 0xffff
    for i in range(70000):
        u = c.Udp(1, 2, struct.pack("!I", i))
        raw = u.encode(LL1, LL2)
        if raw[6:8] == b"\xff\xff":
            assert c.parse_udp(c.Ipv6Packet(LL1, LL2, 17, raw)) == u
            return
    pytest.fail("no zero checksum found")


@pytest.mark.parametrize("payload,reason", [
    (b"\0" * 7, "short udp"),
    (struct.pack("!HHHH", 1, 2, 7, 1), "bad udp length"),
    (struct.pack("!HHHH", 1, 2, 9, 1), "bad udp length"),
    (struct.pack("!HHHH", 1, 2, 8, 0), "udp without checksum"),
    (struct.pack("!HHHH", 1, 2, 8, 1), "bad udp checksum"),
])
def test_udp_malformed(payload, reason):
    with pytest.raises(c.ParseError, match=reason):
        c.parse_udp(c.Ipv6Packet(LL1, LL2, 17, payload))


# ----------------------------------------------------------------------
# DHCPv6
CLIENT_DUID = bytes.fromhex("00030001020000000002")
SERVER_DUID = d.duid_ll(MAC)


def full_dhcp() -> d.Dhcpv6Message:
    return d.Dhcpv6Message(
        d.REPLY, 0xABCDEF, client_id=CLIENT_DUID, server_id=SERVER_DUID,
        ia_na=(d.IaNa(1, status=d.StatusCode(d.NO_ADDRS_AVAIL, "none")),
               d.IaNa(2, 10, 20, (d.IaAddress(A("2001:db8::5"), 1, 2),))),
        ia_pd=(d.IaPd(7, 1800, 2880, (d.IaPrefix(N("2001:db8:100::/56"), 3600, 7200),
                                      d.IaPrefix(N("2001:db8:200::/56"), 0, 0, d.StatusCode(0, "x")))),
               d.IaPd(8, status=d.StatusCode(d.NO_PREFIX_AVAIL, "no prefix"))),
        oro=(23, 24), preference=255, elapsed_time=100, status=d.StatusCode(d.SUCCESS, "all ok"),
        rapid_commit=True, dns_servers=(A("2001:db8::53"),), other=((82, b"\0\0\0\x3c"),))


def test_dhcpv6_round_trip():
    m = full_dhcp()
    assert d.parse_message(m.encode()) == m
    empty = d.Dhcpv6Message(d.INFORMATION_REQUEST, 1)
    assert empty.encode() == bytes([11, 0, 0, 1]) and d.parse_message(empty.encode()) == empty


def test_dhcpv6_ours_read_by_scapy():
    m = full_dhcp()
    s = sd.DHCP6_Reply(m.encode())
    assert s.trid == 0xABCDEF
    assert bytes(s[sd.DHCP6OptServerId].duid) == SERVER_DUID
    assert s[sd.DHCP6OptServerId].duid.lladdr == "02:bb:00:00:00:01"
    pd = s[sd.DHCP6OptIA_PD]
    assert (pd.iaid, pd.T1, pd.T2) == (7, 1800, 2880)
    pref = pd.iapdopt[0]
    assert (pref.prefix, pref.plen, pref.preflft, pref.validlft) == ("2001:db8:100::", 56, 3600, 7200)
    assert s[sd.DHCP6OptDNSServers].dnsservers == ["2001:db8::53"]
    assert s[sd.DHCP6OptPref].prefval == 255
    assert s.haslayer(sd.DHCP6OptRapidCommit)


def test_dhcpv6_scapy_solicit_decodes():
    s = sd.DHCP6_Solicit(trid=0x123456) / sd.DHCP6OptClientId(duid=sd.DUID_LL(lladdr="02:00:00:00:00:02")) / \
        sd.DHCP6OptIA_NA(iaid=1) / sd.DHCP6OptIA_PD(iaid=2, iapdopt=[sd.DHCP6OptIAPrefix(prefix="::", plen=56)]) / \
        sd.DHCP6OptOptReq(reqopts=[23, 24]) / sd.DHCP6OptElapsedTime(elapsedtime=5) / sd.DHCP6OptRapidCommit()
    m = d.parse_message(bytes(s))
    assert m.msg_type == d.SOLICIT and m.transaction_id == 0x123456 and m.name == "solicit"
    assert m.client_id == CLIENT_DUID and m.server_id is None
    assert m.ia_na == (d.IaNa(1),)
    assert m.ia_pd == (d.IaPd(2, prefixes=(d.IaPrefix(N("::/56"), 0, 0),)),)
    assert m.oro == (23, 24) and m.elapsed_time == 5 and m.rapid_commit


@pytest.mark.parametrize("raw,reason", [
    (b"\x01\0\0", "short dhcpv6 message"),
    (b"\x0c\0\0\0", "relay message"),
    (b"\x01\0\0\0\0\x01\0", "truncated dhcpv6 option"),
    (b"\x01\0\0\0\0\x01\0\x05ab", "dhcpv6 option beyond its container"),
    (b"\x01\0\0\0" + (b"\0\x01\0\x04" + CLIENT_DUID[:4]) * 2, "duplicate client id"),
    (b"\x01\0\0\0\0\x01\0\x02\0\x03", "bad client id length"),
    (b"\x01\0\0\0\0\x02\0\x83" + b"\0" * 131, "bad server id length"),
    (b"\x01\0\0\0\0\x06\0\x03abc", "odd oro length"),
    (b"\x01\0\0\0\0\x07\0\x02\0\0", "bad preference length"),
    (b"\x01\0\0\0\0\x08\0\x01\0", "bad elapsed time length"),
    (b"\x01\0\0\0\0\x0e\0\x01\0", "rapid commit with data"),
    (b"\x01\0\0\0\0\x17\0\x03abc", "bad dns servers length"),
    (b"\x01\0\0\0\0\x19\0\x0b" + b"\0" * 11, "short ia_pd"),
    (b"\x01\0\0\0\0\x03\0\x0b" + b"\0" * 11, "short ia_na"),
    (b"\x01\0\0\0\0\x19\0\x10" + b"\0" * 12 + b"\0\x1a\0\x05", "dhcpv6 option beyond its container"),
    (b"\x01\0\0\0\0\x19\0\x14" + b"\0" * 12 + b"\0\x1a\0\x04" + b"\0" * 4, "short ia prefix"),
    (b"\x01\0\0\0\0\x19\0\x29" + b"\0" * 12 + b"\0\x1a\0\x19" + b"\0" * 8 + b"\x81" + b"\0" * 16,
     "bad ia prefix length"),
    (b"\x01\0\0\0\0\x03\0\x20" + b"\0" * 12 + b"\0\x05\0\x10" + b"\0" * 16, "short ia address"),
    (b"\x01\0\0\0\0\x0d\0\x01\0", "short status code"),
    (b"\x01\0\0\0\0\x0d\0\x03\0\0\xff", "status message not utf-8"),
    (b"\x01\0\0\0" + b"\0\x0d\0\x02\0\0" * 2, "duplicate status code"),
])
def test_dhcpv6_malformed(raw, reason):
    with pytest.raises(c.ParseError, match=reason):
        d.parse_message(raw)


# ----------------------------------------------------------------------
# fuzz: nothing but ParseError escapes a parser, and what parses re-encodes
@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=300))
def test_fuzz_parsers_raise_only_parse_error(data):
    for parse in (c.parse_ipv6, d.parse_message, c.parse_options, d.parse_options):
        try:
            parse(data)
        except c.ParseError:
            pass
    for t in (128, 129, 133, 134, 135, 136):
        try:
            c.decode_message(c.Icmpv6(t, 0, data))
        except c.ParseError:
            pass
    for nh in (17, 58):
        try:
            p = c.Ipv6Packet(LL1, LL2, nh, data)
            c.parse_udp(p) if nh == 17 else c.parse_icmpv6(p)
        except c.ParseError:
            pass


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_fuzz_dhcpv6_reencodes(data):
    try:
        m = d.parse_message(data)
    except c.ParseError:
        return
    assert d.parse_message(m.encode()) == m


addr = st.builds(A, st.integers(0, 2 ** 128 - 1))
lifetimes = st.integers(0, 2 ** 32 - 1)


@st.composite
def prefixes(draw):
    plen = draw(st.integers(0, 128))
    return N((draw(addr), plen), strict=False)


@st.composite
def pios(draw):
    valid = draw(lifetimes)
    return c.PrefixInfo(draw(prefixes()), draw(st.booleans()), draw(st.booleans()), valid,
                        draw(st.integers(0, valid)))


@settings(max_examples=200, deadline=None)
@given(st.builds(c.RouterAdvertisement, st.integers(0, 255), st.booleans(), st.booleans(), st.integers(0, 65535),
                 lifetimes, lifetimes, st.none() | st.binary(min_size=6, max_size=6), st.none() | lifetimes,
                 st.lists(pios(), max_size=3).map(tuple),
                 st.none() | st.builds(c.Rdnss, st.lists(addr, min_size=1, max_size=3).map(tuple), lifetimes),
                 st.integers(0, 0x3F)))
def test_fuzz_ra_round_trip(ra):
    raw = c.icmpv6_packet(LL1, LL2, ra.icmp(), 255)
    assert c.decode_message(c.parse_icmpv6(c.parse_ipv6(raw))) == ra


@settings(max_examples=200, deadline=None)
@given(st.builds(d.Dhcpv6Message, st.sampled_from(sorted(d.MESSAGE_NAMES))
                 .filter(lambda t: t not in (d.RELAY_FORW, d.RELAY_REPL)), st.integers(0, 0xFFFFFF),
                 st.none() | st.binary(min_size=3, max_size=130), st.none() | st.binary(min_size=3, max_size=20),
                 st.lists(st.builds(d.IaNa, lifetimes, lifetimes, lifetimes, st.lists(st.builds(
                     d.IaAddress, addr, lifetimes, lifetimes), max_size=2).map(tuple)), max_size=2).map(tuple),
                 st.lists(st.builds(d.IaPd, lifetimes, lifetimes, lifetimes, st.lists(st.builds(
                     d.IaPrefix, prefixes(), lifetimes, lifetimes), max_size=2).map(tuple),
                     st.none() | st.builds(d.StatusCode, st.integers(0, 65535), st.text(max_size=10))),
                     max_size=2).map(tuple),
                 st.none() | st.lists(st.integers(0, 65535), max_size=4).map(tuple),
                 st.none() | st.integers(0, 255), st.none() | st.integers(0, 65535)))
def test_fuzz_dhcpv6_round_trip(m):
    assert d.parse_message(m.encode()) == m

"""Punt to the controller (PacketIn with ingress port, line, session id and
reason) for every punt reason, punt policing, and PacketOut."""
import struct

from scapy.layers.inet import ICMP, IP, UDP
from scapy.layers.inet6 import ICMPv6ND_NS, ICMPv6ND_RS, IPv6
from scapy.layers.l2 import ARP, Ether
from scapy.layers.ppp import PPPoED
from scapy.packet import Raw

from bng_base import (ACCESS1, ACCESS2, BNG_IP, BNG_MAC, CLIENT_IP, CLIENT_MAC, CLIENT_V6_PREFIX, CORE1,
                      CORE2, CORE_ROUTER_MAC, GATEWAY_IP, INTERNET_IP, PEER_IP, SESS_IDX, SESSION_ID,
                      BngTest, access_frame, ip_int, l2tp_data, mac_int)

LNS_CLIENT_IP = "10.0.0.77"
LCP_CONF_REQ = bytes.fromhex("01010008") + bytes.fromhex("010405d4")  # Configure-Request, MRU 1492


class PuntTest(BngTest):
    def expect_punt(self, port: int, frame, reason: str, line_id: int = 0, session_id: int = 0):
        self.send(port, frame)
        meta, payload = self.packet_in()
        self.assertEqual(meta["reason"], self.PUNT[reason], f"reason of {meta}")
        self.assertEqual(meta["ingress_port"], port)
        self.assertEqual(meta["line_id"], line_id)
        self.assertEqual(meta["session_id"], session_id)
        self.assertEqual(payload, bytes(frame), "punted frame changed")
        self.expect_nothing()


class PuntPppoeDiscovery(PuntTest):
    """PADI on a known line carries its line id; on an unknown line, line 0."""

    def runTest(self):
        self.install_line(line_id=33, s_vid=100, c_vid=200)
        padi = PPPoED(code=0x09, sessionid=0) / Raw(bytes.fromhex("01010000"))
        before = self.counter("punts", self.PUNT["PPPOE_DISCOVERY"])
        frame = access_frame(padi, 100, 200, dst="ff:ff:ff:ff:ff:ff")
        self.expect_punt(ACCESS1, frame, "PPPOE_DISCOVERY", line_id=33)
        self.assert_counter_delta(before, "punts", self.PUNT["PPPOE_DISCOVERY"], 1, len(frame))
        self.expect_punt(ACCESS1, access_frame(padi, 101, 200, dst="ff:ff:ff:ff:ff:ff"),
                         "PPPOE_DISCOVERY", line_id=0)


class PuntPppControl(PuntTest):
    """LCP before any session entry (line_map gives the line), and on an
    established session (its pppoe_session entry gives the line: a
    different id here, so that the punt shows which entry answered)."""

    def runTest(self):
        self.install_line(line_id=5)
        lcp = access_frame(self.pppoe_ip(Raw(LCP_CONF_REQ), proto=0xc021))
        self.expect_punt(ACCESS1, lcp, "PPP_CONTROL", line_id=5, session_id=SESSION_ID)
        self.install_pppoe_session(line_id=6)
        ipcp = access_frame(self.pppoe_ip(Raw(bytes.fromhex("0101000a0306") + bytes(4)), proto=0x8021))
        self.expect_punt(ACCESS1, ipcp, "PPP_CONTROL", line_id=6, session_id=SESSION_ID)


class PuntArpAndLocal(PuntTest):
    """ARP and ICMP echo for the BNG's addresses, from the core and from a
    subscriber (gateway ping); ARP for someone else is dropped, a gratuitous
    ARP is punted."""

    def runTest(self):
        self.insert("local_ipv4", {"addr": ip_int(BNG_IP)}, "set_local")
        self.insert("local_ipv4", {"addr": ip_int(GATEWAY_IP)}, "set_local")
        # subscribers' packets find the BNG's addresses in the FIB (/32 set_local)
        self.insert("fib_v4", {"dst_ipv4": (ip_int(GATEWAY_IP), 32)}, "set_local")
        arp = Ether(src=CORE_ROUTER_MAC, dst="ff:ff:ff:ff:ff:ff") / ARP(op=1, psrc="100.64.0.9", pdst=BNG_IP, hwsrc=CORE_ROUTER_MAC)
        self.expect_punt(CORE1, arp, "ARP")
        self.expect_drop(CORE1, Ether(src=CORE_ROUTER_MAC, dst="ff:ff:ff:ff:ff:ff")
                         / ARP(op=1, psrc="100.64.0.9", pdst="100.64.0.77"), "NOT_FOR_US")
        self.assert_no_packet_in()
        # a gratuitous ARP (a router announcing a new MAC) is the controller's too
        garp = Ether(src=CORE_ROUTER_MAC, dst="ff:ff:ff:ff:ff:ff") / ARP(op=1, psrc="100.64.0.9", pdst="100.64.0.9",
                                                                        hwsrc=CORE_ROUTER_MAC)
        self.expect_punt(CORE1, garp, "ARP")
        echo = Ether(src=CORE_ROUTER_MAC, dst=BNG_MAC) / IP(src="100.64.0.9", dst=BNG_IP) / ICMP()
        self.expect_punt(CORE1, echo, "LOCAL_IPV4")
        self.install_line(line_id=5)
        self.install_pppoe_session(line_id=5)
        ping_gw = access_frame(self.pppoe_ip(IP(src=CLIENT_IP, dst=GATEWAY_IP) / ICMP()))
        self.expect_punt(ACCESS1, ping_gw, "LOCAL_IPV4", line_id=5, session_id=SESSION_ID)
        # a gateway ping with TTL 1 is still for us, not TTL-expired
        ping_ttl1 = access_frame(self.pppoe_ip(IP(src=CLIENT_IP, dst=GATEWAY_IP, ttl=1) / ICMP()))
        self.expect_punt(ACCESS1, ping_ttl1, "LOCAL_IPV4", line_id=5, session_id=SESSION_ID)


class PuntIpv6Control(PuntTest):
    """ND to the BNG's solicited-node group from the core; RS from a
    subscriber (link-local, before the source check)."""

    def runTest(self):
        # ff02::1:ff00:1, the solicited-node group of 2001:db8:ffff::1:0:1
        self.insert("local_ipv6", {"addr_hi": 0xff02_0000_0000_0000, "addr_lo": 0x0000_0001_ff00_0001},
                    "set_local")
        ns = (Ether(src=CORE_ROUTER_MAC, dst="33:33:ff:00:00:01")
              / IPv6(src="fe80::1", dst="ff02::1:ff00:1", hlim=255) / ICMPv6ND_NS(tgt="2001:db8:ffff::1:0:1"))
        self.expect_punt(CORE1, ns, "LOCAL_IPV6")
        self.install_line(line_id=5)
        self.install_pppoe_session(line_id=5)
        rs = access_frame(self.pppoe_ip(IPv6(src="fe80::2", dst="ff02::2", hlim=255) / ICMPv6ND_RS(), proto=0x0057))
        self.expect_punt(ACCESS1, rs, "SUBSCRIBER_IPV6_CONTROL", line_id=5, session_id=SESSION_ID)


class PuntL2tp(PuntTest):
    """L2TP control (T bit) to our address, an SCCRQ's tunnel and session
    ids 0 included; PPP control inside an L2TP data session (LNS side,
    before and after the session entry); the same in a data message with
    tunnel or session id 0, which no session can have (RFC 2661 3.1):
    dropped as MALFORMED, not punted."""

    def runTest(self):
        self.insert("local_ipv4", {"addr": ip_int(BNG_IP)}, "set_local")
        sccrq = struct.pack("!HHHHHH", 0xc802, 12, 0, 0, 0, 0)
        self.expect_punt(CORE2, self.l2tp_over_ip(sccrq), "L2TP_CONTROL")
        lcp = l2tp_data(0x2222, 0x3333) + b"\xc0\x21" + LCP_CONF_REQ
        self.expect_punt(CORE2, self.l2tp_over_ip(lcp), "L2TP_PPP_CONTROL", session_id=0x3333)
        for tunnel_id, session_id in ((0, 0x3333), (0x2222, 0), (0, 0)):
            with self.subTest(tunnel_id=tunnel_id, session_id=session_id):
                self.expect_drop(CORE2, self.l2tp_over_ip(l2tp_data(tunnel_id, session_id) + b"\xc0\x21"
                                                          + LCP_CONF_REQ))
        self.insert("l2tp_session", {"local_ip": ip_int(BNG_IP), "peer_ip": ip_int(PEER_IP),
                                     "tunnel_id": 0x2222, "session_id": 0x3333},
                    "lns_term", sess_idx=SESS_IDX, mss_clamp=0)
        self.expect_punt(CORE2, self.l2tp_over_ip(lcp), "L2TP_PPP_CONTROL", session_id=0x3333)


class PuntTtlExpired(PuntTest):
    """TTL 1 from a subscriber and from the core: punted for ICMP time
    exceeded, counted as TTL drops, not forwarded."""

    def runTest(self):
        self.install_subscriber()
        before = self.drops("TTL_EXPIRED")
        up = access_frame(self.pppoe_ip(IP(src=CLIENT_IP, dst=INTERNET_IP, ttl=1) / UDP()))
        self.expect_punt(ACCESS1, up, "TTL_EXPIRED", line_id=5, session_id=SESSION_ID)
        down = Ether(src=CORE_ROUTER_MAC, dst=BNG_MAC) / IP(src=INTERNET_IP, dst=CLIENT_IP, ttl=1) / UDP()
        self.expect_punt(CORE1, down, "TTL_EXPIRED")
        self.assertEqual(self.drops("TTL_EXPIRED")[0] - before[0], 2)
        # TTL 2 still goes through (negative of the negative)
        self.send(ACCESS1, access_frame(self.pppoe_ip(IP(src=CLIENT_IP, dst=INTERNET_IP, ttl=2) / UDP())))
        self.assertIsNotNone(self.dataplane.poll(port_number=CORE1, timeout=2).packet)


class PuntPacketTooBig(PuntTest):
    """Downstream IP larger than the session's max_len (its MRU) is punted
    whole as PACKET_TOO_BIG, for the controller to fragment or answer
    with ICMP; a packet of exactly max_len is forwarded. For PPPoE IPv4
    (total length), PPPoE IPv6 (payload length) and an LNS session's IPv4
    (the L2TP encapsulation is not counted: the MRU is the PPP link's)."""

    def runTest(self):
        self.install_subscriber(mru=1492)
        self.insert("ipv6_session", {"dst_prefix": CLIENT_V6_PREFIX}, "to_pppoe",
                    sess_idx=SESS_IDX, port=ACCESS1, client_mac=mac_int(CLIENT_MAC),
                    bng_mac=mac_int(BNG_MAC), s_tpid=0x88a8, s_vid=0, c_vid=0,
                    pppoe_session_id=SESSION_ID, mss_clamp=0, max_len=1492 - 40)
        self.install_tunnel(tunnel_idx=4, peer_tunnel_id=0x1111)
        self.insert("ipv4_session", {"dst_ipv4": ip_int(LNS_CLIENT_IP)}, "to_l2tp",
                    sess_idx=SESS_IDX + 1, tunnel_idx=4, peer_session_id=0x2222, mss_clamp=0, max_len=1460)
        core = Ether(src=CORE_ROUTER_MAC, dst=BNG_MAC)
        cases = (("pppoe ipv4", IP(src=INTERNET_IP, dst=CLIENT_IP, flags="DF") / UDP(), 20 + 8, 1492, ACCESS1),
                 ("pppoe ipv6", IPv6(src="2001:db8:ffff::1", dst="2001:db8:1::10") / UDP(), 40 + 8, 1492, ACCESS1),
                 ("lns ipv4", IP(src=INTERNET_IP, dst=LNS_CLIENT_IP) / UDP(), 20 + 8, 1460, CORE2))
        before = self.counter("punts", self.PUNT["PACKET_TOO_BIG"])
        for what, head, head_len, mru, out_port in cases:
            with self.subTest(what=what):
                fits = core / head / Raw(b"f" * (mru - head_len))
                self.send(CORE1, fits)
                self.assertIsNotNone(self.dataplane.poll(port_number=out_port, timeout=2).packet,
                                     f"{what}: a packet of the MRU was not forwarded")
                self.expect_nothing()
                big = core / head / Raw(b"b" * (mru - head_len + 1))
                self.expect_punt(CORE1, big, "PACKET_TOO_BIG")
        self.assert_counter_delta(before, "punts", self.PUNT["PACKET_TOO_BIG"], 3)


class PuntPolicer(PuntTest):
    """A PADI flood beyond the punt meter is dropped in the data plane and
    counted as PUNT_POLICED; what passes the meter still arrives."""

    def runTest(self):
        reason = self.PUNT["PPPOE_DISCOVERY"]
        self.set_meter("punt_meter", reason, cir=1, cburst=3, pir=1, pburst=3)
        try:
            padi = access_frame(PPPoED(code=0x09) / Raw(bytes.fromhex("01010000")), dst="ff:ff:ff:ff:ff:ff")
            before = self.drops("PUNT_POLICED")
            punts_before = self.counter("punts", reason)
            for _ in range(20):
                self.send(ACCESS1, padi)
            got = 0
            while True:
                try:
                    self.packet_in(timeout=1.0)
                    got += 1
                except AssertionError:
                    break
            policed = self.drops("PUNT_POLICED")[0] - before[0]
            passed = self.counter("punts", reason)[0] - punts_before[0]
            self.assertEqual(policed + passed, 20)
            self.assertEqual(got, passed)
            self.assertGreaterEqual(policed, 15, "the punt meter let a flood through")
        finally:
            self.reset_meter("punt_meter", reason)


class PacketOut(BngTest):
    """PacketOut leaves the named port byte for byte; an unknown port drops
    it and counts BAD_PACKET_OUT."""

    def runTest(self):
        frame = Ether(src=BNG_MAC, dst=CLIENT_MAC, type=0x8863) / Raw(bytes.fromhex("1107000000000000") + b"z" * 30)
        for port in (ACCESS1, ACCESS2, CORE1, CORE2):
            self.client.packet_out(bytes(frame), egress_port=port)
            self.expect(frame, port)
        before = self.drops("BAD_PACKET_OUT")
        self.client.packet_out(bytes(frame), egress_port=99)
        self.expect_nothing()
        self.assertEqual(self.drops("BAD_PACKET_OUT")[0] - before[0], 1)

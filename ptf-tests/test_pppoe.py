"""PPPoE termination: lines, upstream with anti-spoofing, downstream encap,
IPv4 and IPv6, untagged / single-tag / QinQ lines, per-session counters."""
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from bng_base import (ACCESS1, BNG_MAC, CLIENT_IP, CLIENT_MAC, CLIENT_V6_PREFIX, CORE1,
                      CORE_ROUTER_MAC, INTERNET_IP, SESS_IDX, SESSION_ID, BngTest, access_frame,
                      mac_int, routed_ipv4, routed_ipv6)

LINES = (("untagged", 0, 0), ("single-tag", 100, 0), ("qinq", 100, 200))


class UpstreamV4(BngTest):
    """Upstream PPPoE -> strip -> route, for each line kind; session counters
    count the PPP payload exactly; TTL and checksum are updated."""

    def runTest(self):
        self.install_core_route()
        for i, (kind, s_vid, c_vid) in enumerate(LINES):
            with self.subTest(line=kind):
                line_id = 10 + i
                self.install_line(line_id=line_id, s_vid=s_vid, c_vid=c_vid)
                self.install_pppoe_session(line_id=line_id, s_vid=s_vid, c_vid=c_vid,
                                           sess_idx=SESS_IDX + i, client_ip=f"10.0.0.{10 + i}")
                ip = IP(src=f"10.0.0.{10 + i}", dst=INTERNET_IP, ttl=64) / UDP(sport=1000, dport=4000) / Raw(b"q" * 30)
                before = self.counter("session_up", SESS_IDX + i)
                self.send(ACCESS1, access_frame(self.pppoe_ip(ip), s_vid, c_vid))
                self.expect(Ether(src=BNG_MAC, dst=CORE_ROUTER_MAC, type=0x0800) / routed_ipv4(ip), CORE1)
                self.assert_counter_delta(before, "session_up", SESS_IDX + i, 1, len(ip))


class UpstreamSpoofedSource(BngTest):
    """Wrong source IPv4 on a known session: dropped and counted as spoofed;
    a wrong client MAC finds no session."""

    def runTest(self):
        self.install_subscriber()
        self.expect_drop(ACCESS1, access_frame(self.pppoe_ip(IP(src="10.0.0.99", dst=INTERNET_IP) / UDP())),
                         "SPOOFED")
        self.expect_drop(ACCESS1, access_frame(self.pppoe_ip(IP(src=CLIENT_IP, dst=INTERNET_IP) / UDP()),
                                               src="02:cc:00:00:00:99"), "NO_SESSION")


class UnknownSessionAndLine(BngTest):
    """Data for a session id nobody set up is dropped (NO_SESSION); PPPoE
    session traffic on a line without a line_map entry is dropped
    (UNKNOWN_LINE)."""

    def runTest(self):
        self.install_subscriber()
        ip = IP(src=CLIENT_IP, dst=INTERNET_IP) / UDP()
        self.expect_drop(ACCESS1, access_frame(self.pppoe_ip(ip, session_id=0x999)), "NO_SESSION")
        self.expect_drop(ACCESS1, access_frame(self.pppoe_ip(ip), s_vid=777), "UNKNOWN_LINE")


class DownstreamV4(BngTest):
    """Core IPv4 to a subscriber /32 -> PPPoE with the right length, tags,
    client MAC and port; session_down counts the IP bytes."""

    def runTest(self):
        for i, (kind, s_vid, c_vid) in enumerate(LINES):
            with self.subTest(line=kind):
                client_ip = f"10.0.0.{10 + i}"
                self.install_pppoe_session(line_id=10 + i, s_vid=s_vid, c_vid=c_vid,
                                           sess_idx=SESS_IDX + i, client_ip=client_ip,
                                           session_id=SESSION_ID + i)
                ip = IP(src=INTERNET_IP, dst=client_ip, ttl=50) / UDP(sport=4000, dport=1000) / Raw(b"a" * 40)
                before = self.counter("session_down", SESS_IDX + i)
                self.send(CORE1, Ether(src=CORE_ROUTER_MAC, dst=BNG_MAC) / ip)
                exp = access_frame(self.pppoe_ip(routed_ipv4(ip), session_id=SESSION_ID + i), s_vid, c_vid,
                                   src=BNG_MAC, dst=CLIENT_MAC)
                self.expect(exp, ACCESS1)
                self.assert_counter_delta(before, "session_down", SESS_IDX + i, 1, len(ip))


class DownstreamNotForUs(BngTest):
    """Core frames to another MAC are dropped (my_station); an address with
    no session and no route is dropped as NO_ROUTE."""

    def runTest(self):
        self.install_pppoe_session()
        self.expect_drop(CORE1, Ether(src=CORE_ROUTER_MAC, dst="02:00:00:00:00:99")
                         / IP(src=INTERNET_IP, dst=CLIENT_IP) / UDP(), "NOT_FOR_US")
        self.expect_drop(CORE1, Ether(src=CORE_ROUTER_MAC, dst=BNG_MAC)
                         / IP(src=INTERNET_IP, dst="10.0.0.200") / UDP(), "NO_ROUTE")


class UpstreamDownstreamV6(BngTest):
    """IPv6 /64 of a session both ways; a source outside the delegated /64
    is spoofed."""

    def runTest(self):
        self.install_line(line_id=5)
        self.install_pppoe_session(line_id=5)
        self.insert("ipv6_antispoof", {"sess_idx": SESS_IDX, "src_prefix": CLIENT_V6_PREFIX}, "permit")
        self.insert("ipv6_session", {"dst_prefix": CLIENT_V6_PREFIX}, "to_pppoe",
                    sess_idx=SESS_IDX, port=ACCESS1, client_mac=mac_int(CLIENT_MAC),
                    bng_mac=mac_int(BNG_MAC), s_tpid=0x88a8, s_vid=0, c_vid=0,
                    pppoe_session_id=SESSION_ID, mss_clamp=0, max_len=1492 - 40)
        self.insert("nexthop", {"nexthop_id": 9}, "set_l2", port=CORE1, smac=mac_int(BNG_MAC),
                    dmac=mac_int(CORE_ROUTER_MAC), vid=0)
        self.insert("fib_v6", {"dst_prefix": (0x2001_0db8_ffff_0000, 48)}, "set_nexthop", nexthop_id=9)
        client, server = "2001:db8:1:0::10", "2001:db8:ffff::1"
        up = IPv6(src=client, dst=server, hlim=64) / UDP(sport=1, dport=2) / Raw(b"x" * 20)
        self.send(ACCESS1, access_frame(self.pppoe_ip(up, proto=0x0057)))
        self.expect(Ether(src=BNG_MAC, dst=CORE_ROUTER_MAC, type=0x86dd) / routed_ipv6(up), CORE1)

        down = IPv6(src=server, dst=client, hlim=30) / UDP(sport=2, dport=1) / Raw(b"y" * 20)
        self.send(CORE1, Ether(src=CORE_ROUTER_MAC, dst=BNG_MAC) / down)
        self.expect(access_frame(self.pppoe_ip(routed_ipv6(down), proto=0x0057), src=BNG_MAC, dst=CLIENT_MAC),
                    ACCESS1)

        bad = IPv6(src="2001:db8:2::10", dst=server) / UDP()
        self.expect_drop(ACCESS1, access_frame(self.pppoe_ip(bad, proto=0x0057)), "SPOOFED")

"""L2TP data plane: LAC (PPPoE <-> L2TP) and LNS (L2TP <-> routed), both
directions, byte-exact (outer IPv4 length and checksum, UDP length, UDP
checksum 0), plus the negatives for each table."""
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from bng_base import (ACCESS1, BNG_IP, BNG_MAC, CLIENT_IP, CLIENT_MAC, CLIENT_V6_PREFIX, CORE1, CORE2,
                      CORE_ROUTER_MAC, INTERNET_IP, PEER_IP, PEER_MAC, SESS_IDX, SESSION_ID,
                      BngTest, access_frame, ip_int, l2tp_data, mac_int, routed_ipv4, routed_ipv6,
                      with_l2tp_length)

PEER_TUNNEL, PEER_SESSION = 0x1111, 0x2222     # ids the peer chose
LOCAL_TUNNEL, LOCAL_SESSION = 0x0aaa, 0x0bbb   # ids we chose
# the session as l2tp_session and l2tp_up_v4 key it
L2TP_KEY = {"local_ip": ip_int(BNG_IP), "peer_ip": ip_int(PEER_IP), "tunnel_id": LOCAL_TUNNEL,
            "session_id": LOCAL_SESSION}


def tunnel_frame(l2tp_payload: bytes, src=BNG_IP, dst=PEER_IP, smac=BNG_MAC, dmac=PEER_MAC):
    """What the BNG must emit toward a tunnel peer (scapy computes lengths
    and the IPv4 checksum; UDP checksum 0 as RFC 2661 allows)."""
    return (Ether(src=smac, dst=dmac) / IP(src=src, dst=dst, ttl=64, id=0, flags=0)
            / UDP(sport=1701, dport=1701, chksum=0) / Raw(l2tp_payload))


class LacTest(BngTest):
    def install_lac_session(self, line_id=5, s_vid=100, c_vid=200):
        """BNG_IP as a LAC-only endpoint (set_local_no_lns), as the
        controller installs it when the LNS role is off."""
        self.install_line(line_id=line_id, s_vid=s_vid, c_vid=c_vid)
        self.install_tunnel(tunnel_idx=3, peer_tunnel_id=PEER_TUNNEL, local_action="set_local_no_lns")
        self.insert("pppoe_session", {"port": ACCESS1, "s_vid": s_vid, "c_vid": c_vid,
                                      "session_id": SESSION_ID, "src_mac": mac_int(CLIENT_MAC)},
                    "pppoe_lac", sess_idx=SESS_IDX, tunnel_idx=3, peer_session_id=PEER_SESSION,
                    line_id=line_id)
        self.insert("l2tp_session", L2TP_KEY, "lac_to_pppoe", sess_idx=SESS_IDX, port=ACCESS1,
                    client_mac=mac_int(CLIENT_MAC), bng_mac=mac_int(BNG_MAC), s_tpid=0x88a8, s_vid=s_vid,
                    c_vid=c_vid, pppoe_session_id=SESSION_ID)


class LacUpstream(LacTest):
    """Every PPP frame of a switched session (IP and LCP alike) leaves as
    IPv4/UDP/L2TP/PPP toward the LNS; the session counts PPP payload bytes."""

    def runTest(self):
        self.install_lac_session()
        ip = IP(src=CLIENT_IP, dst=INTERNET_IP) / UDP(sport=5, dport=6) / Raw(b"l" * 33)
        before = self.counter("session_up", SESS_IDX)
        self.send(ACCESS1, access_frame(self.pppoe_ip(ip), 100, 200))
        self.expect(tunnel_frame(l2tp_data(PEER_TUNNEL, PEER_SESSION) + b"\x00\x21" + bytes(ip)), CORE2)
        self.assert_counter_delta(before, "session_up", SESS_IDX, 1, len(ip))
        lcp_echo = bytes.fromhex("09070008deadbeef")
        self.send(ACCESS1, access_frame(self.pppoe_ip(Raw(lcp_echo), proto=0xc021), 100, 200))
        self.expect(tunnel_frame(l2tp_data(PEER_TUNNEL, PEER_SESSION) + b"\xc0\x21" + lcp_echo), CORE2)
        self.assert_no_packet_in()


class LacDownstream(LacTest):
    """L2TP data from the LNS (with and without 0xff03, with Length and
    Ns/Nr) becomes PPPoE on the subscriber's QinQ line, at a LAC-only
    endpoint and at one where LNS sessions terminate too (its IPv4 misses
    l2tp_up_v4 first)."""

    def runTest(self):
        self.install_lac_session()
        ip = IP(src=INTERNET_IP, dst=CLIENT_IP) / UDP(sport=6, dport=5) / Raw(b"d" * 21)
        variants = (dict(), dict(ac=False), dict(flags=0x4802, ns_nr=(1, 2)))
        for local_action in ("set_local_no_lns", "set_local"):
            self.client.modify(self.client.table_entry("local_ipv4", {"addr": ip_int(BNG_IP)}, local_action))
            for v in variants:
                with self.subTest(local_action=local_action, **{k: str(x) for k, x in v.items()}):
                    payload = with_l2tp_length(l2tp_data(LOCAL_TUNNEL, LOCAL_SESSION, **v) + b"\x00\x21" + bytes(ip))
                    self.send(CORE2, self.l2tp_over_ip(payload))
                    self.expect(access_frame(self.pppoe_ip(ip), 100, 200, src=BNG_MAC, dst=CLIENT_MAC), ACCESS1)


class LacNegative(LacTest):
    """L2TP data for an unknown session, and a switched session whose tunnel
    entry is missing, are dropped as NO_SESSION."""

    def runTest(self):
        self.install_lac_session()
        ip = IP(src=INTERNET_IP, dst=CLIENT_IP) / UDP()
        before = self.drops("NO_SESSION")
        self.send(CORE2, self.l2tp_over_ip(l2tp_data(LOCAL_TUNNEL, 0x7777) + b"\x00\x21" + bytes(ip)))
        self.expect_nothing()
        self.client.delete(self.client.table_entry("l2tp_tunnel", {"tunnel_idx": 3}))
        self.send(ACCESS1, access_frame(self.pppoe_ip(IP(src=CLIENT_IP, dst=INTERNET_IP) / UDP()), 100, 200))
        self.expect_nothing()
        self.assertEqual(self.drops("NO_SESSION")[0] - before[0], 2)


class LnsTest(BngTest):
    def install_lns_session(self, mss=0, mru=1460):
        self.install_core_route()
        self.install_tunnel(tunnel_idx=4, peer_tunnel_id=PEER_TUNNEL)
        self.insert("l2tp_session", L2TP_KEY, "lns_term", sess_idx=SESS_IDX, mss_clamp=mss)
        self.insert("l2tp_up_v4", {**L2TP_KEY, "src_ipv4": ip_int(CLIENT_IP)}, "lns_term", sess_idx=SESS_IDX,
                    mss_clamp=mss)
        self.insert("ipv4_session", {"dst_ipv4": ip_int(CLIENT_IP)}, "to_l2tp",
                    sess_idx=SESS_IDX, tunnel_idx=4, peer_session_id=PEER_SESSION, mss_clamp=mss,
                    max_len=mru)


class LnsUpstream(LnsTest):
    """L2TP data from the LAC -> strip -> route to the core."""

    def runTest(self):
        self.install_lns_session()
        ip = IP(src=CLIENT_IP, dst=INTERNET_IP, ttl=20) / UDP(sport=7, dport=8) / Raw(b"u" * 25)
        before = self.counter("session_up", SESS_IDX)
        self.send(CORE2, self.l2tp_over_ip(l2tp_data(LOCAL_TUNNEL, LOCAL_SESSION) + b"\x00\x21" + bytes(ip)))
        self.expect(Ether(src=BNG_MAC, dst=CORE_ROUTER_MAC, type=0x0800) / routed_ipv4(ip), CORE1)
        self.assert_counter_delta(before, "session_up", SESS_IDX, 1, len(ip))


class LnsDownstream(LnsTest):
    """Core IPv4 to an LNS subscriber -> IPv4/UDP/L2TP/PPP toward the LAC."""

    def runTest(self):
        self.install_lns_session()
        ip = IP(src=INTERNET_IP, dst=CLIENT_IP, ttl=30) / UDP(sport=8, dport=7) / Raw(b"w" * 19)
        before = self.counter("session_down", SESS_IDX)
        self.send(CORE1, Ether(src=CORE_ROUTER_MAC, dst=BNG_MAC) / ip)
        self.expect(tunnel_frame(l2tp_data(PEER_TUNNEL, PEER_SESSION) + b"\x00\x21" + bytes(routed_ipv4(ip))),
                    CORE2)
        self.assert_counter_delta(before, "session_down", SESS_IDX, 1, len(ip))


class LnsNegative(LnsTest):
    """A spoofed inner source is dropped; the session's address in another
    session is no session; L2TP version 3 is malformed; L2TP to an address
    that is not ours is only routed, never terminated; UDP to port 1701 of
    an LNS subscriber cannot be tunnelled to it (its headers were parsed as
    L2TP) and is dropped as UNSUPPORTED."""

    def runTest(self):
        self.install_lns_session()
        bad = IP(src="10.9.9.9", dst=INTERNET_IP) / UDP()
        self.expect_drop(CORE2, self.l2tp_over_ip(l2tp_data(LOCAL_TUNNEL, LOCAL_SESSION) + b"\x00\x21" + bytes(bad)),
                         "SPOOFED")
        ip = IP(src=CLIENT_IP, dst=INTERNET_IP) / UDP()
        self.expect_drop(CORE2, self.l2tp_over_ip(l2tp_data(LOCAL_TUNNEL, LOCAL_SESSION + 1) + b"\x00\x21"
                                                  + bytes(ip)), "NO_SESSION")
        self.expect_drop(CORE2, self.l2tp_over_ip(l2tp_data(LOCAL_TUNNEL, LOCAL_SESSION, flags=0x0003)
                                                  + b"\x00\x21" + bytes(ip)))
        payload = l2tp_data(LOCAL_TUNNEL, LOCAL_SESSION) + b"\x00\x21" + bytes(ip)
        transit = self.l2tp_over_ip(payload, dst="198.51.100.50")
        self.send(CORE2, transit)
        self.expect(Ether(src=BNG_MAC, dst=CORE_ROUTER_MAC, type=0x0800) / routed_ipv4(transit[IP]), CORE1)
        self.expect_drop(CORE1, self.l2tp_over_ip(payload, src=INTERNET_IP, dst=CLIENT_IP, smac=CORE_ROUTER_MAC),
                         "UNSUPPORTED")


class TunnelCarriesNextHop(LacTest):
    """A tunnel whose entry carries its next hop's L2 rewrite
    (set_tunnel_l2, what the controller installs once the next hop toward
    the peer is resolved) encapsulates toward the peer with no nexthop entry
    at all; turned back into set_tunnel of an id with no entry it drops as
    NO_ROUTE."""

    def runTest(self):
        self.install_lac_session()
        self.client.delete(self.client.table_entry("nexthop", {"nexthop_id": 2}, "set_l2",
                                                   {"port": CORE2, "smac": mac_int(BNG_MAC),
                                                    "dmac": mac_int(PEER_MAC), "vid": 0}))
        outer = {"local_ip": ip_int(BNG_IP), "peer_ip": ip_int(PEER_IP), "peer_tunnel_id": PEER_TUNNEL,
                 "peer_port": 1701}
        self.client.modify(self.client.table_entry("l2tp_tunnel", {"tunnel_idx": 3}, "set_tunnel_l2",
                                                   {**outer, "port": CORE2, "smac": mac_int(BNG_MAC),
                                                    "dmac": mac_int(PEER_MAC), "vid": 0}))
        ip = IP(src=CLIENT_IP, dst=INTERNET_IP) / UDP(sport=5, dport=6) / Raw(b"t" * 27)
        frame = access_frame(self.pppoe_ip(ip), 100, 200)
        self.send(ACCESS1, frame)
        self.expect(tunnel_frame(l2tp_data(PEER_TUNNEL, PEER_SESSION) + b"\x00\x21" + bytes(ip)), CORE2)
        self.client.modify(self.client.table_entry("l2tp_tunnel", {"tunnel_idx": 3}, "set_tunnel",
                                                   {**outer, "nexthop_id": 2}))
        self.expect_drop(ACCESS1, frame, "NO_ROUTE")


class LnsIpv6(LnsTest):
    """IPv6 of an LNS session both ways: upstream L2TP data (found by
    l2tp_session, lns_term) is stripped, checked against the session's /64
    (ipv6_antispoof) and routed; downstream core IPv6 to the session's /64
    (ipv6_session, to_l2tp) leaves as IPv4/UDP/L2TP/PPP toward the LAC,
    lengths and checksum exact. A source outside the /64 is SPOOFED; core
    IPv6 that no session holds misses ipv6_session and is routed."""

    def runTest(self):
        self.install_lns_session()
        self.insert("ipv6_antispoof", {"sess_idx": SESS_IDX, "src_prefix": CLIENT_V6_PREFIX}, "permit")
        self.insert("ipv6_session", {"dst_prefix": CLIENT_V6_PREFIX}, "to_l2tp",
                    sess_idx=SESS_IDX, tunnel_idx=4, peer_session_id=PEER_SESSION, mss_clamp=0,
                    max_len=1460 - 40)
        self.insert("fib_v6", {"dst_prefix": (0, 0)}, "set_nexthop", nexthop_id=1)
        client, server = "2001:db8:1::10", "2001:db8:ffff::1"

        up = IPv6(src=client, dst=server, hlim=20) / UDP(sport=7, dport=8) / Raw(b"u" * 25)
        before = self.counter("session_up", SESS_IDX)
        self.send(CORE2, self.l2tp_over_ip(l2tp_data(LOCAL_TUNNEL, LOCAL_SESSION) + b"\x00\x57" + bytes(up)))
        self.expect(Ether(src=BNG_MAC, dst=CORE_ROUTER_MAC, type=0x86dd) / routed_ipv6(up), CORE1)
        self.assert_counter_delta(before, "session_up", SESS_IDX, 1, len(up))

        down = IPv6(src=server, dst=client, hlim=30) / UDP(sport=8, dport=7) / Raw(b"d" * 19)
        before = self.counter("session_down", SESS_IDX)
        self.send(CORE1, Ether(src=CORE_ROUTER_MAC, dst=BNG_MAC) / down)
        self.expect(tunnel_frame(l2tp_data(PEER_TUNNEL, PEER_SESSION) + b"\x00\x57" + bytes(routed_ipv6(down))),
                    CORE2)
        self.assert_counter_delta(before, "session_down", SESS_IDX, 1, len(down))

        spoofed = IPv6(src="2001:db8:2::10", dst=server) / UDP()
        self.expect_drop(CORE2, self.l2tp_over_ip(l2tp_data(LOCAL_TUNNEL, LOCAL_SESSION) + b"\x00\x57"
                                                  + bytes(spoofed)), "SPOOFED")
        transit = IPv6(src=server, dst="2001:db8:77::1", hlim=30) / UDP(sport=8, dport=7) / Raw(b"t" * 19)
        self.send(CORE1, Ether(src=CORE_ROUTER_MAC, dst=BNG_MAC) / transit)
        self.expect(Ether(src=BNG_MAC, dst=CORE_ROUTER_MAC, type=0x86dd) / routed_ipv6(transit), CORE1)

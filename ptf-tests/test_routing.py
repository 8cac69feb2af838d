"""The IPv4 FIB (fib_v4): longest prefix first, a default route, host
routes, blackholes and removals, seen from core transit traffic; and the
next hops it points to, whatever their ids. The switch holds LPM tables on
one 32-bit field as DIR-24-8 (rte_lpm) in place of DPDK's ACL-based
wildcard tables, and exact tables on one small id (nexthop) as arrays with
DPDK's exact type beside them for ids beyond the table's size; this checks
what routing must do, whichever structure answers."""
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Raw

from bng_base import (ACCESS1, BNG_MAC, CLIENT_IP, CLIENT_MAC, CORE1, CORE2, CORE_ROUTER_MAC, INTERNET_IP,
                      PEER_MAC, BngTest, access_frame, ip_int, mac_int, routed_ipv4, routed_ipv6,
                      with_ipv4_checksum)

# Header checksums before a TTL decrement, around the carries of the new
# sum: 0xfeff becomes 0x0000, which a one's complement sum can also write as
# 0xffff (SWX's checksum instruction does); 0x00ff/0x0100 and 0xff00 sit at
# the borrow of the TTL's byte.
CHECKSUM_EDGES = (0x0000, 0x0001, 0x00ff, 0x0100, 0x7fff, 0xfeff, 0xff00, 0xfffe)


def check_routed(test: BngTest, dst: str, port: int, dmac: str) -> None:
    """Core transit IPv4 to dst leaves port toward dmac, TTL decremented."""
    ip = IP(src="192.0.2.9", dst=dst, ttl=9) / UDP(sport=1, dport=2) / Raw(b"r" * 18)
    test.send(CORE1, Ether(src=CORE_ROUTER_MAC, dst=BNG_MAC) / ip)
    test.expect(Ether(src=BNG_MAC, dst=dmac, type=0x0800) / routed_ipv4(ip), port)


def check_no_route(test: BngTest, dst: str) -> None:
    ip = IP(src="192.0.2.9", dst=dst) / UDP()
    test.expect_drop(CORE1, Ether(src=CORE_ROUTER_MAC, dst=BNG_MAC) / ip, "NO_ROUTE")


class FibLongestPrefix(BngTest):
    def route(self, prefix: str, plen: int, nexthop_id: int):
        return self.insert("fib_v4", {"dst_ipv4": (ip_int(prefix), plen)}, "set_nexthop", nexthop_id=nexthop_id)

    def runTest(self):
        self.install_core_route()                          # 0/0 -> nexthop 1 (CORE1)
        self.insert("nexthop", {"nexthop_id": 2}, "set_l2", port=CORE2, smac=mac_int(BNG_MAC),
                    dmac=mac_int(PEER_MAC), vid=0)
        wide = self.route("203.0.0.0", 8, 2)
        mid = self.route("203.0.113.0", 24, 1)
        host = self.route("203.0.113.77", 32, 2)
        self.route("203.0.113.128", 25, 0)                 # blackhole (nexthop 0: NO_ROUTE)
        check_routed(self, "198.51.100.1", CORE1, CORE_ROUTER_MAC)  # only the default covers it
        check_routed(self, "203.9.9.9", CORE2, PEER_MAC)            # /8
        check_routed(self, "203.0.113.5", CORE1, CORE_ROUTER_MAC)   # /24 inside the /8
        check_routed(self, "203.0.113.77", CORE2, PEER_MAC)         # /32 inside the /24
        check_no_route(self, "203.0.113.200")
        self.client.delete(host)                                    # the /24 again
        check_routed(self, "203.0.113.77", CORE1, CORE_ROUTER_MAC)
        self.client.delete(mid)                                     # the /8 again
        check_routed(self, "203.0.113.5", CORE2, PEER_MAC)
        self.client.delete(wide)                                    # the default again
        check_routed(self, "203.9.9.9", CORE1, CORE_ROUTER_MAC)


class NexthopIds(BngTest):
    """Next hops whose ids are array slots (1, the core route's, and the
    last one below the table's size) and one far beyond it: each forwards
    with its own MACs and port, a modify changes what it forwards with, a
    delete makes its routes NO_ROUTE, and the others stay."""
    def runTest(self):
        size = self.client.names.table("nexthop").size
        last, beyond = size - 1, size + 1_000_000
        self.install_core_route()                          # 0/0 -> nexthop 1 (CORE1)
        hops = {}
        for nh, port, dmac in ((last, CORE2, PEER_MAC), (beyond, CORE2, "02:ee:00:00:00:99")):
            hops[nh] = self.insert("nexthop", {"nexthop_id": nh}, "set_l2", port=port, smac=mac_int(BNG_MAC),
                                   dmac=mac_int(dmac), vid=0)
        self.insert("fib_v4", {"dst_ipv4": (ip_int("203.0.113.0"), 24)}, "set_nexthop", nexthop_id=last)
        self.insert("fib_v4", {"dst_ipv4": (ip_int("198.18.0.0"), 15)}, "set_nexthop", nexthop_id=beyond)
        check_routed(self, "192.0.2.200", CORE1, CORE_ROUTER_MAC)
        check_routed(self, "203.0.113.5", CORE2, PEER_MAC)
        check_routed(self, "198.19.1.1", CORE2, "02:ee:00:00:00:99")
        self.client.modify(self.client.table_entry("nexthop", {"nexthop_id": beyond}, "set_l2",
                                                   {"port": CORE1, "smac": mac_int(BNG_MAC),
                                                    "dmac": mac_int("02:ee:00:00:00:98"), "vid": 0}))
        check_routed(self, "198.19.1.1", CORE1, "02:ee:00:00:00:98")
        self.client.delete(hops[beyond])
        check_no_route(self, "198.19.1.1")
        self.client.delete(hops[last])
        check_no_route(self, "203.0.113.5")
        check_routed(self, "192.0.2.200", CORE1, CORE_ROUTER_MAC)


class FibRouteCarriesNextHop(BngTest):
    """A route with its next hop's L2 rewrite in the entry (set_nexthop_l2,
    what the controller installs once the next hop is resolved) forwards
    without any nexthop entry, pushes its VLAN, and follows a modify; turned
    back into set_nexthop of an id with no entry it drops as NO_ROUTE."""
    def runTest(self):
        self.install_core_route()                          # 0/0 -> nexthop 1 (CORE1)
        key = {"dst_ipv4": (ip_int("203.0.113.0"), 24)}
        self.insert("fib_v4", key, "set_nexthop_l2", port=CORE2, smac=mac_int(BNG_MAC),
                    dmac=mac_int(PEER_MAC), vid=0)
        check_routed(self, "203.0.113.5", CORE2, PEER_MAC)
        self.client.modify(self.client.table_entry("fib_v4", key, "set_nexthop_l2",
                                                   {"port": CORE1, "smac": mac_int(BNG_MAC),
                                                    "dmac": mac_int("02:ee:00:00:00:97"), "vid": 300}))
        ip = IP(src="192.0.2.9", dst="203.0.113.5", ttl=9) / UDP(sport=1, dport=2) / Raw(b"v" * 18)
        self.send(CORE1, Ether(src=CORE_ROUTER_MAC, dst=BNG_MAC) / ip)
        self.expect(Ether(src=BNG_MAC, dst="02:ee:00:00:00:97", type=0x8100) / Dot1Q(vlan=300, type=0x0800)
                    / routed_ipv4(ip), CORE1)
        self.client.modify(self.client.table_entry("fib_v4", key, "set_nexthop", {"nexthop_id": 7}))
        check_no_route(self, "203.0.113.5")
        check_routed(self, "198.51.100.1", CORE1, CORE_ROUTER_MAC)


class TtlChecksumCarries(BngTest):
    """Routed core IPv4, a subscriber's upstream IPv4 (the inner header)
    and PPPoE downstream leave with the header checksum RFC 791 gives after
    the TTL decrement, byte for byte, also where the new checksum is 0."""
    def runTest(self):
        self.install_subscriber()                          # 0/0 -> CORE1, one PPPoE session
        for c in CHECKSUM_EDGES:
            with self.subTest(checksum=f"{c:#06x}"):
                ip = with_ipv4_checksum(IP(src="192.0.2.9", dst="198.51.100.1", ttl=9)
                                        / UDP(sport=1, dport=2) / Raw(b"c" * 18), c)
                self.send(CORE1, Ether(src=CORE_ROUTER_MAC, dst=BNG_MAC) / ip)
                self.expect(Ether(src=BNG_MAC, dst=CORE_ROUTER_MAC, type=0x0800) / routed_ipv4(ip), CORE1)
                up = with_ipv4_checksum(IP(src=CLIENT_IP, dst=INTERNET_IP, ttl=33) / UDP(sport=3, dport=4), c)
                self.send(ACCESS1, access_frame(self.pppoe_ip(up)))
                self.expect(Ether(src=BNG_MAC, dst=CORE_ROUTER_MAC, type=0x0800) / routed_ipv4(up), CORE1)
                down = with_ipv4_checksum(IP(src=INTERNET_IP, dst=CLIENT_IP, ttl=2) / UDP(sport=4, dport=3), c)
                self.send(CORE1, Ether(src=CORE_ROUTER_MAC, dst=BNG_MAC) / down)
                self.expect(access_frame(self.pppoe_ip(routed_ipv4(down)), src=BNG_MAC, dst=CLIENT_MAC), ACCESS1)


class NotRoutedHere(BngTest):
    """What a router must not forward. Plain IP that a subscriber sends to
    the BNG's MAC on an access port (my_station holds only the core ports,
    as the controller installs it): routing it would bypass the session's
    anti-spoofing, counters and policer. And IPv6 from the core with a
    link-local source or destination, or a multicast destination, that is
    not one of the BNG's own addresses (RFC 4291 2.5.6): dropped, not sent
    along the default route. The same kinds of packets with global unicast
    addresses, from the core, are routed; and a blackhole route inside the
    IPv6 default route drops what it covers (NO_ROUTE)."""

    def runTest(self):
        self.install_core_route()
        plain = IP(src=CLIENT_IP, dst=INTERNET_IP, ttl=9) / UDP(sport=1, dport=2) / Raw(b"a" * 18)
        self.expect_drop(ACCESS1, Ether(src=CLIENT_MAC, dst=BNG_MAC) / plain, "NOT_FOR_US")
        self.send(CORE1, Ether(src=CORE_ROUTER_MAC, dst=BNG_MAC) / plain)
        self.expect(Ether(src=BNG_MAC, dst=CORE_ROUTER_MAC, type=0x0800) / routed_ipv4(plain), CORE1)

        self.insert("fib_v6", {"dst_prefix": (0, 0)}, "set_nexthop", nexthop_id=1)
        ok = IPv6(src="2001:db8:9::1", dst="2001:db8:ffff::1", hlim=9) / UDP(sport=1, dport=2) / Raw(b"b" * 18)
        self.send(CORE1, Ether(src=CORE_ROUTER_MAC, dst=BNG_MAC) / ok)
        self.expect(Ether(src=BNG_MAC, dst=CORE_ROUTER_MAC, type=0x86dd) / routed_ipv6(ok), CORE1)
        # a blackhole (next hop 0, as the controller installs for its pools)
        # inside ::/0: the longer prefix wins (the /0 once outranked it)
        self.insert("fib_v6", {"dst_prefix": (0x2001_0db8_0077_0000, 48)}, "set_nexthop", nexthop_id=0)
        pool = IPv6(src="2001:db8:9::1", dst="2001:db8:77::1", hlim=9) / UDP(sport=1, dport=2) / Raw(b"p" * 18)
        self.expect_drop(CORE1, Ether(src=CORE_ROUTER_MAC, dst=BNG_MAC) / pool, "NO_ROUTE")
        for src, dst in (("2001:db8:9::1", "fe80::99"), ("fe80::5", "2001:db8:ffff::1"),
                         ("2001:db8:9::1", "ff0e::5")):
            with self.subTest(src=src, dst=dst):
                pkt = IPv6(src=src, dst=dst, hlim=9) / UDP(sport=1, dport=2) / Raw(b"c" * 18)
                self.expect_drop(CORE1, Ether(src=CORE_ROUTER_MAC, dst=BNG_MAC) / pkt, "NOT_FOR_US")

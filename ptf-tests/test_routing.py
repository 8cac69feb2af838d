"""The IPv4 FIB (fib_v4): longest prefix first, a default route, host
routes, blackholes and removals, seen from core transit traffic. The
switch holds LPM tables on one 32-bit field as DIR-24-8 (rte_lpm) in place
of DPDK's ACL-based wildcard tables; this checks what routing must do,
whichever structure answers."""
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from bng_base import BNG_MAC, CORE1, CORE2, CORE_ROUTER_MAC, PEER_MAC, BngTest, ip_int, mac_int, routed_ipv4


class FibLongestPrefix(BngTest):
    def route(self, prefix: str, plen: int, nexthop_id: int):
        return self.insert("fib_v4", {"dst_ipv4": (ip_int(prefix), plen)}, "set_nexthop", nexthop_id=nexthop_id)

    def check(self, dst: str, port: int, dmac: str) -> None:
        ip = IP(src="192.0.2.9", dst=dst, ttl=9) / UDP(sport=1, dport=2) / Raw(b"r" * 18)
        self.send(CORE1, Ether(src=CORE_ROUTER_MAC, dst=BNG_MAC) / ip)
        self.expect(Ether(src=BNG_MAC, dst=dmac, type=0x0800) / routed_ipv4(ip), port)

    def runTest(self):
        self.install_core_route()                          # 0/0 -> nexthop 1 (CORE1)
        self.insert("nexthop", {"nexthop_id": 2}, "set_l2", port=CORE2, smac=mac_int(BNG_MAC),
                    dmac=mac_int(PEER_MAC), vid=0)
        wide = self.route("203.0.0.0", 8, 2)
        mid = self.route("203.0.113.0", 24, 1)
        host = self.route("203.0.113.77", 32, 2)
        self.route("203.0.113.128", 25, 0)                 # blackhole (nexthop 0: NO_ROUTE)
        self.check("198.51.100.1", CORE1, CORE_ROUTER_MAC)  # only the default covers it
        self.check("203.9.9.9", CORE2, PEER_MAC)            # /8
        self.check("203.0.113.5", CORE1, CORE_ROUTER_MAC)   # /24 inside the /8
        self.check("203.0.113.77", CORE2, PEER_MAC)         # /32 inside the /24
        ip = IP(src="192.0.2.9", dst="203.0.113.200") / UDP()
        self.expect_drop(CORE1, Ether(src=CORE_ROUTER_MAC, dst=BNG_MAC) / ip, "NO_ROUTE")
        self.client.delete(host)                            # the /24 again
        self.check("203.0.113.77", CORE1, CORE_ROUTER_MAC)
        self.client.delete(mid)                             # the /8 again
        self.check("203.0.113.5", CORE2, PEER_MAC)
        self.client.delete(wide)                            # the default again
        self.check("203.9.9.9", CORE1, CORE_ROUTER_MAC)

"""Shared base of the BNG PTF tests: P4Runtime through the controller's own
client, table names from the P4Info, punt/drop codes from the build's
enums.json, packets built with scapy from the RFC layouts.

Topology (run_ptf.py): switch ports 1 and 2 are access ports (subscribers),
3 and 4 are core ports; port 0 is the CPU port. PTF sends and receives on
the other end of each port's veth.
"""
from __future__ import annotations

import json
import queue
import struct
from pathlib import Path

import ptf
import ptf.testutils as tu
from p4.v1 import p4runtime_pb2 as p4r
from ptf.base_tests import BaseTest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Dot1AD, Dot1Q, Ether
from scapy.layers.ppp import PPP, PPPoE
from scapy.packet import Raw

from bng_controller.p4runtime_client import P4RuntimeClient

ACCESS1, ACCESS2, CORE1, CORE2 = 1, 2, 3, 4

BNG_MAC = "02:bb:00:00:00:01"         # the BNG's MAC on every port
CLIENT_MAC = "02:cc:00:00:00:01"      # a subscriber's CPE
CORE_ROUTER_MAC = "02:ee:00:00:00:01"  # next hop on the core side
PEER_MAC = "02:ee:00:00:00:02"        # next hop toward an L2TP peer
BNG_IP = "100.64.0.1"                 # the BNG's core address, L2TP endpoint
PEER_IP = "100.64.0.2"                # L2TP peer (LNS for LAC tests, LAC for LNS tests)
GATEWAY_IP = "10.0.0.1"               # subscribers' gateway (the BNG)
CLIENT_IP = "10.0.0.10"
INTERNET_IP = "198.51.100.7"
CLIENT_V6_PREFIX = 0x2001_0db8_0001_0000
SESSION_ID = 0x0042
SESS_IDX = 7


def mac_int(mac: str) -> int:
    return int(mac.replace(":", ""), 16)


def ip_int(ip: str) -> int:
    a, b, c, d = (int(x) for x in ip.split("."))
    return (a << 24) | (b << 16) | (c << 8) | d


def l2tp_data(tunnel_id: int, session_id: int, flags: int = 0x0002, ac: bool = True,
              ns_nr: tuple[int, int] | None = None, length: int | None = None) -> bytes:
    """An L2TPv2 data header (RFC 2661 3.1), with optional fields by flag."""
    b = struct.pack("!H", flags)
    if flags & 0x4000:
        b += struct.pack("!H", length or 0)
    b += struct.pack("!HH", tunnel_id, session_id)
    if flags & 0x0800:
        b += struct.pack("!HH", *(ns_nr or (0, 0)))
    if flags & 0x0200:
        b += struct.pack("!H", 0)
    return b + (b"\xff\x03" if ac else b"")


def with_l2tp_length(message: bytes, extra: int = 0) -> bytes:
    """An L2TP message (header, then its payload) whose Length field, if its
    L bit has one, holds the message's whole length (RFC 2661 3.1), plus
    `extra` to make it wrong."""
    if not message[0] & 0x40:
        return message
    return message[:2] + struct.pack("!H", len(message) + extra) + message[4:]


def ipv4_checksum(header: bytes) -> int:
    """RFC 1071 over an IPv4 header whose checksum field is zero."""
    total = sum(struct.unpack(f"!{len(header) // 2}H", header))
    while total >> 16:
        total = (total & 0xffff) + (total >> 16)
    return ~total & 0xffff


def with_ipv4_checksum(ip_pkt, checksum: int):
    """ip_pkt with the identification that gives its IPv4 header the
    checksum `checksum` (any value but 0xffff, which no header with a
    non-zero word has), to send headers whose rewritten checksum lands on
    a carry of the sum or on zero."""
    pkt = ip_pkt.copy()
    pkt.id, pkt.chksum = 0, 0
    header = bytes(pkt)[:20]
    base = sum(struct.unpack("!10H", header))
    for ident in range(0x10000):
        total = base + ident
        while total >> 16:
            total = (total & 0xffff) + (total >> 16)
        if ~total & 0xffff == checksum:
            pkt.id, pkt.chksum = ident, None
            return pkt.__class__(bytes(pkt))
    raise ValueError(f"no identification gives checksum {checksum:#06x}")


def routed_ipv4(ip_pkt, ttl_decrement: int = 1) -> Raw:
    """The IPv4 packet as a router forwards it: TTL down, checksum redone.
    Computed on bytes (no scapy re-dissection) so the expectation is exact."""
    b = bytearray(bytes(ip_pkt))
    b[8] -= ttl_decrement
    b[10:12] = b"\0\0"
    b[10:12] = struct.pack("!H", ipv4_checksum(bytes(b[:20])))
    return Raw(bytes(b))


def routed_ipv6(ip_pkt) -> Raw:
    b = bytearray(bytes(ip_pkt))
    b[7] -= 1
    return Raw(bytes(b))


def vlan_layers(s_vid: int, c_vid: int, s_tpid: int = 0x88a8):
    """Ether type chain for untagged, single-tag and QinQ lines."""
    if s_vid and c_vid:
        return (Dot1AD if s_tpid == 0x88a8 else Dot1Q)(vlan=s_vid) / Dot1Q(vlan=c_vid)
    if s_vid:
        return Dot1Q(vlan=s_vid)
    return None


def access_frame(payload, s_vid=0, c_vid=0, src=CLIENT_MAC, dst=BNG_MAC, s_tpid=0x88a8):
    tags = vlan_layers(s_vid, c_vid, s_tpid)
    eth = Ether(src=src, dst=dst)
    return eth / tags / payload if tags is not None else eth / payload


class BngTest(BaseTest):
    """One P4Runtime primary per test; every table is emptied before and
    after, counters are compared as deltas."""

    def setUp(self):
        BaseTest.setUp(self)
        self.dataplane = ptf.dataplane_instance
        self.dataplane.flush()
        params = tu.test_params_get()
        build = Path(params["build_dir"])
        self.client = P4RuntimeClient(params["grpc_addr"], election_id=(0, 1000))
        self.client.connect()
        self.client.use_p4info(P4RuntimeClient.load_p4info(str(build / "bng.p4info.txtpb")))
        enums = json.loads((build / "bng.enums.json").read_text())
        self.PUNT = enums["PuntReason_t"]["members"]
        self.DROP = enums["DropReason_t"]["members"]
        self.clear_tables()
        self.install_ports()
        while not self.client.packet_ins.empty():
            self.client.packet_ins.get_nowait()

    def tearDown(self):
        self.clear_tables()
        self.client.close()
        BaseTest.tearDown(self)

    # ---- P4Runtime helpers ----
    def clear_tables(self) -> None:
        entries = [e for e in self.client.read_table() if not e.is_default_action]
        if entries:
            self.client.delete(*entries)

    def insert(self, table: str, match: dict, action: str, **params) -> p4r.TableEntry:
        e = self.client.table_entry(table, match, action, params)
        self.client.insert(e)
        return e

    def counter(self, name: str, index: int) -> tuple[int, int]:
        d = self.client.read_counter(name, index)
        return d.packet_count, d.byte_count

    def drops(self, reason: str) -> tuple[int, int]:
        return self.counter("drops", self.DROP[reason])

    def assert_counter_delta(self, before, name, index, packets, bytes_=None):
        after = self.counter(name, index)
        self.assertEqual(after[0] - before[0], packets, f"{name}[{index}] packets")
        if bytes_ is not None:
            self.assertEqual(after[1] - before[1], bytes_, f"{name}[{index}] bytes")

    def set_meter(self, name: str, index: int, cir: int, cburst: int, pir: int, pburst: int) -> None:
        me = p4r.MeterEntry(meter_id=self.client.names.meter(name).preamble.id)
        me.index.index = index
        me.config.cir, me.config.cburst, me.config.pir, me.config.pburst = cir, cburst, pir, pburst
        self.client.write([(p4r.Update.MODIFY, p4r.Entity(meter_entry=me))])

    def reset_meter(self, name: str, index: int) -> None:
        me = p4r.MeterEntry(meter_id=self.client.names.meter(name).preamble.id)
        me.index.index = index
        self.client.write([(p4r.Update.MODIFY, p4r.Entity(meter_entry=me))])

    def packet_in(self, timeout: float = 2.0) -> tuple[dict[str, int], bytes]:
        try:
            pin = self.client.packet_ins.get(timeout=timeout)
        except queue.Empty:
            self.fail("no PacketIn arrived")
        return self.client.packet_in_metadata(pin), pin.payload

    def expect_drop(self, port: int, frame, reason: str = "MALFORMED") -> None:
        """The frame is neither forwarded nor punted, and counted once as
        a drop for `reason`."""
        before = self.drops(reason)
        self.send(port, frame)
        self.expect_nothing()
        self.assert_no_packet_in(timeout=0.2)
        self.assertEqual(self.drops(reason)[0] - before[0], 1, f"{reason} not counted")

    def assert_no_packet_in(self, timeout: float = 0.5) -> None:
        try:
            pin = self.client.packet_ins.get(timeout=timeout)
        except queue.Empty:
            return
        self.fail(f"unexpected PacketIn {self.client.packet_in_metadata(pin)}")

    # ---- the topology's standing entries ----
    def install_ports(self) -> None:
        """As the controller does: every port takes packet_out, only the core
        ports route IP (my_station)."""
        for port in (ACCESS1, ACCESS2, CORE1, CORE2):
            self.insert("packet_out_port", {"egress_port": port}, "send", port=port)
        for port in (CORE1, CORE2):
            self.insert("my_station", {"port": port, "dst_mac": mac_int(BNG_MAC)}, "set_my_station")

    def install_core_route(self, prefix="0.0.0.0", plen=0, nexthop_id=1, port=CORE1,
                           dmac=CORE_ROUTER_MAC, vid=0) -> None:
        self.insert("nexthop", {"nexthop_id": nexthop_id}, "set_l2", port=port,
                    smac=mac_int(BNG_MAC), dmac=mac_int(dmac), vid=vid)
        self.insert("fib_v4", {"dst_ipv4": (ip_int(prefix), plen)}, "set_nexthop", nexthop_id=nexthop_id)

    def install_subscriber(self, line_id=5, **session) -> None:
        """A default route to the core, an untagged line on ACCESS1 and one
        PPPoE session on it: the setting of most single-session tests."""
        self.install_core_route()
        self.install_line(line_id=line_id)
        self.install_pppoe_session(line_id=line_id, **session)

    def install_line(self, line_id=5, port=ACCESS1, s_vid=0, c_vid=0) -> None:
        self.insert("line_map", {"port": port, "s_vid": s_vid, "c_vid": c_vid}, "set_line",
                    line_id=line_id)

    def install_pppoe_session(self, line_id=5, port=ACCESS1, s_vid=0, c_vid=0, mss=0,
                              s_tpid=None, session_id=SESSION_ID, sess_idx=SESS_IDX,
                              client_ip=CLIENT_IP, client_mac=CLIENT_MAC, mru=1492) -> None:
        """What the controller installs when IPCP opens: three entries. The
        s-tag's TPID defaults to what vlan_layers() puts on the line; mru:
        the largest IPv4 packet the session takes downstream."""
        if s_tpid is None:
            s_tpid = 0x88a8 if c_vid else 0x8100
        common = {"port": port, "s_vid": s_vid, "c_vid": c_vid, "session_id": session_id,
                  "src_mac": mac_int(client_mac)}
        self.insert("pppoe_up_v4", {**common, "src_ipv4": ip_int(client_ip)}, "pppoe_term",
                    sess_idx=sess_idx, mss_clamp=mss, line_id=line_id)
        self.insert("pppoe_session", common, "pppoe_term", sess_idx=sess_idx, mss_clamp=mss,
                    line_id=line_id)
        self.insert("ipv4_session", {"dst_ipv4": ip_int(client_ip)}, "to_pppoe",
                    sess_idx=sess_idx, port=port, client_mac=mac_int(client_mac),
                    bng_mac=mac_int(BNG_MAC), s_tpid=s_tpid, s_vid=s_vid, c_vid=c_vid,
                    pppoe_session_id=session_id, mss_clamp=mss, max_len=mru)

    def install_tunnel(self, tunnel_idx=3, peer_tunnel_id=0x1111, nexthop_id=2,
                       port=CORE2, peer_port=1701, local_action="set_local") -> None:
        """local_action: set_local where LNS sessions may terminate at
        BNG_IP, set_local_no_lns at a LAC-only endpoint."""
        self.insert("nexthop", {"nexthop_id": nexthop_id}, "set_l2", port=port,
                    smac=mac_int(BNG_MAC), dmac=mac_int(PEER_MAC), vid=0)
        self.insert("l2tp_tunnel", {"tunnel_idx": tunnel_idx}, "set_tunnel",
                    local_ip=ip_int(BNG_IP), peer_ip=ip_int(PEER_IP), peer_tunnel_id=peer_tunnel_id,
                    peer_port=peer_port, nexthop_id=nexthop_id)
        self.insert("local_ipv4", {"addr": ip_int(BNG_IP)}, local_action)

    # ---- packets ----
    @staticmethod
    def pppoe_ip(ip_pkt, session_id=SESSION_ID, proto=0x0021):
        return PPPoE(sessionid=session_id) / PPP(proto=proto) / ip_pkt

    @staticmethod
    def l2tp_over_ip(payload: bytes, src=PEER_IP, dst=BNG_IP, smac=PEER_MAC, dmac=BNG_MAC,
                     ttl=64, sport=1701, dport=1701):
        return (Ether(src=smac, dst=dmac) / IP(src=src, dst=dst, ttl=ttl, id=0, flags=0)
                / UDP(sport=sport, dport=dport, chksum=0) / Raw(payload))

    def send(self, port: int, pkt) -> None:
        tu.send_packet(self, port, pkt)

    def expect(self, pkt, port: int) -> None:
        """Byte-exact: the packet is compared as built (lengths and checksums
        computed by scapy from the RFC layouts, not by the switch)."""
        tu.verify_packet(self, Ether(bytes(pkt)), port)

    def expect_nothing(self) -> None:
        tu.verify_no_other_packets(self, timeout=0.5)

"""Malformed input is dropped and counted, never forwarded garbled; session
policers; TCP MSS clamping."""
import struct

from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from bng_base import (ACCESS1, BNG_IP, BNG_MAC, CLIENT_IP, CLIENT_MAC, CORE1, CORE_ROUTER_MAC,
                      INTERNET_IP, PEER_IP, PEER_MAC, SESS_IDX, SESSION_ID, BngTest, access_frame, ip_int,
                      l2tp_data, routed_ipv4, with_l2tp_length)

CLIENT_V6 = "2001:db8:1::10"          # in CLIENT_V6_PREFIX


def with_ipv6_payload_len(ip6: bytes, payload_len: int) -> bytes:
    return ip6[:4] + struct.pack("!H", payload_len) + ip6[6:]


def pppoe_session_raw(session_id: int, length: int, ppp: bytes, ver_type=0x11, code=0) -> bytes:
    return struct.pack("!BBHH", ver_type, code, session_id, length) + ppp


class MalformedTest(BngTest):
    def setUp(self):
        BngTest.setUp(self)
        self.install_subscriber()


class MalformedPppoe(MalformedTest):
    """Truncated PPPoE, PPPoE length beyond the frame or below 2 (discovery
    too), session id 0, wrong version/type, PPPoE length disagreeing with
    the IPv4 or IPv6 length, IPv4 shorter than its header, IPv6 of another
    version."""

    def runTest(self):
        ip = bytes(IP(src=CLIENT_IP, dst=INTERNET_IP) / UDP(sport=1, dport=2) / Raw(b"p" * 10))
        good = pppoe_session_raw(SESSION_ID, len(ip) + 2, b"\x00\x21" + ip)
        short = bytes(IP(src=CLIENT_IP, dst=INTERNET_IP, len=10, proto=17))
        ip6 = bytes(IPv6(src=CLIENT_V6, dst="2001:db8:ffff::1") / UDP(sport=1, dport=2) / Raw(b"q" * 10))
        assert len(short) == 20 and IP(short).len == 10
        eth = Ether(src=CLIENT_MAC, dst=BNG_MAC, type=0x8864)
        # sanity: the well-formed one is forwarded
        self.send(ACCESS1, eth / Raw(good))
        self.assertIsNotNone(self.dataplane.poll(port_number=CORE1, timeout=2).packet)
        cases = {
            "truncated in the IPv4 header": eth / Raw(good[:6 + 2 + 12]),
            "truncated in the PPPoE header": eth / Raw(good[:4]),
            "length beyond the frame": eth / Raw(pppoe_session_raw(SESSION_ID, len(ip) + 200, b"\x00\x21" + ip)),
            "session id 0": eth / Raw(pppoe_session_raw(0, len(ip) + 2, b"\x00\x21" + ip)),
            "version/type 0x21": eth / Raw(pppoe_session_raw(SESSION_ID, len(ip) + 2, b"\x00\x21" + ip, ver_type=0x21)),
            "code not 0": eth / Raw(pppoe_session_raw(SESSION_ID, len(ip) + 2, b"\x00\x21" + ip, code=7)),
            "length shorter than the IPv4 packet": eth / Raw(pppoe_session_raw(SESSION_ID, len(ip) - 4, b"\x00\x21" + ip)),
            # lengths agree (PPPoE 12 = PPP 2 + IPv4 10) and the checksum is
            # right, but an IPv4 packet is never shorter than its header
            "IPv4 total length below its header": eth / Raw(pppoe_session_raw(SESSION_ID, 12, b"\x00\x21" + short)),
            "length below the PPP protocol": eth / Raw(pppoe_session_raw(SESSION_ID, 1, b"\x00\x21" + ip)),
            "IPv6 length disagreeing with PPPoE's": eth / Raw(pppoe_session_raw(
                SESSION_ID, len(ip6) + 2, b"\x00\x57" + with_ipv6_payload_len(ip6, len(ip6) - 40 + 4))),
            "IPv6 version 5": eth / Raw(pppoe_session_raw(SESSION_ID, len(ip6) + 2, b"\x00\x57" + b"\x50" + ip6[1:])),
            "discovery length beyond the frame": Ether(src=CLIENT_MAC, dst="ff:ff:ff:ff:ff:ff", type=0x8863)
            / Raw(pppoe_session_raw(0, 200, b"\x01\x01\x00\x00", code=0x09)),
        }
        for name, frame in cases.items():
            with self.subTest(case=name):
                self.expect_drop(ACCESS1, frame)


class MalformedIpv4(MalformedTest):
    """IPv4 with options, and a bad header checksum, from a subscriber and
    from the core; from the core also IPv4 shorter than its header, IPv4 and
    IPv6 lengths beyond the frame, IPv6 of another version."""

    def runTest(self):
        opts = IP(src=CLIENT_IP, dst=INTERNET_IP, options=[b"\x01\x01\x01\x00"]) / UDP()
        self.expect_drop(ACCESS1, access_frame(self.pppoe_ip(opts)))
        bad = bytearray(bytes(IP(src=CLIENT_IP, dst=INTERNET_IP) / UDP()))
        bad[10] ^= 0xff
        self.expect_drop(ACCESS1, access_frame(self.pppoe_ip(Raw(bytes(bad)))), "BAD_CHECKSUM")
        core = bytearray(bytes(IP(src=INTERNET_IP, dst=CLIENT_IP) / UDP()))
        core[11] ^= 0x01
        self.expect_drop(CORE1, Ether(src=CORE_ROUTER_MAC, dst=BNG_MAC, type=0x0800) / Raw(bytes(core)),
                         "BAD_CHECKSUM")
        self.expect_drop(CORE1, Ether(src=CORE_ROUTER_MAC, dst=BNG_MAC, type=0x0800) / Raw(bytes(core)[:15]))
        from_core = Ether(src=CORE_ROUTER_MAC, dst=BNG_MAC, type=0x0800)
        from_core6 = Ether(src=CORE_ROUTER_MAC, dst=BNG_MAC, type=0x86dd)
        v6 = IPv6(src="2001:db8:ffff::1", dst=CLIENT_V6)
        cases = {
            "core IPv4 with options": from_core / IP(src=INTERNET_IP, dst=CLIENT_IP, options=[b"\x01\x01\x01\x00"])
            / UDP(),
            "core IPv4 total length below its header": from_core / Raw(bytes(IP(src=INTERNET_IP, dst=CLIENT_IP, len=10,
                                                                                 proto=17))),
            "core IPv4 total length beyond the frame": from_core / Raw(bytes(IP(src=INTERNET_IP, dst=CLIENT_IP, len=200)
                                                                             / UDP() / Raw(b"z" * 10))),
            "core IPv6 payload length beyond the frame": from_core6 / Raw(bytes(IPv6(src="2001:db8:ffff::1", dst=CLIENT_V6,
                                                                                    plen=300) / UDP())),
            "core IPv6 version 5": from_core6 / Raw(b"\x50" + bytes(v6 / UDP())[1:]),
        }
        for name, frame in cases.items():
            with self.subTest(case=name):
                self.expect_drop(CORE1, frame)


class MalformedL2tp(MalformedTest):
    """L2TP with a version other than 2; a non-zero Offset Size (padding is
    not supported: dropped, counted as UNSUPPORTED); UDP and IPv4 lengths
    that disagree; a Length field (L bit) that is not the whole message; in
    an LNS session, inner IPv4 with options, with a length other than what
    L2TP carries, or shorter than its header."""

    def runTest(self):
        self.insert("local_ipv4", {"addr": 0x64400001}, "set_local")
        ppp = b"\x00\x21" + bytes(IP(src=CLIENT_IP, dst=INTERNET_IP) / UDP())
        self.expect_drop(3, self.l2tp_over_ip(struct.pack("!HHH", 0x0003, 1, 1) + ppp))
        self.expect_drop(3, self.l2tp_over_ip(struct.pack("!HHHH", 0x0202, 1, 1, 4) + b"\0" * 4 + ppp),
                         "UNSUPPORTED")
        wrong_udp = (Ether(src=PEER_MAC, dst=BNG_MAC) / IP(src=PEER_IP, dst=BNG_IP)
                     / UDP(sport=1701, dport=1701, len=8 + 6 + len(ppp) + 10, chksum=0)
                     / Raw(l2tp_data(1, 1) + ppp))
        self.expect_drop(3, wrong_udp)
        # an LNS session (tunnel 1, session 1): its inner IPv4 is checked too
        key = {"local_ip": ip_int(BNG_IP), "peer_ip": ip_int(PEER_IP), "tunnel_id": 1, "session_id": 1}
        self.insert("l2tp_session", key, "lns_term", sess_idx=SESS_IDX, mss_clamp=0)
        self.insert("l2tp_up_v4", {**key, "src_ipv4": ip_int(CLIENT_IP)}, "lns_term", sess_idx=SESS_IDX,
                    mss_clamp=0)
        inner = bytes(IP(src=CLIENT_IP, dst=INTERNET_IP) / UDP() / Raw(b"i" * 8))
        self.send(3, self.l2tp_over_ip(l2tp_data(1, 1) + b"\x00\x21" + inner))   # sanity: routed
        self.assertIsNotNone(self.dataplane.poll(port_number=CORE1, timeout=2).packet)
        with_length = l2tp_data(1, 1, flags=0x4002) + b"\x00\x21" + inner
        self.send(3, self.l2tp_over_ip(with_l2tp_length(with_length)))   # a right Length: routed
        self.assertIsNotNone(self.dataplane.poll(port_number=CORE1, timeout=2).packet)
        short = bytes(IP(src=CLIENT_IP, dst=INTERNET_IP, len=10, proto=17))
        # UDP and the outer IPv4 claim PPP 0x0021 + those 10 bytes: lengths
        # agree all the way down, the frame's last 10 bytes are padding
        carried = l2tp_data(1, 1) + b"\x00\x21" + short
        claims_10 = (Ether(src=PEER_MAC, dst=BNG_MAC) / IP(src=PEER_IP, dst=BNG_IP, len=20 + 8 + len(carried) - 10)
                     / UDP(sport=1701, dport=1701, len=8 + len(carried) - 10, chksum=0) / Raw(carried))
        cases = {
            "inner IPv4 with options": self.l2tp_over_ip(l2tp_data(1, 1) + b"\x00\x21" + bytes(
                IP(src=CLIENT_IP, dst=INTERNET_IP, options=[b"\x01\x01\x01\x00"]) / UDP())),
            "inner IPv4 length disagreeing with L2TP's": self.l2tp_over_ip(
                l2tp_data(1, 1) + b"\x00\x21" + inner[:2] + struct.pack("!H", len(inner) + 4) + inner[4:]),
            "inner IPv4 total length below its header": claims_10,
            "L2TP Length 1 beyond the message": self.l2tp_over_ip(with_l2tp_length(with_length, 1)),
            "L2TP Length 1 short of the message": self.l2tp_over_ip(with_l2tp_length(with_length, -1)),
            "L2TP Length 0": self.l2tp_over_ip(with_length),
        }
        for name, frame in cases.items():
            with self.subTest(case=name):
                self.expect_drop(3, frame)


class SessionPolicer(BngTest):
    """A session's upstream and downstream meters each drop what exceeds
    their rate (POLICER); the session counters count only what passed; the
    one direction's rate leaves the other alone."""

    def policed(self, meter: str, counter: str, frame, in_port: int, out_port: int) -> None:
        """1 kB/s with a 3 kB burst on `meter`: 3 of 10 back-to-back 1000-byte
        packets pass, 7 are counted as POLICER drops."""
        self.set_meter(meter, SESS_IDX, cir=1000, cburst=3000, pir=1000, pburst=3000)
        try:
            before = self.drops("POLICER")
            counted = self.counter(counter, SESS_IDX)
            for _ in range(10):
                self.send(in_port, frame)
            passed = 0
            while self.dataplane.poll(port_number=out_port, timeout=1).packet is not None:
                passed += 1
            self.assertEqual(passed, 3, meter)
            self.assertEqual(self.drops("POLICER")[0] - before[0], 7, meter)
            self.assert_counter_delta(counted, counter, SESS_IDX, 3, 3000)
        finally:
            self.reset_meter(meter, SESS_IDX)
        # without a rate, everything passes again (the default profile)
        self.send(in_port, frame)
        self.assertIsNotNone(self.dataplane.poll(port_number=out_port, timeout=2).packet)

    def runTest(self):
        self.install_subscriber()
        up = IP(src=CLIENT_IP, dst=INTERNET_IP) / UDP(sport=1, dport=2) / Raw(b"m" * 972)   # 1000 bytes
        down = IP(src=INTERNET_IP, dst=CLIENT_IP) / UDP(sport=2, dport=1) / Raw(b"n" * 972)
        self.assertEqual(len(up), 1000)
        up_frame = access_frame(self.pppoe_ip(up))
        down_frame = Ether(src=CORE_ROUTER_MAC, dst=BNG_MAC) / down
        self.policed("session_meter_up", "session_up", up_frame, ACCESS1, CORE1)
        self.policed("session_meter_down", "session_down", down_frame, CORE1, ACCESS1)
        # a rate on one direction only: the other passes all ten
        self.set_meter("session_meter_up", SESS_IDX, cir=1000, cburst=3000, pir=1000, pburst=3000)
        try:
            for _ in range(10):
                self.send(CORE1, down_frame)
            passed = 0
            while self.dataplane.poll(port_number=ACCESS1, timeout=1).packet is not None:
                passed += 1
            self.assertEqual(passed, 10)
        finally:
            self.reset_meter("session_meter_up", SESS_IDX)


class MssClamp(BngTest):
    """SYN with MSS 1460 from and to a session with clamp 1452 is rewritten
    with a correct TCP checksum, also where that checksum is 0; a smaller
    MSS and non-SYN segments are left alone; sessions without a clamp are
    untouched."""

    def runTest(self):
        self.install_subscriber(mss=1452)

        def syn(src, dst, mss, flags="S", seq=1):
            return IP(src=src, dst=dst, ttl=64) / TCP(sport=40000, dport=443, flags=flags, seq=seq,
                                                      options=[("MSS", mss), ("NOP", None), ("NOP", None)])

        def clamped(pkt, mss):
            out = IP(bytes(pkt))
            out[TCP].options = [("MSS", mss), ("NOP", None), ("NOP", None)]
            out.ttl -= 1
            del out.chksum
            del out[TCP].chksum
            return out

        up = syn(CLIENT_IP, INTERNET_IP, 1460)
        self.send(ACCESS1, access_frame(self.pppoe_ip(up)))
        self.expect(Ether(src=BNG_MAC, dst=CORE_ROUTER_MAC) / clamped(up, 1452), CORE1)
        # a sequence number whose low word is the clamped checksum with that
        # word 0 sums the clamped segment to 0xffff: its checksum is 0
        c0 = IP(bytes(clamped(syn(CLIENT_IP, INTERNET_IP, 1460, seq=0x10000), 1452)))[TCP].chksum
        to_zero = syn(CLIENT_IP, INTERNET_IP, 1460, seq=0x10000 + c0)
        self.assertEqual(IP(bytes(clamped(to_zero, 1452)))[TCP].chksum, 0)
        self.send(ACCESS1, access_frame(self.pppoe_ip(to_zero)))
        self.expect(Ether(src=BNG_MAC, dst=CORE_ROUTER_MAC) / clamped(to_zero, 1452), CORE1)
        down = syn(INTERNET_IP, CLIENT_IP, 1460, flags="SA")
        self.send(CORE1, Ether(src=CORE_ROUTER_MAC, dst=BNG_MAC) / down)
        self.expect(access_frame(self.pppoe_ip(clamped(down, 1452)), src=BNG_MAC, dst=CLIENT_MAC), ACCESS1)
        small = syn(CLIENT_IP, INTERNET_IP, 1400)
        self.send(ACCESS1, access_frame(self.pppoe_ip(small)))
        self.expect(Ether(src=BNG_MAC, dst=CORE_ROUTER_MAC) / clamped(small, 1400), CORE1)
        ack = syn(CLIENT_IP, INTERNET_IP, 1460, flags="A")
        self.send(ACCESS1, access_frame(self.pppoe_ip(ack)))
        self.expect(Ether(src=BNG_MAC, dst=CORE_ROUTER_MAC) / clamped(ack, 1460), CORE1)
        # A SYN tunnelled in L2TP (UDP 1701 with a checksum) to the
        # subscriber is the tunnel's, not the subscriber's own: clamping it
        # would leave the outer UDP checksum wrong. It goes through whole.
        inner = b"\x00\x21" + bytes(syn("192.0.2.1", "192.0.2.2", 1460))
        tunnelled = IP(src=INTERNET_IP, dst=CLIENT_IP, ttl=64) / UDP(sport=1701, dport=1701) / Raw(
            l2tp_data(0x0101, 0x0202) + inner)
        self.assertNotEqual(IP(bytes(tunnelled))[UDP].chksum, 0)
        self.send(CORE1, Ether(src=CORE_ROUTER_MAC, dst=BNG_MAC) / tunnelled)
        self.expect(access_frame(self.pppoe_ip(routed_ipv4(tunnelled)), src=BNG_MAC, dst=CLIENT_MAC), ACCESS1)
        # a session without a clamp (0) on the same line: left alone
        self.install_pppoe_session(session_id=0x0043, sess_idx=SESS_IDX + 1, client_ip="10.0.0.11",
                                   client_mac="02:cc:00:00:00:02", mss=0)
        other = syn("10.0.0.11", INTERNET_IP, 1460)
        self.send(ACCESS1, access_frame(self.pppoe_ip(other, session_id=0x0043), src="02:cc:00:00:00:02"))
        self.expect(Ether(src=BNG_MAC, dst=CORE_ROUTER_MAC) / clamped(other, 1460), CORE1)

"""Malformed input is dropped and counted, never forwarded garbled; session
policers; TCP MSS clamping."""
import struct

from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from bng_base import (ACCESS1, BNG_MAC, CLIENT_IP, CLIENT_MAC, CORE1, CORE_ROUTER_MAC,
                      INTERNET_IP, SESS_IDX, SESSION_ID, BngTest, access_frame, l2tp_data, routed_ipv4)


def pppoe_session_raw(session_id: int, length: int, ppp: bytes, ver_type=0x11, code=0) -> bytes:
    return struct.pack("!BBHH", ver_type, code, session_id, length) + ppp


class MalformedTest(BngTest):
    def setUp(self):
        BngTest.setUp(self)
        self.install_subscriber()


class MalformedPppoe(MalformedTest):
    """Truncated PPPoE, PPPoE length beyond the frame, session id 0, wrong
    version/type, PPPoE length disagreeing with the IPv4 length."""

    def runTest(self):
        ip = bytes(IP(src=CLIENT_IP, dst=INTERNET_IP) / UDP(sport=1, dport=2) / Raw(b"p" * 10))
        good = pppoe_session_raw(SESSION_ID, len(ip) + 2, b"\x00\x21" + ip)
        short = bytes(IP(src=CLIENT_IP, dst=INTERNET_IP, len=10, proto=17))
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
        }
        for name, frame in cases.items():
            with self.subTest(case=name):
                self.expect_drop(ACCESS1, frame)


class MalformedIpv4(MalformedTest):
    """IPv4 with options, and a bad header checksum, from a subscriber and
    from the core."""

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


class MalformedL2tp(MalformedTest):
    """L2TP with a version other than 2; a non-zero Offset Size (padding is
    not supported: dropped, counted as UNSUPPORTED)."""

    def runTest(self):
        self.insert("local_ipv4", {"addr": 0x64400001}, "set_local")
        ppp = b"\x00\x21" + bytes(IP(src=CLIENT_IP, dst=INTERNET_IP) / UDP())
        self.expect_drop(3, self.l2tp_over_ip(struct.pack("!HHH", 0x0003, 1, 1) + ppp))
        self.expect_drop(3, self.l2tp_over_ip(struct.pack("!HHHH", 0x0202, 1, 1, 4) + b"\0" * 4 + ppp),
                         "UNSUPPORTED")


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

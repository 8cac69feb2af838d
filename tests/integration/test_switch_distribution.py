"""Software distribution: a port with one queue pair (libpcap here, as a
NIC whose RSS cannot hash PPPoE would be) shared by two workers through the
switch's I/O thread. Every frame arrives, each subscriber's frames in
order, both workers get a share, and the flow hash keys on the subscriber.

Topology: h1 -- [port 1, libpcap, distributed] SWITCH (2 workers)
[port 2, af_packet, distributed] -- h2. Two workers on a 2-core box share
cores: this checks behaviour, not speed.
"""
from __future__ import annotations

import re
import socket
import struct
import time

import grpc
import pytest
from scapy.layers.l2 import Ether

from bng_controller.p4runtime_client import P4RuntimeClient
from bng_lab import netlab
from bng_switch import libbsw
from tests.support import SwitchProcess, program_files, two_hosts

pytestmark = pytest.mark.root

FLOWS, PER_FLOW = 48, 12


def pppoe_frame(flow: int, seq: int, session_id: int | None = None) -> bytes:
    """A PPPoE session frame (IPv4 inside) from subscriber `flow`, its
    sequence number in the payload."""
    sid = flow + 1 if session_id is None else session_id
    ip = bytes([0x45, 0, 0, 28, 0, seq & 0xff, 0, 0, 64, 17, 0, 0, 100, 64, 0, flow, 198, 51, 100, 7])
    payload = ip + struct.pack("!HHHH", 1000, 2000, 8, 0) + struct.pack("!IH", seq, flow)
    ppp = struct.pack("!H", 0x0021) + payload
    pppoe = struct.pack("!BBHH", 0x11, 0, sid, len(ppp)) + ppp
    src = bytes([2, 0x10, 0, 0, 0, flow])
    return bytes.fromhex("02aabbccddee") + src + struct.pack("!H", 0x8864) + pppoe


@pytest.fixture(scope="module")
def dist_lab(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dist")
    with two_hosts() as hosts:
        h1, h2, t1, t2 = hosts.h1, hosts.h2, hosts.t1, hosts.t2
        for ns, dev in ((h1, t1), (h2, t2)):       # no IPv6 chatter in the counts
            netlab.sh("ip", "netns", "exec", ns, "sysctl", "-qw", f"net.ipv6.conf.{dev}.disable_ipv6=1")
        sw = hosts.switch = SwitchProcess(tmp, f"ds{hosts.lab.tag}", [
            {"id": 1, "type": "libpcap", "iface": hosts.sw1, "distribute": True},
            {"id": 2, "type": "af_packet", "iface": hosts.sw2, "distribute": True},
        ], workers=2).start()
        p4info, dc = program_files("switch_test")
        c = P4RuntimeClient(sw.address, election_id=(0, 10))
        assert c.connect().status.code == grpc.StatusCode.OK.value[0]
        c.set_pipeline(P4RuntimeClient.load_p4info(str(p4info)), dc.read_bytes())
        c.insert(*[c.table_entry("port_fwd", {"in_port": a}, "forward", {"port": b}) for a, b in ((1, 2), (2, 1))])
        yield {"sw": sw, "client": c, "h1": h1, "h2": h2, "t1": t1, "t2": t2}
        c.close()


def distributor_line(sw: SwitchProcess, port: int) -> tuple[int, list[int]]:
    """The switch's latest stats line for a distributed port: rx, per worker."""
    for line in reversed(sw.output):
        m = re.search(rf"port {port} distributor: rx (\d+) \(dropped \d+\) per worker \[([\d, ]+)\]", line)
        if m:
            return int(m.group(1)), [int(x) for x in m.group(2).split(",")]
    return 0, []


def test_every_frame_arrives_in_order_per_subscriber_spread_over_both_workers(dist_lab):
    rx = netlab.raw_socket(dist_lab["t2"], dist_lab["h2"], timeout=0.5)
    rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    tx = netlab.raw_socket(dist_lab["t1"], dist_lab["h1"])
    rx_before, per_before = distributor_line(dist_lab["sw"], 1)
    sent = 0
    for seq in range(PER_FLOW):
        for flow in range(FLOWS):
            tx.send(pppoe_frame(flow, seq))
            sent += 1
        time.sleep(0.01)
    tx.close()
    got: dict[int, list[int]] = {}
    deadline = time.time() + 10
    while sum(map(len, got.values())) < sent and time.time() < deadline:
        try:
            data = rx.recv(2048)
        except TimeoutError:
            continue
        e = Ether(data)
        if e.type != 0x8864:
            continue
        seq, flow = struct.unpack("!IH", data[14 + 8 + 28:14 + 8 + 34])
        got.setdefault(flow, []).append(seq)
    rx.close()
    assert sum(map(len, got.values())) == sent, {f: len(s) for f, s in got.items()}
    for flow, seqs in got.items():
        assert seqs == list(range(PER_FLOW)), (flow, seqs)     # one subscriber, one worker: in order
    time.sleep(2.2)                                            # the next stats lines
    rx_after, per_after = distributor_line(dist_lab["sw"], 1)
    assert rx_after - rx_before >= sent
    shares = [a - b for a, b in zip(per_after, per_before or [0, 0])]
    print("frames per worker:", shares)
    assert all(s > sent // 5 for s in shares), shares          # 48 subscribers, both workers busy


def test_the_flow_hash_keys_on_the_subscriber():
    lib = libbsw.Library()
    h = lib.flow_hash
    # the same subscriber: whatever the packet's sequence or IP id
    assert h(pppoe_frame(3, 0)) == h(pppoe_frame(3, 7))
    # another PPPoE session id from the same MAC, another subscriber
    assert h(pppoe_frame(3, 0, session_id=99)) != h(pppoe_frame(3, 0))
    # the subscribers spread: 48 of them over 2 and over 4 workers
    for n in (2, 4):
        buckets = [0] * n
        for f in range(FLOWS):
            buckets[h(pppoe_frame(f, 0)) % n] += 1
        assert min(buckets) >= FLOWS // n // 3, buckets
    # a subscriber's traffic stays on one worker, whose meters police it
    # (hashed by 5-tuple, four destinations meant four workers' full rates)
    one = pppoe_frame(3, 0)
    upstream = [one[:-18] + bytes([198, 51, 100, d]) + one[-14:] for d in range(40)]     # IPv4 destinations
    assert len({h(f) for f in upstream}) == 1

    def downstream_v4(src: int, dst: bytes) -> bytes:
        ip = bytes([0x45, 0, 0, 20, 0, 0, 0, 0, 64, 6, 0, 0, 203, 0, 113, src]) + dst
        return bytes.fromhex("02aabbccddee02bbccddeeff0800") + ip

    def downstream_v6(src: int, dst: str) -> bytes:
        ip = bytes([0x60, 0, 0, 0, 0, 0, 6, 64]) + bytes(15) + bytes([src]) + socket.inet_pton(socket.AF_INET6, dst)
        return bytes.fromhex("02aabbccddee02bbccddeeff86dd") + ip

    assert len({h(downstream_v4(s, bytes([100, 64, 0, 9]))) for s in range(40)}) == 1
    assert len({h(downstream_v4(1, bytes([100, 64, 0, d]))) for d in range(40)}) > 1
    in_one_pd = [f"2001:db8:100:{n:x}::{n + 1:x}" for n in range(0, 256, 7)]     # one /56, many /64s
    assert len({h(downstream_v6(s, a)) for s, a in enumerate(in_one_pd)}) == 1
    assert len({h(downstream_v6(1, f"2001:db8:100:{n:x}00::1")) for n in range(1, 40)}) > 1
    # truncated frames hash without reading past their end
    for cut in (0, 5, 13, 14, 18, 21, 30, 40):
        h(pppoe_frame(1, 0)[:cut])

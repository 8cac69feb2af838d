"""The switch and its P4Runtime server, end to end, with the switch_test program.

Topology: host h1 (namespace) -- sw1 [port 1] SWITCH [port 2] sw2 -- host h2
(namespace); port 0 is the CPU port. Packets are real frames on veths.
"""
from __future__ import annotations

import json
import socket
import time

import grpc
import pytest
from p4.v1 import p4runtime_pb2 as p4r
from scapy.layers.inet import ICMP, IP, UDP
from scapy.layers.l2 import Ether

from bng_controller.p4runtime_client import P4RuntimeClient, WriteError
from bng_lab import netlab
from bng_switch import packet_socket
from tests.support import SwitchProcess, program_files, two_hosts

pytestmark = pytest.mark.root

H1_MAC, H2_MAC = "02:00:00:00:01:01", "02:00:00:00:02:02"
H1_MAC_INT = int(H1_MAC.replace(":", ""), 16)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("switch")
    with two_hosts() as hosts:
        h1, h2, t1, t2 = hosts.h1, hosts.h2, hosts.t1, hosts.t2
        for ns, dev, mac, ip in ((h1, t1, H1_MAC, "10.9.0.1/24"), (h2, t2, H2_MAC, "10.9.0.2/24")):
            netlab.sh("ip", "-n", ns, "link", "set", dev, "address", mac)
            netlab.sh("ip", "-n", ns, "addr", "add", ip, "dev", dev)
        # Static neighbours: no ARP chatter to disturb the counters.
        netlab.sh("ip", "-n", h1, "neigh", "replace", "10.9.0.2", "lladdr", H2_MAC, "dev", t1)
        netlab.sh("ip", "-n", h2, "neigh", "replace", "10.9.0.1", "lladdr", H1_MAC, "dev", t2)
        sw = hosts.switch = SwitchProcess(tmp, f"st{hosts.lab.tag}", [
            {"id": 1, "type": "af_packet", "iface": hosts.sw1},
            {"id": 2, "type": "af_packet", "iface": hosts.sw2},
        ], packet_socket=str(tmp / "pktio.sock")).start()
        yield {"lab": hosts.lab, "sw": sw, "h1": h1, "h2": h2, "t1": t1, "t2": t2,
               "pktio": str(tmp / "pktio.sock")}


@pytest.fixture(scope="module")
def client(lab):
    p4info_path, device_config = program_files("switch_test")
    c = P4RuntimeClient(lab["sw"].address, election_id=(0, 10))
    arb = c.connect()
    assert arb.status.code == grpc.StatusCode.OK.value[0]
    c.set_pipeline(P4RuntimeClient.load_p4info(str(p4info_path)), device_config.read_bytes())
    yield c
    c.close()


def wire(client):
    return [client.table_entry("port_fwd", {"in_port": a}, "forward", {"port": b}) for a, b in ((1, 2), (2, 1))]


def ping(ns: str, dst: str, count: int = 3) -> bool:
    return netlab.sh("ip", "netns", "exec", ns, "ping", "-c", str(count), "-i", "0.2", "-W", "1", dst,
                     check=False).returncode == 0


def test_forwards_between_namespaces_and_stops_when_entries_go(lab, client):
    client.insert(*wire(client))
    assert ping(lab["h1"], "10.9.0.2")
    client.delete(*wire(client))
    assert client.read_table("port_fwd") == []
    assert not ping(lab["h1"], "10.9.0.2", count=2)


def test_counter_counts_exact_packets_and_bytes(lab, client):
    before = client.read_counter("port_rx", 1)
    s = netlab.raw_socket(lab["t1"], lab["h1"])
    frame = bytes(Ether(src=H1_MAC, dst=H2_MAC) / IP(src="10.9.0.1", dst="10.9.0.2") / UDP() / (b"x" * 50))
    for _ in range(7):
        s.send(frame)
    s.close()
    want_bytes = 7 * (14 + 20 + 8 + 50)
    deadline = time.time() + 5
    while time.time() < deadline:
        after = client.read_counter("port_rx", 1)
        if after.packet_count - before.packet_count >= 7:
            break
        time.sleep(0.1)
    assert after.packet_count - before.packet_count == 7
    assert after.byte_count - before.byte_count == want_bytes


def test_punt_gives_packet_in_with_metadata(lab, client):
    acl = client.table_entry("punt_acl", {"ether_type": (0x88B5, 0xFFFF)}, "punt", {"reason": 1}, priority=10)
    client.insert(acl)
    try:
        frame = bytes(Ether(src=H1_MAC, dst="ff:ff:ff:ff:ff:ff", type=0x88B5) / (b"punt-me" * 8))
        s = netlab.raw_socket(lab["t1"], lab["h1"])
        s.send(frame)
        s.close()
        pin = client.packet_ins.get(timeout=5)
        assert client.packet_in_metadata(pin) == {"ingress_port": 1, "reason": 1, "_pad0": 0, "_pad1": 0}
        assert pin.payload == frame
    finally:
        client.delete(acl)


def packet_out_reaches_port_2(lab, client, frame: bytes) -> bytes | None:
    """Sends frame by packet-out to port 2 (installing packet_out_port's
    entry for it if none is there); the frame as h2 got it, or None."""
    if not client.read_table("packet_out_port"):
        client.insert(client.table_entry("packet_out_port", {"egress_port": 2}, "forward", {"port": 2}))
    s = netlab.raw_socket(lab["t2"], lab["h2"], timeout=3)
    client.packet_out(frame, egress_port=2)
    deadline = time.time() + 5
    got = None
    while time.time() < deadline:
        try:
            data = s.recv(4096)
        except TimeoutError:
            break
        if data == frame:
            got = data
            break
    s.close()
    return got


def test_packet_out_leaves_the_chosen_port_untouched(lab, client):
    frame = bytes(Ether(src="02:00:00:00:00:99", dst=H2_MAC, type=0x88B6) / (b"from-controller" * 4))
    assert packet_out_reaches_port_2(lab, client, frame) == frame


def test_a_packet_out_larger_than_an_mbuf_is_refused_and_the_next_one_goes_out(lab, client):
    """A payload of 64 KiB + 64 once slipped past the size check (a 16-bit
    length in DPDK's append) and was copied past the end of a 2 KiB mbuf."""
    while not client.stream_errors.empty():
        client.stream_errors.get()
    for size in (3000, 65536 + 64):
        client.packet_out(b"\xab" * size, egress_port=2)
        err = client.stream_errors.get(timeout=5)
        assert err.canonical_code == grpc.StatusCode.INVALID_ARGUMENT.value[0], err
        assert "does not fit one mbuf" in err.message and len(err.packet_out.packet_out.payload) == size
    frame = bytes(Ether(src="02:00:00:00:00:98", dst=H2_MAC, type=0x88B6) / (b"after-the-big-one" * 4))
    assert packet_out_reaches_port_2(lab, client, frame) == frame


def test_lpm_and_ternary_entries_read_back(client):
    route = client.table_entry("ipv4_route", {"dst_addr": (0x0A090000, 16)}, "forward", {"port": 2})
    client.insert(route)
    read = client.read_table("ipv4_route")
    assert len(read) == 1
    assert read[0].match[0].lpm.prefix_len == 16
    client.delete(route)
    assert client.read_table("ipv4_route") == []


@pytest.mark.parametrize("case", ["unknown_table", "wrong_bitwidth", "duplicate", "delete_missing"])
def test_bad_writes_get_the_right_error_and_change_nothing(client, case):
    good = client.table_entry("l2_fwd", {"dst_addr": 0x020000000202}, "forward", {"port": 2})
    client.insert(good)
    try:
        before = client.read_table()
        if case == "unknown_table":
            bad = p4r.TableEntry()
            bad.CopyFrom(good)
            bad.table_id = 0x7FFFFFF
            want = grpc.StatusCode.NOT_FOUND
            op = client.insert
        elif case == "wrong_bitwidth":
            bad = client.table_entry("l2_fwd", {"dst_addr": b"\x01" * 7}, "forward", {"port": 2})
            want = grpc.StatusCode.INVALID_ARGUMENT
            op = client.insert
        elif case == "duplicate":
            bad, want, op = good, grpc.StatusCode.ALREADY_EXISTS, client.insert
        else:
            bad = client.table_entry("l2_fwd", {"dst_addr": 0x020000000999})
            want, op = grpc.StatusCode.NOT_FOUND, client.delete
        with pytest.raises(WriteError) as e:
            op(bad)
        assert [x.code for x in e.value.errors] == [want]
        if case == "wrong_bitwidth":
            assert "dst_addr" in e.value.errors[0].message
        assert client.read_table() == before
    finally:
        client.delete(good)


def test_batch_with_one_bad_update_applies_the_others(client):
    ok1 = client.table_entry("l2_fwd", {"dst_addr": 0x1}, "forward", {"port": 1})
    bad = client.table_entry("l2_fwd", {"dst_addr": 0x2}, "forward", {"port": 1})
    bad.action.action.params[0].param_id = 99
    ok2 = client.table_entry("l2_fwd", {"dst_addr": 0x3}, "forward", {"port": 2})
    with pytest.raises(WriteError) as e:
        client.insert(ok1, bad, ok2)
    assert [(x.index, x.code) for x in e.value.errors] == [(1, grpc.StatusCode.INVALID_ARGUMENT)]
    assert len(client.read_table("l2_fwd")) == 2
    client.delete(ok1, ok2)


def test_non_primary_write_is_refused_and_primary_keeps_going(lab, client):
    backup = P4RuntimeClient(lab["sw"].address, election_id=(0, 5))
    arb = backup.connect()
    assert arb.status.code == grpc.StatusCode.ALREADY_EXISTS.value[0]
    backup.use_p4info(client.names.p4info)
    entry = client.table_entry("l2_fwd", {"dst_addr": 0x77}, "forward", {"port": 1})
    with pytest.raises(WriteError) as e:
        backup.insert(entry)
    assert e.value.rpc_error.code() == grpc.StatusCode.PERMISSION_DENIED
    assert client.read_table("l2_fwd") == []
    backup.close()
    client.insert(entry)
    client.delete(entry)


def test_meter_and_register(client):
    m = client.names.meter("port_meter")
    me = p4r.MeterEntry(meter_id=m.preamble.id)
    me.index.index = 3
    me.config.cir, me.config.cburst, me.config.pir, me.config.pburst = 1000, 1500, 2000, 3000
    client.write([(p4r.Update.MODIFY, p4r.Entity(meter_entry=me))])
    q = p4r.MeterEntry(meter_id=m.preamble.id)
    q.index.index = 3
    got = client.read(p4r.Entity(meter_entry=q))[0].meter_entry
    assert (got.config.cir, got.config.pir) == (1000, 2000)
    # per-colour counts come with every read (nothing has crossed it yet)
    assert got.HasField("counter_data") and got.counter_data == p4r.MeterCounterData(
        green=p4r.CounterData(), yellow=p4r.CounterData(), red=p4r.CounterData())
    # and cannot be written (SWX has no way to set them)
    me.counter_data.red.packet_count = 5
    with pytest.raises(WriteError) as e:
        client.write([(p4r.Update.MODIFY, p4r.Entity(meter_entry=me))])
    assert [x.code for x in e.value.errors] == [grpc.StatusCode.INVALID_ARGUMENT]
    assert client.read(p4r.Entity(meter_entry=q))[0].meter_entry.config == got.config
    r = client.names.register("scratch")
    re_ = p4r.RegisterEntry(register_id=r.preamble.id)
    re_.index.index = 5
    re_.data.bitstring = b"\x12\x34"
    client.write([(p4r.Update.MODIFY, p4r.Entity(register_entry=re_))])
    q = p4r.RegisterEntry(register_id=r.preamble.id)
    q.index.index = 5
    assert client.read(p4r.Entity(register_entry=q))[0].register_entry.data.bitstring == b"\x12\x34"


def _above(client, by: int = 10) -> tuple[int, int]:
    """An election id above client's (which _primary_again raises)."""
    return client.election_id[0], client.election_id[1] + by


def _primary_again(client) -> None:
    """After a higher election id (_above(client)) left, the switch has no
    primary (P4Runtime spec 5): client takes over with an id above it, and
    waits until it is told it is primary."""
    client.send_arbitration(_above(client, 20))
    while client.arbitration.get(timeout=5).status.code != grpc.StatusCode.OK.value[0]:
        pass


def test_forwarding_survives_client_disconnect_and_new_primary(lab, client):
    client.insert(*wire(client))
    try:
        other = P4RuntimeClient(lab["sw"].address, election_id=_above(client))
        assert other.connect().status.code == grpc.StatusCode.OK.value[0]
        other.close()
        assert ping(lab["h1"], "10.9.0.2", count=2)
        # Until a client claims it again there is no primary: no writes.
        with pytest.raises(WriteError) as e:
            client.insert(client.table_entry("l2_fwd", {"dst_addr": 0x78}, "forward", {"port": 1}))
        assert e.value.rpc_error.code() == grpc.StatusCode.PERMISSION_DENIED
        _primary_again(client)
        assert len(client.read_table("port_fwd")) == 2
    finally:
        client.delete(*wire(client))


def test_a_standby_controller_takes_over_above_the_highest_election_id(lab, client):
    """The controller's client (a standby, configured with a lower id) finds
    the switch without a primary once the primary above it has left,
    and claims the role above the highest id the switch saw; while the
    primary was there it stayed a backup."""
    import asyncio

    from bng_controller.p4runtime_async import AsyncP4RuntimeClient, NotPrimary

    other = P4RuntimeClient(lab["sw"].address, election_id=_above(client))
    assert other.connect().status.code == grpc.StatusCode.OK.value[0]
    highest = other.election_id

    standby = AsyncP4RuntimeClient(lab["sw"].address, election_id=(0, 3))

    async def open_standby() -> tuple[int, int]:
        try:
            await standby._open(5)
            return standby.election_id
        finally:
            await standby._close()

    with pytest.raises(NotPrimary):
        asyncio.run(open_standby())
    other.close()
    deadline = time.time() + 5        # until the switch has seen the stream close
    while True:
        try:
            claimed = asyncio.run(open_standby())
            break
        except NotPrimary:
            assert time.time() < deadline, "the switch kept a primary after it left"
            time.sleep(0.1)
    assert claimed == (highest[0], highest[1] + 1)
    _primary_again(client)
    # its next connection starts from its configured id again: a claimed id
    # must not outrank a configured primary once a restarted switch has
    # forgotten the ids it saw
    with pytest.raises(NotPrimary):
        asyncio.run(open_standby())
    assert standby.election_id == (0, 3)


def _channel(path: str, election_id: tuple[int, int], role: str = "") -> tuple[socket.socket, bytes]:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(5)
    s.connect(path)
    s.send(packet_socket.MAGIC + json.dumps({"device_id": 1, "election_id": list(election_id),
                                              "role": role}).encode())
    return s, s.recv(4096)


def test_packet_channel_only_for_the_primary_and_carries_packets_both_ways(lab, client):
    """The local packet channel (packet_socket) next to the stream: refused to
    an election id that is not primary, and for the primary the same packets,
    with the same P4Info metadata ids, as PacketIn/PacketOut."""
    s, reply = _channel(lab["pktio"], (0, 5))
    assert reply.startswith(b"ERR") and b"not the primary" in reply
    s.close()
    s, reply = _channel(lab["pktio"], client.election_id, role="acl-only")
    assert reply.startswith(b"ERR") and b"default role" in reply
    s.close()
    s, reply = _channel(lab["pktio"], client.election_id)
    assert reply == b"OK"
    pin_hdr = {m.name: m.id for m in client.names.controller_header("packet_in").metadata}
    pout_hdr = {m.name: m.id for m in client.names.controller_header("packet_out").metadata}
    acl = client.table_entry("punt_acl", {"ether_type": (0x88B5, 0xFFFF)}, "punt", {"reason": 1}, priority=10)
    client.insert(acl)
    if not client.read_table("packet_out_port"):
        client.insert(client.table_entry("packet_out_port", {"egress_port": 2}, "forward", {"port": 2}))
    try:
        frame = bytes(Ether(src=H1_MAC, dst="ff:ff:ff:ff:ff:ff", type=0x88B5) / (b"via-socket" * 6))
        raw = netlab.raw_socket(lab["t1"], lab["h1"])
        raw.send(frame)
        raw.close()
        fields, payload = packet_socket.decode(s.recv(65536))
        assert payload == frame
        assert dict(fields)[pin_hdr["ingress_port"]] == 1 and dict(fields)[pin_hdr["reason"]] == 1
        assert client.packet_ins.empty(), "a packet-in went to the stream as well"

        rx = netlab.raw_socket(lab["t2"], lab["h2"], timeout=3)
        out = bytes(Ether(src="02:00:00:00:00:98", dst=H2_MAC, type=0x88B6) / (b"out-socket" * 5))
        s.send(packet_socket.encode([(pout_hdr["egress_port"], 2)], out))
        got, deadline = None, time.time() + 5
        while got is None and time.time() < deadline:
            try:
                data = rx.recv(4096)
            except TimeoutError:
                break
            got = data if data == out else None
        rx.close()
        assert got == out
    finally:
        s.close()
        client.delete(acl)
    # without a channel client, packet-ins take the stream again
    time.sleep(0.3)
    client.insert(acl)
    try:
        raw = netlab.raw_socket(lab["t1"], lab["h1"])
        raw.send(frame)
        raw.close()
        assert client.packet_ins.get(timeout=5).payload == frame
    finally:
        client.delete(acl)


def test_packet_channel_drops_bad_packet_outs_and_ends_when_its_client_is_no_longer_primary(lab, client):
    """Packet-outs naming an unknown metadata id or a value wider than its
    field are dropped, the channel keeps serving; a higher election id
    taking the primary role closes the old primary's channel at once."""
    if not client.read_table("packet_out_port"):
        client.insert(client.table_entry("packet_out_port", {"egress_port": 2}, "forward", {"port": 2}))
    pout_hdr = {m.name: (m.id, m.bitwidth) for m in client.names.controller_header("packet_out").metadata}
    port_id, port_bits = pout_hdr["egress_port"]
    s, reply = _channel(lab["pktio"], client.election_id)
    assert reply == b"OK"
    rx = netlab.raw_socket(lab["t2"], lab["h2"], timeout=0.5)
    try:
        frames = {tag: bytes(Ether(src="02:00:00:00:00:97", dst=H2_MAC, type=0x88B6) / (tag * 8))
                  for tag in (b"unknown-id", b"too-wide", b"good-one")}
        s.send(packet_socket.encode([(port_id, 2), (99999, 1)], frames[b"unknown-id"]))
        s.send(packet_socket.encode([(port_id, (1 << port_bits) | 2)], frames[b"too-wide"]))
        s.send(packet_socket.encode([(port_id, 2)], frames[b"good-one"]))
        seen, deadline = set(), time.time() + 3
        while time.time() < deadline:
            try:
                data = rx.recv(4096)
            except TimeoutError:
                break
            seen |= {tag for tag, f in frames.items() if data == f}
        assert seen == {b"good-one"}

        other = P4RuntimeClient(lab["sw"].address, election_id=_above(client))
        try:
            assert other.connect().status.code == grpc.StatusCode.OK.value[0]
            s.settimeout(3)
            while s.recv(65536):        # a packet-in punted meanwhile may come first
                pass
        finally:
            other.close()
    finally:
        rx.close()
        s.close()
    _primary_again(client)


def _send_and_count_at_h2(lab, frame: bytes, n: int) -> int:
    """Sends n copies of frame from h1 and counts the copies h2 receives."""
    rx = netlab.raw_socket(lab["t2"], lab["h2"], timeout=0.5)
    tx = netlab.raw_socket(lab["t1"], lab["h1"])
    for _ in range(n):
        tx.send(frame)
        time.sleep(0.02)
    tx.close()
    got = 0
    deadline = time.time() + 3
    while time.time() < deadline:
        try:
            data = rx.recv(4096)
        except TimeoutError:
            break
        got += data[:len(frame)] == frame
    rx.close()
    return got


def _direct_counter(client, entry: p4r.TableEntry) -> p4r.CounterData:
    return client.read(p4r.Entity(direct_counter_entry=p4r.DirectCounterEntry(table_entry=entry)))[0] \
        .direct_counter_entry.data


def _direct_meter_counters(client, entry: p4r.TableEntry) -> p4r.MeterCounterData:
    return client.read(p4r.Entity(direct_meter_entry=p4r.DirectMeterEntry(table_entry=entry)))[0] \
        .direct_meter_entry.counter_data


def test_direct_counter_and_meter_belong_to_their_entry(lab, client):
    """host_policy counts (direct counter) and polices (direct meter) by
    source MAC: the counter and meter are named by the table entry."""
    frame = bytes(Ether(src=H1_MAC, dst=H2_MAC) / IP(src="10.9.0.1", dst="10.9.0.2") / UDP() / (b"d" * 50))
    size = 14 + 20 + 8 + 50          # the program counts Ethernet header + IPv4 total length
    host = client.table_entry("host_policy", {"src_addr": H1_MAC_INT}, "police_host", {})
    other = client.table_entry("host_policy", {"src_addr": 0x02AA00000001}, "police_host", {})
    client.insert(*wire(client), other, host)
    try:
        assert _direct_counter(client, host) == p4r.CounterData()
        assert _send_and_count_at_h2(lab, frame, 7) == 7
        want = p4r.CounterData(packet_count=7, byte_count=7 * size)
        deadline = time.time() + 5
        while _direct_counter(client, host) != want and time.time() < deadline:
            time.sleep(0.1)
        assert _direct_counter(client, host) == want
        assert _direct_counter(client, other) == p4r.CounterData(), "another entry's counter moved"
        # the same data with the entry, when a table read asks for it
        q = client.table_entry("host_policy", {"src_addr": H1_MAC_INT})
        q.counter_data.SetInParent()
        assert client.read(p4r.Entity(table_entry=q))[0].table_entry.counter_data == want
        # a wildcard read gives every entry of the table
        assert len(client.read(p4r.Entity(direct_counter_entry=p4r.DirectCounterEntry(
            table_entry=p4r.TableEntry(table_id=host.table_id))))) == 2
        # written by the controller
        dce = p4r.DirectCounterEntry(table_entry=host, data=p4r.CounterData(packet_count=1, byte_count=2))
        client.write([(p4r.Update.MODIFY, p4r.Entity(direct_counter_entry=dce))])
        assert _direct_counter(client, host) == p4r.CounterData(packet_count=1, byte_count=2)

        # a meter with room for one frame (burst 100 bytes, 1 byte/s)
        dme = p4r.DirectMeterEntry(table_entry=host)
        dme.config.cir, dme.config.cburst, dme.config.pir, dme.config.pburst = 1, 100, 1, 100
        client.write([(p4r.Update.MODIFY, p4r.Entity(direct_meter_entry=dme))])
        got = client.read(p4r.Entity(direct_meter_entry=p4r.DirectMeterEntry(table_entry=host)))[0]
        assert got.direct_meter_entry.config == dme.config
        assert got.direct_meter_entry.counter_data == p4r.MeterCounterData(
            green=p4r.CounterData(), yellow=p4r.CounterData(), red=p4r.CounterData())
        assert _send_and_count_at_h2(lab, frame, 5) == 1
        # per colour: the frame that passed green, the four dropped red
        want_colours = p4r.MeterCounterData(green=p4r.CounterData(packet_count=1, byte_count=size),
                                            yellow=p4r.CounterData(),
                                            red=p4r.CounterData(packet_count=4, byte_count=4 * size))
        assert _direct_meter_counters(client, host) == want_colours
        # the same counts with the entry, when a table read asks for them;
        # they cannot be written
        q = client.table_entry("host_policy", {"src_addr": H1_MAC_INT})
        q.meter_counter_data.SetInParent()
        assert client.read(p4r.Entity(table_entry=q))[0].table_entry.meter_counter_data == want_colours
        bad = client.table_entry("host_policy", {"src_addr": H1_MAC_INT}, "police_host", {})
        bad.meter_counter_data.green.packet_count = 1
        with pytest.raises(WriteError) as e:
            client.write([(p4r.Update.MODIFY, p4r.Entity(table_entry=bad))])
        assert [x.code for x in e.value.errors] == [grpc.StatusCode.INVALID_ARGUMENT]
        assert _direct_meter_counters(client, host) == want_colours
        # a config-less write resets the meter (and, as SWX does, its
        # colour counts): everything passes again, green
        client.write([(p4r.Update.MODIFY, p4r.Entity(direct_meter_entry=p4r.DirectMeterEntry(table_entry=host)))])
        assert not client.read(p4r.Entity(direct_meter_entry=p4r.DirectMeterEntry(table_entry=host)))[0] \
            .direct_meter_entry.HasField("config")
        assert _send_and_count_at_h2(lab, frame, 3) == 3
        assert _direct_meter_counters(client, host).green == p4r.CounterData(packet_count=3, byte_count=3 * size)
        assert _direct_meter_counters(client, other).green == p4r.CounterData(), "another entry's meter moved"

        # a deleted entry's slot starts from zero for the next entry, and an
        # insert may carry its meter config
        client.delete(host)
        host.meter_config.CopyFrom(dme.config)
        client.insert(host)
        assert _direct_counter(client, host) == p4r.CounterData()
        assert _send_and_count_at_h2(lab, frame, 4) == 1
    finally:
        client.delete(*wire(client), other, host)


def test_direct_resource_errors(lab, client):
    l2 = client.table_entry("l2_fwd", {"dst_addr": 0x66}, "forward", {"port": 1})
    missing = client.table_entry("host_policy", {"src_addr": 0x02AA000000FF}, "police_host", {})
    with pytest.raises(grpc.RpcError) as e:      # a table without a direct counter
        client.read(p4r.Entity(direct_counter_entry=p4r.DirectCounterEntry(table_entry=l2)))
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    dce = p4r.DirectCounterEntry(table_entry=missing, data=p4r.CounterData(packet_count=1))
    with pytest.raises(WriteError) as e:         # no such entry
        client.write([(p4r.Update.MODIFY, p4r.Entity(direct_counter_entry=dce))])
    assert [x.code for x in e.value.errors] == [grpc.StatusCode.NOT_FOUND]
    l2.counter_data.packet_count = 3
    with pytest.raises(WriteError) as e:         # counter_data for a table without one
        client.insert(l2)
    assert [x.code for x in e.value.errors] == [grpc.StatusCode.INVALID_ARGUMENT]
    assert client.read_table("l2_fwd") == []
    bad = client.table_entry("host_policy", {"src_addr": 0x02AA000000FE}, "police_host", {})
    bad.meter_config.cir, bad.meter_config.pir = 10, 5
    with pytest.raises(WriteError) as e:         # cir above pir
        client.insert(bad)
    assert [x.code for x in e.value.errors] == [grpc.StatusCode.INVALID_ARGUMENT]
    assert client.read_table("host_policy") == []


def test_reconcile_onto_a_new_program_keeps_entries_and_direct_meter_configs(lab, client):
    """RECONCILE_AND_COMMIT with a different program (here: the same one
    with a changed spec text) rebuilds the pipeline and reinstalls the
    entries; a direct meter keeps its config and polices as before, an
    indirect meter keeps its config (a BNG's per-subscriber policers were
    lost) and a default entry the client set stays set."""
    p4info_path, device_config = program_files("switch_test")
    p4info = P4RuntimeClient.load_p4info(str(p4info_path))
    bundle = json.loads(device_config.read_bytes())
    bundle["spec"] += "\n// rebuilt by RECONCILE_AND_COMMIT\n"
    changed = json.dumps(bundle).encode()
    frame = bytes(Ether(src=H1_MAC, dst=H2_MAC) / IP(src="10.9.0.1", dst="10.9.0.2") / UDP() / (b"r" * 50))
    host = client.table_entry("host_policy", {"src_addr": H1_MAC_INT}, "police_host", {})
    host.meter_config.cir, host.meter_config.cburst, host.meter_config.pir, host.meter_config.pburst = 1, 100, 1, 100
    client.insert(*wire(client), host)
    m = client.names.meter("port_meter")
    me = p4r.MeterEntry(meter_id=m.preamble.id)
    me.index.index = 6
    me.config.cir, me.config.cburst, me.config.pir, me.config.pburst = 1000, 1500, 2000, 3000
    client.write([(p4r.Update.MODIFY, p4r.Entity(meter_entry=me))])
    default = client.table_entry("l2_fwd", None, "forward", {"port": 2}, default=True)
    client.write([(p4r.Update.MODIFY, p4r.Entity(table_entry=default))])
    reconcile = p4r.SetForwardingPipelineConfigRequest.RECONCILE_AND_COMMIT
    try:
        client.set_pipeline(p4info, changed, action=reconcile)
        assert len(client.read_table("port_fwd")) == 2
        got = client.read(p4r.Entity(direct_meter_entry=p4r.DirectMeterEntry(table_entry=host)))[0]
        assert got.direct_meter_entry.config == host.meter_config
        assert _send_and_count_at_h2(lab, frame, 4) == 1
        q = p4r.MeterEntry(meter_id=m.preamble.id)
        q.index.index = 6
        assert client.read(p4r.Entity(meter_entry=q))[0].meter_entry.config == me.config
        q = client.table_entry("l2_fwd", None, None, None, default=True)
        got = client.read(p4r.Entity(table_entry=q))[0].table_entry
        assert got.action.action.action_id == client.names.action("forward").preamble.id
    finally:
        client.delete(*wire(client), host)
        me.ClearField("config")
        client.write([(p4r.Update.MODIFY, p4r.Entity(meter_entry=me))])
        client.write([(p4r.Update.MODIFY, p4r.Entity(table_entry=client.table_entry("l2_fwd", None, None, None,
                                                                                      default=True)))])
        client.set_pipeline(p4info, device_config.read_bytes(), action=reconcile)


def test_commit_and_cookie_codes_follow_the_spec(client):
    """Spec 14 and 15: COMMIT with nothing saved is NOT_FOUND and with a
    config INVALID_ARGUMENT (nothing changes either way); a config set
    without a cookie reads back without one."""
    p4info_path, device_config = program_files("switch_test")
    p4info = P4RuntimeClient.load_p4info(str(p4info_path))
    A = p4r.SetForwardingPipelineConfigRequest

    def set_raw(action, with_config: bool, cookie: int | None = None) -> None:
        req = A(device_id=1, action=action)
        req.election_id.high, req.election_id.low = client.election_id
        if with_config:
            req.config.p4info.CopyFrom(p4info)
            req.config.p4_device_config = device_config.read_bytes()
            if cookie is not None:
                req.config.cookie.cookie = cookie
        client.stub.SetForwardingPipelineConfig(req)

    for with_config, code in ((False, grpc.StatusCode.NOT_FOUND), (True, grpc.StatusCode.INVALID_ARGUMENT)):
        with pytest.raises(grpc.RpcError) as e:
            set_raw(A.COMMIT, with_config)
        assert e.value.code() == code
    set_raw(A.RECONCILE_AND_COMMIT, True)           # the running program: state kept
    get = client.stub.GetForwardingPipelineConfig(p4r.GetForwardingPipelineConfigRequest(device_id=1))
    assert not get.config.HasField("cookie")
    set_raw(A.RECONCILE_AND_COMMIT, True, cookie=7)
    get = client.stub.GetForwardingPipelineConfig(p4r.GetForwardingPipelineConfigRequest(device_id=1))
    assert get.config.cookie.cookie == 7


def test_verify_has_dpdk_check_the_spec_and_changes_nothing(client):
    """VERIFY and VERIFY_AND_SAVE check the config as DPDK would build it:
    a spec whose action writes a field the program does not have passes
    the switch's own reading but not DPDK's, so VERIFY says
    INVALID_ARGUMENT with DPDK's reason instead of COMMIT failing later;
    the running program is untouched either way."""
    p4info_path, device_config = program_files("switch_test")
    p4info = P4RuntimeClient.load_p4info(str(p4info_path))
    bundle = json.loads(device_config.read_bytes())
    good = "mov m.local_metadata_forwarded 0x1"
    assert good in bundle["spec"]
    bad = dict(bundle, spec=bundle["spec"].replace(good, "mov m.local_metadata_no_such_field 0x1", 1))
    A = p4r.SetForwardingPipelineConfigRequest
    before = client.stub.GetForwardingPipelineConfig(p4r.GetForwardingPipelineConfigRequest(device_id=1))

    def set_raw(action, config: bytes) -> None:
        req = A(device_id=1, action=action)
        req.election_id.high, req.election_id.low = client.election_id
        req.config.p4info.CopyFrom(p4info)
        req.config.p4_device_config = config
        client.stub.SetForwardingPipelineConfig(req)

    set_raw(A.VERIFY, device_config.read_bytes())
    for action in (A.VERIFY, A.VERIFY_AND_SAVE):
        with pytest.raises(grpc.RpcError) as e:
            set_raw(action, json.dumps(bad).encode())
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "DPDK refuses the spec" in e.value.details(), e.value.details()
    commit = A(device_id=1, action=A.COMMIT)
    commit.election_id.high, commit.election_id.low = client.election_id
    with pytest.raises(grpc.RpcError) as e:          # nothing was saved
        client.stub.SetForwardingPipelineConfig(commit)
    assert e.value.code() == grpc.StatusCode.NOT_FOUND
    after = client.stub.GetForwardingPipelineConfig(p4r.GetForwardingPipelineConfigRequest(device_id=1))
    assert after == before

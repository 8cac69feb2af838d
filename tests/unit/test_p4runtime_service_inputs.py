"""What the P4Runtime server does with client input that once went wrong
(found by an audit of p4runtime_service, table_store, device and
packet_socket): each test names the old behaviour it guards against."""
from __future__ import annotations

import errno
import json
import os
import socket
import tempfile
import threading
import time
from types import SimpleNamespace

import grpc
import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as p4r

from bng_switch import swx_spec
from bng_switch.device import DEVICE_CONFIG_FORMAT, Device, prepare
from bng_switch.p4runtime_service import P4RuntimeService, PendingWrite
from bng_switch.pipeline_map import MappingError, PipelineMap
from bng_switch.table_store import P4RuntimeError, TableStore

from .fake_pipeline import FakePipeline
from .test_table_store import DIRECT_P4INFO, DIRECT_SPEC, MAC, te, upd

SPEC = DIRECT_SPEC + "\nregarray c_0_packets size 0x4 initval 0x0\nregarray c_0_bytes size 0x4 initval 0x0\n"
P4INFO = DIRECT_P4INFO + '\ncounters { preamble { id: 70 name: "MainControlImpl.c" } spec { unit: BOTH } size: 4 }\n'


class Pipeline(FakePipeline):
    """The fake, with what the direct resources and meters call."""

    def __init__(self, spec):
        super().__init__(spec)
        self.meter_calls: list[tuple] = []
        self.lock_held: list[bool] = []
        self.owner = None

    def regarray_read(self, name, index):
        if self.owner is not None:
            self.lock_held.append(self.owner.lock._is_owned())
        return super().regarray_read(name, index)

    def table_entry_index(self, table_id, key):
        return 1

    def meter_set(self, name, index, *cfg):
        self.meter_calls.append(("set", name, index))

    def meter_reset(self, name, index):
        self.meter_calls.append(("reset", name, index))

    def meter_stats(self, name, index):
        return [0, 0, 0], [0, 0, 0]


def service(p4info: str = P4INFO, spec_text: str = SPEC):
    spec = swx_spec.parse(spec_text)
    pmap = PipelineMap(text_format.Parse(p4info, p4info_pb2.P4Info()), spec)
    fake = Pipeline(spec)
    pmap.bind(fake)
    dev = SimpleNamespace(lock=threading.RLock(), store=TableStore(pmap), pipeline=fake, meter_configs={},
                          current=SimpleNamespace(pmap=pmap), config=SimpleNamespace(device_id=1))
    fake.owner = dev
    svc = object.__new__(P4RuntimeService)
    svc.device = dev
    svc.stats = {"writes": 0, "updates": 0, "commits": 0, "packet_out": 0, "packet_out_errors": 0}
    return svc, dev, fake


def write(svc, *updates) -> list[tuple[str, str]]:
    req = p4r.WriteRequest(device_id=1)
    for u in updates:
        req.updates.add().CopyFrom(u)
    pw = PendingWrite(req)
    P4RuntimeService._commit_batch(svc, [pw])
    return [(code.name, msg) for code, msg in pw.errors]


def counter_update(index: int | None, packets: int, nbytes: int = 0) -> p4r.Update:
    u = p4r.Update(type=p4r.Update.MODIFY)
    ce = u.entity.counter_entry
    ce.counter_id = 70
    if index is not None:
        ce.index.index = index
    ce.data.packet_count, ce.data.byte_count = packets, nbytes
    return u


def test_negative_counts_are_refused_not_stored_as_2_to_the_64():
    """A count of -1 was stored as 2^64 - 1 (c_uint64), and every later read
    of that counter failed."""
    svc, dev, fake = service()
    assert write(svc, counter_update(1, -1))[0][0] == "INVALID_ARGUMENT"
    entry = te(1, [(1, "exact", MAC)], 10, [(1, b"\x01")])
    entry.counter_data.byte_count = -5
    assert write(svc, upd(p4r.Update.INSERT, entry))[0][0] == "INVALID_ARGUMENT"
    dce = p4r.Update(type=p4r.Update.MODIFY)
    write(svc, upd(p4r.Update.INSERT, te(1, [(1, "exact", MAC)], 10, [(1, b"\x01")])))
    dce.entity.direct_counter_entry.table_entry.CopyFrom(te(1, [(1, "exact", MAC)]))
    dce.entity.direct_counter_entry.data.packet_count = -2
    assert write(svc, dce)[0][0] == "INVALID_ARGUMENT"
    assert not any(v < 0 or v >= 2**63 for v in fake.regs.values())


def test_indexes_and_empty_entities_get_the_codes_the_spec_gives():
    svc, dev, _ = service()
    assert write(svc, counter_update(-1, 1))[0][0] == "INVALID_ARGUMENT"      # was OUT_OF_RANGE
    assert write(svc, counter_update(4, 1))[0][0] == "OUT_OF_RANGE"
    assert write(svc, p4r.Update(type=p4r.Update.MODIFY))[0][0] == "INVALID_ARGUMENT"   # was UNIMPLEMENTED
    with pytest.raises(P4RuntimeError) as e:
        list(svc._read_entity(p4r.Entity()))
    assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT


def test_a_read_asking_for_the_time_since_the_last_hit_is_refused():
    """P4Runtime 9.1.8: no table here supports idle timeout; such a read
    got entries without the field it asked for."""
    svc, dev, _ = service()
    write(svc, upd(p4r.Update.INSERT, te(1, [(1, "exact", MAC)], 10, [(1, b"\x01")])))
    q = p4r.Entity(table_entry=p4r.TableEntry(table_id=1))
    assert len(list(svc._read_entity(q))) == 1
    q.table_entry.time_since_last_hit.SetInParent()
    with pytest.raises(P4RuntimeError) as e:
        list(svc._read_entity(q))
    assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT and "idle timeout" in e.value.message


def test_counter_reads_hold_the_device_lock_and_stop_when_the_pipeline_is_replaced():
    """Indexed reads called the pipeline without Device.lock, which a
    SetForwardingPipelineConfig holds while it frees the pipeline: a read
    racing it used freed memory (SIGSEGV with the real library)."""
    svc, dev, fake = service()
    q = p4r.Entity()
    q.counter_entry.counter_id = 70
    reads = svc._read_entity(q)
    next(reads)
    assert fake.lock_held and all(fake.lock_held)
    dev.pipeline = Pipeline(fake.spec)          # what a pipeline change leaves behind
    with pytest.raises(P4RuntimeError) as e:
        next(reads)
    assert e.value.code == grpc.StatusCode.ABORTED


def test_an_unexpected_error_in_one_update_fails_that_update_only():
    """An exception other than P4RuntimeError/BswError (here OverflowError
    from an encoder) left the loop: the whole batch failed and what its
    earlier updates had put in the store stayed there."""
    svc, dev, _ = service()
    t = dev.current.pmap.tables[1]
    a = t.actions[10]

    def broken(values, data_size):
        raise OverflowError("int too big to convert")

    good = te(1, [(1, "exact", MAC)], 10, [(1, b"\x01")])
    bad = te(1, [(1, "exact", b"\x02" * 6)], 10, [(1, b"\x01")])
    calls = {"n": 0}
    real = a.data_from_params

    def data_from_params(params, data_size):
        calls["n"] += 1
        return real(params, data_size) if calls["n"] == 1 else None

    a.data_from_params = data_from_params         # the second entry takes the checked path...
    a.encode = broken                             # ...which fails in a way nobody planned for
    codes = write(svc, upd(p4r.Update.INSERT, good), upd(p4r.Update.INSERT, bad))
    assert [c for c, _ in codes] == ["OK", "INTERNAL"] and "OverflowError" in codes[1][1]
    assert len(dev.store.tables[1].entries) == 1


@pytest.mark.parametrize("device_config,p4info_edit,words", [
    (b"\xff\xfe", None, "not UTF-8"),
    (json.dumps({"format": DEVICE_CONFIG_FORMAT}).encode(), None, "spec must be text"),
    (json.dumps({"format": DEVICE_CONFIG_FORMAT, "spec": SPEC, "context": [1]}).encode(), None, "context an object"),
    (json.dumps({"format": DEVICE_CONFIG_FORMAT, "spec": 5}).encode(), None, "spec must be text"),
    (SPEC.encode(), lambda p: p.tables[0].action_refs.add(id=999), "do not fit together"),
])
def test_a_malformed_pipeline_config_is_invalid_argument(device_config, p4info_edit, words):
    """These raised UnicodeDecodeError, KeyError or AttributeError out of
    SetForwardingPipelineConfig: gRPC answered UNKNOWN."""
    from bng_switch.device import DeviceConfigError
    p4info = text_format.Parse(P4INFO, p4info_pb2.P4Info())
    if p4info_edit:
        p4info_edit(p4info)
    with pytest.raises((DeviceConfigError, MappingError)) as e:
        prepare(p4info, device_config)
    assert words in str(e.value)


def test_a_reconcile_whose_commit_fails_leaves_an_empty_store():
    """The reinstalled entries stayed in the new program's store though none
    reached the data plane: a later INSERT of one was ALREADY_EXISTS."""
    from bng_switch import libbsw
    svc, dev, _ = service()
    write(svc, upd(p4r.Update.INSERT, te(1, [(1, "exact", MAC)], 10, [(1, b"\x01")])),
          upd(p4r.Update.INSERT, te(4, [(1, "exact", b"\x01")], 10, [(1, b"\x02")])))
    d = object.__new__(Device)
    d.store, d.current = dev.store, dev.current
    exported = d._exported_entries()
    assert len(exported) == 2
    svc2, dev2, fake2 = service()
    d.store, d.current, d.pipeline = dev2.store, dev2.current, fake2
    fake2.fail_next_commit = errno.ENOSPC
    with pytest.raises(libbsw.BswError):
        d._reinstall(exported)
    assert all(not ts.entries for ts in dev2.store.tables.values())
    assert write(svc2, upd(p4r.Update.INSERT, te(1, [(1, "exact", MAC)], 10, [(1, b"\x01")]))) == [("OK", "")]


def test_resetting_the_default_entry_resets_its_meter_config():
    """Spec, Default Entry: a reset also resets the configurations of its
    direct resources. The meter kept its config and Read still showed it."""
    svc, dev, fake = service()
    d = te(1, [], 10, [(1, b"\x03")], default=True)
    d.meter_config.cir, d.meter_config.pir, d.meter_config.cburst, d.meter_config.pburst = 100, 200, 300, 300
    assert write(svc, upd(p4r.Update.MODIFY, d)) == [("OK", "")]
    fake.meter_calls.clear()
    assert write(svc, upd(p4r.Update.MODIFY, te(1, default=True))) == [("OK", "")]
    assert fake.meter_calls == [("reset", "l2_meter_0", 0)]
    assert dev.store.tables[1].default_meter_config is None
    prio = te(1, [], 10, [(1, b"\x03")], priority=1, default=True)
    assert write(svc, upd(p4r.Update.MODIFY, prio))[0] == ("INVALID_ARGUMENT",
                                                          "table MainControlImpl.l2_fwd: the default entry has no "
                                                          "priority (must be 0)")


@pytest.mark.parametrize("hello", [b'{"device_id": Infinity, "election_id": [0, 1]}',
                                   b'{"device_id": 1, "election_id": [1e999, 1]}', b"[" * 3000])
def test_a_packet_socket_hello_of_any_json_gets_an_answer(hello):
    """OverflowError and RecursionError escaped the hello's checks: the
    client's thread died and the client heard nothing."""
    from bng_switch.packet_socket import MAGIC, PacketSocket

    class Channel:
        def packet_channel_attach(self, fd):
            return True

        def packet_channel_serving(self):
            return True

    path = os.path.join(tempfile.mkdtemp(prefix="pktsock-"), "s")
    ps = PacketSocket(path, lambda *a: False, Channel())
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.connect(path)
        s.settimeout(5)
        s.send(MAGIC + hello)
        assert s.recv(300).startswith(b"ERR ")
        s.close()
        deadline = time.time() + 5
        while ps.stats["refused"] < 1 and time.time() < deadline:
            time.sleep(0.01)
        assert ps.stats["refused"] == 1
    finally:
        ps.close()


def test_packet_out_metadata_must_match_the_p4info():
    """Spec, Stream Error Reporting: metadata that does not match the P4Info
    is INVALID_ARGUMENT. A field left out was sent as 0; one given twice
    silently used the last value."""
    import queue
    svc, dev, _ = service(P4INFO + 'controller_packet_metadata { preamble { id: 90 name: "packet_out" }\n'
                          '  metadata { id: 1 name: "egress_port" bitwidth: 32 }'
                          ' metadata { id: 2 name: "flags" bitwidth: 8 } }\n')
    sent = []
    dev.packet_out = sent.append
    client = SimpleNamespace(election_id=(0, 1), role="", queue=queue.Queue())
    svc.arb = SimpleNamespace(primary=lambda role: client)

    def packet_out(*metadata):
        pkt = p4r.PacketOut(payload=b"frame")
        for mid, value in metadata:
            pkt.metadata.add(metadata_id=mid, value=value)
        svc._packet_out(client, pkt)
        return None if client.queue.empty() else client.queue.get_nowait().error

    assert packet_out((1, b"\x02"), (2, b"\x00")) is None and sent == [b"\x00\x00\x00\x02\x00frame"]
    err = packet_out((1, b"\x02"))
    assert err.canonical_code == grpc.StatusCode.INVALID_ARGUMENT.value[0] and "[2] missing" in err.message
    err = packet_out((1, b"\x02"), (2, b"\x00"), (1, b"\x03"))
    assert err.canonical_code == grpc.StatusCode.INVALID_ARGUMENT.value[0] and "id 1 given twice" in err.message
    assert len(sent) == 1


def test_a_meter_modify_without_an_index_sets_the_whole_array():
    """Spec, MeterEntry MODIFY: with no index every meter of the array is set
    (or reset); it was refused with INVALID_ARGUMENT."""
    svc, dev, fake = service(P4INFO + 'meters { preamble { id: 80 name: "MainControlImpl.m" }'
                                      ' spec { unit: BYTES } size: 4 }\n', SPEC + "\nmetarray m_0 size 0x4\n")
    u = p4r.Update(type=p4r.Update.MODIFY)
    u.entity.meter_entry.meter_id = 80
    cfg = u.entity.meter_entry.config
    cfg.cir, cfg.pir, cfg.cburst, cfg.pburst = 100, 200, 300, 300
    assert write(svc, u) == [("OK", "")]
    assert fake.meter_calls == [("set", "m_0", i) for i in range(4)]
    assert sorted(dev.meter_configs) == [(80, i) for i in range(4)]
    u.entity.meter_entry.ClearField("config")
    fake.meter_calls.clear()
    assert write(svc, u) == [("OK", "")]
    assert fake.meter_calls == [("reset", "m_0", i) for i in range(4)] and not dev.meter_configs

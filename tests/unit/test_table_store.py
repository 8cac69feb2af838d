"""P4Runtime table writes: validation per the spec, and the ops they become."""
import ctypes

import grpc
import pytest
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as p4r

from bng_switch import libbsw, swx_spec
from bng_switch.pipeline_map import MappingError, PipelineMap
from bng_switch.table_store import P4RuntimeError, TableStore

from .fake_pipeline import FakePipeline

SPEC = """
struct ethernet_h {
	bit<48> dst_addr
	bit<48> src_addr
	bit<16> ether_type
}
struct main_metadata_t {
	bit<32> in_port
	bit<16> ether_type
	bit<32> dst_ip
}
header ethernet instanceof ethernet_h
metadata instanceof main_metadata_t
struct forward_arg_t {
	bit<32> port
}
action NoAction args none {
	return
}
action forward args instanceof forward_arg_t {
	return
}
action drop args none {
	return
}
table l2_fwd {
	key {
		h.ethernet.dst_addr exact
	}
	actions {
		forward
		NoAction
	}
	default_action NoAction args none
	size 4
}
table route {
	key {
		m.dst_ip lpm
	}
	actions {
		forward
		NoAction
	}
	default_action NoAction args none
	size 16
}
table acl {
	key {
		m.ether_type wildcard
	}
	actions {
		forward
		drop
	}
	default_action forward args port 7
	size 16
}
table ports {
	key {
		m.in_port exact
	}
	actions {
		forward
		drop
	}
	default_action drop args none const
	size 16
}
"""

P4INFO = """
tables { preamble { id: 1 name: "MainControlImpl.l2_fwd" }
  match_fields { id: 1 name: "dst_addr" bitwidth: 48 match_type: EXACT }
  action_refs { id: 10 } action_refs { id: 11 } size: 4 }
tables { preamble { id: 2 name: "MainControlImpl.route" }
  match_fields { id: 1 name: "dst_ip" bitwidth: 32 match_type: LPM }
  action_refs { id: 10 } action_refs { id: 11 } size: 16 }
tables { preamble { id: 3 name: "MainControlImpl.acl" }
  match_fields { id: 1 name: "ether_type" bitwidth: 16 match_type: TERNARY }
  action_refs { id: 10 } action_refs { id: 12 scope: DEFAULT_ONLY } size: 16 }
tables { preamble { id: 4 name: "MainControlImpl.ports" }
  match_fields { id: 1 name: "in_port" bitwidth: 32 match_type: EXACT }
  action_refs { id: 10 } action_refs { id: 12 } const_default_action_id: 12 size: 16 }
actions { preamble { id: 10 name: "MainControlImpl.forward" } params { id: 1 name: "port" bitwidth: 32 } }
actions { preamble { id: 11 name: "NoAction" } }
actions { preamble { id: 12 name: "MainControlImpl.drop" } }
"""


@pytest.fixture
def env():
    from google.protobuf import text_format
    spec = swx_spec.parse(SPEC)
    p4info = text_format.Parse(P4INFO, p4info_pb2.P4Info())
    pmap = PipelineMap(p4info, spec)
    fake = FakePipeline(spec)
    pmap.bind(fake)
    return TableStore(pmap), fake


def te(table_id, match=(), action=None, params=(), priority=0, default=False):
    e = p4r.TableEntry(table_id=table_id, priority=priority, is_default_action=default)
    for fid, kind, *vals in match:
        fm = e.match.add(field_id=fid)
        if kind == "exact":
            fm.exact.value = vals[0]
        elif kind == "lpm":
            fm.lpm.value, fm.lpm.prefix_len = vals
        elif kind == "ternary":
            fm.ternary.value, fm.ternary.mask = vals
    if action:
        e.action.action.action_id = action
        for pid, v in params:
            e.action.action.params.add(param_id=pid, value=v)
    return e


def upd(kind, entry):
    u = p4r.Update(type=kind)
    u.entity.table_entry.CopyFrom(entry)
    return u


def apply(store, kind, entry):
    ops, undo = [], []
    store.apply(upd(kind, entry), ops, undo)
    return ops


MAC = bytes.fromhex("020000000001")


def test_exact_insert_encodes_header_key_network_order_and_args(env):
    store, _ = env
    ops = apply(store, p4r.Update.INSERT, te(1, [(1, "exact", MAC)], 10, [(1, b"\x05")]))
    assert len(ops) == 1 and ops[0].kind == libbsw.OP_ADD
    e = ops[0].entry
    assert ctypes_bytes(e, 'key', 6) == MAC
    assert ctypes_bytes(e, 'action_data', 4) == (5).to_bytes(4, "big")
    assert e.action_id == store.pmap.tables[1].actions[10].swx_id


def ctypes_bytes(entry, field, n):
    """n bytes behind a char* of a libbsw.Entry (ctypes stops c_char_p at NUL)."""
    addr = ctypes.c_void_p.from_buffer(entry, getattr(libbsw.Entry, field).offset).value
    return ctypes.string_at(addr, n)


def test_metadata_key_is_host_order(env):
    store, _ = env
    ops = apply(store, p4r.Update.INSERT, te(4, [(1, "exact", b"\x01\x02")], 10, [(1, b"\x01")]))
    assert ctypes_bytes(ops[0].entry, 'key', 4) == (0x0102).to_bytes(4, "little")


@pytest.mark.parametrize("entry,code,words", [
    (te(99, [(1, "exact", MAC)], 10, [(1, b"\x01")]), grpc.StatusCode.NOT_FOUND, "table id 99"),
    (te(1, [(1, "exact", b"\x01" * 7)], 10, [(1, b"\x01")]), grpc.StatusCode.INVALID_ARGUMENT, "48 bits"),
    (te(1, [], 10, [(1, b"\x01")]), grpc.StatusCode.INVALID_ARGUMENT, "exact field missing"),
    (te(1, [(2, "exact", MAC)], 10, [(1, b"\x01")]), grpc.StatusCode.INVALID_ARGUMENT, "match field id 2"),
    (te(1, [(1, "exact", MAC)], 12), grpc.StatusCode.INVALID_ARGUMENT, "not an action of this table"),
    (te(1, [(1, "exact", MAC)], 10), grpc.StatusCode.INVALID_ARGUMENT, "port missing"),
    (te(1, [(1, "exact", MAC)], 10, [(1, b"\x01\x00\x00\x00\x00")]), grpc.StatusCode.INVALID_ARGUMENT, "32 bits"),
    (te(1, [(1, "exact", MAC)], 10, [(1, b"\x01"), (1, b"\x02")]), grpc.StatusCode.INVALID_ARGUMENT, "twice"),
    (te(1, [(1, "exact", MAC)]), grpc.StatusCode.INVALID_ARGUMENT, "no action"),
    (te(2, [(1, "lpm", b"\x0a\x00\x00\x01", 8)], 11), grpc.StatusCode.INVALID_ARGUMENT, "beyond the /8"),
    (te(2, [(1, "lpm", b"\x0a", 0)], 11), grpc.StatusCode.INVALID_ARGUMENT, "prefix length 0"),
    (te(3, [(1, "ternary", b"\x08\x00", b"\xff\xff")], 10, [(1, b"\x01")]), grpc.StatusCode.INVALID_ARGUMENT,
     "priority > 0"),
    (te(3, [(1, "ternary", b"\x08\x01", b"\xff\x00")], 10, [(1, b"\x01")], priority=5),
     grpc.StatusCode.INVALID_ARGUMENT, "outside the mask"),
    (te(3, [(1, "ternary", b"\x08\x00", b"\xff\xff")], 12, priority=5), grpc.StatusCode.INVALID_ARGUMENT,
     "@defaultonly"),
    (te(1, [(1, "exact", MAC)], 10, [(1, b"\x01")], priority=3), grpc.StatusCode.INVALID_ARGUMENT,
     "priority must be 0"),
])
def test_bad_entries_are_refused_with_the_field_named(env, entry, code, words):
    store, _ = env
    with pytest.raises(P4RuntimeError) as e:
        apply(store, p4r.Update.INSERT, entry)
    assert e.value.code == code
    assert words in e.value.message
    assert all(not ts.entries for ts in store.tables.values())


def test_duplicate_insert_missing_delete_and_modify(env):
    store, _ = env
    entry = te(1, [(1, "exact", MAC)], 10, [(1, b"\x01")])
    apply(store, p4r.Update.INSERT, entry)
    with pytest.raises(P4RuntimeError) as e:
        apply(store, p4r.Update.INSERT, entry)
    assert e.value.code == grpc.StatusCode.ALREADY_EXISTS
    other = te(1, [(1, "exact", b"\x02" * 6)], 10, [(1, b"\x01")])
    for kind in (p4r.Update.MODIFY, p4r.Update.DELETE):
        with pytest.raises(P4RuntimeError) as e:
            apply(store, kind, other)
        assert e.value.code == grpc.StatusCode.NOT_FOUND
    ops = apply(store, p4r.Update.MODIFY, te(1, [(1, "exact", MAC)], 10, [(1, b"\x09")]))
    assert ops[0].kind == libbsw.OP_ADD and ops[0].undo.key is not None
    ops = apply(store, p4r.Update.DELETE, te(1, [(1, "exact", MAC)]))
    assert ops[0].kind == libbsw.OP_DEL
    assert not store.tables[1].entries


def test_non_canonical_values_are_the_same_key(env):
    store, _ = env
    apply(store, p4r.Update.INSERT, te(4, [(1, "exact", b"\x00\x00\x07")], 10, [(1, b"\x01")]))
    with pytest.raises(P4RuntimeError) as e:
        apply(store, p4r.Update.INSERT, te(4, [(1, "exact", b"\x07")], 10, [(1, b"\x01")]))
    assert e.value.code == grpc.StatusCode.ALREADY_EXISTS


def test_table_full(env):
    store, _ = env
    for i in range(4):
        apply(store, p4r.Update.INSERT, te(1, [(1, "exact", bytes([i + 1]))], 11))
    with pytest.raises(P4RuntimeError) as e:
        apply(store, p4r.Update.INSERT, te(1, [(1, "exact", b"\x09")], 11))
    assert e.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED


def test_wildcard_tables_rebuild_once_per_batch_with_lpm_priority(env):
    store, _ = env
    ops, undo = [], []
    store.apply(upd(p4r.Update.INSERT, te(2, [(1, "lpm", b"\x0a\x00\x00\x00", 8)], 11)), ops, undo)
    store.apply(upd(p4r.Update.INSERT, te(2, [(1, "lpm", b"\x0a\x01\x00\x00", 16)], 11)), ops, undo)
    assert ops == []
    keep = []
    rebuilds = store.rebuild_ops(keep)
    assert len(rebuilds) == 1 and rebuilds[0].kind == libbsw.OP_REBUILD and rebuilds[0].n_entries == 2
    prios = sorted(rebuilds[0].entries[i].priority for i in range(2))
    assert prios == [32 - 16, 32 - 8]  # the longer prefix wins (0 is the highest)
    assert store.rebuild_ops(keep) == []


def test_default_action(env):
    store, _ = env
    # @defaultonly drop is fine as default, const default refused, reset restores the program's default
    ops = apply(store, p4r.Update.MODIFY, te(3, [], 12, default=True))
    assert ops[0].kind == libbsw.OP_DEFAULT
    with pytest.raises(P4RuntimeError) as e:
        apply(store, p4r.Update.MODIFY, te(4, [], 12, default=True))
    assert e.value.code == grpc.StatusCode.PERMISSION_DENIED
    with pytest.raises(P4RuntimeError) as e:
        apply(store, p4r.Update.INSERT, te(3, [], 12, default=True))
    assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT
    apply(store, p4r.Update.MODIFY, te(3, default=True))
    d = store.default_entry(store.tables[3])
    assert d.action.action.action_id == 10 and d.action.action.params[0].value == b"\x07"


def test_read_wildcards(env):
    store, _ = env
    apply(store, p4r.Update.INSERT, te(1, [(1, "exact", MAC)], 11))
    apply(store, p4r.Update.INSERT, te(4, [(1, "exact", b"\x01")], 12))
    assert len(list(store.read(p4r.TableEntry()))) == 2
    assert len(list(store.read(p4r.TableEntry(table_id=4)))) == 1
    assert list(store.read(te(1, [(1, "exact", MAC)])))[0].action.action.action_id == 11


def test_p4info_that_does_not_match_the_spec_is_refused():
    from google.protobuf import text_format
    spec = swx_spec.parse(SPEC)
    bad = text_format.Parse(P4INFO.replace("l2_fwd", "l3_fwd"), p4info_pb2.P4Info())
    with pytest.raises(MappingError, match="l3_fwd"):
        PipelineMap(bad, spec)


DIRECT_P4INFO = P4INFO + """
direct_counters { preamble { id: 50 name: "MainControlImpl.l2_count" } spec { unit: BOTH } direct_table_id: 1 }
direct_meters { preamble { id: 60 name: "MainControlImpl.l2_meter" } spec { unit: BYTES } direct_table_id: 1 }
"""
DIRECT_SPEC = SPEC + """
regarray l2_count_0_packets size 0x5 initval 0x0
regarray l2_count_0_bytes size 0x5 initval 0x0
metarray l2_meter_0 size 0x5
"""


@pytest.fixture
def direct_env():
    from google.protobuf import text_format
    spec = swx_spec.parse(DIRECT_SPEC)
    pmap = PipelineMap(text_format.Parse(DIRECT_P4INFO, p4info_pb2.P4Info()), spec)
    pmap.bind(FakePipeline(spec))
    return TableStore(pmap), pmap


def test_direct_resources_map_to_arrays_of_table_size_plus_one(direct_env):
    _, pmap = direct_env
    t = pmap.tables[1]
    assert (t.direct_counter.packets_array, t.direct_counter.bytes_array, t.direct_counter.size) == \
        ("l2_count_0_packets", "l2_count_0_bytes", 5)
    assert (t.direct_meter.swx_name, t.direct_meter.size) == ("l2_meter_0", 5)
    assert pmap.direct_counters[50] is t and pmap.direct_meters[60] is t
    assert pmap.tables[4].direct_counter is None


def test_direct_resource_on_a_wildcard_table_is_refused():
    from google.protobuf import text_format
    bad = DIRECT_P4INFO.replace("direct_table_id: 1 }\ndirect_meters", "direct_table_id: 2 }\ndirect_meters")
    with pytest.raises(MappingError, match="not exact-match"):
        PipelineMap(text_format.Parse(bad, p4info_pb2.P4Info()), swx_spec.parse(DIRECT_SPEC))


def test_counter_data_and_meter_config_in_table_writes(direct_env):
    store, _ = direct_env
    e = te(1, [(1, "exact", MAC)], 10, [(1, b"\x05")])
    e.counter_data.packet_count = 9
    e.meter_config.cir, e.meter_config.pir = 100, 200
    ops, undo = [], []
    ts, stored = store.apply(upd(p4r.Update.INSERT, e), ops, undo)
    assert ts.map.name.endswith("l2_fwd") and stored.meter_config.pir == 200
    # Read returns the entry without what the write carried for its resources
    (got,) = store.read(te(1, [(1, "exact", MAC)]))
    assert not got.HasField("counter_data") and not got.HasField("meter_config")
    # a modify without a meter config keeps the entry's
    _, stored = store.apply(upd(p4r.Update.MODIFY, te(1, [(1, "exact", MAC)], 10, [(1, b"\x06")])), ops, undo)
    assert stored.meter_config.pir == 200
    assert store.find(te(1, [(1, "exact", MAC)]))[1] is stored
    with pytest.raises(P4RuntimeError) as err:
        store.find(te(1, [(1, "exact", b"\x02\x00\x00\x00\x00\x09")]))
    assert err.value.code == grpc.StatusCode.NOT_FOUND


@pytest.mark.parametrize("table, field, words", [
    (4, "counter_data", "no direct counter"),
    (4, "meter_config", "no direct meter"),
    (1, "bad_meter", "cir <= pir"),
])
def test_direct_fields_are_checked(direct_env, table, field, words):
    store, _ = direct_env
    e = te(table, [(1, "exact", MAC if table == 1 else b"\x01")], 10, [(1, b"\x05")])
    if field == "counter_data":
        e.counter_data.packet_count = 1
    elif field == "meter_config":
        e.meter_config.cir = 1
    else:
        e.meter_config.cir, e.meter_config.pir = 10, 5
    with pytest.raises(P4RuntimeError) as err:
        store.apply(upd(p4r.Update.INSERT, e), [], [])
    assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT and words in err.value.message
    assert list(store.read(te(table))) == []

"""P4Runtime table writes: validation per the spec, and the ops they become."""
import errno
import sys

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
struct sess_arg_t {
	bit<16> sid
	bit<32> port
}
action set_session args instanceof sess_arg_t {
	return
}
table sessions {
	key {
		h.ethernet.src_addr exact
		m.in_port exact
	}
	actions {
		set_session
		NoAction
	}
	default_action NoAction args none
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
tables { preamble { id: 5 name: "MainControlImpl.sessions" }
  match_fields { id: 1 name: "src_addr" bitwidth: 48 match_type: EXACT }
  match_fields { id: 2 name: "in_port" bitwidth: 9 match_type: EXACT }
  action_refs { id: 13 } action_refs { id: 11 } size: 16 }
actions { preamble { id: 13 name: "MainControlImpl.set_session" }
  params { id: 1 name: "sid" bitwidth: 16 } params { id: 2 name: "port" bitwidth: 9 } }
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
    ops, undo = libbsw.OpBatch(), []
    store.apply(upd(kind, entry), ops, undo)
    return ops.ops


MAC = bytes.fromhex("020000000001")


def test_exact_insert_encodes_header_key_network_order_and_args(env):
    store, _ = env
    ops = apply(store, p4r.Update.INSERT, te(1, [(1, "exact", MAC)], 10, [(1, b"\x05")]))
    assert len(ops) == 1 and ops[0].kind == libbsw.OP_ADD
    e = ops[0].entry
    assert e.key == MAC
    assert e.action_data == (5).to_bytes(4, "big")
    assert e.action_id == store.pmap.tables[1].actions[10].swx_id
    assert ops[0].undo is None


def test_op_batch_packs_every_op_kind_as_bsw_h_describes():
    """The byte string bsw_table_commit_packed() reads (layout in bsw.h):
    per op kind, table, n_entries; per entry flags (1 key, 2 mask, 4 data),
    priority, action id, then the fields that are present."""
    def u32(*vals):
        return b"".join(v.to_bytes(4, sys.byteorder) for v in vals)

    a = libbsw.EntryBytes(b"\x01" * 6, 3, b"\x00\x07\x00\x00")
    b = libbsw.EntryBytes(b"\x02" * 6, 4, b"\x00\x00\x00\x09")
    w = libbsw.EntryBytes(b"\x0a\x00", 5, b"\x01\x00\x00\x00", b"\xff\x00", 17)
    batch = libbsw.OpBatch()
    batch.add(1, a, None)
    batch.add(1, b, a)
    batch.delete(2, b)
    batch.set_default(3, 6, b"")
    batch.rebuild(4, [w])
    assert len(batch) == 5
    absent = u32(0, 0, 0)
    assert bytes(batch.pack()) == b"".join([
        u32(libbsw.OP_ADD, 1, 0), u32(5, 0, 3), a.key, a.action_data, absent,
        u32(libbsw.OP_ADD, 1, 0), u32(5, 0, 4), b.key, b.action_data, u32(5, 0, 3), a.key, a.action_data,
        u32(libbsw.OP_DEL, 2, 0), u32(5, 0, 4), b.key, b.action_data, u32(5, 0, 4), b.key, b.action_data,
        u32(libbsw.OP_DEFAULT, 3, 0), u32(0, 0, 6), absent,          # no action data: a NULL pointer
        u32(libbsw.OP_REBUILD, 4, 1), u32(7, 17, 5), w.key, w.key_mask, w.action_data,
    ])


def test_metadata_key_is_host_order(env):
    store, _ = env
    ops = apply(store, p4r.Update.INSERT, te(4, [(1, "exact", b"\x01\x02")], 10, [(1, b"\x01")]))
    assert ops[0].entry.key == (0x0102).to_bytes(4, "little")


def test_multi_field_key_and_params_in_any_order_encode_alike(env):
    """Fields and params in P4Info order take the one-pass encoders of
    TableMap.exact_key and ActionMap.data_from_params; any other order takes
    the checked path. Both must give the same key, canonical key and data."""
    store, _ = env
    in_order = apply(store, p4r.Update.INSERT, te(5, [(1, "exact", MAC), (2, "exact", b"\x01\x07")], 13,
                                                  [(1, b"\x12\x34"), (2, b"\x01\x07")]))
    assert in_order[0].entry.key == MAC + (0x107).to_bytes(4, "little")
    assert in_order[0].entry.action_data == b"\x12\x34" + (0x107).to_bytes(4, "big")
    reversed_ = te(5, [(2, "exact", b"\x01\x07"), (1, "exact", MAC)], 13, [(2, b"\x01\x07"), (1, b"\x12\x34")])
    with pytest.raises(P4RuntimeError) as e:
        apply(store, p4r.Update.INSERT, reversed_)
    assert e.value.code == grpc.StatusCode.ALREADY_EXISTS
    modified = apply(store, p4r.Update.MODIFY, reversed_)
    assert (modified[0].entry.key, modified[0].entry.action_data) == (in_order[0].entry.key,
                                                                      in_order[0].entry.action_data)
    assert modified[0].undo.key == in_order[0].entry.key


@pytest.mark.parametrize("entry,words", [
    (te(5, [(1, "exact", MAC), (2, "exact", b"\x02\x00")], 13, [(1, b"\x01"), (2, b"\x01")]),
     "field in_port (id 2): value 0x0200 does not fit in 9 bits"),
    (te(5, [(1, "exact", MAC), (2, "exact", b"\x01")], 13, [(1, b"\x01"), (2, b"\x02\x00")]),
     "parameter port: value 0x0200 does not fit in 9 bits"),
    (te(5, [(1, "exact", MAC), (2, "lpm", b"\x01", 9)], 13, [(1, b"\x01"), (2, b"\x01")]),
     "expects an exact match, got lpm"),
    (te(5, [(1, "exact", MAC), (2, "exact", b"\x01")], 13, [(1, b"\x01")]), "port missing"),
    (te(5, [(1, "exact", MAC), (2, "exact", b"")], 13, [(1, b"\x01"), (2, b"\x01")]), "empty value"),
    (te(5, [(1, "exact", MAC), (1, "exact", MAC)], 13, [(1, b"\x01"), (2, b"\x01")]), "given twice"),
])
def test_multi_field_errors_name_the_field(env, entry, words):
    """What the one-pass encoders turn down, the checked path explains."""
    store, _ = env
    with pytest.raises(P4RuntimeError) as e:
        apply(store, p4r.Update.INSERT, entry)
    assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert words in e.value.message
    assert not store.tables[5].entries


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
    (te(3, [(1, "ternary", b"\x08\x00", b"\xff\xff")], 12, priority=5), grpc.StatusCode.PERMISSION_DENIED,
     "@defaultonly"),
    (p4r.TableEntry(table_id=1, is_const=True), grpc.StatusCode.INVALID_ARGUMENT, "is_const must be false"),
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
    assert ops[0].kind == libbsw.OP_ADD and ops[0].undo.key == MAC
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
    ops, undo = libbsw.OpBatch(), []
    store.apply(upd(p4r.Update.INSERT, te(2, [(1, "lpm", b"\x0a\x00\x00\x00", 8)], 11)), ops, undo)
    store.apply(upd(p4r.Update.INSERT, te(2, [(1, "lpm", b"\x0a\x01\x00\x00", 16)], 11)), ops, undo)
    assert len(ops) == 0
    store.add_rebuilds(ops)
    assert len(ops) == 1 and ops.ops[0].kind == libbsw.OP_REBUILD and len(ops.ops[0].entries) == 2
    prios = sorted(e.priority for e in ops.ops[0].entries)
    assert prios == [32 - 16, 32 - 8]  # the longer prefix wins (0 is the highest)
    store.add_rebuilds(ops)
    assert len(ops) == 1


def test_an_omitted_lpm_field_is_a_slash_0_and_loses_to_every_prefix(env):
    """P4Runtime 9.1.1: a don't-care LPM field is a /0. In DPDK's wildcard
    tables the lowest number wins, so a default route must have the largest
    (it once had 0, and outranked every route: fib_v6's ::/0 then took
    traffic its blackhole routes were there to drop)."""
    store, _ = env
    ops, undo = libbsw.OpBatch(), []
    store.apply(upd(p4r.Update.INSERT, te(2, [], 11)), ops, undo)
    store.apply(upd(p4r.Update.INSERT, te(2, [(1, "lpm", b"\x0a\x00\x00\x00", 8)], 11)), ops, undo)
    store.apply(upd(p4r.Update.INSERT, te(2, [(1, "lpm", b"\x0a\x01\x02\x03", 32)], 11)), ops, undo)
    store.add_rebuilds(ops)
    prio = {bytes(e.key_mask): e.priority for e in ops.ops[0].entries}
    assert sorted(prio.values()) == [0, 32 - 8, 32]
    assert prio[bytes(4)] == 32             # the /0: mask all zeros, last


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


def test_read_filters_by_action_priority_and_metadata(env):
    """The spec's wildcard-read filters: the action id (it was ignored: a
    read for one action got every entry), priority, controller_metadata and
    metadata; a read of all tables takes none of them (a priority was
    applied across tables)."""
    store, _ = env
    for i, (action, params) in enumerate([(10, [(1, b"\x01")]), (11, []), (10, [(1, b"\x02")])]):
        e = te(1, [(1, "exact", MAC[:-1] + bytes([i]))], action, params)
        e.controller_metadata, e.metadata = 7 + i % 2, b"row%d" % i
        apply(store, p4r.Update.INSERT, e)
    apply(store, p4r.Update.INSERT, te(3, [(1, "ternary", b"\x08\x00", b"\xff\xff")], 10, [(1, b"\x01")],
                                       priority=5))
    apply(store, p4r.Update.INSERT, te(3, [(1, "ternary", b"\x86\xdd", b"\xff\xff")], 10, [(1, b"\x01")],
                                       priority=9))

    def read(**kw) -> list:
        return list(store.read(p4r.TableEntry(**kw)))

    forwards = read(table_id=1, action=p4r.TableAction(action=p4r.Action(action_id=10)))
    assert sorted(e.metadata for e in forwards) == [b"row0", b"row2"]
    assert [e.metadata for e in read(table_id=1, controller_metadata=8)] == [b"row1"]
    assert [e.controller_metadata for e in read(table_id=1, metadata=b"row2")] == [7]
    assert [e.priority for e in read(table_id=3, priority=9)] == [9]
    assert read(table_id=1, action=p4r.TableAction(action=p4r.Action(action_id=12))) == []
    # a match names one entry, which the other filters may still leave out
    one = te(1, [(1, "exact", MAC[:-1] + b"\x01")])
    one.controller_metadata = 7
    assert list(store.read(one)) == []
    # the default entry is filtered by its action too
    assert len(read(table_id=3, is_default_action=True, action=p4r.TableAction(action=p4r.Action(action_id=10)))) == 1
    assert read(table_id=3, is_default_action=True, action=p4r.TableAction(action=p4r.Action(action_id=12))) == []
    for bad in (dict(priority=9), dict(controller_metadata=7), dict(is_default_action=True),
                dict(action=p4r.TableAction(action=p4r.Action(action_id=10))),
                dict(table_id=1, action=p4r.TableAction(action=p4r.Action(action_id=10, params=[
                    p4r.Action.Param(param_id=1, value=b"\x01")]))),
                dict(table_id=1, action=p4r.TableAction(action_profile_member_id=3))):
        with pytest.raises(P4RuntimeError) as e:
            read(**bad)
        assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT, bad
    assert len(read()) == 5


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
    e.meter_config.cir, e.meter_config.pir, e.meter_config.cburst, e.meter_config.pburst = 100, 200, 300, 300
    ops, undo = libbsw.OpBatch(), []
    ts, stored = store.apply(upd(p4r.Update.INSERT, e), ops, undo)
    assert ts.map.name.endswith("l2_fwd") and stored.meter_config.pir == 200
    # Read returns the entry without what the write carried for its resources
    (got,) = store.read(te(1, [(1, "exact", MAC)]))
    assert not got.HasField("counter_data") and not got.HasField("meter_config")
    # a modify without a meter config resets the meter to the default
    # (P4Runtime 9.1.7: to keep it, a modify carries it again)
    _, stored = store.apply(upd(p4r.Update.MODIFY, te(1, [(1, "exact", MAC)], 10, [(1, b"\x06")])), ops, undo)
    assert stored.meter_config is None
    assert store.find(te(1, [(1, "exact", MAC)]))[1] is stored
    # a modify without an action keeps the entry's action (9.1.2) and
    # changes only its direct resources
    m = te(1, [(1, "exact", MAC)])
    m.meter_config.cir, m.meter_config.pir, m.meter_config.cburst, m.meter_config.pburst = 1, 2, 3, 3
    before = stored
    _, stored = store.apply(upd(p4r.Update.MODIFY, m), ops, undo)
    assert stored.meter_config.pir == 2
    assert (stored.action_id, stored.action_data) == (before.action_id, before.action_data)
    (got,) = store.read(te(1, [(1, "exact", MAC)]))
    assert got.action.action.action_id == 10 and got.action.action.params[0].value == b"\x06"
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


def _request(*updates):
    req = p4r.WriteRequest(device_id=1)
    for kind, e in updates:
        req.updates.add(type=kind).entity.table_entry.CopyFrom(e)
    return req


def _commit(store, fake, *writes):
    """P4RuntimeService._commit_batch over these writes, as the committer
    runs it for the writes waiting at one moment."""
    import threading
    from types import SimpleNamespace

    from bng_switch.p4runtime_service import P4RuntimeService, PendingWrite

    service = SimpleNamespace(device=SimpleNamespace(lock=threading.Lock(), store=store, pipeline=fake),
                              stats={"writes": 0, "updates": 0, "commits": 0})
    pws = [PendingWrite(w) for w in writes]
    P4RuntimeService._commit_batch(service, pws)
    return [[code for code, _ in pw.errors] for pw in pws], pws


def test_a_refused_update_fails_alone_and_the_others_of_its_commit_go_in(env):
    """A commit the pipeline refuses (a full hash bucket: ENOSPC) is tried
    again in halves: only the update it refuses fails, with
    RESOURCE_EXHAUSTED; the other client's write and the updates beside it
    go in, and an update after it that needed it (a MODIFY of its key) is
    NOT_FOUND, as in a commit of its own. The store holds what went in."""
    store, fake = env
    ok, refused = grpc.StatusCode.OK, grpc.StatusCode.RESOURCE_EXHAUSTED
    full = store.tables[5].map.swx_id
    fake.refuse = lambda op: errno.ENOSPC if op.table_id == full else None
    key5 = [(1, "exact", MAC), (2, "exact", b"\x03")]
    first = _request((p4r.Update.INSERT, te(1, [(1, "exact", MAC)], 10, [(1, b"\x01")])),
                     (p4r.Update.INSERT, te(99, [(1, "exact", MAC)], 10, [(1, b"\x01")])),
                     (p4r.Update.INSERT, te(5, key5, 13, [(1, b"\x01"), (2, b"\x02")])),
                     (p4r.Update.INSERT, te(1, [(1, "exact", b"\x02\x00\x00\x00\x00\x02")], 10, [(1, b"\x02")])))
    second = _request((p4r.Update.INSERT, te(2, [(1, "lpm", b"\x0a\x00\x00\x00", 8)], 11)),
                      (p4r.Update.MODIFY, te(5, key5, 13, [(1, b"\x03"), (2, b"\x04")])))
    codes, pws = _commit(store, fake, first, second)
    assert codes == [[ok, grpc.StatusCode.NOT_FOUND, refused, ok], [ok, grpc.StatusCode.NOT_FOUND]]
    assert "pipeline commit failed" in pws[0].errors[2][1] and "table id 99" in pws[0].errors[1][1]
    assert len(store.tables[1].entries) == 2 and len(store.tables[2].entries) == 1
    assert not store.tables[5].entries
    assert not any(ts.rebuild_pending for ts in store.tables.values())
    # what reached the data plane is what the store holds
    committed = [op for ops in fake.commits for op in ops]
    assert sorted((op.kind, op.table_id) for op in committed) == sorted(
        [(libbsw.OP_ADD, store.tables[1].map.swx_id)] * 2 + [(libbsw.OP_REBUILD, store.tables[2].map.swx_id)])


def test_a_commit_that_fails_once_goes_in_when_tried_again_in_halves(env):
    """A refusal that does not come back (the commit after it succeeds): the
    halves go in and every update is OK."""
    store, fake = env
    fake.fail_next_commit = errno.ENOSPC
    codes, _ = _commit(store, fake,
                       _request((p4r.Update.INSERT, te(1, [(1, "exact", MAC)], 10, [(1, b"\x01")]))),
                       _request((p4r.Update.INSERT, te(2, [(1, "lpm", b"\x0a\x00\x00\x00", 8)], 11))))
    assert codes == [[grpc.StatusCode.OK], [grpc.StatusCode.OK]]
    assert len(fake.commits) == 2


def test_a_refused_lone_update_restores_the_store(env):
    """The one table update of a batch refused: RESOURCE_EXHAUSTED, the
    store as before (no entry, no rebuild pending), nothing committed; the
    same write then goes in once the pipeline takes it, with keys and data
    of the table's sizes."""
    store, fake = env
    full = store.tables[5].map.swx_id
    fake.refuse = lambda op: errno.ENOSPC if op.table_id == full else None
    write = _request((p4r.Update.INSERT, te(5, [(1, "exact", MAC), (2, "exact", b"\x03")], 13,
                                            [(1, b"\x01"), (2, b"\x02")])),
                     (p4r.Update.INSERT, te(99, [(1, "exact", MAC)], 10, [(1, b"\x01")])))
    codes, _ = _commit(store, fake, write)
    assert codes == [[grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.NOT_FOUND]]
    assert all(not ts.entries for ts in store.tables.values()) and not fake.commits
    assert not any(ts.rebuild_pending for ts in store.tables.values())
    fake.refuse = None
    codes, _ = _commit(store, fake, write)
    assert codes == [[grpc.StatusCode.OK, grpc.StatusCode.NOT_FOUND]]
    (ops,) = fake.commits
    assert [op.kind for op in ops] == [libbsw.OP_ADD]


@pytest.mark.parametrize("err,code", [(errno.ENOMEM, grpc.StatusCode.RESOURCE_EXHAUSTED),
                                      (errno.EIO, grpc.StatusCode.INTERNAL)])
def test_a_commit_out_of_memory_is_resource_exhausted(env, err, code):
    """A rebuild that finds no EAL memory (ENOMEM, like a full table's
    ENOSPC) is the resource the client asked too much of; anything else the
    pipeline refuses is the switch's own fault."""
    import threading
    from types import SimpleNamespace

    from bng_switch.p4runtime_service import P4RuntimeService, PendingWrite

    store, fake = env
    req = p4r.WriteRequest(device_id=1)
    req.updates.add(type=p4r.Update.INSERT).entity.table_entry.CopyFrom(
        te(2, [(1, "lpm", b"\x0a\x00\x00\x00", 8)], 11))
    pw = PendingWrite(req)
    service = SimpleNamespace(device=SimpleNamespace(lock=threading.Lock(), store=store, pipeline=fake),
                              stats={"writes": 0, "updates": 0, "commits": 0})
    fake.fail_next_commit = err
    P4RuntimeService._commit_batch(service, [pw])
    assert [c for c, _ in pw.errors] == [code]
    assert all(not ts.entries for ts in store.tables.values())


def test_encoders_follow_the_pipeline_layout_not_the_declaration(env):
    """A key whose fields the pipeline lays out in another order than their
    P4Info ids (so the one-pass encoder writes each at its offset) and
    action arguments in host order: the fast and checked paths agree."""
    from google.protobuf import text_format

    class ReorderedPipeline(FakePipeline):
        def match_field_info(self, ti, fi):
            info = super().match_field_info(ti, fi)
            if self.tables[ti].name == "sessions":         # in_port first, then the MAC
                info.byte_offset = 0 if fi == 1 else 4
            return info

        def action_arg_info(self, ai, arg):
            info = super().action_arg_info(ai, arg)
            info.is_network_byte_order = 0
            return info

    spec = swx_spec.parse(SPEC)
    pmap = PipelineMap(text_format.Parse(P4INFO, p4info_pb2.P4Info()), spec)
    pmap.bind(ReorderedPipeline(spec))
    assert not pmap.tables[5].exact_contiguous
    in_order = te(5, [(1, "exact", MAC), (2, "exact", b"\x01\x07")], 13, [(1, b"\x12\x34"), (2, b"\x01\x07")])
    reordered = te(5, [(2, "exact", b"\x01\x07"), (1, "exact", MAC)], 13, [(2, b"\x01\x07"), (1, b"\x12\x34")])
    got = [apply(TableStore(pmap), p4r.Update.INSERT, e)[0].entry for e in (in_order, reordered)]
    assert got[0].key == (0x107).to_bytes(4, "little") + MAC
    assert got[0].action_data == (0x1234).to_bytes(2, "little") + (0x107).to_bytes(4, "little")
    assert (got[0].key, got[0].action_data) == (got[1].key, got[1].action_data)


def test_refused_default_entry_write_leaves_its_meter_config_alone(direct_env):
    """A default-entry MODIFY carrying a meter config and an action the
    table does not have is refused, and the default meter config stays as
    it was (the undo log only runs when a commit fails)."""
    store, _ = direct_env
    bad = te(1, [], 12, default=True)                      # drop is not an action of l2_fwd
    bad.meter_config.cir, bad.meter_config.pir, bad.meter_config.cburst, bad.meter_config.pburst = 100, 200, 3, 3
    with pytest.raises(P4RuntimeError) as e:
        apply(store, p4r.Update.MODIFY, bad)
    assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert store.tables[1].default_meter_config is None and store.tables[1].default_proto is None


@pytest.mark.parametrize("cir,cburst,pir,pburst,ok", [
    (1000, 3000, 1000, 3000, True), (1000, 3000, 2000, 3000, True),
    (0, 3000, 1000, 3000, False), (1000, 0, 1000, 3000, False), (1000, 3000, 1000, 0, False),
    (2000, 3000, 1000, 3000, False), (0, 0, 0, 0, False), (-1, 3000, 1000, 3000, False),
])
def test_meter_configs_dpdk_would_refuse_are_refused_up_front(cir, cburst, pir, pburst, ok):
    """rte_meter refuses a trTCM profile with a rate or a burst of 0
    (EINVAL), after a write may have set the meter on some workers already:
    INVALID_ARGUMENT before anything is written."""
    from bng_switch.table_store import check_meter_config
    cfg = p4r.MeterConfig(cir=cir, cburst=cburst, pir=pir, pburst=pburst)
    if ok:
        check_meter_config(cfg, "m")
    else:
        with pytest.raises(P4RuntimeError) as e:
            check_meter_config(cfg, "m")
        assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT


def test_an_excess_burst_is_refused_for_two_rate_meters():
    """eburst (P4Runtime 1.4) is a single-rate meter's: silently ignoring it
    would leave the client believing it set a third bucket."""
    from bng_switch.table_store import check_meter_config
    with pytest.raises(P4RuntimeError) as e:
        check_meter_config(p4r.MeterConfig(cir=1000, cburst=3000, pir=1000, pburst=3000, eburst=500), "m")
    assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT and "eburst" in e.value.message


@pytest.mark.parametrize("field", ["idle_timeout_ns", "time_since_last_hit"])
def test_idle_timeout_is_refused_not_silently_kept(env, field):
    """P4Runtime 9.1.8: no table here supports idle timeout, so a TTL or a
    time since the last hit in a write is INVALID_ARGUMENT (they were
    accepted and echoed back by Read)."""
    store, _ = env
    e = te(1, [(1, "exact", MAC)], 11)
    if field == "idle_timeout_ns":
        e.idle_timeout_ns = 5_000_000_000
    else:
        e.time_since_last_hit.elapsed_ns = 1
    with pytest.raises(P4RuntimeError) as err:
        apply(store, p4r.Update.INSERT, e)
    assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT and "idle timeout" in err.value.message
    assert not store.tables[1].entries

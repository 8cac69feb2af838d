"""The hand-assembled WriteRequest (p4runtime_write) against protobuf's own:
whatever the controller writes must parse back to the request protobuf
would have built from the same updates."""
from __future__ import annotations

import random

import pytest
from p4.v1 import p4runtime_pb2 as p4r

from bng_controller.p4runtime_write import Update, write_request


def _table_entry(rng: random.Random) -> p4r.TableEntry:
    e = p4r.TableEntry(table_id=rng.getrandbits(32))
    for fid in range(1, rng.randint(1, 5)):
        m = e.match.add(field_id=fid)
        m.exact.value = rng.getrandbits(48).to_bytes(6, "big").lstrip(b"\0") or b"\0"
    a = e.action.action
    a.action_id = rng.getrandbits(32)
    for pid in range(1, rng.randint(1, 12)):
        a.params.add(param_id=pid, value=rng.getrandbits(300).to_bytes(38, "big"))   # lengths past 127
    if rng.random() < 0.3:
        e.priority = rng.randint(1, 1000)
    return e


def _entry(rng: random.Random):
    kind = rng.randrange(4)
    if kind == 0:
        return _table_entry(rng)
    if kind == 1:
        m = p4r.MeterEntry(meter_id=rng.getrandbits(32))
        m.index.index = rng.getrandbits(16)
        m.config.cir, m.config.cburst = rng.getrandbits(40), rng.getrandbits(20)
        return m
    if kind == 2:
        c = p4r.CounterEntry(counter_id=rng.getrandbits(32))
        c.index.index = rng.getrandbits(16)
        c.data.packet_count = 0
        return c
    return p4r.Entity(table_entry=_table_entry(rng))


def _reference(device_id: int, election_id: tuple[int, int], updates: list[Update]) -> p4r.WriteRequest:
    req = p4r.WriteRequest(device_id=device_id)
    req.election_id.high, req.election_id.low = election_id
    for u in updates:
        r = req.updates.add(type=u.type)
        m = u.message
        if isinstance(m, p4r.Entity):
            r.entity.CopyFrom(m)
        elif isinstance(m, p4r.TableEntry):
            r.entity.table_entry.CopyFrom(m)
        elif isinstance(m, p4r.MeterEntry):
            r.entity.meter_entry.CopyFrom(m)
        else:
            r.entity.counter_entry.CopyFrom(m)
    return req


@pytest.mark.parametrize("seed", range(40))
def test_write_request_parses_to_protobufs_own(seed: int) -> None:
    rng = random.Random(seed)
    kinds = (p4r.Update.INSERT, p4r.Update.MODIFY, p4r.Update.DELETE)
    updates = [Update(rng.choice(kinds), _entry(rng)) for _ in range(rng.randint(0, 60))]
    device_id = rng.choice((0, 1, rng.getrandbits(64)))
    election_id = (rng.choice((0, rng.getrandbits(64))), rng.choice((1, rng.getrandbits(64))))
    raw = write_request(device_id, election_id, updates)
    assert p4r.WriteRequest.FromString(raw) == _reference(device_id, election_id, updates)


def test_update_reads_like_a_protobuf_update() -> None:
    e = _table_entry(random.Random(1))
    u = Update(p4r.Update.MODIFY, e)
    assert u.entity.WhichOneof("entity") == "table_entry"
    assert u.entity.table_entry == e
    assert p4r.Update.FromString(u.SerializeToString()) == p4r.Update(type=p4r.Update.MODIFY,
                                                                        entity=p4r.Entity(table_entry=e))


def test_update_refuses_what_no_entity_holds() -> None:
    with pytest.raises(TypeError):
        Update(p4r.Update.INSERT, p4r.WriteRequest())


@pytest.mark.parametrize("n", [0, 1, 127, 128, 129, 255, 16383, 16384, 2**32, 2**63, 2**64 - 1])
def test_varint_matches_protobuf(n: int) -> None:
    from bng_controller.protobuf_wire import varint
    low = p4r.Uint128(low=n).SerializeToString()          # tag 0x10, then n's varint
    assert varint(n) == (low[1:] if n else b"\0")

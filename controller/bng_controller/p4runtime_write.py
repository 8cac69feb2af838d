"""P4Runtime Write requests assembled from their entities' wire bytes.

Protobuf's wire format concatenates: a WriteRequest is its header fields
followed by one length-prefixed Update per update, and an Update is its
type followed by the length-prefixed Entity, itself one length-prefixed
entry. So each entry the controller builds is serialized once, straight
into the request, instead of being copied into a `p4r.Update`, copied
again into a `p4r.WriteRequest` and then serialized. Those two copies were
a tenth of the controller's CPU during a 40k-session setup storm (py-spy).

Field numbers come from the generated descriptors, not from literals.
"""
from __future__ import annotations

from typing import Iterable, Union

from p4.v1 import p4runtime_pb2 as p4r

from .protobuf_wire import LEN, VARINT, tag, varint

# the service method a raw (pre-serialized) Write goes to
WRITE_METHOD = "/{}/Write".format(p4r.DESCRIPTOR.services_by_name["P4Runtime"].full_name)

_UPDATE_TYPE = tag(p4r.Update, "type", VARINT)
_UPDATE_ENTITY = tag(p4r.Update, "entity", LEN)
_REQUEST_DEVICE_ID = tag(p4r.WriteRequest, "device_id", VARINT)
_REQUEST_ELECTION_ID = tag(p4r.WriteRequest, "election_id", LEN)
_REQUEST_UPDATE = tag(p4r.WriteRequest, "updates", LEN)

# Entity's oneof member for each entry type the controller writes
_ENTITY_FIELD = {cls: tag(p4r.Entity, name, LEN) for cls, name in (
    (p4r.TableEntry, "table_entry"), (p4r.MeterEntry, "meter_entry"), (p4r.CounterEntry, "counter_entry"),
    (p4r.DirectMeterEntry, "direct_meter_entry"), (p4r.DirectCounterEntry, "direct_counter_entry"),
    (p4r.RegisterEntry, "register_entry"))}

Entry = Union[p4r.TableEntry, p4r.MeterEntry, p4r.CounterEntry, p4r.DirectMeterEntry,
              p4r.DirectCounterEntry, p4r.RegisterEntry, p4r.Entity]


class Update:
    """One update of a Write: its type and the entry (or whole Entity) it
    applies to, serialized only when the request is assembled. Reads like a
    `p4r.Update` (`type`, `entity`) for code that inspects updates (the unit
    tests' fake switch, error messages). The entry is held, not copied: it
    must not change until the write is done (every update the controller
    queues gets an entry built for it)."""

    __slots__ = ("type", "message")

    def __init__(self, kind: int, message: Entry):
        if type(message) not in _ENTITY_FIELD and not isinstance(message, p4r.Entity):
            raise TypeError(f"no Entity member for {type(message).__name__}")
        self.type = kind
        self.message = message

    @property
    def entity(self) -> p4r.Entity:
        m = self.message
        if isinstance(m, p4r.Entity):
            return m
        e = p4r.Entity()
        e.MergeFromString(self._entity_bytes())
        return e

    def _entity_bytes(self) -> bytes:
        m = self.message
        body = m.SerializeToString()
        if isinstance(m, p4r.Entity):
            return body
        return _ENTITY_FIELD[type(m)] + varint(len(body)) + body

    def SerializeToString(self) -> bytes:  # noqa: N802 (protobuf's name)
        ent = self._entity_bytes()
        return _UPDATE_TYPE + varint(self.type) + _UPDATE_ENTITY + varint(len(ent)) + ent

    def __repr__(self) -> str:
        return f"Update({p4r.Update.Type.Name(self.type)}, {self.entity})"


def write_request(device_id: int, election_id: tuple[int, int],
                  updates: Iterable[Union[Update, p4r.Update]]) -> bytes:
    """The serialized WriteRequest (atomicity CONTINUE_ON_ERROR, the
    default) carrying `updates` in order."""
    high, low = election_id
    eid = p4r.Uint128(high=high, low=low).SerializeToString()
    parts = [_REQUEST_DEVICE_ID + varint(device_id) if device_id else b"",
             _REQUEST_ELECTION_ID + varint(len(eid)) + eid]
    for u in updates:
        b = u.SerializeToString()
        parts.append(_REQUEST_UPDATE + varint(len(b)) + b)
    return b"".join(parts)

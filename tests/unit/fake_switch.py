"""An in-memory stand-in for the switch's P4Runtime side, for controller
unit tests: it keeps table entries by key, refuses duplicate inserts and
missing deletes as the real server does, remembers meter and counter
writes, and records every packet-out."""
from __future__ import annotations

import asyncio

import grpc
from p4.v1 import p4runtime_pb2 as p4r

from bng_controller.p4runtime_entries import entry_key
from bng_controller.p4runtime_client import UpdateError


class FakeWriter:
    def __init__(self):
        self.stats = {"rpcs": 0, "updates": 0, "errors": 0, "rpc_time": 0.0}


class FakeSwitch:
    def __init__(self):
        self.entries: dict[bytes, p4r.TableEntry] = {}
        self.meters: dict[tuple[int, int], p4r.MeterEntry] = {}
        self.counters: dict[tuple[int, int], tuple[int, int]] = {}
        self.sent: list[tuple[bytes, int]] = []
        self.writes: list[list[p4r.Update]] = []
        self.connected = asyncio.Event()
        self.connected.set()
        self.stats = {"packet_in": 0, "packet_out": 0, "reconnects": 0, "stream_errors": 0}
        self.writer = FakeWriter()
        self.fail_next_write = False

    def packet_out(self, frame: bytes, port: int) -> None:
        self.stats["packet_out"] += 1
        self.sent.append((frame, port))

    def take_sent(self) -> list[tuple[bytes, int]]:
        out, self.sent = self.sent, []
        return out

    async def write(self, updates: list[p4r.Update]) -> list[UpdateError]:
        await asyncio.sleep(0)
        self.writes.append(list(updates))
        errors = []
        for i, u in enumerate(updates):
            kind = u.entity.WhichOneof("entity")
            if self.fail_next_write:
                errors.append(UpdateError(i, grpc.StatusCode.INTERNAL, "injected failure"))
                continue
            if kind == "table_entry":
                te = u.entity.table_entry
                k = entry_key(te)
                if u.type == p4r.Update.INSERT:
                    if k in self.entries:
                        errors.append(UpdateError(i, grpc.StatusCode.ALREADY_EXISTS, "exists"))
                        continue
                    self.entries[k] = te
                elif u.type == p4r.Update.MODIFY:
                    if k not in self.entries:
                        errors.append(UpdateError(i, grpc.StatusCode.NOT_FOUND, "missing"))
                        continue
                    self.entries[k] = te
                else:
                    if self.entries.pop(k, None) is None:
                        errors.append(UpdateError(i, grpc.StatusCode.NOT_FOUND, "missing"))
            elif kind == "meter_entry":
                me = u.entity.meter_entry
                self.meters[(me.meter_id, me.index.index)] = me
            elif kind == "counter_entry":
                ce = u.entity.counter_entry
                self.counters[(ce.counter_id, ce.index.index)] = (ce.data.packet_count, ce.data.byte_count)
        self.fail_next_write = False
        return errors

    async def read(self, *entities: p4r.Entity) -> list[p4r.Entity]:
        out = []
        for e in entities:
            kind = e.WhichOneof("entity")
            if kind == "table_entry":
                tid = e.table_entry.table_id
                out += [p4r.Entity(table_entry=te) for te in self.entries.values()
                        if tid == 0 or te.table_id == tid]
            elif kind == "counter_entry":
                ce = e.counter_entry
                idx = [ce.index.index] if ce.HasField("index") else range(32)
                for i in idx:
                    r = p4r.CounterEntry(counter_id=ce.counter_id)
                    r.index.index = i
                    r.data.packet_count, r.data.byte_count = self.counters.get((ce.counter_id, i), (0, 0))
                    out.append(p4r.Entity(counter_entry=r))
        return out

    def tables_named(self, names, table: str) -> list[p4r.TableEntry]:
        tid = names.table(table).preamble.id
        return [e for e in self.entries.values() if e.table_id == tid]

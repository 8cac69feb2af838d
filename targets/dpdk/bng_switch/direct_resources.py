"""Direct counters and direct meters: per-entry resources of a table.

p4c-dpdk compiles a DirectCounter or DirectMeter into an ordinary register or
meter array of table size + 1 and indexes it with the SWX `entryid` of the
entry a packet hit (0 for a miss, i.e. the default action). The P4Runtime
server names these resources by table entry, so each request is translated
here: the entry's index is looked up in the data plane's own table
(libbsw table_entry_index) at the moment of the request, under the device
lock that also serialises commits. A slot freed by a delete is reused by a
later insert, so every insert resets the counter and the meter of its slot.

A direct meter's configuration is kept on the stored entry (SWX cannot read
a meter's profile back), which is what Read returns.
"""
from __future__ import annotations

import grpc
from p4.v1 import p4runtime_pb2 as p4r

from . import libbsw
from .pipeline_map import TableMap
from .table_store import P4RuntimeError, StoredEntry, TableState


class DirectResources:
    """Reads and writes the direct counter and meter of one table entry."""

    def __init__(self, pipeline: libbsw.Pipeline):
        self.pipeline = pipeline

    def index(self, t: TableMap, stored: StoredEntry | None) -> int:
        """The entry's index in its direct arrays; None stands for the
        default entry (index 0)."""
        if stored is None:
            return 0
        idx = self.pipeline.table_entry_index(t.swx_id, stored.key)
        if idx is None:
            # The store and the data plane disagree: never expected, and not
            # the client's fault.
            raise P4RuntimeError(grpc.StatusCode.INTERNAL, f"table {t.name}: entry missing from the data plane")
        return idx

    def read_counter(self, t: TableMap, stored: StoredEntry | None) -> p4r.CounterData:
        return t.direct_counter.read(self.pipeline, self.index(t, stored))

    def write_counter(self, t: TableMap, stored: StoredEntry | None, data: p4r.CounterData) -> None:
        t.direct_counter.write(self.pipeline, self.index(t, stored), data)

    def read_meter_counters(self, t: TableMap, stored: StoredEntry | None) -> p4r.MeterCounterData:
        return t.direct_meter.read_counters(self.pipeline, self.index(t, stored))

    def write_meter(self, t: TableMap, stored: StoredEntry | None, cfg: p4r.MeterConfig | None) -> None:
        """Configure the entry's meter, or reset it to never-red (cfg None)."""
        t.direct_meter.configure(self.pipeline, self.index(t, stored), cfg)

    def after_write(self, ts: TableState, update: p4r.Update, stored: StoredEntry | None) -> None:
        """What a committed INSERT or MODIFY of a table entry (stored None:
        the default entry) does to its direct resources (P4Runtime 9.1.7):
        an insert starts from the request's counter data, or zero; a modify
        changes the counter only when the request carries counter data. The
        meter takes the request's config either way, and without one goes
        back to the default (never red)."""
        t = ts.map
        te = update.entity.table_entry
        insert = update.type == p4r.Update.INSERT
        if t.direct_counter is not None and (insert or te.HasField("counter_data")):
            self.write_counter(t, stored, te.counter_data)
        if t.direct_meter is not None:
            self.write_meter(t, stored, ts.meter_config(stored))

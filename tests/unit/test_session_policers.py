"""What bngctl shows of a session's policers: the per-colour counts the
switch returns with each meter read (MeterEntry.counter_data), by
direction, read for the session's own meter index only."""
from __future__ import annotations

from pathlib import Path

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as p4r

from bng_controller.dataplane import BngTables
from bng_controller.p4info_names import P4InfoNames

BUILD = Path(__file__).resolve().parents[2] / "p4src" / "build" / "bng"


def tables() -> BngTables:
    return BngTables(P4InfoNames(text_format.Parse((BUILD / "bng.p4info.txtpb").read_text(), p4info_pb2.P4Info())))


def test_reads_name_the_sessions_two_meters_at_its_index():
    t = tables()
    reads = t.session_policer_reads(42)
    ids = {t.names.meter(n).preamble.id for n in ("session_meter_up", "session_meter_down")}
    assert {e.meter_entry.meter_id for e in reads} == ids
    assert all(e.meter_entry.index.index == 42 and not e.meter_entry.HasField("config") for e in reads)


def test_colour_counts_by_direction():
    t = tables()
    answers = []
    for e, (g, r) in zip(t.session_policer_reads(7), ((5, 2), (9, 0))):
        me = p4r.MeterEntry()
        me.CopyFrom(e.meter_entry)
        me.counter_data.green.packet_count, me.counter_data.green.byte_count = g, g * 100
        me.counter_data.red.packet_count, me.counter_data.red.byte_count = r, r * 1400
        answers.append(p4r.Entity(meter_entry=me))
    got = t.session_policers(list(reversed(answers)))      # the order of the answer does not matter
    assert got == {
        "up": {"green": {"packets": 5, "bytes": 500}, "yellow": {"packets": 0, "bytes": 0},
               "red": {"packets": 2, "bytes": 2800}},
        "down": {"green": {"packets": 9, "bytes": 900}, "yellow": {"packets": 0, "bytes": 0},
                 "red": {"packets": 0, "bytes": 0}},
    }

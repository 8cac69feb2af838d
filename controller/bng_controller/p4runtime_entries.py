"""P4Runtime entities built by name from the P4Info: the one place where a
table/field/action name becomes ids and canonical bytestrings. The sync
client (tests, PTF), the async client (the controller) and the data-plane
programming all build entries through `EntryBuilder`."""
from __future__ import annotations

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as p4r

from .p4info_names import P4InfoNames

Value = int | bytes
_MT = p4info_pb2.MatchField


def encode(value: Value, bitwidth: int) -> bytes:
    """Canonical P4Runtime bytestring for an int (or bytes, passed through)."""
    if isinstance(value, bytes):
        return value
    if value < 0 or value >> bitwidth:
        raise ValueError(f"value {value} does not fit in {bitwidth} bits")
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


class EntryBuilder:
    def __init__(self, names: P4InfoNames):
        self.names = names

    def table_entry(self, table: str, match: dict[str, object] | None = None, action: str | None = None,
                    params: dict[str, Value] | None = None, priority: int = 0,
                    default: bool = False) -> p4r.TableEntry:
        """match values: int/bytes (exact), (value, prefix_len) for LPM,
        (value, mask) for ternary, per the field's match type."""
        n = self.names
        t = n.table(table)
        te = p4r.TableEntry(table_id=t.preamble.id, priority=priority, is_default_action=default)
        for fname, v in (match or {}).items():
            mf = n.match_field(table, fname)
            # P4Runtime: a wildcard (LPM /0, ternary mask 0) is an omitted field
            if (mf.match_type == _MT.LPM and v[1] == 0) or (mf.match_type == _MT.TERNARY and v[1] == 0):
                continue
            fm = te.match.add(field_id=mf.id)
            if mf.match_type == _MT.EXACT:
                fm.exact.value = encode(v, mf.bitwidth)
            elif mf.match_type == _MT.LPM:
                fm.lpm.value, fm.lpm.prefix_len = encode(v[0], mf.bitwidth), v[1]
            elif mf.match_type == _MT.TERNARY:
                fm.ternary.value, fm.ternary.mask = encode(v[0], mf.bitwidth), encode(v[1], mf.bitwidth)
            elif mf.match_type == _MT.OPTIONAL:
                fm.optional.value = encode(v, mf.bitwidth)
            else:
                raise ValueError(f"match type {mf.match_type} of {fname} not supported")
        if action is not None:
            a = n.action(action)
            act = te.action.action
            act.action_id = a.preamble.id
            for pname, v in (params or {}).items():
                p = n.param(action, pname)
                act.params.add(param_id=p.id, value=encode(v, p.bitwidth))
        return te

    def counter_entry(self, counter: str, index: int | None = None) -> p4r.CounterEntry:
        ce = p4r.CounterEntry(counter_id=self.names.counter(counter).preamble.id)
        if index is not None:
            ce.index.index = index
        return ce

    def meter_entry(self, meter: str, index: int, cir: int | None = None, cburst: int = 0,
                    pir: int | None = None, pburst: int = 0) -> p4r.MeterEntry:
        """A meter config (rates in the meter's unit per second); cir None:
        back to the target's default (unlimited)."""
        me = p4r.MeterEntry(meter_id=self.names.meter(meter).preamble.id)
        me.index.index = index
        if cir is not None:
            me.config.cir, me.config.cburst = cir, cburst
            me.config.pir, me.config.pburst = (cir if pir is None else pir), (pburst or cburst)
        return me

    def action_params(self, entry: p4r.TableEntry) -> tuple[str, dict[str, int]]:
        """(action short name, params by name) of an entry read back."""
        a = entry.action.action
        info = self.names.action_by_id(a.action_id)
        by_id = {p.id: p.name for p in info.params}
        return (info.preamble.name.split(".")[-1],
                {by_id[p.param_id]: int.from_bytes(p.value, "big") for p in a.params})

    def match_values(self, entry: p4r.TableEntry) -> dict[str, int]:
        """Exact/optional match values of an entry read back, by field name."""
        t = self.names.table_by_id(entry.table_id)
        by_id = {m.id: m.name for m in t.match_fields}
        out = {}
        for fm in entry.match:
            kind = fm.WhichOneof("field_match_type")
            v = getattr(fm, kind).value
            out[by_id[fm.field_id]] = int.from_bytes(v, "big")
        return out

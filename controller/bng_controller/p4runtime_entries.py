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
_EXACT, _LPM, _TERNARY, _OPTIONAL = _MT.EXACT, _MT.LPM, _MT.TERNARY, _MT.OPTIONAL


def encode(value: Value, bitwidth: int) -> bytes:
    """Canonical P4Runtime bytestring for an int (or bytes, passed through)."""
    if isinstance(value, bytes):
        return value
    if value < 0 or value >> bitwidth:
        raise ValueError(f"value {value} does not fit in {bitwidth} bits")
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


class EntryBuilder:
    """Entries by name. Each name is resolved against the P4Info once and
    kept as plain ids and widths: a session's entries are built while the
    controller's one event loop sets sessions up, and reading the P4Info's
    protobuf messages field by field for every entry was half of the cost
    of building one."""

    def __init__(self, names: P4InfoNames):
        self.names = names
        self._table_ids: dict[str, int] = {}
        self._action_ids: dict[str, int] = {}
        self._fields: dict[tuple[str, str], tuple[int, int, int]] = {}   # -> id, match type, bitwidth
        self._params: dict[tuple[str, str], tuple[int, int]] = {}        # -> id, bitwidth

    def _table_id(self, table: str) -> int:
        tid = self._table_ids.get(table)
        if tid is None:
            tid = self._table_ids[table] = self.names.table(table).preamble.id
        return tid

    def _action_id(self, action: str) -> int:
        aid = self._action_ids.get(action)
        if aid is None:
            aid = self._action_ids[action] = self.names.action(action).preamble.id
        return aid

    def _field(self, table: str, field: str) -> tuple[int, int, int]:
        f = self._fields.get((table, field))
        if f is None:
            mf = self.names.match_field(table, field)
            f = self._fields[(table, field)] = (mf.id, mf.match_type, mf.bitwidth)
        return f

    def _param(self, action: str, param: str) -> tuple[int, int]:
        p = self._params.get((action, param))
        if p is None:
            pi = self.names.param(action, param)
            p = self._params[(action, param)] = (pi.id, pi.bitwidth)
        return p

    def table_entry(self, table: str, match: dict[str, object] | None = None, action: str | None = None,
                    params: dict[str, Value] | None = None, priority: int = 0,
                    default: bool = False) -> p4r.TableEntry:
        """match values: int/bytes (exact), (value, prefix_len) for LPM,
        (value, mask) for ternary, per the field's match type."""
        te = p4r.TableEntry(table_id=self._table_id(table), priority=priority, is_default_action=default)
        for fname, v in (match or {}).items():
            fid, mtype, width = self._field(table, fname)
            if mtype == _EXACT:
                te.match.add(field_id=fid).exact.value = encode(v, width)
            # P4Runtime: a wildcard (LPM /0, ternary mask 0) is an omitted field
            elif mtype == _LPM:
                if v[1]:
                    fm = te.match.add(field_id=fid)
                    fm.lpm.value, fm.lpm.prefix_len = encode(v[0], width), v[1]
            elif mtype == _TERNARY:
                if v[1]:
                    fm = te.match.add(field_id=fid)
                    fm.ternary.value, fm.ternary.mask = encode(v[0], width), encode(v[1], width)
            elif mtype == _OPTIONAL:
                te.match.add(field_id=fid).optional.value = encode(v, width)
            else:
                raise ValueError(f"match type {mtype} of {fname} not supported")
        if action is not None:
            act = te.action.action
            act.action_id = self._action_id(action)
            for pname, v in (params or {}).items():
                pid, width = self._param(action, pname)
                act.params.add(param_id=pid, value=encode(v, width))
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

"""Table entries as P4Runtime wrote them, and their translation to pipeline ops.

The store is the hash index of the table manager: it answers "does this key
exist" in O(1), keeps each entry exactly as written (so Read returns it), and
turns every accepted update into a libbsw op. Validation follows the
P4Runtime spec (section 9.1): every error names the field or id at fault.
"""
from __future__ import annotations

from dataclasses import dataclass

import grpc
from p4.v1 import p4runtime_pb2 as p4r

from . import libbsw
from .pipeline_map import MT, PipelineMap, TableMap

Update = p4r.Update

# SWX wildcard priority: 0 is the highest; P4Runtime: larger wins. SWX
# wildcard tables are DPDK ACL tables, whose priorities stop at
# RTE_ACL_MAX_PRIORITY (0x1FFFFFFF).
_SWX_PRIO_BASE = 0x1FFFFFFF


class P4RuntimeError(Exception):
    """An error for one update or one request, with its gRPC code."""

    def __init__(self, code: grpc.StatusCode, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def _invalid(msg: str) -> P4RuntimeError:
    return P4RuntimeError(grpc.StatusCode.INVALID_ARGUMENT, msg)


def _selects(q: p4r.TableEntry, action_id: int, proto: p4r.TableEntry) -> bool:
    """Whether a stored entry passes a Read's scalar filters (0 or empty:
    any)."""
    return ((not action_id or proto.action.action.action_id == action_id)
            and (not q.priority or proto.priority == q.priority)
            and (not q.controller_metadata or proto.controller_metadata == q.controller_metadata)
            and (not q.metadata or proto.metadata == q.metadata))


def decode_value(data: bytes, bitwidth: int, what: str) -> int:
    """A P4Runtime bytestring as an int, refusing values wider than bitwidth."""
    if not data:
        raise _invalid(f"{what}: empty value")
    value = int.from_bytes(data, "big")
    if value >> bitwidth:
        raise _invalid(f"{what}: value 0x{data.hex()} does not fit in {bitwidth} bits")
    return value


def reject_meter_counts(msg: p4r.MeterEntry | p4r.DirectMeterEntry | p4r.TableEntry, field: str,
                        what: str) -> None:
    """A write may not carry a meter's per-colour counts (MeterEntry's and
    DirectMeterEntry's counter_data, TableEntry's meter_counter_data): SWX
    counts colours itself and has no way to set them (setting or resetting
    the meter clears them), so they would be silently dropped."""
    if msg.HasField(field):
        raise _invalid(f"{what}: {field} cannot be written (read-only per-colour meter counts; "
                       "a meter config write clears them)")


def check_meter_config(cfg: p4r.MeterConfig, what: str) -> None:
    """A two-rate three-colour meter (RFC 2698) needs cir <= pir; DPDK's
    (rte_meter's trTCM) also needs both rates and both bursts above 0 and
    refuses the profile otherwise, after the write may already have set the
    meter on some workers. Checked here, before anything is written. (No
    config at all is the unlimited meter.)"""
    if cfg.cir <= 0 or cfg.pir <= 0 or cfg.cir > cfg.pir or cfg.cburst <= 0 or cfg.pburst <= 0:
        raise _invalid(f"{what}: need 0 < cir <= pir and bursts above 0 "
                       "(no meter config at all for no limit)")
    if cfg.eburst:
        # P4Runtime 1.4's excess burst belongs to a single-rate meter
        # (RFC 2697); SWX meters are two-rate, which have none to set.
        raise _invalid(f"{what}: eburst {cfg.eburst} is for single-rate meters; "
                       "these are two-rate (RFC 2698): leave it 0")


def check_counter_data(data: p4r.CounterData, what: str) -> None:
    """Counts are unsigned in the data plane: a negative one would be stored
    as 2^64 - n and every later read of it would fail."""
    if data.packet_count < 0 or data.byte_count < 0:
        raise _invalid(f"{what}: counts must not be negative")


def canonical(value: int, bitwidth: int) -> bytes:
    """P4Runtime canonical bytestring: no leading zero bytes, at least one byte."""
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def _without_direct(te: p4r.TableEntry) -> p4r.TableEntry:
    """The entry as Read returns it: a write's counter data and meter config
    are not part of it (the data plane's counter is the truth; the meter
    config is kept beside it), nor are meter colour counts (refused on
    writes, but a DELETE is not checked for them)."""
    if not (te.HasField("counter_data") or te.HasField("meter_config") or te.HasField("meter_counter_data")):
        return te
    out = p4r.TableEntry()
    out.CopyFrom(te)
    out.ClearField("counter_data")
    out.ClearField("meter_config")
    out.ClearField("meter_counter_data")
    return out


# P4Runtime 9.1.8: no table of this switch supports idle timeout (SWX
# keeps no hit time per entry), so a write with a TTL or a read asking for
# the time since the last hit is INVALID_ARGUMENT rather than silently kept.
IDLE_TIMEOUT_UNSUPPORTED = "idle timeout is not supported (idle_timeout_ns must be 0, time_since_last_hit unset)"


@dataclass(slots=True)
class StoredEntry(libbsw.EntryBytes):
    """An entry as the pipeline holds it (the EntryBytes fields, which the
    ops carry) and as P4Runtime wrote it (what Read returns). One object per
    entry, not two: 100k of them stay alive."""
    proto: p4r.TableEntry | None = None
    meter_config: p4r.MeterConfig | None = None   # its direct meter's, as written


class TableState:
    def __init__(self, tmap: TableMap):
        self.map = tmap
        self.entries: dict[tuple, StoredEntry] = {}
        self.default_proto: p4r.TableEntry | None = None  # None: the program's initial default
        self.default_meter_config: p4r.MeterConfig | None = None
        self.rebuild_pending = False

    def meter_config(self, stored: StoredEntry | None) -> p4r.MeterConfig | None:
        """The direct meter config of an entry (None: the default entry)."""
        return self.default_meter_config if stored is None else stored.meter_config


class TableStore:
    def __init__(self, pmap: PipelineMap):
        self.pmap = pmap
        self.tables = {tid: TableState(t) for tid, t in pmap.tables.items()}

    # ---- decoding ----
    def _table(self, table_id: int) -> TableState:
        t = self.tables.get(table_id)
        if t is None:
            raise P4RuntimeError(grpc.StatusCode.NOT_FOUND, f"table id {table_id} is not in the P4Info")
        return t

    def _match(self, t: TableMap, entry: p4r.TableEntry) -> tuple[tuple, bytes, bytes | None, int]:
        """Canonical key (dict key), key bytes, mask bytes (wildcard tables), SWX priority."""
        if t.exact_layout and not entry.priority:
            fast = t.exact_key(entry.match)
            if fast is not None:
                return fast[0], fast[1], None, 0
        seen: dict[int, p4r.FieldMatch] = {}
        for fm in entry.match:
            if fm.field_id not in t.fields:
                raise _invalid(f"table {t.name}: match field id {fm.field_id} is not in the P4Info")
            if fm.field_id in seen:
                raise _invalid(f"table {t.name}: match field id {fm.field_id} given twice")
            seen[fm.field_id] = fm
        key = bytearray(t.key_size)
        mask = None if t.is_exact else bytearray(t.key_size)
        canon = []
        prio = 0
        for fid in sorted(t.fields):
            f = t.fields[fid]
            fm = seen.get(fid)
            what = f"table {t.name} field {f.name} (id {fid})"
            if fm is None:
                if f.match_type == MT.EXACT:
                    raise _invalid(f"{what}: exact field missing")
                if f.match_type == MT.LPM:
                    # a /0 (P4Runtime 9.1.1): the longest distance from a
                    # full-length prefix, so the least priority; adding
                    # nothing made a default route outrank every route
                    prio += f.bitwidth
                continue  # don't care: zero value and mask
            kind = fm.WhichOneof("field_match_type")
            n = f.swx_bits // 8
            if f.match_type == MT.EXACT:
                if kind != "exact":
                    raise _invalid(f"{what}: expects an exact match, got {kind}")
                v = decode_value(fm.exact.value, f.bitwidth, what)
                m = (1 << f.bitwidth) - 1
                canon.append((fid, v))
            elif f.match_type == MT.LPM:
                if kind != "lpm":
                    raise _invalid(f"{what}: expects an LPM match, got {kind}")
                plen = fm.lpm.prefix_len
                if plen <= 0 or plen > f.bitwidth:
                    raise _invalid(f"{what}: prefix length {plen} out of 1..{f.bitwidth} "
                                   "(a /0 match is expressed by omitting the field)")
                v = decode_value(fm.lpm.value, f.bitwidth, what)
                m = ((1 << plen) - 1) << (f.bitwidth - plen)
                if v & ~m:
                    raise _invalid(f"{what}: value has bits set beyond the /{plen} prefix")
                prio += f.bitwidth - plen
                canon.append((fid, v, plen))
            elif f.match_type in (MT.TERNARY, MT.OPTIONAL):
                if f.match_type == MT.TERNARY:
                    if kind != "ternary":
                        raise _invalid(f"{what}: expects a ternary match, got {kind}")
                    v = decode_value(fm.ternary.value, f.bitwidth, what)
                    m = decode_value(fm.ternary.mask, f.bitwidth, what + " mask")
                    if m == 0:
                        raise _invalid(f"{what}: zero mask (omit the field for don't care)")
                    if v & ~m:
                        raise _invalid(f"{what}: value has bits outside the mask")
                else:
                    if kind != "optional":
                        raise _invalid(f"{what}: expects an optional match, got {kind}")
                    v = decode_value(fm.optional.value, f.bitwidth, what)
                    m = (1 << f.bitwidth) - 1
                canon.append((fid, v, m))
            else:
                raise P4RuntimeError(grpc.StatusCode.UNIMPLEMENTED, f"{what}: match type not supported")
            key[f.offset:f.offset + n] = f.encode(v)
            if mask is not None:
                mask[f.offset:f.offset + n] = f.encode(m)
        if t.needs_priority:
            if entry.priority <= 0:
                raise _invalid(f"table {t.name}: ternary/optional tables need a priority > 0")
            if entry.priority >= _SWX_PRIO_BASE:
                raise P4RuntimeError(grpc.StatusCode.OUT_OF_RANGE,
                                     f"table {t.name}: priority {entry.priority} above {_SWX_PRIO_BASE - 1}, "
                                     "the largest the DPDK ACL tables take")
            prio = _SWX_PRIO_BASE - entry.priority
            canon.append(("priority", entry.priority))
        elif entry.priority:
            raise _invalid(f"table {t.name}: priority must be 0 for a table without ternary/optional fields")
        return tuple(canon), bytes(key), (bytes(mask) if mask is not None else None), prio

    def _action(self, t: TableMap, entry: p4r.TableEntry, for_default: bool) -> tuple[int, bytes]:
        a = entry.action.action             # an empty Action for an action profile member
        am = t.actions.get(a.action_id)
        if am is not None and a.action_id in (t.default_action_ids if for_default else t.entry_action_ids):
            data = am.data_from_params(a.params, t.data_size)
            if data is not None:
                return am.swx_id, data
        # the checked path: what is wrong, in the spec's terms
        act = entry.action
        kind = act.WhichOneof("type")
        if kind is None:
            raise _invalid(f"table {t.name}: entry has no action")
        if kind != "action":
            raise P4RuntimeError(grpc.StatusCode.UNIMPLEMENTED,
                                 f"table {t.name}: {kind} (action profiles) not supported")
        a = act.action
        aid = a.action_id
        am = t.actions.get(aid)
        if am is None:
            raise _invalid(f"table {t.name}: action id {aid} is not an action of this table")
        # a valid action outside its scope: PERMISSION_DENIED (spec: Table Entry, action)
        if for_default:
            if aid not in t.default_action_ids:
                raise P4RuntimeError(grpc.StatusCode.PERMISSION_DENIED,
                                     f"table {t.name}: action {am.name} is @tableonly, not a default action")
        elif aid not in t.entry_action_ids:
            raise P4RuntimeError(grpc.StatusCode.PERMISSION_DENIED, f"table {t.name}: action {am.name} is @defaultonly")
        values: dict[int, int] = {}
        pmaps = am.params
        for p in a.params:
            pid = p.param_id
            pm = pmaps.get(pid)
            if pm is None:
                raise _invalid(f"action {am.name}: parameter id {pid} is not in the P4Info")
            if pid in values:
                raise _invalid(f"action {am.name}: parameter {pm.name} given twice")
            values[pid] = decode_value(p.value, pm.bitwidth, f"action {am.name} parameter {pm.name}")
        if len(values) != len(pmaps):
            missing = [pm.name for pid, pm in pmaps.items() if pid not in values]
            raise _invalid(f"action {am.name}: parameter(s) {', '.join(missing)} missing")
        return am.swx_id, am.encode(values, t.data_size)

    # ---- updates ----
    @staticmethod
    def _check_direct(t: TableMap, te: p4r.TableEntry) -> None:
        if te.HasField("counter_data"):
            if t.direct_counter is None:
                raise _invalid(f"table {t.name}: counter_data given, but the table has no direct counter")
            check_counter_data(te.counter_data, f"table {t.name} counter_data")
        if te.HasField("meter_config"):
            if t.direct_meter is None:
                raise _invalid(f"table {t.name}: meter_config given, but the table has no direct meter")
            check_meter_config(te.meter_config, f"table {t.name} meter_config")
        reject_meter_counts(te, "meter_counter_data", f"table {t.name}")

    def apply(self, update: p4r.Update, ops: libbsw.OpBatch,
              undo: list) -> tuple[TableState, StoredEntry | None] | None:
        """Check one table update against the store, record it and its op.

        `undo` gets closures that restore the store if the batch's commit
        fails in the pipeline. Returns the table and the entry written (None
        for the default entry) for an insert or modify, whose direct
        resources are set once the batch is committed; None for a delete."""
        return self.apply_entry(update.type, update.entity.table_entry, ops, undo)

    def apply_entry(self, kind: int, te: p4r.TableEntry, ops: libbsw.OpBatch,
                    undo: list) -> tuple[TableState, StoredEntry | None] | None:
        """apply() for an update's type and table entry. This runs once per
        update of every Write: it is the table manager's hot path, hence the
        local names and the single HasField test."""
        ts = self.tables.get(te.table_id) or self._table(te.table_id)   # the latter raises NOT_FOUND
        t = ts.map
        has_direct = (te.HasField("counter_data") or te.HasField("meter_config")
                      or te.HasField("meter_counter_data"))
        if has_direct and kind != Update.DELETE:
            self._check_direct(t, te)
        if te.is_const:
            raise _invalid(f"table {t.name}: is_const must be false in a write (the server sets it on reads)")
        if te.idle_timeout_ns or te.HasField("time_since_last_hit"):
            raise _invalid(f"table {t.name}: {IDLE_TIMEOUT_UNSUPPORTED}")
        if te.is_default_action:
            self._apply_default(ts, kind, te, ops, undo)
            return ts, None
        canon, key, mask, prio = self._match(t, te)
        old = ts.entries.get(canon)
        if kind == Update.INSERT:
            if old is not None:
                raise P4RuntimeError(grpc.StatusCode.ALREADY_EXISTS, f"table {t.name}: entry already exists")
            if len(ts.entries) >= t.size:
                raise P4RuntimeError(grpc.StatusCode.RESOURCE_EXHAUSTED, f"table {t.name} is full ({t.size})")
        elif kind in (Update.MODIFY, Update.DELETE):
            if old is None:
                raise P4RuntimeError(grpc.StatusCode.NOT_FOUND, f"table {t.name}: no such entry")
        else:
            raise _invalid("update type unspecified")

        entries = ts.entries
        if kind == Update.DELETE:
            del entries[canon]
            undo.append(lambda: entries.__setitem__(canon, old))
            if t.is_exact:
                ops.delete(t.swx_id, old)
            else:
                ts.rebuild_pending = True
            return None

        if kind == Update.MODIFY and not te.HasField("action"):
            # P4Runtime 9.1.2: a MODIFY may leave the action unset, and the
            # entry keeps its own (it only changes direct resources then)
            action_id, data = old.action_id, old.action_data
            kept = p4r.TableEntry()
            kept.CopyFrom(te)
            kept.action.CopyFrom(old.proto.action)
            te = kept
        else:
            action_id, data = self._action(t, te, for_default=False)
        # The request's own message: upb keeps the request alive through it,
        # and nothing mutates a request after it is parsed. A MODIFY without
        # a meter config resets the direct meter to its default, as an INSERT
        # without one starts there (P4Runtime 9.1.7, "Direct Resources").
        meter_config = None
        if has_direct:
            if te.HasField("meter_config"):
                meter_config = te.meter_config
            te = _without_direct(te)
        stored = StoredEntry(key, action_id, data, mask, prio, te, meter_config)
        entries[canon] = stored
        if old is None:
            undo.append(lambda: entries.pop(canon, None))
        else:
            undo.append(lambda: entries.__setitem__(canon, old))
        if t.is_exact:
            ops.add(t.swx_id, stored, old)
        else:
            ts.rebuild_pending = True
        return ts, stored

    def _apply_default(self, ts: TableState, kind: int, te: p4r.TableEntry, ops: libbsw.OpBatch,
                       undo: list) -> None:
        t = ts.map
        if kind != Update.MODIFY:
            raise _invalid(f"table {t.name}: the default entry can only be modified")
        if te.match:
            raise _invalid(f"table {t.name}: the default entry has no match fields")
        if te.priority:
            raise _invalid(f"table {t.name}: the default entry has no priority (must be 0)")
        if t.const_default_action_id:
            raise P4RuntimeError(grpc.StatusCode.PERMISSION_DENIED, f"table {t.name}: default action is const")
        # Everything is checked before the store changes: a refused update
        # leaves nothing behind (the undo log only runs for failed commits).
        if te.HasField("action"):
            action_id, data = self._action(t, te, for_default=True)
            proto = _without_direct(te)
        else:  # reset to the program's default
            if t.initial_default is None:
                raise _invalid(f"table {t.name}: no initial default action known")
            aid, values = t.initial_default
            am = t.actions[aid]
            action_id, data = am.swx_id, am.encode(values, t.data_size)
            proto = None
        old, old_meter = ts.default_proto, ts.default_meter_config
        ts.default_proto = proto
        # without a meter config, the default entry's direct meter goes back
        # to never red, as any entry's modify (and a reset) does
        ts.default_meter_config = te.meter_config if te.HasField("meter_config") else None
        undo.append(lambda: (setattr(ts, "default_proto", old), setattr(ts, "default_meter_config", old_meter)))
        ops.set_default(t.swx_id, action_id, data)

    def add_rebuilds(self, ops: libbsw.OpBatch) -> None:
        """One REBUILD op per wildcard table changed since the last call, at
        the end of the batch (after its exact-table ops)."""
        for ts in self.tables.values():
            if not ts.rebuild_pending:
                continue
            ts.rebuild_pending = False
            ops.rebuild(ts.map.swx_id, list(ts.entries.values()))

    def roll_back(self, undo: list) -> None:
        """The store as before a batch whose commit the pipeline refused
        (nothing of it reached the data plane): its undo log, newest first,
        and no rebuild left pending."""
        for fn in reversed(undo):
            fn()
        for ts in self.tables.values():
            ts.rebuild_pending = False

    # ---- reads ----
    def read(self, te: p4r.TableEntry):
        """Entries matching a Read request's TableEntry (wildcards per spec 11.1)."""
        for _, _, proto in self.read_stored(te):
            yield proto

    def read_stored(self, te: p4r.TableEntry, tables: list[TableState] | None = None):
        """(table, stored entry or None for the default entry, proto) of the
        entries a Read request's TableEntry selects, among `tables` (default:
        all) when it names no table. Its filters (P4Runtime spec, "Wildcard
        Reads"): match (one entry), action id, priority, controller_metadata,
        metadata, is_default_action; a read of all tables takes none."""
        action_id = self._action_filter(te)
        filtered = bool(action_id or te.priority or te.controller_metadata or te.metadata)
        if te.table_id:
            states = [self._table(te.table_id)]
        else:
            if filtered or te.match or te.HasField("action") or te.is_default_action:
                raise _invalid("a read of all tables (table_id 0) takes no other filter")
            states = list(self.tables.values()) if tables is None else tables
        for ts in states:
            if te.is_default_action:
                proto = self.default_entry(ts)
                if _selects(te, action_id, proto):
                    yield ts, None, proto
                continue
            if te.match:
                canon, *_ = self._match(ts.map, te)
                e = ts.entries.get(canon)
                if e is not None and _selects(te, action_id, e.proto):
                    yield ts, e, e.proto
                continue
            for e in ts.entries.values():
                if not filtered or _selects(te, action_id, e.proto):
                    yield ts, e, e.proto

    @staticmethod
    def _action_filter(te: p4r.TableEntry) -> int:
        """The action id a Read filters on (0: none). The spec allows only
        that: no parameters, no action profile member or group."""
        if not te.HasField("action"):
            return 0
        kind = te.action.WhichOneof("type")
        if kind != "action":
            raise _invalid(f"a read can filter on a direct action's id only, not on {kind or 'an empty action'}")
        if te.action.action.params:
            raise _invalid("a read cannot filter on action parameters")
        return te.action.action.action_id

    def find(self, te: p4r.TableEntry) -> tuple[TableState, StoredEntry | None]:
        """The one entry (or default entry) a write of a direct resource names."""
        ts = self._table(te.table_id)
        if te.is_default_action:
            return ts, None
        if not te.match:
            raise _invalid(f"table {ts.map.name}: name one entry by its match fields (or the default entry)")
        canon, *_ = self._match(ts.map, te)
        e = ts.entries.get(canon)
        if e is None:
            raise P4RuntimeError(grpc.StatusCode.NOT_FOUND, f"table {ts.map.name}: no such entry")
        return ts, e

    def default_entry(self, ts: TableState) -> p4r.TableEntry:
        if ts.default_proto is not None:
            return ts.default_proto
        te = p4r.TableEntry(table_id=ts.map.id, is_default_action=True)
        if ts.map.initial_default:
            aid, values = ts.map.initial_default
            act = te.action.action
            act.action_id = aid
            am = ts.map.actions[aid]
            for pid in sorted(am.params):
                act.params.add(param_id=pid, value=canonical(values.get(pid, 0), am.params[pid].bitwidth))
        return te

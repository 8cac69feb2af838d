"""The map between a P4Info and the SWX pipeline built from the same program.

P4Runtime speaks in P4Info ids; the pipeline knows tables, actions, match
fields and register/meter arrays by its own names and ids. The names come from
the compiler's outputs (context.json `name` -> `target_name`, then the .spec),
the byte layouts from the built pipeline itself (rte_swx_ctl info), so nothing
here is written by hand for one program.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Iterable

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as p4r

from . import swx_spec

MT = p4info_pb2.MatchField


class MappingError(ValueError):
    """The P4Info does not describe the pipeline config it came with."""


@dataclass
class FieldMap:
    id: int
    name: str
    bitwidth: int
    match_type: int  # p4info MatchField.MatchType
    swx_bits: int = 0
    is_header: bool = False
    offset: int = 0

    def encode(self, value: int) -> bytes:
        """The field's bytes as the pipeline stores them in a table key."""
        n = self.swx_bits // 8
        return value.to_bytes(n, "big" if self.is_header else "little")


@dataclass
class ParamMap:
    id: int
    name: str
    bitwidth: int
    swx_bits: int = 0
    network_order: bool = False
    offset: int = 0


@dataclass
class ActionMap:
    id: int
    name: str
    swx_name: str
    swx_id: int = -1
    params: dict[int, ParamMap] = field(default_factory=dict)
    # (param id, bitwidth, bytes, byte order) in P4Info id order, which is
    # the order of the action data; set by PipelineMap.bind
    layout: tuple[tuple[int, int, int, str], ...] = ()

    def data_from_params(self, params, data_size: int) -> bytes | None:
        """The action data for the params of a P4Runtime Action, when each
        is given once, in P4Info order, and fits its bitwidth (what clients
        send); None for anything else, which the caller's checked path then
        explains. One pass without the checked path's dicts: this runs for
        every table write."""
        layout = self.layout
        if len(params) != len(layout):
            return None
        parts = []
        for p, (pid, bits, n, order) in zip(params, layout):
            raw = p.value
            v = int.from_bytes(raw, "big")
            if p.param_id != pid or not raw or v >> bits:
                return None
            parts.append(v.to_bytes(n, order))
        data = b"".join(parts)
        return data if len(data) == data_size else data.ljust(data_size, b"\0")

    def encode(self, values: dict[int, int], data_size: int) -> bytes:
        data = bytearray(data_size)
        for pid, p in self.params.items():
            n = p.swx_bits // 8
            data[p.offset:p.offset + n] = values.get(pid, 0).to_bytes(n, "big" if p.network_order else "little")
        return bytes(data)


@dataclass
class TableMap:
    id: int
    name: str
    swx_name: str
    size: int
    fields: dict[int, FieldMap]
    actions: dict[int, ActionMap]          # every action the table may use, by P4Info id
    entry_action_ids: set[int]             # not @defaultonly
    default_action_ids: set[int]           # not @tableonly
    const_default_action_id: int
    initial_default: tuple[int, dict[int, int]] | None
    needs_priority: bool
    swx_id: int = -1
    is_exact: bool = True
    key_size: int = 0
    data_size: int = 0
    # p4c-dpdk's direct resources: arrays of size + 1, indexed by the entry
    # (0 is the miss / default action), see DirectResources.index
    direct_counter: CounterMap | None = None
    direct_meter: MeterMap | None = None
    # all-exact tables: (field id, bitwidth, bytes, byte order, byte offset)
    # by field id; set by PipelineMap.bind
    exact_layout: tuple[tuple[int, int, int, str, int], ...] = ()
    exact_contiguous: bool = False         # the fields fill the key in id order

    def exact_key(self, match) -> tuple[tuple, bytes] | None:
        """(canonical key, key bytes) of an all-exact table's match, when it
        names every field once, in P4Info id order, each with a value that
        fits (what clients send); None for anything else, which the checked
        path then explains. The canonical key is the checked path's."""
        layout = self.exact_layout
        if len(match) != len(layout) or not layout:
            return None
        canon = []
        parts = []
        for fm, (fid, bits, n, order, _) in zip(match, layout):
            raw = fm.exact.value          # empty for another match kind
            v = int.from_bytes(raw, "big")
            if fm.field_id != fid or not raw or v >> bits:
                return None
            canon.append((fid, v))
            parts.append(v.to_bytes(n, order))
        if self.exact_contiguous:
            key = b"".join(parts)
        else:
            buf = bytearray(self.key_size)
            for part, (_, _, n, _, off) in zip(parts, layout):
                buf[off:off + n] = part
            key = bytes(buf)
        return tuple(canon), key


@dataclass
class CounterMap:
    id: int
    name: str
    size: int
    unit: int  # p4info CounterSpec.Unit
    packets_array: str | None
    bytes_array: str | None

    def read(self, pipeline, index: int) -> p4r.CounterData:
        """The counter at index, from its register arrays (summed over instances)."""
        data = p4r.CounterData()
        if self.packets_array:
            data.packet_count = pipeline.regarray_read(self.packets_array, index)
        if self.bytes_array:
            data.byte_count = pipeline.regarray_read(self.bytes_array, index)
        return data

    def write(self, pipeline, index: int, data: p4r.CounterData) -> None:
        if self.packets_array:
            pipeline.regarray_write(self.packets_array, index, data.packet_count)
        if self.bytes_array:
            pipeline.regarray_write(self.bytes_array, index, data.byte_count)


@dataclass
class MeterMap:
    id: int
    name: str
    size: int
    unit: int
    swx_name: str

    def configure(self, pipeline, index: int, cfg: p4r.MeterConfig | None) -> None:
        """Set the meter at index to cfg, or reset it to never-red (None)."""
        if cfg is None:
            pipeline.meter_reset(self.swx_name, index)
        else:
            pipeline.meter_set(self.swx_name, index, cfg.cir, cfg.pir, cfg.cburst, cfg.pburst)

    def read_counters(self, pipeline, index: int) -> p4r.MeterCounterData:
        """Packets and bytes per colour the meter at index gave since its
        last configuration (P4Runtime's MeterCounterData; SWX clears them
        when a meter is set or reset)."""
        pkts, nbytes = pipeline.meter_stats(self.swx_name, index)
        return p4r.MeterCounterData(
            green=p4r.CounterData(packet_count=pkts[0], byte_count=nbytes[0]),
            yellow=p4r.CounterData(packet_count=pkts[1], byte_count=nbytes[1]),
            red=p4r.CounterData(packet_count=pkts[2], byte_count=nbytes[2]))


@dataclass
class RegisterMap:
    id: int
    name: str
    size: int
    bitwidth: int
    swx_name: str


@dataclass
class ControllerHeader:
    """packet_in / packet_out: the header the P4 program puts before the frame."""
    name: str
    fields: list[tuple[int, str, int]]  # (id, name, bitwidth) in header order

    # computed once: every packet-in and packet-out uses them
    @cached_property
    def n_bytes(self) -> int:
        return (sum(bw for _, _, bw in self.fields) + 7) // 8

    @cached_property
    def widths(self) -> dict[int, int]:
        """Field id -> bitwidth."""
        return {fid: bw for fid, _, bw in self.fields}

    @cached_property
    def layout(self) -> list[tuple[int, int, int]]:
        """(id, bit offset from the header's first bit, width) per field."""
        out, offset = [], 0
        for fid, _, bw in self.fields:
            out.append((fid, offset, bw))
            offset += bw
        return out

    def decode(self, data: bytes) -> list[tuple[int, int]]:
        bits = int.from_bytes(data[:self.n_bytes], "big")
        shift = self.n_bytes * 8
        out = []
        for fid, _, bw in self.fields:
            shift -= bw
            out.append((fid, (bits >> shift) & ((1 << bw) - 1)))
        return out

    def encode(self, values: dict[int, int]) -> bytes:
        bits = 0
        for fid, _, bw in self.fields:
            bits = (bits << bw) | (values.get(fid, 0) & ((1 << bw) - 1))
        pad = self.n_bytes * 8 - sum(bw for _, _, bw in self.fields)
        return (bits << pad).to_bytes(self.n_bytes, "big")


def _context_names(context: dict | None) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """From p4c-dpdk's context.json: P4 name -> target name for tables and
    externs (counters, meters, registers), and per table the P4 action name ->
    target action name (p4c-dpdk gives an action used by several tables one
    SWX action per table: forward, forward_1, ...)."""
    names: dict[str, str] = {}
    table_actions: dict[str, dict[str, str]] = {}
    for x in (context or {}).get("externs", []):
        if "name" in x and "target_name" in x:
            names[x["name"]] = x["target_name"]
    for t in (context or {}).get("tables", []):
        if "name" in t and "target_name" in t:
            names[t["name"]] = t["target_name"]
            table_actions[t["name"]] = {a["name"]: a["target_name"] for a in t.get("actions", [])
                                        if "name" in a and "target_name" in a}
    return names, table_actions


def _resolve(p4name: str, candidates: Iterable[str], ctx: dict[str, str]) -> str | None:
    cands = set(candidates)
    target = ctx.get(p4name)
    if target is not None:
        # context.json target names may keep the control prefix the spec drops
        for t in (target, target.split(".")[-1], target.replace(".", "_")):
            if t in cands:
                return t
    last = p4name.split(".")[-1]
    for c in (p4name, p4name.replace(".", "_"), last, f"{last}_0"):
        if c in cands:
            return c
    matches = [c for c in cands if c.endswith("_" + last) or c.endswith("_" + last + "_0")]
    return matches[0] if len(matches) == 1 else None


class PipelineMap:
    """Everything the P4Runtime service needs to translate one program."""

    def __init__(self, p4info: p4info_pb2.P4Info, spec: swx_spec.Spec, context: dict | None = None):
        self.p4info = p4info
        self.spec = spec
        ctx, ctx_table_actions = _context_names(context)
        p4_actions = {a.preamble.id: a for a in p4info.actions}

        self.tables: dict[int, TableMap] = {}
        for t in p4info.tables:
            swx = _resolve(t.preamble.name, spec.tables, ctx)
            if swx is None:
                raise MappingError(f"table {t.preamble.name} (id {t.preamble.id}) is not in the pipeline spec")
            st = spec.tables[swx]
            if len(st.keys) != len(t.match_fields):
                raise MappingError(f"table {t.preamble.name}: P4Info has {len(t.match_fields)} match fields, "
                                   f"spec table {swx} has {len(st.keys)}")
            for mf in t.match_fields:
                if mf.match_type == MT.RANGE:
                    raise MappingError(f"table {t.preamble.name}: range match ({mf.name}) is not supported by SWX")
            acts = {r.id: self._table_action(t.preamble.name, st, p4_actions[r.id], ctx_table_actions)
                    for r in t.action_refs}
            entry_ids = {r.id for r in t.action_refs if r.scope != p4info_pb2.ActionRef.DEFAULT_ONLY}
            default_ids = {r.id for r in t.action_refs if r.scope != p4info_pb2.ActionRef.TABLE_ONLY}
            self.tables[t.preamble.id] = TableMap(
                id=t.preamble.id, name=t.preamble.name, swx_name=swx, size=t.size,
                fields={mf.id: FieldMap(mf.id, mf.name, mf.bitwidth, mf.match_type) for mf in t.match_fields},
                actions=acts, entry_action_ids=entry_ids, default_action_ids=default_ids,
                const_default_action_id=t.const_default_action_id,
                initial_default=self._initial_default(st, acts),
                needs_priority=any(mf.match_type in (MT.TERNARY, MT.RANGE, MT.OPTIONAL) for mf in t.match_fields))

        self.counters: dict[int, CounterMap] = {}
        for c in p4info.counters:
            self.counters[c.preamble.id] = self._counter(c.preamble, c.spec.unit, c.size, ctx)

        self.meters: dict[int, MeterMap] = {}
        for m in p4info.meters:
            self.meters[m.preamble.id] = self._meter(m.preamble, m.spec.unit, m.size, ctx)

        self.direct_counters: dict[int, TableMap] = {}
        for c in p4info.direct_counters:
            t = self._direct_table(c.preamble.name, c.direct_table_id)
            t.direct_counter = self._counter(c.preamble, c.spec.unit, t.size + 1, ctx)
            self.direct_counters[c.preamble.id] = t
        self.direct_meters: dict[int, TableMap] = {}
        for m in p4info.direct_meters:
            t = self._direct_table(m.preamble.name, m.direct_table_id)
            t.direct_meter = self._meter(m.preamble, m.spec.unit, t.size + 1, ctx)
            self.direct_meters[m.preamble.id] = t

        self.registers: dict[int, RegisterMap] = {}
        for r in p4info.registers:
            swx = _resolve(r.preamble.name, spec.regarrays, ctx)
            if swx is None:
                raise MappingError(f"register {r.preamble.name} has no register array in the pipeline spec")
            bw = r.type_spec.bitstring.bit.bitwidth or r.type_spec.bitstring.varbit.max_bitwidth or 64
            self.registers[r.preamble.id] = RegisterMap(r.preamble.id, r.preamble.name, r.size, bw, swx)

        self.controller_headers: dict[str, ControllerHeader] = {
            h.preamble.name: ControllerHeader(h.preamble.name, [(m.id, m.name, m.bitwidth) for m in h.metadata])
            for h in p4info.controller_packet_metadata}

    def _counter(self, preamble, unit: int, size: int, ctx: dict[str, str]) -> CounterMap:
        """p4c-dpdk makes a PACKETS_AND_BYTES counter two register arrays,
        <name>_packets and <name>_bytes, and a one-unit counter one."""
        regs = self.spec.regarrays
        pk = _resolve(preamble.name, [r[:-8] for r in regs if r.endswith("_packets")], ctx)
        by = _resolve(preamble.name, [r[:-6] for r in regs if r.endswith("_bytes")], ctx)
        plain = _resolve(preamble.name, regs, ctx)
        packets = f"{pk}_packets" if pk else (plain if unit == p4info_pb2.CounterSpec.PACKETS else None)
        bytes_ = f"{by}_bytes" if by else (plain if unit == p4info_pb2.CounterSpec.BYTES else None)
        if packets is None and bytes_ is None:
            raise MappingError(f"counter {preamble.name} has no register array in the pipeline spec")
        return CounterMap(preamble.id, preamble.name, size, unit, packets, bytes_)

    def _meter(self, preamble, unit: int, size: int, ctx: dict[str, str]) -> MeterMap:
        swx = _resolve(preamble.name, self.spec.metarrays, ctx)
        if swx is None:
            raise MappingError(f"meter {preamble.name} has no meter array in the pipeline spec")
        return MeterMap(preamble.id, preamble.name, size, unit, swx)

    def _direct_table(self, name: str, table_id: int) -> TableMap:
        t = self.tables.get(table_id)
        if t is None:
            raise MappingError(f"direct resource {name}: its table id {table_id} is not in the P4Info")
        if any(f.match_type != MT.EXACT for f in t.fields.values()):
            raise MappingError(f"direct resource {name}: table {t.name} is not exact-match (p4c-dpdk "
                               "and SWX index direct resources by exact-match entries only)")
        return t

    def _table_action(self, table: str, st: swx_spec.SpecTable, a, ctx_table_actions) -> ActionMap:
        """The SWX action that implements P4 action `a` in this table."""
        swx = _resolve(a.preamble.name, st.actions, ctx_table_actions.get(table, {}))
        if swx is None:
            last = a.preamble.name.split(".")[-1]
            same = [n for n in st.actions if n == last or (n.startswith(last + "_") and n[len(last) + 1:].isdigit())]
            swx = same[0] if len(same) == 1 else None
        if swx is None:
            raise MappingError(f"table {table}: action {a.preamble.name} (id {a.preamble.id}) is not among "
                               f"the spec table's actions {st.actions}")
        n_args = len(self.spec.action_args(swx))
        if n_args != len(a.params):
            raise MappingError(f"action {a.preamble.name}: P4Info has {len(a.params)} parameters, "
                               f"spec action {swx} has {n_args}")
        return ActionMap(a.preamble.id, a.preamble.name, swx,
                         params={p.id: ParamMap(p.id, p.name, p.bitwidth) for p in a.params})

    def _initial_default(self, st: swx_spec.SpecTable, acts: dict[int, ActionMap]):
        for a in acts.values():
            if a.swx_name == st.default_action:
                args = self.spec.action_args(a.swx_name)
                by_name = {p.name: pid for pid, p in a.params.items()}
                values = {}
                for (argname, _), p in zip(args, sorted(a.params.values(), key=lambda p: p.id)):
                    values[by_name.get(p.name, p.id)] = st.default_args.get(argname, 0)
                return a.id, values
        return None

    def bind(self, pipeline) -> None:
        """Fill in ids and byte layouts from the built pipeline (libbsw.Pipeline)."""
        info = pipeline.info()
        swx_tables = {pipeline.table_info(i).name.decode(): i for i in range(info.n_tables)}
        swx_actions = {pipeline.action_info(i).name.decode(): i for i in range(info.n_actions)}
        for t in self.tables.values():
            for a in t.actions.values():
                a.swx_id = swx_actions[a.swx_name]
                off = 0
                for p, idx in zip(sorted(a.params.values(), key=lambda p: p.id), range(len(a.params))):
                    arg = pipeline.action_arg_info(a.swx_id, idx)
                    p.swx_bits, p.network_order, p.offset = arg.n_bits, bool(arg.is_network_byte_order), off
                    if p.swx_bits < p.bitwidth:
                        raise MappingError(f"action {a.name} parameter {p.name}: {p.bitwidth} bits in P4Info, "
                                           f"{p.swx_bits} in the pipeline")
                    off += arg.n_bits // 8
                a.layout = tuple((p.id, p.bitwidth, p.swx_bits // 8, "big" if p.network_order else "little")
                                 for p in sorted(a.params.values(), key=lambda p: p.id))
            t.swx_id = swx_tables[t.swx_name]
            ti = pipeline.table_info(t.swx_id)
            t.is_exact, t.key_size, t.data_size = bool(ti.is_exact), ti.key_size, ti.action_data_size
            by_id = sorted(t.fields.values(), key=lambda f: f.id)
            for idx, f in enumerate(by_id):
                mf = pipeline.match_field_info(t.swx_id, idx)
                f.swx_bits, f.is_header, f.offset = mf.n_bits, bool(mf.is_header), mf.byte_offset
                if f.swx_bits < f.bitwidth:
                    raise MappingError(f"table {t.name} field {f.name}: {f.bitwidth} bits in P4Info, "
                                       f"{f.swx_bits} in the pipeline")
            if t.is_exact and by_id and all(f.match_type == MT.EXACT for f in by_id):
                t.exact_layout = tuple((f.id, f.bitwidth, f.swx_bits // 8, "big" if f.is_header else "little",
                                        f.offset) for f in by_id)
                ends = [f.offset for f in by_id[1:]] + [t.key_size]
                t.exact_contiguous = by_id[0].offset == 0 and all(
                    f.offset + f.swx_bits // 8 == end for f, end in zip(by_id, ends))

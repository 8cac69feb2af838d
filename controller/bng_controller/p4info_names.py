"""P4Info lookups by name: the one source of truth for table, field, action,
counter and controller-header names. Code asks `names.table("l2_fwd")`,
never repeats ids, and a typo fails loudly with the names that exist."""
from __future__ import annotations

from dataclasses import dataclass

from p4.config.v1 import p4info_pb2


class UnknownName(KeyError):
    pass


def _short(name: str) -> str:
    return name.split(".")[-1]


def _index(items, kind: str) -> dict[str, object]:
    out: dict[str, object] = {}
    for it in items:
        out[it.preamble.name] = it
        out.setdefault(_short(it.preamble.name), it)
        if it.preamble.alias:
            out.setdefault(it.preamble.alias, it)
    return out


@dataclass
class P4InfoNames:
    p4info: p4info_pb2.P4Info

    def __post_init__(self) -> None:
        p = self.p4info
        self._tables = _index(p.tables, "table")
        self._actions = _index(p.actions, "action")
        self._counters = _index(p.counters, "counter")
        self._meters = _index(p.meters, "meter")
        self._registers = _index(p.registers, "register")
        self._headers = {h.preamble.name: h for h in p.controller_packet_metadata}
        self._by_id = {it.preamble.id: it for group in (p.tables, p.actions, p.counters, p.meters,
                                                        p.registers) for it in group}

    @staticmethod
    def _get(index: dict, name: str, kind: str):
        try:
            return index[name]
        except KeyError:
            known = sorted({k for k in index if "." not in k})
            raise UnknownName(f"no {kind} named {name!r} in the P4Info (known: {', '.join(known)})") from None

    def by_id(self, obj_id: int):
        try:
            return self._by_id[obj_id]
        except KeyError:
            raise UnknownName(f"no P4Info object with id {obj_id}") from None

    def table_by_id(self, table_id: int) -> p4info_pb2.Table:
        return self.by_id(table_id)

    def action_by_id(self, action_id: int) -> p4info_pb2.Action:
        return self.by_id(action_id)

    def table_name(self, table_id: int) -> str:
        """The short name of a table (its P4 name without the control path)."""
        return _short(self.by_id(table_id).preamble.name)

    def table(self, name: str) -> p4info_pb2.Table:
        return self._get(self._tables, name, "table")

    def action(self, name: str) -> p4info_pb2.Action:
        return self._get(self._actions, name, "action")

    def counter(self, name: str) -> p4info_pb2.Counter:
        return self._get(self._counters, name, "counter")

    def meter(self, name: str) -> p4info_pb2.Meter:
        return self._get(self._meters, name, "meter")

    def register(self, name: str) -> p4info_pb2.Register:
        return self._get(self._registers, name, "register")

    def match_field(self, table: str, field: str) -> p4info_pb2.MatchField:
        t = self.table(table)
        for mf in t.match_fields:
            if mf.name == field or _short(mf.name) == field:
                return mf
        raise UnknownName(f"table {table} has no match field {field!r} "
                          f"(known: {', '.join(m.name for m in t.match_fields)})")

    def param(self, action: str, param: str) -> p4info_pb2.Action.Param:
        a = self.action(action)
        for p in a.params:
            if p.name == param:
                return p
        raise UnknownName(f"action {action} has no parameter {param!r} "
                          f"(known: {', '.join(p.name for p in a.params)})")

    def controller_header(self, name: str) -> p4info_pb2.ControllerPacketMetadata:
        return self._get(self._headers, name, "controller header")

    def header_field(self, header: str, field: str) -> p4info_pb2.ControllerPacketMetadata.Metadata:
        for m in self.controller_header(header).metadata:
            if m.name == field:
                return m
        raise UnknownName(f"controller header {header} has no field {field!r}")

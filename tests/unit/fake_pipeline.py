"""A stand-in for libbsw.Pipeline built from a .spec alone, for unit tests of
the P4Runtime layer without DPDK. Byte layouts follow the SWX rules: key
fields packed in declaration order, header fields in network order,
metadata in host order, action args in declaration order."""
from __future__ import annotations

from collections.abc import Callable

from bng_switch import libbsw, swx_spec


class FakePipeline:
    def __init__(self, spec: swx_spec.Spec, header_prefix: str = "h."):
        self.spec = spec
        self.tables = list(spec.tables.values())
        self.actions = list(spec.actions.values())
        self.header_prefix = header_prefix
        self.commits: list[list[libbsw.PendingOp]] = []
        self.fail_next_commit: int | None = None
        # errno for the ops a table full or out of memory would refuse: any
        # commit holding one of them fails, every time
        self.refuse: Callable[[libbsw.PendingOp], int | None] | None = None
        self.regs: dict[tuple[str, int], int] = {}

    def info(self):
        return libbsw.PipelineInfo(0, 0, len(self.actions), len(self.tables), len(self.spec.regarrays),
                                   len(self.spec.metarrays))

    def _field_bits(self, name: str) -> int:
        struct_field = name.split(".")[-1]
        for fields in self.spec.structs.values():
            for fname, bits in fields:
                if fname == struct_field:
                    return bits
        raise KeyError(name)

    def table_info(self, i: int):
        t = self.tables[i]
        key_size = sum(self._field_bits(f) // 8 for f, _ in t.keys)
        data = max((sum(b // 8 for _, b in self.spec.action_args(a)) for a in t.actions), default=0)
        exact = all(m == "exact" for _, m in t.keys) and bool(t.keys)
        return libbsw.TableInfo(t.name.encode(), len(t.keys), len(t.actions), t.size, int(exact), key_size, data,
                                int(t.default_const))

    def match_field_info(self, ti: int, fi: int):
        t = self.tables[ti]
        off = sum(self._field_bits(f) // 8 for f, _ in t.keys[:fi])
        name, mt = t.keys[fi]
        kind = {"exact": libbsw.MATCH_EXACT, "lpm": libbsw.MATCH_LPM}.get(mt, libbsw.MATCH_WILDCARD)
        return libbsw.MatchFieldInfo(kind, int(name.startswith(self.header_prefix)), self._field_bits(name), off)

    def action_info(self, i: int):
        a = self.actions[i]
        return libbsw.ActionInfo(a.name.encode(), len(self.spec.action_args(a.name)))

    def action_arg_info(self, ai: int, arg: int):
        name, bits = self.spec.action_args(self.actions[ai].name)[arg]
        return libbsw.ActionArgInfo(name.encode(), bits, 1)

    def table_commit(self, ops):
        if self.fail_next_commit is not None:
            errno, self.fail_next_commit = self.fail_next_commit, None
            raise libbsw.BswError("bsw_table_commit_packed", -errno, "injected failure")
        for op in ops.ops if self.refuse else ():
            refused = self.refuse(op)
            if refused:
                raise libbsw.BswError("bsw_table_commit_packed", -refused, "refused op")
        # The packed format carries no lengths: a key or action data of the
        # wrong size would put C out of step for the rest of the batch.
        for op in ops.ops:
            info = self.table_info(op.table_id)
            for e in ([op.entry, op.undo] if op.entries is None else op.entries):
                if e is None:
                    continue
                assert e.key is None or len(e.key) == info.key_size, (op, info.key_size)
                assert e.key_mask is None or len(e.key_mask) == info.key_size, (op, info.key_size)
                assert e.action_data is None or len(e.action_data) == info.action_data_size, (
                    op, info.action_data_size)
        ops.pack()                       # what the real pipeline does with it
        self.commits.append(list(ops.ops))

    def regarray_read(self, name, index):
        return self.regs.get((name, index), 0)

    def regarray_write(self, name, index, value):
        self.regs[(name, index)] = value

"""A reader for the DPDK SWX pipeline specification (.spec) emitted by p4c-dpdk.

The library builds the pipeline from the same file; this reader only lists
the objects it declares (tables, actions, register and meter arrays) so that
the P4Runtime server can VERIFY a pipeline config and map P4Info names before
anything is built, and know each table's initial default action.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field


class SpecError(ValueError):
    pass


@dataclass
class SpecTable:
    name: str
    keys: list[tuple[str, str]] = field(default_factory=list)  # (field, match type)
    actions: list[str] = field(default_factory=list)
    default_action: str = ""
    default_args: dict[str, int] = field(default_factory=dict)
    default_const: bool = False
    size: int = 0
    is_learner: bool = False


@dataclass
class SpecAction:
    name: str
    args_struct: str | None


@dataclass
class Spec:
    structs: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    actions: dict[str, SpecAction] = field(default_factory=dict)
    tables: dict[str, SpecTable] = field(default_factory=dict)
    regarrays: dict[str, int] = field(default_factory=dict)
    metarrays: dict[str, int] = field(default_factory=dict)
    metadata_struct: str | None = None
    headers: dict[str, str] = field(default_factory=dict)   # header name -> struct

    def struct_bytes(self, name: str) -> int:
        return sum(bits for _, bits in self.structs.get(name, [])) // 8

    def check_limits(self) -> None:
        """Refuse what DPDK 22.11 would build but run wrongly: its
        instructions address struct fields with an 8-bit byte offset
        (struct instr_operand), so a metadata or header struct beyond 256
        bytes is silently corrupted at run time."""
        named = [("metadata", self.metadata_struct)] if self.metadata_struct else []
        named += [(f"header {h}", st) for h, st in self.headers.items()]
        for what, st in named:
            size = self.struct_bytes(st)
            if size > SWX_STRUCT_REACH:
                raise SpecError(f"{what} (struct {st}) is {size} bytes; SWX instructions reach only "
                                f"the first {SWX_STRUCT_REACH} bytes of a struct. With p4c-dpdk, "
                                "every intermediate result of an expression becomes a metadata "
                                "field: simplify the arithmetic or use fewer key copies")

    def action_args(self, action: str) -> list[tuple[str, int]]:
        a = self.actions[action]
        return self.structs.get(a.args_struct, []) if a.args_struct else []


# Declarations open a block; `table X` without a brace is an instruction
# inside `apply { ... }`, which is skipped whole.
_BLOCK = re.compile(r"^(struct|action|table|learner|selector|apply)\b\s*(\S*).*\{$")
_FIELD = re.compile(r"^bit<(\d+)>\s+(\S+)")


SWX_STRUCT_REACH = 256


def _int(tok: str) -> int:
    return int(tok, 0)


def parse(text: str) -> Spec:
    """Parse the declarations of a .spec; raises SpecError with the line number."""
    spec = Spec()
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].split("//")[0].split(";")[0].strip()
        i += 1
        if not line:
            continue
        toks = line.split()
        try:
            if toks[0] == "regarray":
                spec.regarrays[toks[1]] = _int(toks[toks.index("size") + 1])
                continue
            if toks[0] == "metarray":
                spec.metarrays[toks[1]] = _int(toks[toks.index("size") + 1])
                continue
            if toks[0] == "metadata" and "instanceof" in toks:
                spec.metadata_struct = toks[toks.index("instanceof") + 1]
                continue
            if toks[0] == "header" and "instanceof" in toks:
                spec.headers[toks[1]] = toks[toks.index("instanceof") + 1]
                continue
            m = _BLOCK.match(line)
            if not m:
                continue
            kind, name = m.groups()
            if kind == "apply":
                _, i = _block(lines, i)
                continue
            if kind == "action":
                # action NAME args none | action NAME args instanceof STRUCT
                args = toks[toks.index("args") + 1] if "args" in toks else "none"
                if args == "instanceof":
                    args = toks[toks.index("instanceof") + 1]
                spec.actions[name] = SpecAction(name, None if args == "none" else args)
            body, i = _block(lines, i)
            if kind == "struct":
                spec.structs[name] = [(mm.group(2), int(mm.group(1)))
                                      for b in body if (mm := _FIELD.match(b))]
            elif kind in ("table", "learner"):
                spec.tables[name] = _table(name, body, kind == "learner")
        except (IndexError, ValueError) as e:
            raise SpecError(f"spec line {i}: cannot parse '{line}': {e}") from e
    return spec


def _block(lines: list[str], i: int) -> tuple[list[str], int]:
    """Lines of a { ... } block (nested blocks flattened), and the index after it."""
    depth = 1
    body: list[str] = []
    while i < len(lines) and depth:
        line = lines[i].split("//")[0].strip()
        i += 1
        depth += line.count("{") - line.count("}")
        if line and depth >= 1:
            body.append(line)
    return body, i


def _table(name: str, body: list[str], is_learner: bool) -> SpecTable:
    t = SpecTable(name, is_learner=is_learner)
    section = None
    for line in body:
        toks = line.split()
        if toks[0] in ("key", "actions") and line.endswith("{"):
            section = toks[0]
            continue
        if line == "}":
            section = None
            continue
        if section == "key" and len(toks) >= 2:
            t.keys.append((toks[0], toks[1]))
        elif section == "actions":
            t.actions.append(toks[0])
        elif toks[0] == "default_action":
            t.default_action = toks[1]
            t.default_const = toks[-1] == "const"
            if "args" in toks:
                rest = toks[toks.index("args") + 1:]
                if rest and rest[0] != "none":
                    pairs = [x for x in rest if x != "const"]
                    t.default_args = {pairs[k]: _int(pairs[k + 1]) for k in range(0, len(pairs) - 1, 2)}
        elif toks[0] == "size":
            t.size = _int(toks[1])
    return t

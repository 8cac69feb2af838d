"""Straight-line C from an SWX spec: the whole apply block as one function.

SWX runs a program as instruction groups over per-thread state in memory
(header pointers, validity bits, metadata, all in `struct thread`). This
generator writes the same program as one C function per pipeline instead:
header pointers, validity bits and metadata fields are locals that gcc can
keep in registers, jumps are gotos, each table's actions are inlined at its
lookup, and the deparser writes the emitted headers in front of the payload.
The worker calls it in place of rte_swx_pipeline_run(), over the same
pipeline's ports, tables (through their lookup functions and
p->table_state, so the table manager's updates apply; an exact table whose
lookup function is the switch's exact-match lookup for its key size, or
the index table's or the line table's, is looked up inline: the same
lookup over the same object, bsw_swx_em.h, bsw_swx_index.h and
bsw_swx_line_em.h), register and meter arrays. A
large exact table's key is hashed and its bucket prefetched as soon as the
key is final (Gen.early_prefetches), ahead of the lookup. Semantics follow
DPDK 22.11's instructions (rte_swx_pipeline_internal.h); the generated
code checks at load time that the pipeline's ids and layouts are the ones
it was generated for.

Only the instructions p4c-dpdk emits for the programs here are handled; any
other is refused with its line, so a program that needs more fails at
generation, not at run time.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path


class StraightError(ValueError):
    pass


EM_KEY_SIZE_MAX = 32      # bsw_swx_em.h's BSW_EM_KEY_SIZE_MAX: larger keys have no inline lookup
FRAME_PRELUDE = "bsw_frame_length_h"   # bsw_frame_length.c's FRAME_PRELUDE_TYPE, 4 bytes
ALU = {"add": "+", "sub": "-", "and": "&", "or": "|", "xor": "^", "shl": "<<", "shr": ">>"}    # C operators
C_UINT = {1: "uint8_t", 2: "uint16_t", 4: "uint32_t", 8: "uint64_t"}    # by size in bytes
# Exact tables this large have their bucket prefetched early (early_prefetches)
# and may be line tables (bsw_internal.h's BSW_LINE_EM_MIN_KEYS: a smaller
# line table would still be looked up, through its function, not inline).
LARGE_TABLE_ENTRIES = 0x4000
PREFETCH_MIN_LEAD = 8           # instructions between the prefetch and the lookup, at least


@dataclass
class Field:
    name: str
    bits: int
    offset: int        # bytes


@dataclass
class Struct:
    name: str
    fields: list[Field]

    @property
    def size(self) -> int:
        return sum(f.bits for f in self.fields) // 8

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise StraightError(f"struct {self.name} has no field {name}")


@dataclass
class Table:
    name: str
    keys: list[str]
    actions: list[str]
    exact: bool = False          # every key field matched exact
    lpm: bool = False            # one key field, matched lpm
    size: int = 0                # entries, as the spec sizes it


@dataclass
class Program:
    structs: dict[str, Struct] = field(default_factory=dict)
    headers: dict[str, Struct] = field(default_factory=dict)       # in declaration order
    meta: Struct | None = None
    regarrays: list[str] = field(default_factory=list)
    metarrays: list[str] = field(default_factory=list)
    actions: dict[str, tuple[Struct | None, list[str]]] = field(default_factory=dict)
    tables: dict[str, Table] = field(default_factory=dict)
    apply: list[str] = field(default_factory=list)


def parse(text: str) -> Program:
    prog = Program()
    lines = [ln.split(";")[0].rstrip() for ln in text.splitlines()]
    i = 0
    while i < len(lines):
        ln = lines[i].strip()
        i += 1
        if not ln:
            continue
        tok = ln.split()
        if tok[0] == "struct":
            fields, off = [], 0
            while lines[i].strip() != "}":
                ty, name = lines[i].split()
                m = re.fullmatch(r"bit<(\d+)>", ty)
                if not m or int(m.group(1)) % 8:
                    raise StraightError(f"struct {tok[1]}: field {name} of type {ty}")
                bits = int(m.group(1))
                fields.append(Field(name, bits, off))
                off += bits // 8
                i += 1
            i += 1
            prog.structs[tok[1]] = Struct(tok[1], fields)
        elif tok[0] == "header":
            prog.headers[tok[1]] = prog.structs[tok[3]]
        elif tok[0] == "metadata":
            prog.meta = prog.structs[tok[2]]
        elif tok[0] == "regarray":
            prog.regarrays.append(tok[1])
        elif tok[0] == "metarray":
            prog.metarrays.append(tok[1])
        elif tok[0] == "action":
            args = None if tok[3] == "none" else prog.structs[tok[4]]
            body = []
            while lines[i].strip() != "}":
                body.append(lines[i].strip())
                i += 1
            i += 1
            prog.actions[tok[1]] = (args, body)
        elif tok[0] in ("table", "learner", "selector"):
            if tok[0] != "table":
                raise StraightError(f"{tok[0]} {tok[1]}: not handled")
            keys, kinds, acts, depth, section, size = [], [], [], 1, None, 0
            while depth:
                s = lines[i].strip()
                i += 1
                if s.endswith("{"):
                    section = s.split()[0]
                    depth += 1
                elif s == "}":
                    depth -= 1
                    section = None
                elif section == "key":
                    keys.append(s.split()[0])
                    kinds.append(s.split()[1])
                elif section == "actions":
                    acts.append(s.split()[0])
                elif depth == 1 and s.split()[:1] == ["size"]:
                    size = int(s.split()[1], 0)
            prog.tables[tok[1]] = Table(tok[1], keys, acts, bool(kinds) and set(kinds) == {"exact"},
                                        kinds == ["lpm"], size)
        elif tok[0] == "apply":
            while lines[i].strip() != "}":
                if lines[i].strip():
                    prog.apply.append(lines[i].strip())
                i += 1
            i += 1
        else:
            raise StraightError(f"spec line not handled: {ln}")
    if prog.meta is None:
        raise StraightError("no metadata")
    return prog


def _ident(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", s)


def _written(op: str, a: list[str]) -> str:
    """The operand instruction op (operands a) writes: a header field, a
    header (validate) or a metadata field; "" if it writes none."""
    if op == "meter":
        return a[4]
    return a[0] if op in ALU or op in ("mov", "validate", "regrd", "rx", "entryid", "ckadd", "cksub") else ""


def _key_span(fields: list[Field]) -> tuple[int, int]:
    """SWX's key of these fields: the bytes from the first one's offset to
    the end of the last one, gaps included."""
    return min(f.offset for f in fields), max(f.offset + f.bits // 8 for f in fields)


def _split_label(line: str) -> tuple[str, str]:
    """An instruction line's label ("" if it has none) and its instruction."""
    m = re.match(r"^(\w+)\s*:\s+(.*)$", line)
    return (m.group(1), m.group(2)) if m else ("", line)


class Gen:
    """C for one program. Operands: h.HDR.FIELD (network byte order in the
    header's bytes), h.HDR (a whole header, checksums only), m.FIELD (a
    local, host order), t.FIELD (the action's data, host order), immediates."""

    def __init__(self, prog: Program):
        self.p = prog
        self.hid = {h: n for n, h in enumerate(prog.headers)}
        if len(self.hid) > 64:
            raise StraightError("more than 64 headers")
        self.tid = {t: n for n, t in enumerate(prog.tables)}
        self.aid = {a: n for n, a in enumerate(prog.actions)}
        self.rid = {r: n for n, r in enumerate(prog.regarrays)}
        self.mid = {m: n for n, m in enumerate(prog.metarrays)}
        self.uniq = 0
        self.em_sizes: set[int] = set()      # key sizes of the LOOKUP_EMs written
        # Headers some instruction so far (in the listing's order, which is
        # p4c's forward flow) wrote: a whole-header checksum of one of them
        # sums its fields (ck_sum), of the others its words at once.
        self.written: set[str] = set()
        self.args: Struct | None = None      # the action being inlined
        self._emits: list[str] | None = None
        self.prelude = self.frame_prelude()

    def _effects(self, tok: list[str], one) -> set[str]:
        """one(op, operands) of an apply instruction; of a table, the union
        over its actions' instructions."""
        if tok[0] != "table":
            return one(tok[0], tok[1:])
        out: set[str] = set()
        for an in self.p.tables[tok[1]].actions:
            for ln in self.p.actions[an][1]:
                t = _split_label(ln)[1].split()
                out |= one(t[0], t[1:])
        return out

    def meta_writes(self, tok: list[str]) -> set[str]:
        """The metadata fields an apply instruction (its tokens) may write."""
        def one(op: str, a: list[str]) -> set[str]:
            target = _written(op, a)
            return {target[2:]} if target.startswith("m.") else set()
        return self._effects(tok, one)

    def header_changes(self, tok: list[str]) -> set[str]:
        """The headers whose validity an apply instruction (its tokens) may change."""
        return self._effects(tok, lambda op, a: {a[0][2:]} if op in ("extract", "lookahead", "validate",
                                                                       "invalidate") else set())

    def early_prefetches(self) -> dict[int, list[str]]:
        """Where, by apply instruction, to store the key of a large exact
        table's lookup and prefetch its bucket ahead of the lookup: the
        wait for the bucket was pppoe_up's largest single cost (perf), and
        the CPU cannot start that load before it reaches the code that
        stores the key. The place is the earliest from which no instruction
        up to the lookup writes the key's bytes (nor any action of a table
        on the way) and which the code up to the lookup is entered through
        only, so the key there is the key at the lookup. Skipped where
        another large table's lookup leads to this one (which then likely
        waits on its result, and has its own prefetch) and where no header's
        validity tells the packets bound for the lookup: the prefetch is
        guarded by the jmpv/jmpnv that leave the stretch (the headers'
        validity unchanged on the way), so packets bound for another table
        do not pay for this one's hash. A hint only: a packet that passes
        the guard and still misses the lookup pays the hash."""
        labels = [_split_label(ln)[0] for ln in self.p.apply]
        toks = [_split_label(ln)[1].split() for ln in self.p.apply]
        at = {lab: i for i, lab in enumerate(labels) if lab}
        jumps: dict[str, list[int]] = {}
        for i, tok in enumerate(toks):
            if tok[0].startswith("jmp"):
                jumps.setdefault(tok[1], []).append(i)
        out: dict[int, list[str]] = {}

        def big(tok: list[str]) -> bool:
            """A lookup of a large exact table."""
            if tok[0] != "table":
                return False
            t = self.p.tables[tok[1]]
            return t.exact and t.size >= LARGE_TABLE_ENTRIES

        for p_i, tok in enumerate(toks):
            if not big(tok):
                continue
            t = self.p.tables[tok[1]]
            if not t.keys or not all(k.startswith("m.") for k in t.keys):
                continue
            fields = [self.p.meta.field(k[2:]) for k in t.keys]
            lo, hi = _key_span(fields)
            if hi - lo > EM_KEY_SIZE_MAX:
                continue
            in_key = {f.name for f in self.p.meta.fields if f.offset < hi and f.offset + f.bits // 8 > lo}
            q = p_i
            while q > 0 and not self.meta_writes(toks[q - 1]) & in_key:
                q -= 1
            while q < p_i and any(not q <= j < p_i for i in range(q + 1, p_i) for j in jumps.get(labels[i], [])):
                q += 1
            # which instructions of the stretch lead to the lookup (p4c's jumps go forward)
            leads = [False] * (p_i - q)
            for i in range(p_i - 1, q - 1, -1):
                op, a = toks[i][0], toks[i][1:]
                nxt = [] if op in ("jmp", "tx", "drop") else [i + 1]
                if op.startswith("jmp"):
                    nxt.append(at[a[0]])
                leads[i - q] = any(n == p_i or (i < n < p_i and leads[n - q]) for n in nxt)
            # another large table on the way: this one's lookup likely waits on its result
            if p_i - q < PREFETCH_MIN_LEAD or any(big(toks[i]) and leads[i - q] for i in range(q, p_i)):
                continue
            changed = {h for i in range(q, p_i) for h in self.header_changes(toks[i])}
            guard = []
            for i in range(q, p_i):
                op, a = toks[i][0], toks[i][1:]
                if op in ("jmpv", "jmpnv") and not q <= at.get(a[0], -1) <= p_i and a[1][2:] not in changed:
                    guard.append(f"{'' if op == 'jmpnv' else '!'}(valid & (1ULL << {self.hid[a[1][2:]]}))")
            if not guard:
                continue
            ks = hi - lo
            self.em_sizes.add(ks)
            code = self.key_stores(fields) + [f"PREFETCH_EM({self.tid[t.name]}, {ks});"]
            out.setdefault(q, []).extend([f"if ({' && '.join(guard)}) {{"] + ["\t" + x for x in code] + ["}"])
        return out

    def frame_prelude(self) -> str | None:
        """The header the frame-length prelude (bsw_frame_length.c) is
        extracted into, where the run loop may make the prelude itself from
        the packet's length and receive beneath the ports' prelude wrappers
        (env->frame_rx; NULL where the ports have none): the program
        extracts it once, and first, before any label, jump or other use of
        the packet, so a prelude kept outside the packet reads the same.
        Saves a call and a write in front of each frame, and the program's
        read of the length from memory. None otherwise: the loop then
        receives through the wrappers."""
        hs = [h for h, st in self.p.headers.items() if st.name == FRAME_PRELUDE and st.size == 4]
        if len(hs) != 1:
            return None
        h = hs[0]
        first = None
        for ln in self.p.apply:
            lab, ins = _split_label(ln)
            if lab:
                return None
            tok = ins.split()
            if (tok[0] in ("rx", "regrd", "mov") or tok[0] in ALU) and not any(x.startswith("h.") for x in tok[1:]):
                continue
            first = tok
            break
        if first != ["extract", f"h.{h}"]:
            return None
        bodies = [self.p.apply] + [body for _, body in self.p.actions.values()]
        uses = sum(1 for body in bodies for ln in body
                   if _split_label(ln)[1].split()[:2] in (["extract", f"h.{h}"], ["lookahead", f"h.{h}"]))
        return h if uses == 1 else None

    # ---- operands ----
    def _hfield(self, op: str) -> tuple[str, Field]:
        _, h, f = op.split(".", 2)
        return h, self.p.headers[h].field(f)

    def width(self, op: str) -> int:
        if op.startswith("h."):
            return self._hfield(op)[1].bits
        if op.startswith("m."):
            return self.p.meta.field(op[2:]).bits
        if op.startswith("t."):
            return self.args.field(op[2:]).bits
        return 64

    def read(self, op: str) -> str:
        if op.startswith("h."):
            h, f = self._hfield(op)
            return f"ld_be(h_{_ident(h)} + {f.offset}, {f.bits // 8})"
        if op.startswith("m."):
            self.p.meta.field(op[2:])
            return f"m_{_ident(op[2:])}"
        if op.startswith("t."):
            if self.args is None:
                raise StraightError(f"{op} outside an action")
            f = self.args.field(op[2:])
            return f"ld_le(ad + {f.offset}, {f.bits // 8})"
        return f"{int(op, 0)}ULL"

    def write(self, op: str, expr: str) -> str:
        w = self.width(op)
        mask = "" if w == 64 else f" & {(1 << w) - 1:#x}ULL"
        if op.startswith("h."):
            h, f = self._hfield(op)
            return f"st_be(h_{_ident(h)} + {f.offset}, {f.bits // 8}, ({expr}));"
        if op.startswith("m."):
            return f"m_{_ident(op[2:])} = ({expr}){mask};"
        raise StraightError(f"cannot write {op}")

    def hdr(self, op: str) -> tuple[str, int]:
        name = op[2:]
        return _ident(name), self.hid[name]

    # ---- instructions ----
    def instr(self, line: str, label_prefix: str, end_label: str | None) -> list[str]:
        lab, line = _split_label(line)
        tok = line.split()
        op, a = tok[0], tok[1:]
        c: list[str] = [f"{label_prefix}{lab}: ;"] if lab else []
        target = _written(op, a)
        wrote = target[2:].split(".")[0] if target.startswith("h.") else ""
        cmp = {"jmpeq": "==", "jmpneq": "!=", "jmpgt": ">", "jmplt": "<"}
        if op == "mov":
            c.append(self.write(a[0], self.read(a[1])))
        elif op in ALU:
            c.append(self.write(a[0], f"{self.read(a[0])} {ALU[op]} {self.read(a[1])}"))
        elif op == "jmp":
            c.append(f"goto {label_prefix}{a[0]};")
        elif op in cmp:
            c.append(f"if ({self.read(a[1])} {cmp[op]} {self.read(a[2])}) goto {label_prefix}{a[0]};")
        elif op in ("jmpv", "jmpnv"):
            _, n = self.hdr(a[1])
            neg = "!" if op == "jmpnv" else ""
            c.append(f"if ({neg}(valid & (1ULL << {n}))) goto {label_prefix}{a[0]};")
        elif op in ("jmph", "jmpnh"):
            c.append(f"if ({'!' if op == 'jmpnh' else ''}hit) goto {label_prefix}{a[0]};")
        elif op in ("jmpa", "jmpna"):
            c.append(f"if (action_id {'==' if op == 'jmpa' else '!='} {self.aid[a[1]]}) goto {label_prefix}{a[0]};")
        elif op == "extract" and a[0][2:] == self.prelude:
            h, n = self.hdr(a[0])
            c.append(f"{{ uint32_t pv_ = rte_cpu_to_be_32((uint32_t)(uint16_t)pkt.length << 16); "
                     f"memcpy(pre, &pv_, 4); h_{h} = pre; valid |= 1ULL << {n}; }}")
        elif op == "extract":
            h, n = self.hdr(a[0])
            c.append(f"h_{h} = ptr; ptr += {self.p.headers[a[0][2:]].size}; valid |= 1ULL << {n};")
        elif op == "lookahead":
            h, n = self.hdr(a[0])
            c.append(f"h_{h} = ptr; valid |= 1ULL << {n};")
        elif op == "validate":
            h, n = self.hdr(a[0])
            c.append(f"if (!(valid & (1ULL << {n}))) {{ h_{h} = hs[{n}]; valid |= 1ULL << {n}; }}")
        elif op == "invalidate":
            _, n = self.hdr(a[0])
            c.append(f"valid &= ~(1ULL << {n});")
        elif op == "emit":
            h, n = self.hdr(a[0])
            c.append(f"emitted |= (valid >> {n} & 1) << {self.emits().index(a[0][2:])};")
        elif op == "tx":
            c.append(f"tx_port = {self.read(a[0])}; goto tx;")
        elif op == "drop":
            c.append("goto drop;")
        elif op == "return":
            if end_label is None:
                raise StraightError("return outside an action")
            c.append(f"goto {end_label};")
        elif op == "rx":
            c.append(self.write(a[0], "in_port"))
        elif op == "regrd":
            r = self.rid[a[1]]
            c.append(self.write(a[0], f"REG({r}, {self.read(a[2])})"))
        elif op == "regadd":
            r = self.rid[a[0]]
            c.append(f"REG({r}, {self.read(a[1])}) += {self.read(a[2])};")
        elif op == "regwr":
            r = self.rid[a[0]]
            c.append(f"REG({r}, {self.read(a[1])}) = {self.read(a[2])};")
        elif op == "meter":
            mid = self.mid[a[0]]
            c.append(self.write(a[4], f"meter_exec(p, {mid}, {self.read(a[1])}, (uint32_t)({self.read(a[2])}), "
                                      f"(enum rte_color)({self.read(a[3])}))"))
        elif op in ("ckadd", "cksub"):
            if not a[0].startswith("h.") or a[0].count(".") != 2 or self.width(a[0]) != 16:
                raise StraightError(f"{line}: a 16-bit header field is the checksum")
            dh, df = self._hfield(a[0])
            dst = f"h_{_ident(dh)} + {df.offset}"
            if a[1].count(".") == 1:           # a whole header
                if op != "ckadd":
                    raise StraightError(line)
                h, _ = self.hdr(a[1])
                size = self.p.headers[a[1][2:]].size
                if size != 20:
                    raise StraightError(f"{line}: only 20-byte headers are summed whole")
                if a[1][2:] in self.written:
                    c.append(f"ck_add_sum({dst}, {self.ck_sum(a[1][2:], f'h_{h}')});")
                else:
                    c.append(f"ck_add_hdr20({dst}, h_{h});")
            elif a[1].startswith("h."):
                sh, sf = self._hfield(a[1])
                c.append(f"ck_{op[2:]}_field({dst}, h_{_ident(sh)} + {sf.offset}, {sf.bits});")
            else:
                raise StraightError(f"{line}: checksum of a non-header operand")
        elif op == "entryid":
            c.append(self.write(a[0], "entry_id"))
        elif op == "table":
            c += self.table(a[0], label_prefix)
        else:
            raise StraightError(f"instruction not handled: {line}")
        if wrote:
            self.written.add(wrote)
        return c

    def ck_sum(self, header: str, ptr: str) -> str:
        """The 64-bit sum, congruent modulo 0xFFFF to DPDK's sum of the
        header's little-endian 32-bit words, of its fields loaded at their
        own widths: a field just stored then loads from the store (the CPU
        forwards it), where a 16-byte load of narrower stores waits for
        them to reach the cache. A byte at an odd offset weighs 2^8, at an
        even one 1 (2^16 = 1 modulo 0xFFFF); fields over 4 bytes are
        folded at 32 bits first so the shift cannot overflow."""
        terms = []
        for f in self.p.headers[header].fields:
            v = f"ld_le({ptr} + {f.offset}, {f.bits // 8})"
            if f.bits > 32:
                v = f"(({v}) >> 32) + (({v}) & 0xFFFFFFFFULL)"
            terms.append(f"(({v}) << {8 * (f.offset % 2)})")
        return " + ".join(terms)

    def copy_fn(self, sname: str, backward: bool) -> str:
        """A header's copy, field by field at the widths the generated
        code stores them (st_be), so a header written field by field just
        before is forwarded from the stores. Fields are loaded whole before
        they are stored and taken in order (forward when the destination is
        not after the source, backward otherwise), so a copy onto an
        overlapping place is safe."""
        st = self.p.structs[sname]
        body = []
        for f in (reversed(st.fields) if backward else st.fields):
            n, o = f.bits // 8, f.offset
            parts = {1: [(0, 1)], 2: [(0, 2)], 4: [(0, 4)], 8: [(0, 8)], 6: [(0, 2), (2, 4)]}.get(
                n, [(i, 1) for i in range(n)])
            loads = [f"{C_UINT[w]} v{k}; memcpy(&v{k}, s + {o + po}, {w});" for k, (po, w) in enumerate(parts)]
            stores = [f"memcpy(d + {o + po}, &v{k}, {w});" for k, (po, w) in enumerate(parts)]
            body.append("\t{ " + " ".join(loads + stores) + " }")
        name = f"cp_{'b' if backward else 'f'}_{_ident(sname)}"
        return (f"static __rte_always_inline void\n{name}(uint8_t *d, const uint8_t *s)\n{{\n"
                + "\n".join(body) + "\n}\n")

    def key_stores(self, keys: list[Field]) -> list[str]:
        """The key's bytes (SWX's metadata from its first key field to the
        end of its last) stored into kb in the pieces the lookups load them
        in (the exact-match hash and compare: 8 bytes at a time, then 4, 2,
        1), each assembled in a register from the metadata fields it covers:
        a load of one store is forwarded, one over several narrower stores
        waits for them to reach the cache."""
        lo, hi = _key_span(keys)
        pieces, at = [], lo
        while at + 8 <= hi:
            pieces.append((at, 8))
            at += 8
        for w in (4, 2, 1):
            if (hi - lo) & w:
                pieces.append((at, w))
                at += w
        c = []
        for at, w in pieces:
            parts = []
            for f in self.p.meta.fields:
                fo, fe = f.offset, f.offset + f.bits // 8
                if fe <= at or fo >= at + w:
                    continue
                v = f"(uint64_t)m_{_ident(f.name)}"
                parts.append(f"({v} >> {8 * (at - fo)})" if fo < at else f"({v} << {8 * (fo - at)})")
            c.append(f"{{ {C_UINT[w]} k_ = ({C_UINT[w]})({' | '.join(parts) or '0'}); memcpy(kb + {at}, &k_, {w}); }}")
        return c

    def table(self, name: str, label_prefix: str) -> list[str]:
        t = self.p.tables[name]
        tid = self.tid[name]
        c = []
        fields: list[Field] = []
        if t.keys and all(k.startswith("m.") for k in t.keys):
            fields = [self.p.meta.field(k[2:]) for k in t.keys]
            c += self.key_stores(fields)
            c.append("keyp = kb;")
        elif t.keys and all(k.startswith("h.") for k in t.keys):
            hs = {k.split(".")[1] for k in t.keys}
            if len(hs) != 1:
                raise StraightError(f"table {name}: key from more than one header")
            fields = [self._hfield(k)[1] for k in t.keys]
            c.append(f"keyp = h_{_ident(hs.pop())};")
        elif t.keys:
            raise StraightError(f"table {name}: key from headers and metadata")
        lo, hi = _key_span(fields) if fields else (0, 0)
        ks = hi - lo
        if t.exact and 0 < ks <= EM_KEY_SIZE_MAX:
            self.em_sizes.add(ks)
            may_index = len(t.keys) == 1 and t.keys[0].startswith("m.") and ks in (1, 2, 4)
            kind = "_LARGE" if t.size >= LARGE_TABLE_ENTRIES else "_INDEX" if may_index else ""
            c.append(f"LOOKUP_EM{kind}({tid}, {ks});")
        elif t.lpm and fields and fields[0].bits == 32:
            c.append(f"LOOKUP_LPM32({tid});")
        else:
            c.append(f"LOOKUP({tid});")
        self.uniq += 1
        end = f"{label_prefix}ACT_END_{self.uniq}"
        c.append("switch (action_id) {")
        for an in t.actions:
            args, body = self.p.actions[an]
            c.append(f"case {self.aid[an]}: {{")
            saved, self.args = self.args, args
            pre = f"{label_prefix}A{self.uniq}_{_ident(an)}_"
            for ln in body:
                c += ["\t" + x for x in self.instr(ln, pre, end)]
            self.args = saved
            c.append(f"goto {end}; }}")
        c.append("default: break; }")
        c.append(f"{end}: ;")
        return c

    def emits(self) -> list[str]:
        """The headers the program emits, in order. The tx code below is
        written for this one order, so the emits must be one block right
        before a tx (as p4c-dpdk writes the deparser) and name each header
        once."""
        if self._emits is not None:
            return self._emits
        ops = [_split_label(ln)[1].split() for ln in self.p.apply]
        at = [i for i, t in enumerate(ops) if t[0] == "emit"]
        if not at:
            self._emits = []
            return self._emits
        if at != list(range(at[0], at[-1] + 1)) or at[-1] + 1 >= len(ops) or ops[at[-1] + 1][0] != "tx":
            raise StraightError("emit instructions other than one block right before a tx")
        names = [ops[i][1][2:] for i in at]
        if len(set(names)) != len(names):
            raise StraightError("a header emitted twice")
        self._emits = names
        return names

    def tx_code(self) -> str:
        """The deparser's tx: the emitted headers in front of the payload
        (at ptr). Bit j of `emitted` is the j-th header of the emit order,
        set if it was valid at its emit. One pass from the last emitted
        header back: those at the end already in place (decapsulation, no
        change) stay and leave `emitted`; from the first one that is not,
        each header's place is counted back from there, noting whether a
        header from the packet moves towards its start or its end. Then the
        headers left are copied front to back when none from the packet
        moves towards its end (a copy then only writes over places already
        read), back to front when none moves towards its start, and through
        tmp in the mixed case. Headers built in hs[] never overlap the
        packet. Each pass starts at the first header it has to visit, by
        a jump through a table of labels (GCC's labels as values), and the
        copies stop after the last one, so a packet pays for the headers
        around those it emits, not for all the program's."""
        em = [(_ident(h), self.p.headers[h]) for h in self.emits()]
        send = ["pkt.offset = (uint32_t)(d0 - pkt.pkt);",
                "pkt.length = (uint32_t)(end - d0);"]
        if not em:
            return "\n".join("\t\t\t" + x for x in ["uint8_t *d0 = ptr;"] + send)
        inpkt = "(uintptr_t)h_{h} - (uintptr_t)pkt.pkt < (uintptr_t)(end - pkt.pkt)"
        rng = range(len(em))
        down = range(len(em) - 1, -1, -1)

        def cp(direction: str, st: Struct) -> str:
            return f"cp_{direction}_{_ident(st.name)}"

        def table(name: str) -> str:
            return f"static const void *const {name}[] = {{ {', '.join(f'&&{name}_{j}' for j in rng)} }};"

        c = [table("tx_tail"), table("tx_fwd"), table("tx_bwd"),
             "uint8_t *run = ptr, *d = ptr, *d0 = ptr;",
             "int fwd = 0, bwd = 0;",
             "if (!emitted)",
             "\tgoto tx_send;",
             "goto *tx_tail[63 - __builtin_clzll(emitted)];"]
        for j in down:
            h, st = em[j]
            c.append(f"tx_tail_{j}: if (emitted & (1ULL << {j})) {{ if (h_{h} != d - {st.size}) {{ run = d; "
                     f"goto tx_moved_{j}; }} d -= {st.size}; emitted &= ~(1ULL << {j}); }}")
        c.append("goto tx_placed;")
        for j in down:
            h, st = em[j]
            c.append(f"if (emitted & (1ULL << {j})) {{ tx_moved_{j}: d -= {st.size}; "
                     f"if ({inpkt.format(h=h)}) {{ fwd |= d < h_{h}; bwd |= d > h_{h}; }} }}")
        c += ["tx_placed:",
              "d0 = d;",
              "if (!emitted)",
              "\tgoto tx_send;",
              "if (!bwd) {",
              "\td = d0;",
              "\tgoto *tx_fwd[__builtin_ctzll(emitted)];"]
        for j in rng:
            h, st = em[j]
            c.append(f"tx_fwd_{j}: if (emitted & (1ULL << {j})) {{ {cp('f', st)}(d, h_{h}); "
                     f"d += {st.size}; emitted &= ~(1ULL << {j}); if (!emitted) goto tx_send; }}")
        c += ["}",
              "if (!fwd) {",
              "\td = run;",
              "\tgoto *tx_bwd[63 - __builtin_clzll(emitted)];"]
        for j in down:
            h, st = em[j]
            c.append(f"tx_bwd_{j}: if (emitted & (1ULL << {j})) {{ d -= {st.size}; "
                     f"{cp('b', st)}(d, h_{h}); emitted &= ~(1ULL << {j}); if (!emitted) goto tx_send; }}")
        c += ["}",
              "d = tmp;"]
        for j in rng:
            h, st = em[j]
            c.append(f"if (emitted & (1ULL << {j})) {{ {cp('f', st)}(d, h_{h}); d += {st.size}; }}")
        c += ["memcpy(d0, tmp, (size_t)(d - tmp));",
              "tx_send:"] + send
        return "\n".join("\t\t\t" + x for x in c)

    def generate(self) -> str:
        p = self.p
        meta_size = p.meta.size
        hmax = max(s.size for s in p.headers.values())
        tx = self.tx_code()
        emitted_structs = sorted({p.headers[h].name for h in self.emits()})
        copies = "\n".join(self.copy_fn(sn, b) for sn in emitted_structs for b in (False, True))
        body = []
        early = self.early_prefetches()
        for i, ln in enumerate(p.apply):
            c = self.instr(ln, "L_", None)
            if i in early:
                at = 1 if _split_label(ln)[0] else 0     # after the label: every way in passes it
                c[at:at] = early[i]
            body += c
        decl_h = "\n".join(f"\t\tuint8_t *h_{_ident(h)} = hs[{n}];" for h, n in self.hid.items())
        decl_m = "\n".join(f"\t\tuint64_t m_{_ident(f.name)} = 0;" for f in p.meta.fields)
        decl_em = "\n".join(
            ["\trte_swx_table_lookup_t const index_fn = env->index_lookup;",
             "\trte_swx_table_lookup_t const line_em_fn = env->line_em_lookup;",
             "\trte_swx_table_lookup_t const lpm32_fn = env->lpm32_lookup;"]
            + [f"\trte_swx_table_lookup_t const em_{n} = env->em_lookups ? env->em_lookups[{n}] : NULL;"
               for n in sorted(self.em_sizes)])
        if self.prelude:
            decl_rx = ("\tconst struct bsw_port_rx *const frx = env->frame_rx;\n"
                       "\tuint8_t pre[4] __rte_aligned(4);")
            rx = ("frx ? frx[in_port].pkt_rx(frx[in_port].obj, &pkt)\n"
                  "\t\t\t  : p->in[in_port].pkt_rx(p->in[in_port].obj, &pkt)")
        else:
            decl_rx, rx = "", "p->in[in_port].pkt_rx(p->in[in_port].obj, &pkt)"
        names = lambda xs: ", ".join(f'"{x}"' for x in xs)  # noqa: E731
        hsizes = ", ".join(str(s.size) for s in p.headers.values())
        return TEMPLATE.format(
            n_headers=len(self.hid), hmax=hmax, meta_size=meta_size,
            table_names=names(p.tables) or '""', n_tables=len(p.tables),
            action_names=names(p.actions) or '""', n_actions=len(p.actions),
            reg_names=names(p.regarrays) or '""', n_regs=len(p.regarrays),
            met_names=names(p.metarrays) or '""', n_mets=len(p.metarrays),
            header_names=names(p.headers), header_sizes=hsizes,
            decl_h=decl_h, decl_m=decl_m, body="\n".join("\t\t" + x for x in body),
            tx=tx, copies=copies,
            env_h=_switch_header("bsw_straight_env.h"), meter_h=_switch_header("bsw_swx_meter.h"),
            em_h=_switch_header("bsw_swx_em.h"), line_em_h=_switch_header("bsw_swx_line_em.h"),
            index_h=_switch_header("bsw_swx_index.h"),
            lpm_h=_switch_header("bsw_swx_lpm.h"), decl_em=decl_em,
            decl_rx=decl_rx, rx=rx)


def _switch_header(name: str) -> str:
    """A header of the switch's C sources (targets/dpdk/src), whose text the
    generated code takes in, as it is compiled without the switch's sources
    on its include path: one definition for libbsw and the generated code."""
    return (Path(__file__).resolve().parent.parent / "src" / name).read_text()


def generate(spec_text: str) -> str:
    """The C source for the spec's program (see the module's docstring)."""
    return Gen(parse(spec_text)).generate()


TEMPLATE = r"""/* Generated by bng_switch/straight_codegen.py from an SWX spec: do not edit. */
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_hash_crc.h>
#include <rte_lpm.h>
#include <rte_meter.h>

#include "rte_swx_pipeline_internal.h"

#define N_HEADERS {n_headers}
#define HMAX {hmax}
#define META_SIZE {meta_size}
#define BATCH 256
#define FLUSH_EVERY 64

static const char *const table_names[] = {{ {table_names} }};
static const char *const action_names[] = {{ {action_names} }};
static const char *const reg_names[] = {{ {reg_names} }};
static const char *const met_names[] = {{ {met_names} }};
static const char *const header_names[] = {{ {header_names} }};
static const uint32_t header_sizes[] = {{ {header_sizes} }};

/* Field loads and stores at their own widths (n is a constant at every
 * call): no 8-byte access that straddles narrower ones, which a CPU cannot
 * forward from a store and waits for. */
static __rte_always_inline uint16_t
u16(const uint8_t *b)
{{
	uint16_t v;

	memcpy(&v, b, 2);
	return v;
}}

static __rte_always_inline uint32_t
u32(const uint8_t *b)
{{
	uint32_t v;

	memcpy(&v, b, 4);
	return v;
}}

static __rte_always_inline uint64_t
u64(const uint8_t *b)
{{
	uint64_t v;

	memcpy(&v, b, 8);
	return v;
}}

static __rte_always_inline uint64_t
ld_be(const uint8_t *b, uint32_t n)
{{
	switch (n) {{
	case 1: return b[0];
	case 2: return rte_be_to_cpu_16(u16(b));
	case 3: return (uint64_t)rte_be_to_cpu_16(u16(b)) << 8 | b[2];
	case 4: return rte_be_to_cpu_32(u32(b));
	case 6: return (uint64_t)rte_be_to_cpu_16(u16(b)) << 32 | rte_be_to_cpu_32(u32(b + 2));
	case 8: return rte_be_to_cpu_64(u64(b));
	default: {{
		uint64_t v = 0;
		uint32_t i;

		for (i = 0; i < n; i++)
			v = v << 8 | b[i];
		return v;
	}}
	}}
}}

static __rte_always_inline void
st_be(uint8_t *b, uint32_t n, uint64_t v)
{{
	uint16_t x16;
	uint32_t x32;

	switch (n) {{
	case 1: b[0] = (uint8_t)v; return;
	case 2: x16 = rte_cpu_to_be_16((uint16_t)v); memcpy(b, &x16, 2); return;
	case 4: x32 = rte_cpu_to_be_32((uint32_t)v); memcpy(b, &x32, 4); return;
	case 6:
		x16 = rte_cpu_to_be_16((uint16_t)(v >> 32));
		x32 = rte_cpu_to_be_32((uint32_t)v);
		memcpy(b, &x16, 2);
		memcpy(b + 2, &x32, 4);
		return;
	case 8: v = rte_cpu_to_be_64(v); memcpy(b, &v, 8); return;
	default: {{
		uint32_t i;

		for (i = n; i-- > 0; v >>= 8)
			b[i] = (uint8_t)v;
	}}
	}}
}}

static __rte_always_inline uint64_t
ld_le(const uint8_t *b, uint32_t n)
{{
	switch (n) {{
	case 1: return b[0];
	case 2: return u16(b);
	case 4: return u32(b);
	case 6: return (uint64_t)u16(b + 4) << 32 | u32(b);
	case 8: return u64(b);
	default: {{
		uint64_t v = 0;
		uint32_t i;

		for (i = n; i-- > 0; )
			v = v << 8 | b[i];
		return v;
	}}
	}}
}}

static __rte_always_inline void
st_le(uint8_t *b, uint32_t n, uint64_t v)
{{
	uint16_t x16;
	uint32_t x32;

	switch (n) {{
	case 1: b[0] = (uint8_t)v; return;
	case 2: x16 = (uint16_t)v; memcpy(b, &x16, 2); return;
	case 4: x32 = (uint32_t)v; memcpy(b, &x32, 4); return;
	case 6:
		x32 = (uint32_t)v;
		x16 = (uint16_t)(v >> 32);
		memcpy(b, &x32, 4);
		memcpy(b + 4, &x16, 2);
		return;
	default: memcpy(b, &v, n); return;
	}}
}}

/* DPDK 22.11's ckadd/cksub of a field, on the
 * raw (little-endian loaded) bytes, as its instructions do. */
static __rte_always_inline uint16_t
ck_fold(uint64_t r)
{{
	r = (r & 0xFFFF) + (r >> 16);
	r = (r & 0xFFFF) + (r >> 16);
	r = (r & 0xFFFF) + (r >> 16);
	r = ~r & 0xFFFF;
	return (uint16_t)(r ? r : 0xFFFF);
}}

static __rte_always_inline void
ck_add_field(uint8_t *dst, const uint8_t *src, uint32_t bits)
{{
	uint16_t d;
	uint64_t s = ld_le(src, bits / 8), r;

	memcpy(&d, dst, 2);
	r = ~(uint64_t)d & 0xFFFF;
	r += (s >> 32) + (s & 0xFFFFFFFF);
	d = ck_fold(r);
	memcpy(dst, &d, 2);
}}

static __rte_always_inline void
ck_sub_field(uint8_t *dst, const uint8_t *src, uint32_t bits)
{{
	uint16_t d;
	uint64_t s = ld_le(src, bits / 8), r;

	memcpy(&d, dst, 2);
	r = ~(uint64_t)d & 0xFFFF;
	r += 0xFFFF00000ULL;
	r -= (s >> 32) + (s & 0xFFFFFFFF);
	d = ck_fold(r);
	memcpy(dst, &d, 2);
}}

/* ckadd of a whole header, given a sum congruent to that of its words
 * (Gen.ck_sum): the fold reduces either to the same 16 bits. */
static __rte_always_inline void
ck_add_sum(uint8_t *dst, uint64_t s)
{{
	uint16_t d;
	uint64_t r;

	memcpy(&d, dst, 2);
	r = (~(uint64_t)d & 0xFFFF) + s;
	d = ck_fold(r);
	memcpy(dst, &d, 2);
}}

static __rte_always_inline void
ck_add_hdr20(uint8_t *dst, const uint8_t *h)
{{
	ck_add_sum(dst, (uint64_t)u32(h) + u32(h + 4) + u32(h + 8) + u32(h + 12) + u32(h + 16));
}}

{copies}
{meter_h}
{em_h}
{line_em_h}
{index_h}
{lpm_h}
static __rte_always_inline uint64_t
meter_exec(struct rte_swx_pipeline *p, uint32_t id, uint64_t idx, uint32_t length, enum rte_color color_in)
{{
	struct metarray_runtime *r = &p->metarray_runtime[id];

	return bsw_meter_color(&r->metarray[idx & r->size_mask], length, color_in);
}}

#define REG(id, idx) (p->regarray_runtime[id].regarray[(idx) & p->regarray_runtime[id].size_mask])

/* A lookup of table id, through the lookup function the pipeline's thread 0
 * has for it. The results pass through variables of its own: the run
 * loop's action_id, ad and hit, whose addresses no call takes, stay in
 * registers. LOOKUP_EM: an exact table with a key of ks bytes, looked up
 * inline (bsw_swx_em.h) when that function is the switch's exact-match
 * lookup for the key size (em_ks, from the worker), else as LOOKUP.
 * LOOKUP_EM_INDEX: one that may also be an index table (one metadata field
 * of 1, 2 or 4 bytes), whose array is then looked up inline
 * (bsw_swx_index.h; a key beyond it goes to the lookup function).
 * LOOKUP_EM_LARGE: one large enough to be a line table, whose bucket is
 * then looked up inline (bsw_swx_line_em.h; a key that may be in the
 * overflow goes to the lookup function).
 * LOOKUP_LPM32: an LPM table on one 32-bit field, looked up inline
 * (bsw_swx_lpm.h) when its function is the switch's (bsw_table_lpm.c). */
#define LOOKUP_WITH(id, inline_lookup) do {{ \
		struct table_runtime *tr_ = &p->threads[0].tables[id]; \
		struct rte_swx_table_state *ts_ = &p->table_state[id]; \
		uint8_t *key_ = keyp, *ad_; \
		uint64_t action_id_; \
		size_t entry_id_; \
		int hit_; \
		if (!(inline_lookup)) \
			while (!tr_->func(ts_->obj, tr_->mailbox, &key_, &action_id_, &ad_, &entry_id_, &hit_)) \
				; \
		hit = hit_; \
		entry_id = hit_ ? 1 + entry_id_ : 0; \
		action_id = hit_ ? action_id_ : ts_->default_action_id; \
		ad = hit_ ? ad_ : ts_->default_action_data; \
	}} while (0)
#define EM_INLINE(ks) (tr_->func == em_##ks && \
	bsw_em_lookup(ts_->obj, &key_, &action_id_, &ad_, &entry_id_, &hit_, ks))
#define INDEX_INLINE(ks) (tr_->func == index_fn && \
	bsw_index_lookup_slot(ts_->obj, &key_, &action_id_, &ad_, &entry_id_, &hit_, ks))
#define LOOKUP(id) LOOKUP_WITH(id, 0)
#define LOOKUP_EM(id, ks) LOOKUP_WITH(id, EM_INLINE(ks))
#define LOOKUP_EM_INDEX(id, ks) LOOKUP_WITH(id, EM_INLINE(ks) || INDEX_INLINE(ks))
#define LINE_EM_INLINE(ks) (tr_->func == line_em_fn && \
	bsw_lem_lookup_bucket(ts_->obj, &key_, &action_id_, &ad_, &entry_id_, &hit_, ks))
#define LOOKUP_EM_LARGE(id, ks) LOOKUP_WITH(id, LINE_EM_INLINE(ks) || EM_INLINE(ks))
#define LPM32_INLINE (tr_->func == lpm32_fn && \
	bsw_lpm32_lookup(ts_->obj, &key_, &action_id_, &ad_, &entry_id_, &hit_))
#define LOOKUP_LPM32(id) LOOKUP_WITH(id, LPM32_INLINE)
/* The hash and bucket prefetch of a LOOKUP_EM_LARGE to come, its key in kb
 * (bsw_swx_line_em.h, bsw_swx_em.h; Gen.early_prefetches). */
#define PREFETCH_EM(id, ks) do {{ \
		rte_swx_table_lookup_t f_ = p->threads[0].tables[id].func; \
		if (f_ == line_em_fn) \
			bsw_lem_prefetch(p->table_state[id].obj, kb, ks); \
		else if (f_ == em_##ks) \
			bsw_em_prefetch(p->table_state[id].obj, kb, ks); \
	}} while (0)

/* 0 if the pipeline is the one this code was generated for. */
int
bsw_straight_check(struct rte_swx_pipeline *p, char *err, size_t err_size)
{{
	struct table *t;
	struct action *a;
	struct regarray *r;
	struct metarray *m;
	struct header *h;

	if (p->n_tables != {n_tables} || p->n_actions != {n_actions} || p->n_regarrays != {n_regs}
	    || p->n_metarrays != {n_mets} || p->n_headers != N_HEADERS || p->n_selectors || p->n_learners
	    || p->metadata_st->n_bits / 8 != META_SIZE) {{
		snprintf(err, err_size, "the pipeline's tables, actions, arrays, headers or metadata differ");
		return -1;
	}}
	TAILQ_FOREACH(t, &p->tables, node)
		if (strcmp(t->name, table_names[t->id])) {{
			snprintf(err, err_size, "table %u is %s, not %s", t->id, t->name, table_names[t->id]);
			return -1;
		}}
	TAILQ_FOREACH(a, &p->actions, node) {{
		uint32_t i;

		if (strcmp(a->name, action_names[a->id])) {{
			snprintf(err, err_size, "action %u is %s, not %s", a->id, a->name, action_names[a->id]);
			return -1;
		}}
		for (i = 0; a->st && i < a->st->n_fields; i++)
			if (a->args_endianness[i]) {{
				snprintf(err, err_size, "action %s keeps an argument in network order", a->name);
				return -1;
			}}
	}}
	TAILQ_FOREACH(r, &p->regarrays, node)
		if (strcmp(r->name, reg_names[r->id])) {{
			snprintf(err, err_size, "register array %u is %s", r->id, r->name);
			return -1;
		}}
	TAILQ_FOREACH(m, &p->metarrays, node)
		if (strcmp(m->name, met_names[m->id])) {{
			snprintf(err, err_size, "meter array %u is %s", m->id, m->name);
			return -1;
		}}
	TAILQ_FOREACH(h, &p->headers, node)
		if (strcmp(h->name, header_names[h->id]) || h->st->n_bits / 8 != header_sizes[h->id]) {{
			snprintf(err, err_size, "header %u is %s", h->id, h->name);
			return -1;
		}}
	return 0;
}}

{env_h}
void
bsw_straight_run(struct rte_swx_pipeline *p, const struct bsw_straight_env *env)
{{
	uint8_t hs[N_HEADERS][HMAX] __rte_aligned(8);
	uint8_t kb[META_SIZE + 8] __rte_aligned(8);
	uint8_t tmp[N_HEADERS * HMAX];
	uint32_t port_next = 0, n = 0, i, k, batch = BATCH, empty = 0, sleep_us = 1;

{decl_em}
{decl_rx}

	memset(hs, 0, sizeof(hs));
	memset(kb, 0, sizeof(kb));
	while (!__atomic_load_n(env->stop, __ATOMIC_ACQUIRE)) {{
	uint32_t got = 0;

	for (k = 0; k < batch; k++) {{
		struct rte_swx_pkt pkt;
		uint32_t in_port = port_next;
		uint64_t valid = 0, action_id = 0, tx_port = 0, entry_id = 0;
		uint8_t *ptr, *end, *ad = NULL, *keyp = kb;
		uint64_t emitted = 0;
		int hit = 0;
{decl_h}
{decl_m}

		port_next = (port_next + 1) & (p->n_ports_in - 1);
		if (!({rx}))
			continue;
		got++;
		ptr = &pkt.pkt[pkt.offset];
		end = ptr + pkt.length;
{body}
		goto drop;	/* the program ended without tx */
tx:
		{{
{tx}
			p->out[tx_port].pkt_tx(p->out[tx_port].obj, &pkt);
			continue;
		}}
drop:
		pkt.offset = (uint32_t)(ptr - pkt.pkt);
		pkt.length = (uint32_t)(end - ptr);
		p->out[p->n_ports_out - 1].pkt_tx(p->out[p->n_ports_out - 1].obj, &pkt);
	}}
	__atomic_fetch_add(env->epoch, 1, __ATOMIC_SEQ_CST);
	if (++n % FLUSH_EVERY == 0 || !got)
		for (i = 0; i < p->n_ports_out; i++)
			if (p->out[i].flush)
				p->out[i].flush(p->out[i].obj);
	if (got) {{
		empty = 0;
		batch = BATCH;
		sleep_us = 1;
		continue;
	}}
	if (!env->idle_us || ++empty < 8)
		continue;
	/* Idle, as bsw_worker.c's loop: nothing in flight, so the table
	 * manager may treat this worker as quiescent while it sleeps; then a
	 * probe of two receive tries per port. */
	__atomic_store_n(env->idle, 1, __ATOMIC_SEQ_CST);
	usleep(sleep_us);
	__atomic_store_n(env->idle, 0, __ATOMIC_SEQ_CST);
	if (env->rx_reset)
		env->rx_reset(env->rx_reset_arg);
	batch = 2 * p->n_ports_in;
	if (sleep_us < env->idle_us)
		sleep_us = sleep_us * 2 > env->idle_us ? env->idle_us : sleep_us * 2;
	}}
	for (i = 0; i < p->n_ports_out; i++)
		if (p->out[i].flush)
			p->out[i].flush(p->out[i].obj);
}}
"""


def build(spec_path: str, work_dir: str, include_dir: str) -> str:
    """Generates and compiles the straight-line library for spec_path in
    work_dir (as the switch compiles SWX's generated code); its path."""
    import hashlib
    import os
    import subprocess
    text = Path(spec_path).read_text()
    code = generate(text)
    h = hashlib.sha256(code.encode()).hexdigest()[:16]
    c_path = Path(work_dir) / f"straight-{h}.c"
    lib = Path(work_dir) / f"straight-{h}.so"
    if lib.exists():
        return str(lib)
    c_path.write_text(code)
    cflags = subprocess.run(["pkg-config", "--cflags", "libdpdk"], capture_output=True, text=True,
                            check=True).stdout.split()
    tmp = f"{lib}.{os.getpid()}.tmp"
    # -O2: measured faster than -O3 on this code (A/B, two rounds: pppoe_up
    # and lns_up +3%); -g lets perf map samples to the generated lines.
    r = subprocess.run(["gcc", "-O2", "-g", "-fPIC", "-shared", "-Wno-deprecated-declarations", *cflags,
                        "-I", include_dir, "-o", tmp, str(c_path)], capture_output=True, text=True)
    if r.returncode:
        raise StraightError(f"gcc failed on {c_path}:\n{r.stderr[-3000:]}")
    os.replace(tmp, lib)
    return str(lib)

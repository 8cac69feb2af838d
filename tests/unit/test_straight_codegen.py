"""bng_switch/straight_codegen.py: every committed program generates, and
what the generator does not handle is refused at generation with the line,
not run wrongly. (That the generated code forwards as SWX does is the PTF
suite's job, run with execution: straight in tests/integration/test_ptf.py.)"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "targets" / "dpdk"))

from bng_switch.straight_codegen import Gen, StraightError, generate, parse  # noqa: E402

SPECS = sorted((ROOT / "p4src" / "build").glob("*/*.spec"))


@pytest.mark.parametrize("spec", SPECS, ids=[s.parent.name for s in SPECS])
def test_committed_programs_generate(spec):
    code = generate(spec.read_text())
    assert "bsw_straight_run" in code and "bsw_straight_check" in code
    prog = parse(spec.read_text())
    for name in prog.tables:           # each table checked by name at load
        assert f'"{name}"' in code


def test_bng_layout_matches_the_spec():
    prog = parse((ROOT / "p4src/build/bng/bng.spec").read_text())
    ipv4 = prog.headers["ipv4"]
    assert ipv4.size == 20
    assert ipv4.field("ttl").offset == 8 and ipv4.field("checksum").offset == 10
    assert list(prog.headers)[:2] == ["frame", "packet_out"]    # declaration order: DPDK's header ids


SMALL = """
struct h_t {
\tbit<16> a
\tbit<16> b
}
struct m_t {
\tbit<32> port
\tbit<16> x
}
header h instanceof h_t
metadata instanceof m_t
apply {
\trx m.port
\textract h.h
\t%s
\ttx m.port
}
"""


@pytest.mark.parametrize("line,words", [
    ("mirror m.x m.x", "instruction not handled"),
    ("learn foo m.x", "instruction not handled"),
    ("ckadd m.x h.h.a", "checksum"),
])
def test_unhandled_instructions_are_refused(line, words):
    with pytest.raises(StraightError, match=words):
        generate(SMALL % line)


def test_odd_width_fields_are_refused():
    with pytest.raises(StraightError, match="bit<4>"):
        parse(SMALL.replace("bit<16> b", "bit<4> b") % "mov m.x h.h.a")


def test_small_program_generates_its_operations():
    code = generate(SMALL % "add h.h.a 0x1")
    assert "st_be(h_h + 0, 2, (ld_be(h_h + 0, 2) + 1ULL));" in code
    assert "h_h = ptr; ptr += 4;" in code


def _ckadd(dst: int, s: int) -> int:
    """DPDK 22.11's end of a ckadd: the sum added to the checksum's
    complement, folded three times, complemented, 0 written as 0xFFFF."""
    r = (~dst & 0xFFFF) + s
    for _ in range(3):
        r = (r & 0xFFFF) + (r >> 16)
    r = ~r & 0xFFFF
    return r or 0xFFFF


def _dpdk_ckadd_struct20(dst: int, hdr: bytes) -> int:
    """DPDK 22.11's ckadd of a 20-byte header (its 32-bit little-endian words)."""
    return _ckadd(dst, sum(int.from_bytes(hdr[i:i + 4], "little") for i in range(0, 20, 4)))


def _generated_ckadd_fields(expr: str, dst: int, hdr: bytes) -> int:
    """The generated field-by-field sum (Gen.ck_sum's C expression),
    evaluated over the same bytes, then folded as ck_add_sum does."""
    def ld_le(off: int, n: int) -> int:
        return int.from_bytes(hdr[off:off + n], "little")
    return _ckadd(dst, eval(expr.replace("ULL", ""), {"ld_le": ld_le, "h": 0}))  # noqa: S307 (our own generated text)


@pytest.mark.parametrize("layout", [
    [8, 8, 16, 16, 16, 8, 8, 16, 32, 32],          # IPv4
    [8, 16, 8, 64, 32, 16, 8, 8],                   # odd offsets, a field over 32 bits at one
    [48, 48, 16, 32, 16],
])
def test_field_checksum_equals_dpdks_word_checksum(layout):
    """A header written just before its checksum is summed field by field
    (so the CPU forwards the stores); the result must be DPDK's, bit for bit,
    whatever the bytes, including the all-ones and zero edges."""
    import random
    fields = "\n".join(f"\tbit<{b}> f{i}" for i, b in enumerate(layout))
    spec = (f"struct h_t {{\n{fields}\n}}\nstruct m_t {{\n\tbit<32> port\n}}\n"
            "header h instanceof h_t\nmetadata instanceof m_t\napply {\n\trx m.port\n\textract h.h\n"
            "\ttx m.port\n}\n")
    gen = Gen(parse(spec))
    expr = gen.ck_sum("h", "h")
    rng = random.Random(7)
    cases = [bytes(20), b"\xff" * 20] + [rng.randbytes(20) for _ in range(2000)]
    for hdr in cases:
        for dst in (0, 0xFFFF, rng.randrange(0x10000)):
            assert _generated_ckadd_fields(expr, dst, hdr) == _dpdk_ckadd_struct20(dst, hdr), hdr.hex()


def test_a_written_header_is_summed_by_fields_an_unwritten_one_by_words():
    code = generate(SMALL.replace("bit<16> a\n\tbit<16> b", "bit<32> a\n\tbit<32> b\n\tbit<32> c\n"
                                  "\tbit<32> d\n\tbit<16> e\n\tbit<16> f")
                    .replace("\textract h.h\n", "\textract h.h\n\tckadd h.h.e h.h\n\tmov h.h.a 0x1\n")
                    % "ckadd h.h.f h.h")
    first, second = code.index("ck_add_hdr20(h_h + 16, h_h)"), code.index("ck_add_sum(h_h + 18,")
    assert first < second


@pytest.mark.parametrize("apply,words", [
    ("\trx m.port\n\textract h.h\n\temit h.h\n\tmov m.x 0x1\n\ttx m.port\n", "one block right before a tx"),
    ("\trx m.port\n\textract h.h\n\temit h.h\n\temit h.h\n\ttx m.port\n", "emitted twice"),
])
def test_emits_outside_the_deparsers_form_are_refused(apply, words):
    """tx is written for one emit order, so the emits must be p4c's block
    right before the tx, each header once; anything else runs on SWX."""
    spec = SMALL.split("apply {")[0] + "apply {\n" + apply + "}\n"
    with pytest.raises(StraightError, match=words):
        generate(spec)


def test_tx_visits_only_the_emitted_headers_from_the_first_to_visit():
    """Bit j of `emitted` is the j-th emitted header; each pass starts at
    its first header through a table of labels."""
    code = generate(SMALL % "emit h.h")
    assert "emitted |= (valid >> 0 & 1) << 0;" in code
    assert "goto *tx_tail[63 - __builtin_clzll(emitted)];" in code
    assert "cp_f_h_t(d, h_h)" in code and "cp_b_h_t(d, h_h)" in code


def _table(name: str, keys: list[str]) -> str:
    """A spec table of action a, keyed by keys ("FIELD KIND")."""
    key = "".join(f"\t\t{k}\n" for k in keys)
    return (f"table {name} {{\n\tkey {{\n{key}\t}}\n\tactions {{\n\t\ta\n\t}}\n"
            "\tdefault_action a args none\n\tsize 0x100\n}\n")


TABLES = ("""
struct h_t {
\tbit<16> a
\tbit<16> b
}
struct m_t {
\tbit<32> port
\tbit<8> gap
\tbit<16> x
\tbit<32> y
}
header h instanceof h_t
metadata instanceof m_t
action a args none {
\treturn
}
""" + _table("by_port_y", ["m.port exact", "m.y exact"]) + _table("by_x_lpm", ["m.x lpm"])
    + _table("by_header", ["h.h.b exact"]) + _table("by_y", ["m.y exact"]) + _table("by_y_lpm", ["m.y lpm"])
    + """apply {
\trx m.port
\textract h.h
\ttable by_port_y
\ttable by_x_lpm
\ttable by_header
\ttable by_y
\ttable by_y_lpm
\ttx m.port
}
""")


def test_exact_tables_are_looked_up_inline_for_their_key_size():
    """An exact table's key is SWX's: the bytes from its first key field to
    the end of its last, the gap included (by_port_y: 4 + 1 + 2 + 4); the
    inline lookup is chosen by that size at run time (em_11 from the
    worker), and one of a single metadata field of 1, 2 or 4 bytes may also
    be an index table's array (index_fn); other tables keep the call."""
    code = generate(TABLES)
    assert "LOOKUP_EM(0, 11);" in code
    assert "LOOKUP(1);" in code and "LOOKUP_EM(1" not in code
    assert "LOOKUP_EM(2, 2);" in code                  # a header's field: never an index table
    assert "LOOKUP_EM_INDEX(3, 4);" in code
    assert "index_fn = env->index_lookup;" in code
    assert "em_11 = env->em_lookups ? env->em_lookups[11] : NULL;" in code
    assert "em_2 = env->em_lookups ? env->em_lookups[2] : NULL;" in code


def test_32_bit_lpm_tables_are_looked_up_inline():
    """An LPM table on one 32-bit field may be the switch's IPv4 FIB
    (bsw_table_lpm.c): looked up inline when its function is that one
    (lpm32_fn, from the worker); an LPM table on another width keeps the
    call."""
    code = generate(TABLES)
    assert "LOOKUP_LPM32(4);" in code
    assert "LOOKUP(1);" in code and "LOOKUP_LPM32(1)" not in code      # by_x_lpm: 16 bits
    assert "lpm32_fn = env->lpm32_lookup;" in code


PRELUDE = """
struct bsw_frame_length_h {
\tbit<16> length
\tbit<16> reserved
}
struct h_t {
\tbit<16> a
\tbit<16> b
}
struct m_t {
\tbit<32> port
\tbit<16> len
}
header frame instanceof bsw_frame_length_h
header h instanceof h_t
metadata instanceof m_t
apply {
%s
\tmov m.len h.frame.length
\ttx m.port
}
"""


@pytest.mark.parametrize("start,direct", [
    ("\trx m.port\n\textract h.frame\n\textract h.h", True),
    # a label before the extract: a jump could reach it with the packet moved
    ("\trx m.port\nL0 :\textract h.frame\n\textract h.h", False),
    ("\trx m.port\n\textract h.h\n\textract h.frame", False),     # not first
    ("\trx m.port\n\textract h.frame\n\textract h.frame", False),  # twice
    ("\trx m.port\n\tmov m.len h.h.a\n\textract h.frame", False),  # a header read before it
])
def test_the_frame_prelude_is_made_in_place_only_where_it_is_extracted_first(start, direct):
    """Where the program extracts bsw_frame_length.c's prelude once and
    before anything else touches the packet, the run loop receives beneath
    the prelude's wrapper and makes the 4 bytes from the frame's length
    (bsw_frame_length.c's value: the length, network order, then 0);
    anywhere else it receives through the wrapper and extracts as SWX."""
    code = generate(PRELUDE % start)
    made = ("{ uint32_t pv_ = rte_cpu_to_be_32((uint32_t)(uint16_t)pkt.length << 16); "
            "memcpy(pre, &pv_, 4); h_frame = pre; valid |= 1ULL << 0; }")
    assert (made in code) is direct
    assert ("frx[in_port].pkt_rx(frx[in_port].obj, &pkt)" in code) is direct
    if not direct:
        assert "h_frame = ptr; ptr += 4;" in code


EIGHT = "".join(f"\tmov m.y {n}\n" for n in range(8))


def _prefetch_spec(between: str, size: int = 0x10000, before: str = "") -> str:
    """A program that runs `before`, writes its key field m.x, runs
    `between` (eight metadata moves by default) and looks m.x up in `big`
    (of `size` entries) unless h is invalid; `small`, of 256 entries, has
    an action that writes m.x."""
    return ("""
struct h_t {
\tbit<16> a
}
struct m_t {
\tbit<32> port
\tbit<16> x
\tbit<32> y
}
header h instanceof h_t
metadata instanceof m_t
action a args none {
\treturn
}
action w args none {
\tmov m.x 0x1
\treturn
}
""" + _table("big", ["m.x exact"]).replace("size 0x100", f"size {size:#x}")
        + _table("big2", ["m.y exact"]).replace("size 0x100", "size 0x10000")
        + _table("small", ["m.y exact"]).replace("\t\ta\n", "\t\ta\n\t\tw\n")
        + "apply {\n\trx m.port\n\textract h.h\n" + before + "\tmov m.x h.h.a\n"
        + (between or EIGHT) + "\tjmpnv LABEL_END h.h\n\ttable big\nLABEL_END :\ttx m.port\n}\n")


PREFETCH = ("if ((valid & (1ULL << 0))) {", "PREFETCH_EM(0, 2);")


def _prefetched_after(code: str) -> str | None:
    """The generated line right before the early prefetch, None if none."""
    lines = [ln.strip() for ln in code.splitlines()]
    for i, ln in enumerate(lines):
        if ln == PREFETCH[0] and PREFETCH[1] in lines[i + 1:i + 4]:
            return lines[i - 1]
    return None


@pytest.mark.parametrize("before, between, after", [
    # the key's last write, then eight instructions: prefetched right after it
    ("", "", "m_x = (ld_be(h_h + 0, 2)) & 0xffffULL;"),
    # a jump within the stretch changes nothing
    ("", "\tjmpeq LABEL_IN m.y 0x0\n\tmov m.y 1\nLABEL_IN :\tmov m.y 2\n" + EIGHT,
     "m_x = (ld_be(h_h + 0, 2)) & 0xffffULL;"),
    # a table whose action writes the key: prefetched after that table, if far enough ahead
    ("", "\ttable small\n" + EIGHT, "L_ACT_END_1: ;"),
    ("", "\ttable small\n\tmov m.y 1\n", None),
    # a label in the stretch that a jump from before it enters: prefetched after the label
    ("\tjmpeq LABEL_IN m.y 0x0\n", "\tmov m.y 1\nLABEL_IN :\tmov m.y 2\n" + EIGHT, "L_LABEL_IN: ;"),
    # another large table on the way: this lookup likely waits on it, no prefetch
    ("", "\ttable big2\n" + EIGHT, None),
    # unless it is on another way
    ("", "\tjmpeq LABEL_OTHER m.y 0x0\n" + EIGHT + "\tjmp LABEL_BIG\nLABEL_OTHER :\ttable big2\n"
     "\tjmp LABEL_END\nLABEL_BIG :\tmov m.y 9\n", "m_x = (ld_be(h_h + 0, 2)) & 0xffffULL;"),
    # h's validity changed on the way: no guard to tell packets bound elsewhere, no prefetch
    ("", "\tinvalidate h.h\n" + EIGHT, None),
])
def test_a_large_exact_tables_bucket_is_prefetched_where_its_key_is_final(before, between, after):
    """Gen.early_prefetches: the key is stored and its bucket prefetched
    at the earliest place from which nothing writes the key's bytes before
    the lookup and which the code up to the lookup is entered through
    only, guarded by the validity jumps that skip the lookup."""
    assert _prefetched_after(generate(_prefetch_spec(between, before=before))) == after


def test_small_tables_are_not_prefetched_early():
    assert _prefetched_after(generate(_prefetch_spec("", size=0x400))) is None


@pytest.mark.parametrize("size, lookup", [(0x4000, "LOOKUP_EM_LARGE(0, 2);"), (0x3FFF, "LOOKUP_EM_INDEX(0, 2);")])
def test_large_exact_tables_may_be_line_tables(size, lookup):
    """A table of 16,384 entries or more may be a line table
    (bsw_table_line_em.c), whose bucket is then looked up inline
    (line_em_fn, from the worker) before the em check; a smaller one never
    is (this one, on one 2-byte field, may be an index table instead; a
    large one never is that, at most 4096 entries)."""
    code = generate(_prefetch_spec("", size=size))
    assert lookup in code
    assert "line_em_fn = env->line_em_lookup;" in code

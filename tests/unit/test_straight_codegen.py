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

from bng_switch.straight_codegen import StraightError, generate, parse  # noqa: E402

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

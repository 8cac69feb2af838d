"""The compiled P4 outputs in p4src/build/ match their sources, and (where
the compilers are installed) the compilers still produce them."""
import json
import shutil
import subprocess
import sys

import pytest

from tests.support import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import p4build  # noqa: E402

PROGRAMS = p4build.programs()
PNA = sorted(n for n, p in PROGRAMS.items() if p.arch == "pna")

TNA = sorted(n for n, p in PROGRAMS.items() if p.arch == "tna")


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_stamp_matches_sources(program):
    r = subprocess.run([sys.executable, str(ROOT / "scripts/p4build.py"), "--check", program],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.fixture
def p4src_copy(tmp_path, monkeypatch):
    """p4build pointed at a copy of p4src/, to spoil."""
    copy = tmp_path / "p4src"
    shutil.copytree(ROOT / "p4src", copy)
    monkeypatch.setattr(p4build, "P4SRC", copy)
    monkeypatch.setattr(p4build, "BUILD", copy / "build")
    return copy


@pytest.mark.parametrize("program", ["bng", "bng_tofino2"])
def test_stamp_catches_what_bypasses_the_compiler(program, p4src_copy, capsys):
    """An output edited by hand, a programs.yaml entry changed (a Tofino
    target, a main file) and a STAMP deleted each fail the check."""
    assert p4build.check(p4build.programs()[program])
    out = p4src_copy / "build" / program
    victim = next(f for f in sorted(out.iterdir()) if f.name != "STAMP")
    original = victim.read_bytes()
    victim.write_bytes(original + b"\n")
    assert not p4build.check(p4build.programs()[program])
    assert "not the ones compiled" in capsys.readouterr().out
    victim.write_bytes(original)
    assert p4build.check(p4build.programs()[program])

    yaml_path = p4src_copy / "programs.yaml"
    text = yaml_path.read_text()
    changed = text.replace("target: tofino2", "target: tofino") if program == "bng_tofino2" else \
        text.replace("enums: include/defines.p4", "enums: include/headers.p4")
    assert changed != text
    yaml_path.write_text(changed)
    assert not p4build.check(p4build.programs()[program])
    assert "programs.yaml entry changed" in capsys.readouterr().out
    yaml_path.write_text(text)

    (out / "STAMP").unlink()
    assert not p4build.check(p4build.programs()[program])
    assert "STAMP missing" in capsys.readouterr().out


@pytest.mark.parametrize("program", PNA)
def test_outputs_are_loadable(program):
    from google.protobuf import text_format
    from p4.config.v1 import p4info_pb2

    from bng_switch.device import prepare
    d = ROOT / "p4src" / "build" / program
    p4info = text_format.Parse((d / f"{program}.p4info.txtpb").read_text(), p4info_pb2.P4Info())
    pc = prepare(p4info, (d / f"{program}.device_config.json").read_bytes())
    assert pc.pmap.tables and pc.pmap.controller_headers


@pytest.mark.parametrize("program", PNA)
def test_p4c_dpdk_reproduces_the_committed_spec(program, tmp_path):
    p4c = shutil.which("p4c-dpdk")
    if p4c is None:
        pytest.skip("p4c-dpdk not installed (it is in no package registry; see README 'Compiling P4')")
    out = tmp_path / "x.spec"
    subprocess.run([p4c, "--arch", "pna", "-I", str(ROOT / "p4src/include"), "-o", str(out),
                    str(PROGRAMS[program].main)], check=True)
    committed = (ROOT / "p4src/build" / program / f"{program}.spec").read_text()
    assert out.read_text() == committed


@pytest.mark.parametrize("program", TNA)
def test_tna_top_still_compiles(program, tmp_path):
    """The same core for Tofino: p4c-barefoot where it is built, else the
    front and mid end of p4c (p4test) with p4c's Tofino include files."""
    prog = PROGRAMS[program]
    barefoot = shutil.which("p4c-barefoot")
    if barefoot:
        subprocess.run([barefoot, "-g", *p4build.tofino_args(prog), "-I", str(ROOT / "p4src/include"),
                        "-o", str(tmp_path), str(prog.main)], check=True)
        bfa = next(tmp_path.rglob("*.bfa")).read_text()
        assert p4build.parser_headers_lost(bfa, ROOT / "p4src/include/parser.p4") == []
        p4build.check_fits(json.loads(next(tmp_path.rglob("resources.json")).read_text()), program, prog.target)
        return
    p4test, inc = shutil.which("p4test"), p4build.tofino_include()
    if not (p4test and inc):
        pytest.skip("neither p4c-barefoot nor p4test with p4c's Tofino include files is installed "
                    "(p4c is in no package registry; see README 'Compiling P4')")
    p4build.check_tna_frontend(prog, p4test, inc)


def test_parser_check_finds_headers_a_compiled_parser_lost(tmp_path):
    """What p4c-barefoot without p4lang/p4c#5753 gave for the BNG: a parser
    that only ever takes a select's first branch."""
    parser_p4 = tmp_path / "parser.p4"
    parser_p4.write_text("state a { pkt.extract(hdr.ethernet); transition select(x) { 1: b; default: c; } }\n"
                         "state b { pkt.extract( hdr.pppoe ); transition accept; }\n"
                         "state c { pkt.extract(hdr.ipv4); transition accept; }\n")
    bfa = ("parser ingress:\n  states:\n    a:\n      *:\n"
           "        B1: 5  # value 1 -> B1 bit[0]: ingress::hdr.ethernet.$valid\n"
           "        H3: 1  # value 1 -> H3 bit[0]: ingress::hdr.pppoe.$valid\n"
           "deparser ingress:\n    clot 0:\n      pov: ingress::hdr.ipv4.$valid\n")
    assert p4build.parser_headers_lost(bfa, parser_p4) == ["hdr.ipv4"]


def test_a_program_placed_in_more_stages_than_the_chip_has_is_refused():
    def resources(n_used: int) -> dict:
        return {"resources": {"mau": {"nStages": 20, "mau_stages": [{}] * n_used}}}
    p4build.check_fits(resources(20), "bng_tofino2", "tofino2")
    with pytest.raises(SystemExit, match="placed it in 22 MAU stages, the chip has 20"):
        p4build.check_fits(resources(22), "bng_tofino2", "tofino2")


def test_enums_export_reads_p4_enums():
    enums = p4build.parse_enums("""
        /* comment { } */
        enum bit<8> Punt_t { NONE = 0, ARP = 5, // trailing
                             BIG = 0x10 }
        enum bit<16> Other_t { A = 1 }""")
    assert enums == {"Punt_t": {"bitwidth": 8, "members": {"NONE": 0, "ARP": 5, "BIG": 16}},
                     "Other_t": {"bitwidth": 16, "members": {"A": 1}}}

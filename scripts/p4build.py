#!/usr/bin/env python3
"""Compile the P4 programs listed in p4src/programs.yaml into p4src/build/<program>/.

PNA programs (p4c-dpdk): <program>.spec (SWX pipeline), .p4info.txtpb,
.context.json, .bfrt.json, .device_config.json (the bundle that
SetForwardingPipelineConfig carries: spec + context) and, where the program
names an `enums` file, .enums.json (every `enum bit<N>` of it, so the
controller reads punt/drop codes from the build instead of repeating them).
TNA programs (p4c-barefoot, for the program's `target`: tofino or tofino2):
.p4info.txtpb, .bfrt.json, .context.json.gz (gzipped) where p4c's assembler (bfas) is
installed, and resources.txt (per MAU stage: tables, RAMs, ALUs, made from
the compiler's resources.json).

Each build directory has a STAMP: the SHA-256 of the sources the outputs came
from (the program's entry in programs.yaml and its .p4 files) and the SHA-256
of the outputs themselves. `--check` recomputes both, so a test fails when
someone edits a source without recompiling, changes how a program is
compiled (its target, its main file), or edits a compiled output by hand.
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
P4SRC = ROOT / "p4src"
BUILD = P4SRC / "build"
sys.path.insert(0, str(ROOT / "targets" / "dpdk"))

# Where p4c keeps the Tofino architecture files (tna.p4); p4c-barefoot knows
# its own, p4test needs them on the include path.
TOFINO_INCLUDE_CANDIDATES = [Path("/opt/p4c/src/backends/tofino/bf-p4c/p4include"),
                             Path("/usr/local/share/p4c/p4include/tofino")]


@dataclass
class Program:
    name: str
    arch: str
    main: Path
    source_dirs: list[Path]
    enums: Path | None
    target: str = "tofino"       # TNA programs: p4c-barefoot --target
    entry: str = ""              # its programs.yaml entry, canonical JSON (in the stamp)


def tofino_args(prog: Program) -> list[str]:
    """p4c-barefoot's target and architecture for a TNA-family program."""
    return ["--target", prog.target, "--arch", "t2na" if prog.target == "tofino2" else "tna"]


def programs() -> dict[str, Program]:
    spec = yaml.safe_load((P4SRC / "programs.yaml").read_text())
    return {name: Program(name, p["arch"], P4SRC / p["main"], [P4SRC / d for d in p["sources"]],
                          P4SRC / p["enums"] if p.get("enums") else None, p.get("target", "tofino"),
                          json.dumps(p, sort_keys=True))
            for name, p in spec.items()}


def sources(prog: Program) -> list[Path]:
    files: list[Path] = []
    for d in prog.source_dirs:
        files += sorted(d.rglob("*.p4"))
    return files


def _files_digest(h, files, root: Path) -> str:
    """h over each file's path under root and its bytes, in the order given."""
    for f in files:
        h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def stamp(prog: Program) -> str:
    return _files_digest(hashlib.sha256(b"programs.yaml\0" + prog.entry.encode() + b"\0"), sources(prog), P4SRC)


def outputs_digest(prog: Program) -> str:
    """SHA-256 of every file of the program's build directory but STAMP."""
    d = BUILD / prog.name
    return _files_digest(hashlib.sha256(), sorted(f for f in d.rglob("*") if f.is_file() and f.name != "STAMP"), d)


ENUM_RE = re.compile(r"enum\s+bit<(\d+)>\s+(\w+)\s*\{([^}]*)\}", re.S)
MEMBER_RE = re.compile(r"(\w+)\s*=\s*(0x[0-9a-fA-F]+|\d+)")


def parse_enums(text: str) -> dict[str, dict]:
    """`enum bit<N> Name { A = 1, ... }` -> {Name: {bitwidth, members}}."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    out = {}
    for width, name, body in ENUM_RE.findall(text):
        out[name] = {"bitwidth": int(width),
                     "members": {m: int(v, 0) for m, v in MEMBER_RE.findall(body)}}
    return out


def tofino_include() -> Path | None:
    """p4c's Tofino include folder: $P4C_TOFINO_INCLUDE (for a p4c checkout
    anywhere, e.g. <p4c>/backends/tofino/bf-p4c/p4include), else the usual
    places."""
    env = os.environ.get("P4C_TOFINO_INCLUDE")
    candidates = ([Path(env)] if env else []) + TOFINO_INCLUDE_CANDIDATES
    return next((p for p in candidates if (p / "tna.p4").exists()), None)


def compile_pna(prog: Program, p4c: str) -> None:
    from bng_switch.device import encode_device_config

    out = BUILD / prog.name
    out.mkdir(parents=True, exist_ok=True)
    n = prog.name
    cmd = [p4c, "--arch", "pna", "-I", str(P4SRC / "include"),
           "--p4runtime-files", str(out / f"{n}.p4info.txtpb"),
           "--context", str(out / f"{n}.context.json"),
           "--bf-rt-schema", str(out / f"{n}.bfrt.json"),
           "-o", str(out / f"{n}.spec"), str(prog.main)]
    print(" ".join(cmd))
    subprocess.run(cmd, check=True)
    context = json.loads((out / f"{n}.context.json").read_text())
    # The compile date and command change on every run: keep the outputs
    # reproducible so that a rebuild of unchanged sources changes nothing.
    for k in ("build_date", "compile_command"):
        context.pop(k, None)
    (out / f"{n}.context.json").write_text(json.dumps(context, indent=2, sort_keys=True) + "\n")
    spec = (out / f"{n}.spec").read_text()
    (out / f"{n}.device_config.json").write_bytes(encode_device_config(spec, context))
    if prog.enums:
        (out / f"{n}.enums.json").write_text(
            json.dumps(parse_enums(prog.enums.read_text()), indent=2, sort_keys=True) + "\n")
    write_stamp(prog, p4c)


def compile_tna(prog: Program, p4c: str) -> None:
    """p4c-barefoot to the program's Tofino target; keeps the P4Runtime and
    BF-RT outputs, the driver context where the assembler made one, and the
    resource summary (the device binary is not committed). Everything is
    written to a scratch folder first: the front end writes the P4Info and
    BF-RT files before the back end can still fail, and outputs of a failed
    compile must not land in p4src/build."""
    out = BUILD / prog.name
    n = prog.name
    with tempfile.TemporaryDirectory() as work:
        files = [f"{n}.p4info.txtpb", f"{n}.bfrt.json"]
        cmd = [p4c, "-g", *tofino_args(prog), "-I", str(P4SRC / "include"),
               "--p4runtime-files", os.path.join(work, files[0]),
               "--bf-rt-schema", os.path.join(work, files[1]),
               "-o", work, str(prog.main)]
        print(" ".join(cmd))
        subprocess.run(cmd, check=True)
        resources = json.loads(next(Path(work).rglob("resources.json")).read_text())
        check_fits(resources, n, prog.target)
        summary = resource_summary(resources, prog.target)
        bfas = find_bfas(p4c)
        for asm in sorted(Path(work).rglob("*.bfa")):           # one per pipe
            lost = parser_headers_lost(asm.read_text(), P4SRC / "include" / "parser.p4")
            if lost:
                raise SystemExit(f"{n}: the compiled ingress parser never extracts {', '.join(lost)}: "
                                 "this p4c-barefoot drops select branches (p4lang/p4c#5753)")
            if bfas is not None:
                # what p4c's driver script runs after the compiler
                acmd = [bfas, "--no-warn", "--no-bin", "--target", prog.target, "--table-handle-offset0",
                        "-o", str(asm.parent), str(asm)]
                print(" ".join(acmd))
                subprocess.run(acmd, check=True)
        context = next(Path(work).rglob("context.json"))
        out.mkdir(parents=True, exist_ok=True)
        for f in files:
            shutil.copyfile(os.path.join(work, f), out / f)
        ctx = json.loads(context.read_text())
        # gzip: the BNG's context is 15 MB of JSON (the driver reads either)
        ctx_out = out / f"{n}.context.json.gz"
        (out / f"{n}.context.json").unlink(missing_ok=True)    # what older builds wrote
        if ctx.get("tables"):              # only the assembler fills it
            for k in ("build_date", "run_id", "compile_command"):
                ctx.pop(k, None)
            text = json.dumps(ctx, indent=2, sort_keys=True) + "\n"
            # mtime 0 and no file name: the same context gives the same bytes
            ctx_out.write_bytes(gzip.compress(text.encode(), compresslevel=9, mtime=0))
        else:
            # a context from older sources must not sit under the new stamp
            ctx_out.unlink(missing_ok=True)
            print(f"{n}: no driver context (bfas not found next to {p4c} or on PATH)")
        (out / "resources.txt").write_text(summary)
    write_stamp(prog, p4c)


def parser_headers_lost(bfa: str, parser_p4: Path) -> list[str]:
    """Headers the P4 parser extracts whose validity bit the compiled
    ingress parser (the .bfa's `parser ingress:` section, whose comments
    name each field written) never sets. A p4c-barefoot with p4lang/p4c#5753
    unfixed keeps only the first branch of every select and still compiles."""
    section = bfa.split("\nparser ingress:", 1)[-1].split("\ndeparser ingress:", 1)[0]
    extracted = sorted(set(re.findall(r"\bextract\(\s*(hdr\.\w+)\s*\)", parser_p4.read_text())))
    return [h for h in extracted if f"ingress::{h}.$valid" not in section]


def find_bfas(p4c: str) -> str | None:
    """p4c's Tofino assembler: beside p4c-barefoot, else on PATH."""
    beside = Path(p4c).parent / "bfas"
    return str(beside) if beside.exists() else shutil.which("bfas")


def check_fits(resources: dict, name: str, target: str) -> None:
    """p4c-barefoot reports success for a program whose tables it placed in
    more MAU stages than the chip has (it printed no error at 22 of
    Tofino 2's 20): such outputs describe no device, so they are refused."""
    mau = resources["resources"]["mau"]
    if len(mau["mau_stages"]) > mau["nStages"]:
        raise SystemExit(f"{name}: does not fit {target}: the compiler placed it in "
                         f"{len(mau['mau_stages'])} MAU stages, the chip has {mau['nStages']}")


def resource_summary(resources: dict, target: str) -> str:
    """One line per MAU stage from p4c-barefoot's resources.json: the match
    tables placed there (the compiler's condition and action-only tables are
    only counted) and the stage's RAMs and ALUs in use."""
    r = resources["resources"]
    mau = r["mau"]
    lines = [f"{resources.get('program_name')} for {target}, "
             f"p4c-barefoot {resources.get('compiler_version')}: "
             f"{len(mau['mau_stages'])} of {mau['nStages']} MAU stages"]
    lines.append("stage  logical  SRAM    TCAM   map-RAM  meter-ALU  stats-ALU  tables (and memories by user)")
    for s in mau["mau_stages"]:
        names = [t["table_name"] for t in s["logical_tables"]["ids"]]
        users = {u["used_by"].split("$")[0] for ram in s["rams"]["srams"] for u in ram["usages"]}
        users |= set(names)
        rams, tcams, maps = s["rams"], s["tcams"], s["map_rams"]
        lines.append(
            f"{s['stage_number']:>5}  {len(names):>7}  "
            f"{len(rams['srams']):>3}/{rams['nRows'] * rams['nColumns']:<3} "
            f"{len(tcams['tcams']):>2}/{tcams['nRows'] * tcams['nColumns']:<3} "
            f"{len(maps['maprams']):>3}/{maps['nRows'] * maps['nUnits']:<4} "
            f"{len(s['meter_alus']['meters']):>4}/{s['meter_alus']['nAlus']:<5} "
            f"{len(s['statistic_alus']['stats']):>4}/{s['statistic_alus']['nAlus']:<5} "
            f"{', '.join(sorted(u.removeprefix('BngIngressTop.') for u in users if not internal(u)))}")
    return "\n".join(lines) + "\n"


def internal(table: str) -> bool:
    """The compiler's own logical tables: gateways (cond-), action-only
    tables for the program's statements (tbl_) and checksum conditions."""
    return table.startswith(("cond-", "tbl_")) or "checksum_encode_update_condition" in table


def write_stamp(prog: Program, p4c: str) -> None:
    v = subprocess.run([p4c, "--version"], capture_output=True, text=True)
    version = (v.stdout + v.stderr).strip().splitlines()
    (BUILD / prog.name / "STAMP").write_text(
        f"sources {stamp(prog)}\noutputs {outputs_digest(prog)}\ncompiler {' '.join(version[-1:])}\n")
    print(f"{prog.name}: outputs in {(BUILD / prog.name).relative_to(ROOT)}")


def check_tna_frontend(prog: Program, p4test: str, include: Path) -> None:
    """Front and mid end of p4c on the TNA top, for where p4c-barefoot is absent."""
    cmd = [p4test, f"-D__TARGET_TOFINO__={2 if prog.target == 'tofino2' else 1}",
           "-I", str(include), "-I", str(P4SRC / "include"),
           str(prog.main)]
    print(" ".join(cmd))
    subprocess.run(cmd, check=True)


def check(prog: Program) -> bool:
    f = BUILD / prog.name / "STAMP"
    compiler = "p4c-dpdk" if prog.arch == "pna" else "p4c-barefoot"
    if not f.exists():
        print(f"{prog.name}: no compiled outputs (p4src/build/{prog.name}/STAMP missing); "
              f"run `make p4` with {compiler} on PATH")
        return False
    recorded = dict(line.split(" ", 1) for line in f.read_text().splitlines() if " " in line)
    if recorded.get("sources") != stamp(prog):
        print(f"{prog.name}: p4src sources or its programs.yaml entry changed since "
              f"p4src/build/{prog.name} was compiled; run `make p4` with {compiler} on PATH")
        return False
    if recorded.get("outputs") != outputs_digest(prog):
        print(f"{prog.name}: the files in p4src/build/{prog.name} are not the ones compiled under "
              f"its STAMP (edited by hand, added or removed?); run `make p4` with {compiler} on PATH")
        return False
    return True


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("programs", nargs="*", help="default: every program of p4src/programs.yaml")
    ap.add_argument("--p4c-dpdk", default=shutil.which("p4c-dpdk"))
    ap.add_argument("--p4c-barefoot", default=shutil.which("p4c-barefoot"))
    ap.add_argument("--check", action="store_true", help="only compare STAMPs with the sources")
    args = ap.parse_args()
    progs = programs()
    names = args.programs or list(progs)
    unknown = [n for n in names if n not in progs]
    if unknown:
        ap.error(f"unknown program(s) {unknown}; p4src/programs.yaml has {list(progs)}")
    if args.check:
        return 0 if all([check(progs[n]) for n in names]) else 1
    for n in names:
        prog = progs[n]
        if prog.arch == "pna":
            if not args.p4c_dpdk:
                print("p4c-dpdk not on PATH: see README, 'Compiling P4'")
                return 1
            compile_pna(prog, args.p4c_dpdk)
        elif args.p4c_barefoot:
            compile_tna(prog, args.p4c_barefoot)
        elif shutil.which("p4test") and tofino_include():
            print(f"{n}: p4c-barefoot not on PATH; checking the TNA top with p4test only")
            check_tna_frontend(prog, shutil.which("p4test"), tofino_include())
        else:
            print(f"{n}: skipped (needs p4c-barefoot, or p4test and p4c's Tofino include files)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

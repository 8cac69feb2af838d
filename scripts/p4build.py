#!/usr/bin/env python3
"""Compile a P4 program of p4src/ with p4c-dpdk into p4src/build/<program>/.

Outputs: <program>.spec (SWX pipeline), <program>.p4info.txtpb,
<program>.context.json, <program>.bfrt.json, <program>.device_config.json
(the bundle SetForwardingPipelineConfig carries: spec + context), and STAMP,
the SHA-256 of the sources the outputs came from. `--check` recomputes the
stamp, so a test fails when someone edits a source without recompiling.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
P4SRC = ROOT / "p4src"
BUILD = P4SRC / "build"
sys.path.insert(0, str(ROOT / "targets" / "dpdk"))


def sources(program: str) -> list[Path]:
    """The program's own directory plus the shared include directory."""
    files = sorted((P4SRC / program).rglob("*.p4"))
    inc = P4SRC / "include"
    if inc.is_dir():
        files += sorted(inc.rglob("*.p4"))
    return files


def stamp(program: str) -> str:
    h = hashlib.sha256()
    for f in sources(program):
        h.update(str(f.relative_to(P4SRC)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def compile_program(program: str, p4c: str) -> None:
    from bng_switch.device import encode_device_config

    out = BUILD / program
    out.mkdir(parents=True, exist_ok=True)
    main = P4SRC / program / f"{program}.p4"
    cmd = [p4c, "--arch", "pna", "-I", str(P4SRC / "include"),
           "--p4runtime-files", str(out / f"{program}.p4info.txtpb"),
           "--context", str(out / f"{program}.context.json"),
           "--bf-rt-schema", str(out / f"{program}.bfrt.json"),
           "-o", str(out / f"{program}.spec"), str(main)]
    print(" ".join(cmd))
    subprocess.run(cmd, check=True)
    context = json.loads((out / f"{program}.context.json").read_text())
    # The compile date and command change on every run: keep the outputs
    # reproducible so that a rebuild of unchanged sources changes nothing.
    for k in ("build_date", "compile_command"):
        context.pop(k, None)
    (out / f"{program}.context.json").write_text(json.dumps(context, indent=2, sort_keys=True) + "\n")
    spec = (out / f"{program}.spec").read_text()
    (out / f"{program}.device_config.json").write_bytes(encode_device_config(spec, context))
    v = subprocess.run([p4c, "--version"], capture_output=True, text=True)
    version = (v.stdout + v.stderr).strip().splitlines()
    (out / "STAMP").write_text(f"sources {stamp(program)}\ncompiler {' '.join(version[-1:])}\n")
    print(f"{program}: outputs in {out.relative_to(ROOT)}")


def check(program: str) -> bool:
    f = BUILD / program / "STAMP"
    if not f.exists():
        print(f"{program}: no compiled outputs (p4src/build/{program}/STAMP missing); run `make p4`")
        return False
    recorded = dict(line.split(" ", 1) for line in f.read_text().splitlines() if " " in line)
    if recorded.get("sources") != stamp(program):
        print(f"{program}: p4src sources changed since p4src/build/{program} was compiled; run `make p4`")
        return False
    return True


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("programs", nargs="+")
    ap.add_argument("--p4c", default="p4c-dpdk")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    if args.check:
        return 0 if all([check(p) for p in args.programs]) else 1
    for p in args.programs:
        compile_program(p, args.p4c)
    return 0


if __name__ == "__main__":
    sys.exit(main())

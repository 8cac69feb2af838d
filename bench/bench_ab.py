#!/usr/bin/env python3
"""make bench-ab: the BNG program built two ways, measured turn about.

A change to how the switch compiles a pipeline moves the roles by a few per
cent, less than this VM's drift between two `make bench-bng` runs minutes
apart. This benchmark takes the drift out of the comparison: it builds the
bng pipeline twice in one process, with an environment variable the switch
reads when it builds a pipeline set to A and then to B (BSW_SWX_GROUP_CHAIN,
BSW_SWX_EXACT_ACCESS, BSW_SWX_EMIT, BSW_SWX_EMIT_RUN, BSW_INDEX_TABLES,
BSW_TABLE_STATS, BSW_SWX_THREADS, BSW_SWX_DIRECT_CHAIN, BSW_SWX_CHECKSUM: see
targets/dpdk/src/bsw_pipeline.c),
installs the same sessions in both, and measures them alternately, one
second each, swapping which goes first every round. With --program-a DIR
it compares two P4 programs instead: A is the bng program compiled in DIR (a
copy of p4src/build made before a change to p4src/), B the tree's, with the
environment left as it is. It prints per role the
medians, their ratio and in how many rounds A was the faster; a figure
counts only if both pipelines forwarded every packet by its session
(bench_bng's check).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_bng import (PORT, ROLES, Readouts, check_forwarding, drop_total, frames, role_pipeline,  # noqa: E402
                             spread_flows)


def parse_env(spec: str) -> tuple[str, str, str]:
    """NAME=A,B -> (NAME, A, B)."""
    name, _, values = spec.partition("=")
    a, _, b = values.partition(",")
    if not name or not a or not b or "," in b:
        raise argparse.ArgumentTypeError(f"--env wants NAME=A,B, got {spec!r}")
    return name, a, b


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--env", type=parse_env, default=parse_env("BSW_SWX_GROUP_CHAIN=1,0"),
                    help="NAME=A,B: the variable and its two values (default BSW_SWX_GROUP_CHAIN=1,0)")
    ap.add_argument("--roles", default=",".join(ROLES))
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--seconds", type=float, default=1.0, help="one measurement")
    ap.add_argument("--sessions", type=int, default=40_000)
    ap.add_argument("--flows", type=int, default=1024, help="sessions the traffic cycles over")
    ap.add_argument("--frame-size", default="64", help="bytes, FCS included, or imix")
    ap.add_argument("--program-a", type=Path, metavar="DIR",
                    help="A is the bng program compiled in DIR (laid out as p4src/build), B the tree's; "
                         "--env is then ignored")
    ap.add_argument("--json", help="also write every measurement here")
    args = ap.parse_args()
    name, va, vb = args.env
    if args.program_a:
        name, va, vb = "program", str(args.program_a), "p4src/build"

    from scapy.layers.l2 import Ether
    from scapy.utils import wrpcap

    from bench.bench_dataplane import measure_mpps, start_pcap_bench
    from bng_lab.in_process import load_program

    work, pcap, cfg, lib, iospecs = start_pcap_bench("bench-bng-ab-", "ab", 1, PORT)
    one_step = cfg.table_lookup == "one-step"
    tree = load_program("bng", work, "bng.spec")
    progs = {"a": load_program("bng", work, "bng-a.spec", args.program_a) if args.program_a else tree,
             "b": tree}
    ro = {label: Readouts.of(prog) for label, prog in progs.items()}
    flows = spread_flows(args.sessions, args.flows)

    print(f"bench-ab: {name}={va} (A) against {name}={vb} (B); {args.sessions} sessions, traffic over "
          f"{len(flows)}, {args.frame_size} B frames, 1 worker, {args.rounds} rounds of {args.seconds}s each",
          flush=True)
    print(f"{'role':<12}{'A Mpps':>8}{'B Mpps':>8}{'A/B':>7}{'A won':>7}")
    values = {"a": va, "b": vb}
    out: dict = {"env": name, **values, "roles": {}}
    for role in args.roles.split(","):
        wrpcap(str(pcap), [Ether(b) for b in frames(role, flows, args.frame_size)])
        pipes = {}
        for label, v in values.items():
            # Each build compiles in a directory of its own: the switch's
            # cache of compiled pipelines must not hand B the library of A.
            build = work / label
            build.mkdir(exist_ok=True)
            if not args.program_a:
                os.environ[name] = v
            pipes[label], _, _ = role_pipeline(lib, progs[label], build, iospecs, cfg.dpdk_include, "compiled-only",
                                               one_step, role, args.sessions)
        drops_before = {label: drop_total(p, ro[label]) for label, p in pipes.items()}
        runs: dict[str, list[float]] = {"a": [], "b": []}
        for k in range(args.rounds):
            for label in (("a", "b") if k % 2 == 0 else ("b", "a")):
                runs[label].append(measure_mpps(pipes[label], PORT, args.seconds, 1))
        for label, p in pipes.items():
            check_forwarding(p, ro[label], role, flows, drops_before[label], f"{role} {name}={values[label]}")
            p.free()
        ma, mb = statistics.median(runs["a"]), statistics.median(runs["b"])
        won = sum(a > b for a, b in zip(runs["a"], runs["b"]))
        print(f"{role:<12}{ma:>8.2f}{mb:>8.2f}{ma / mb:>7.3f}{won:>4}/{args.rounds}", flush=True)
        out["roles"][role] = {"a_runs": runs["a"], "b_runs": runs["b"], "a_median": ma, "b_median": mb}
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""make bench-ab: the BNG program built two ways, measured turn about.

A change to how the switch compiles a pipeline moves the roles by a few per
cent, less than this VM's drift between two `make bench-bng` runs minutes
apart. This benchmark takes the drift out of the comparison: it builds the
bng pipeline twice in one process, with an environment variable the switch
reads when it builds a pipeline set to A and then to B (BSW_SWX_GROUP_CHAIN,
BSW_SWX_EXACT_ACCESS, BSW_SWX_EMIT, BSW_SWX_EMIT_RUN, BSW_SWX_EMIT_HANDLER,
BSW_INDEX_TABLES, BSW_LINE_EM_TABLES, BSW_TABLE_STATS, BSW_SWX_THREADS, BSW_SWX_DIRECT_CHAIN,
BSW_SWX_CHECKSUM: see
targets/dpdk/src/bsw_pipeline.c; BSW_TABLE_EM_FAST: bsw_table_lookup.c),
installs the same sessions in both, and measures them alternately, one
second each, swapping which goes first every round. Each side is built
--builds times per role (in the order A B B A A B ...), and every build is
measured in every round: two builds of the same code in one process have
measured up to 8% apart, the second built being the faster (`--env
BSW_UNUSED=1,0`, a variable the switch does not read, one build a side, two
runs: pppoe_up 0.923 and 0.944, lac_down 0.964 and 0.940; with two builds a
side, 0.963-1.016 by role), so one build a side cannot tell a change of a
few per cent from the build's own luck (where its memory landed, as far as
is known). The line per role gives each build's median too: their spread
within a side is the measure of that effect in the run at hand. With --program-a DIR
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
    ap.add_argument("--builds", type=int, default=2,
                    help="pipelines built per side and role, in the order A B B A ... (default 2)")
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

    if args.builds < 1:
        ap.error("--builds must be at least 1")
    # Every build of a role is alive at once (freed ones would hand their
    # memory to the next build, placing it alike).
    work, pcap, cfg, lib, iospecs = start_pcap_bench("bench-bng-ab-", "ab", 1, PORT, 2 * args.builds)
    one_step = cfg.table_lookup == "one-step"
    tree = load_program("bng", work, "bng.spec")
    progs = {"a": load_program("bng", work, "bng-a.spec", args.program_a) if args.program_a else tree,
             "b": tree}
    ro = {label: Readouts.of(prog) for label, prog in progs.items()}
    flows = spread_flows(args.sessions, args.flows)

    print(f"bench-ab: {name}={va} (A) against {name}={vb} (B); {args.sessions} sessions, traffic over "
          f"{len(flows)}, {args.frame_size} B frames, 1 worker, {args.builds} build(s) a side, "
          f"{args.rounds} rounds of {args.seconds}s for each build", flush=True)
    print(f"{'role':<12}{'A Mpps':>8}{'B Mpps':>8}{'A/B':>7}{'A won':>7}   per build: A | B")
    values = {"a": va, "b": vb}
    order = [(side, i) for i in range(args.builds) for side in (("a", "b") if i % 2 == 0 else ("b", "a"))]
    out: dict = {"env": name, **values, "builds": args.builds, "roles": {}}
    for role in args.roles.split(","):
        wrpcap(str(pcap), [Ether(b) for b in frames(role, flows, args.frame_size)])
        pipes = {}
        for side, i in order:
            # Each side compiles in a directory of its own: the switch's
            # cache of compiled pipelines must not hand B the library of A
            # (the builds of one side share theirs).
            build = work / side
            build.mkdir(exist_ok=True)
            if not args.program_a:
                os.environ[name] = values[side]
            pipes[side, i], _, _ = role_pipeline(lib, progs[side], build, iospecs, cfg.dpdk_include,
                                                 "compiled-only", one_step, role, args.sessions)
        drops_before = {key: drop_total(p, ro[key[0]]) for key, p in pipes.items()}
        runs: dict[tuple[str, int], list[float]] = {key: [] for key in order}
        won = 0
        for k in range(args.rounds):
            for key in (order if k % 2 == 0 else order[::-1]):
                runs[key].append(measure_mpps(pipes[key], PORT, args.seconds, 1))
            mean = {side: statistics.fmean(runs[side, i][k] for i in range(args.builds)) for side in "ab"}
            won += mean["a"] > mean["b"]
        for key, p in pipes.items():
            check_forwarding(p, ro[key[0]], role, flows, drops_before[key],
                             f"{role} {name}={values[key[0]]} build {key[1]}")
            p.free()
        side_runs = {side: [v for i in range(args.builds) for v in runs[side, i]] for side in "ab"}
        ma, mb = statistics.median(side_runs["a"]), statistics.median(side_runs["b"])
        per_build = " | ".join(" ".join(f"{statistics.median(runs[side, i]):.2f}" for i in range(args.builds))
                               for side in "ab")
        print(f"{role:<12}{ma:>8.2f}{mb:>8.2f}{ma / mb:>7.3f}{won:>4}/{args.rounds}   {per_build}", flush=True)
        out["roles"][role] = {"a_runs": side_runs["a"], "b_runs": side_runs["b"], "a_median": ma, "b_median": mb,
                              "a_builds": [runs["a", i] for i in range(args.builds)],
                              "b_builds": [runs["b", i] for i in range(args.builds)]}
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

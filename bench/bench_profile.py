#!/usr/bin/env python3
"""make bench-profile: where a packet's time goes, by role, beside p4_l2fwd.

bench-bng gives Mpps per role; this says what the worker spent them on. It
runs bench_bng.py for one role at a time under `perf record` (the whole
machine, a sampling clock: this VM has no PMU counters), attributes every
sample of the worker thread to the pipeline that was running (the compiled
pipeline's library seen last; each run lasts seconds) and to a part of the
data path by its symbol, and prints nanoseconds per packet for each part:
the share of the worker's samples times 1000 / Mpps of that pipeline's runs.

Parts: port I/O (DPDK's port library and the switch's port wrappers: what
p4_l2fwd pays too), run loop (DPDK's pipeline library), table lookups (the
lookup functions), lookup glue + actions (the table instruction around the
lookup and the actions' code), parser + control start (the first
instruction group: the parser and the control up to its first table),
other generated code (the other groups, deparser and tx among them), other.
p4_l2fwd's groups are single instructions, which run from DPDK's pipeline
library: its parser, deparser and tx count as run loop.

Needs perf (linux-perf) and root; a figure from one run, so differences of
a nanosecond or two are noise.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORKER = "rte-worker-1"
PARTS = ("port I/O", "run loop", "table lookups", "lookup glue + actions",
         "parser + control start", "other generated code", "other")

# perf script -F time,ip,sym,dso: "  74362.150808:     7f35..  em_lookup_20 (/path/libbsw.so)"
SAMPLE = re.compile(r"\s*([\d.]+):\s+\S+\s+(.*?)\s+\((.*)\)\s*$")


def part_of(sym: str, dso: str) -> str:
    """The part of the data path a sample's symbol belongs to."""
    name = Path(dso).name
    if "librte_port" in name or "librte_mempool" in name or "librte_mbuf" in name \
            or sym in ("frame_length_rx", "__tls_get_addr") or sym.startswith("rx_backoff"):
        return "port I/O"
    if "librte_pipeline" in name:
        return "run loop"
    if sym.startswith(("em_lookup", "lpm32_lookup", "index_lookup")) \
            or "rte_swx_table" in sym:
        return "table lookups"
    if name.startswith("pipeline-"):
        if sym in ("bsw_table_af_chain", "bsw_instr_table_af") or sym.startswith("action_"):
            return "lookup glue + actions"
        if sym == "pipeline_func_1":
            return "parser + control start"
        return "other generated code"
    return "other"


def attribute(lines, names: dict[str, str]) -> dict[str, collections.Counter]:
    """Samples by pipeline and part. lines: perf script output of the worker
    thread, in time order; names: pipeline library file name -> pipeline
    name. A sample outside any pipeline's library goes to the pipeline whose
    library the last sample before it was in."""
    out: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    current = None
    for line in lines:
        m = SAMPLE.match(line)
        if not m:
            continue
        sym, dso = m.group(2), m.group(3)
        lib = Path(dso).name
        if lib in names:
            current = names[lib]
        if current is not None:
            out[current][part_of(sym, dso)] += 1
    return out


def pipeline_names(work: Path) -> dict[str, str]:
    """The compiled pipelines a bench_bng.py run left in work, by library
    name: the BNG, p4_l2fwd or DPDK's l2fwd.spec, told apart by a table
    name in their generated C."""
    names = {}
    for c in work.glob("pipeline-*.c"):
        text = c.read_text(errors="replace")
        kind = "bng" if "bng_line_map" in text else "p4_l2fwd" if '"l2_fwd"' in text else "l2fwd.spec"
        names[c.with_suffix(".so").name] = kind
    return names


def ns_per_packet(samples: collections.Counter, mpps: float) -> dict[str, float]:
    """Each part's share of the samples times the time one packet takes."""
    total = sum(samples.values())
    return {part: samples[part] / total * 1000.0 / mpps for part in PARTS} if total else {}


def profile_role(role: str, seconds: float) -> dict:
    """One bench_bng.py run of role under perf record; ns per packet by part
    for the role and for the p4_l2fwd runs beside it."""
    scratch = Path(tempfile.mkdtemp(prefix="bench-profile-"))
    try:
        data = scratch / "perf.data"
        result = scratch / "bng.json"
        # perf outlives the benchmark: it is stopped once the run is over.
        perf = subprocess.Popen(["perf", "record", "-F", "2999", "-a", "-o", str(data)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1)
        # The benchmark's scratch directories (its compiled pipelines, which
        # perf script needs for their symbols) land in ours and stay.
        env = dict(os.environ, BENCH_KEEP_WORK="1", TMPDIR=str(scratch))
        run = subprocess.run([sys.executable, str(HERE / "bench_bng.py"), "--roles", role,
                              "--seconds", str(seconds), "--runs", "1", "--json", str(result)],
                             env=env, capture_output=True, text=True)
        perf.send_signal(signal.SIGINT)
        perf.wait()
        if run.returncode:
            raise SystemExit(f"bench_bng.py failed:\n{run.stdout}{run.stderr}")
        names = {}
        for work in scratch.glob("bench-bng-*"):
            names.update(pipeline_names(work))
        script = subprocess.run(["perf", "script", "-i", str(data), "--comm", WORKER, "-G",
                                 "-F", "time,ip,sym,dso"], capture_output=True, text=True)
        by_pipeline = attribute(script.stdout.splitlines(), names)
        figures = json.loads(result.read_text())["compiled"]["64"]
        role_mpps = figures[role]["median_mpps"]
        base_mpps = figures[role]["p4_l2fwd_median_mpps"]
        return {"role": role, "mpps": role_mpps, "p4_l2fwd_mpps": base_mpps,
                "ns": ns_per_packet(by_pipeline.get("bng", collections.Counter()), role_mpps),
                "p4_l2fwd_ns": ns_per_packet(by_pipeline.get("p4_l2fwd", collections.Counter()),
                                             base_mpps),
                "samples": sum(by_pipeline.get("bng", {}).values())}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def render(results: list[dict]) -> str:
    """ns per packet by part: each role beside its p4_l2fwd runs."""
    head = f"{'part':24s}" + "".join(f"{r['role']:>12s}{'p4_l2fwd':>10s}" for r in results)
    lines = [head]
    for part in PARTS:
        lines.append(f"{part:24s}" + "".join(
            f"{r['ns'].get(part, 0):12.1f}{r['p4_l2fwd_ns'].get(part, 0):10.1f}" for r in results))
    lines.append(f"{'total (1000 / Mpps)':24s}" + "".join(
        f"{1000 / r['mpps']:12.1f}{1000 / r['p4_l2fwd_mpps']:10.1f}" for r in results))
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--roles", default="pppoe_up,lns_up")
    ap.add_argument("--seconds", type=float, default=8.0, help="one bench_bng.py run")
    ap.add_argument("--json", help="also write the figures here")
    args = ap.parse_args()
    if not shutil.which("perf"):
        raise SystemExit("bench-profile needs perf (apt install linux-perf)")
    results = [profile_role(role, args.seconds) for role in args.roles.split(",")]
    print("bench-profile: ns per packet by part of the data path (perf record -F 2999, "
          f"worker {WORKER}; 64 B, 40000 sessions, one bench_bng.py run of "
          f"{args.seconds:g} s per role)")
    print(render(results))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()

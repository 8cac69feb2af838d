#!/usr/bin/env python3
"""make bench-path: SWX instructions the bng program runs per packet, by role.

The Mpps of bench_bng move by several per cent between runs on a shared VM;
the length of each role's path through the pipeline does not. This builds
the pipeline with DPDK's per-instruction trace (BSW_SWX_TRACE=1, see
targets/dpdk/src/bsw_pipeline.c), sends each role's frames through it (the
same frames and entries as bench_bng, over a few sessions), and counts per
packet the instructions the trace shows, from rx to tx, split into:
  const_stores   `mov m.f <constant>`: metadata set to a constant (the P4
                 program's initialisations and resets)
  emit_invalid   emits of headers that are not valid (no-ops the deparser
                 still runs)
  other          everything else the trace shows (extracts, field moves,
                 arithmetic, checksums, meters, counters, valid emits, tx)
The trace comes from the instruction groups DPDK compiles; jumps, table
lookups and a group of one instruction that DPDK runs from its own library
are not traced, so they are not in the counts (p4_l2fwd, bench_bng's
baseline, is such groups only: rx+extract, a table, emit+tx, with no trace
to count). A role counts only if every traced packet was sent (tx), none
dropped.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_bng import PORT, ROLES, frames, role_pipeline, spread_flows  # noqa: E402

TRACE_LINE = re.compile(r"^\[Thread\s+(\d+)\]:?\s*(.*)$")
RX = re.compile(r"^rx \d+ pkt from port")
TX = re.compile(r"^tx \d+ pkt to port")
CONST_STORE = re.compile(r"^mov m\.f (?:[0-9a-fA-F]+)$")
EMIT_INVALID = re.compile(r"^emit header \d+ \(invalid\)$")
KINDS = ("const_stores", "emit_invalid", "other")


def count_paths(trace: str) -> list[dict[str, int]]:
    """Per packet whose rx and tx both appear in `trace`, its instruction
    counts by kind. A packet is the run of one pipeline thread's lines from
    its rx to its tx; raises if one ends in a drop."""
    open_paths: dict[int, dict[str, int]] = {}
    done = []
    for line in trace.splitlines():
        m = TRACE_LINE.match(line)
        if not m:
            continue                    # "Emit handler: ..." notes
        thread, text = int(m.group(1)), m.group(2)
        if RX.match(text):
            open_paths[thread] = dict.fromkeys(KINDS, 0)
            continue
        path = open_paths.get(thread)
        if path is None or text.startswith("***"):
            continue                    # before the thread's first rx; fusion notes
        if text.startswith("drop"):
            raise SystemExit(f"a traced packet was dropped: {line}")
        kind = ("const_stores" if CONST_STORE.match(text) else
                "emit_invalid" if EMIT_INVALID.match(text) else "other")
        path[kind] += 1
        if TX.match(text):
            done.append(open_paths.pop(thread))
    return done


def traced_run(p, n_packets: int, out: Path, timeout_s: float = 10.0) -> str:
    """Runs the pipeline until its port has received n_packets, with the C
    library's stdout (where DPDK's trace goes) sent to the file `out`;
    returns what it holds."""
    libc = ctypes.CDLL(None)
    sys.stdout.flush()
    libc.fflush(None)
    saved = os.dup(1)
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    try:
        p.workers_start(0)
        deadline = time.monotonic() + timeout_s
        while p.port_stats(PORT)["rx_pkts"] < n_packets and time.monotonic() < deadline:
            time.sleep(0.01)
        p.workers_stop()
        libc.fflush(None)
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(fd)
    return out.read_text(errors="replace")


def summary(paths: list[dict[str, int]]) -> dict:
    totals = [sum(pth.values()) for pth in paths]
    return {"packets": len(paths), "min": min(totals), "max": max(totals),
            **{k: statistics.median(pth[k] for pth in paths) for k in KINDS},
            "total": statistics.median(totals)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--roles", default=",".join(ROLES))
    ap.add_argument("--sessions", type=int, default=64, help="sessions installed and sent to")
    ap.add_argument("--packets", type=int, default=256, help="packets to trace per role (at least)")
    ap.add_argument("--json", help="also write the counts here")
    args = ap.parse_args()

    from scapy.layers.l2 import Ether
    from scapy.utils import wrpcap

    from bench.bench_dataplane import start_pcap_bench
    from bng_lab.in_process import load_program

    os.environ["BSW_SWX_TRACE"] = "1"
    work, pcap, cfg, lib, iospecs = start_pcap_bench("bench-path-", "path", 1, PORT)
    one_step = cfg.table_lookup == "one-step"
    flows = spread_flows(args.sessions, args.sessions)
    prog = load_program("bng", work, "bng.spec")
    print(f"bench-path: SWX instructions per packet (DPDK trace; jumps and table lookups not traced), "
          f"{args.sessions} sessions, 64 B frames", flush=True)
    print(f"{'role':<12}{'total':>7}{'const':>7}{'emit':>7}{'other':>7}  packets (min-max)")
    print(f"{'':<12}{'':>7}{'stores':>7}{'inval':>7}")
    results: dict[str, dict] = {}
    for role in args.roles.split(","):
        wrpcap(str(pcap), [Ether(b) for b in frames(role, flows, 64)])
        p, _, _ = role_pipeline(lib, prog, work, iospecs, cfg.dpdk_include, "compiled-only", one_step, role,
                                args.sessions)
        paths = count_paths(traced_run(p, args.packets, work / f"trace-{role}.txt"))
        p.free()
        if not paths:
            raise SystemExit(f"{role}: no complete packet in the trace")
        res = results[role] = summary(paths)
        print(f"{role:<12}{res['total']:>7g}{res['const_stores']:>7g}{res['emit_invalid']:>7g}"
              f"{res['other']:>7g}  {res['packets']} ({res['min']}-{res['max']})", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""make bench-tables: exact-match insert cost against table size.

Three paths, measured in the same run on the same program (switch_test,
table l2_fwd, 48-bit key, 1 action parameter):
  p4runtime  our switch through P4Runtime: Write RPCs of --batch entries
  direct     our table manager called in-process (libbsw ops), same batches
  stock      DPDK 22.11 rte_swx_ctl: entry_add per entry, commit per batch
For each it prints entries/s over the whole run and the per-entry cost of the
batch that reaches 1k, 10k, 50k and 100k entries, then the growth 1k -> 100k.
Workers run (idle, so quiescence is immediate): the numbers are control-path
costs, not forwarding under load.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.workdir import work_dir  # noqa: E402

PROGRAM = "switch_test"
TABLE = "l2_fwd"
CHECKPOINTS = [1_000, 10_000, 50_000, 100_000]


def windows(n: int, batch: int) -> list[int]:
    """Counts at which to read the clock: each checkpoint and one batch
    before, and the end (for entries/s)."""
    cps = {n}
    for c in CHECKPOINTS:
        if c <= n:
            cps.update((c - batch, c) if c > batch else (c,))
    return sorted(cps)


def summarize(ns_at: dict[int, int], n: int, batch: int) -> dict:
    out = {"entries_per_s": n / (ns_at[n] / 1e9), "us_per_entry_at": {}}
    for c in CHECKPOINTS:
        if c > n:
            continue
        prev = c - batch if c > batch else 0
        dt = ns_at[c] - ns_at.get(prev, 0)
        out["us_per_entry_at"][c] = dt / (c - prev) / 1e3
    return out


def bench_p4runtime(n: int, batch: int, streams: int) -> dict:
    from bng_controller.p4runtime_client import P4RuntimeClient
    from bng_lab.switch_process import SwitchProcess, program_files
    tmp = work_dir("bench-tables-")
    sw = SwitchProcess(tmp, "benchtab", [], idle_us=200).start()
    try:
        c = P4RuntimeClient(sw.address, election_id=(0, 1))
        c.connect()
        p4info, dc = program_files(PROGRAM)
        c.set_pipeline(P4RuntimeClient.load_p4info(str(p4info)), dc.read_bytes())
        # Build the requests first: the client's own protobuf work is not
        # what we measure.
        from p4.v1 import p4runtime_pb2 as p4r
        reqs = []
        for start in range(0, n, batch):
            req = p4r.WriteRequest(device_id=1)
            req.election_id.low = 1
            for k in range(start, min(n, start + batch)):
                u = req.updates.add(type=p4r.Update.INSERT)
                u.entity.table_entry.CopyFrom(c.table_entry(TABLE, {"dst_addr": k + 1}, "forward", {"port": 1}))
            reqs.append(req)
        # `streams` Write RPCs in flight at once, as a controller setting up
        # many sessions would have: the server groups what is waiting into
        # one commit. Batches are issued in order; a checkpoint is the time
        # at which every batch up to it has completed.
        from concurrent.futures import ThreadPoolExecutor
        ns_at = {}
        t0 = time.perf_counter_ns()
        with ThreadPoolExecutor(max_workers=streams) as pool:
            futures = [pool.submit(c.stub.Write, req) for req in reqs]
            done = 0
            for req, f in zip(reqs, futures):
                f.result()
                done += len(req.updates)
                ns_at[done] = time.perf_counter_ns() - t0
        c.close()
        return summarize(ns_at, n, batch)
    finally:
        sw.stop()


def bench_in_process(n: int, batch: int) -> dict:
    """Runs in a child process: it owns a DPDK EAL."""
    from bng_lab.in_process import load_program, start_eal
    from bng_switch import libbsw, switch_config

    work = str(work_dir("bench-tables-"))
    prog = load_program(PROGRAM, Path(work))
    spec_path = str(prog.spec_path)
    cfg = switch_config.from_dict({"name": "bt", "work_dir": work, "ports": [], "workers": 1,
                                   "mempool_mbufs": 4096})
    lib = start_eal(cfg)
    results = {}

    # Ours, direct.
    pmap = prog.pipeline_map()
    p = lib.pipeline_build(spec_path, work, cfg.dpdk_include, [cfg.iospec(0)], "compiled-only")
    pmap.bind(p)
    p.workers_start(200)
    t = next(t for t in pmap.tables.values() if t.name.endswith(TABLE))
    act = next(a for a in t.actions.values() if a.name.endswith("forward"))
    f = next(iter(t.fields.values()))
    data = act.encode({1: 1}, t.data_size)
    entries = [libbsw.EntryBytes(f.encode(k + 1).ljust(t.key_size, b"\0"), act.swx_id, data) for k in range(n)]
    ns_at = {}
    t0 = time.perf_counter_ns()
    for start in range(0, n, batch):
        ops = libbsw.OpBatch()
        for e in entries[start:start + batch]:
            ops.add(t.swx_id, e, None)
        p.table_commit(ops)
        ns_at[min(n, start + batch)] = time.perf_counter_ns() - t0
    results["direct"] = summarize(ns_at, n, batch)
    p.free()

    # Stock rte_swx_ctl on a fresh pipeline of the same program.
    p = lib.pipeline_build(spec_path, work, cfg.dpdk_include, [cfg.iospec(0)], "compiled-only")
    p.workers_start(200)
    cps = windows(n, batch)
    ns = p.bench_stock_ctl(t.swx_name, act.swx_id, n, batch, cps)
    results["stock"] = summarize(dict(zip(cps, ns)), n, batch)
    p.free()
    return results


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--streams", type=int, default=1, help="concurrent Write RPCs (P4Runtime path; per-entry windows then include queueing)")
    ap.add_argument("--in-process", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args()
    if args.in_process:
        print(json.dumps(bench_in_process(args.entries, args.batch)))
        return 0

    print(f"bench-tables: {args.entries} exact entries into {PROGRAM}.{TABLE}, batches of {args.batch}", flush=True)
    print(f"  [1/2] P4Runtime path (switch process, {args.streams} Write RPCs in flight) ...", flush=True)
    res = {"p4runtime": bench_p4runtime(args.entries, args.batch, args.streams)}
    print("  [2/2] in-process: our table manager, then stock rte_swx_ctl (O(n) per add: slow) ...", flush=True)
    out = subprocess.run([sys.executable, __file__, "--in-process", "--entries", str(args.entries),
                          "--batch", str(args.batch)], capture_output=True, text=True)
    if out.returncode != 0:
        print(out.stdout, out.stderr)
        return 1
    for name, r in json.loads(out.stdout.strip().splitlines()[-1]).items():
        r["us_per_entry_at"] = {int(k): v for k, v in r["us_per_entry_at"].items()}  # JSON keys are strings
        res[name] = r

    cps = [c for c in CHECKPOINTS if c <= args.entries]
    print()
    print(f"{'path':<11}{'entries/s':>12}" + "".join(f"{f'us/entry@{c // 1000}k':>15}" for c in cps)
          + f"{'growth':>9}")
    for name in ("p4runtime", "direct", "stock"):
        r = res[name]
        per = r["us_per_entry_at"]
        growth = per[cps[-1]] / per[cps[0]]
        print(f"{name:<11}{r['entries_per_s']:>12,.0f}" + "".join(f"{per[c]:>15.2f}" for c in cps)
              + f"{growth:>8.2f}x")
    s, o = res["stock"], res["p4runtime"]
    print(f"\nP4Runtime path vs stock rte_swx_ctl: {o['entries_per_s'] / s['entries_per_s']:.1f}x entries/s "
          f"(same run); at {cps[-1] // 1000}k entries {s['us_per_entry_at'][cps[-1]] / o['us_per_entry_at'][cps[-1]]:.1f}x "
          "cheaper per entry")
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""make bench-dataplane: forwarding rate per core, pcap source -> sink.

For each pipeline mode (compiled, interpreted) it measures, in the same run:
  baseline   DPDK's plain l2fwd.spec (rx, stub table, tx to the input port),
             shipped in Debian's dpdk-doc package
  program    a P4 program of ours (default switch_test: port_fwd, l2_fwd with
             --entries exact entries, ipv4_route, punt_acl, counter, meter map)
Each worker lcore runs one pipeline instance reading its own pcap source
(64 B frames by default, looped) and writing to a discarding sink; the rate
is packets received by the pipeline per second per worker. Every figure is
the median of --runs runs; the ratio program/baseline is what to compare
across machines.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.workdir import work_dir  # noqa: E402

L2FWD_SPEC = "/usr/share/dpdk/examples/pipeline/examples/l2fwd.spec"


# Simple IMIX by Ethernet frame size (FCS included): 7 x 64, 4 x 594, 1 x 1518
# (IP packets of 40, 576 and 1500 bytes), 353.8 B on average.
IMIX = (64,) * 7 + (594,) * 4 + (1518,)


def frame_sizes(label: str | int, n: int) -> list[int]:
    """The sizes of n frames: one size, or "imix" cycling through IMIX."""
    if str(label) == "imix":
        return [IMIX[i % len(IMIX)] for i in range(n)]
    return [int(label)] * n


def make_pcap(path: Path, frame_size: int | str, n_flows: int, order: list[int] | None = None) -> None:
    """n_flows frames, flow i to dst MAC 02:00:00:x:y:z and IPv4 10.x.y.z
    (i's bytes), in flow order or in the order given (a permutation)."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    from scapy.utils import wrpcap
    pkts = []
    for i, size in zip(order if order is not None else range(n_flows), frame_sizes(frame_size, n_flows)):
        p = Ether(src="02:00:00:00:00:01", dst=f"02:00:00:{(i >> 16) & 0xff:02x}:{(i >> 8) & 0xff:02x}:{i & 0xff:02x}")
        p = p / IP(src="10.0.0.1", dst=f"10.{(i >> 16) & 0xff}.{(i >> 8) & 0xff}.{i & 0xff}") / UDP(sport=1000, dport=2000)
        pad = size - 4 - len(p)  # frame sizes count the FCS, as line-rate figures do
        pkts.append(p / (b"\0" * max(0, pad)))
    wrpcap(str(path), pkts)


def insert_update(pmap, table: str, fields: dict, action: str, params: dict):
    """A P4Runtime INSERT by P4Info names (exact fields; LPM ones as host
    routes), for feeding the server's TableStore in-process."""
    from p4.config.v1 import p4info_pb2
    from p4.v1 import p4runtime_pb2 as p4r
    t = next(t for t in pmap.tables.values() if t.name.endswith("." + table))
    te = p4r.TableEntry(table_id=t.id)
    for fname, v in fields.items():
        f = next(f for f in t.fields.values() if f.name == fname)
        m = te.match.add(field_id=f.id)
        if f.match_type == p4info_pb2.MatchField.LPM:
            m.lpm.value, m.lpm.prefix_len = v.to_bytes((f.bitwidth + 7) // 8, "big"), f.bitwidth
        else:
            m.exact.value = v.to_bytes((f.bitwidth + 7) // 8, "big")
    a = next(a for a in t.actions.values() if a.name.split(".")[-1] == action)
    te.action.action.action_id = a.id
    for pname, v in params.items():
        pm = next(x for x in a.params.values() if x.name == pname)
        te.action.action.params.add(param_id=pm.id, value=v.to_bytes((pm.bitwidth + 7) // 8, "big"))
    u = p4r.Update(type=p4r.Update.INSERT)
    u.entity.table_entry.CopyFrom(te)
    return u


def pipeline_with_entries(lib, prog, work: Path, iospecs: list[str], dpdk_include: str, mode: str,
                          one_step: bool, updates) -> tuple[object, int, float]:
    """prog built into a pipeline, with the P4Runtime INSERTs that
    updates(pmap) yields committed through the server's TableStore; returns
    (pipeline, table ops committed, seconds the install took)."""
    from bng_switch import libbsw
    from bng_switch.table_store import TableStore

    p = lib.pipeline_build(str(prog.spec_path), str(work), dpdk_include, iospecs, mode)
    p.table_lookup_set(one_step)
    pmap = prog.pipeline_map()
    pmap.bind(p)
    store = TableStore(pmap)
    t0 = time.perf_counter()
    ops, undo = libbsw.OpBatch(), []
    for u in updates(pmap):
        store.apply(u, ops, undo)
    store.add_rebuilds(ops)
    p.table_commit(ops)
    return p, len(ops), time.perf_counter() - t0


def measure_mpps(p, port: int, seconds: float, workers: int) -> float:
    """Packets the pipeline received on `port` per second per worker, after
    half a second of warm-up."""
    p.workers_start(0)
    time.sleep(0.5)
    a = p.port_stats(port)["rx_pkts"]
    t0 = time.perf_counter()
    time.sleep(seconds)
    b = p.port_stats(port)["rx_pkts"]
    dt = time.perf_counter() - t0
    p.workers_stop()
    return (b - a) / dt / 1e6 / workers


def run_modes(script: str, args, keys: tuple[str, ...]) -> dict | None:
    """Runs `script --mode M` for each of args.modes in a child process (each
    owns its EAL) and returns {mode: the child's JSON}; None if one failed."""
    results = {}
    for mode in args.modes.split(","):
        print(f"  {mode} ...", flush=True)
        cmd = [sys.executable, script, "--mode", mode]
        for k, v in vars(args).items():
            if k not in keys or v is None or v is False:
                continue
            flag = f"--{k.replace('_', '-')}"
            cmd.append(flag if v is True else f"{flag}={v}")    # True: a store_true flag
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            print(r.stdout[-3000:], r.stderr[-3000:])
            return None
        results[mode] = json.loads(r.stdout.strip().splitlines()[-1])
    return results


def start_pcap_bench(prefix: str, name: str, workers: int, port: int = 1, pipelines: int = 0):
    """What every pcap benchmark starts from, in the process that is to own
    the EAL: a scratch directory (work_dir(prefix)), the path of the pcap its
    port replays (in.pcap there, written by the caller before each pipeline
    build opens it), a switch config of `workers` busy-polling workers and
    that one pcap port, which discards what the pipeline sends, the started
    EAL, and the workers' iospecs. pipelines: how many pipeline instances
    the caller keeps alive at once, where that is more than the switch's
    default EAL memory plans for (two per worker). Returns (work, pcap, cfg,
    lib, iospecs)."""
    from bng_lab.in_process import start_eal
    from bng_switch import switch_config

    work = work_dir(prefix)
    pcap = work / "in.pcap"
    cfg = switch_config.from_dict({
        "name": name, "work_dir": str(work), "workers": workers, "idle_us": 0,
        "mempool_mbufs": 8192 * workers,
        "ports": [{"id": port, "type": "pcap", "rx_pcap": str(pcap), "tx_pcap": "none"}]})
    if pipelines:
        cfg = dataclasses.replace(cfg, eal_memory_mb=cfg.eal_memory_for(pipelines))
    lib = start_eal(cfg)
    return work, pcap, cfg, lib, [cfg.iospec(k) for k in range(workers)]


def run_child(args) -> dict:
    """In a child process (it owns the EAL): all measurements of one mode."""
    from bng_lab.in_process import load_program

    work, pcap, cfg, lib, iospecs = start_pcap_bench("bench-dp-", "bd", args.workers)
    make_pcap(pcap, args.frame_size, min(args.entries, 1024) or 1)

    def measure(p) -> float:
        return measure_mpps(p, 1, args.seconds, args.workers)

    out: dict[str, list[float]] = {"baseline": [], "program": []}
    base = lib.pipeline_build(L2FWD_SPEC, str(work), cfg.dpdk_include, iospecs,
                              "compiled-only" if args.mode == "compiled" else "interpreted")
    for _ in range(args.runs):
        out["baseline"].append(measure(base))
    base.free()

    def updates(pmap):
        yield insert_update(pmap, "port_fwd", {"in_port": 1}, "forward", {"port": 1})
        for i in range(args.entries):
            yield insert_update(pmap, "l2_fwd", {"dst_addr": 0x020000000000 | i}, "forward", {"port": 1})

    p, _, _ = pipeline_with_entries(lib, load_program(args.program, work), work, iospecs, cfg.dpdk_include,
                                    "compiled-only" if args.mode == "compiled" else "interpreted",
                                    cfg.table_lookup == "one-step", updates)   # lookups as the switch runs them
    for _ in range(args.runs):
        out["program"].append(measure(p))
    p.free()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--program", default="switch_test")
    ap.add_argument("--entries", type=int, default=40_000, help="exact entries installed in l2_fwd")
    ap.add_argument("--frame-size", type=int, default=64)
    ap.add_argument("--workers", type=int, default=1, help="worker lcores (the machine needs workers+1 cores)")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--modes", default="compiled,interpreted")
    ap.add_argument("--mode", help=argparse.SUPPRESS)
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args()
    if args.mode:
        print(json.dumps(run_child(args)))
        return 0

    if not os.path.exists(L2FWD_SPEC):
        print(f"{L2FWD_SPEC} missing: install Debian's dpdk-doc (make setup does)")
        return 1
    print(f"bench-dataplane: {args.program} ({args.entries} l2_fwd entries) vs l2fwd.spec, "
          f"{args.frame_size} B, {args.workers} worker(s), {args.runs} x {args.seconds}s runs", flush=True)
    raw = run_modes(__file__, args, ("program", "entries", "frame_size", "workers", "seconds", "runs"))
    if raw is None:
        return 1
    results = {mode: {k: {"runs": v, "median_mpps": statistics.median(v)} for k, v in res.items()}
               for mode, res in raw.items()}
    print(f"\n{'mode':<13}{'baseline Mpps/core':>20}{'program Mpps/core':>20}{'ratio':>8}")
    for mode, r in results.items():
        b, p = r["baseline"]["median_mpps"], r["program"]["median_mpps"]
        print(f"{mode:<13}{b:>20.2f}{p:>20.2f}{p / b:>8.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""make bench: every benchmark of the project in one run, one report.

    make bench                                   # this machine, 1..(cores-1) workers
    make bench BENCH_ARGS="--workers 1,2,4,8 --setup-sessions 40000"
    make bench BENCH_ARGS="--quick"              # minutes, not an hour: fewer entries, sizes, sessions

Runs, each in its own process as the individual `make bench-*` targets do:

1. table writes (bench_tables): 100k exact entries through P4Runtime, our
   table manager in-process, and stock rte_swx_ctl, per-entry cost at 1k..100k;
2. the plain pipeline (bench_dataplane): the switch_test program against
   DPDK's l2fwd.spec, compiled and interpreted, 64 B;
3. the BNG program by role (bench_bng): PPPoE up/down, LAC up/down, LNS
   up/down with 40k sessions installed, at 64..1518 B and IMIX, each against
   DPDK's l2fwd.spec and our P4 L2 forwarding program (p4src/l2fwd) at the
   same frame size, for every worker count asked for;
4. session setup (bench_setup): PPPoE PAP+IPCP up to --setup-sessions, the
   established-over-time curve; and through LAC -> LNS.

Every data-plane figure is the median of --runs runs and sits next to its
baseline measured in the same child process; table and setup figures are
medians of --setup-runs / a single run where stated in the report. Writes
bench/results/<time>-<host>/report.json (every figure, the machine, the
commit), report.md (the tables) and PNG plots.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_bng import ROLES  # noqa: E402

PY = sys.executable
SIZES = ("64", "128", "256", "512", "1024", "1518", "imix")


def machine() -> dict:
    cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")), platform.processor())
    mem_kb = int(next(ln.split()[1] for ln in Path("/proc/meminfo").read_text().splitlines()
                      if ln.startswith("MemTotal")))
    dpdk = subprocess.run(["pkg-config", "--modversion", "libdpdk"], capture_output=True, text=True).stdout.strip()
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True).stdout.strip())
    return {"host": platform.node(), "cpu": cpu, "cores": os.cpu_count(), "memory_gib": round(mem_kb / 2**20, 1),
            "kernel": platform.release(), "os": _os_release(), "dpdk": dpdk, "python": platform.python_version(),
            "commit": commit + ("-dirty" if dirty else ""), "load_avg_at_start": os.getloadavg()}


def _os_release() -> str:
    try:
        return next(ln.split("=", 1)[1].strip('"') for ln in Path("/etc/os-release").read_text().splitlines()
                    if ln.startswith("PRETTY_NAME="))
    except (OSError, StopIteration):
        return platform.platform()


class Progress:
    def __init__(self, steps: int):
        self.steps, self.n, self.t0 = steps, 0, time.time()

    def step(self, what: str) -> None:
        self.n += 1
        el = time.time() - self.t0
        print(f"\n=== [{self.n}/{self.steps}] {what} (elapsed {el / 60:.1f} min)", flush=True)


def run(cmd: list[str], json_path: Path) -> dict | None:
    """A benchmark script with its output streamed (its own progress lines)
    and its JSON read back; None (and the reason kept) if it failed."""
    print("$ " + " ".join(str(c) for c in cmd), flush=True)
    r = subprocess.run(cmd, cwd=ROOT)
    if r.returncode != 0 or not json_path.exists():
        print(f"!!! {Path(cmd[1]).name} failed (exit {r.returncode})", flush=True)
        return None
    return json.loads(json_path.read_text())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ncores = os.cpu_count() or 2
    ap.add_argument("--workers", default=",".join(str(w) for w in _default_workers(ncores)),
                    help="worker counts for the data plane, e.g. 1,2,4 (each needs workers+1 cores; "
                         "default 1..cores-1 in powers of two)")
    ap.add_argument("--frame-sizes", default=",".join(SIZES))
    ap.add_argument("--roles", default=",".join(ROLES))
    ap.add_argument("--runs", type=int, default=3, help="data-plane runs per figure (the median is reported)")
    ap.add_argument("--seconds", type=float, default=2.0, help="seconds per data-plane run")
    ap.add_argument("--sessions", type=int, default=40_000, help="sessions installed per data-plane role")
    ap.add_argument("--table-entries", type=int, default=100_000)
    ap.add_argument("--setup-sessions", type=int, default=40_000, help="PPPoE setup-rate run (0: skip)")
    ap.add_argument("--setup-runs", type=int, default=1, help="PPPoE setup runs (median reported)")
    ap.add_argument("--l2tp-sessions", type=int, default=2_000, help="setup through LAC -> LNS (0: skip)")
    ap.add_argument("--quick", action="store_true",
                    help="a few minutes: 20k table entries, 64 B and IMIX, 2 runs of 1 s, 4000 setups")
    ap.add_argument("--out", help="report directory (default bench/results/<time>-<host>)")
    args = ap.parse_args()
    if args.quick:
        args.table_entries, args.frame_sizes, args.runs, args.seconds = 20_000, "64,imix", 2, 1.0
        args.setup_sessions, args.l2tp_sessions, args.sessions = 4_000, 500, 10_000
    workers = [int(w) for w in args.workers.split(",")]
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = Path(args.out) if args.out else ROOT / "bench" / "results" / f"{stamp}-{platform.node()}"
    out.mkdir(parents=True, exist_ok=True)
    raw = out / "raw"
    raw.mkdir(exist_ok=True)
    report: dict = {"machine": machine(), "started": stamp, "parameters": {
        k: v for k, v in vars(args).items() if k != "out"}, "failed": []}
    print(f"bench report -> {out}\nmachine: {report['machine']}", flush=True)

    steps = 2 + len(workers) + (args.setup_runs if args.setup_sessions else 0) + (1 if args.l2tp_sessions else 0)
    prog = Progress(steps)

    prog.step(f"table writes: {args.table_entries} entries, P4Runtime vs our manager vs stock rte_swx_ctl")
    report["tables"] = run([PY, "bench/bench_tables.py", "--entries", str(args.table_entries),
                            "--json", str(raw / "tables.json")], raw / "tables.json")

    prog.step("plain pipeline: switch_test vs l2fwd.spec, compiled and interpreted, 64 B")
    report["dataplane_plain"] = run([PY, "bench/bench_dataplane.py", "--runs", str(args.runs), "--seconds",
                                     str(args.seconds), "--json", str(raw / "dataplane.json")],
                                    raw / "dataplane.json")

    report["dataplane"] = {}
    for w in workers:
        prog.step(f"BNG program by role and frame size, {w} worker(s), {args.sessions} sessions")
        path = raw / f"bng-w{w}.json"
        res = run([PY, "bench/bench_bng.py", "--workers", str(w), "--frame-sizes", args.frame_sizes,
                   "--roles", args.roles, "--runs", str(args.runs), "--seconds", str(args.seconds),
                   "--sessions", str(args.sessions), "--json", str(path)], path)
        if res is not None:
            report["dataplane"][str(w)] = res["compiled"]

    if args.setup_sessions:
        runs = []
        for i in range(args.setup_runs):
            prog.step(f"PPPoE session setup up to {args.setup_sessions} sessions (run {i + 1}/{args.setup_runs})")
            path = raw / f"setup-pppoe-{i + 1}.json"
            r = run([PY, "bench/bench_setup.py", "--sessions", str(args.setup_sessions), "--json", str(path)], path)
            if r is not None:
                runs.append(r)
        report["setup_pppoe"] = _median_run(runs)
    if args.l2tp_sessions:
        prog.step(f"session setup through LAC -> LNS, {args.l2tp_sessions} sessions over one tunnel")
        path = raw / "setup-l2tp.json"
        report["setup_l2tp"] = run([PY, "bench/bench_setup.py", "--topology", "lac-lns", "--sessions",
                                    str(args.l2tp_sessions), "--json", str(path)], path)

    report["failed"] = [k for k in ("tables", "dataplane_plain", "setup_pppoe", "setup_l2tp")
                        if k in report and report[k] is None]
    report["finished"] = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    (out / "report.json").write_text(json.dumps(report, indent=2))
    plots = make_plots(report, out)
    md = markdown(report, plots)
    (out / "report.md").write_text(md)
    print("\n" + md)
    print(f"\nreport: {out}/report.md, report.json, {', '.join(p.name for p in plots)}")
    return 1 if report["failed"] else 0


def _default_workers(ncores: int) -> list[int]:
    top = max(1, ncores - 1)
    ws, w = [], 1
    while w < top:
        ws.append(w)
        w *= 2
    return ws + [top]


def _median_run(runs: list[dict]) -> dict | None:
    """The run with the median setup rate, with every run's rate beside it."""
    if not runs:
        return None
    runs = sorted(runs, key=lambda r: r["setup_rate_cps"])
    med = dict(runs[len(runs) // 2])
    med["all_runs_setup_rate_cps"] = [r["setup_rate_cps"] for r in runs]
    med["median_setup_rate_cps"] = statistics.median(r["setup_rate_cps"] for r in runs)
    return med


# ---------------------------------------------------------------------------
def make_plots(report: dict, out: Path) -> list[Path]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    made = []
    mach = report["machine"]
    sub = f"{mach['cpu']}, {mach['cores']} cores, DPDK {mach['dpdk']}, commit {mach['commit']}"

    dp = report.get("dataplane") or {}
    if dp:
        w = min(dp, key=int)
        by_size = dp[w]
        sizes = list(by_size)
        fig, ax = plt.subplots(figsize=(10, 5.5))
        ax.plot(sizes, [by_size[s]["baseline"]["median_mpps"] for s in sizes], "k--o", label="l2fwd.spec (baseline)")
        if all("p4_l2fwd" in by_size[s] for s in sizes):
            ax.plot(sizes, [by_size[s]["p4_l2fwd"]["median_mpps"] for s in sizes], "k:s", label="p4_l2fwd (baseline)")
        for role in ROLES:
            ys = [by_size[s][role]["median_mpps"] if role in by_size[s] else None for s in sizes]
            if any(y is not None for y in ys):
                ax.plot(sizes, ys, "-o", label=role)
        ax.set_yscale("log")
        ax.set_xlabel("frame size, bytes (FCS included; IMIX 7:4:1 of 64/594/1518)")
        ax.set_ylabel(f"Mpps per core ({w} worker)")
        ax.set_title(f"BNG data plane by role and frame size, 40k sessions\n{sub}", fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        made.append(_save(fig, out / "dataplane_by_frame_size.png"))
        if len(dp) > 1:
            fig, ax = plt.subplots(figsize=(8, 5))
            ws = sorted(dp, key=int)
            s0 = "64" if "64" in by_size else sizes[0]
            ax.plot([int(x) for x in ws], [dp[x][s0]["baseline"]["median_mpps"] * int(x) for x in ws], "k--o",
                    label="l2fwd.spec")
            for role in ROLES:
                if role in dp[ws[0]][s0]:
                    ax.plot([int(x) for x in ws], [dp[x][s0][role]["median_mpps"] * int(x) for x in ws], "-o",
                            label=role)
            ax.set_xlabel("worker cores")
            ax.set_ylabel(f"Mpps, all workers ({s0} B)")
            ax.set_title(f"Scaling with worker cores\n{sub}", fontsize=9)
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=8)
            made.append(_save(fig, out / "dataplane_scaling.png"))

    for key, name in (("setup_pppoe", "PPPoE"), ("setup_l2tp", "LAC -> LNS")):
        st = report.get(key)
        if not st or not st.get("timeline"):
            continue
        t = [0.0] + [p[0] for p in st["timeline"]]
        n = [0] + [p[1] for p in st["timeline"]]
        rate = [(n[i] - n[i - 1]) / max(1e-9, t[i] - t[i - 1]) for i in range(1, len(t))]
        fig, ax = plt.subplots(figsize=(9, 5))
        ax.plot(t, n, "b-", label="sessions established")
        ax.set_xlabel("seconds since the first PADI")
        ax.set_ylabel("sessions established", color="b")
        ax2 = ax.twinx()
        ax2.step(t[1:], rate, "r-", where="pre", alpha=0.6, label="setups/s")
        ax2.set_ylabel("setups per second (per status interval)", color="r")
        ax.set_title(f"{name} session setup (PAP+IPCP): {st['established']}/{st['sessions']} at "
                     f"{st['setup_rate_cps']}/s\n{sub}", fontsize=9)
        ax.grid(True, alpha=0.3)
        made.append(_save(fig, out / f"setup_rate_{key.split('_')[1]}.png"))

    tb = report.get("tables")
    if tb:
        fig, ax = plt.subplots(figsize=(8, 5))
        for name, style in (("p4runtime", "-o"), ("direct", "-s"), ("stock", "--^")):
            if name in tb:
                per = {int(k): v for k, v in tb[name]["us_per_entry_at"].items()}
                xs = sorted(per)
                label = {"p4runtime": "ours, through P4Runtime", "direct": "ours, in-process",
                         "stock": "stock rte_swx_ctl, in-process"}[name]
                ax.plot(xs, [per[x] for x in xs], style, label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("entries in the table")
        ax.set_ylabel("µs per inserted entry")
        ax.set_title(f"Exact-match insert cost against table size\n{sub}", fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        made.append(_save(fig, out / "table_insert_cost.png"))
    return made


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    import matplotlib.pyplot as plt
    plt.close(fig)
    return path


def markdown(report: dict, plots: list[Path]) -> str:
    m = report["machine"]
    p = report["parameters"]
    lines = [f"# Performance report {report['started']}", "",
             f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB, {m['os']}, kernel {m['kernel']}, "
             f"DPDK {m['dpdk']}; commit {m['commit']}; load average at start {m['load_avg_at_start'][0]:.2f}.",
             f"Reproduce: `make bench BENCH_ARGS=\"{_args_line(p)}\"`", ""]
    if report["failed"]:
        lines += [f"**Failed parts:** {', '.join(report['failed'])} (see the run's output)", ""]
    dp = report.get("dataplane") or {}
    for w in sorted(dp, key=int):
        lines += [f"## Data plane, {w} worker(s): Mpps per core, median of {p['runs']} x {p['seconds']} s, "
                  f"{p['sessions']} sessions installed per role", "",
                  "Each role: Mpps (ratio to l2fwd.spec / ratio to p4_l2fwd). l2fwd.spec is DPDK's hand-written "
                  "example (no parser, no lookup); p4_l2fwd is `p4src/l2fwd`, a P4 program that parses Ethernet "
                  "and forwards on an exact dst-MAC table with as many entries as sessions, the kind of L2 "
                  "baseline the public P4-DPDK BNG's 0.18x is quoted against.", "",
                  "| frame | l2fwd.spec | p4_l2fwd | " + " | ".join(ROLES) + " |",
                  "|---|---|---|" + "---|" * len(ROLES)]
        for size, res in dp[w].items():
            b = res["baseline"]["median_mpps"]
            l2 = res.get("p4_l2fwd", {}).get("median_mpps")

            def cell(r: dict) -> str:
                mpps = r["median_mpps"]
                l2_beside = r.get("p4_l2fwd_median_mpps", l2)     # the p4_l2fwd runs beside the role's own
                return (f"{mpps:.2f} ({mpps / b:.2f}x / {mpps / l2_beside:.2f}x)" if l2_beside
                        else f"{mpps:.2f} ({mpps / b:.2f}x)")
            cells = [cell(res[r]) if r in res else "-" for r in ROLES]
            lines.append(f"| {size} | {b:.2f} | {f'{l2:.2f}' if l2 else '-'} | " + " | ".join(cells) + " |")
        lines.append("")
    plain = report.get("dataplane_plain")
    if plain:
        lines += ["## Plain pipeline (switch_test, 40k l2_fwd entries) against l2fwd.spec, 64 B", "",
                  "| mode | l2fwd Mpps/core | switch_test Mpps/core | ratio |", "|---|---|---|---|"]
        for mode, r in plain.items():
            b, q = r["baseline"]["median_mpps"], r["program"]["median_mpps"]
            lines.append(f"| {mode} | {b:.2f} | {q:.2f} | {q / b:.2f} |")
        lines.append("")
    tb = report.get("tables")
    if tb:
        cps = sorted(int(k) for k in tb["p4runtime"]["us_per_entry_at"])
        lines += [f"## Table writes: {p['table_entries']} exact entries, batches of 1000", "",
                  "| path | entries/s | " + " | ".join(f"µs/entry at {c // 1000}k" for c in cps) + " | growth |",
                  "|---|---|" + "---|" * len(cps) + "---|"]
        for name in ("p4runtime", "direct", "stock"):
            if name in tb:
                per = {int(k): v for k, v in tb[name]["us_per_entry_at"].items()}
                lines.append(f"| {name} | {tb[name]['entries_per_s']:,.0f} | "
                             + " | ".join(f"{per[c]:.2f}" for c in cps) + f" | {per[cps[-1]] / per[cps[0]]:.2f}x |")
        lines.append("")
    for key, name in (("setup_pppoe", "PPPoE"), ("setup_l2tp", "LAC -> LNS over one tunnel")):
        st = report.get(key)
        if not st:
            continue
        runs = st.get("all_runs_setup_rate_cps", [st["setup_rate_cps"]])
        lines += [f"## Session setup, {name} (PAP + IPCP)", "",
                  f"- {st['established']}/{st['sessions']} established, {st['failed']} failed, {st['flaps']} flaps; "
                  f"setup rate {st['setup_rate_cps']}/s (runs: {runs}); setup time p50 "
                  f"{st['setup_time_ms']['p50']:.0f} ms, p95 {st['setup_time_ms']['p95']:.0f} ms",
                  f"- CPUs: {st.get('cpus', 'not recorded')}",
                  f"- CPU ms per session: {st['cpu_ms_per_session']}; packet-in/out messages per session "
                  f"{st['stream_messages_per_session']}; table writes in flight "
                  f"{st['table_writes']['in_flight_share']:.0%} of the time",
                  f"- baseline in the same run: the switch's P4Runtime stream PacketOut ceiling "
                  f"{st['packet_out_ceiling_per_s']}/s", ""]
    if plots:
        lines += ["## Plots", ""] + [f"![{q.stem}]({q.name})" for q in plots] + [""]
    return "\n".join(lines)


def _args_line(p: dict) -> str:
    if p.get("quick"):
        return "--quick"
    return (f"--workers {p['workers']} --frame-sizes {p['frame_sizes']} --runs {p['runs']} --seconds {p['seconds']} "
            f"--sessions {p['sessions']} --table-entries {p['table_entries']} --setup-sessions {p['setup_sessions']} "
            f"--setup-runs {p['setup_runs']} --l2tp-sessions {p['l2tp_sessions']}")


if __name__ == "__main__":
    sys.exit(main())

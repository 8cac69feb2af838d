#!/usr/bin/env python3
"""make bench-bng: the BNG program's forwarding rate per core, by role.

For each role it builds the bng pipeline with a pcap source of that role's
traffic, installs --sessions sessions of that role (40k by default, as in the
reference labs) through the same table store the P4Runtime server uses, and
measures packets per second per worker. Two baselines are measured in the
same process and at the same frame size:
  l2fwd.spec   DPDK's hand-written example: rx, a keyless table, tx; no parser,
               no lookup. The floor of any SWX pipeline.
  p4_l2fwd     p4src/l2fwd: a P4 program compiled by p4c-dpdk that parses
               Ethernet and forwards on an exact dst-MAC table holding as many
               entries as the roles have sessions. This is the kind of L2
               baseline the public P4-DPDK BNG figure (0.18x) is quoted
               against, so bng/p4_l2fwd is the ratio to compare with it.
l2fwd.spec is measured first. p4_l2fwd stays built beside the roles and is
measured in turn with each of them, run for run (each role's /p4_l2fwd is its
median over the median of the p4_l2fwd runs beside its own): measured once
up front, as before, p4_l2fwd's figure moved between 21.3 and 24.9 Mpps from
one run of the same build to the next on the development VM, and every ratio
with it.
Traffic cycles over --flows sessions spread across the installed ones.
Sessions have no rate limit unless --policed gives each one a policer (a
trTCM far above the traffic, so it never drops): the cost of a session's
meter then counts too.

A figure only counts if the packets were forwarded: after each role the
bench checks that the sessions' counters (incremented only for forwarded
packets) add up to what the port received and that no drop counter moved,
and fails otherwise (a pipeline that drops is faster than one that works).
(The counters say more than the port's tx count would: that each frame was
forwarded by its own session. p4_l2fwd has no counters; its figure is checked
against the port: a pcap sink without a file counts what it discards as tx
drops, and SWX sends what a pipeline drops to a port of its own.) Every figure
is the median of --runs runs.

Roles: pppoe_up (PPPoE session -> routed IPv4), pppoe_down, lac_up (PPPoE ->
L2TP), lac_down (L2TP -> PPPoE), lns_up (L2TP -> routed IPv4), lns_down.

--hand-written also measures pppoe_up and lns_up with the worker running the
program's work on that path as C written by hand
(targets/dpdk/src/bsw_bench_hand_path.c) over the same pipeline's ports,
tables, meters and counters, beside p4_l2fwd as the role is and checked as
the role is: what another way of running the program could reach.
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_dataplane import L2FWD_SPEC, frame_sizes, run_modes  # noqa: E402

ROLES = ("pppoe_up", "pppoe_down", "lac_up", "lac_down", "lns_up", "lns_down")
HAND_WRITTEN = ("pppoe_up", "lns_up")   # the roles bsw_bench_hand_path.c writes out
# other ways of running the same pipeline, measured beside a role's SWX runs
# when asked (--hand-written, --straight): their keys in a role's results
OTHER_EXECUTIONS = ("hand_written", "straight")

PORT = 1                       # the pcap port: source and sink
BNG_MAC = 0x02bb00000001
CORE_MAC = 0x02ee00000001
BNG_IP = 0xc0000201            # 192.0.2.1: the BNG's L2TP address
PEER_IP = 0xc0000202           # the LAC/LNS on the other end
LINE_ID = 1
NEXTHOP = 1
TUNNEL_IDX = 1
LOCAL_TUNNEL = 0x100
PEER_TUNNEL = 0x200


def client_mac(i: int) -> int:
    return 0x02cc00000000 | i


def client_ip(i: int) -> int:
    return 0x64400000 | i      # 100.64.0.0/10, one /32 per session


def frames(role: str, sessions: list[int], frame_size: int | str) -> list[bytes]:
    """One frame per session, of frame_size (or the smallest that holds the
    encapsulation); "imix" cycles through the IMIX sizes."""
    import struct

    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    from scapy.layers.ppp import PPP, PPPoE

    def mac(v: int) -> str:
        return ":".join(f"{(v >> s) & 0xff:02x}" for s in range(40, -8, -8))

    def ip(v: int) -> str:
        return ".".join(str((v >> s) & 0xff) for s in (24, 16, 8, 0))

    out = []
    for i, size in zip(sessions, frame_sizes(frame_size, len(sessions))):
        up = IP(src=ip(client_ip(i)), dst="198.51.100.7", ttl=64) / UDP(sport=1000, dport=2000)
        down = IP(src="198.51.100.7", dst=ip(client_ip(i)), ttl=64) / UDP(sport=2000, dport=1000)
        if role in ("pppoe_up", "lac_up"):
            p = Ether(src=mac(client_mac(i)), dst=mac(BNG_MAC)) / PPPoE(sessionid=i + 1) / PPP(proto=0x21) / up
        elif role in ("pppoe_down", "lns_down"):
            p = Ether(src=mac(CORE_MAC), dst=mac(BNG_MAC)) / down
        else:
            inner = down if role == "lac_down" else up
            l2tp = struct.pack("!HHH", 0x0002, LOCAL_TUNNEL, i + 1) + b"\xff\x03\x00\x21"
            p = (Ether(src=mac(CORE_MAC), dst=mac(BNG_MAC)) / IP(src=ip(PEER_IP), dst=ip(BNG_IP), ttl=64)
                 / UDP(sport=1701, dport=1701) / (l2tp + bytes(inner)))
        raw = bytes(p)
        if role in ("pppoe_up", "lac_up"):
            raw = bytes(Ether(raw))    # PPPoE length computed by scapy
        pad = size - 4 - len(raw)     # frame sizes count the FCS
        out.append(raw + b"\0" * max(0, pad))
    return out


def entries(role: str, n: int, entry) -> list:
    """The table entries of n sessions of one role, plus what they need."""
    ups = [entry("nexthop", {"nexthop_id": NEXTHOP}, "set_l2",
                 {"port": PORT, "smac": BNG_MAC, "dmac": CORE_MAC, "vid": 0}),
           entry("my_station", {"port": PORT, "dst_mac": BNG_MAC}, "set_my_station", {})]
    if role in ("pppoe_up", "lac_up"):
        ups.append(entry("line_map", {"port": PORT, "s_vid": 0, "c_vid": 0}, "set_line", {"line_id": LINE_ID}))
    if role in ("pppoe_up", "lns_up"):
        # the default route, its next hop resolved (as the controller installs it)
        ups.append(entry("fib_v4", {}, "set_nexthop_l2",
                         {"port": PORT, "smac": BNG_MAC, "dmac": CORE_MAC, "vid": 0}))
    if role in ("lac_up", "lns_down"):
        # its next hop resolved, as the controller installs it
        ups.append(entry("l2tp_tunnel", {"tunnel_idx": TUNNEL_IDX}, "set_tunnel_l2",
                         {"local_ip": BNG_IP, "peer_ip": PEER_IP, "peer_tunnel_id": PEER_TUNNEL,
                          "peer_port": 1701, "port": PORT, "smac": BNG_MAC, "dmac": CORE_MAC, "vid": 0}))
    if role == "lac_down":
        ups.append(entry("local_ipv4", {"addr": BNG_IP}, "set_local_no_lns", {}))
    if role == "lns_up":
        ups.append(entry("local_ipv4", {"addr": BNG_IP}, "set_local", {}))
    for i in range(n):
        sess = {"port": PORT, "s_vid": 0, "c_vid": 0, "session_id": i + 1, "src_mac": client_mac(i)}
        down_pppoe = {"sess_idx": i + 1, "port": PORT, "client_mac": client_mac(i), "bng_mac": BNG_MAC,
                      "s_tpid": 0x8100, "s_vid": 0, "c_vid": 0, "pppoe_session_id": i + 1}
        l2tp = {"local_ip": BNG_IP, "peer_ip": PEER_IP, "tunnel_id": LOCAL_TUNNEL, "session_id": i + 1}
        if role == "pppoe_up":
            ups.append(entry("pppoe_up_v4", {**sess, "src_ipv4": client_ip(i)}, "pppoe_term",
                             {"sess_idx": i + 1, "mss_clamp": 0, "line_id": LINE_ID}))
            ups.append(entry("pppoe_session", sess, "pppoe_term",
                             {"sess_idx": i + 1, "mss_clamp": 0, "line_id": LINE_ID}))
        elif role == "pppoe_down":
            ups.append(entry("ipv4_session", {"dst_ipv4": client_ip(i)}, "to_pppoe",
                             {**down_pppoe, "mss_clamp": 0, "max_len": 1492}))
        elif role == "lac_up":
            ups.append(entry("pppoe_session", sess, "pppoe_lac",
                             {"sess_idx": i + 1, "tunnel_idx": TUNNEL_IDX, "peer_session_id": i + 1,
                              "line_id": LINE_ID}))
        elif role == "lac_down":
            ups.append(entry("l2tp_session", l2tp, "lac_to_pppoe", down_pppoe))
        elif role == "lns_up":
            ups.append(entry("l2tp_session", l2tp, "lns_term", {"sess_idx": i + 1, "mss_clamp": 0}))
            ups.append(entry("l2tp_up_v4", {**l2tp, "src_ipv4": client_ip(i)}, "lns_term",
                             {"sess_idx": i + 1, "mss_clamp": 0}))
        elif role == "lns_down":
            ups.append(entry("ipv4_session", {"dst_ipv4": client_ip(i)}, "to_l2tp",
                             {"sess_idx": i + 1, "tunnel_idx": TUNNEL_IDX, "peer_session_id": i + 1,
                              "mss_clamp": 0, "max_len": 1492}))
    return ups


# --policed: 10 Gbit/s committed and peak, 1 MB bursts (bytes/s and bytes)
POLICER_RATE = 1_250_000_000
POLICER_BURST = 1_000_000


@dataclass
class Readouts:
    """What the bench reads back from the bng program: its enums (drop and
    punt reasons) and the SWX arrays behind its counters (packet counts)
    and meters by P4 name, as the switch's PipelineMap resolves them."""
    enums: dict
    arrays: dict[str, str]

    @classmethod
    def of(cls, prog) -> "Readouts":
        pmap = prog.pipeline_map()
        arrays = {c.name.split(".")[-1]: c.packets_array for c in pmap.counters.values()}
        arrays.update({m.name.split(".")[-1]: m.swx_name for m in pmap.meters.values()})
        return cls(json.loads((prog.build_dir / "bng.enums.json").read_text()), arrays)

    def total(self, p, counter: str, enum: str) -> dict[str, int]:
        """A counter indexed by an enum, by member (0, none, left out)."""
        return {n: p.regarray_read(self.arrays[counter], i)
                for n, i in self.enums[enum]["members"].items() if i}


def police_sessions(p, ro: Readouts, role: str, sessions: int) -> None:
    """Gives each of the role's sessions a rate limit on its meter of the
    role's direction, as a RADIUS rate limit would; the rates are far above
    what the bench sends, so the check of forwarding still holds."""
    meter = ro.arrays["session_meter_up" if role.endswith("_up") else "session_meter_down"]
    for i in range(sessions):
        p.meter_set(meter, i + 1, POLICER_RATE, POLICER_RATE, POLICER_BURST, POLICER_BURST)


def _avg(sizes: list[int]) -> float:
    return round(sum(sizes) / len(sizes), 1)


def build_p4_l2fwd(lib, args, work: Path, iospecs: list[str], dpdk_include: str, mode: str, one_step: bool):
    """The p4_l2fwd baseline pipeline over the frames the pcap port holds at
    its build (dst MACs 02:00:00:x:y:z, as bench_dataplane.make_pcap writes
    them, one per flow: at most args.sessions), with args.sessions entries.
    The pcap source reads its file when built, so it keeps these frames while
    the roles' pipelines are built over other ones beside it."""
    from bench.bench_dataplane import insert_update, pipeline_with_entries
    from bng_lab.in_process import load_program

    def updates(pmap):
        for i in range(args.sessions):
            yield insert_update(pmap, "l2_fwd", {"dst_addr": 0x020000000000 | i}, "forward", {"port": PORT})

    p, _, _ = pipeline_with_entries(lib, load_program("l2fwd", work, "l2fwd.spec"), work, iospecs, dpdk_include,
                                    mode, one_step, updates)
    return p


def check_p4_l2fwd(p) -> None:
    """Refused unless every frame p4_l2fwd received was sent out of the port:
    SWX sends what the pipeline drops to a port of its own."""
    st = p.port_stats(PORT)
    sent = st["tx_pkts"] + st["tx_drops"]     # a pcap sink without a file counts what it discards as drops
    if sent < st["rx_pkts"] * 0.99:
        raise SystemExit(f"p4_l2fwd: received {st['rx_pkts']}, sent {sent}: lookups missed")


def paired_runs(base, p, args) -> tuple[list[float], list[float]]:
    """args.runs measurements of pipeline p, each beside one of the baseline
    pipeline `base` taken just before or after it (the order alternates):
    (p's runs, base's runs). A ratio of the two then compares figures taken
    seconds apart, not minutes, on a VM whose speed drifts by more than the
    changes measured."""
    from bench.bench_dataplane import measure_mpps
    mine, theirs = [], []
    for i in range(args.runs):
        for q, runs in ((base, theirs), (p, mine)) if i % 2 == 0 else ((p, mine), (base, theirs)):
            runs.append(measure_mpps(q, PORT, args.seconds, args.workers))
    return mine, theirs


def spread_flows(sessions: int, n_flows: int) -> list[int]:
    """The session indices the traffic cycles over: n_flows of them, spread
    evenly across the installed sessions."""
    step = max(1, sessions // n_flows)
    return list(range(0, sessions, step))[:n_flows]


def flow_order(n_flows: int, shuffle: bool) -> list[int]:
    """The order the flows' frames are sent in, as positions in the flow
    list: as listed (by session index), or shuffled with a fixed seed. In
    session order the per-session entries (table keys and data, counters)
    are read at a fixed stride, which the CPU's prefetchers follow once the
    traffic covers every session (--flows as --sessions); no subscriber
    traffic comes in that order."""
    order = list(range(n_flows))
    if shuffle:
        random.Random(1).shuffle(order)
    return order


def role_pipeline(lib, prog, work: Path, iospecs: list[str], dpdk_include: str, mode: str, one_step: bool,
                  role: str, sessions: int):
    """The bng pipeline built in `work` with the entries of `sessions`
    sessions of one role: pipeline_with_entries's (pipeline, entries
    written, install seconds)."""
    from bench.bench_dataplane import insert_update, pipeline_with_entries
    return pipeline_with_entries(lib, prog, work, iospecs, dpdk_include, mode, one_step,
                                 lambda pmap: entries(role, sessions, lambda *e: insert_update(pmap, *e)))


def drop_total(p, ro: Readouts) -> int:
    """Packets the pipeline has counted as dropped, over every reason."""
    return sum(ro.total(p, "drops", "DropReason_t").values())


def check_forwarding(p, ro: Readouts, role: str, flows: list[int], drops_before: int, label: str) -> None:
    """Refuses (SystemExit) a measurement of a pipeline that did not forward:
    the sessions' counters must account for what the port received and no
    drop counter may have moved since drops_before (see the module's
    docstring)."""
    stats = p.port_stats(PORT)
    drops = drop_total(p, ro) - drops_before
    counter = ro.arrays["session_up" if role.endswith("_up") else "session_down"]
    forwarded = sum(p.regarray_read(counter, i + 1) for i in flows)
    if drops or forwarded < stats["rx_pkts"] * 0.99:
        reasons = ro.total(p, "drops", "DropReason_t")
        punts = ro.total(p, "punts", "PuntReason_t")
        raise SystemExit(f"{label}: not forwarding (rx {stats['rx_pkts']}, counted by sessions "
                         f"{forwarded}, drops {reasons}, punts {punts})")


def run_child(args) -> dict:
    """In a child process (it owns the EAL): the baseline and every role."""
    from scapy.layers.l2 import Ether
    from scapy.utils import wrpcap

    from bench.bench_dataplane import make_pcap, measure_mpps, start_pcap_bench
    from bng_lab.in_process import load_program

    work, pcap, cfg, lib, iospecs = start_pcap_bench("bench-bng-", "bb", args.workers, PORT)
    mode = "compiled-only" if args.mode == "compiled" else "interpreted"
    one_step = (args.lookup or cfg.table_lookup) == "one-step"

    prog = load_program("bng", work, "bng.spec")
    ro = Readouts.of(prog)
    flows = spread_flows(args.sessions, args.flows)
    order = flow_order(len(flows), args.shuffle)
    flows = [flows[k] for k in order]

    out: dict = {}
    for size in args.frame_sizes.split(","):
        res = out[size] = {}
        make_pcap(pcap, size, len(flows), order)   # as many flows as the roles, each with its entry, in their order
        base = lib.pipeline_build(L2FWD_SPEC, str(work), cfg.dpdk_include, iospecs, mode)
        res["baseline"] = {"frame_size": size, "avg_frame_b": _avg(frame_sizes(size, len(flows))),
                           "runs": [measure_mpps(base, PORT, args.seconds, args.workers) for _ in range(args.runs)]}
        base.free()
        l2 = build_p4_l2fwd(lib, args, work, iospecs, cfg.dpdk_include, mode, one_step)    # the same frames
        res["p4_l2fwd"] = {**res["baseline"], "runs": []}
        for role in args.roles.split(","):
            pkts = frames(role, flows, size)
            wrpcap(str(pcap), [Ether(b) for b in pkts])
            p, n_ops, install_s = role_pipeline(lib, prog, work, iospecs, cfg.dpdk_include, mode, one_step, role,
                                                args.sessions)
            if args.policed:
                police_sessions(p, ro, role, args.sessions)

            def checked_runs(label: str) -> dict:
                """args.runs of p beside l2 (paired_runs), refused unless p
                forwarded every packet by its session (check_forwarding)."""
                drops_before = drop_total(p, ro)
                runs, l2_runs = paired_runs(l2, p, args)
                check_forwarding(p, ro, role, flows, drops_before, label)
                res["p4_l2fwd"]["runs"] += l2_runs
                return {"runs": runs, "p4_l2fwd_runs": l2_runs}

            res[role] = {"frame_size": size, "avg_frame_b": _avg([len(b) + 4 for b in pkts]),
                         **checked_runs(f"{role} {size}"), "entries": n_ops, "install_s": round(install_s, 1)}
            if args.hand_written and role in HAND_WRITTEN:
                # the same pipeline's ports, tables and counters, run by the
                # hand-written path instead (bsw_bench_hand_path.c)
                p.bench_hand_path(role, PORT)
                res[role]["hand_written"] = checked_runs(f"{role} {size} hand-written")
                p.bench_hand_path("", PORT)
            if args.straight:
                # the same pipeline run by straight-line code generated from
                # its spec (bng_switch/straight_codegen.py); last, as it
                # cannot be unloaded
                from bng_switch.straight_codegen import build as build_straight
                p.straight_load(build_straight(str(prog.spec_path), str(work), cfg.dpdk_include))
                res[role]["straight"] = checked_runs(f"{role} {size} straight")
            p.free()
        check_p4_l2fwd(l2)
        l2.free()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=40_000)
    ap.add_argument("--flows", type=int, default=1024, help="sessions the traffic cycles over")
    ap.add_argument("--shuffle", action="store_true",
                    help="send the flows in a random order (fixed seed), the baseline's too, rather than by "
                         "session index")
    ap.add_argument("--frame-sizes", default="64",
                    help="comma-separated frame sizes in bytes (FCS included) and/or imix")
    ap.add_argument("--workers", type=int, default=1, help="worker lcores (the machine needs workers+1 cores)")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--roles", default=",".join(ROLES))
    ap.add_argument("--modes", default="compiled")
    ap.add_argument("--lookup", choices=("one-step", "staged"),
                    help="exact-match lookups: one step or SWX's prefetching stages "
                         "(default: the switch's, config key table_lookup)")
    ap.add_argument("--policed", action="store_true",
                    help="give every session a policer (meters set, never dropping) instead of no rate limit")
    ap.add_argument("--hand-written", action="store_true",
                    help="also measure pppoe_up and lns_up as hand-written C over the same pipeline's ports, "
                         "tables, meters and counters (bsw_bench_hand_path.c): what the program's work on "
                         "those paths costs as straight-line code, a bound for another execution model")
    ap.add_argument("--straight", action="store_true",
                    help="also measure each role run by straight-line C generated from the spec "
                         "(bng_switch/straight_codegen.py) instead of SWX")
    ap.add_argument("--mode", help=argparse.SUPPRESS)
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args()
    if args.mode:
        print(json.dumps(run_child(args)))
        return 0

    print(f"bench-bng: {args.sessions} sessions per role{' (policed)' if args.policed else ''}, "
          f"traffic over {args.flows}{' (shuffled)' if args.shuffle else ''}, frames {args.frame_sizes}, "
          f"{args.workers} worker(s), {args.runs} x {args.seconds}s runs; baselines l2fwd.spec and p4_l2fwd "
          f"({args.sessions} entries) at each size",
          flush=True)
    results = run_modes(__file__, args, ("sessions", "flows", "shuffle", "frame_sizes", "workers", "seconds", "runs",
                                         "roles", "lookup", "policed", "hand_written", "straight"))
    if results is None:
        return 1
    for by_size in results.values():
        for res in by_size.values():
            for v in res.values():
                v["median_mpps"] = statistics.median(v["runs"])
                if "p4_l2fwd_runs" in v:
                    v["p4_l2fwd_median_mpps"] = statistics.median(v["p4_l2fwd_runs"])
                for other in OTHER_EXECUTIONS:
                    if other not in v:
                        continue
                    o = v[other]
                    o["median_mpps"] = statistics.median(o["runs"])
                    o["p4_l2fwd_median_mpps"] = statistics.median(o["p4_l2fwd_runs"])
    for mode, by_size in results.items():
        for size, res in by_size.items():
            b, l2 = res["baseline"]["median_mpps"], res["p4_l2fwd"]["median_mpps"]
            print(f"\n[{mode}, {size} B] baselines: l2fwd.spec {b:.2f}, p4_l2fwd {l2:.2f} Mpps/core "
                  f"(p4_l2fwd: all its runs; each role's ratio is to the runs beside its own)")
            print(f"{'role':<12}{'avg B':>8}{'entries':>9}{'Mpps/core':>11}{'/l2fwd.spec':>13}"
                  f"{'p4_l2fwd':>10}{'/p4_l2fwd':>11}")
            for role in ROLES:
                if role in res:
                    r = res[role]
                    print(f"{role:<12}{r['avg_frame_b']:>8}{r['entries']:>9}{r['median_mpps']:>11.2f}"
                          f"{r['median_mpps'] / b:>13.2f}{r['p4_l2fwd_median_mpps']:>10.2f}"
                          f"{r['median_mpps'] / r['p4_l2fwd_median_mpps']:>11.2f}")
                    for other in OTHER_EXECUTIONS:
                        if other not in r:
                            continue
                        o = r[other]
                        print(f"{' ' + other.replace('_', '-'):<29}{o['median_mpps']:>11.2f}{o['median_mpps'] / b:>13.2f}"
                              f"{o['p4_l2fwd_median_mpps']:>10.2f}"
                              f"{o['median_mpps'] / o['p4_l2fwd_median_mpps']:>11.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""make bench-setup: how fast the BNG sets up PPPoE sessions (PAP + IPCP);
with --topology lac-lns (make bench-l2tp), how fast subscribers are set up
through our LAC and, over one L2TP tunnel, our LNS.

The PPPoE lab (bng_lab.topology: switch with bng.p4, controller, subemu in
the access namespace) brings up --sessions subscribers (40k by default, one
QinQ line each, as a BNG with per-subscriber VLANs sees them), with at most
--outstanding in setup at once, and reports:
  - sessions/s over the whole run and per interval (the emulator's
    timeline), setup time percentiles, failures and flaps ("no session
    lost" means established == requested and no flap);
  - where the time went: CPU seconds of the controller, the switch and the
    emulator; packet-in/out messages per session; the table-write share
    (the fraction of the run with a Write RPC in flight, and the updates
    written);
  - the baseline measured in the same run: the switch's P4Runtime
    packet-out rate (a client streaming PacketOuts as fast as it can), the
    ceiling of a control plane that punts through the P4Runtime stream. The
    lab's controller uses the switch's local packet channel instead
    (packet_socket), so the ratio printed (packet-in/out messages/s during
    setup to that ceiling) may exceed 1.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.workdir import work_dir  # noqa: E402

HZ = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int, children: bool = False) -> float:
    """User+system CPU of a process (all its threads), and its children's."""
    total = 0.0
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            f = open(f"/proc/{pid}/task/{tid}/stat").read().rsplit(")", 1)[1].split()
            total += (int(f[11]) + int(f[12])) / HZ
        if children:
            for tid in os.listdir(f"/proc/{pid}/task"):
                for c in open(f"/proc/{pid}/task/{tid}/children").read().split():
                    total += cpu_seconds(int(c), True)
    except (FileNotFoundError, ProcessLookupError):
        pass
    return total


def packet_out_ceiling(address: str, p4info_path: Path, port: int, n: int = 20000) -> float:
    """PacketOuts/s the switch takes from one P4Runtime client streaming
    64-byte frames to `port` (counted on the port's tx)."""
    from bng_controller.p4runtime_client import P4RuntimeClient
    c = P4RuntimeClient(address, election_id=(0, 5))   # below the controller: a backup
    c.connect()
    c.use_p4info(P4RuntimeClient.load_p4info(str(p4info_path)))
    # A backup's packet-outs are refused: take the primary role for the
    # measurement (the controller is idle and gets it back afterwards).
    c.send_arbitration((0, 1000))
    time.sleep(0.5)
    frame = b"\xff" * 6 + b"\x02\xbb\0\0\0\x09" + b"\x88\xb5" + b"\0" * 50
    t0 = time.perf_counter()
    for _ in range(n):
        c.packet_out(frame, egress_port=port)
    while not c._requests.empty():
        time.sleep(0.01)
    dt = time.perf_counter() - t0
    c.close()
    return n / dt


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, default=40000)
    ap.add_argument("--outstanding", type=int, default=1000, help="sessions in setup at once, at most")
    ap.add_argument("--rate", type=float, default=0, help="offered sessions/s (0: as fast as accepted)")
    ap.add_argument("--timeout", type=float, default=1800, help="give up on setup after this long")
    ap.add_argument("--topology", choices=("pppoe", "lac-lns"), default="pppoe")
    ap.add_argument("--idle-us", type=int, default=20,
                    help="the switches' worker idle back-off (switch config idle_us)")
    ap.add_argument("--no-pin", action="store_true",
                    help="leave the processes where the kernel puts them (default: the lab's CPU layout, "
                         "controllers on a CPU of their own: bng_lab.cpu_layout)")
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--echo", action="store_true", help="show the processes' output")
    args = ap.parse_args()

    from bng_lab.switch_process import program_files
    from bng_lab.topology import LacLnsLab, PppoeLab
    p4info, _ = program_files("bng")
    n = args.sessions
    svlans = (n + 3999) // 4000
    bench_cfg = {
        "ppp": {"auth": ["pap"], "ipv6": False, "echo_interval": 120},
        "ipv6": {"enabled": False},
        "pppoe": {"padi_per_line": "100/s burst 100", "padi_per_mac": "10/s burst 10"},
        "punt_policer": {"default_pps": 1000, "rates": {"PPPOE_DISCOVERY": 20000, "PPP_CONTROL": 50000,
                                                        "L2TP_CONTROL": 50000, "L2TP_PPP_CONTROL": 50000}},
        "sessions": {"max_sessions": max(60000, n), "setup_timeout": 300},
        "accounting": {"interim_interval": 3600},
        "log_level": "warning",
    }
    tmp = work_dir("bench-setup-")
    if args.topology == "pppoe":
        lab = PppoeLab(tmp, echo=args.echo, idle_us=args.idle_us, controller=bench_cfg,
                       pin_cpus=not args.no_pin).start()
        controllers = {"controller": lab.controller}
        switches = {"switch": lab.switch}
    else:
        lab = LacLnsLab(tmp, echo=args.echo, idle_us=args.idle_us, lac=bench_cfg, pin_cpus=not args.no_pin,
                        lns={**bench_cfg, "l2tp": {"tunnel": {"host_name": "lns1", "receive_window": 64}}}).start()
        controllers = {"lac": lab.lac, "lns": lab.controller}
        switches = {"lac_switch": lab.lac_switch, "lns_switch": lab.switch}
    out: dict = {"topology": args.topology, "sessions": n, "outstanding": args.outstanding,
                 "cpus": ({"controllers": [list(c) for c in lab.cpus.controllers], "switches": list(lab.cpus.switch),
                           "emulator": list(lab.cpus.emulator)} if lab.cpus else "not pinned")}
    try:
        print("baseline: P4Runtime packet-out ceiling of this switch ...", flush=True)
        first_sw = next(iter(switches.values()))
        first_ctl = next(iter(controllers.values()))
        out["packet_out_ceiling_per_s"] = round(packet_out_ceiling(first_sw.address, p4info, 1))
        print(f"  {out['packet_out_ceiling_per_s']} PacketOuts/s", flush=True)
        deadline = time.time() + 30          # the controller takes the primary role back
        while not first_ctl.api("status")["switch_connected"] and time.time() < deadline:
            time.sleep(0.2)
        time.sleep(1.0)
        procs = {**{k: c.proc.pid for k, c in controllers.items()}, **{k: s.proc.pid for k, s in switches.items()}}
        cpu0 = {k: cpu_seconds(pid) for k, pid in procs.items()}
        st0 = {k: c.api("counters") for k, c in controllers.items()}
        t0 = time.time()
        e = lab.emulator("setup", "--sessions", str(n), "--auth", "pap", "--rate", str(args.rate),
                         "--max-outstanding", str(args.outstanding), "--svlan", f"100-{99 + svlans}",
                         "--cvlan", "1-4000", "--setup-timeout", str(args.timeout), "--duration", "0",
                         "--no-teardown", "--quiet", "--status-interval", "1", "--rcvbuf", str(64 << 20))
        emu_cpu = 0.0
        last = -1
        while e.proc.poll() is None:
            emu_cpu = max(emu_cpu, cpu_seconds(e.proc.pid, True))
            st = e.status()
            if st and st.get("established", 0) != last and int(time.time() - t0) % 10 == 0:
                last = st["established"]
                print(f"  {time.time() - t0:6.0f} s: {last}/{n} up, {st.get('failed', 0)} failed", flush=True)
            time.sleep(1)
        wall = time.time() - t0
        r = e.report()
        st1 = {k: c.api("counters") for k, c in controllers.items()}
        cpu = {k: cpu_seconds(pid) - cpu0[k] for k, pid in procs.items()}
        setup_wall = max(1e-9, r["established_timeline"][-1][0]) if r["established_timeline"] else wall
        msgs = sum((st1[k]["p4runtime"]["packet_in"] - st0[k]["p4runtime"]["packet_in"])
                   + (st1[k]["p4runtime"]["packet_out"] - st0[k]["p4runtime"]["packet_out"]) for k in controllers)
        writes = {f: sum(st1[k]["writer"][f] - st0[k]["writer"][f] for k in controllers)
                  for f in ("rpcs", "updates", "errors", "rpc_time")}
        up = max(1, r["established"])
        out.update({
            "established": r["established"], "failed": r["failed"], "flaps": r["flaps"],
            "failed_reasons": {k: v for k, v in r["failed_reasons"].items() if v},
            "setup_rate_cps": round(r["setup_rate_cps"], 1), "setup_time_ms": r["setup_time_ms"],
            "timeline": r["established_timeline"],
            "cpu_s": {**{k: round(v, 1) for k, v in cpu.items()}, "emulator": round(emu_cpu, 1)},
            "cpu_ms_per_session": {k: round(v / up * 1000, 2) for k, v in cpu.items()},
            "stream_messages_per_session": round(msgs / up, 1),
            "stream_messages_per_s": round(msgs / setup_wall),
            "table_writes": {"rpcs": writes["rpcs"], "updates": writes["updates"], "errors": writes["errors"],
                             "in_flight_share": round(writes["rpc_time"] / setup_wall / len(controllers), 3)},
            "wall_s": round(wall, 1),
        })
        out["ratio_to_packet_out_ceiling"] = round(out["stream_messages_per_s"] / out["packet_out_ceiling_per_s"], 3)
        out["no_session_lost"] = r["established"] == n and r["flaps"] == 0
        if args.topology == "lac-lns":
            out["l2tp"] = {"lac": st1["lac"].get("l2tp", {}), "lns": st1["lns"].get("l2tp", {})}
            out["tunnels"] = len(lab.controller.api("l2tp_tunnels")["tunnels"])
    finally:
        lab.stop()
    print(json.dumps({k: v for k, v in out.items() if k != "timeline"}, indent=2))
    print(f"\n{out['established']}/{n} sessions up at {out['setup_rate_cps']} sessions/s "
          f"(p50 setup {out['setup_time_ms']['p50']:.0f} ms), {out['stream_messages_per_session']} "
          f"packet-in/out messages (packet channel or stream) per session = {out['stream_messages_per_s']}/s, "
          f"{out['ratio_to_packet_out_ceiling']:.2f} x the packet-out ceiling measured in this run "
          f"({out['packet_out_ceiling_per_s']}/s); table writes in flight {out['table_writes']['in_flight_share']:.0%} "
          f"of the time ({out['table_writes']['updates']} updates in {out['table_writes']['rpcs']} RPCs)")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    return 0 if out["no_session_lost"] else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The BNG lab: the product on its embedded default, in network namespaces.

    make lab                                   # PPPoE BNG, 200 subscribers
    make lab LAB_ARGS="--l2tp"                 # LAC -> L2TP -> LNS, as the reference lab
    make lab LAB_ARGS="--subscribers 1000 --rate 200 --pps 2000"

PPPoE (default): an access namespace with N emulated subscribers (subemu:
PPPoE discovery, LCP, CHAP/PAP, IPCP, IPv6CP+DHCPv6-PD, keepalives), the
DPDK SWX switch running bng.p4, the controller, and a core host that
reflects the subscribers' UDP stream back to them, so traffic flows both
ways and the emulator counts what comes back.

--l2tp: two switches and two controllers. The LAC terminates PPPoE and
switches the subscribers (realm lab.test) into an L2TP tunnel to the LNS,
which authenticates them, gives them addresses and routes them to the core.

A status line every few seconds shows sessions, setup rate, traffic each
way and the data plane's drops by reason; the lines before it say how to
look inside (bngctl, p4runtime-shell, Prometheus). Ctrl-C (or --duration)
tears the subscribers down (PADT), stops every process and removes every
namespace and link; the switches run without hugepages. The exit status is
0 only if every subscriber came up and traffic passed both ways.
"""
from __future__ import annotations

import argparse
import json
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bng_lab.processes import ControllerProcess, EmulatorProcess, ProcessError  # noqa: E402
from bng_lab.switch_process import SwitchProcess, free_tcp_port, program_files  # noqa: E402
from bng_lab.topology import LacLnsLab, PppoeLab  # noqa: E402

STREAM_PORT = 9


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--l2tp", action="store_true", help="the LAC -> LNS topology (two switches, two controllers)")
    ap.add_argument("--subscribers", type=int, default=200, help="emulated PPPoE subscribers (default 200)")
    ap.add_argument("--rate", type=float, default=100, help="session starts per second (default 100)")
    ap.add_argument("--pps", type=int, default=400,
                    help="upstream UDP packets/s over all subscribers, reflected back by the core host "
                         "(default 400; 0 = no stream)")
    ap.add_argument("--duration", type=float, default=0,
                    help="seconds of traffic once every subscriber has an outcome, then stop (0: until Ctrl-C)")
    ap.add_argument("--no-ipv6", action="store_true", help="subscribers run IPCP only (no IPv6CP, RA, DHCPv6-PD)")
    ap.add_argument("--workers", type=int, default=1, help="worker lcores per switch")
    ap.add_argument("--status-interval", type=float, default=2.0)
    ap.add_argument("--keep-logs", action="store_true", help="keep the lab's directory (logs, configs) at exit")
    return ap.parse_args(argv)


class Status:
    """The live status line, from the emulator's status file, the controller's
    API and the switch's drop counters."""

    def __init__(self, lab: PppoeLab, emu: EmulatorProcess, l2tp: bool):
        self.lab, self.emu, self.l2tp = lab, emu, l2tp
        self.start = time.time()
        self.prev: tuple[float, int, int] | None = None

    def snapshot(self) -> dict:
        st = self.emu.status()
        ctl: ControllerProcess = self.lab.controller
        out = {"emulator": st}
        try:
            out["controller"] = ctl.api("status")
            out["dataplane"] = ctl.api("counters").get("dataplane", {})
            if self.l2tp:
                out["lac"] = self.lab.lac.api("status")
                out["tunnels"] = self.lab.lac.api("l2tp_tunnels").get("tunnels", [])
        except (OSError, ProcessError, ValueError) as e:
            out["api_error"] = str(e)
        return out

    def line(self, snap: dict) -> str:
        st = snap["emulator"]
        now = time.time()
        up_tx = st.get("stream_up", {}).get("sent", 0)
        down = st.get("stream_down", {})
        down_rx = down.get("received", 0)
        rates = ""
        if self.prev is not None:
            dt = max(now - self.prev[0], 1e-3)
            rates = f" ({(up_tx - self.prev[1]) / dt:.0f}/s up, {(down_rx - self.prev[2]) / dt:.0f}/s down)"
        self.prev = (now, up_tx, down_rx)
        sessions = snap.get("controller", {}).get("sessions", {})
        parts = [f"[{now - self.start:6.1f}s]",
                 f"subscribers {st.get('established', 0)}/{st.get('requested', '?')} up"
                 f" (failed {st.get('failed', 0)}, flaps {st.get('flaps', 0)})",
                 f"{'LNS' if self.l2tp else 'BNG'} sessions up {sessions.get('up', 0)}",
                 f"setup {st.get('setup_rate_cps', 0):.0f}/s",
                 f"traffic up {up_tx} down {down_rx} lost {down.get('lost', 0)}"
                 f" silent {down.get('sessions_silent', 0)}{rates}"]
        if self.l2tp:
            tunnels = snap.get("tunnels", [])
            parts.insert(3, f"LAC sessions up {snap.get('lac', {}).get('sessions', {}).get('up', 0)}, "
                            f"tunnels {sum(1 for t in tunnels if t.get('state') == 'established')}")
        drops = {k: v["packets"] for k, v in snap.get("dataplane", {}).get("drops", {}).items() if v["packets"]}
        parts.append("drops " + (", ".join(f"{k} {v}" for k, v in sorted(drops.items())) or "0"))
        if "api_error" in snap:
            parts.append(f"(controller API: {snap['api_error']})")
        return "  ".join(parts)


def print_howto(lab: PppoeLab, l2tp: bool, metrics: dict[str, int]) -> None:
    py = ROOT / ".venv" / "bin" / "python"
    shell = ROOT / ".venv-shell" / "bin" / "python"
    print("lab: up. Look inside while it runs (as root, from another terminal):")
    ctls = [("LNS", lab.controller, lab.switch), ("LAC", lab.lac, lab.lac_switch)] if l2tp \
        else [("BNG", lab.controller, lab.switch)]
    for role, ctl, sw in ctls:
        print(f"  {role} bngctl:          {py} -m bng_controller.bngctl --socket {ctl.api_socket} show sessions"
              f"{'  (also: show l2tp tunnels)' if l2tp else ''}")
        print(f"  {role} metrics:         curl -s http://127.0.0.1:{metrics[role]}/metrics")
        print(f"  {role} p4runtime-shell: {shell} -m p4runtime_sh --grpc-addr {sw.address} --device-id 1 "
              f"--election-id 0,1   (a backup client: reads only)")
    print(f"  subscribers:         ip netns exec {lab.access_ns} ... (subemu on {lab.access_if})")
    print(f"  core host:           ip netns exec {lab.core_ns} ping {lab.addr.gateway if not l2tp else '10.1.0.2'}")
    print(f"  logs and configs:    {lab.tmp}")
    if lab.cpus:
        c = lab.cpus
        print(f"  CPUs:                controllers {','.join(str(x[0]) for x in c.controllers)}, "
              f"switch lcores {','.join(map(str, c.switch))}, emulator {','.join(map(str, c.emulator))}")
    print("lab: Ctrl-C stops it and removes everything", flush=True)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    program_files("bng")                        # fails early, clearly, if the P4 build is missing
    # The handler only records the signal: a handler that sets a
    # threading.Event can deadlock when it runs while the main thread is
    # inside Event.wait() holding the Event's lock (seen: Ctrl-C right after
    # a status line left the lab hung).
    stop_signals: list[int] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda signum, _frame: stop_signals.append(signum))

    def stopped_within(seconds: float) -> bool:
        """Sleeps up to seconds, in short steps so a signal is seen soon."""
        end = time.monotonic() + seconds
        while not stop_signals and (left := end - time.monotonic()) > 0:
            time.sleep(min(0.1, left))
        return bool(stop_signals)

    tmp = Path(tempfile.mkdtemp(prefix="bng-lab-"))
    metrics = {"BNG": free_tcp_port()} if not args.l2tp else {"LNS": free_tcp_port(), "LAC": free_tcp_port()}
    common = dict(tmp=tmp, workers=args.workers, idle_us=200)
    if args.l2tp:
        lab: PppoeLab = LacLnsLab(**common, lns={"metrics_listen": f"127.0.0.1:{metrics['LNS']}"},
                                  lac={"metrics_listen": f"127.0.0.1:{metrics['LAC']}"})
    else:
        lab = PppoeLab(**common, controller={"metrics_listen": f"127.0.0.1:{metrics['BNG']}"})
    ok = False
    emu = None
    try:
        topo = "LAC -> L2TP -> LNS" if args.l2tp else "PPPoE BNG"
        print(f"lab: starting the {topo} topology in network namespaces ({tmp})", flush=True)
        lab.start()
        lab.udp_sink(STREAM_PORT, reflect=True)
        emu_args = ["--sessions", str(args.subscribers), "--rate", str(args.rate), "--hold",
                    "--lcp-echo-interval", "10", "--status-interval", "1", "--quiet"]
        if args.pps:
            emu_args += ["--stream-pps", str(args.pps), "--stream-target", f"{lab.core_host_ip}:{STREAM_PORT}"]
        if not args.l2tp and not args.no_ipv6:
            emu_args += ["--ipv6", "--dhcpv6-pd"]
        emu = lab.emulator("subscribers", *emu_args)
        print(f"lab: {args.subscribers} subscribers connecting at {args.rate:g}/s", flush=True)
        print_howto(lab, args.l2tp, metrics)
        status = Status(lab, emu, args.l2tp)
        all_done_at = None
        snap: dict = {}
        while not stopped_within(args.status_interval):
            snap = status.snapshot()
            print(status.line(snap), flush=True)
            st = snap["emulator"]
            if emu.proc.poll() is not None:
                print(f"lab: the emulator exited ({emu.proc.returncode}):\n" + "".join(emu.output[-20:]))
                break
            if all_done_at is None and st and st.get("established", 0) + st.get("failed", 0) >= args.subscribers:
                all_done_at = time.time()
                print(f"lab: every subscriber has an outcome: {st.get('established')} up, "
                      f"{st.get('failed')} failed, setup {st.get('setup_rate_cps', 0):.0f}/s", flush=True)
            if args.duration and all_done_at is not None and time.time() - all_done_at >= args.duration:
                break
        st = snap.get("emulator", {})
        up_ok = st.get("established") == args.subscribers and st.get("failed") == 0
        # Every subscriber that sent its stream got some of it back: the
        # reflected stream proves each session's path both ways.
        down = st.get("stream_down", {})
        traffic_ok = not args.pps or (st.get("stream_up", {}).get("sent", 0) > 0
                                      and down.get("received", 0) > 0
                                      and down.get("sessions_silent", 0) == 0)
        ok = up_ok and traffic_ok
        print(f"lab: stopping ({'subscribers up and traffic both ways' if ok else 'NOT all up or no traffic'}"
              f"{'' if not down.get('sessions_silent') else ', %d silent sessions' % down['sessions_silent']})",
              flush=True)
    except (ProcessError, RuntimeError, OSError) as e:
        print(f"lab: failed: {e}", file=sys.stderr)
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)     # a second Ctrl-C must not interrupt the cleanup
        if emu is not None:
            emu.stop(timeout=15)                         # PADTs
        lab.stop()
        if ok and not args.keep_logs:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            for p in [lab.controller, getattr(lab, "lac", None), *lab.emulators, *lab.helpers]:
                if p is not None:
                    (tmp / f"{p.name}.log").write_text(p.log())
            for sw in (lab.switch, getattr(lab, "lac_switch", None)):
                if sw is not None:
                    (tmp / f"{sw.config['name']}.log").write_text(sw.log())
            print(f"lab: logs kept in {tmp}")
        print("lab: stopped; no namespace, link or process left", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())

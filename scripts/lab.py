#!/usr/bin/env python3
"""The embedded default lab (for now: the switch alone).

Builds two hosts in network namespaces, each on a veth to the switch, starts
the DPDK SWX switch with the switch_test program, wires port 1 <-> port 2
through P4Runtime, and pings across it, printing live status until Ctrl-C
(or --duration). It leaves no namespace, link or process behind.

The BNG lab (controller, PPPoE subscribers, LAC/LNS) replaces this as the
BNG issues land.
"""
from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bng_controller.p4runtime_client import P4RuntimeClient  # noqa: E402
from bng_lab import netlab  # noqa: E402
from bng_lab.switch_process import SwitchProcess, program_files  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=0, help="stop after this many seconds (0: until Ctrl-C)")
    args = ap.parse_args()

    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())

    lab = netlab.NetLab("lab")
    sw = client = None
    tmp = Path(tempfile.mkdtemp(prefix="bng-lab-"))
    ok = True
    try:
        h1, h2 = lab.ns("h1"), lab.ns("h2")
        sw1, t1 = lab.veth("sw1", "t1", ns_b=h1)
        sw2, t2 = lab.veth("sw2", "t2", ns_b=h2)
        netlab.sh("ip", "-n", h1, "addr", "add", "10.9.0.1/24", "dev", t1)
        netlab.sh("ip", "-n", h2, "addr", "add", "10.9.0.2/24", "dev", t2)
        print(f"lab: hosts {h1} (10.9.0.1) and {h2} (10.9.0.2), switch ports 1={sw1} 2={sw2}, CPU port 0")
        sw = SwitchProcess(tmp, "lab", [{"id": 1, "type": "af_packet", "iface": sw1},
                                        {"id": 2, "type": "af_packet", "iface": sw2}], idle_us=500).start()
        client = P4RuntimeClient(sw.address, election_id=(0, 1))
        client.connect()
        p4info, device_config = program_files("switch_test")
        client.set_pipeline(P4RuntimeClient.load_p4info(str(p4info)), device_config.read_bytes())
        client.insert(*[client.table_entry("port_fwd", {"in_port": a}, "forward", {"port": b})
                        for a, b in ((1, 2), (2, 1))])
        print(f"lab: switch up, P4Runtime on {sw.address}")
        print(f"  inspect: {ROOT}/.venv-shell/bin/python -m p4runtime_sh --grpc-addr {sw.address} "
              f"--device-id 1 --election-id 0,2")
        print(f"  traffic: ip netns exec {h1} ping 10.9.0.2")
        print("lab: Ctrl-C stops it")
        start = time.time()
        while not stop.is_set():
            r = subprocess.run(["ip", "netns", "exec", h1, "ping", "-c", "5", "-i", "0.2", "-W", "1", "-q",
                                "10.9.0.2"], capture_output=True, text=True)
            loss = next((ln for ln in r.stdout.splitlines() if "packet loss" in ln), r.stderr.strip() or "no reply")
            c = client.read_counter("port_rx", 1)
            print(f"[{time.time() - start:6.1f}s] ping h1->h2: {loss.strip()} | port 1 rx: "
                  f"{c.packet_count} pkts {c.byte_count} B", flush=True)
            if args.duration and time.time() - start >= args.duration:
                ok = r.returncode == 0
                break
            stop.wait(1)
    finally:
        if client is not None:
            client.close()
        if sw is not None:
            sw.stop()
        lab.cleanup()
        print("lab: stopped, namespaces and links removed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

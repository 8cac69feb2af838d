"""A UDP sink for the core host: receives a test stream and counts it, so
the kernel sends no ICMP port-unreachable back into the BNG.

    ip netns exec NS python -m bng_lab.udp_sink --port 9 [--status FILE]
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import time


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=9)
    ap.add_argument("--status", help="JSON counters, rewritten every second")
    args = ap.parse_args()
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.bind(("0.0.0.0", args.port))
    s.settimeout(0.5)
    packets = octets = 0
    stop = False

    def on_term(*_):
        nonlocal stop
        stop = True
    signal.signal(signal.SIGTERM, on_term)
    print(f"udp sink on port {args.port}", flush=True)
    last = 0.0
    while not stop:
        try:
            data = s.recv(65535)
            packets += 1
            octets += len(data)
        except socket.timeout:
            pass
        now = time.time()
        if args.status and now - last >= 1.0:
            last = now
            tmp = args.status + ".tmp"
            with open(tmp, "w") as f:
                json.dump({"packets": packets, "octets": octets}, f)
            os.replace(tmp, args.status)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

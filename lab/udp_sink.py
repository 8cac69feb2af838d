"""A UDP endpoint for the core host: receives the subscribers' test stream
and counts it, so the kernel sends no ICMP port-unreachable back into the
BNG; with --reflect it sends every datagram back to where it came from,
which gives the lab downstream traffic that the emulator checks for loss
(subemu's stream payload carries the session and a sequence number).

    ip netns exec NS python -m bng_lab.udp_sink --port 9 [--reflect] [--status FILE]
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
    ap.add_argument("--reflect", action="store_true", help="send each datagram back to its source")
    ap.add_argument("--status", help="JSON counters, rewritten every second")
    args = ap.parse_args()
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.bind(("0.0.0.0", args.port))
    s.settimeout(0.5)
    packets = octets = reflected = reflect_errors = 0
    stop = False

    def on_term(*_):
        nonlocal stop
        stop = True
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    print(f"udp sink on port {args.port}{' (reflecting)' if args.reflect else ''}", flush=True)
    last = 0.0
    while not stop:
        try:
            data, src = s.recvfrom(65535)
            packets += 1
            octets += len(data)
            if args.reflect:
                try:
                    s.sendto(data, src)
                    reflected += 1
                except OSError:          # no route or ARP yet: counted, never fatal
                    reflect_errors += 1
        except socket.timeout:
            pass
        now = time.time()
        if args.status and now - last >= 1.0:
            last = now
            tmp = args.status + ".tmp"
            with open(tmp, "w") as f:
                json.dump({"packets": packets, "octets": octets, "reflected": reflected,
                           "reflect_errors": reflect_errors}, f)
            os.replace(tmp, args.status)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

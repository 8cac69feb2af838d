"""A lossy wire for tests: bridges two interfaces and drops a share of the
L2TP control messages (UDP port 1701 with the T bit) crossing it, both
ways; everything else passes. The kernel here has neither netem nor tc
actions, so loss on a link is made in user space.

    python -m bng_lab.lossy_bridge IF_A IF_B --loss 10 [--seed 1] [--status FILE]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import select
import signal
import socket
import struct

ETH_P_ALL = 0x0003


def is_l2tp_control(frame: bytes) -> bool:
    off = 12
    etype = struct.unpack_from("!H", frame, off)[0] if len(frame) >= 14 else 0
    while etype in (0x8100, 0x88A8) and len(frame) >= off + 6:
        off += 4
        etype = struct.unpack_from("!H", frame, off)[0]
    ip = off + 2
    if etype != 0x0800 or len(frame) < ip + 20 or frame[ip + 9] != 17:
        return False
    udp = ip + (frame[ip] & 0x0F) * 4
    if len(frame) < udp + 9:
        return False
    sport, dport = struct.unpack_from("!HH", frame, udp)
    return 1701 in (sport, dport) and bool(frame[udp + 8] & 0x80)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--loss", type=float, default=10.0, help="percent of L2TP control messages dropped")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--status", help="JSON counters, rewritten every 100 frames and at exit")
    args = ap.parse_args()
    rnd = random.Random(args.seed)
    socks = {}
    for name in (args.a, args.b):
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        s.bind((name, 0))
        socks[name] = s
    other = {socks[args.a]: socks[args.b], socks[args.b]: socks[args.a]}
    stats = {"forwarded": 0, "control": 0, "dropped": 0}
    stop = False

    def on_term(*_):
        nonlocal stop
        stop = True
    signal.signal(signal.SIGTERM, on_term)

    def dump() -> None:
        if args.status:
            with open(args.status + ".tmp", "w") as f:
                json.dump(stats, f)
            os.replace(args.status + ".tmp", args.status)
    print(f"bridging {args.a} <-> {args.b}, dropping {args.loss}% of L2TP control", flush=True)
    n = 0
    while not stop:
        r, _, _ = select.select(list(other), [], [], 0.5)
        for s in r:
            frame, addr = s.recvfrom(65535)
            if addr[2] == socket.PACKET_OUTGOING:
                continue                       # our own transmission on this socket
            if is_l2tp_control(frame):
                stats["control"] += 1
                if rnd.random() * 100 < args.loss:
                    stats["dropped"] += 1
                    continue
            other[s].send(frame)
            stats["forwarded"] += 1
            n += 1
            if n % 100 == 0:
                dump()
    dump()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Atheris (libFuzzer) target for the L2TP code: the codec, and an LNS
endpoint with an established tunnel and sessions, fed arbitrary payloads.
Anything but a clean return is a bug (the endpoint must swallow
malformed input; the codec may only raise CodecError).

Not collected by pytest. Run, e.g.:
    .venv/bin/python tests/fuzz/fuzz_l2tp.py -atheris_runs=200000
    .venv/bin/python tests/fuzz/fuzz_l2tp.py corpus_dir/ -max_total_time=600
"""
from __future__ import annotations

import random
import sys

import atheris

with atheris.instrument_imports():
    from bng_controller.l2tp import codec as C
    from bng_controller.l2tp.endpoint import L2tpEndpoint
    from bng_controller.l2tp.tunnel import CallParams, ProxyAuth, TunnelConfig

LAC, LNS = ("192.0.2.1", 1701), ("192.0.2.2", 1701)
SECRET = b"fuzz"


class Clock:
    t = 0.0

    def __call__(self) -> float:
        return self.t


def established() -> tuple[Clock, L2tpEndpoint, L2tpEndpoint]:
    clock = Clock()
    lac = L2tpEndpoint(TunnelConfig(host_name="lac", secret=SECRET), clock, random.Random(1))
    lns = L2tpEndpoint(TunnelConfig(host_name="lns", secret=SECRET, auto_accept=True), clock,
                       random.Random(2))
    t = lac.open_tunnel(LNS)
    for i in range(3):
        lac.open_session(t, CallParams(calling_number=str(i), tx_speed=1,
                                       proxy_auth=ProxyAuth(C.PROXY_AUTH_PAP, b"u", None, 1, b"p")))
    for _ in range(50):
        moved = False
        for src, dst, addr in ((lac, lns, LAC), (lns, lac, LNS)):
            out, _ = src.drain()
            for d in out:
                dst.receive(d.payload, addr)
                moved = True
        clock.t += 0.2
        lac.on_timer()
        lns.on_timer()
        if not moved:
            break
    return clock, lac, lns


STATE = established()


def TestOneInput(data: bytes) -> None:
    global STATE
    for fn in (C.decode_header, C.decode_data, C.decode_control):
        try:
            m = fn(data)
        except C.CodecError:
            continue
        if isinstance(m, C.ControlMessage):
            m.unknown_mandatory()
            try:
                m.unhide(SECRET)
            except C.CodecError:
                pass
            for a in m.avps:
                try:
                    a.typed()
                except C.CodecError:
                    pass
    clock, lac, lns = STATE
    if not lns.tunnels or not lac.tunnels:
        STATE = clock, lac, lns = established()
    # aim some inputs at the live tunnel, in sequence, so the state machines run
    if len(data) >= 12 and data[0] & 0x80:
        t = next(iter(lns.tunnels.values()))
        data = b"\xc8\x02" + data[2:4] + t.local_id.to_bytes(2, "big") + data[6:8] + \
            t.channel.nr.to_bytes(2, "big") + data[10:]
    lns.receive(data, LAC)
    clock.t += 0.05
    lns.on_timer()
    lns.drain()


def main() -> None:
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()

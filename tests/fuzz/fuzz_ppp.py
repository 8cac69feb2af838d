"""Atheris (libFuzzer) target for PPP: the control-packet and option
decoders, and a BNG-side PPP link (LCP, authentication, IPCP, IPv6CP)
driven by a sequence of frames decoded from the input, with timers firing
in between. Nothing may leave the link.

Not collected by pytest. Run, e.g.:
    .venv/bin/python tests/fuzz/fuzz_ppp.py -atheris_runs=200000
"""
from __future__ import annotations

import ipaddress
import random
import sys

import atheris

with atheris.instrument_imports():
    from bng_controller.ppp import codec
    from bng_controller.ppp.auth import Verdict
    from bng_controller.ppp.link import AuthAttempt, Ipv4Assignment, LinkConfig, PppLink

PROTOCOLS = [codec.PPP_LCP, codec.PPP_PAP, codec.PPP_CHAP, codec.PPP_IPCP, codec.PPP_IPV6CP, 0x80FD]


class Clock:
    t = 0.0

    def __call__(self) -> float:
        return self.t


def one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    for fn in (codec.parse_control, codec.parse_options):
        try:
            fn(fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 64)))
        except codec.CodecError:
            pass
    clock = Clock()
    link = PppLink(LinkConfig(), clock, random.Random(0))
    link.start()
    v4 = Ipv4Assignment(ipaddress.IPv4Address("10.0.0.2"), ipaddress.IPv4Address("10.0.0.1"))
    while fdp.remaining_bytes():
        proto = PROTOCOLS[fdp.ConsumeIntInRange(0, len(PROTOCOLS) - 1)]
        link.receive(proto, fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 80)))
        if fdp.ConsumeBool():
            clock.t += fdp.ConsumeIntInRange(0, 5000) / 1000
            link.on_timer()
        _, events = link.drain()
        for ev in events:
            if isinstance(ev, AuthAttempt):
                link.auth_result(ev.credentials, Verdict(fdp.ConsumeBool(), "fuzz"), v4)


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()

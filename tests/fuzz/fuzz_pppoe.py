"""Atheris (libFuzzer) target for PPPoE: the frame decoders and the
access concentrator's discovery stage fed arbitrary frames. Only CodecError
may leave a decoder; nothing may leave the discovery stage.

Not collected by pytest. Run, e.g.:
    .venv/bin/python tests/fuzz/fuzz_pppoe.py -atheris_runs=200000
"""
from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports():
    from bng_controller.pppoe import codec
    from bng_controller.pppoe.discovery import DiscoveryConfig, PppoeDiscovery

BNG = bytes.fromhex("02bb00000001")
DISCOVERY = PppoeDiscovery(DiscoveryConfig(), BNG, b"s" * 32, clock=lambda: 0.0, wallclock=lambda: 1000.0)


def one_input(data: bytes) -> None:
    try:
        l2, etype, off = codec.parse_l2(data)
        pkt = codec.parse_discovery(data[off:])
    except codec.CodecError:
        pass
    else:
        line = DISCOVERY.line_info(l2, 1, 0, pkt)
        DISCOVERY.handle(l2, pkt, line)
    try:
        codec.parse_session(data)
    except codec.CodecError:
        pass


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()

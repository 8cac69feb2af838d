"""The controller between opening the packet channel and having its state
back: packet-ins wait until the sessions are restored and the switch is
reconciled, instead of being answered from an empty session table (which
PADT'd every CPE whose keepalive came in that window after a restart)."""
from __future__ import annotations

import asyncio
import struct
from pathlib import Path

from p4.v1 import p4runtime_pb2 as p4r

from bng_controller import config
from bng_controller.aaa import make_backend
from bng_controller.controller import BngController
from bng_controller.p4runtime_async import PacketIn

from .fake_switch import FakeSwitch

ROOT = Path(__file__).resolve().parents[2]
CPE_MAC = bytes.fromhex("020000000042")


class ReadySwitch(FakeSwitch):
    """A switch that already runs the controller's pipeline."""

    def __init__(self, cookie: int):
        super().__init__()
        self.cookie = cookie

    async def get_pipeline(self):
        cfg = p4r.ForwardingPipelineConfig()
        cfg.cookie.cookie = self.cookie
        return cfg


def lcp_echo_request(session_id: int) -> bytes:
    lcp = struct.pack("!BBHI", 9, 1, 8, 0x01020304)          # Echo-Request, magic number
    ppp = struct.pack("!H", 0xC021) + lcp
    return (b"\x02\xbb\x00\x00\x00\x01" + CPE_MAC + struct.pack("!H", 0x8864)
            + struct.pack("!BBHH", 0x11, 0, session_id, len(ppp)) + ppp)


def pppoe_config(tmp_path: Path) -> config.ControllerConfig:
    """The example PPPoE config with its state and accounting in tmp_path."""
    cfg = config.load(ROOT / "configs" / "controller" / "pppoe.yaml")
    cfg.state_dir = str(tmp_path)
    cfg.aaa["local"] = {"subscribers": str(ROOT / "configs" / "subscribers.example.yaml"),
                        "accounting_file": str(tmp_path / "accounting.jsonl")}
    return cfg


def controller_on_ready_switch(cfg: config.ControllerConfig) -> tuple[BngController, ReadySwitch]:
    """A controller whose switch already runs its pipeline (call within a loop)."""
    ctl = BngController(cfg, make_backend(cfg.aaa))
    sw = ReadySwitch(ctl.cookie)
    ctl.switch = ctl.sessions.switch = sw
    return ctl, sw


def test_packet_ins_before_ready_are_handled_after_the_switch_is_set_up(tmp_path):
    cfg = pppoe_config(tmp_path)

    async def run():
        ctl, sw = controller_on_ready_switch(cfg)
        ctl.on_packet_in(PacketIn(lcp_echo_request(0x42), {"reason": ctl.punt_values["PPP_CONTROL"],
                                                            "ingress_port": 1, "line_id": 7}))
        assert sw.sent == []                       # not answered from an empty session table
        await ctl.on_connected()
        assert ctl.ready.is_set()
        (frame, port), = sw.take_sent()            # now handled: no such session here, so a PADT
        assert port == 1 and frame[:6] == CPE_MAC and frame[12:14] == b"\x88\x63" and frame[15] == 0xA7
        assert ctl.sessions.counters["pppoe PADT sent for unknown session"] == 1
        ctl.on_packet_in(PacketIn(lcp_echo_request(0x43), {"reason": ctl.punt_values["PPP_CONTROL"],
                                                            "ingress_port": 1, "line_id": 7}))
        assert ctl.sessions.counters["ppp for unknown session"] == 2    # once ready, at once

    asyncio.run(run())

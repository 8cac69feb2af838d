"""The BNG's own IPv4 addresses in local_ipv4: only an L2TP endpoint with
the LNS role on gets set_local, where the data plane looks LNS IPv4
upstream up in l2tp_up_v4. Everywhere else set_local_no_lns spares L2TP
data that lookup; were the LNS endpoint to get it, its subscribers' IPv4
would all drop as SPOOFED."""
from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest

from bng_controller import config
from bng_controller.aaa import make_backend
from bng_controller.controller import BngController
from bng_controller.l2tp.service import L2tpService

ROOT = Path(__file__).resolve().parents[2]


def local_ipv4_actions(role: str, tmp_path: Path) -> tuple[dict, config.Config]:
    cfg = config.load(ROOT / "configs" / "controller" / f"{role}.yaml")
    cfg.state_dir = str(tmp_path)
    cfg.aaa["local"]["accounting_file"] = str(tmp_path / "accounting.jsonl")
    cfg.aaa["local"]["subscribers"] = str(ROOT / cfg.aaa["local"]["subscribers"])
    ctl = BngController(cfg, make_backend(cfg.aaa))
    if cfg.l2tp:                                # as __main__ does
        ctl.l2tp = L2tpService(ctl, cfg.l2tp)
    table_id = ctl.tables.table_id("local_ipv4")
    out = {}
    for e in ctl.infrastructure_entries():
        if e.table_id == table_id:
            addr = ipaddress.IPv4Address(int.from_bytes(e.match[0].exact.value, "big"))
            out[addr] = ctl.names.action_by_id(e.action.action.action_id).preamble.name.split(".")[-1]
    return out, cfg


@pytest.mark.parametrize("role", ["pppoe", "lac", "lns"])
def test_only_the_lns_endpoint_looks_up_l2tp_up_v4(role, tmp_path):
    actions, cfg = local_ipv4_actions(role, tmp_path)
    assert actions, "the BNG has addresses of its own"
    lns = {ipaddress.IPv4Address(cfg.l2tp["local_address"])} if cfg.l2tp and cfg.l2tp.get("lns") else set()
    assert (role == "lns") == bool(lns)
    for addr, action in actions.items():
        assert action == ("set_local" if addr in lns else "set_local_no_lns"), addr
    assert lns <= set(actions)

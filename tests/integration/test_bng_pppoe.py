"""The PPPoE BNG end to end: emulated subscribers (subemu, written apart
from the controller) -> the switch running bng.p4 -> the core host, with
the controller in charge. Sessions come up with PAP and CHAP on untagged,
802.1Q and QinQ lines, get addresses, pass traffic both ways, go down
cleanly, and leave nothing behind in the switch."""
from __future__ import annotations

import json
import re
import time

import pytest

from bng_lab.processes import EMULATOR
from bng_lab.topology import PppoeLab
from tests.support import program_files

pytestmark = pytest.mark.root


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    program_files("bng")
    if not EMULATOR.exists():
        pytest.skip("the subscriber emulator is not built (make -C emulator)")
    from bng_lab.switch_process import free_tcp_port
    port = free_tcp_port()
    # PacketIn/PacketOut over the P4Runtime stream here (the other suites use
    # the switch's local packet channel)
    lab = PppoeLab(tmp_path_factory.mktemp("pppoe"), controller={"metrics_listen": f"127.0.0.1:{port}"},
                   packet_channel=False).start()
    lab.metrics_url = f"http://127.0.0.1:{port}/metrics"
    yield lab
    lab.stop()


def session_entries(lab: PppoeLab) -> dict[str, int]:
    """How many entries each per-session table of the switch holds, read
    through P4Runtime by a second client (not the controller's view)."""
    from bng_controller.p4runtime_client import P4RuntimeClient
    c = P4RuntimeClient(lab.switch.address, election_id=(0, 1))
    c.connect()
    try:
        c.use_p4info(P4RuntimeClient.load_p4info(str(program_files("bng")[0])))
        out = {}
        for t in ("pppoe_up_v4", "pppoe_session", "ipv4_session", "ipv6_session", "ipv6_antispoof"):
            out[t] = len(c.read_table(t))
        return out
    finally:
        c.close()


def run_emulator(lab: PppoeLab, name: str, *args: str, timeout: float = 120) -> dict:
    e = lab.emulator(name, *args)
    rc = e.wait(timeout)
    report = e.report()
    report["rc"] = rc
    return report


@pytest.mark.parametrize("auth,vlans", [("pap", []), ("chap", ["--svlan", "100", "--sessions-per-line", "10"]),
                                         ("chap", ["--svlan", "200", "--cvlan", "10-19"]),
                                         ("mschapv2", [])],
                         ids=["pap-untagged", "chap-dot1q", "chap-qinq", "mschapv2"])
def test_sessions_come_up_and_pass_traffic_both_ways(lab, auth, vlans, request):
    n = 10
    case = request.node.callspec.id
    e = lab.emulator(f"emu-{case}", "--sessions", str(n), "--auth", auth,
                     "--username", "user{i}@lab.test", *vlans,
                     "--ping", lab.core_host_ip, "--ping-interval", "0.2", "--hold", "--setup-timeout", "30",
                     "--report-sessions",
                     "--mac-base", f"02:{len(vlans):02x}:{ord(auth[0]):02x}:{len(case):02x}:00:00")
    try:
        st = e.wait_status(lambda s: s["established"] == n and s["ping"]["received"] >= 2 * n, 60,
                           "sessions up and pinging")
        # What the subscribers saw of the BNG: no protocol error (a PADS
        # without Host-Uniq, a wrong magic, traffic for another session, ...
        # count there and end no session), every session authenticated with
        # the method asked for (a BNG that left out Auth-Protocol would have
        # brought them up as "none") and given an address of its own.
        assert st["protocol_errors"] == {}, st["protocol_errors"]
        per = st["sessions"]
        assert [x["auth"] for x in per] == [auth] * n, [x["auth"] for x in per]
        assert len({x["ipv4"] for x in per}) == n
        sessions = lab.controller.api("sessions")["sessions"]
        mine = [s for s in sessions if s["state"] == "up"]
        assert len(mine) == n
        # downstream from the core: the core host pings every subscriber
        e_status = e.status()
        addrs = [s["ipv4"] for s in mine]
        for a in addrs[:3]:
            r = lab.core("ping", "-c", "3", "-i", "0.2", "-W", "1", a, check=False)
            assert r.returncode == 0, r.stdout + r.stderr
        if case == "pap-untagged":
            # 1500 bytes with DF to a session of MRU 1492: the BNG answers
            # with Fragmentation Needed carrying the MRU, and the core
            # host's kernel learns it as that destination's path MTU
            r = lab.core("ping", "-c", "1", "-W", "1", "-M", "do", "-s", "1472", addrs[0], check=False)
            assert "mtu = 1492" in r.stdout, r.stdout + r.stderr
            assert "mtu 1492" in lab.core("ip", "route", "get", addrs[0]).stdout
            assert lab.controller.api("counters")["packet_too_big"]["ipv4 fragmentation needed sent"] == 1
            # without DF: the BNG fragments it into the session, the
            # subscriber reassembles it and answers in fragments of its own
            r = lab.core("ping", "-c", "1", "-W", "2", "-M", "dont", "-s", "1600", addrs[0], check=False)
            assert r.returncode == 0, r.stdout + r.stderr
            assert lab.controller.api("counters")["packet_too_big"]["ipv4 fragmented"] == 1
            st = e.wait_status(lambda s: s["events"]["ipv4_fragments_sent"] >= 2, 10, "reply fragments counted")
            assert st["events"]["ipv4_reassembled"] == 1 and st["events"]["ipv4_fragments_sent"] == 2, st["events"]
            assert st["protocol_errors"] == {}, st["protocol_errors"]
        if vlans:
            ids = {(s["s_vid"], s["c_vid"]) for s in mine}
            assert all(sv == int(vlans[1]) for sv, _ in ids)
        assert session_entries(lab)["pppoe_up_v4"] == n
    finally:
        e.stop()
    # SIGTERM: subemu tears its sessions down (LCP Terminate, PADT)
    deadline = time.time() + 20
    while lab.controller.api("sessions")["sessions"] and time.time() < deadline:
        time.sleep(0.2)
    assert lab.controller.api("sessions")["sessions"] == []
    left = session_entries(lab)
    assert all(v == 0 for v in left.values()), left


def test_wrong_password_is_rejected(lab):
    r = run_emulator(lab, "emu-badpw", "--sessions", "4", "--username", "user{i}@lab.test",
                     "--wrong-password-every", "2", "--duration", "1",
                     "--setup-timeout", "20", "--mac-base", "02:bb:bb:00:00:00")
    assert r["established"] == 2 and r["expected_rejects"] == 2, r
    assert r["rc"] == 0
    c = lab.controller.api("counters")["controller"]
    assert c.get("auth rejected", 0) >= 2


def test_bngctl_shows_and_clears_a_session(lab):
    e = lab.emulator("emu-ctl", "--sessions", "2", "--username", "user{i}@lab.test", "--hold", "--mac-base", "02:cc:cc:00:00:00")
    try:
        e.wait_status(lambda s: s["established"] == 2, 30, "2 sessions")
        import subprocess
        import sys
        bngctl = [sys.executable, "-m", "bng_controller.bngctl", "--socket", lab.controller.api_socket]
        out = subprocess.run(bngctl + ["show", "sessions"], capture_output=True, text=True, check=True).stdout
        assert "user1@lab.test" in out and "2 session(s)" in out
        sid = int(re.search(r"^(\d+)\s+up\s+user1@lab.test", out, re.M).group(1))
        detail = json.loads(subprocess.run(bngctl + ["--json", "show", "session", str(sid)], capture_output=True,
                                           text=True, check=True).stdout)
        assert detail["ppp"]["lcp"] == "OPENED" and detail["ppp"]["ipcp"] == "OPENED"
        assert "counters" in detail
        # the session's policers, per direction and colour: no rate limit, nothing red
        assert set(detail["policer"]) == {"up", "down"}
        assert all(detail["policer"][d]["red"] == {"packets": 0, "bytes": 0} for d in ("up", "down"))
        subprocess.run(bngctl + ["clear", "session", str(sid)], capture_output=True, text=True, check=True)
        st = e.wait_status(lambda s: s["flaps"] >= 1, 15, "the cleared session to drop")
        assert st["established"] == 1 and st["ever_established"] == 2
        remaining = lab.controller.api("sessions")["sessions"]
        assert [s["user"] for s in remaining] == ["user2@lab.test"]
    finally:
        e.stop()


def test_prometheus_metrics(lab):
    import urllib.request
    e = lab.emulator("emu-metrics", "--sessions", "3", "--hold", "--mac-base", "02:dd:dd:00:00:00")
    try:
        e.wait_status(lambda s: s["established"] == 3, 30, "3 sessions")
        text = urllib.request.urlopen(lab.metrics_url, timeout=10).read().decode()
    finally:
        e.stop()
    metrics = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            metrics[name] = float(value)
    assert metrics['bng_sessions{state="up"}'] == 3
    assert metrics["bng_session_setups_total"] >= 3
    assert metrics['bng_packet_in_total{reason="PPPOE_DISCOVERY"}'] >= 6
    assert metrics["bng_switch_connected"] == 1
    assert metrics['bng_pool_addresses{pool="default",state="used"}'] == 3
    assert 'bng_session_setup_seconds{quantile="0.5"}' in metrics
    assert metrics["bng_session_setup_seconds_count"] >= 3 and metrics["bng_session_setup_seconds_sum"] > 0

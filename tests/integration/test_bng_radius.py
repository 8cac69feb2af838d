"""The BNG with a real FreeRADIUS: Access-Accept attributes applied to the
session (address, policer rates, Class), Access-Reject, accounting
Start/Interim/Stop carrying the switch's real counters, and RFC 5176
Disconnect-Request and CoA-Request sent with radclient."""
from __future__ import annotations

import shutil
import subprocess
import time

import pytest

from bng_lab.processes import EMULATOR
from bng_lab.topology import PppoeLab
from tests import freeradius_server as fr
from tests.support import program_files

pytestmark = pytest.mark.root

USERS = """\
"user1@lab.test" Cleartext-Password := "pass1"
\tFramed-IP-Address = 10.0.5.1,
\tFilter-Id = "8000/2000",
\tAcct-Interim-Interval = 2,
\tClass = "gold-plan"

"user2@lab.test" Cleartext-Password := "pass2"
\tFilter-Id = "4000/1000"

"user3@lab.test" Cleartext-Password := "not-what-subemu-sends"
"""
COA_SECRET = "coa-secret"
RADCLIENT = shutil.which("radclient")


@pytest.fixture(scope="module")
def radius():
    if not fr.available() or RADCLIENT is None:
        pytest.skip("FreeRADIUS (freeradius, freeradius-utils) is not installed")
    with fr.FreeRadiusServer(USERS) as server:
        yield server


@pytest.fixture(scope="module")
def lab(radius, tmp_path_factory):
    program_files("bng")
    if not EMULATOR.exists():
        pytest.skip("the subscriber emulator is not built (make -C emulator)")
    coa_port = fr.free_udp_port()
    lab = PppoeLab(tmp_path_factory.mktemp("radius"), controller={
        "aaa": {"backend": "radius", "radius": {
            "servers": [{"address": "127.0.0.1", "auth_port": radius.auth_port, "acct_port": radius.acct_port,
                         "secret": radius.secret}],
            "nas_identifier": "bng-lab", "timeout": 2, "retries": 2}},
        "dynauth": {"listen": f"127.0.0.1:{coa_port}", "nas_identifier": "bng-lab",
                    "clients": [{"address": "127.0.0.1", "secret": COA_SECRET}]},
        "accounting": {"tick": 1, "interim_interval": 300, "min_interim_interval": 1},   # Interims in seconds
        "ipv6": {"enabled": False}, "ppp": {"ipv6": False, "auth": ["chap-md5", "pap"]},
    }).start()
    lab.coa_port = coa_port
    yield lab
    lab.stop()


def radclient(port: int, command: str, attrs: str) -> str:
    r = subprocess.run([RADCLIENT, "-x", "-r", "2", "-t", "2", f"127.0.0.1:{port}", command, COA_SECRET],
                       input=attrs + "\n", capture_output=True, text=True)
    return r.stdout + r.stderr


def records(radius, status: str, user: str) -> list[dict]:
    return [r for r in radius.detail_records()
            if r.get("Acct-Status-Type") == status and r.get("User-Name") == user]


def wait_for(pred, timeout: float, what: str):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.2)
    raise AssertionError(f"no {what} within {timeout} s")


def meter_rates(lab: PppoeLab, sess_idx: int) -> dict[str, int]:
    from bng_controller.p4runtime_client import P4RuntimeClient
    from p4.v1 import p4runtime_pb2 as p4r
    c = P4RuntimeClient(lab.switch.address, election_id=(0, 1))
    c.connect()
    try:
        c.use_p4info(P4RuntimeClient.load_p4info(str(program_files("bng")[0])))
        out = {}
        for m in ("session_meter_up", "session_meter_down"):
            me = p4r.MeterEntry(meter_id=c.names.meter(m).preamble.id)
            me.index.index = sess_idx
            [e] = c.read(p4r.Entity(meter_entry=me))
            out[m] = e.meter_entry.config.cir
        return out
    finally:
        c.close()


def drop_counts(lab: PppoeLab) -> dict[str, int]:
    return {k: v["packets"] for k, v in lab.controller.api("counters")["dataplane"]["drops"].items()}


def test_radius_session_life(lab, radius):
    stream_size = 100
    lab.udp_sink(9)
    drops_before = drop_counts(lab)
    e = lab.emulator("emu-radius", "--sessions", "3", "--auth", "chap", "--username", "user{i}@lab.test",
                     "--password", "pass{i}", "--wrong-password-every", "3", "--hold",
                     "--stream-pps", "100", "--stream-target", f"{lab.core_host_ip}:9",
                     "--stream-size", str(stream_size), "--mac-base", "02:aa:00:00:00:00")
    try:
        st = e.wait_status(lambda s: s["established"] == 2 and s["expected_rejects"] == 1, 40,
                           "two sessions up and one rejected")
        sessions = {s["user"]: s for s in lab.controller.api("sessions")["sessions"]}
        assert set(sessions) == {"user1@lab.test", "user2@lab.test"}
        # Access-Accept applied: the address, the policers (kbit/s -> bytes/s)
        assert sessions["user1@lab.test"]["ipv4"] == "10.0.5.1"
        d1 = lab.controller.api("session", id=sessions["user1@lab.test"]["id"])
        assert d1["aaa"]["class"] == [b"gold-plan".hex()]
        assert meter_rates(lab, d1["sess_idx"]) == {"session_meter_down": 8000 * 125,
                                                    "session_meter_up": 2000 * 125}
        # Start for both; Interims for user1 (Acct-Interim-Interval = 2) with growing counters
        wait_for(lambda: records(radius, "Start", "user1@lab.test") and records(radius, "Start", "user2@lab.test"),
                 10, "Accounting-Start records")
        assert records(radius, "Start", "user1@lab.test")[0]["Class"] in ("gold-plan", "0x676f6c642d706c616e")
        interims = wait_for(lambda: len(records(radius, "Interim-Update", "user1@lab.test")) >= 2 and
                            records(radius, "Interim-Update", "user1@lab.test"), 15, "two Interim-Updates")
        assert int(interims[-1]["Acct-Input-Packets"]) > int(interims[0]["Acct-Input-Packets"]) > 0

        # downstream: the core pings user1 five times (84-byte IPv4 packets)
        r = lab.core("ping", "-c", "5", "-i", "0.2", "-W", "1", "10.0.5.1", check=False)
        assert r.returncode == 0, r.stdout

        # CoA: user2's rates change without the session dropping
        s2 = lab.controller.api("session", id=sessions["user2@lab.test"]["id"])
        out = radclient(lab.coa_port, "coa", f'Acct-Session-Id = "{s2["acct_session_id"]}", '
                                             f'NAS-Identifier = "bng-lab", Filter-Id = "16000/4000"')
        assert "CoA-ACK" in out, out
        assert meter_rates(lab, s2["sess_idx"]) == {"session_meter_down": 16000 * 125,
                                                    "session_meter_up": 4000 * 125}
        assert e.status()["flaps"] == 0
        # a CoA for no session is refused with Session-Context-Not-Found
        out = radclient(lab.coa_port, "coa", 'Acct-Session-Id = "nope", NAS-Identifier = "bng-lab", '
                                             'Filter-Id = "1/1"')
        assert "CoA-NAK" in out and "Session-Context-Not-Found" in out, out

        # Disconnect: user2 goes away, its Stop says Admin-Reset
        out = radclient(lab.coa_port, "disconnect", 'User-Name = "user2@lab.test", NAS-Identifier = "bng-lab"')
        assert "Disconnect-ACK" in out, out
        e.wait_status(lambda s: s["flaps"] >= 1, 15, "user2 to be disconnected")
        stop2 = wait_for(lambda: records(radius, "Stop", "user2@lab.test"), 10, "user2's Stop")[0]
        assert stop2["Acct-Terminate-Cause"] == "Admin-Reset"
        time.sleep(1.5)                                   # let the stream run on user1 alone
    finally:
        e.stop()
    final = e.report()
    stop1 = wait_for(lambda: records(radius, "Stop", "user1@lab.test"), 15, "user1's Stop")[0]
    assert stop1["Acct-Terminate-Cause"] == "User-Request"
    # The switch counted exactly what crossed it: user1's downstream is the
    # five pings; upstream across both sessions is every stream packet sent
    # plus user1's five echo replies.
    assert int(stop1["Acct-Output-Packets"]) == 5
    assert int(stop1["Acct-Output-Octets"]) == 5 * 84
    up_packets = int(stop1["Acct-Input-Packets"]) + int(stop2["Acct-Input-Packets"])
    up_octets = int(stop1["Acct-Input-Octets"]) + int(stop2["Acct-Input-Octets"])
    sent = final["stream_up"]["sent"]
    # Upstream packets that hit a session on its way down (IPCP closed
    # before LCP, entries removed before the CPE knew) are dropped and
    # counted by reason: every packet sent is counted exactly once.
    after = drop_counts(lab)
    dropped = sum(after[r] - drops_before[r] for r in ("NO_SESSION", "SPOOFED", "NO_ROUTE", "POLICER"))
    assert up_packets + dropped == sent + 5, (up_packets, dropped, sent, after)
    assert up_octets == (sent - dropped) * (20 + 8 + stream_size) + 5 * 84
    assert int(stop1["Acct-Session-Time"]) >= 5

"""LAC and LNS end to end, as the reference lab runs them: emulated PPPoE
subscribers -> our LAC (switch + controller) -> L2TPv2 over a transit link
-> our LNS (switch + controller) -> the core host. Sessions come up with
proxy LCP and proxy authentication, pass traffic both ways, show in
bngctl, go down cleanly; tunnel fail-over between LNSes, a bad tunnel
secret, malformed control messages, a lossy control path and a dead LNS."""
from __future__ import annotations

import json
import socket
import struct
import subprocess
import sys
import time

import pytest

from bng_lab.processes import EMULATOR
from bng_lab.topology import LacLnsLab
from tests.support import program_files

pytestmark = pytest.mark.root

# The LNS knows the subscribers of every realm the LAC sends it.
LNS_SUBSCRIBERS = {"patterns": [{"match": r"user(\d+)@.+", "password": "secret{1}"}]}
# Fast enough control timers for tests: 1, 2, 4 s retransmissions, then dead.
TUNNEL = {"hello_interval": 2, "max_retransmits": 3, "retransmit_cap": 4}


def lac_realms(lab=LacLnsLab) -> dict:
    good = {"server": lab.LNS_IP, "password": lab.SECRET, "client_auth_id": "lac1", "server_auth_id": "lns1"}
    return {"realms": {
        "lab.test": {"tunnels": [{**good, "preference": 1}]},
        # the preferred LNS does not exist: the call must fail over
        "failover.test": {"tunnels": [{"server": "100.65.0.9", "password": lab.SECRET, "preference": 1},
                                      {**good, "preference": 2}]},
        # the preferred tunnel expects another LNS host name: refused, then the next
        "wronglns.test": {"tunnels": [{**good, "server_auth_id": "lns9", "assignment_id": "wrong-lns",
                                       "preference": 1}, {**good, "preference": 2}]},
        "badsecret.test": {"tunnels": [{**good, "password": "not-the-secret", "assignment_id": "bad"}]},
    }}


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    program_files("bng")
    if not EMULATOR.exists():
        pytest.skip("the subscriber emulator is not built (make -C emulator)")
    lab = LacLnsLab(tmp_path_factory.mktemp("l2tp"), lac={"l2tp": {"tunnel": {"host_name": "lac1", **TUNNEL}}},
                    lns={"l2tp": {"tunnel": {"host_name": "lns1", **TUNNEL}}}, lac_subscribers=lac_realms(),
                    subscribers=LNS_SUBSCRIBERS)
    lab.start()
    yield lab
    lab.stop()


def table_sizes(address: str, tables: tuple[str, ...]) -> dict[str, int]:
    from bng_controller.p4runtime_client import P4RuntimeClient
    c = P4RuntimeClient(address, election_id=(0, 1))
    c.connect()
    try:
        c.use_p4info(P4RuntimeClient.load_p4info(str(program_files("bng")[0])))
        return {t: len(c.read_table(t)) for t in tables}
    finally:
        c.close()


def bngctl(lab_controller, *args: str) -> str:
    return subprocess.run([sys.executable, "-m", "bng_controller.bngctl", "--socket", lab_controller.api_socket,
                           *args], capture_output=True, text=True, check=True).stdout


def test_subscribers_through_lac_and_lns(lab):
    n = 20
    e = lab.emulator("emu-l2tp", "--sessions", str(n), "--auth", "chap", "--svlan", "300", "--cvlan", "1-20",
                     "--hold", "--ping", lab.core_host_ip, "--ping-interval", "0.2", "--mac-base", "02:71:00:00:00:00")
    try:
        st = e.wait_status(lambda s: s["established"] == n and s["ping"]["received"] >= 2 * n, 60,
                           "subscribers up through the LNS")
        # LNS: terminated with addresses from its pool, proxied LCP taken over
        lns = {s["user"]: s for s in lab.controller.api("sessions")["sessions"]}
        assert len(lns) == n and all(s["state"] == "up" and s["ipv4"].startswith("10.1.") for s in lns.values())
        assert lab.controller.api("counters")["l2tp"]["lcp taken over from proxy"] >= n
        # LAC: switched, not terminated (no address here)
        lac = lab.lac.api("sessions")["sessions"]
        assert len(lac) == n and all(s["state"] == "up" and s["ipv4"] is None for s in lac)
        # downstream: the core host pings subscribers behind the LNS
        for s in list(lns.values())[:3]:
            r = lab.core("ping", "-c", "3", "-i", "0.2", "-W", "1", s["ipv4"], check=False)
            assert r.returncode == 0, r.stdout
        # one byte over the session's MRU with DF: Fragmentation Needed
        # from the LNS, carrying the MRU the subscriber's LCP gave it
        s = next(iter(lns.values()))
        mru = lab.controller.api("session", id=s["id"])["ppp"]["peer_mru"]
        r = lab.core("ping", "-c", "1", "-W", "1", "-M", "do", "-s", str(mru - 28 + 1), s["ipv4"], check=False)
        assert f"mtu = {mru}" in r.stdout, r.stdout + r.stderr
        # bngctl on both sides
        out = bngctl(lab.lac, "show", "l2tp", "tunnels")
        assert "100.65.0.2:1701" in out and "established" in out
        tunnels = json.loads(bngctl(lab.controller, "--json", "show", "l2tp", "tunnels"))["tunnels"]
        assert len(tunnels) == 1 and tunnels[0]["sessions"] == n and tunnels[0]["host_name"] == "lac1"
        sessions = json.loads(bngctl(lab.controller, "--json", "show", "l2tp", "sessions"))["sessions"]
        assert sorted(s["user"] for s in sessions) == sorted(lns)
        assert table_sizes(lab.lac_switch.address, ("l2tp_session", "l2tp_tunnel"))["l2tp_session"] == n
    finally:
        e.stop()
    deadline = time.time() + 20
    while (lab.controller.api("sessions")["sessions"] or lab.lac.api("sessions")["sessions"]) \
            and time.time() < deadline:
        time.sleep(0.2)
    assert not lab.controller.api("sessions")["sessions"] and not lab.lac.api("sessions")["sessions"]
    per_session = ("l2tp_session", "pppoe_session", "ipv4_session", "l2tp_up_v4")
    assert all(v == 0 for v in table_sizes(lab.switch.address, per_session).values())
    assert all(v == 0 for v in table_sizes(lab.lac_switch.address, per_session).values())
    # the tunnel stays for the next subscribers (no session: one entry)
    assert table_sizes(lab.lac_switch.address, ("l2tp_tunnel",))["l2tp_tunnel"] == 1


def test_failover_to_the_next_lns(lab):
    r = lab.emulator("emu-fo", "--sessions", "2", "--username", "user{i}@failover.test", "--duration", "1",
                     "--setup-timeout", "45", "--mac-base", "02:72:00:00:00:00")
    assert r.wait(90) == 0, "".join(r.output[-10:])
    c = lab.lac.api("counters")["l2tp"]
    assert c.get("lac failover", 0) >= 1


def test_lns_with_another_host_name_is_refused_and_the_call_fails_over(lab):
    """Tunnel-Server-Auth-Id (server_auth_id): the LNS answering as "lns1"
    where "lns9" is expected is stopped by the LAC; the call takes the next
    tunnel, whose expected name matches."""
    before = lab.lac.api("counters")["l2tp"]
    r = lab.emulator("emu-wronglns", "--sessions", "1", "--username", "user{i}@wronglns.test", "--duration", "1",
                     "--setup-timeout", "45", "--mac-base", "02:74:00:00:00:00")
    assert r.wait(90) == 0, "".join(r.output[-10:])
    c = lab.lac.api("counters")["l2tp"]
    assert c.get("lac: LNS host name mismatch", 0) - before.get("lac: LNS host name mismatch", 0) == 1, c
    assert c.get("lac failover", 0) - before.get("lac failover", 0) == 1, c
    assert any("expected 'lns9'" in line for line in lab.lac.output), "no log line names the mismatch"


def test_bad_tunnel_secret_is_refused(lab):
    r = lab.emulator("emu-bad", "--sessions", "1", "--username", "user{i}@badsecret.test", "--duration", "0",
                     "--setup-timeout", "30", "--discovery-retries", "1", "--mac-base", "02:73:00:00:00:00")
    r.wait(60)
    rep = r.report()
    assert rep["established"] == 0 and rep["failed"] == 1
    lac = lab.lac.api("counters")["l2tp"]
    lns = lab.controller.api("counters")["l2tp"]
    assert lac.get("lac: no LNS took the call", 0) == 1
    # the side that checked the other's Challenge Response stopped the
    # tunnel with result 4 (not authorized); the other saw it by peer
    assert lac.get("tunnel down: result 4 (by us)", 0) + lns.get("tunnel down: result 4 (by us)", 0) == 1, (lac, lns)
    assert lac.get("tunnel down: result 4 (by peer)", 0) + lns.get("tunnel down: result 4 (by peer)", 0) <= 1
    assert not lab.controller.api("sessions")["sessions"]


def test_malformed_control_messages_are_counted(lab):
    """Garbage, a bad length, an unknown tunnel id and a SCCRQ from a
    stranger, sent from the core host to the LNS's L2TP address: counted,
    the stranger refused with StopCCN result 4, nothing else disturbed."""
    lab.core("ip", "route", "replace", "100.65.0.0/24", "via", "100.64.0.1")
    before = lab.controller.api("counters")["l2tp"]
    sccrq = (struct.pack("!HHHHHH", 0xC802, 0, 0, 0, 0, 0)              # T L S, length patched below
             + struct.pack("!HHHH", 0x8008, 0, 0, 1)                    # Message Type SCCRQ
             + struct.pack("!HHHBB", 0x8008, 0, 2, 1, 0)                # Protocol Version 1.0
             + struct.pack("!HHH", 0x8006 + 4, 0, 7) + b"evil"          # Host Name
             + struct.pack("!HHHI", 0x800A, 0, 3, 3)                    # Framing Capabilities
             + struct.pack("!HHHH", 0x8008, 0, 9, 77))                  # Assigned Tunnel ID
    sccrq = sccrq[:2] + struct.pack("!H", len(sccrq)) + sccrq[4:]
    bad_length = bytearray(sccrq)
    bad_length[2:4] = struct.pack("!H", len(sccrq) + 40)
    unknown_tunnel = bytearray(sccrq)
    unknown_tunnel[4:6] = struct.pack("!H", 4242)
    script = (
        "import socket,sys,time\n"
        "s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM); s.bind(('0.0.0.0',1701)); s.settimeout(3)\n"
        f"for m in [b'\\x00', bytes.fromhex('{bytes(bad_length).hex()}'), "
        f"bytes.fromhex('{bytes(unknown_tunnel).hex()}'), bytes.fromhex('{sccrq.hex()}')]:\n"
        "    s.sendto(m,('100.65.0.2',1701)); time.sleep(0.2)\n"
        "try:\n    print(s.recv(2000).hex())\nexcept socket.timeout:\n    print('none')\n")
    out = lab.core(sys.executable, "-c", script).stdout.strip().splitlines()
    reply = bytes.fromhex(out[-1]) if out and out[-1] != "none" else b""
    assert reply and reply[0] & 0x80, "no StopCCN for the stranger's SCCRQ: " + json.dumps(
        [lab.controller.api("counters")["l2tp"], lab.controller.api("counters")["dataplane"]["drops"], out])
    # Message Type AVP (StopCCN = 4) and a Result Code AVP with result 4 (not authorized)
    assert b"\x00\x00\x00\x00\x00\x04" in reply and b"\x00\x01\x00\x04" in reply
    after = lab.controller.api("counters")["l2tp"]
    new = {k: after[k] - before.get(k, 0) for k in after if isinstance(after[k], int) and after[k] != before.get(k, 0)}
    assert any("unknown tunnel" in k for k in new), new
    assert sum(v for k, v in new.items() if k.startswith("endpoint ")) >= 3, new
    assert new.get("tunnel refused: unknown LAC", 0) == 1


def test_dead_lns_is_detected_and_cleaned(lab):
    """Last (it kills the LNS's controller): the LAC's Hellos go
    unanswered, the tunnel is declared dead, its subscribers get a PADT and
    the LAC's data plane forgets them."""
    dead_before = lab.lac.api("counters")["l2tp"].get("tunnel down (peer dead)", 0)
    e = lab.emulator("emu-dead", "--sessions", "5", "--hold", "--mac-base", "02:74:00:00:00:00")
    try:
        e.wait_status(lambda s: s["established"] == 5, 40, "5 subscribers")
        lab.controller.kill()
        st = e.wait_status(lambda s: s["flaps"] >= 5, 40, "the LAC to drop them")
        assert st["flap_reasons"].get("padt_received", 0) + st["flap_reasons"].get("lcp_terminated", 0) >= 5
    finally:
        e.stop()
    assert not lab.lac.api("sessions")["sessions"]
    sizes = table_sizes(lab.lac_switch.address, ("l2tp_session", "pppoe_session", "l2tp_tunnel"))
    assert sizes == {"l2tp_session": 0, "pppoe_session": 0, "l2tp_tunnel": 0}, sizes
    assert lab.lac.api("counters")["l2tp"].get("tunnel down (peer dead)", 0) == dead_before + 1


def test_lossy_control_path_converges(tmp_path_factory):
    """10 % of the L2TP control messages lost on the transit link, both
    ways: the tunnel and every call still come up (retransmission).
    Retransmission budgets are sized for such a link: a message or its
    acknowledgement is lost 19 % of the time, so the default 5
    retransmissions run out for one of the run's ~170 reliable messages
    (0.19^6 each) in almost 1 % of runs, taking the tunnel down; 10 make
    that 0.19^11."""
    program_files("bng")
    lab = LacLnsLab(tmp_path_factory.mktemp("l2tp-lossy"), transit_loss=10,
                    lac={"l2tp": {"tunnel": {"host_name": "lac1", "hello_interval": 5, "max_retransmits": 10}}},
                    lns={"l2tp": {"tunnel": {"host_name": "lns1", "hello_interval": 10, "max_retransmits": 10}}})
    try:
        lab.start()
        e = lab.emulator("emu-lossy", "--sessions", "40", "--svlan", "10", "--cvlan", "1-40", "--duration", "2",
                         "--setup-timeout", "90", "--ping", lab.core_host_ip, "--mac-base", "02:75:00:00:00:00")
        assert e.wait(150) == 0, "".join(e.output[-10:])
        r = e.report()
        assert r["established"] == 40 and r["flaps"] == 0
        bridge = json.loads(lab.bridge_status.read_text())
        assert bridge["dropped"] > 0, bridge
        counters = {}
        for t in lab.controller.api("l2tp_tunnels")["tunnels"]:
            counters.update(t["counters"])
        assert counters.get("retransmit", 0) > 0 or any("retransmit" in k for k in counters), counters
    finally:
        lab.stop()

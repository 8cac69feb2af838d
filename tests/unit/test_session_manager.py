"""The session manager end to end against an in-memory switch and a
scripted CPE: discovery, LCP, PAP/CHAP, IPCP, the data-plane entries of an
UP session, teardown by PADT/LCP/echo timeout/admin, accounting records,
and a restart from the session store."""
from __future__ import annotations

import asyncio
import ipaddress
import struct
from pathlib import Path

import orjson
import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from bng_controller.aaa.base import AcctStatus, TerminateCause
from bng_controller.aaa.local import LocalAaa
from bng_controller.config import from_dict
from bng_controller.dataplane import BngTables
from bng_controller.ip_pool import PoolSet
from bng_controller.p4info_names import P4InfoNames
from bng_controller.session_manager import SessionManager
from bng_controller.session_store import SessionStore
from bng_controller.subscriber import State

from .fake_switch import FakeSwitch
from .scripted_cpe import CHAP, IPCP, LCP, PAP, ScriptedCpe

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "p4src" / "build" / "bng"
BNG_MAC = bytes.fromhex("02bb00000001")
ACCESS_PORT = 1


class Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


class RecordingAaa(LocalAaa):
    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.records = []

    async def account(self, rec):
        self.records.append(rec)


def names() -> P4InfoNames:
    p4info = text_format.Parse((BUILD / "bng.p4info.txtpb").read_text(), p4info_pb2.P4Info())
    return P4InfoNames(p4info)


def make(tmp_path: Path, auth=("chap-md5", "pap"), store: SessionStore | None = None, interim: int = 60,
         **extra):
    cfg = from_dict({
        "bng_mac": "02:bb:00:00:00:01", "access_ports": [ACCESS_PORT],
        "pools": {"default": {"prefixes": ["10.0.0.0/29"], "gateway": "10.0.0.1", "dns": ["192.0.2.53"]}},
        "ppp": {"auth": list(auth), "echo_interval": 10, "echo_failures": 3, "ipv6": False},
        "sessions": {"setup_timeout": 60}, **extra})
    aaa = RecordingAaa(data={"users": {"alice": {"password": "secret", "rate_down_kbps": 8000,
                                                 "session_timeout": 3600}},
                             "defaults": {"interim_interval": interim}})
    sw = FakeSwitch()
    n = names()
    clock = Clock()
    mgr = SessionManager(cfg, BngTables(n), sw, aaa, PoolSet(cfg.pools), store, b"k" * 32, clock=clock)
    return mgr, sw, aaa, clock, n


async def pump(mgr: SessionManager, sw: FakeSwitch, cpe: ScriptedCpe, first: list[bytes] | None = None,
               rounds: int = 40, drop=None) -> None:
    """Exchange frames until both sides are quiet."""
    to_bng = list(first or [])
    for _ in range(rounds):
        for f in to_bng:
            if drop is not None and drop(f):
                continue
            deliver(mgr, f)
        to_bng = []
        for _ in range(5):
            await asyncio.sleep(0)
        for frame, port in sw.take_sent():
            assert port == ACCESS_PORT
            to_bng += cpe.receive(frame)
        if not to_bng and not mgr._tasks:
            return


def deliver(mgr: SessionManager, frame: bytes) -> None:
    """What the data plane does with a CPE frame before the controller
    sees it: discovery and PPP control are punted with the line id."""
    etype = struct.unpack_from("!H", frame, 12)[0]
    s_vid = c_vid = 0
    if etype in (0x8100, 0x88A8):
        s_vid = struct.unpack_from("!H", frame, 14)[0] & 0xFFF
        etype = struct.unpack_from("!H", frame, 16)[0]
        if etype == 0x8100:
            c_vid = struct.unpack_from("!H", frame, 18)[0] & 0xFFF
            etype = struct.unpack_from("!H", frame, 20)[0]
    line = mgr.lines.get(ACCESS_PORT, s_vid, c_vid)
    if etype == 0x8863:
        mgr.on_discovery(ACCESS_PORT, frame)
    else:
        mgr.on_ppp_control(ACCESS_PORT, line.line_id if line and line.installed else 0, frame)


async def padr_of(mgr: SessionManager, sw: FakeSwitch, cpe: ScriptedCpe) -> bytes:
    """The CPE's PADI answered: its PADR, not yet delivered (for tests
    that lose or repeat it)."""
    mgr.on_discovery(ACCESS_PORT, cpe.padi())
    await asyncio.sleep(0)
    [(pado, _)] = sw.take_sent()
    [padr] = cpe.receive(pado)
    return padr


def table(sw: FakeSwitch, n: P4InfoNames, name: str):
    return sw.tables_named(n, name)


@pytest.mark.parametrize("auth", [("chap-md5", "pap"), ("pap",)])
def test_session_comes_up_and_installs_its_entries(tmp_path, auth):
    async def run():
        mgr, sw, aaa, clock, n = make(tmp_path, auth=auth)
        cpe = ScriptedCpe(b"\x02\xcc\0\0\0\x01", BNG_MAC, s_vid=100, c_vid=200)
        await pump(mgr, sw, cpe, [cpe.padi()])
        assert cpe.pado_tags[0x0102] == b"p4-bng" and cpe.pado_tags[0x0103] == b"hu01"
        assert len(cpe.pado_tags[0x0104]) == 20
        assert cpe.session_id != 0 and cpe.pads_tags[0x0103] == b"hu01"
        assert cpe.auth_ok is True
        assert (CHAP if auth[0] == "chap-md5" else PAP) in {p for p, _ in cpe.seen}
        assert cpe.ipcp_up and ipaddress.IPv4Address(cpe.ip) == ipaddress.IPv4Address("10.0.0.2")
        assert cpe.dns == ipaddress.IPv4Address("192.0.2.53").packed
        [sub] = mgr.subs.values()
        assert sub.state == State.UP and sub.username == "alice"
        assert len(table(sw, n, "line_map")) == 1
        assert len(table(sw, n, "pppoe_session")) == 1
        assert len(table(sw, n, "pppoe_up_v4")) == 1
        [down] = table(sw, n, "ipv4_session")
        action, params = mgr.tables.b.action_params(down)
        assert action == "to_pppoe" and params["s_vid"] == 100 and params["c_vid"] == 200
        assert params["s_tpid"] == 0x88A8 and params["pppoe_session_id"] == cpe.session_id
        assert params["mss_clamp"] == 1452
        assert params["max_len"] == 1492 == sub.link.lcp_neg.peer_mru     # larger: PACKET_TOO_BIG
        assert mgr.by_address(ipaddress.IPv4Address(cpe.ip)) is sub
        assert mgr.by_address(ipaddress.IPv4Address("10.0.0.99")) is None
        # what the controller sent into the session (fragments) adds to the switch's counts
        before = (await mgr.read_counters([sub]))[sub.sess_idx]
        sub.count_sent_by_controller(2, 1500)
        after = (await mgr.read_counters([sub]))[sub.sess_idx]
        assert (after.packets_out - before.packets_out, after.octets_out - before.octets_out) == (2, 1500)
        assert after.octets_in == before.octets_in
        meter = sw.meters[(n.meter("session_meter_down").preamble.id, sub.sess_idx)]
        assert meter.config.cir == 8000 * 1000 // 8
        assert [r.status for r in aaa.records] == [AcctStatus.START]
        assert sub.session_deadline == pytest.approx(clock.t + 3600)
    asyncio.run(run())


def test_padt_from_client_removes_everything(tmp_path):
    async def run():
        mgr, sw, aaa, clock, n = make(tmp_path)
        cpe = ScriptedCpe(b"\x02\xcc\0\0\0\x02", BNG_MAC)
        await pump(mgr, sw, cpe, [cpe.padi()])
        [sub] = mgr.subs.values()
        idx = sub.sess_idx
        counters = n.counter("session_up").preamble.id
        sw.counters[(counters, idx)] = (7, 700)
        await pump(mgr, sw, cpe, [cpe.padt()])
        assert not mgr.subs
        lines = table(sw, n, "line_map")
        assert len(lines) == 1 and len(sw.entries) == 1          # only the line remains
        assert mgr.pools.pool(None).free == 5
        assert idx not in mgr.sess_idx.used
        stop = aaa.records[-1]
        assert stop.status == AcctStatus.STOP and stop.terminate_cause == TerminateCause.USER_REQUEST
        assert stop.counters.packets_in == 7 and stop.counters.octets_in == 700
        assert str(stop.framed_ip) == "10.0.0.2"
        assert not cpe.padt_received          # the client left first: no PADT back
    asyncio.run(run())


def test_wrong_password_is_refused_and_cleaned_up(tmp_path):
    async def run():
        mgr, sw, aaa, clock, n = make(tmp_path)
        cpe = ScriptedCpe(b"\x02\xcc\0\0\0\x03", BNG_MAC, password="wrong")
        await pump(mgr, sw, cpe, [cpe.padi()])
        assert cpe.auth_ok is False and cpe.term_req_received and cpe.padt_received
        assert not mgr.subs and not aaa.records
        assert mgr.counters["auth rejected"] == 1
        assert len(sw.entries) == 1                                # the line only
    asyncio.run(run())


def test_echo_timeout_tears_down_a_dead_peer(tmp_path):
    async def run():
        mgr, sw, aaa, clock, n = make(tmp_path)
        cpe = ScriptedCpe(b"\x02\xcc\0\0\0\x04", BNG_MAC)
        await pump(mgr, sw, cpe, [cpe.padi()])
        [sub] = mgr.subs.values()
        cpe.answer_echo = False
        for _ in range(5):                        # 3 unanswered echoes, then the 4th tick
            clock.t += 10.1
            mgr._on_timer(sub)
            await pump(mgr, sw, cpe)
        assert not mgr.subs
        assert aaa.records[-1].terminate_cause == TerminateCause.LOST_CARRIER
        assert sum(1 for p, c in cpe.seen if p == LCP and c == 9) == 3
    asyncio.run(run())


def test_admin_clear_sends_terminate_then_padt(tmp_path):
    async def run():
        mgr, sw, aaa, clock, n = make(tmp_path)
        cpe = ScriptedCpe(b"\x02\xcc\0\0\0\x05", BNG_MAC)
        await pump(mgr, sw, cpe, [cpe.padi()])
        [sub] = mgr.subs.values()
        mgr.close(sub, "cleared by operator", TerminateCause.ADMIN_RESET)
        await pump(mgr, sw, cpe)
        assert cpe.term_req_received and cpe.padt_received and not mgr.subs
        assert aaa.records[-1].terminate_cause == TerminateCause.ADMIN_RESET
    asyncio.run(run())


def test_retransmitted_padr_gets_the_same_session(tmp_path):
    async def run():
        mgr, sw, aaa, clock, n = make(tmp_path)
        cpe = ScriptedCpe(b"\x02\xcc\0\0\0\x06", BNG_MAC)
        padr = await padr_of(mgr, sw, cpe)
        mgr.on_discovery(ACCESS_PORT, padr)
        mgr.on_discovery(ACCESS_PORT, padr)         # PADS lost: the CPE sends PADR again
        for _ in range(10):
            await asyncio.sleep(0)
        pads = [f for f, _ in sw.take_sent() if f[12:14] == b"\x88\x63"]
        assert len(pads) == 2 and pads[0][16:18] == pads[1][16:18]
        assert len(mgr.subs) == 1
    asyncio.run(run())


def test_padr_retransmitted_late_gives_lcp_its_full_max_configure(tmp_path):
    """Every PADS lost for longer than LCP's Restart timer times
    Max-Configure: the CPE's later PADR gets the same session, and LCP's
    attempts count from the PADS that arrives, so the session comes up
    (it used to give up with PADT just as the CPE started LCP)."""
    async def run():
        mgr, sw, aaa, clock, n = make(tmp_path)
        cpe = ScriptedCpe(b"\x02\xcc\0\0\0\x0a", BNG_MAC)
        padr = await padr_of(mgr, sw, cpe)
        mgr.on_discovery(ACCESS_PORT, padr)
        for _ in range(10):
            await asyncio.sleep(0)
        [sub] = mgr.subs.values()
        lcp = sub.link.lcp
        for _ in range(lcp.max_configure - 1):        # PADS and every Configure-Request lost
            clock.t += lcp.restart_time
            mgr._on_timer(sub)
        sw.take_sent()
        assert lcp.restart_count == 0
        mgr.on_discovery(ACCESS_PORT, padr)           # the CPE asks again
        sent = [f for f, _ in sw.take_sent()]
        assert [f[12:14] for f in sent] == [b"\x88\x63", b"\x88\x64"]   # PADS, then LCP right behind
        assert lcp.restart_count == lcp.max_configure - 1
        clock.t += lcp.restart_time                   # the timeout that used to end it
        mgr._on_timer(sub)
        assert sub.live and mgr.counters.get("pppoe PADR retransmitted") == 1
        to_bng = [f for frame in sent for f in cpe.receive(frame)]
        await pump(mgr, sw, cpe, to_bng)
        assert sub.state == State.UP and not cpe.padt_received
    asyncio.run(run())


def test_padr_with_forged_cookie_is_dropped(tmp_path):
    async def run():
        mgr, sw, aaa, clock, n = make(tmp_path)
        cpe = ScriptedCpe(b"\x02\xcc\0\0\0\x07", BNG_MAC)
        cpe.ac_mac = BNG_MAC
        mgr.on_discovery(ACCESS_PORT, cpe.padr(cookie=b"\0" * 20))
        await asyncio.sleep(0)
        assert not sw.take_sent() and not mgr.subs
        assert mgr.counters["pppoe dropped: padr with bad or stale cookie"] == 1
    asyncio.run(run())


def test_pool_exhaustion_refuses_the_session(tmp_path):
    async def run():
        mgr, sw, aaa, clock, n = make(tmp_path)
        cpes = [ScriptedCpe(bytes([2, 0xcc, 0, 0, 1, i]), BNG_MAC, host_uniq=bytes([i])) for i in range(7)]
        for c in cpes:
            await pump(mgr, sw, c, [c.padi()])
        up = [c for c in cpes if c.ipcp_up]
        assert len(up) == 5                       # a /29 without network, broadcast, gateway
        assert mgr.counters["pool exhausted"] == 2
        assert sum(1 for s in mgr.subs.values() if s.state == State.UP) == 5
    asyncio.run(run())


def test_restart_restores_sessions_and_their_entries(tmp_path):
    async def run():
        store = SessionStore(tmp_path / "s.db")
        mgr, sw, aaa, clock, n = make(tmp_path, store=store)
        cpe = ScriptedCpe(b"\x02\xcc\0\0\0\x08", BNG_MAC, s_vid=7, c_vid=9)
        await pump(mgr, sw, cpe, [cpe.padi()])
        [sub] = mgr.subs.values()
        mgr.flush()
        before = sorted(e.SerializeToString(deterministic=True) for e in mgr.desired_session_entries())
        store.close()
        store2 = SessionStore(tmp_path / "s.db")
        mgr2, sw2, aaa2, clock2, _ = make(tmp_path, store=store2)
        [snap] = store2.load()
        sub2 = mgr2.restore(snap)
        after = sorted(e.SerializeToString(deterministic=True) for e in mgr2.desired_session_entries())
        assert before == after
        assert sub2.state == State.UP and sub2.ipv4 == sub.ipv4 and sub2.username == "alice"
        assert sub2.link.lcp_neg.our_magic == sub.link.lcp_neg.our_magic
        assert sub2.transport.line.s_tpid == 0x88A8
        assert mgr2.pools.pool(None).free == 4
        # keepalive carries on with the old magic number
        clock2.t += 10.1
        mgr2._on_timer(sub2)
        [(frame, _)] = sw2.take_sent()
        assert frame.endswith(struct.pack("!I", sub.link.lcp_neg.our_magic))
        # the restored session still answers its CPE
        cpe.ac_mac = BNG_MAC
        deliver_line = mgr2.lines.get(ACCESS_PORT, 7, 9)
        assert deliver_line.line_id == sub.transport.line.line_id
    asyncio.run(run())


def test_ipv6cp_rejected_while_ipcp_negotiates_keeps_the_session(tmp_path):
    """A CPE without IPv6 Protocol-Rejects IPv6CP before IPCP is open: the
    link must carry on with IPCP, not close for lack of a network protocol."""
    async def run():
        mgr, sw, aaa, clock, n = make(tmp_path, ppp={"auth": ["pap"], "ipv6": True, "echo_interval": 10})
        cpe = ScriptedCpe(b"\x02\xcc\0\0\0\x09", BNG_MAC)
        await pump(mgr, sw, cpe, [cpe.padi()])
        assert cpe.ipcp_up
        [sub] = mgr.subs.values()
        assert sub.state == State.UP and sub.link.ipv6cp.state.name == "STOPPED"
    asyncio.run(run())


def test_ipcp_renegotiation_keeps_the_entries(tmp_path):
    """A CPE whose IPCP Configure-Ack got lost re-sends its request while
    the BNG is Opened: RFC 1661 renegotiates, but the address cannot change,
    so the data plane keeps forwarding (no entry is removed)."""
    async def run():
        mgr, sw, aaa, clock, n = make(tmp_path)
        cpe = ScriptedCpe(b"\x02\xcc\0\0\0\x0a", BNG_MAC)
        await pump(mgr, sw, cpe, [cpe.padi()])
        before = len(sw.entries)
        writes = len(sw.writes)
        await pump(mgr, sw, cpe, [cpe.ipcp_request()])      # the retransmitted request
        assert cpe.ipcp_up and len(sw.entries) == before
        assert all(u.type != 3 for w in sw.writes[writes:] for u in w)   # no DELETE
        assert mgr.counters["ncp renegotiation"] == 1
    asyncio.run(run())


def test_duplicate_configure_request_in_opened_is_reacked_not_renegotiated(tmp_path):
    """A duplicated LCP Configure-Request (same identifier, same options)
    arriving after LCP opened is acked again; LCP stays Opened, and the
    session is not re-authenticated."""
    async def run():
        _, mgr, sw, aaa, clock, cpe, sub = await one_session(tmp_path, 0x0b)
        first_lcp = cpe.lcp_request()                             # a request with a fresh id...
        await pump(mgr, sw, cpe, [first_lcp])                     # ...renegotiates (RFC 1661)
        assert mgr.counters["auth accepted"] == 2
        assert sub.link.lcp.reacked == 0
        await pump(mgr, sw, cpe, [first_lcp])                     # the same request again: re-acked
        assert sub.link.lcp.reacked == 1 and sub.link.lcp.state.name == "OPENED"
        assert mgr.counters["auth accepted"] == 2
    asyncio.run(run())


def test_lcp_renegotiation_reauthenticates_and_keeps_address_and_accounting(tmp_path):
    async def run():
        mgr, sw, aaa, clock, n = make(tmp_path)
        cpe = ScriptedCpe(b"\x02\xcc\0\0\0\x0c", BNG_MAC)
        await pump(mgr, sw, cpe, [cpe.padi()])
        [sub] = mgr.subs.values()
        addr, entries = sub.ipv4, len(sw.entries)
        cpe.ipcp_acked_by_peer = cpe.ipcp_acked_peer = False
        await pump(mgr, sw, cpe, [cpe.lcp_request()])             # the CPE restarts LCP
        assert mgr.counters["auth accepted"] == 2                 # authenticated again
        assert sub.state == State.UP and sub.ipv4 == addr and cpe.ipcp_up
        assert ipaddress.IPv4Address(cpe.ip) == addr
        assert len(sw.entries) == entries
        assert [r.status for r in aaa.records] == [AcctStatus.START]  # one accounting session
        assert mgr.pools.pool(None).free == 4
    asyncio.run(run())


def test_an_lcp_renegotiation_to_another_mru_rewrites_mss_clamp_and_max_len(tmp_path):
    """The CPE restarts LCP asking for a smaller MRU: the session's entries
    are modified in place (same keys, new mss_clamp and max_len), so that
    downstream packets between the two sizes are not sent for it to drop."""
    async def run():
        mgr, sw, aaa, clock, n = make(tmp_path)
        cpe = ScriptedCpe(b"\x02\xcc\0\0\0\x0d", BNG_MAC)
        await pump(mgr, sw, cpe, [cpe.padi()])
        [sub] = mgr.subs.values()
        entries = len(sw.entries)
        cpe.mru = 1400
        cpe.ipcp_acked_by_peer = cpe.ipcp_acked_peer = False
        await pump(mgr, sw, cpe, [cpe.lcp_request()])
        assert sub.state == State.UP and cpe.ipcp_up and sub.link.lcp_neg.peer_mru == 1400
        assert len(sw.entries) == entries
        [down] = table(sw, n, "ipv4_session")
        assert mgr.tables.b.action_params(down)[1]["max_len"] == 1400
        assert mgr.tables.b.action_params(down)[1]["mss_clamp"] == 1360
        [up] = table(sw, n, "pppoe_session")
        assert mgr.tables.b.action_params(up)[1]["mss_clamp"] == 1360
        assert mgr.counters["entries rewritten for a new mru"] == 1
        # the same MRU again rewrites nothing
        cpe.ipcp_acked_by_peer = cpe.ipcp_acked_peer = False
        await pump(mgr, sw, cpe, [cpe.lcp_request()])
        assert mgr.counters["entries rewritten for a new mru"] == 1
    asyncio.run(run())


def test_verdict_on_credentials_from_before_an_lcp_renegotiation_answers_nothing(tmp_path):
    """The CPE restarts LCP while AAA decides on its first CHAP Response:
    authentication starts over (new Challenge), and the late verdict on the
    first Response must not answer the second one. Here the second Response
    carries a wrong password: it is rejected, where the stale Accept used
    to answer it with Success unchecked."""
    async def run():
        mgr, sw, aaa, clock, n = make(tmp_path, auth=("chap-md5",))
        gate, asked = asyncio.Event(), []
        checked = aaa.authenticate

        async def held(req):
            asked.append(req)
            await gate.wait()
            return await checked(req)
        aaa.authenticate = held
        cpe = ScriptedCpe(b"\x02\xcc\0\0\0\x0e", BNG_MAC)
        await pump(mgr, sw, cpe, [cpe.padi()])
        assert len(asked) == 1                                   # first Response with AAA
        cpe.password = "not-the-secret"
        await pump(mgr, sw, cpe, [cpe.lcp_request()])            # LCP restarts meanwhile
        assert len(asked) == 2 and asked[0].challenge != asked[1].challenge   # a new exchange...
        assert asked[1].chap_id == (asked[0].chap_id + 1) & 0xFF                # ...a new identifier
        gate.set()
        await pump(mgr, sw, cpe)
        assert mgr.counters.get("auth verdict for a superseded attempt") == 1
        assert mgr.counters.get("auth rejected") == 1 and mgr.counters.get("auth accepted", 0) == 0
        assert cpe.auth_ok is False and (CHAP, 3) not in cpe.seen
        assert not mgr.subs
    asyncio.run(run())


def test_pap_request_with_a_new_identifier_after_the_verdict_is_answered(tmp_path):
    """RFC 1334: a CPE changes the Identifier of every Authenticate-Request.
    If our Ack was late, its next request (new id) must get the Ack again."""
    async def run():
        mgr, sw, aaa, clock, n = make(tmp_path, auth=("pap",))
        cpe = ScriptedCpe(b"\x02\xcc\0\0\0\x0d", BNG_MAC)
        await pump(mgr, sw, cpe, [cpe.padi()])
        assert cpe.auth_ok
        cpe.auth_ok = None
        req = cpe.pap_request()
        await pump(mgr, sw, cpe, [req])
        assert cpe.auth_ok is True                          # acked again
        acks = [i for p, c in cpe.seen if p == PAP and c == 2 for i in [0]]
        assert len(acks) == 2
        assert mgr.counters["auth accepted"] == 1           # AAA asked once
    asyncio.run(run())


def test_ipcp_ack_waits_for_the_entries_when_the_peer_acks_last(tmp_path):
    """The peer's IPCP opens on the later of our Ack and its own Ack
    received. Here the CPE's Ack of our request is held back until we have
    acked its request: our Ack is then the one that opens the CPE's IPCP
    (we only open later, on its Ack), so it must not leave before the
    session's IPv4 entries are in, or the CPE's first packets are dropped."""
    async def run():
        mgr, sw, aaa, clock, n = make(tmp_path)
        cpe = ScriptedCpe(b"\x02\xcc\0\0\0\x0c", BNG_MAC)
        acks_sent_with_entries: list[bool] = []
        send = sw.packet_out

        def packet_out(frame: bytes, port: int) -> None:
            if struct.unpack_from("!HB", frame, 20) == (IPCP, 2):
                acks_sent_with_entries.append(len(table(sw, n, "ipv4_session")) == 1)
            send(frame, port)
        sw.packet_out = packet_out
        deferred: list[bytes] = []

        def defer_cpe_ack(f: bytes) -> bool:
            """The CPE's Ack of our request waits until we have acked its."""
            if struct.unpack_from("!HB", f, 20) == (IPCP, 2) and not acks_sent_with_entries:
                deferred.append(f)
                return True
            return False
        await pump(mgr, sw, cpe, [cpe.padi()], drop=defer_cpe_ack)
        assert deferred and cpe.ipcp_up                   # the CPE is open, we are not yet
        await pump(mgr, sw, cpe, deferred)
        assert acks_sent_with_entries == [True], acks_sent_with_entries
        [sub] = mgr.subs.values()
        assert cpe.ipcp_up and sub.state == State.UP and sub.link.ipcp.state.name == "OPENED"
        assert [r.status for r in aaa.records] == [AcctStatus.START]
    asyncio.run(run())


async def one_session(tmp_path: Path, mac_last: int, store: bool = False, cpe_kw: dict | None = None,
                      **make_kw):
    """One session up (CPE MAC 02:cc:00:00:00:<mac_last>), on a manager
    with a session store if `store`: (store or None, mgr, sw, aaa, clock,
    cpe, sub)."""
    st = SessionStore(tmp_path / "s.db") if store else None
    mgr, sw, aaa, clock, n = make(tmp_path, store=st, **make_kw)
    cpe = ScriptedCpe(b"\x02\xcc\0\0\0" + bytes([mac_last]), BNG_MAC, **(cpe_kw or {}))
    await pump(mgr, sw, cpe, [cpe.padi()])
    [sub] = mgr.subs.values()
    return st, mgr, sw, aaa, clock, cpe, sub


def test_a_coa_applies_its_interim_interval(tmp_path):
    """A CoA's Acct-Interim-Interval was accepted and ACKed but never
    applied: the session kept its old interval."""
    from bng_controller.aaa.base import AuthResult, DynAuthRequest

    async def run():
        _, mgr, sw, aaa, clock, cpe, sub = await one_session(tmp_path, 0x09)
        assert sub.next_interim == pytest.approx(clock.t + 60)
        clock.t += 10
        answer = await mgr.dynauth(DynAuthRequest(kind="coa", acct_session_id=sub.acct_session_id,
                                                  new_auth=AuthResult(accepted=True, interim_interval=900)))
        assert answer is None
        assert sub.auth.interim_interval == 900 and sub.next_interim == pytest.approx(clock.t + 900)
    asyncio.run(run())


def test_auth_snapshots_keep_every_class_and_read_the_old_single_one():
    from bng_controller.aaa.base import AuthResult
    from bng_controller.session_manager import auth_from_dict, auth_to_dict
    a = AuthResult(accepted=True, classes=(b"A", b"\x00B"))
    assert auth_from_dict(orjson.loads(orjson.dumps(auth_to_dict(a)))).classes == (b"A", b"\x00B")
    old = auth_to_dict(AuthResult(accepted=True))
    del old["classes"]
    assert auth_from_dict({**old, "class_attr": "00ff"}).classes == (b"\x00\xff",)
    assert auth_from_dict({**old, "class_attr": None}).classes == ()


def test_a_disconnect_matches_nas_port_too(tmp_path):
    from bng_controller.aaa.base import DynAuthError, DynAuthRequest

    async def run():
        _, mgr, sw, aaa, clock, cpe, sub = await one_session(tmp_path, 0x0a)
        other = sub.line_info.line_id + 1
        assert await mgr.dynauth(DynAuthRequest(kind="disconnect", username="alice", nas_port=other)) \
            == DynAuthError.SESSION_CONTEXT_NOT_FOUND
        assert await mgr.dynauth(DynAuthRequest(kind="disconnect", username="alice",
                                                nas_port=sub.line_info.line_id)) is None
    asyncio.run(run())


def test_a_stop_whose_counters_cannot_be_read_carries_the_last_reported_totals(tmp_path):
    """With the data plane unreadable at teardown the Stop said 0 octets,
    below the session's own Interims: billed traffic undone."""
    from bng_controller.aaa.base import SessionCounters

    async def run():
        _, mgr, sw, aaa, clock, cpe, sub = await one_session(tmp_path, 0x0b)
        await mgr._accounting(sub, AcctStatus.INTERIM, SessionCounters(octets_in=5000, packets_in=10))

        async def broken_read(*entities):
            raise ConnectionError("switch gone")
        sw.read = broken_read
        mgr.close(sub, "cleared by operator", TerminateCause.ADMIN_RESET)
        await pump(mgr, sw, cpe)
        stop = aaa.records[-1]
        assert stop.status is AcctStatus.STOP
        assert (stop.counters.octets_in, stop.counters.packets_in) == (5000, 10)
    asyncio.run(run())


@pytest.mark.parametrize("given,floor,used", [(1, 60, 60), (59, 60, 60), (600, 60, 600), (2, 1, 2)])
def test_an_interim_interval_below_the_floor_is_raised(tmp_path, given, floor, used):
    """RFC 2869 5.16: Acct-Interim-Interval MUST NOT be below 60. A server's
    1 made every session send an Interim at every accounting tick; a lab
    may lower the floor (accounting.min_interim_interval)."""
    async def run():
        _, mgr, sw, aaa, clock, cpe, sub = await one_session(
            tmp_path, 0x0c, interim=given, accounting={"min_interim_interval": floor})
        assert sub.next_interim == pytest.approx(clock.t + used)
    asyncio.run(run())


def test_a_coa_that_fails_on_one_of_its_sessions_is_undone_on_the_others(tmp_path):
    """RFC 5176 2.3: a CoA is applied whole or not at all. One matching two
    sessions (by User-Name) whose second rate change failed was NAK'd 506
    with the first session's new rates left in force."""
    from bng_controller.aaa.base import AuthResult, DynAuthError, DynAuthRequest

    async def run():
        mgr, sw, aaa, clock, n = make(tmp_path)
        for mac in (b"\x02\xcc\0\0\0\x0d", b"\x02\xcc\0\0\0\x0e"):
            cpe = ScriptedCpe(mac, BNG_MAC)
            await pump(mgr, sw, cpe, [cpe.padi()])
        subs = list(mgr.subs.values())
        assert len(subs) == 2 and all(s.rate_down_kbps == 8000 for s in subs)
        change = mgr.change_rates
        calls = []

        async def failing_second(sub, up, down):
            calls.append((sub.sid, up, down))
            if len(calls) == 2:
                raise RuntimeError("meter write refused")
            await change(sub, up, down)
        mgr.change_rates = failing_second
        answer = await mgr.dynauth(DynAuthRequest(kind="coa", username="alice",
                                                  new_auth=AuthResult(accepted=True, rate_down_kbps=1000,
                                                                      rate_up_kbps=500, session_timeout=10)))
        assert answer == DynAuthError.RESOURCES_UNAVAILABLE
        assert [(s.rate_down_kbps, s.auth.session_timeout) for s in subs] == [(8000, 3600), (8000, 3600)]
        for s in subs:
            meter = sw.meters[(n.meter("session_meter_down").preamble.id, s.sess_idx)]
            assert meter.config.cir == 8000 * 1000 // 8
    asyncio.run(run())


def test_a_store_write_that_fails_loses_nothing_and_does_not_wedge_later_ones(tmp_path):
    """The database refused a flush (locked by a backup, disk full): the
    rows were taken out before the commit and lost, and the open transaction
    made every later flush fail until a restart. Now the changes wait for
    the next flush, which writes them."""
    import sqlite3

    store = SessionStore(tmp_path / "s.db")
    store.put(1, {"sid": 1, "v": "a"})
    store.put(2, {"sid": 2, "v": "b"})
    store.flush()
    store.put(1, {"sid": 1, "v": "a2"})
    store.delete(2)
    locker = sqlite3.connect(str(tmp_path / "s.db"), isolation_level=None, timeout=0)
    locker.execute("BEGIN IMMEDIATE")                  # another writer holds the database
    store.db.execute("PRAGMA busy_timeout = 0")
    with pytest.raises(sqlite3.OperationalError):
        store.flush()
    assert not store.db.in_transaction and store.pending == 2
    store.put(3, {"sid": 3, "v": "c"})
    locker.execute("ROLLBACK")
    store.flush()
    assert store.pending == 0
    assert sorted((r["sid"], r["v"]) for r in store.load()) == [(1, "a2"), (3, "c")]
    locker.close()
    store.close()


def test_the_manager_counts_a_failed_store_write_and_carries_on(tmp_path):
    import sqlite3

    async def run():
        store, mgr, sw, aaa, clock, cpe, sub = await one_session(tmp_path, 0x0b, store=True)
        locker = sqlite3.connect(str(tmp_path / "s.db"), isolation_level=None, timeout=0)
        locker.execute("BEGIN IMMEDIATE")
        store.db.execute("PRAGMA busy_timeout = 0")
        mgr.flush()
        mgr.flush()
        assert mgr.counters["session store write failed"] == 2 and store.pending == 1
        locker.execute("ROLLBACK")
        mgr.flush()
        assert store.pending == 0 and store.count() == 1
        locker.close()
        store.close()
    asyncio.run(run())


def test_restore_refuses_a_colliding_or_unreadable_session_and_leaves_nothing_behind(tmp_path):
    """A stored session that could not be restored kept its session index
    and PPPoE id reserved (a pool renamed in the config: 20k sessions meant
    20k indices gone), and two stored sessions with one address were both
    taken, the second's entries sending the first's traffic to it."""
    from bng_controller.session_manager import RestoreRefused

    async def run():
        store, mgr, sw, aaa, clock, cpe, sub = await one_session(tmp_path, 0x0c, store=True,
                                                                  cpe_kw={"s_vid": 7, "c_vid": 9})
        mgr.flush()
        [snap] = store.load()
        store.close()
        mgr2, sw2, aaa2, clock2, _ = make(tmp_path)
        renamed = orjson.loads(orjson.dumps(snap))
        renamed["pool"] = "gone"
        with pytest.raises(Exception, match="gone"):
            mgr2.restore(renamed)
        extra = orjson.loads(orjson.dumps(snap))
        extra["link"]["a_field_from_a_later_version"] = 1
        with pytest.raises(TypeError):
            mgr2.restore(extra)
        assert not mgr2.sess_idx.used and not mgr2.subs and not mgr2.by_ipv4
        assert all(not line.sessions for line in mgr2.lines.by_key.values())
        first = mgr2.restore(orjson.loads(orjson.dumps(snap)))
        assert first is not None and mgr2.sess_idx.used == {snap["sess_idx"]}
        twin = orjson.loads(orjson.dumps(snap))
        twin.update(sid=snap["sid"] + 1, sess_idx=snap["sess_idx"] + 1, acct_session_id="other")
        twin["transport"]["session_id"] += 1
        with pytest.raises(RestoreRefused, match="IPv4"):
            mgr2.restore(twin)
        assert mgr2.sess_idx.used == {snap["sess_idx"]} and list(mgr2.subs.values()) == [first]
        assert mgr2.by_ipv4[first.ipv4] is first
    asyncio.run(run())


def test_what_a_coa_and_a_closed_ncp_change_is_stored(tmp_path):
    """A CoA's Session-Timeout and Idle-Timeout were applied but not stored
    (a restart gave the session its old limits back), and an NCP that closed
    while the link stayed left its entries in the stored row (a restart put
    them back)."""
    from bng_controller.aaa.base import AuthResult, DynAuthRequest

    async def run():
        store, mgr, sw, aaa, clock, cpe, sub = await one_session(tmp_path, 0x0d, store=True)
        mgr.flush()
        answer = await mgr.dynauth(DynAuthRequest(
            kind="coa", acct_session_id=sub.acct_session_id,
            new_auth=AuthResult(accepted=True, session_timeout=120, idle_timeout=300)))
        assert answer is None
        mgr.flush()
        [snap] = store.load()
        assert snap["auth"]["session_timeout"] == 120 and snap["auth"]["idle_timeout"] == 300
        assert "ipv4" in snap["installed"]
        await mgr._network_down(sub, IPCP)
        mgr.flush()
        [snap] = store.load()
        assert "ipv4" not in snap["installed"]
        store.close()
    asyncio.run(run())


def test_accounting_totals_survive_a_switch_that_counts_from_zero_again(tmp_path):
    """A pushed pipeline (a restarted switch) counts from zero: the next
    Interim and the Stop carried totals below the Interims before, undoing
    traffic already billed. Now they go on from the totals last reported,
    also across a controller restart (the store keeps them)."""
    async def run():
        store, mgr, sw, aaa, clock, cpe, sub = await one_session(tmp_path, 0x0e, store=True)
        up = mgr.tables.names.counter("session_up").preamble.id
        down = mgr.tables.names.counter("session_down").preamble.id
        sw.counters[(up, sub.sess_idx)] = (10, 5000)
        sw.counters[(down, sub.sess_idx)] = (20, 9000)
        got = (await mgr.read_counters([sub]))[sub.sess_idx]
        await mgr._accounting(sub, AcctStatus.INTERIM, got)
        sw.counters.clear()                          # the switch starts again from zero
        assert mgr.counters_lost() == 1
        sw.counters[(up, sub.sess_idx)] = (1, 100)
        got = (await mgr.read_counters([sub]))[sub.sess_idx]
        assert (got.packets_in, got.octets_in, got.packets_out, got.octets_out) == (11, 5100, 20, 9000)
        await mgr._accounting(sub, AcctStatus.INTERIM, got)
        mgr.flush()
        [snap] = store.load()
        store.close()
        # the controller restarts too; the switch kept counting (pipeline kept)
        mgr2, sw2, aaa2, clock2, _ = make(tmp_path)
        sub2 = mgr2.restore(snap)
        assert sub2.reported.octets_in == 5100 and sub2.counter_base.octets_in == 5000
        sw2.counters[(up, sub2.sess_idx)] = (2, 300)
        mgr2.close(sub2, "cleared by operator", TerminateCause.ADMIN_RESET)
        await pump(mgr2, sw2, cpe)
        stop = aaa2.records[-1]
        assert stop.status is AcctStatus.STOP
        assert (stop.counters.packets_in, stop.counters.octets_in, stop.counters.octets_out) == (12, 5300, 9000)
    asyncio.run(run())


def test_a_new_acct_session_id_is_never_a_restored_sessions(tmp_path):
    """Acct-Session-Id is the start second and a count from 0: a controller
    restarted within the second, or after its clock stepped back, handed a
    restored session's id to a new one (a CoA then hit the wrong one)."""
    async def run():
        mgr, sw, aaa, clock, n = make(tmp_path)
        taken = f"{mgr._boot}{1:08x}"
        mgr.by_acct[taken] = object()
        assert mgr._new_acct_id() == f"{mgr._boot}{2:08x}"
    asyncio.run(run())


def test_a_stored_session_that_is_not_restored_gets_its_accounting_stop(tmp_path):
    """A stored row dropped at restore (refused, or unreadable) left its
    session open at the AAA server for ever, which then refused the
    subscriber's next login where it limits simultaneous sessions."""
    from bng_controller.aaa.base import SessionCounters

    async def run():
        store, mgr, sw, aaa, clock, cpe, sub = await one_session(tmp_path, 0x0f, store=True)
        await mgr._accounting(sub, AcctStatus.INTERIM, SessionCounters(octets_in=700, packets_in=7))
        mgr.flush()
        [snap] = store.load()
        store.close()
        mgr2, sw2, aaa2, clock2, _ = make(tmp_path)
        broken = orjson.loads(orjson.dumps(snap))
        broken["line_info"]["a_field_from_a_later_version"] = 1
        broken["auth"] = {"nonsense": True}
        for s in (snap, broken):
            await mgr2.send_unrestored_stop(s)
        for stop in aaa2.records:
            assert stop.status is AcctStatus.STOP and stop.acct_session_id == sub.acct_session_id
            assert stop.username == "alice" and stop.terminate_cause is TerminateCause.NAS_ERROR
            assert (stop.counters.octets_in, stop.counters.packets_in) == (700, 7)
            assert stop.client_mac == sub.transport.calling_station and stop.framed_ip == sub.ipv4
        assert len(aaa2.records) == 2
        assert aaa2.records[0].line == sub.line_info and aaa2.records[1].line.port == sub.line_info.port
        await mgr2.send_unrestored_stop({"sid": 9})              # nothing to close
        assert len(aaa2.records) == 2
    asyncio.run(run())


def test_a_store_from_a_later_version_is_refused_whole(tmp_path):
    """The store had no format version: a controller rolled back after an
    upgrade read newer snapshots as its own and dropped every session it
    could not parse, one by one."""
    from bng_controller.session_store import FORMAT, StoreTooNew
    store = SessionStore(tmp_path / "s.db")
    assert store.get_meta("format") == str(FORMAT)
    store.set_meta("format", str(FORMAT + 1))
    store.close()
    with pytest.raises(StoreTooNew, match="move the file away"):
        SessionStore(tmp_path / "s.db")


def test_an_accounting_start_waits_for_its_session_to_be_stored(tmp_path):
    """A crash between a session's Accounting-Start and the store's next
    flush left the session open at the AAA server for ever: the restarted
    controller knew nothing of it, so no Stop could follow. The Start now
    goes out once the session's row is on disk."""
    async def run():
        store = SessionStore(tmp_path / "s.db")
        mgr, sw, aaa, clock, n = make(tmp_path, store=store)
        mgr.flushes_itself = True                    # as the controller's flush loop sets it
        cpe = ScriptedCpe(b"\x02\xcc\0\0\0\x10", BNG_MAC)
        await pump(mgr, sw, cpe, [cpe.padi()])
        [sub] = mgr.subs.values()
        assert sub.state == State.UP and [r.status for r in aaa.records] == []
        assert store.count() == 0
        mgr.flush()
        for _ in range(5):
            await asyncio.sleep(0)
        assert store.count() == 1 and [r.status for r in aaa.records] == [AcctStatus.START]
        store.close()
    asyncio.run(run())

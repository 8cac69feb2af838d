"""The LAC's switch of an authenticated PPPoE subscriber into an L2TP call
(l2tp/service.py, lac_switch), on a stand-in controller whose LNSes never
answer: each LNS gets `lac_call_timeout`, not the tunnel's 31 s of SCCRQ
retransmissions that outlived the subscriber's own authentication timer
(so the second LNS was never tried); one that let a call time out is tried
last for `lac_dead_time`; and a subscriber who leaves while its call is
being set up has that call cleared at once."""
from __future__ import annotations

import asyncio
from types import SimpleNamespace

from bng_controller.aaa.base import AuthMethod, AuthResult, TunnelSpec
from bng_controller.l2tp.service import L2tpService
from bng_controller.ppp.auth import Credentials

LNS_A, LNS_B = "192.0.2.11", "192.0.2.12"


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def service(**cfg) -> tuple[L2tpService, list, list]:
    """A LAC whose datagrams go nowhere (silent LNSes): what it sent (the
    peers), and the subscribers the session manager was told to close."""
    closed: list = []
    sessions = SimpleNamespace(l2tp=None, on_session_down=[],
                               close=lambda sub, reason, cause: closed.append((sub.sid, reason)))
    ctl = SimpleNamespace(clock=Clock(), names=SimpleNamespace(table=lambda name: SimpleNamespace(size=64)),
                          sessions=sessions, nexthop_for=lambda ip: None)
    svc = L2tpService(ctl, {"local_address": "192.0.2.1", **cfg})
    sent: list = []
    svc._send = lambda payload, peer, local: sent.append(peer[0])
    return svc, sent, closed


def subscriber(sid: int) -> SimpleNamespace:
    link = SimpleNamespace(auth_deadline=1030.0, lcp_first_confreq=b"", lcp_last_sent=b"", lcp_last_confreq=b"")
    return SimpleNamespace(sid=sid, live=True, username=f"u{sid}@realm", link=link, lac=None,
                           transport=SimpleNamespace(calling_station="02:00:00:00:00:01"),
                           line_info=SimpleNamespace(circuit_id="c", nas_port_id="p", remote_id=""))


def accept(*servers: str) -> AuthResult:
    return AuthResult(accepted=True, tunnels=[TunnelSpec(server_endpoint=s, password=b"s", preference=i)
                                              for i, s in enumerate(servers)])


CREDS = Credentials(AuthMethod.PAP, "u@realm", b"pw", 1)


def test_each_lns_gets_the_call_timeout_then_the_next_is_tried():
    async def run():
        svc, sent, closed = service(lac_call_timeout=0.05)
        sub = subscriber(1)
        loop = asyncio.get_running_loop()
        start = loop.time()
        await svc.lac_switch(sub, CREDS, accept(LNS_A, LNS_B))
        took = loop.time() - start
        assert sent == [LNS_A, LNS_B]                 # an SCCRQ to each, in preference order
        assert 0.1 <= took < 1.0, took
        assert closed == [(1, "no LNS available")]
        assert sub.link.auth_deadline is None        # the fail-over is not cut short by it
        c = svc.counters()
        assert c["lac failover"] == 2 and c["lac: no LNS took the call"] == 1, c
    asyncio.run(run())


def test_an_lns_that_let_a_call_time_out_is_tried_last():
    async def run():
        svc, sent, closed = service(lac_call_timeout=0.05, lac_dead_time=60)
        await svc.lac_switch(subscriber(1), CREDS, accept(LNS_A))
        assert sent == [LNS_A]
        tried = []
        real = svc._tunnel_for
        svc._tunnel_for = lambda spec: tried.append(spec.server_endpoint) or real(spec)
        await svc.lac_switch(subscriber(2), CREDS, accept(LNS_A, LNS_B))
        assert tried == [LNS_B, LNS_A]
        svc.ctl.clock.t += 61                         # its dead time is over: preference again
        tried.clear()
        await svc.lac_switch(subscriber(3), CREDS, accept(LNS_A, LNS_B))
        assert tried[0] == LNS_A
    asyncio.run(run())


def test_a_subscriber_who_leaves_during_setup_has_its_call_cleared_at_once():
    async def run():
        svc, sent, closed = service(lac_call_timeout=30)
        sub = subscriber(1)
        task = asyncio.ensure_future(svc.lac_switch(sub, CREDS, accept(LNS_A, LNS_B)))
        await asyncio.sleep(0.01)
        [tunnel] = svc.lac_tunnels.values()
        assert len(tunnel.sessions) == 1 and svc._pending_calls
        sub.live = False                              # PADT: the session manager tears it down
        svc._subscriber_down(sub)
        await asyncio.wait_for(task, 1.0)
        assert not tunnel.sessions and not svc._pending_calls
        assert sent == [LNS_A] and closed == []       # no fail-over, nothing left to close
        assert "lac failover" not in svc.counters()
    asyncio.run(run())


def test_a_full_tunnel_table_opens_no_tunnel():
    """The tunnel index was allocated after the SCCRQ went out: with the
    table full the tunnel was left open, unowned, and adopted as an LNS one."""
    async def run():
        svc, sent, closed = service(lac_call_timeout=0.05)
        while svc.tunnel_idx.in_use < svc.tunnel_idx.hi - svc.tunnel_idx.lo + 1:
            svc.tunnel_idx.allocate()
        await svc.lac_switch(subscriber(1), CREDS, accept(LNS_A))
        assert sent == [] and not svc.endpoint.tunnels and not svc.lac_tunnels
        assert closed == [(1, "no LNS available")]
    asyncio.run(run())


def test_a_switch_that_fails_the_lac_entries_write_closes_the_subscriber():
    """The write of a switched call's entries raised (the switch went away)
    and ended the task with the call up at the LNS and the PPP link
    detached: the subscriber hung until the 60 s setup timeout."""
    from p4.v1 import p4runtime_pb2 as p4r

    from bng_controller.l2tp.service import LacCall

    async def run():
        svc, sent, closed = service()

        async def nothing(t):
            return None

        async def gone(updates):
            raise ConnectionError("switch gone")
        svc._install_tunnel = nothing
        svc.ctl.tables = SimpleNamespace(lac_session=lambda *a: [p4r.TableEntry(table_id=1)],
                                         session_counters_zero=lambda i: [], session_meters=lambda *a: [])
        svc.ctl.switch = SimpleNamespace(write=gone)
        sub = subscriber(1)
        sub.sess_idx, sub.installed, sub.rate_up_kbps, sub.rate_down_kbps = 7, {}, None, None
        sub.link.detach = lambda: None
        sub.transport.line, sub.transport.session_id = SimpleNamespace(line_id=1), 3
        sub.transport.client_mac, sub.transport.target = b"\x02" * 6, lambda: None
        t = SimpleNamespace(data=SimpleNamespace(tunnel_idx=5), peer=(LNS_A, 1701), local_id=9)
        call = LacCall(sub, session=SimpleNamespace(peer_id=4, local_id=2, data=None))
        await svc._lac_connected(sub, call, t)
        assert closed == [(1, "data plane error")] and not call.switched
    asyncio.run(run())

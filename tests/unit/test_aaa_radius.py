"""RADIUS client against fake servers on 127.0.0.1: retransmission,
failover, reply verification, identifier allocation, the accounting queue."""
from __future__ import annotations

import asyncio
import time

import pytest
from pyrad import packet as rp

from bng_controller.aaa.acct_queue import (BARRIER, RANK_INTERIM, RANK_START, RANK_STOP, AcctItem,
                                           AcctQueue)
from bng_controller.aaa.base import (AaaUnavailable, AcctRecord, AcctStatus, SessionCounters,
                                     TerminateCause)
from bng_controller.aaa.radius import RadiusAaa
from bng_controller.aaa.raddict import Attr, int_value
from tests.unit.aaa_fakes import FakeRadiusServer, line, pap_request, run, server_cfg, v4


def _acct(status=AcctStatus.STOP, sid="S1", octets_in=0) -> AcctRecord:
    return AcctRecord(status=status, acct_session_id=sid, username="alice@lab.test",
                      client_mac="02:00:00:00:00:01", line=line(), session_id=7,
                      framed_ip=v4("100.64.0.10"), session_time=30,
                      counters=SessionCounters(octets_in=octets_in),
                      terminate_cause=TerminateCause.USER_REQUEST
                      if status is AcctStatus.STOP else None)


def _accept_with(**attrs):
    def reply_fn(req):
        reply = req.CreateReply()
        if req.code == rp.AccessRequest:
            reply.code = rp.AccessAccept
            for k, v in attrs.items():
                reply[k.replace("_", "-")] = v
        return reply
    return reply_fn


@run
async def test_accept_and_reject():
    def reply_fn(req):
        reply = req.CreateReply()
        ok = req.PwDecrypt(req[2][0]) == "alice-pw"
        reply.code = rp.AccessAccept if ok else rp.AccessReject
        if ok:
            reply["Framed-IP-Address"] = "100.64.0.9"
            reply["Filter-Id"] = "8000/2000"
        return reply
    server = await FakeRadiusServer(reply_fn=reply_fn).start()
    aaa = RadiusAaa.from_dict(server_cfg(server))
    try:
        res = await aaa.authenticate(pap_request(password=b"alice-pw"))
        assert res.accepted and res.framed_ip == v4("100.64.0.9")
        assert (res.rate_down_kbps, res.rate_up_kbps) == (8000, 2000)
        res = await aaa.authenticate(pap_request(password=b"bad"))
        assert not res.accepted
        assert aaa.counters.accepts == 1 and aaa.counters.rejects == 1
    finally:
        await aaa.close()
        server.close()


@run
async def test_retransmission_reuses_identifier_and_authenticator():
    server = await FakeRadiusServer(drop_first=1).start()
    aaa = RadiusAaa.from_dict(server_cfg(server, retries=2))
    try:
        assert (await aaa.authenticate(pap_request())).accepted
        assert len(server.received) == 2
        assert server.received[0].data == server.received[1].data   # same octets
        assert aaa.counters.retransmits == 1 and aaa.counters.requests == 1
    finally:
        await aaa.close()
        server.close()


@run
async def test_failover_and_dead_time():
    dead = await FakeRadiusServer(silent=True).start()
    good = await FakeRadiusServer().start()
    aaa = RadiusAaa.from_dict(server_cfg(dead, good, retries=1))
    try:
        assert (await aaa.authenticate(pap_request())).accepted
        assert len(dead.received) == 2 and len(good.received) == 1     # 1 + 1 retry, then next
        assert aaa.counters.failovers == 1 and aaa.counters.timeouts == 1
        # the dead server is skipped while its dead time runs
        assert (await aaa.authenticate(pap_request())).accepted
        assert len(dead.received) == 2 and len(good.received) == 2
    finally:
        await aaa.close()
        dead.close()
        good.close()


@run
async def test_all_servers_silent_is_unavailable_not_reject():
    a = await FakeRadiusServer(silent=True).start()
    b = await FakeRadiusServer(silent=True).start()
    aaa = RadiusAaa.from_dict(server_cfg(a, b, retries=0, timeout=0.05))
    try:
        with pytest.raises(AaaUnavailable):
            await aaa.authenticate(pap_request())
        assert len(a.received) == 1 and len(b.received) == 1
        # both dead now, still both tried (dead ones last, not never)
        with pytest.raises(AaaUnavailable):
            await aaa.authenticate(pap_request())
        assert len(a.received) == 2 and len(b.received) == 2
    finally:
        await aaa.close()
        a.close()
        b.close()


@run
async def test_forged_reply_is_dropped_and_real_one_accepted():
    def reply_fn(req):
        good = req.CreateReply()
        good.code = rp.AccessAccept
        raw = good.ReplyPacket()
        forged = bytearray(raw)
        forged[4] ^= 0xFF                        # Response Authenticator broken
        wrong_secret = req.CreateReply()
        wrong_secret.secret = b"other"
        wrong_secret.code = rp.AccessAccept
        return [bytes(forged), wrong_secret.ReplyPacket(), raw]
    server = await FakeRadiusServer(reply_fn=reply_fn).start()
    aaa = RadiusAaa.from_dict(server_cfg(server))
    try:
        assert (await aaa.authenticate(pap_request())).accepted
        assert aaa.counters.bad_authenticators == 2
    finally:
        await aaa.close()
        server.close()


@run
async def test_server_with_another_secret_fails_over_and_says_why(caplog):
    """A server whose every reply fails verification (its shared secret is
    not ours) is as good as silent: the request fails over, and the log
    names the likely cause instead of calling the server silent."""
    def wrong_secret(req):
        reply = req.CreateReply()
        reply.secret = b"not-ours"
        reply.code = rp.AccessAccept
        return reply
    bad = await FakeRadiusServer(reply_fn=wrong_secret).start()
    good = await FakeRadiusServer().start()
    aaa = RadiusAaa.from_dict(server_cfg(bad, good, retries=1, timeout=0.1))
    try:
        with caplog.at_level("WARNING", logger="bng_controller.aaa"):
            assert (await aaa.authenticate(pap_request())).accepted
        assert len(bad.received) == 2 and len(good.received) == 1
        assert aaa.counters.bad_authenticators == 2 and aaa.counters.failovers == 1
        assert "sent 2 replies to request id" in caplog.text and "shared secret" in caplog.text
        assert "gave no verified answer" in caplog.text
    finally:
        await aaa.close()
        bad.close()
        good.close()


@run
async def test_reply_without_message_authenticator_is_dropped():
    def reply_fn(req):
        reply = req.CreateReply(message_authenticator=False)
        reply.code = rp.AccessAccept
        return reply
    server = await FakeRadiusServer(reply_fn=reply_fn).start()
    aaa = RadiusAaa.from_dict(server_cfg(server, retries=0))
    try:
        with pytest.raises(AaaUnavailable):
            await aaa.authenticate(pap_request())
        assert aaa.counters.bad_authenticators == 1
    finally:
        await aaa.close()
    # tolerated when the operator says so (old servers)
    aaa = RadiusAaa.from_dict(server_cfg(server, require_message_authenticator=False))
    try:
        assert (await aaa.authenticate(pap_request())).accepted
    finally:
        await aaa.close()
        server.close()


@run
async def test_more_than_256_requests_wait_for_identifiers():
    server = await FakeRadiusServer(delay=0.05).start()
    aaa = RadiusAaa.from_dict(server_cfg(server, timeout=2.0))
    try:
        results = await asyncio.gather(*(aaa.authenticate(pap_request()) for _ in range(300)))
        assert all(r.accepted for r in results)
        assert server.max_unanswered <= 256
        assert aaa.counters.retransmits == 0 and aaa.counters.requests == 300
    finally:
        await aaa.close()
        server.close()


@run
async def test_accounting_attributes_and_gigawords():
    server = await FakeRadiusServer().start()
    aaa = RadiusAaa.from_dict(server_cfg(server))
    try:
        await aaa.account(_acct(AcctStatus.START))
        await aaa.account(_acct(AcctStatus.STOP, octets_in=6 * 2**32 + 5))
        assert await aaa.flush(5)
        start, stop = (r.packet for r in server.received)
        assert int_value(start, Attr.ACCT_STATUS_TYPE) == 1
        assert int_value(stop, Attr.ACCT_STATUS_TYPE) == 2
        assert stop[Attr.ACCT_INPUT_OCTETS] == [5] and stop[Attr.ACCT_INPUT_GIGAWORDS] == [6]
        assert stop[Attr.ACCT_DELAY_TIME] == [0]
        assert abs(stop[Attr.EVENT_TIMESTAMP][0] - time.time()) < 5
        assert aaa.counters.acct_sent == 2
    finally:
        await aaa.close()
        server.close()


@run
async def test_accounting_survives_an_outage_and_delay_grows():
    server = await FakeRadiusServer(silent=True).start()
    aaa = RadiusAaa.from_dict(server_cfg(server, timeout=0.1, retries=0,
                                         acct_retry_interval=0.3))
    try:
        await aaa.account(_acct(AcctStatus.START, sid="A"))
        await aaa.account(_acct(AcctStatus.STOP, sid="A"))
        await aaa.accounting_on()
        assert not await aaa.flush(1.3)              # nobody answers
        assert aaa.acct_queue_length == 3
        server.silent = False                        # server is back
        assert await aaa.flush(5)
        kinds = [int_value(p, Attr.ACCT_STATUS_TYPE) for p in server.answered]
        assert kinds == [1, 2, 7]                    # the session's in order, then the barrier
        delays = [r.packet[Attr.ACCT_DELAY_TIME][0] for r in server.received]
        assert delays[0] == 0 and max(delays) >= 1
        # retries after an outage are new packets (RFC 2866 5.2: delay changes the id)
        starts = [r for r in server.received
                  if int_value(r.packet, Attr.ACCT_STATUS_TYPE) == 1]
        assert len(starts) >= 2 and starts[0].data != starts[-1].data
        # the Stop waited for its Start to be answered
        sent = [int_value(r.packet, Attr.ACCT_STATUS_TYPE) for r in server.received]
        assert sent.index(2) > max(i for i, k in enumerate(sent) if k == 1)
        assert aaa.counters.acct_sent == 3 and aaa.counters.acct_dropped == 0
    finally:
        await aaa.close()
        server.close()


@run
async def test_accounting_queue_overflow_drops_interims_first():
    server = await FakeRadiusServer(silent=True).start()
    aaa = RadiusAaa.from_dict(server_cfg(server, acct_queue_max=3, acct_concurrency=1,
                                         timeout=0.25, retries=0, acct_retry_interval=0.05))
    try:
        await aaa.account(_acct(AcctStatus.START, sid="A"))
        for i in range(5):
            await aaa.account(_acct(AcctStatus.INTERIM, sid="A"))
        await aaa.account(_acct(AcctStatus.STOP, sid="A"))
        assert aaa.counters.acct_dropped == 4
        server.silent = False
        assert await aaa.flush(5)
        delivered = [int_value(p, Attr.ACCT_STATUS_TYPE) for p in server.answered]
        assert delivered == [1, 3, 2]                # Start, the newest Interim, Stop
    finally:
        await aaa.close()
        server.close()


def test_acct_queue_policy():
    q = AcctQueue(3)
    s1, i1, t1 = AcctItem("s1", RANK_START), AcctItem("i1", RANK_INTERIM), AcctItem("t1", RANK_STOP)
    for item in (s1, i1, t1):
        assert q.put_nowait(item) is None
    i2 = AcctItem("i2", RANK_INTERIM)
    assert q.put_nowait(i2) is i1                 # oldest interim goes
    s2 = AcctItem("s2", RANK_START)
    assert q.put_nowait(s2) is i2                 # interims before starts
    i3 = AcctItem("i3", RANK_INTERIM)
    assert q.put_nowait(i3) is i3                 # no interim queued: the new one goes
    t2 = AcctItem("t2", RANK_STOP)
    assert q.put_nowait(t2) is s1                 # starts before stops
    assert [i.payload for i in q._items] == ["t1", "s2", "t2"]
    assert q.dropped == 4


@run
async def test_acct_queue_requeue_keeps_order():
    q = AcctQueue(10)
    items = [AcctItem(n, RANK_STOP) for n in "abc"]
    for item in items:
        q.put_nowait(item)
    a = await q.get()
    b = await q.get()
    q.requeue(b)
    q.requeue(a)
    assert [i.payload for i in q._items] == ["a", "b", "c"]
    assert q.in_flight == 0


@run
async def test_acct_queue_one_record_of_a_session_in_flight_and_barriers_alone():
    """Eight workers took records as they came, so a session's Stop could
    reach the server before its Start (a lost Start retransmitted after the
    Stop was answered) and a Start before the Accounting-On that would
    close it: the server then held the session open for ever."""
    q = AcctQueue(10)
    on = AcctItem("on", RANK_STOP, key=BARRIER)
    a1, a2, b1 = (AcctItem(n, RANK_START, key=n[0]) for n in ("a-start", "a-stop", "b-start"))
    off = AcctItem("off", RANK_STOP, key=BARRIER)
    c1 = AcctItem("c-start", RANK_START, key="c")
    for item in (on, a1, a2, b1, off, c1):
        q.put_nowait(item)

    async def next_now() -> AcctItem | None:
        try:
            return await asyncio.wait_for(q.get(), 0.05)
        except TimeoutError:
            return None

    assert await next_now() is on
    assert await next_now() is None               # nothing beside a barrier
    q.done(on)
    assert await next_now() is a1
    assert await next_now() is b1                 # a-stop waits for a-start
    assert await next_now() is None               # and the barrier for both
    q.requeue(a1)                                 # a-start was not answered: it goes again, first
    assert await next_now() is a1
    q.done(a1)
    assert await next_now() is a2
    q.done(b1)
    q.done(a2)
    assert await next_now() is off
    assert await next_now() is None               # c-start was queued after the barrier
    q.done(off)
    assert await next_now() is c1


@run
async def test_accounting_reaches_the_server_in_order_with_losses_and_a_slow_answer():
    server = await FakeRadiusServer(drop_first=1).start()      # the first request is lost
    aaa = RadiusAaa.from_dict(server_cfg(server, timeout=0.2, retries=3))
    try:
        await aaa.accounting_on()
        for sid in ("A", "B"):
            await aaa.account(_acct(AcctStatus.START, sid=sid))
            await aaa.account(_acct(AcctStatus.STOP, sid=sid))
        assert await aaa.flush(10)
        got = [(int_value(r.packet, Attr.ACCT_STATUS_TYPE), r.packet[Attr.ACCT_SESSION_ID][0])
               for r in server.received]
        assert got[0][0] == 7 and got[1][0] == 7                 # the lost On, sent again
        assert all(k != 7 for k, _ in got[2:])                   # nothing before the On was answered
        for sid in ("A", "B"):
            mine = [k for k, s in got if s == sid]
            assert mine == [1, 2], (sid, got)
    finally:
        await aaa.close()
        server.close()


@run
async def test_close_counts_undelivered():
    server = await FakeRadiusServer(silent=True).start()
    aaa = RadiusAaa.from_dict(server_cfg(server))
    await aaa.account(_acct())
    await aaa.account(_acct(sid="S2"))
    await aaa.close()
    server.close()
    assert aaa.counters.acct_dropped == 2


@run
async def test_close_during_authentication_is_unavailable():
    server = await FakeRadiusServer(silent=True).start()
    aaa = RadiusAaa.from_dict(server_cfg(server, timeout=5.0))
    try:
        pending = asyncio.create_task(aaa.authenticate(pap_request()))
        await asyncio.sleep(0.1)
        await aaa.close()
        with pytest.raises(AaaUnavailable):
            await pending
        with pytest.raises(AaaUnavailable):
            await aaa.authenticate(pap_request())
    finally:
        server.close()


def test_config_validation():
    from bng_controller.aaa.radius import RadiusConfig
    with pytest.raises(ValueError, match="IP address"):
        RadiusConfig.from_dict({"servers": [{"address": "radius.example", "secret": "s"}]})
    with pytest.raises(ValueError, match="secret"):
        RadiusConfig.from_dict({"servers": [{"address": "127.0.0.1"}]})
    with pytest.raises(ValueError, match="at least one"):
        RadiusConfig.from_dict({"servers": []})
    cfg = RadiusConfig.from_dict({"servers": [{"address": "::1", "secret": "s"}],
                                  "nas_port_type": "ethernet", "timeout": "2"})
    assert cfg.servers[0].auth_port == 1812 and cfg.timeout == 2.0


@run
async def test_accounting_on_only_on_a_cold_start(tmp_path):
    """Accounting-On went out on every start, also when the controller took
    over the sessions of the one before (a crash, or `shutdown: keep`):
    the server then closed every one of them while the subscribers went on
    using them (RFC 2866 status 7: all sessions of this NAS are gone)."""
    from bng_controller.__main__ import accounting_on_if_cold
    from bng_controller.session_store import SessionStore

    class Aaa:
        sent = 0

        async def accounting_on(self) -> None:
            self.sent += 1

    aaa, store = Aaa(), SessionStore(tmp_path / "sessions.db")
    try:
        assert await accounting_on_if_cold(aaa, store) and aaa.sent == 1
        store.put(7, {"sid": 7})
        store.flush()
        assert not await accounting_on_if_cold(aaa, store) and aaa.sent == 1
        store.delete(7)
        store.flush()
        assert await accounting_on_if_cold(aaa, store) and aaa.sent == 2
    finally:
        store.close()


@run
async def test_a_record_that_cannot_be_encoded_is_dropped_not_retried_for_ever():
    """pyrad refuses a string over 253 octets: such a record was put back
    at the head of the queue for ever, holding its session's later records
    and pausing all accounting at every try."""
    server = await FakeRadiusServer().start()
    aaa = RadiusAaa.from_dict(server_cfg(server, acct_retry_interval=0.2))
    try:
        bad = _acct(AcctStatus.INTERIM, sid="A")
        bad.username = "u" * 300
        await aaa.account(bad)
        await aaa.account(_acct(AcctStatus.STOP, sid="A"))
        assert await aaa.flush(3)
        assert [int_value(p, Attr.ACCT_STATUS_TYPE) for p in server.answered] == [2]
        assert aaa.counters.acct_dropped == 1 and aaa.counters.acct_sent == 1
    finally:
        await aaa.close()
        server.close()

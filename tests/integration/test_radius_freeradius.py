"""RadiusAaa and DynAuthServer against a real FreeRADIUS (and radclient)
on 127.0.0.1. Skips where FreeRADIUS is not installed."""
from __future__ import annotations

import asyncio
import ipaddress
import shutil

import pytest

from bng_controller.aaa import chap_verify as cv
from bng_controller.aaa.base import (AcctRecord, AcctStatus, AuthMethod, AuthRequest,
                                     DynAuthError, SessionCounters, TerminateCause)
from bng_controller.aaa.dynauth import DynAuthServer
from bng_controller.aaa.radius import RadiusAaa
from tests import freeradius_server as fr
from tests.unit.aaa_fakes import line, pap_request, run, v4

pytestmark = pytest.mark.skipif(
    not fr.available(), reason="FreeRADIUS is not installed (apt-get install freeradius "
                               "freeradius-utils; scripts/setup.sh does it)")

USERS = """\
alice@lab.test Cleartext-Password := "alice-pw"
	Framed-IP-Address = 100.64.0.10,
	Framed-Pool = "lab",
	Filter-Id = "100000/20000",
	Session-Timeout = 3600,
	Idle-Timeout = 600,
	Acct-Interim-Interval = 300,
	Class = "cls-alice",
	MS-Primary-DNS-Server = 192.0.2.53,
	MS-Secondary-DNS-Server = 192.0.2.54,
	Framed-IPv6-Prefix = 2001:db8:0:1::/64,
	Delegated-IPv6-Prefix = 2001:db8:100::/56,
	Reply-Message = "welcome"

tunnel@wholesale.test Cleartext-Password := "tunnel-pw"
	Tunnel-Type:1 = L2TP,
	Tunnel-Medium-Type:1 = IPv4,
	Tunnel-Server-Endpoint:1 = "192.0.2.10",
	Tunnel-Password:1 = "l2tp-secret-1",
	Tunnel-Client-Auth-Id:1 = "bng1",
	Tunnel-Server-Auth-Id:1 = "lns1",
	Tunnel-Assignment-Id:1 = "lns1",
	Tunnel-Preference:1 = 2,
	Tunnel-Type:2 = L2TP,
	Tunnel-Medium-Type:2 = IPv4,
	Tunnel-Server-Endpoint:2 = "192.0.2.11",
	Tunnel-Password:2 = "a longer tunnel secret, more than 16 octets",
	Tunnel-Preference:2 = 1
"""


@pytest.fixture(scope="module")
def radius():
    with fr.FreeRadiusServer(USERS) as server:
        yield server


def _aaa(radius) -> RadiusAaa:
    return RadiusAaa.from_dict({
        "servers": [{"address": "127.0.0.1", "secret": radius.secret,
                     "auth_port": radius.auth_port, "acct_port": radius.acct_port}],
        "timeout": 1.0, "retries": 1, "nas_identifier": "bng-test",
        "nas_ip_address": "192.0.2.254"})


@run
async def test_pap_accept_with_authorization(radius):
    aaa = _aaa(radius)
    try:
        res = await aaa.authenticate(pap_request("alice@lab.test", b"alice-pw"))
    finally:
        await aaa.close()
    assert res.accepted
    assert res.framed_ip == v4("100.64.0.10") and res.framed_pool == "lab"
    assert (res.rate_down_kbps, res.rate_up_kbps) == (100000, 20000)
    assert (res.session_timeout, res.idle_timeout, res.interim_interval) == (3600, 600, 300)
    assert res.classes == (b"cls-alice",)
    assert res.dns == [v4("192.0.2.53"), v4("192.0.2.54")]
    assert res.framed_ipv6_prefix == ipaddress.IPv6Network("2001:db8:0:1::/64")
    assert res.delegated_ipv6_prefix == ipaddress.IPv6Network("2001:db8:100::/56")
    assert res.reply_message == "welcome"


@run
async def test_wrong_password_is_a_reject(radius):
    aaa = _aaa(radius)
    try:
        res = await aaa.authenticate(pap_request("alice@lab.test", b"wrong"))
        unknown = await aaa.authenticate(pap_request("nobody@lab.test", b"x"))
    finally:
        await aaa.close()
    assert not res.accepted and not unknown.accepted
    assert aaa.counters.rejects == 2 and aaa.counters.bad_authenticators == 0


@run
async def test_chap_md5(radius):
    challenge = cv.random_challenge()
    req = AuthRequest(username="alice@lab.test", method=AuthMethod.CHAP_MD5,
                      client_mac="02:00:00:00:00:01", line=line(), session_id=3, chap_id=77,
                      challenge=challenge, response=cv.chap_md5_response(77, "alice-pw", challenge))
    aaa = _aaa(radius)
    try:
        assert (await aaa.authenticate(req)).accepted
        req.response = cv.chap_md5_response(77, "wrong", challenge)
        assert not (await aaa.authenticate(req)).accepted
    finally:
        await aaa.close()


@run
async def test_mschapv2_success_and_mppe_keys(radius):
    user, password = "alice@lab.test", "alice-pw"
    auth_challenge, peer_challenge = cv.random_challenge(), cv.random_challenge()
    nt = cv.generate_nt_response(auth_challenge, peer_challenge, user, password)
    req = AuthRequest(username=user, method=AuthMethod.MSCHAPV2, client_mac="02:00:00:00:00:01",
                      line=line(), session_id=3, chap_id=5, challenge=auth_challenge,
                      response=peer_challenge + b"\x00" * 8 + nt + b"\x00")
    aaa = _aaa(radius)
    try:
        res = await aaa.authenticate(req)
    finally:
        await aaa.close()
    assert res.accepted
    # what the peer computes to check that the server knew its password too
    assert res.mschapv2_success == cv.generate_authenticator_response(
        password, nt, peer_challenge, auth_challenge, user)
    assert res.mppe_keys == cv.mppe_server_keys(password, nt)


@run
async def test_tunnel_attributes(radius):
    aaa = _aaa(radius)
    try:
        res = await aaa.authenticate(pap_request("tunnel@wholesale.test", b"tunnel-pw"))
    finally:
        await aaa.close()
    assert res.accepted
    assert [(t.server_endpoint, t.preference) for t in res.tunnels] == [
        ("192.0.2.11", 1), ("192.0.2.10", 2)]
    assert res.tunnels[0].password == b"a longer tunnel secret, more than 16 octets"
    assert res.tunnels[1].password == b"l2tp-secret-1"
    assert (res.tunnels[1].client_auth_id, res.tunnels[1].server_auth_id,
            res.tunnels[1].assignment_id) == ("bng1", "lns1", "lns1")


@run
async def test_accounting_start_interim_stop_and_on(radius):
    aaa = _aaa(radius)
    big_in, big_out = 5 * 2**32 + 1234, 2**32 + 7

    def rec(status, **kw):
        return AcctRecord(status=status, acct_session_id="SESS-42", username="alice@lab.test",
                          client_mac="02:00:00:00:00:01", line=line(), session_id=9,
                          framed_ip=v4("100.64.0.10"), classes=(b"cls-alice",),
                          event_time=1_700_000_000, **kw)
    try:
        await aaa.accounting_on()
        await aaa.account(rec(AcctStatus.START))
        await aaa.account(rec(AcctStatus.INTERIM, session_time=300,
                              counters=SessionCounters(100, 2**32 + 1, 200, 3)))
        await aaa.account(rec(AcctStatus.STOP, session_time=600,
                              counters=SessionCounters(1000, big_in, 2000, big_out),
                              terminate_cause=TerminateCause.USER_REQUEST))
        assert await aaa.flush(10)
    finally:
        await aaa.close()
    records = radius.detail_records()
    by_status = {r["Acct-Status-Type"]: r for r in records}
    assert set(by_status) >= {"Accounting-On", "Start", "Interim-Update", "Stop"}
    stop = by_status["Stop"]
    assert (int(stop["Acct-Input-Gigawords"]) << 32) + int(stop["Acct-Input-Octets"]) == big_in
    assert (int(stop["Acct-Output-Gigawords"]) << 32) + int(stop["Acct-Output-Octets"]) == big_out
    assert stop["Acct-Input-Packets"] == "1000" and stop["Acct-Output-Packets"] == "2000"
    assert stop["Acct-Session-Time"] == "600"
    assert stop["Acct-Terminate-Cause"] == "User-Request"
    assert stop["Class"] == "0x" + b"cls-alice".hex()
    assert stop["Acct-Session-Id"] == "SESS-42" and stop["User-Name"] == "alice@lab.test"
    assert stop["NAS-Identifier"] == "bng-test" and stop["Framed-IP-Address"] == "100.64.0.10"
    assert stop["Acct-Delay-Time"] == "0"
    interim = by_status["Interim-Update"]
    assert interim["Acct-Input-Gigawords"] == "1" and interim["Acct-Input-Octets"] == "1"
    assert by_status["Start"]["Class"] == "0x" + b"cls-alice".hex()
    assert by_status["Accounting-On"]["NAS-IP-Address"] == "192.0.2.254"
    assert aaa.counters.acct_sent == 4


# ------------------------------------------------------------- dynauth

RADCLIENT = shutil.which("radclient")


async def _radclient(port: int, command: str, secret: str, attrs: str) -> str:
    proc = await asyncio.create_subprocess_exec(
        RADCLIENT, "-x", "-r", "1", "-t", "1", f"127.0.0.1:{port}", command, secret,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT)
    out, _ = await proc.communicate(attrs.encode() + b"\n")
    return out.decode()


@pytest.mark.skipif(RADCLIENT is None, reason="radclient (freeradius-utils) is not installed")
@run
async def test_dynauth_with_radclient():
    seen = []

    async def handler(req):
        seen.append(req)
        if req.acct_session_id == "unknown":
            return DynAuthError.SESSION_CONTEXT_NOT_FOUND
        return None

    server = DynAuthServer.from_dict({"bind": "127.0.0.1", "port": 0, "nas_identifier": "bng-test",
                                      "clients": [{"address": "127.0.0.1",
                                                   "secret": "coa-secret"}]}, handler)
    await server.start()
    try:
        out = await _radclient(server.port, "disconnect", "coa-secret",
                               'Acct-Session-Id = "SESS-42", User-Name = "alice@lab.test", '
                               'NAS-Identifier = "bng-test"')
        assert "Received Disconnect-ACK" in out, out
        out = await _radclient(server.port, "coa", "coa-secret",
                               'Acct-Session-Id = "SESS-42", Filter-Id = "50000/10000", '
                               'Session-Timeout = 900, Message-Authenticator = 0x00')
        assert "Received CoA-ACK" in out, out
        out = await _radclient(server.port, "coa", "coa-secret",
                               'Acct-Session-Id = "unknown", Filter-Id = "1000"')
        assert "Received CoA-NAK" in out and "Session-Context-Not-Found" in out, out
        out = await _radclient(server.port, "disconnect", "coa-secret",
                               'Acct-Session-Id = "SESS-42", NAS-Identifier = "other-bng"')
        assert "Received Disconnect-NAK" in out and "NAS-Identification-Mismatch" in out, out
        out = await _radclient(server.port, "disconnect", "wrong-secret",
                               'Acct-Session-Id = "SESS-42"')
        assert "Received" not in out, out
        assert server.counters.bad_authenticator >= 1
        assert [r.kind for r in seen] == ["disconnect", "coa", "coa"]
        coa = seen[1].new_auth
        assert (coa.rate_down_kbps, coa.rate_up_kbps, coa.session_timeout) == (50000, 10000, 900)
        assert seen[0].username == "alice@lab.test"
    finally:
        await server.close()

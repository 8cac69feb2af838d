"""Local AAA backend: the subscriber file, PAP/CHAP/MS-CHAPv2, patterns,
realms, accounting file, reload, and the backend factory."""
from __future__ import annotations

import dataclasses
import ipaddress
import json
from pathlib import Path

import pytest
import yaml

from bng_controller.aaa import chap_verify as cv
from bng_controller.aaa import make_backend
from bng_controller.aaa.base import (AcctRecord, AcctStatus, AuthMethod, AuthRequest,
                                     SessionCounters, TerminateCause)
from bng_controller.aaa.local import LocalAaa
from bng_controller.aaa.radius import RadiusAaa
from bng_controller.aaa.subscribers import Profile, SubscriberFileError
from tests.unit.aaa_fakes import line, pap_request, run, v4

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "configs" / "subscribers.example.yaml"

DATA = {
    "defaults": {"pool": "main", "dns": ["192.0.2.53", "192.0.2.54"], "rate_down_kbps": 100000,
                 "rate_up_kbps": 20000, "interim_interval": 300},
    "users": {
        "alice@isp.test": {"password": "alice-pw", "ipv4": "100.64.0.10",
                           "ipv6_prefix": "2001:db8:0:1::/64",
                           "delegated_prefix": "2001:db8:100::/56", "rate_down_kbps": 50000,
                           "session_timeout": 86400},
        "bob@isp.test": {"password": "bob-pw", "disabled": True},
        "user7@lab.test": {"password": "special"},
    },
    "patterns": [{"match": r"user(\d+)@lab\.test", "password": "pass{1}", "pool": "lab"},
                 {"match": r"(?P<name>\w+)@named\.test", "password": "{name}-pw"}],
    "realms": {"Wholesale.test": {"tunnels": [
        {"server": "192.0.2.11", "password": "t2", "preference": 2},
        {"server": "192.0.2.10", "password": "t1", "client_auth_id": "bng1",
         "server_auth_id": "lns1", "preference": 1, "assignment_id": "a"}]},
        "checked.test": {"authenticate": True, "tunnels": [{"server": "192.0.2.20"}]}},
}


def _chap(username, password, ident=5, wrong=False):
    challenge = cv.random_challenge()
    response = cv.chap_md5_response(ident, password, challenge)
    if wrong:
        response = bytes([response[0] ^ 1]) + response[1:]
    return AuthRequest(username=username, method=AuthMethod.CHAP_MD5, client_mac="m",
                       line=line(), session_id=1, chap_id=ident, challenge=challenge,
                       response=response)


def _mschapv2(username, password):
    auth_challenge, peer_challenge = cv.random_challenge(), cv.random_challenge()
    nt = cv.generate_nt_response(auth_challenge, peer_challenge, username, password)
    req = AuthRequest(username=username, method=AuthMethod.MSCHAPV2, client_mac="m",
                      line=line(), session_id=1, chap_id=1, challenge=auth_challenge,
                      response=peer_challenge + b"\x00" * 8 + nt + b"\x00")
    return req, nt, peer_challenge


@run
async def test_pap_accept_with_profile():
    aaa = LocalAaa(data=DATA)
    res = await aaa.authenticate(pap_request("alice@isp.test", b"alice-pw"))
    assert res.accepted
    assert res.framed_ip == v4("100.64.0.10") and res.framed_pool == "main"
    assert res.dns == [v4("192.0.2.53"), v4("192.0.2.54")]
    assert (res.rate_down_kbps, res.rate_up_kbps) == (50000, 20000)   # user overrides default
    assert res.session_timeout == 86400 and res.interim_interval == 300 and res.idle_timeout is None
    assert res.framed_ipv6_prefix == ipaddress.IPv6Network("2001:db8:0:1::/64")
    assert res.delegated_ipv6_prefix == ipaddress.IPv6Network("2001:db8:100::/56")
    assert res.tunnels == []


@run
async def test_pap_rejects():
    aaa = LocalAaa(data=DATA)
    assert not (await aaa.authenticate(pap_request("alice@isp.test", b"wrong"))).accepted
    assert not (await aaa.authenticate(pap_request("nobody@isp.test", b"x"))).accepted
    res = await aaa.authenticate(pap_request("bob@isp.test", b"bob-pw"))
    assert not res.accepted and "disabled" in res.reply_message
    assert aaa.counters.rejects == 3 and aaa.counters.accepts == 0


@run
async def test_chap_md5():
    aaa = LocalAaa(data=DATA)
    assert (await aaa.authenticate(_chap("alice@isp.test", "alice-pw"))).accepted
    assert not (await aaa.authenticate(_chap("alice@isp.test", "alice-pw", wrong=True))).accepted
    assert not (await aaa.authenticate(_chap("alice@isp.test", "other"))).accepted


@run
async def test_mschapv2_success_and_mppe_keys():
    aaa = LocalAaa(data=DATA)
    req, nt, peer = _mschapv2("alice@isp.test", "alice-pw")
    res = await aaa.authenticate(req)
    assert res.accepted
    assert res.mschapv2_success == cv.generate_authenticator_response(
        "alice-pw", nt, peer, req.challenge, "alice@isp.test")
    assert res.mppe_keys == cv.mppe_server_keys("alice-pw", nt)
    bad, _, _ = _mschapv2("alice@isp.test", "wrong")
    res = await aaa.authenticate(bad)
    assert not res.accepted and res.mschapv2_success == b""


@run
async def test_patterns():
    aaa = LocalAaa(data=DATA)
    res = await aaa.authenticate(pap_request("user12345@lab.test", b"pass12345"))
    assert res.accepted and res.framed_pool == "lab" and res.rate_down_kbps == 100000
    assert not (await aaa.authenticate(pap_request("user12345@lab.test", b"pass1"))).accepted
    # an exact entry wins over a pattern
    assert not (await aaa.authenticate(pap_request("user7@lab.test", b"pass7"))).accepted
    assert (await aaa.authenticate(pap_request("user7@lab.test", b"special"))).accepted
    assert (await aaa.authenticate(pap_request("carol@named.test", b"carol-pw"))).accepted
    # whole-name match only
    assert not (await aaa.authenticate(pap_request("xuser1@lab.test", b"pass1"))).accepted
    assert (await aaa.authenticate(_chap("user9@lab.test", "pass9"))).accepted


@run
async def test_realms():
    aaa = LocalAaa(data=DATA)
    res = await aaa.authenticate(pap_request("anyone@wholesale.TEST", b"whatever"))
    assert res.accepted
    assert [t.server_endpoint for t in res.tunnels] == ["192.0.2.10", "192.0.2.11"]
    first = res.tunnels[0]
    assert (first.password, first.client_auth_id, first.server_auth_id, first.preference,
            first.assignment_id) == (b"t1", "bng1", "lns1", 1, "a")
    # authenticate: true -> the user must exist and pass
    assert not (await aaa.authenticate(pap_request("x@checked.test", b"x"))).accepted


def test_bad_files_name_the_place():
    cases = [
        ({"users": {"a": {"pasword": "x"}}}, "users.a"),
        ({"users": {"a": {}}}, "password"),
        ({"users": {"a": {"password": "x", "ipv4": "300.1.1.1"}}}, "users.a"),
        ({"patterns": [{"match": "(", "password": "x"}]}, "patterns[0]"),
        ({"patterns": [{"match": "u(\\d+)", "password": "{2}"}]}, "patterns[0]"),
        ({"realms": {"r": {"tunnels": []}}}, "realms.r"),
        ({"realms": {"r": {"tunnels": [{"password": "x"}]}}}, "server"),
        ({"userz": {}}, "userz"),
        ({"defaults": {"rate_up_kbps": -1}}, "defaults"),
    ]
    for data, where in cases:
        with pytest.raises(SubscriberFileError, match=where.replace("[", r"\[").replace("]", r"\]")):
            LocalAaa(data=data)


@run
async def test_reload_keeps_old_data_on_error(tmp_path):
    path = tmp_path / "subs.yaml"
    path.write_text(yaml.safe_dump({"users": {"a@x.test": {"password": "one"}}}))
    aaa = LocalAaa(path)
    assert (await aaa.authenticate(pap_request("a@x.test", b"one"))).accepted
    path.write_text(yaml.safe_dump({"users": {"a@x.test": {"password": "two"}}}))
    aaa.reload()
    assert (await aaa.authenticate(pap_request("a@x.test", b"two"))).accepted
    path.write_text("users: {a@x.test: {password: three, bogus: 1}}")
    with pytest.raises(SubscriberFileError):
        aaa.reload()
    assert (await aaa.authenticate(pap_request("a@x.test", b"two"))).accepted


@run
async def test_accounting_json_lines(tmp_path):
    acct = tmp_path / "acct" / "records.jsonl"
    aaa = LocalAaa(data=DATA, accounting_file=acct)
    for status in (AcctStatus.START, AcctStatus.STOP):
        await aaa.account(AcctRecord(
            status=status, acct_session_id="S1", username="alice@isp.test", client_mac="m",
            line=line(), session_id=3, framed_ip=v4("100.64.0.10"), session_time=60,
            counters=SessionCounters(1, 5 * 2**32, 2, 7),
            terminate_cause=TerminateCause.USER_REQUEST if status is AcctStatus.STOP else None,
            classes=(b"\x01",), event_time=1_700_000_000))
    lines = acct.read_text().splitlines()   # flushed: readable before close
    await aaa.close()
    records = [json.loads(x) for x in lines]
    assert [r["status"] for r in records] == ["start", "stop"]
    assert records[1]["octets_in"] == 5 * 2**32 and records[1]["terminate_cause"] == "user_request"
    assert records[1]["framed_ip"] == "100.64.0.10" and records[1]["class"] == ["01"]
    assert records[0]["time"].startswith("2023-11-14T22:13:20")


@run
async def test_example_file_loads_and_works():
    aaa = make_backend({"backend": "local", "local": {"subscribers": str(EXAMPLE)}})
    assert isinstance(aaa, LocalAaa)
    assert (await aaa.authenticate(pap_request("alice@isp.test", b"alice-secret"))).accepted
    assert (await aaa.authenticate(pap_request("user31337@lab.test", b"pass31337"))).accepted
    res = await aaa.authenticate(pap_request("someone@wholesale.test", b"x"))
    assert res.accepted and res.tunnels


def test_factory():
    radius = make_backend({"backend": "radius", "radius": {
        "servers": [{"address": "127.0.0.1", "secret": "s"}]}})
    assert isinstance(radius, RadiusAaa)
    with pytest.raises(ValueError, match="backend"):
        make_backend({"backend": "ldap"})
    with pytest.raises(ValueError, match="section"):
        make_backend({"backend": "radius"})
    with pytest.raises(ValueError, match="unknown"):
        make_backend({"backend": "radius", "radius": {
            "servers": [{"address": "127.0.0.1", "secret": "s"}], "timout": 1}})


def test_profile_with_password_is_a_copy():
    base = Profile(password="tmpl", pool="lab", dns=(ipaddress.IPv4Address("192.0.2.53"),), rate_up_kbps=1000)
    p = base.with_password("pass1")
    assert p == dataclasses.replace(base, password="pass1")
    assert base.password == "tmpl" and p.pool == "lab"
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.password = "x"

"""RADIUS dictionary, request encoding and reply decoding (no sockets)."""
from __future__ import annotations

import hashlib
import ipaddress

import pytest
from hypothesis import given, strategies as st
from pyrad import packet as rp

from bng_controller.aaa import rates
from bng_controller.aaa.base import (AcctRecord, AcctStatus, AuthMethod, AuthRequest,
                                     SessionCounters, TerminateCause)
from bng_controller.aaa.radius_codec import (NasIdentity, build_access_request,
                                             build_accounting_request, parse_access_reply,
                                             split_counter)
from bng_controller.aaa.raddict import Attr, int_value, load_dictionary
from tests.unit.aaa_fakes import SECRET, line, pap_request, salt_encrypt, v4

NAS = NasIdentity(nas_identifier="bng-test", nas_ip_address="192.0.2.254")


def _decode_request(raw: bytes) -> rp.AuthPacket:
    return rp.AuthPacket(packet=raw, secret=SECRET, dict=load_dictionary())


def test_dictionary_loads_every_name_we_use():
    d = load_dictionary()
    names = [v for k, v in vars(Attr).items() if k.isupper()]
    assert names and all(n in d.attributes for n in names)
    assert d.attributes[Attr.TUNNEL_PASSWORD].has_tag
    assert d.attributes[Attr.TUNNEL_PASSWORD].encrypt == 2
    assert d.attributes[Attr.MS_MPPE_SEND_KEY].vendor == "Microsoft"
    assert d.attributes[Attr.DELEGATED_IPV6_PREFIX].code == 123


def test_pap_access_request_round_trip():
    req = pap_request(password=b"a much longer password than sixteen")
    pkt = build_access_request(req, ident=17, secret=SECRET, nas=NAS)
    raw = pkt.RequestPacket()
    got = _decode_request(raw)
    assert got.code == rp.AccessRequest and got.id == 17
    # RFC 2865 5.2: the hidden password is a multiple of 16 and recoverable with the secret
    hidden = got[2][0]
    assert len(hidden) == 48 and req.password not in raw
    assert got.PwDecrypt(hidden) == req.password.decode()
    wrong = rp.AuthPacket(packet=raw, secret=b"not-the-secret", dict=load_dictionary())
    assert wrong.PwDecrypt(hidden) != req.password.decode()
    # Message-Authenticator first and valid (RFC 3579 3.2, BlastRADIUS)
    assert raw[20] == 80 and got.verify_message_authenticator()
    assert got[Attr.USER_NAME] == ["alice@lab.test"]
    assert got[Attr.NAS_IDENTIFIER] == ["bng-test"]
    assert got[Attr.NAS_IP_ADDRESS] == ["192.0.2.254"]
    assert got[Attr.NAS_PORT] == [4242]
    assert got[Attr.NAS_PORT_ID] == ["1:100.200"]
    assert int_value(got, Attr.NAS_PORT_TYPE) == 5
    assert int_value(got, Attr.SERVICE_TYPE) == 2
    assert int_value(got, Attr.FRAMED_PROTOCOL) == 1
    assert got[Attr.CALLING_STATION_ID] == ["02:00:00:00:00:01"]
    assert got[Attr.ACCT_SESSION_ID] == ["0000000A"]


def test_chap_and_mschapv2_request_layout():
    chap = AuthRequest(username="u", method=AuthMethod.CHAP_MD5, client_mac="m", line=line(),
                       session_id=1, chap_id=0x42, challenge=b"C" * 16, response=b"R" * 16)
    got = _decode_request(build_access_request(chap, ident=1, secret=SECRET, nas=NAS).RequestPacket())
    assert got[Attr.CHAP_PASSWORD] == [b"\x42" + b"R" * 16]
    assert got[Attr.CHAP_CHALLENGE] == [b"C" * 16]

    ppp_response = b"P" * 16 + b"\x00" * 8 + b"N" * 24 + b"\x00"
    ms = AuthRequest(username="u", method=AuthMethod.MSCHAPV2, client_mac="m", line=line(),
                     session_id=1, chap_id=9, challenge=b"A" * 16, response=ppp_response)
    got = _decode_request(build_access_request(ms, ident=1, secret=SECRET, nas=NAS).RequestPacket())
    assert got[Attr.MS_CHAP_CHALLENGE] == [b"A" * 16]
    # RFC 2548 2.3.2: Ident, Flags, Peer-Challenge, Reserved, Response
    assert got[Attr.MS_CHAP2_RESPONSE] == [b"\x09\x00" + b"P" * 16 + b"\x00" * 8 + b"N" * 24]


def test_agent_circuit_and_remote_id_are_sent():
    req = pap_request()
    req.line = line(circuit_id="olt1 eth 1/1/1:100", remote_id="cpe-42")
    got = _decode_request(build_access_request(req, ident=1, secret=SECRET, nas=NAS).RequestPacket())
    assert got[Attr.NAS_PORT_ID] == ["olt1 eth 1/1/1:100"]
    assert got[Attr.AGENT_CIRCUIT_ID] == [b"olt1 eth 1/1/1:100"]
    assert got[Attr.AGENT_REMOTE_ID] == [b"cpe-42"]


def _accept_for(request: rp.AuthPacket) -> rp.Packet:
    reply = request.CreateReply()
    reply.code = rp.AccessAccept
    return reply


def _decoded_reply(request: rp.AuthPacket, reply: rp.Packet):
    raw = reply.ReplyPacket()
    got = request.CreateReply(packet=raw)
    assert request.VerifyReply(got, raw, enforce_ma=True)
    return parse_access_reply(got, request.authenticator)


def test_access_accept_parsing():
    request = build_access_request(pap_request(), ident=3, secret=SECRET, nas=NAS)
    request.RequestPacket()
    reply = _accept_for(request)
    reply[Attr.FRAMED_IP_ADDRESS] = "100.64.0.10"
    reply[Attr.FRAMED_POOL] = "lab"
    reply[Attr.MS_PRIMARY_DNS] = "192.0.2.53"
    reply[Attr.MS_SECONDARY_DNS] = "192.0.2.54"
    reply[Attr.SESSION_TIMEOUT] = 3600
    reply[Attr.IDLE_TIMEOUT] = 600
    reply[Attr.ACCT_INTERIM_INTERVAL] = 300
    reply[Attr.CLASS] = b"\x00cls\xff"
    reply[Attr.FILTER_ID] = ["some-acl", "100000/20000"]
    reply[Attr.FRAMED_IPV6_PREFIX] = "2001:db8:0:1::/64"
    reply[Attr.DELEGATED_IPV6_PREFIX] = "2001:db8:100::/56"
    reply[Attr.REPLY_MESSAGE] = "welcome"
    reply[Attr.MS_CHAP2_SUCCESS] = b"\x01S=" + b"A" * 40
    res = _decoded_reply(request, reply)
    assert res.accepted
    assert res.framed_ip == v4("100.64.0.10")
    assert res.framed_pool == "lab"
    assert res.dns == [v4("192.0.2.53"), v4("192.0.2.54")]
    assert (res.session_timeout, res.idle_timeout, res.interim_interval) == (3600, 600, 300)
    assert res.classes == (b"\x00cls\xff",)
    assert (res.rate_down_kbps, res.rate_up_kbps) == (100000, 20000)
    assert res.framed_ipv6_prefix == ipaddress.IPv6Network("2001:db8:0:1::/64")
    assert res.delegated_ipv6_prefix == ipaddress.IPv6Network("2001:db8:100::/56")
    assert res.reply_message == "welcome"
    assert res.mschapv2_success == b"S=" + b"A" * 40


def test_framed_ip_pool_markers_mean_no_address():
    request = build_access_request(pap_request(), ident=3, secret=SECRET, nas=NAS)
    request.RequestPacket()
    reply = _accept_for(request)
    reply[Attr.FRAMED_IP_ADDRESS] = "255.255.255.254"
    assert _decoded_reply(request, reply).framed_ip is None


def test_reject_parsing():
    request = build_access_request(pap_request(), ident=3, secret=SECRET, nas=NAS)
    request.RequestPacket()
    reply = request.CreateReply()
    reply.code = rp.AccessReject
    reply[Attr.REPLY_MESSAGE] = "nope"
    res = _decoded_reply(request, reply)
    assert not res.accepted and res.reply_message == "nope"


def test_every_class_is_kept_and_echoed_in_order():
    """RFC 2865 5.25: an Access-Accept may carry several Class attributes,
    each to be sent back unmodified in accounting. Only the first was
    kept."""
    request = build_access_request(pap_request(), ident=3, secret=SECRET, nas=NAS)
    request.RequestPacket()
    reply = _accept_for(request)
    reply[Attr.CLASS] = [b"CLASS-A", b"\x00B", b"C"]
    res = _decoded_reply(request, reply)
    assert res.classes == (b"CLASS-A", b"\x00B", b"C")
    rec = AcctRecord(status=AcctStatus.INTERIM, acct_session_id="S", username="u", client_mac="02:00:00:00:00:01",
                     line=line(), session_id=7, framed_ip=v4("100.64.0.10"), classes=res.classes)
    got = rp.AcctPacket(packet=build_accounting_request(rec, ident=1, secret=SECRET, nas=NAS, delay=0)
                        .RequestPacket(), secret=SECRET, dict=load_dictionary())
    assert got[Attr.CLASS] == [b"CLASS-A", b"\x00B", b"C"]


@pytest.mark.parametrize("service,accepted", [(None, True), ("Framed-User", True), ("Login-User", False),
                                              ("Authorize-Only", False), (99, False)])
def test_an_accept_for_a_service_we_do_not_give_is_a_reject(service, accepted):
    """RFC 2865 5.6: an unknown or unsupported Service-Type MUST be treated
    as an Access-Reject. It was ignored: a server could not deny a user
    framed (PPP) service through Service-Type."""
    request = build_access_request(pap_request(), ident=3, secret=SECRET, nas=NAS)
    request.RequestPacket()
    reply = _accept_for(request)
    reply[Attr.FRAMED_IP_ADDRESS] = "100.64.0.10"
    if service is not None:
        reply[Attr.SERVICE_TYPE] = service
    res = _decoded_reply(request, reply)
    assert res.accepted is accepted
    if not accepted:
        assert res.framed_ip is None and "Service-Type" in res.reply_message


@pytest.mark.parametrize("password", [b"x", b"sixteen-octets!!", b"l2tp tunnel secret longer than 16"])
def test_tunnels_with_salted_password(password):
    """Tunnel-Password built by an independent RFC 2868 3.5 implementation
    (tests/unit/aaa_fakes.salt_encrypt) is decrypted back."""
    request = build_access_request(pap_request(), ident=5, secret=SECRET, nas=NAS)
    request.RequestPacket()
    reply = _accept_for(request)
    d = load_dictionary()

    def tagged_int(name, tag, value):
        return bytes([tag]) + value.to_bytes(3, "big")

    raw: dict[int, list[bytes]] = {}
    for tag, server, pref in ((1, "192.0.2.10", 2), (2, "192.0.2.11", 1), (3, "192.0.2.12", 0)):
        raw.setdefault(64, []).append(tagged_int("type", tag, 3 if tag != 3 else 1))  # tag 3: PPTP
        raw.setdefault(65, []).append(tagged_int("medium", tag, 1))
        raw.setdefault(67, []).append(bytes([tag]) + server.encode())
        raw.setdefault(83, []).append(tagged_int("pref", tag, pref))
        raw.setdefault(90, []).append(bytes([tag]) + b"bng1")
        raw.setdefault(91, []).append(bytes([tag]) + f"lns{tag}".encode())
        raw.setdefault(82, []).append(bytes([tag]) + b"grp")
        raw.setdefault(69, []).append(
            bytes([tag]) + salt_encrypt(password + bytes([tag]), SECRET, request.authenticator))
    for code, values in raw.items():
        assert d.attributes.get(d.attrindex.GetBackward(code)).has_tag
        reply[code] = values
    res = _decoded_reply(request, reply)
    # PPTP tunnel (tag 3) skipped; the rest ordered by preference
    assert [t.server_endpoint for t in res.tunnels] == ["192.0.2.11", "192.0.2.10"]
    assert [t.password for t in res.tunnels] == [password + b"\x02", password + b"\x01"]
    assert res.tunnels[0].client_auth_id == "bng1"
    assert res.tunnels[0].server_auth_id == "lns2"
    assert res.tunnels[0].preference == 1
    assert res.tunnels[0].assignment_id == "grp"


def test_mppe_keys_decrypted():
    """MS-MPPE-Send/Recv-Key (RFC 2548 2.4.2/2.4.3), encrypted independently."""
    request = build_access_request(pap_request(), ident=5, secret=SECRET, nas=NAS)
    request.RequestPacket()
    reply = _accept_for(request)
    send, recv = bytes(range(16)), bytes(range(100, 116))
    reply[(311, 16)] = [salt_encrypt(send, SECRET, request.authenticator, salt=b"\x80\x01")]
    reply[(311, 17)] = [salt_encrypt(recv, SECRET, request.authenticator, salt=b"\x80\x02")]
    assert _decoded_reply(request, reply).mppe_keys == (send, recv)


def test_salt_encrypt_matches_rfc_definition_by_hand():
    """The test's own salt encryption against the RFC 2868 formula, one block."""
    ra, salt = b"\x11" * 16, b"\x80\x00"
    out = salt_encrypt(b"pw", SECRET, ra, salt)
    b1 = hashlib.md5(SECRET + ra + salt).digest()
    assert out[2:] == bytes(x ^ y for x, y in zip(b"\x02pw" + b"\x00" * 13, b1))


def test_accounting_request_gigawords_and_attributes():
    rec = AcctRecord(status=AcctStatus.STOP, acct_session_id="S1", username="alice@lab.test",
                     client_mac="02:00:00:00:00:01", line=line(), session_id=7,
                     framed_ip=v4("100.64.0.10"), session_time=3661,
                     counters=SessionCounters(packets_in=10, octets_in=5 * 2**32 + 123,
                                              packets_out=20, octets_out=2**32 - 1),
                     terminate_cause=TerminateCause.IDLE_TIMEOUT, classes=(b"cls",),
                     framed_ipv6_prefix=ipaddress.IPv6Network("2001:db8:0:1::/64"),
                     delegated_ipv6_prefix=ipaddress.IPv6Network("2001:db8:100::/56"),
                     event_time=1_700_000_000)
    pkt = build_accounting_request(rec, ident=9, secret=SECRET, nas=NAS, delay=4)
    raw = pkt.RequestPacket()
    got = rp.AcctPacket(packet=raw, secret=SECRET, dict=load_dictionary())
    assert got.VerifyAcctRequest()
    assert int_value(got, Attr.ACCT_STATUS_TYPE) == 2
    assert got[Attr.ACCT_INPUT_OCTETS] == [123] and got[Attr.ACCT_INPUT_GIGAWORDS] == [5]
    assert got[Attr.ACCT_OUTPUT_OCTETS] == [2**32 - 1] and got[Attr.ACCT_OUTPUT_GIGAWORDS] == [0]
    assert got[Attr.ACCT_INPUT_PACKETS] == [10] and got[Attr.ACCT_OUTPUT_PACKETS] == [20]
    assert got[Attr.ACCT_SESSION_TIME] == [3661]
    assert int_value(got, Attr.ACCT_TERMINATE_CAUSE) == 4
    assert got[Attr.CLASS] == [b"cls"]
    assert got[Attr.EVENT_TIMESTAMP] == [1_700_000_000]
    assert got[Attr.ACCT_DELAY_TIME] == [4]
    assert got[Attr.FRAMED_IP_ADDRESS] == ["100.64.0.10"]
    assert got[Attr.FRAMED_IPV6_PREFIX] == ["2001:db8:0:1::/64"]
    assert got[Attr.DELEGATED_IPV6_PREFIX] == ["2001:db8:100::/56"]
    assert got[Attr.NAS_IDENTIFIER] == ["bng-test"]


def test_start_has_no_counters():
    rec = AcctRecord(status=AcctStatus.START, acct_session_id="S1", username="u",
                     client_mac="m", line=line(), session_id=7, framed_ip=None)
    got = build_accounting_request(rec, ident=9, secret=SECRET, nas=NAS, delay=0)
    assert Attr.ACCT_INPUT_OCTETS not in got and Attr.ACCT_TERMINATE_CAUSE not in got


@given(st.integers(min_value=0, max_value=2**64 - 1))
def test_split_counter_recombines(value):
    low, giga = split_counter(value)
    assert 0 <= low < 2**32 and giga * 2**32 + low == value


@pytest.mark.parametrize("value,expected", [
    ("10000", (10000, 10000)),
    ("100000/20000", (100000, 20000)),
    ("100000\\20000", (100000, 20000)),
    ("100000:20000", (100000, 20000)),
    ("100M/20M", (100000, 20000)),
    ("1G/512k", (1_000_000, 512)),
    ("0,2000/1000", (2000, 1000)),
    ("1,2000/1000", None),          # time range 1: not ours
    ("acl-inbound", None),
    ("100/", None),
    ("", None),
    (b"5000/1000", (5000, 1000)),
    ("500B/1999b", (1, 2)),         # under a kbit/s: rounded up, never 0 (no limit)
    ("0", (0, 0)),                  # 0 is no limit, as written
])
def test_filter_id_rates(value, expected):
    assert rates.parse_filter_id(value) == expected


@given(st.integers(0, 10**8), st.integers(0, 10**8))
def test_filter_id_format_parses_back(down, up):
    assert rates.parse_filter_id(rates.format_filter_id(down, up)) == (down, up)

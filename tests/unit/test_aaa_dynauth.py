"""RFC 5176 Dynamic Authorization Server on 127.0.0.1."""
from __future__ import annotations

import asyncio
import ipaddress
import time

from pyrad import packet as rp

from bng_controller.aaa.base import DynAuthError, DynAuthRequest
from bng_controller.aaa.dynauth import DynAuthServer
from bng_controller.aaa.raddict import Attr, int_value, load_dictionary
from tests.unit.aaa_fakes import SECRET, run


class _Client(asyncio.DatagramProtocol):
    def __init__(self):
        self.replies: asyncio.Queue = asyncio.Queue()

    def datagram_received(self, data, addr):
        self.replies.put_nowait(data)


async def _exchange(port: int, raw: bytes, *, expect: int = 1, wait: float = 0.5) -> list[bytes]:
    loop = asyncio.get_running_loop()
    transport, client = await loop.create_datagram_endpoint(
        _Client, remote_addr=("127.0.0.1", port))
    try:
        transport.sendto(raw)
        replies = []
        for _ in range(expect):
            try:
                replies.append(await asyncio.wait_for(client.replies.get(), wait))
            except TimeoutError:
                break
        return replies
    finally:
        transport.close()


def _request(code=rp.DisconnectRequest, secret=SECRET, ma=False, **attrs) -> rp.CoAPacket:
    pkt = rp.CoAPacket(code=code, id=42, secret=secret, dict=load_dictionary(),
                       message_authenticator=ma or None)
    for name, value in attrs.items():
        pkt[name.replace("_", "-")] = value
    return pkt


class _Handler:
    def __init__(self, answer=None, exc=None):
        self.calls: list[DynAuthRequest] = []
        self.answer = answer
        self.exc = exc

    async def __call__(self, req: DynAuthRequest):
        self.calls.append(req)
        await asyncio.sleep(0.01)
        if self.exc:
            raise self.exc
        return self.answer


async def _server(handler, **cfg) -> DynAuthServer:
    config = {"bind": "127.0.0.1", "port": 0, "clients": [{"address": "127.0.0.1",
                                                           "secret": SECRET.decode()}],
              "nas_identifier": "bng-test", "nas_ip_address": "192.0.2.254"}
    config.update(cfg)
    server = DynAuthServer.from_dict(config, handler)
    await server.start()
    return server


def _decode_reply(request: rp.CoAPacket, raw: bytes) -> rp.Packet:
    reply = request.CreateReply(packet=raw)
    assert request.VerifyReply(reply, raw)
    return reply


@run
async def test_disconnect_ack():
    handler = _Handler()
    server = await _server(handler)
    try:
        req = _request(Acct_Session_Id="S1", User_Name="alice@lab.test",
                       Framed_IP_Address="100.64.0.10", Calling_Station_Id="02:00:00:00:00:01",
                       NAS_Port_Id="1:100.200", NAS_Identifier="bng-test",
                       Event_Timestamp=int(time.time()) - 5)
        [raw] = await _exchange(server.port, req.RequestPacket())
        reply = _decode_reply(req, raw)
        assert reply.code == rp.DisconnectACK
        [call] = handler.calls
        assert call == DynAuthRequest(kind="disconnect", acct_session_id="S1",
                                      username="alice@lab.test",
                                      framed_ip=ipaddress.IPv4Address("100.64.0.10"),
                                      client_mac="02:00:00:00:00:01", nas_port_id="1:100.200")
        assert server.counters.disconnect_ack == 1
    finally:
        await server.close()


@run
async def test_coa_carries_new_authorization_and_nak_cause():
    handler = _Handler(answer=DynAuthError.SESSION_CONTEXT_NOT_FOUND)
    server = await _server(handler)
    try:
        req = _request(rp.CoARequest, ma=True, Acct_Session_Id="S1", Filter_Id="20000/5000",
                       Session_Timeout=600, Idle_Timeout=60, Acct_Interim_Interval=120)
        [raw] = await _exchange(server.port, req.RequestPacket())
        reply = _decode_reply(req, raw)
        assert reply.code == rp.CoANAK
        assert int_value(reply, Attr.ERROR_CAUSE) == 503
        assert reply.message_authenticator        # answered in kind, and verified above
        new = handler.calls[0].new_auth
        assert (new.rate_down_kbps, new.rate_up_kbps) == (20000, 5000)
        assert (new.session_timeout, new.idle_timeout, new.interim_interval) == (600, 60, 120)
        assert server.counters.coa_nak == 1 and server.counters.nak_causes == {503: 1}
    finally:
        await server.close()


@run
async def test_bad_authenticator_is_silently_dropped():
    handler = _Handler()
    server = await _server(handler)
    try:
        req = _request(secret=b"wrong-secret", Acct_Session_Id="S1")
        assert await _exchange(server.port, req.RequestPacket(), wait=0.3) == []
        raw = bytearray(_request(Acct_Session_Id="S1").RequestPacket())
        raw[-1] ^= 1                                   # attribute changed in transit
        assert await _exchange(server.port, bytes(raw), wait=0.3) == []
        # a valid Request Authenticator but a wrong Message-Authenticator
        req = _request(ma=True, Acct_Session_Id="S1")
        req.RequestPacket()
        req[80] = [b"\x00" * 16]
        req.message_authenticator = False
        assert await _exchange(server.port, req.RequestPacket(), wait=0.3) == []
        assert handler.calls == [] and server.counters.bad_authenticator == 3
    finally:
        await server.close()


@run
async def test_unknown_client_dropped():
    handler = _Handler()
    server = await _server(handler, clients=[{"address": "192.0.2.1", "secret": "x"}])
    try:
        assert await _exchange(server.port, _request(Acct_Session_Id="S").RequestPacket(),
                               wait=0.3) == []
        assert server.counters.unknown_client == 1 and handler.calls == []
    finally:
        await server.close()


@run
async def test_duplicate_gets_cached_reply_handler_runs_once():
    handler = _Handler()
    server = await _server(handler)
    try:
        raw = _request(Acct_Session_Id="S1").RequestPacket()
        loop = asyncio.get_running_loop()
        transport, client = await loop.create_datagram_endpoint(
            _Client, remote_addr=("127.0.0.1", server.port))
        try:
            transport.sendto(raw)
            transport.sendto(raw)                     # while the handler runs: dropped
            first = await asyncio.wait_for(client.replies.get(), 1)
            transport.sendto(raw)                     # after: the cached answer
            second = await asyncio.wait_for(client.replies.get(), 1)
        finally:
            transport.close()
        assert first == second
        assert len(handler.calls) == 1 and server.counters.duplicates == 2
    finally:
        await server.close()


async def _nak_cause(server, req) -> tuple[int, int]:
    [raw] = await _exchange(server.port, req.RequestPacket())
    reply = _decode_reply(req, raw)
    return reply.code, int_value(reply, Attr.ERROR_CAUSE)


@run
async def test_refusals_before_the_handler():
    handler = _Handler()
    server = await _server(handler)
    try:
        assert await _nak_cause(server, _request(Acct_Session_Id="S", NAS_Identifier="other")) \
            == (rp.DisconnectNAK, 403)
        assert await _nak_cause(server, _request(Acct_Session_Id="S",
                                                 NAS_IP_Address="192.0.2.1")) \
            == (rp.DisconnectNAK, 403)
        assert await _nak_cause(server, _request(NAS_Identifier="bng-test")) \
            == (rp.DisconnectNAK, 402)
        assert await _nak_cause(server, _request(rp.CoARequest, Acct_Session_Id="S",
                                                 Framed_Pool="other")) == (rp.CoANAK, 401)
        assert await _nak_cause(server, _request(Acct_Session_Id="S", Filter_Id="1/1")) \
            == (rp.DisconnectNAK, 401)               # no authorization in a Disconnect
        assert await _nak_cause(server, _request(rp.CoARequest, Acct_Session_Id="S",
                                                 Filter_Id="gold-acl")) == (rp.CoANAK, 407)
        assert await _nak_cause(server, _request(rp.CoARequest, Acct_Session_Id="S",
                                                 Service_Type=17)) == (rp.CoANAK, 405)
        assert handler.calls == []
    finally:
        await server.close()


@run
async def test_handler_exception_is_nak_506():
    handler = _Handler(exc=RuntimeError("boom"))
    server = await _server(handler)
    try:
        assert await _nak_cause(server, _request(rp.CoARequest, User_Name="u")) \
            == (rp.CoANAK, 506)
        assert server.counters.handler_errors == 1
    finally:
        await server.close()


@run
async def test_success_cause_rides_on_ack():
    handler = _Handler(answer=DynAuthError.RESIDUAL_SESSION_CONTEXT_REMOVED)
    server = await _server(handler)
    try:
        assert await _nak_cause(server, _request(User_Name="u")) == (rp.DisconnectACK, 201)
    finally:
        await server.close()


@run
async def test_from_controller_config_object():
    from dataclasses import dataclass, field

    @dataclass
    class Section:            # the shape of the controller config's dynauth section
        listen: str = "127.0.0.1:0"
        clients: list = field(default_factory=lambda: [{"address": "127.0.0.1",
                                                        "secret": SECRET.decode()}])
        nas_identifier: str = ""

    handler = _Handler()
    server = DynAuthServer.from_config(Section(), handler)
    assert server.config.nas_identifier is None and server.config.bind == "127.0.0.1"
    await server.start()
    try:
        assert await _nak_cause(server, _request(User_Name="u", NAS_Identifier="any")) \
            == (rp.DisconnectACK, None)
    finally:
        await server.stop()


@run
async def test_a_request_with_a_stale_event_timestamp_is_dropped():
    """RFC 5176 3.5/6.3: with Event-Timestamp present the NAS MUST check it
    is recent and silently discard it if not. A captured Disconnect was
    acted on again once it left the duplicate cache (30 s): anyone holding
    one could kick its user off again and again."""
    handler = _Handler()
    server = await _server(handler)
    try:
        now = int(time.time())
        for stamp in (now - 86400, now + 3600):
            req = _request(User_Name="alice@lab.test", Event_Timestamp=stamp)
            assert await _exchange(server.port, req.RequestPacket(), wait=0.3) == []
        assert server.counters.stale == 2 and not handler.calls
        req = _request(User_Name="alice@lab.test", Event_Timestamp=now - 60)
        [raw] = await _exchange(server.port, req.RequestPacket())
        assert _decode_reply(req, raw).code == rp.DisconnectACK and len(handler.calls) == 1
        req = _request(User_Name="bob@lab.test")          # no Event-Timestamp: the RFC does not require one
        [raw] = await _exchange(server.port, req.RequestPacket())
        assert _decode_reply(req, raw).code == rp.DisconnectACK
    finally:
        await server.close()
    server = await _server(handler, event_timestamp_window=0)             # the check off
    try:
        req = _request(User_Name="alice@lab.test", Event_Timestamp=1_700_000_000)
        [raw] = await _exchange(server.port, req.RequestPacket())
        assert _decode_reply(req, raw).code == rp.DisconnectACK
    finally:
        await server.close()


@run
async def test_an_ipv4_client_reaches_a_dual_stack_listener():
    """Bound to [::], an IPv4 client's requests arrive from ::ffff:a.b.c.d,
    which matched no client listed as a.b.c.d: every request was dropped
    as from an unknown client."""
    handler = _Handler()
    server = await _server(handler, bind="::")
    try:
        req = _request(User_Name="alice@lab.test")
        [raw] = await _exchange(server.port, req.RequestPacket())
        assert _decode_reply(req, raw).code == rp.DisconnectACK
        assert server.counters.unknown_client == 0
    finally:
        await server.close()


def test_the_controller_config_sets_every_dynauth_setting():
    """Only listen, clients and nas_identifier reached the server from the
    controller's config: Message-Authenticator could not be required."""
    from bng_controller.config import DynAuthConfig as Section
    server = DynAuthServer.from_config(Section(listen="127.0.0.1:3799", clients=[
        {"address": "192.0.2.1", "secret": "s"}], nas_ip_address="192.0.2.254",
        require_message_authenticator=True, duplicate_window=10, event_timestamp_window=60), _Handler())
    c = server.config
    assert (c.nas_ip_address, c.require_message_authenticator, c.duplicate_window,
            c.event_timestamp_window) == ("192.0.2.254", True, 10, 60)


@run
async def test_a_coa_with_a_malformed_value_is_refused_whole():
    """RFC 5176 3.5: a value the NAS cannot take is NAK'd with Error-Cause
    407, and a CoA is applied whole or not at all. A 3-octet Session-Timeout
    was skipped and the rest of the CoA applied and ACKed."""
    handler = _Handler()
    server = await _server(handler)
    try:
        req = _request(rp.CoARequest, User_Name="alice@lab.test", Filter_Id="10000/2000")
        req.AddAttribute(Attr.SESSION_TIMEOUT, 0)             # replaced below by a 3-octet value
        raw = req.RequestPacket()
        at = raw.index(bytes([27, 6]))                         # Session-Timeout, length 6
        bad = raw[:at] + bytes([27, 5, 0, 0, 1]) + raw[at + 6:]
        bad = bad[:2] + len(bad).to_bytes(2, "big") + bytes(16) + bad[20:]
        import hashlib
        bad = bad[:4] + hashlib.md5(bad + SECRET).digest() + bad[20:]
        [reply] = await _exchange(server.port, bad)
        assert reply[0] == rp.CoANAK and not handler.calls
        assert server.counters.nak_causes == {int(DynAuthError.INVALID_ATTRIBUTE_VALUE): 1}
    finally:
        await server.close()


@run
async def test_the_identification_attributes_our_accounting_sends_are_taken():
    """RFC 5176 3: NAS-Port and Framed-IPv6-Prefix identify a session too,
    and our accounting sends both: a server that echoed them was NAK'd 401."""
    handler = _Handler()
    server = await _server(handler)
    try:
        req = _request(Acct_Session_Id="S1", NAS_Port=7, Framed_IPv6_Prefix="2001:db8:0:1::/64")
        [raw] = await _exchange(server.port, req.RequestPacket())
        assert _decode_reply(req, raw).code == rp.DisconnectACK
        [call] = handler.calls
        assert (call.nas_port, call.framed_ipv6_prefix) == (7, ipaddress.IPv6Network("2001:db8:0:1::/64"))
    finally:
        await server.close()

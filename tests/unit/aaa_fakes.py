"""Test doubles for the AAA tests: a scriptable asyncio RADIUS server on
127.0.0.1, an independent RFC 2868 3.5 salt encryption, request fixtures."""
from __future__ import annotations

import asyncio
import functools
import hashlib
import ipaddress
import os
from dataclasses import dataclass, field
from typing import Callable

from pyrad import packet as rp

from bng_controller.aaa.base import AuthMethod, AuthRequest, LineInfo
from bng_controller.aaa.raddict import load_dictionary

SECRET = b"testing123"


def run(coro_fn):
    """Run an async test function in a fresh event loop (no pytest-asyncio here)."""
    @functools.wraps(coro_fn)
    def wrapper(*args, **kwargs):
        return asyncio.run(asyncio.wait_for(coro_fn(*args, **kwargs), 30))
    return wrapper


def salt_encrypt(plain: bytes, secret: bytes, request_authenticator: bytes,
                 salt: bytes | None = None) -> bytes:
    """RFC 2868 3.5 / RFC 2548 2.4.2, written independently of pyrad and of
    the code under test: salt (high bit set) || c(1) || c(2) ..., where
    P = len || plain || zero padding, b(1) = MD5(S + R + A), c(i) = p(i) xor b(i),
    b(i) = MD5(S + c(i-1))."""
    salt = salt if salt is not None else bytes([0x80 | os.urandom(1)[0], os.urandom(1)[0]])
    assert salt[0] & 0x80
    p = bytes([len(plain)]) + plain
    p += b"\x00" * (-len(p) % 16)
    out, prev = b"", request_authenticator + salt
    for i in range(0, len(p), 16):
        b = hashlib.md5(secret + prev).digest()
        c = bytes(x ^ y for x, y in zip(p[i:i + 16], b))
        out += c
        prev = c
    return salt + out


def line(**kw) -> LineInfo:
    return LineInfo(port=1, s_vid=100, c_vid=200, line_id=4242, **kw)


def pap_request(username="alice@lab.test", password=b"alice-pw", **kw) -> AuthRequest:
    return AuthRequest(username=username, method=AuthMethod.PAP, client_mac="02:00:00:00:00:01",
                       line=line(), session_id=7, password=password,
                       acct_session_id="0000000A", **kw)


@dataclass
class Received:
    data: bytes
    addr: tuple
    packet: rp.Packet


ReplyFn = Callable[[rp.Packet], "rp.Packet | list[bytes] | None"]


@dataclass
class FakeRadiusServer(asyncio.DatagramProtocol):
    """Answers with `reply_fn(request)`: a reply packet (encoded here), a
    list of raw datagrams to send, or None to stay silent. `silent` drops
    everything; `drop_first` drops that many requests first."""
    secret: bytes = SECRET
    reply_fn: ReplyFn | None = None
    silent: bool = False
    drop_first: int = 0
    delay: float = 0.0
    received: list[Received] = field(default_factory=list)
    answered: list[rp.Packet] = field(default_factory=list)
    unanswered: set = field(default_factory=set)
    max_unanswered: int = 0
    transport: asyncio.DatagramTransport | None = None

    async def start(self) -> "FakeRadiusServer":
        loop = asyncio.get_running_loop()
        await loop.create_datagram_endpoint(lambda: self, local_addr=("127.0.0.1", 0))
        return self

    @property
    def port(self) -> int:
        return self.transport.get_extra_info("sockname")[1]

    def close(self) -> None:
        if self.transport:
            self.transport.close()

    def connection_made(self, transport) -> None:
        self.transport = transport

    def datagram_received(self, data, addr) -> None:
        cls = rp.AuthPacket if data[0] == rp.AccessRequest else rp.AcctPacket
        pkt = cls(packet=data, secret=self.secret, dict=load_dictionary())
        self.received.append(Received(data, addr, pkt))
        if self.silent:
            return
        if self.drop_first > 0:
            self.drop_first -= 1
            return
        key = (addr, data[1])
        self.unanswered.add(key)
        self.max_unanswered = max(self.max_unanswered, len(self.unanswered))
        asyncio.get_running_loop().call_later(self.delay, self._answer, pkt, addr, key)

    def _answer(self, pkt, addr, key) -> None:
        self.unanswered.discard(key)
        reply = (self.reply_fn or default_reply)(pkt)
        if reply is None or self.transport is None:
            return
        self.answered.append(pkt)
        datagrams = reply if isinstance(reply, list) else [reply.ReplyPacket()]
        for d in datagrams:
            self.transport.sendto(d, addr)


def default_reply(req: rp.Packet) -> rp.Packet:
    """Access-Accept (with Message-Authenticator) or Accounting-Response."""
    reply = req.CreateReply()
    if req.code == rp.AccessRequest:
        reply.code = rp.AccessAccept
    return reply


def server_cfg(*servers: FakeRadiusServer, **kw) -> dict:
    cfg = {"servers": [{"address": "127.0.0.1", "auth_port": s.port, "acct_port": s.port,
                        "secret": s.secret.decode()} for s in servers],
           "timeout": 0.25, "retries": 1, "dead_time": 30, "nas_identifier": "bng-test",
           "nas_ip_address": "192.0.2.254", "acct_retry_interval": 0.1}
    cfg.update(kw)
    return cfg


def v4(a: str) -> ipaddress.IPv4Address:
    return ipaddress.IPv4Address(a)

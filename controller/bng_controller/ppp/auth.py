"""The authenticator side of PAP (RFC 1334) and CHAP (RFC 1994, with the
MS-CHAPv2 framing of RFC 2759).

Both turn the peer's packets into one `Credentials` for AAA and, once AAA
has decided, answer the peer. Retransmitted requests are answered with the
same verdict (the peer lost our reply) and never reach AAA twice. Neither
verifies a secret: that is AAA's job (local file or RADIUS).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable

from ..aaa.base import AuthMethod
from .codec import PPP_CHAP, PPP_PAP, CodecError, ControlPacket, parse_control

PAP_REQUEST = 1
PAP_ACK = 2
PAP_NAK = 3

CHAP_CHALLENGE = 1
CHAP_RESPONSE = 2
CHAP_SUCCESS = 3
CHAP_FAILURE = 4

MSCHAPV2_RESPONSE_LEN = 49


@dataclass(frozen=True)
class Credentials:
    method: AuthMethod
    username: str
    password: bytes = b""
    chap_id: int = 0                  # the request's identifier (CHAP Response or PAP Authenticate-Request)
    challenge: bytes = b""
    response: bytes = b""


@dataclass(frozen=True)
class Verdict:
    accepted: bool
    message: str = ""
    mschapv2_success: bytes = b""     # "S=<40 hex>" from AAA


Sink = Callable[[int, bytes], None]


class PapAuthenticator:
    """Waits for Authenticate-Request; the link's timer bounds the wait."""

    protocol = PPP_PAP

    def __init__(self, sink: Sink):
        self.sink = sink
        self.pending: Credentials | None = None
        self._last_id: int | None = None
        self._last_reply: bytes | None = None
        self.deadline: float | None = None

    def start(self) -> None:
        pass

    def timeout(self) -> bool:
        return False

    def receive(self, info: bytes) -> Credentials | None:
        pkt = parse_control(info)
        if pkt.code != PAP_REQUEST:
            return None
        if self._last_reply is not None:
            # Decided already: our Ack/Nak was lost or came late, and the
            # peer asks again (RFC 1334 2.2.1: with a new Identifier). Same
            # verdict, its Identifier, as pppd's authenticator does.
            reply = bytearray(self._last_reply)
            reply[1] = pkt.identifier
            self.sink(PPP_PAP, bytes(reply))
            return None
        if self.pending is not None:
            return None                                  # AAA is still deciding
        d = pkt.data
        if len(d) < 1 or len(d) < 1 + d[0] + 1 or len(d) < 2 + d[0] + d[1 + d[0]]:
            raise CodecError("bad pap request")
        user = d[1:1 + d[0]]
        plen = d[1 + d[0]]
        password = d[2 + d[0]:2 + d[0] + plen]
        self._last_id = pkt.identifier
        # the identifier travels with the credentials: an LNS answering a
        # proxied authentication (L2TP) must answer with it
        self.pending = Credentials(AuthMethod.PAP, user.decode("utf-8", "replace"), password=password,
                                   chap_id=pkt.identifier)
        return self.pending

    def proxied(self, creds: Credentials, identifier: int) -> Credentials:
        """The Authenticate-Request an L2TP LAC received and proxied (RFC
        2661 proxy authentication): answered here, with its identifier."""
        self._last_id = identifier
        self.pending = creds
        return creds

    def answer(self, verdict: Verdict) -> None:
        msg = verdict.message.encode()[:255]
        code = PAP_ACK if verdict.accepted else PAP_NAK
        self._last_reply = ControlPacket(code, self._last_id or 0, bytes([len(msg)]) + msg).encode()
        self.pending = None
        self.sink(PPP_PAP, self._last_reply)


class ChapAuthenticator:
    """Sends the Challenge, retransmits it on the Restart timer, and turns
    the Response into Credentials."""

    protocol = PPP_CHAP

    def __init__(self, sink: Sink, method: AuthMethod, name: str, clock: Callable[[], float],
                 restart_time: float = 3.0, max_challenges: int = 10, identifier: int | None = None):
        """`identifier`: the link passes one past its previous exchange's,
        so that a late Response to an earlier Challenge (before an LCP
        renegotiation) cannot match this one (RFC 1994 4.1: the Identifier
        changes with each Challenge)."""
        self.sink = sink
        self.method = method
        self.name = name.encode()
        self.clock = clock
        self.restart_time = restart_time
        self.retries_left = max_challenges
        self.identifier = int.from_bytes(os.urandom(1), "big") if identifier is None else identifier & 0xFF
        self.challenge = os.urandom(16)
        self.pending: Credentials | None = None
        self._last_reply: bytes | None = None
        self.deadline: float | None = None

    def _send_challenge(self) -> None:
        self.retries_left -= 1
        self.deadline = self.clock() + self.restart_time
        data = bytes([len(self.challenge)]) + self.challenge + self.name
        self.sink(PPP_CHAP, ControlPacket(CHAP_CHALLENGE, self.identifier, data).encode())

    def start(self) -> None:
        self._send_challenge()

    def timeout(self) -> bool:
        """Retransmit the Challenge; False when out of retries (the link
        gives up on the peer)."""
        self.deadline = None
        if self.pending is not None or self._last_reply is not None:
            return True
        if self.retries_left <= 0:
            return False
        self._send_challenge()
        return True

    def receive(self, info: bytes) -> Credentials | None:
        pkt = parse_control(info)
        if pkt.code != CHAP_RESPONSE or pkt.identifier != self.identifier:
            return None
        if self._last_reply is not None:
            self.sink(PPP_CHAP, self._last_reply)        # our Success/Failure was lost
            return None
        if self.pending is not None:
            return None
        d = pkt.data
        if not d or len(d) < 1 + d[0]:
            raise CodecError("bad chap response")
        value = d[1:1 + d[0]]
        name = d[1 + d[0]:]
        if self.method == AuthMethod.MSCHAPV2 and len(value) != MSCHAPV2_RESPONSE_LEN:
            raise CodecError("bad ms-chapv2 response length")
        if self.method == AuthMethod.CHAP_MD5 and len(value) != 16:
            raise CodecError("bad chap-md5 response length")
        self.deadline = None
        self.pending = Credentials(self.method, name.decode("utf-8", "replace"), chap_id=self.identifier,
                                   challenge=self.challenge, response=value)
        return self.pending

    def proxied(self, creds: Credentials) -> Credentials:
        """The Challenge/Response an L2TP LAC exchanged and proxied: the
        Success/Failure is ours to send, with its identifier."""
        self.identifier = creds.chap_id
        self.challenge = creds.challenge
        self.deadline = None
        self.pending = creds
        return creds

    def answer(self, verdict: Verdict) -> None:
        if self.method == AuthMethod.MSCHAPV2:
            if verdict.accepted:
                msg = verdict.mschapv2_success + b" M=" + (verdict.message or "Welcome").encode()
            else:
                # RFC 2759 6: E=691 (authentication failure), no retry
                msg = (b"E=691 R=0 C=" + self.challenge.hex().upper().encode() + b" V=3 M="
                       + (verdict.message or "Authentication failed").encode())
        else:
            msg = verdict.message.encode()
        code = CHAP_SUCCESS if verdict.accepted else CHAP_FAILURE
        self._last_reply = ControlPacket(code, self.identifier, msg[:1000]).encode()
        self.pending = None
        self.sink(PPP_CHAP, self._last_reply)


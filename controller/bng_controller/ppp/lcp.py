"""LCP as the BNG negotiates it with a subscriber (RFC 1661, RFC 2516 7).

The BNG is the authenticator: it asks for an Authentication-Protocol from
its configured preference list, follows the peer's Nak to another allowed
one, and refuses to be authenticated itself. Over PPPoE the MRU is at most
1492 unless RFC 4638 granted more, and ACCM, ACFC, PFC and FCS-Alternatives
are rejected (RFC 2516 section 7; our data plane expects a 2-byte protocol).
"""
from __future__ import annotations

import random
import struct
from dataclasses import dataclass, field

from ..aaa.base import AuthMethod
from .codec import CONF_ACK, CONF_NAK, CONF_REJ, PPP_CHAP, PPP_PAP, Option

OPT_MRU = 1
OPT_ACCM = 2
OPT_AUTH = 3
OPT_QUALITY = 4
OPT_MAGIC = 5
OPT_PFC = 7
OPT_ACFC = 8
OPT_FCS_ALT = 9

CHAP_MD5 = 5
CHAP_MSV2 = 0x81

MIN_MRU = 64


def auth_option(method: AuthMethod) -> bytes:
    if method == AuthMethod.PAP:
        return struct.pack("!H", PPP_PAP)
    return struct.pack("!HB", PPP_CHAP, CHAP_MD5 if method == AuthMethod.CHAP_MD5 else CHAP_MSV2)


def auth_from_option(value: bytes) -> AuthMethod | None:
    if value == struct.pack("!H", PPP_PAP):
        return AuthMethod.PAP
    if len(value) == 3 and value[:2] == struct.pack("!H", PPP_CHAP):
        return {CHAP_MD5: AuthMethod.CHAP_MD5, CHAP_MSV2: AuthMethod.MSCHAPV2}.get(value[2])
    return None


@dataclass
class LcpConfig:
    mru: int = 1492
    auth: list[AuthMethod] = field(default_factory=lambda: [AuthMethod.CHAP_MD5, AuthMethod.PAP])
    echo_interval: float = 30.0          # 0: no keepalive
    echo_failures: int = 3               # unanswered Echo-Requests before the peer is dead
    restart_time: float = 3.0
    max_configure: int = 10
    max_terminate: int = 2
    max_failure: int = 5

    @classmethod
    def from_dict(cls, d: dict) -> "LcpConfig":
        c = cls()
        for k, v in (d or {}).items():
            if k == "auth":
                v = [AuthMethod(x) for x in v]
            if not hasattr(c, k):
                raise ValueError(f"lcp: unknown setting {k!r}")
            setattr(c, k, v)
        return c


class LcpNegotiator:
    """Option policy of the BNG's LCP. The layer upcalls go to `link`."""

    required_options: frozenset[int] = frozenset()

    def __init__(self, cfg: LcpConfig, link, max_payload: int = 1492, rng: random.Random | None = None):
        self.cfg = cfg
        self.link = link
        self.rng = rng or random.Random()
        # RFC 4638 lifts PPPoE's 1492 limit to what discovery granted.
        self.max_mru = max_payload if max_payload > 1492 else min(cfg.mru, 1492)
        self.our_mru = self.max_mru
        self.peer_mru = self.max_mru      # what we may send the peer
        self.our_magic = self._new_magic()
        self.peer_magic = 0
        self._auth_candidates = list(cfg.auth)
        self.auth: AuthMethod | None = self._auth_candidates[0] if self._auth_candidates else None
        self._send_mru = True
        self._send_magic = True

    def _new_magic(self) -> int:
        return self.rng.randrange(1, 1 << 32)

    # ---- our request ----
    def request_options(self) -> list[Option]:
        opts: list[Option] = []
        if self._send_mru and self.our_mru != 1500:
            opts.append((OPT_MRU, struct.pack("!H", self.our_mru)))
        if self.auth is not None:
            opts.append((OPT_AUTH, auth_option(self.auth)))
        if self._send_magic:
            opts.append((OPT_MAGIC, struct.pack("!I", self.our_magic)))
        return opts

    def acked(self, options: list[Option]) -> None:
        pass

    def nak_received(self, options: list[Option]) -> bool:
        for t, v in options:
            if t == OPT_MRU and len(v) == 2:
                self.our_mru = max(MIN_MRU, min(struct.unpack("!H", v)[0], self.max_mru))
            elif t == OPT_MAGIC:
                self.our_magic = self._new_magic()
            elif t == OPT_AUTH and self.auth is not None:
                wanted = auth_from_option(v)
                if self.auth in self._auth_candidates:
                    self._auth_candidates.remove(self.auth)
                if wanted in self._auth_candidates:
                    self.auth = wanted
                elif self._auth_candidates:
                    self.auth = self._auth_candidates[0]
                else:
                    return False        # nothing both sides accept
        return True

    def reject_received(self, options: list[Option]) -> bool:
        for t, _ in options:
            if t == OPT_MRU:
                self._send_mru = False
            elif t == OPT_MAGIC:
                self._send_magic = False
                self.our_magic = 0
            elif t == OPT_AUTH and self.auth is not None:
                return False            # a subscriber that won't authenticate
        return True

    # ---- the peer's request ----
    def check_request(self, options: list[Option]) -> tuple[int, list[Option]]:
        naks: list[Option] = []
        rejects: list[Option] = []
        peer_mru = 1500
        peer_magic = 0
        for opt in options:
            t, v = opt
            if t == OPT_MRU and len(v) == 2:
                mru = struct.unpack("!H", v)[0]
                if mru > self.max_mru:
                    naks.append((OPT_MRU, struct.pack("!H", self.max_mru)))
                elif mru < MIN_MRU:
                    naks.append((OPT_MRU, struct.pack("!H", MIN_MRU)))
                else:
                    peer_mru = mru
            elif t == OPT_MAGIC and len(v) == 4:
                magic = struct.unpack("!I", v)[0]
                if magic == 0 or magic == self.our_magic:
                    # zero is illegal; equal to ours looks like a loop
                    # (RFC 1661 6.4): suggest another. Ours stays what our
                    # outstanding request carries, which the peer may still
                    # ack; it changes when a Nak of it arrives.
                    naks.append((OPT_MAGIC, struct.pack("!I", self._new_magic())))
                else:
                    peer_magic = magic
            else:
                # ACCM, ACFC, PFC, FCS-Alternatives (RFC 2516 7), being
                # authenticated ourselves, quality protocols, multilink,
                # callback, anything unknown or of the wrong length
                rejects.append(opt)
        if rejects:
            return CONF_REJ, rejects
        if naks:
            return CONF_NAK, naks
        self.peer_mru = min(peer_mru, self.max_mru)
        self.peer_magic = peer_magic
        return CONF_ACK, options

    # ---- upcalls ----
    def layer_up(self) -> None:
        self.link.lcp_up()

    def layer_down(self) -> None:
        self.link.lcp_down()

    def layer_started(self) -> None:
        pass

    def layer_finished(self) -> None:
        self.link.lcp_finished()

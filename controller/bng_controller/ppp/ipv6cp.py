"""IPv6CP (RFC 5072): only the Interface-Identifier is negotiated.

Both ends end up with distinct, non-zero 64-bit identifiers, which make
their link-local addresses fe80::IID. Addresses beyond link-local come
afterwards from router advertisements and DHCPv6 (ipv6/).
"""
from __future__ import annotations

import random

from .codec import CONF_ACK, CONF_NAK, CONF_REJ, Option

OPT_INTERFACE_ID = 1
OPT_IPV6_COMPRESSION = 2


class Ipv6cpNegotiator:
    # The BNG needs the peer's identifier (its link-local is where RAs and
    # DHCPv6 answers go): never given up by Max-Failure.
    required_options: frozenset[int] = frozenset({OPT_INTERFACE_ID})

    def __init__(self, link, rng: random.Random | None = None, our_iid: int | None = None):
        self.link = link
        self.rng = rng or random.Random()
        self.our_iid = our_iid or self._new_iid()
        self.peer_iid = 0

    def _new_iid(self, avoid: int = 0) -> int:
        while True:
            iid = self.rng.getrandbits(64)
            if iid and iid != avoid and iid != getattr(self, "our_iid", 0):
                return iid

    def request_options(self) -> list[Option]:
        return [(OPT_INTERFACE_ID, self.our_iid.to_bytes(8, "big"))]

    def acked(self, options: list[Option]) -> None:
        pass

    def nak_received(self, options: list[Option]) -> bool:
        for t, v in options:
            if t == OPT_INTERFACE_ID and len(v) == 8:
                iid = int.from_bytes(v, "big")
                self.our_iid = iid if iid and iid != self.peer_iid else self._new_iid(self.peer_iid)
        return True

    def reject_received(self, options: list[Option]) -> bool:
        # Without an identifier there is no way to tell the link-locals
        # apart (RFC 5072 4.1): give up on IPv6 for this session.
        return not any(t == OPT_INTERFACE_ID for t, _ in options)

    def check_request(self, options: list[Option]) -> tuple[int, list[Option]]:
        naks: list[Option] = []
        rejects: list[Option] = []
        peer = 0
        for opt in options:
            t, v = opt
            if t == OPT_INTERFACE_ID and len(v) == 8:
                iid = int.from_bytes(v, "big")
                if iid == 0 or iid == self.our_iid:
                    naks.append((t, self._new_iid(self.our_iid).to_bytes(8, "big")))
                else:
                    peer = iid
            else:
                rejects.append(opt)
        if rejects:
            return CONF_REJ, rejects
        if not peer and not naks:
            # RFC 5072 4.1: a request without the option gets a Nak that
            # suggests one (distinct from ours). Acked, the session had no
            # peer identifier and no IPv6 at all, its prefixes allocated.
            naks.append((OPT_INTERFACE_ID, self._new_iid(self.our_iid).to_bytes(8, "big")))
        if naks:
            return CONF_NAK, naks
        self.peer_iid = peer
        return CONF_ACK, options

    def layer_up(self) -> None:
        self.link.ncp_up(self)

    def layer_down(self) -> None:
        self.link.ncp_down(self)

    def layer_started(self) -> None:
        pass

    def layer_finished(self) -> None:
        self.link.ncp_finished(self)

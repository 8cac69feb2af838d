"""IPCP as the BNG runs it (RFC 1332, DNS options of RFC 1877).

The address is decided before IPCP starts (AAA or the pool), so the
negotiation only steers the peer to it: a request for 0.0.0.0, or for any
other address, is Naked with the assigned one; DNS servers likewise. IP
header compression and NBNS are rejected. Our own request carries the
gateway address, which clients use as the point-to-point peer.
"""
from __future__ import annotations

import ipaddress

from .codec import CONF_ACK, CONF_NAK, CONF_REJ, Option

OPT_IP_ADDRESSES = 1      # deprecated (RFC 1172)
OPT_IP_COMPRESSION = 2
OPT_IP_ADDRESS = 3
OPT_PRIMARY_DNS = 129
OPT_PRIMARY_NBNS = 130
OPT_SECONDARY_DNS = 131
OPT_SECONDARY_NBNS = 132

IPv4 = ipaddress.IPv4Address


class IpcpNegotiator:
    required_options = frozenset({OPT_IP_ADDRESS})

    def __init__(self, link, our_address: IPv4, peer_address: IPv4, dns: list[IPv4] | None = None):
        self.link = link
        self.our_address = our_address
        self.peer_address = peer_address
        self.dns = list(dns or [])[:2]
        self._send_address = True

    def request_options(self) -> list[Option]:
        return [(OPT_IP_ADDRESS, self.our_address.packed)] if self._send_address else []

    def acked(self, options: list[Option]) -> None:
        pass

    def nak_received(self, options: list[Option]) -> bool:
        # A peer suggesting another gateway address is ignored: the
        # gateway is ours to choose. Past Max-Failure Naks the automaton
        # takes them as a Reject, and we stop sending the address.
        return True

    def reject_received(self, options: list[Option]) -> bool:
        if any(t == OPT_IP_ADDRESS for t, _ in options):
            self._send_address = False
        return True

    def _dns_for(self, option: int) -> IPv4 | None:
        i = 0 if option == OPT_PRIMARY_DNS else 1
        return self.dns[i] if i < len(self.dns) else None

    def check_request(self, options: list[Option]) -> tuple[int, list[Option]]:
        naks: list[Option] = []
        rejects: list[Option] = []
        has_address = False
        for opt in options:
            t, v = opt
            if t == OPT_IP_ADDRESS and len(v) == 4:
                has_address = True
                if v != self.peer_address.packed:
                    naks.append((t, self.peer_address.packed))
            elif t in (OPT_PRIMARY_DNS, OPT_SECONDARY_DNS) and len(v) == 4:
                want = self._dns_for(t)
                if want is None:
                    rejects.append(opt)
                elif v != want.packed:
                    naks.append((t, want.packed))
            else:
                rejects.append(opt)
        if rejects:
            return CONF_REJ, rejects
        if not has_address:
            # RFC 1661 5.3: a Nak may prompt for an option the peer left out.
            naks.append((OPT_IP_ADDRESS, self.peer_address.packed))
        if naks:
            return CONF_NAK, naks
        return CONF_ACK, options

    def layer_up(self) -> None:
        self.link.ncp_up(self)

    def layer_down(self) -> None:
        self.link.ncp_down(self)

    def layer_started(self) -> None:
        pass

    def layer_finished(self) -> None:
        self.link.ncp_finished(self)

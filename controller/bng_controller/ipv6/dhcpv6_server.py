"""The DHCPv6 server of a PPP session (RFC 8415): prefix delegation and DNS.

Stateless on purpose: a subscriber's delegated prefix is chosen by the
session manager when IPv6CP opens (pool or RADIUS Delegated-IPv6-Prefix)
and lives exactly as long as the session. DHCPv6 only tells the CPE
about it, so there is no lease table to keep, persist or restore: every
answer is computed from the session (`Binding`) and the message. The
consequences are deliberate:
  - Release and Decline are acknowledged but change nothing (the prefix
    stays routed to the session, and the next Solicit gets it again; the
    prefix is reserved for the session, not for the lease);
  - the prefix is offered to one IA_PD per message (the one that already
    holds it, else the first): a prefix belongs to a single IA;
  - addresses (IA_NA) are never assigned: SLAAC from the RA serves them.
Validation follows RFC 8415 16: a message that lacks an identifier it
needs, carries a Server Identifier it must not, or names another server
is dropped without an answer. The server never sends the Server Unicast
option, so a client must reach it by multicast: a Request, Renew,
Release or Decline sent by unicast gets the Reply of RFC 8415 18.4
(UseMulticast, and nothing done), and a Solicit, Confirm, Rebind or
Information-request, which a client only ever multicasts (18.2), is
dropped.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass, replace

from .codec import INFINITE, Ignored
from .dhcpv6_codec import (ADVERTISE, CONFIRM, DECLINE, INFORMATION_REQUEST, NO_ADDRS_AVAIL, NO_BINDING,
                           NO_PREFIX_AVAIL, NOT_ON_LINK, OPT_DNS_SERVERS, OPT_IA_TA, REBIND, RELEASE, RENEW,
                           REPLY, REQUEST, SOLICIT, SUCCESS, USE_MULTICAST, Dhcpv6Message, IaAddress, IaNa,
                           IaPd, IaPrefix, StatusCode)

IPv6Address = ipaddress.IPv6Address
IPv6Network = ipaddress.IPv6Network

MAX_PREFERENCE = 255        # RFC 8415 18.2.1: the client takes this Advertise without waiting for others


@dataclass(frozen=True, slots=True)
class Binding:
    """What the session has for DHCPv6 to hand out."""
    delegated_prefix: IPv6Network | None
    wan_prefix: IPv6Network | None            # the link's on-link prefix (Confirm)


@dataclass(frozen=True, slots=True)
class ServerPolicy:
    server_duid: bytes
    dns: tuple[IPv6Address, ...] = ()
    preferred_lifetime: int = 3600
    valid_lifetime: int = 7200


# what each client message must (True) or must not (False) carry; None: either
_NEEDS = {  # type: (client id, server id)
    SOLICIT: (True, False), REQUEST: (True, True), CONFIRM: (True, False), RENEW: (True, True),
    REBIND: (True, False), RELEASE: (True, True), DECLINE: (True, True), INFORMATION_REQUEST: (None, None),
}


class Dhcpv6Server:
    def __init__(self, policy: ServerPolicy):
        self.policy = policy
        p = policy
        self.preferred = min(p.preferred_lifetime, p.valid_lifetime)
        self.valid = p.valid_lifetime
        # T1/T2 at 0.5 and 0.8 of the preferred lifetime (RFC 8415 21.21);
        # an infinite preferred lifetime means infinite T1 and T2 (21.4)
        infinite = self.preferred == INFINITE
        self.t1 = INFINITE if infinite else int(self.preferred * 0.5)
        self.t2 = INFINITE if infinite else int(self.preferred * 0.8)

    def handle(self, msg: Dhcpv6Message, binding: Binding, *, unicast: bool = False) -> Dhcpv6Message | None:
        """The reply to a client message, or None where the protocol wants
        silence (Confirm without addresses). Raises `Ignored` for messages
        that must be dropped. `unicast`: the message was sent to one of the
        BNG's own addresses, not to All_DHCP_Relay_Agents_and_Servers."""
        self._validate(msg)
        t = msg.msg_type
        if unicast:
            if t in (REQUEST, RENEW, RELEASE, DECLINE):
                # RFC 8415 18.4: the server id, the client id, the status, no other option
                return Dhcpv6Message(REPLY, msg.transaction_id, client_id=msg.client_id,
                                     server_id=self.policy.server_duid,
                                     status=StatusCode(USE_MULTICAST, "use multicast"))
            raise Ignored(f"dhcpv6 {msg.name} by unicast")
        if t == SOLICIT:
            ia_pd, ia_na = self._assign(msg, binding)
            if msg.rapid_commit:
                return self._reply(msg, REPLY, ia_pd=ia_pd, ia_na=ia_na, rapid_commit=True, dns=True)
            return self._reply(msg, ADVERTISE, ia_pd=ia_pd, ia_na=ia_na, preference=MAX_PREFERENCE, dns=True)
        if t == REQUEST:
            ia_pd, ia_na = self._assign(msg, binding)
            return self._reply(msg, REPLY, ia_pd=ia_pd, ia_na=ia_na, dns=True)
        if t in (RENEW, REBIND):
            ia_pd, ia_na = self._extend(msg, binding, rebind=t == REBIND)
            return self._reply(msg, REPLY, ia_pd=ia_pd, ia_na=ia_na, dns=True)
        if t in (RELEASE, DECLINE):
            ia_pd, ia_na = self._unbound(msg, binding)
            return self._reply(msg, REPLY, ia_pd=ia_pd, ia_na=ia_na, status=StatusCode(SUCCESS, "ok"))
        if t == CONFIRM:
            return self._confirm(msg, binding)
        return self._reply(msg, REPLY, dns=True)                 # INFORMATION_REQUEST

    # ------------------------------------------------------------------
    def _validate(self, msg: Dhcpv6Message) -> None:
        needs = _NEEDS.get(msg.msg_type)
        if needs is None:
            raise Ignored(f"dhcpv6 {msg.name} is not a client message")
        need_client, need_server = needs
        if need_client and msg.client_id is None:
            raise Ignored(f"dhcpv6 {msg.name} without client id")
        if need_server is False and msg.server_id is not None:
            raise Ignored(f"dhcpv6 {msg.name} with server id")
        if need_server and msg.server_id is None:
            raise Ignored(f"dhcpv6 {msg.name} without server id")
        if msg.server_id is not None and msg.server_id != self.policy.server_duid:
            raise Ignored("dhcpv6 for another server")
        if msg.msg_type == INFORMATION_REQUEST and (msg.ia_na or msg.ia_pd
                                                    or any(c == OPT_IA_TA for c, _ in msg.other)):
            raise Ignored("dhcpv6 information-request with an ia")   # RFC 8415 16.12
        for ias in (msg.ia_pd, msg.ia_na):
            ids = [ia.iaid for ia in ias]
            if len(set(ids)) != len(ids):
                # RFC 8415 21.4, 21.21: an IAID names one IA of its type; two
                # of them drew one answer with a prefix and one without
                raise Ignored("dhcpv6 with a repeated iaid")

    def _reply(self, msg: Dhcpv6Message, msg_type: int, *, ia_pd: tuple[IaPd, ...] = (),
               ia_na: tuple[IaNa, ...] = (), status: StatusCode | None = None, rapid_commit: bool = False,
               preference: int | None = None, dns: bool = False) -> Dhcpv6Message:
        p = self.policy
        # the requested options only (RFC 8415 21.7); with no ORO at all, what we have
        want_dns = dns and bool(p.dns) and (msg.oro is None or OPT_DNS_SERVERS in msg.oro)
        return Dhcpv6Message(msg_type, msg.transaction_id, client_id=msg.client_id, server_id=p.server_duid,
                             ia_na=ia_na, ia_pd=ia_pd, preference=preference, status=status,
                             rapid_commit=rapid_commit, dns_servers=p.dns if want_dns else None)

    def _fresh(self, prefix: IPv6Network) -> IaPrefix:
        return IaPrefix(prefix, self.preferred, self.valid)

    @staticmethod
    def _holder(ias: tuple[IaPd, ...], prefix: IPv6Network) -> int:
        """Index of the IA_PD that gets the prefix: the one that holds it
        already (a Renew), else the first."""
        for i, ia in enumerate(ias):
            if any(p.prefix == prefix for p in ia.prefixes):
                return i
        return 0

    def _assign(self, msg: Dhcpv6Message, b: Binding) -> tuple[tuple[IaPd, ...], tuple[IaNa, ...]]:
        """Solicit and Request: the session's prefix, hints ignored (RFC
        8415 18.3.1 lets the server choose); NoPrefixAvail where there is
        none, NoAddrsAvail for every IA_NA."""
        out = []
        holder = self._holder(msg.ia_pd, b.delegated_prefix) if b.delegated_prefix is not None else -1
        for i, ia in enumerate(msg.ia_pd):
            if i == holder:
                out.append(IaPd(ia.iaid, self.t1, self.t2, (self._fresh(b.delegated_prefix),)))
            else:
                out.append(IaPd(ia.iaid, status=StatusCode(NO_PREFIX_AVAIL, "no prefix available")))
        na = tuple(IaNa(ia.iaid, status=StatusCode(NO_ADDRS_AVAIL, "addresses by slaac")) for ia in msg.ia_na)
        return tuple(out), na

    def _extend(self, msg: Dhcpv6Message, b: Binding, rebind: bool) -> tuple[tuple[IaPd, ...], tuple[IaNa, ...]]:
        """Renew and Rebind (RFC 8415 18.3.4, 18.3.5): the session's prefix
        with fresh lifetimes; any other prefix the client names is not
        appropriate for this link and comes back with lifetimes 0. An IA
        the server has no binding for gets NoBinding on Renew; a Rebind
        gets its own prefixes back at lifetime 0 (NoBinding if it named
        none)."""
        out = []
        holder = self._holder(msg.ia_pd, b.delegated_prefix) if b.delegated_prefix is not None else -1
        for i, ia in enumerate(msg.ia_pd):
            foreign = tuple(replace(p, preferred=0, valid=0, status=None) for p in ia.prefixes
                            if p.prefix != b.delegated_prefix)
            if i == holder:
                out.append(IaPd(ia.iaid, self.t1, self.t2, (self._fresh(b.delegated_prefix),) + foreign))
            elif rebind and foreign:
                out.append(IaPd(ia.iaid, 0, 0, foreign))
            else:
                out.append(IaPd(ia.iaid, status=StatusCode(NO_BINDING, "no binding")))
        na = []
        for ia in msg.ia_na:
            if rebind and ia.addresses:
                na.append(IaNa(ia.iaid, 0, 0, tuple(IaAddress(a.address, 0, 0) for a in ia.addresses)))
            else:
                na.append(IaNa(ia.iaid, status=StatusCode(NO_BINDING, "no binding")))
        return tuple(out), tuple(na)

    @staticmethod
    def _unbound(msg: Dhcpv6Message, b: Binding) -> tuple[tuple[IaPd, ...], tuple[IaNa, ...]]:
        """Release and Decline (RFC 8415 18.3.7, 18.3.8): Success overall,
        and NoBinding for each IA that does not hold the session's prefix
        (every IA_NA: the BNG never assigns addresses). The prefix itself
        stays with the session."""
        nb = StatusCode(NO_BINDING, "no binding")
        pd = tuple(IaPd(ia.iaid, status=nb) for ia in msg.ia_pd
                   if b.delegated_prefix is None or all(p.prefix != b.delegated_prefix for p in ia.prefixes))
        return pd, tuple(IaNa(ia.iaid, status=nb) for ia in msg.ia_na)

    def _confirm(self, msg: Dhcpv6Message, b: Binding) -> Dhcpv6Message | None:
        """Are the client's addresses still on this link (RFC 8415 18.3.3)?
        The link's prefix is the session's /64."""
        addrs = [a.address for ia in msg.ia_na for a in ia.addresses]
        if not addrs or b.wan_prefix is None:
            return None       # MUST NOT answer: nothing to confirm, or no prefix to test against
        on_link = all(a in b.wan_prefix for a in addrs)
        status = StatusCode(SUCCESS, "on link") if on_link else StatusCode(NOT_ON_LINK, "not on link")
        return self._reply(msg, REPLY, status=status)

"""IPv6 as the BNG itself speaks it: on every subscriber's PPP link (RA,
NA, echo, DHCPv6-PD) and on its core ports (ND, echo, the IPv6 gateway).

The data plane punts three kinds of IPv6 to the controller, which hands
them to `Ipv6Responder.on_packet_in`:
  - SUBSCRIBER_IPV6_CONTROL: link-local or multicast IPv6 from inside a
    PPPoE session (RS, DHCPv6, NS, echo to our link-local);
  - LOCAL_IPV6: IPv6 to one of the addresses `local_addresses()` put in
    the `local_ipv6` table (ND and echo on core ports; echo to our global
    address from inside a session);
  - TTL_EXPIRED with IPv6 inside: answered with Time Exceeded.
L2TP (LNS) sessions reach `handle_subscriber_packet` through the L2TP
service, which owns their framing.

Everything the subscriber is told follows from its session: the BNG's
link-local address is fe80::<our IPv6CP identifier>, the SLAAC prefix is
`sub.ipv6_prefix`, the delegated prefix `sub.delegated_prefix`, the MTU
the session's MRU. Unsolicited RAs are scheduled in one heap for all
sessions (`tick()`), so 40k sessions cost a few hundred RAs a second.
"""
from __future__ import annotations

import collections
import ipaddress
import logging
import random
from dataclasses import dataclass

from ..ppp.codec import PPP_IPV6
from ..pppoe import codec as pppoe
from ..subscriber import State
from .codec import (ALL_DHCP_AGENTS, ALL_NODES, IPPROTO_ICMPV6, IPPROTO_UDP, Echo, Ignored, NeighborAdvertisement,
                    NeighborSolicitation, ParseError, RouterSolicitation, Udp, decode_message, eui64_iid,
                    link_local, parse_icmpv6, parse_ipv6, parse_udp, solicited_node, udp_packet)
from .dhcpv6_codec import CLIENT_PORT, SERVER_PORT, duid_ll, parse_message
from .dhcpv6_server import Binding, Dhcpv6Server, ServerPolicy
from .icmp6 import (MIN_MTU, RaPolicy, SessionLink, answer_echo, answer_ns, answer_rs, ra_packet,
                    time_exceeded)
from .nd import NdAgent
from .ra_schedule import RaSchedule

log = logging.getLogger("bng.ipv6")

IPv6Address = ipaddress.IPv6Address

RS_MIN_INTERVAL = 1.0          # at most one solicited RA per session per second
MAX_RAS_PER_TICK = 2000        # unsolicited RAs per tick (a tick is 0.5 s in the controller)
MIN_RA_INTERVAL = 4.0          # RFC 4861 6.2.1: MaxRtrAdvInterval is at least 4 s


@dataclass
class _SessionState:
    last_solicited: float = -1e9


class Ipv6Responder:
    def __init__(self, ctl, rng: random.Random | None = None):
        self.ctl = ctl
        cfg = ctl.cfg
        v6 = cfg.ipv6
        self.mac: bytes = cfg.bng_mac
        # one link-local address for every core port: the BNG has one MAC
        self.core_link_local = link_local(eui64_iid(self.mac))
        self.core_global: dict[int, IPv6Address] = {c.port: c.ipv6.ip for c in cfg.core if c.ipv6 is not None}
        self.counters_: collections.Counter[str] = collections.Counter()
        interval = max(MIN_RA_INTERVAL, v6.ra_interval)
        lifetime = min(0xFFFF, max(1800, int(3 * interval)))       # RFC 4861 6.2.1: >= MaxRtrAdvInterval
        self.ra_policy = RaPolicy(router_lifetime=lifetime, valid_lifetime=v6.valid_lifetime,
                                  preferred_lifetime=v6.preferred_lifetime, dns=tuple(v6.dns),
                                  dns_lifetime=lifetime, dhcpv6=True)
        self.dhcp = Dhcpv6Server(ServerPolicy(server_duid=duid_ll(self.mac), dns=tuple(v6.dns),
                                              preferred_lifetime=v6.preferred_lifetime,
                                              valid_lifetime=v6.valid_lifetime))
        self.nd = NdAgent(self.mac)
        for c in cfg.core:
            ours = {self.core_link_local} | ({c.ipv6.ip} if c.ipv6 is not None else set())
            self.nd.addresses.setdefault(c.port, set()).update(ours)
            if c.gateway6 is not None:
                src = (c.ipv6.ip if c.ipv6 is not None and not c.gateway6.is_link_local
                       else self.core_link_local)
                self.nd.watch(c.gateway6, c.port, c.vlan, src)
        self.unicast: frozenset[IPv6Address] = frozenset(a for s in self.nd.addresses.values() for a in s)
        self.schedule: RaSchedule = RaSchedule(interval, rng)
        self.sessions: dict[object, _SessionState] = {}     # Subscriber -> state (identity-keyed)
        sm = getattr(ctl, "sessions", None)
        if sm is not None and hasattr(sm, "on_session_down"):
            sm.on_session_down.append(self.session_down)

    # ------------------------------------------------------------------
    # what the controller asks
    def local_addresses(self) -> list[IPv6Address]:
        """The `local_ipv6` entries: the core link-local and global
        addresses, their solicited-node groups (NS arrive there) and
        all-nodes (where a router announces a new MAC with an unsolicited
        NA, RFC 4861 7.2.6). Subscriber-side link-local traffic needs none:
        the data plane punts it by scope."""
        out = set(self.unicast) | {ALL_NODES}
        out |= {solicited_node(a) for a in self.unicast}
        return sorted(out)

    def counters(self) -> dict[str, int]:
        out = dict(self.counters_)
        out["sessions with ipv6"] = len(self.sessions)
        for k, v in vars(self.nd.stats).items():
            out[f"nd {k.replace('_', ' ')}"] = v
        return dict(sorted(out.items()))

    def _count(self, what: str) -> None:
        self.counters_[what] += 1

    def _now(self) -> float:
        return self.ctl.clock()

    # ------------------------------------------------------------------
    # subscriber sessions
    def session_link(self, sub) -> SessionLink | None:
        """The session's IPv6 facts, or None while its IPv6 is not up."""
        link = sub.link
        neg = link.ipv6cp_neg
        if neg is None or not link.ipv6_up or not neg.peer_iid or not sub.live:
            return None
        lcp = link.lcp_neg
        mtu = min(lcp.our_mru, lcp.peer_mru)
        return SessionLink(our_ll=link_local(neg.our_iid), peer_ll=link_local(neg.peer_iid),
                           mtu=mtu if mtu >= MIN_MTU else None, wan_prefix=sub.ipv6_prefix,
                           delegated_prefix=sub.delegated_prefix)

    def network_up(self, sub, announce: bool = True) -> None:
        """IPv6 of a session is up and its entries are in: tell the CPE
        right away (clients that never solicit configure from this), then
        keep advertising. `announce=False` for sessions restored after a
        controller restart: they are configured, their next RA comes at
        a random point within the interval."""
        link = self.session_link(sub)
        if link is None:
            self._count("network up without ipv6")
            return
        now = self._now()
        self.sessions.setdefault(sub, _SessionState())
        if announce:
            self._send(sub, ra_packet(link, self.ra_policy), "ra sent unsolicited")
            self.schedule.announced(sub, now)
        else:
            self.schedule.adopt(sub, now)

    def session_down(self, sub) -> None:
        """Forget a session (the session manager's on_session_down hook;
        sessions whose IPv6 went away are also dropped lazily)."""
        self.sessions.pop(sub, None)
        self.schedule.remove(sub)

    def _ready(self, sub) -> SessionLink | None:
        """A session may be answered once its IPv6 entries are in: known
        through network_up, or (after a restart nobody announced) UP with
        prefixes assigned, then adopted here."""
        link = self.session_link(sub)
        if link is None:
            if sub in self.sessions:
                self.session_down(sub)
            return None
        if sub not in self.sessions:
            if sub.state != State.UP or (sub.ipv6_prefix is None and sub.delegated_prefix is None):
                return None
            self.sessions[sub] = _SessionState()
            self.schedule.adopt(sub, self._now())
        return link

    def _send(self, sub, packet: bytes, what: str) -> None:
        sub.transport.send_ppp(PPP_IPV6, packet)
        self._count(what)

    def handle_subscriber_packet(self, sub, ipv6_packet: bytes) -> None:
        """An IPv6 packet from inside a session that is for the BNG (the
        common path of PPPoE and L2TP sessions). Every packet is answered
        or counted; none raises."""
        try:
            self._subscriber_packet(sub, ipv6_packet)
        except (ParseError, Ignored) as e:
            self._count(f"subscriber: {e}")
        except Exception:                   # the packet path must survive any bug
            self._count("internal error")
            log.exception("ipv6 packet from session %s", getattr(sub, "sid", "?"))

    def handle_subscriber_ttl_expired(self, sub, ipv6_packet: bytes) -> None:
        """A packet from inside a session that the data plane punted with
        hop limit 1 (the L2TP service's entry; PPPoE arrives through
        on_packet_in): answered with Time Exceeded, or counted."""
        try:
            self._ttl_expired_subscriber(sub, ipv6_packet)
        except (ParseError, Ignored) as e:
            self._count(f"ttl_expired: {e}")
        except Exception:
            self._count("internal error")
            log.exception("ipv6 time exceeded for session %s", getattr(sub, "sid", "?"))

    def _subscriber_packet(self, sub, data: bytes) -> None:
        pkt = parse_ipv6(data)
        link = self._ready(sub)
        if link is None:
            raise Ignored("ipv6 not up")
        if pkt.next_header == IPPROTO_UDP:
            self._dhcpv6(sub, link, pkt)
            return
        if pkt.next_header != IPPROTO_ICMPV6:
            raise Ignored(f"next header {pkt.next_header}")
        msg = decode_message(parse_icmpv6(pkt))
        if isinstance(msg, RouterSolicitation):
            st = self.sessions[sub]
            now = self._now()
            if now - st.last_solicited < RS_MIN_INTERVAL:
                raise Ignored("rs rate limited")
            reply = answer_rs(link, self.ra_policy, pkt, msg)
            st.last_solicited = now
            self._send(sub, reply, "ra sent solicited")
        elif isinstance(msg, NeighborSolicitation):
            self._send(sub, answer_ns(link, pkt, msg), "na sent")
        elif isinstance(msg, Echo):
            self._send(sub, answer_echo(pkt, msg, self.unicast | {link.our_ll}), "echo answered")
        else:
            raise Ignored(f"icmpv6 type {pkt.payload[0]}")

    def _dhcpv6(self, sub, link: SessionLink, pkt) -> None:
        if pkt.dst != ALL_DHCP_AGENTS and pkt.dst != link.our_ll:
            raise Ignored("udp not for us")
        udp = parse_udp(pkt)
        if udp.dport != SERVER_PORT:
            raise Ignored("udp not to the dhcpv6 server port")
        if pkt.src.is_unspecified or pkt.src.is_multicast:
            raise Ignored("dhcpv6 from bad source")
        msg = parse_message(udp.payload)
        reply = self.dhcp.handle(msg, Binding(sub.delegated_prefix, sub.ipv6_prefix),
                                 unicast=pkt.dst != ALL_DHCP_AGENTS)
        if reply is None:
            self._count(f"dhcpv6 {msg.name} unanswered")
            return
        self._send(sub, udp_packet(link.our_ll, pkt.src, Udp(SERVER_PORT, CLIENT_PORT, reply.encode())),
                   f"dhcpv6 {msg.name} answered ({reply.name})")

    def tick(self, now: float) -> None:
        """Called every 0.5 s by the controller while the switch is up:
        the unsolicited RAs due, and ND for the gateways."""
        for sub in self.schedule.pop_due(now, MAX_RAS_PER_TICK):
            link = self.session_link(sub)
            if link is None:
                self.session_down(sub)
                continue
            self._send(sub, ra_packet(link, self.ra_policy), "ra sent periodic")
        for frame, port in self.nd.tick(now):
            self.ctl.switch.packet_out(frame, port)

    # ------------------------------------------------------------------
    # packets from the data plane
    def on_packet_in(self, reason: str, port: int, md: dict, frame: bytes) -> bool:
        """A punted frame. True if it carried IPv6 and was dealt with
        (answered or counted), False if it is not IPv6 (a TTL_EXPIRED
        punt of IPv4 is the controller's)."""
        try:
            return self._packet_in(reason, port, md, frame)
        except (pppoe.CodecError, ParseError, Ignored) as e:
            self._count(f"{reason.lower()}: {e}")
        except Exception:
            self._count("internal error")
            log.exception("ipv6 packet-in %s on port %d", reason, port)
        return True

    def _packet_in(self, reason: str, port: int, md: dict, frame: bytes) -> bool:
        l2, etype, off = pppoe.parse_l2(frame)
        if etype == pppoe.ETH_P_PPPOE_SESS:
            sid, proto, info = pppoe.parse_session(frame[off:])
            if proto != PPP_IPV6:
                if reason == "TTL_EXPIRED":
                    return False
                raise Ignored("not ipv6 in the session")
            sub = self.ctl.sessions.find_pppoe(md.get("line_id", 0), sid, l2.src)
            if sub is None:
                raise Ignored("unknown session")
            if reason == "TTL_EXPIRED":
                self._ttl_expired_subscriber(sub, info)
            else:
                self.handle_subscriber_packet(sub, info)
            return True
        if etype == pppoe.ETH_P_IPV6:
            if reason == "TTL_EXPIRED":
                self._ttl_expired_core(port, l2, frame[off:])
            elif reason == "LOCAL_IPV6":
                self._core_packet(port, l2, frame[off:])
            else:
                raise Ignored("subscriber control outside a session")
            return True
        if reason == "TTL_EXPIRED":
            return False
        l2tp = getattr(self.ctl, "l2tp", None)
        if etype == pppoe.ETH_P_IPV4 and l2tp is not None:
            l2tp.on_packet_in(reason, port, md, frame)           # an LNS session: its framing
            return True
        raise Ignored("not ipv6")

    def _core_packet(self, port: int, l2: pppoe.L2Header, data: bytes) -> None:
        """ND and echo on a core port."""
        pkt = parse_ipv6(data)
        if pkt.next_header != IPPROTO_ICMPV6:
            raise Ignored(f"core next header {pkt.next_header}")
        msg = decode_message(parse_icmpv6(pkt))
        if isinstance(msg, (NeighborSolicitation, NeighborAdvertisement)):
            frame = self.nd.handle(port, l2, pkt, msg, self._now())
            if frame is not None:
                self.ctl.switch.packet_out(frame, port)
            return
        if isinstance(msg, Echo):
            reply = answer_echo(pkt, msg, self.unicast)
            self.ctl.switch.packet_out(l2.reply_header(self.mac).encode(pppoe.ETH_P_IPV6) + reply, port)
            self._count("core echo answered")
            return
        raise Ignored(f"core icmpv6 type {pkt.payload[0]}")

    def _ttl_expired_core(self, port: int, l2: pppoe.L2Header, data: bytes) -> None:
        src = self.core_global.get(port)
        if src is None:
            raise Ignored("no global address on that port")
        reply = time_exceeded(data, src)
        self.ctl.switch.packet_out(l2.reply_header(self.mac).encode(pppoe.ETH_P_IPV6) + reply, port)
        self._count("time exceeded sent (core)")

    def _ttl_expired_subscriber(self, sub, data: bytes) -> None:
        """From a global address, so that traceroute shows a routable hop;
        the session's link-local address where the BNG has none."""
        src = next(iter(self.core_global.values()), None)
        if src is None:
            link = self.session_link(sub)
            if link is None:
                raise Ignored("ipv6 not up")
            src = link.our_ll
        self._send(sub, time_exceeded(data, src), "time exceeded sent (subscriber)")

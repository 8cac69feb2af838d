"""L2TPv2 in the BNG: the LAC and LNS roles on one L2TP endpoint.

LAC: a PPPoE subscriber whose AAA answer names tunnels (a realm of the
local file, RADIUS Tunnel-* attributes) is not terminated here. Once it
has authenticated to us, its call goes to the most preferred LNS (an
existing tunnel is reused, otherwise one is opened), with proxy LCP and
proxy authentication (RFC 2661 4.4.5) so the LNS answers the
authentication the subscriber is waiting for, and RFC 5515 line ids. If
the LNS refuses or cannot be reached, the next one by preference is tried.
When the call is up, two entries switch the session in the data plane
(PPPoE -> L2TP up, L2TP -> PPPoE down) and our PPP link steps aside.

LNS: tunnels from the configured LACs (by address, each with its secret)
are accepted; every call becomes a subscriber of the session manager, with
PPP over the L2TP session. Proxied LCP and authentication are taken over
when we allow what the LAC agreed on; otherwise LCP starts afresh. From
then on it is a subscriber like any PPPoE one: AAA, an address, IPCP,
entries (`l2tp_session` up, `to_l2tp` down), accounting.

Packets: L2TP control and PPP control in L2TP data arrive punted (reasons
L2TP_CONTROL, L2TP_PPP_CONTROL) as whole Ethernet frames; what the
endpoint sends leaves as Ethernet/IPv4/UDP frames toward the peer's next
hop. The endpoint and its timers are sans-I/O (endpoint.py); this module
is their I/O and their link to the rest of the BNG.
"""
from __future__ import annotations

import asyncio
import ipaddress
import logging
import random
import struct
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..aaa.base import AuthMethod, AuthResult, LineInfo, TerminateCause, TunnelSpec
from .. import icmp
from ..icmp import checksum, ipv4_header
from ..lines import IndexAllocator
from ..p4runtime_async import deletes, inserts, modifies
from ..ppp.auth import Credentials
from ..ppp.codec import PPP_IPV4, PPP_IPV6
from ..pppoe import codec as pppoe
from ..subscriber import Subscriber
from ..timers import TimerHeap
from .codec import (CDN_ADMIN, CDN_LOST_CARRIER, CDN_NO_FACILITIES_TEMPORARY, PROXY_AUTH_CHAP, PROXY_AUTH_PAP,
                    STOP_CLEAR, STOP_GENERAL_ERROR, ResultCode)
from .endpoint import L2tpEndpoint
from .transport import L2tpTransport
from .tunnel import (AccessLine, CallParams, IncomingCall, PppFrame, ProxyAuth, ProxyLcp, Session, SessionDown,
                     SessionUp, Tunnel, TunnelConfig, TunnelDown, TunnelFailed, TunnelState, TunnelUp)

if TYPE_CHECKING:
    from ..controller import BngController

log = logging.getLogger("bng.l2tp")

L2TP_PORT = 1701
IPPROTO_UDP = 17
IPv4 = ipaddress.IPv4Address


@dataclass
class LnsPeer:
    address: IPv4
    secret: bytes
    host_name: str = ""                # our host name toward this LAC (default: tunnel.host_name)


@dataclass
class L2tpConfig:
    local_address: IPv4
    tunnel: dict = field(default_factory=dict)       # TunnelConfig defaults (host_name, hello, window...)
    lac: bool = True                                  # switch subscribers whose AAA names tunnels
    lns: bool = False                                 # accept tunnels from `lns_peers`
    lns_peers: list[LnsPeer] = field(default_factory=list)
    proxy: str = "accept"                             # LNS: accept proxied LCP/auth, or renegotiate
    max_sessions_per_tunnel: int = 65000
    lac_call_timeout: float = 10.0                    # LAC: one LNS's time to take a call, tunnel set-up included
    lac_dead_time: float = 60.0                       # LAC: an LNS that let a call time out is tried last this long

    @classmethod
    def from_dict(cls, d: dict) -> "L2tpConfig":
        d = dict(d)
        try:
            c = cls(local_address=IPv4(d.pop("local_address")))
        except KeyError:
            raise ValueError("l2tp.local_address: required (the BNG's L2TP endpoint address)") from None
        for k, v in d.items():
            if k == "lns_peers":
                v = [LnsPeer(IPv4(p["address"]), str(p["secret"]).encode(), p.get("host_name", ""))
                     for p in v]
            elif not hasattr(c, k):
                raise ValueError(f"l2tp.{k}: unknown setting")
            setattr(c, k, v)
        if c.proxy not in ("accept", "renegotiate"):
            raise ValueError("l2tp.proxy: accept or renegotiate")
        c.lac_call_timeout, c.lac_dead_time = float(c.lac_call_timeout), float(c.lac_dead_time)
        if c.lac_call_timeout <= 0 or c.lac_dead_time < 0:
            raise ValueError("l2tp.lac_call_timeout: > 0 s; l2tp.lac_dead_time: >= 0 s")
        TunnelConfig.from_dict(c.tunnel)                 # fail now on a bad key
        return c


@dataclass
class LacCall:
    """A PPPoE subscriber switched (or being switched) into an L2TP call."""
    sub: Subscriber
    session: Session | None = None
    done: asyncio.Future | None = None
    switched: bool = False


@dataclass
class TunnelData:
    tunnel_idx: int
    role: str                       # "lac" (we opened it) or "lns"
    up_since: float | None = None
    installed: bool = False
    key: tuple | None = None        # LAC: reuse key
    expect_host: str = ""           # LAC: the host name the LNS must present (Tunnel-Server-Auth-Id)


def _proxy_auth(creds: Credentials) -> ProxyAuth | None:
    """RFC 2661 4.4.5 proxy authentication from what the subscriber sent."""
    name = creds.username.encode()
    if creds.method == AuthMethod.PAP:
        return ProxyAuth(PROXY_AUTH_PAP, name=name, response=creds.password, ident=creds.chap_id)
    if creds.method == AuthMethod.CHAP_MD5:
        return ProxyAuth(PROXY_AUTH_CHAP, name=name, challenge=creds.challenge, ident=creds.chap_id,
                         response=creds.response)
    return None                     # MS-CHAPv2 has no proxy type: the LNS renegotiates


def _credentials(pa: ProxyAuth | None) -> Credentials | None:
    if pa is None:
        return None
    name = (pa.name or b"").decode("utf-8", "replace")
    if pa.type == PROXY_AUTH_PAP:
        return Credentials(AuthMethod.PAP, name, password=pa.response or b"", chap_id=pa.ident or 0)
    if pa.type == PROXY_AUTH_CHAP and pa.challenge and pa.response and len(pa.response) == 16:
        return Credentials(AuthMethod.CHAP_MD5, name, chap_id=pa.ident or 0, challenge=pa.challenge,
                           response=pa.response)
    return None


class L2tpService:
    def __init__(self, ctl: "BngController", cfg: dict):
        self.ctl = ctl
        self.cfg = L2tpConfig.from_dict(cfg)
        self.base_tunnel_cfg = TunnelConfig.from_dict(self.cfg.tunnel)
        self.local = (str(self.cfg.local_address), L2TP_PORT)
        self.endpoint = L2tpEndpoint(self.base_tunnel_cfg, ctl.clock, random.Random(), policy=self._policy)
        self.timers = TimerHeap(self._on_timer, ctl.clock)
        self.tunnel_idx = IndexAllocator(1, ctl.names.table("l2tp_tunnel").size - 1, "tunnel indices")
        self.lac_tunnels: dict[tuple, Tunnel] = {}
        self._lns_dead_until: dict[str, float] = {}     # LNS address -> when it is tried in order again
        self._pending_calls: dict[int, LacCall] = {}    # subscriber sid -> its call being set up
        self.stats: dict[str, int] = {}
        self._unrouted: list[tuple[bytes, tuple, tuple | None]] = []
        self._task: asyncio.Task | None = None
        self._writes: set[asyncio.Task] = set()
        self._lns_peers = {p.address: p for p in self.cfg.lns_peers}
        self.lac_enabled = self.cfg.lac
        ctl.sessions.l2tp = self
        ctl.sessions.on_session_down.append(self._subscriber_down)

    def _count(self, what: str) -> None:
        self.stats[what] = self.stats.get(what, 0) + 1

    # ---- what the controller asks ----
    def ports(self) -> set[int]:
        return set()

    def local_addresses(self) -> set[IPv4]:
        return {self.cfg.local_address}

    def lns_addresses(self) -> set[IPv4]:
        """The local addresses where LNS sessions terminate: the data plane
        looks their IPv4 upstream up in l2tp_up_v4 (see dataplane.local_ipv4)."""
        return {self.cfg.local_address} if self.cfg.lns else set()

    def counters(self) -> dict:
        """Gauges first (tunnels, sessions), then event counts."""
        tunnels = list(self.endpoint.tunnels.values())
        out: dict = {"tunnels": len(tunnels), "tunnels_up": sum(1 for t in tunnels if t.established),
                     "sessions": sum(len(t.sessions) for t in tunnels)}
        out.update({f"endpoint {k}": v for k, v in self.endpoint.counters.items()})
        out.update(self.stats)
        return out

    def desired_entries(self) -> list:
        """Tunnels' entries (sessions' are their subscribers')."""
        out = []
        for t in self.endpoint.tunnels.values():
            d: TunnelData | None = t.data
            if d is not None and d.installed:
                out.append(self._tunnel_entry(t))
        return out

    async def restore(self) -> None:
        """Tunnels do not survive a controller restart (their Ns/Nr are lost):
        nothing to restore; their peers notice by Hello timeout and the
        switch's leftover entries are removed by the reconciliation."""

    async def shutdown(self) -> None:
        for t in list(self.endpoint.tunnels.values()):
            self.endpoint.close_tunnel(t, ResultCode(6, None, "BNG shutting down"), "shutdown")
        self._pump()
        await asyncio.sleep(0.2)

    # ---- I/O ----
    def on_packet_in(self, reason: str, port: int, md: dict, frame: bytes) -> None:
        try:
            l2, etype, off = pppoe.parse_l2(frame)
            if etype != pppoe.ETH_P_IPV4 or len(frame) < off + 28:
                raise ValueError("not IPv4/UDP")
            ip = frame[off:]
            ihl = (ip[0] & 0x0F) * 4
            total = struct.unpack_from("!H", ip, 2)[0]
            if ip[9] != IPPROTO_UDP or ihl < 20 or total > len(ip) or total < ihl + 8:
                raise ValueError("not UDP")
            src, dst = IPv4(ip[12:16]), IPv4(ip[16:20])
            sport, dport, ulen = struct.unpack_from("!HHH", ip, ihl)
            payload = ip[ihl + 8:ihl + ulen] if ihl + ulen <= total else ip[ihl + 8:total]
        except (pppoe.CodecError, ValueError) as e:
            self._count(f"malformed punt: {e}")
            return
        self.endpoint.receive(payload, (str(src), sport), (str(dst), dport))
        self._pump()

    def _send(self, payload: bytes, peer: tuple, local: tuple | None) -> None:
        local = local or self.local
        peer_ip, src = IPv4(peer[0]), IPv4(local[0])
        route = self.ctl.l2_toward(peer_ip)
        if route is None:
            # the way to the peer is being resolved (ARP): keep a few, send
            # them when it is (the control channel would retransmit anyway)
            if len(self._unrouted) < 256:
                self._unrouted.append((payload, peer, local))
                self._count("tx waiting for the next hop")
            else:
                self._count("tx dropped: no next hop")
            return
        port, l2 = route
        udp = struct.pack("!HHHH", local[1], peer[1], 8 + len(payload), 0) + payload
        pseudo = src.packed + peer_ip.packed + struct.pack("!BBH", 0, IPPROTO_UDP, len(udp))
        csum = checksum(pseudo + udp) or 0xFFFF
        udp = udp[:6] + struct.pack("!H", csum) + udp[8:]
        frame = l2.encode(pppoe.ETH_P_IPV4) + ipv4_header(src, peer_ip, IPPROTO_UDP, len(udp)) + udp
        self.ctl.switch.packet_out(frame, port)

    def has_peer(self, addr: IPv4) -> bool:
        """Whether a tunnel (in any state) is with this address."""
        return any(t.peer[0] == str(addr) for t in self.endpoint.tunnels.values())

    def forget_peer(self, addr: IPv4) -> None:
        """Its next hop is given up: what waited for it is dropped."""
        kept = [u for u in self._unrouted if u[1][0] != str(addr)]
        dropped, self._unrouted = len(self._unrouted) - len(kept), kept
        if dropped:
            self.stats["tx dropped: no next hop"] = self.stats.get("tx dropped: no next hop", 0) + dropped

    def neighbor_resolved(self) -> None:
        """A next hop got its MAC: send what waited for one."""
        waiting, self._unrouted = self._unrouted, []
        for payload, peer, local in waiting:
            self._send(payload, peer, local)

    def _pump(self) -> None:
        """Send what the endpoint has to send and act on its events, until
        acting on them (a close, an accept) produces nothing more."""
        while True:
            datagrams, events = self.endpoint.drain()
            if not datagrams and not events:
                break
            for d in datagrams:
                self._send(d.payload, d.peer, d.local)
            for ev in events:
                try:
                    self._event(ev)
                except Exception:
                    log.exception("l2tp event %s", type(ev).__name__)
        self.timers.schedule(self.endpoint)

    def _on_timer(self, ep) -> None:
        self.endpoint.on_timer()
        self._pump()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self.timers.run())

    # ---- endpoint events ----
    def _event(self, ev) -> None:
        if isinstance(ev, PppFrame):
            sub = ev.session.data
            if isinstance(sub, LacCall):
                # from the LNS before our cross-connect is in (or punted
                # for another reason): relay it to the subscriber ourselves
                if sub.sub.live:
                    self._count("lac relayed to subscriber")
                    sub.sub.transport.send_ppp(ev.protocol, ev.info)
            elif isinstance(sub, Subscriber) and sub.live:
                if ev.protocol == PPP_IPV4:
                    self._subscriber_ipv4(sub, ev.info)
                elif ev.protocol == PPP_IPV6:
                    if self.ctl.ipv6 is not None:
                        self.ctl.ipv6.handle_subscriber_packet(sub, ev.info)
                else:
                    self.ctl.sessions.deliver(sub, ev.protocol, ev.info)
        elif isinstance(ev, IncomingCall):
            self._incoming_call(ev.session)
        elif isinstance(ev, SessionUp):
            if ev.session.lac:
                call: LacCall = ev.session.data
                if call is not None and call.done is not None and not call.done.done():
                    call.done.set_result(None)
            else:
                self._lns_session_up(ev.session)
        elif isinstance(ev, SessionDown):
            self._session_down(ev)
        elif isinstance(ev, TunnelUp):
            self._tunnel_up(ev.tunnel)
        elif isinstance(ev, TunnelDown):
            self._tunnel_down(ev)
        elif isinstance(ev, TunnelFailed):
            self._tunnel_failed(ev)

    def _subscriber_ipv4(self, sub: Subscriber, ip: bytes) -> None:
        """IPv4 the data plane punted from an LNS subscriber: ping to its
        gateway, or TTL expired."""
        try:
            _, dst, _, ttl, _ = icmp.parse_ipv4(ip)
            if dst in self.ctl.local_v4:
                reply = icmp.echo_reply(ip, self.ctl.local_v4)
            elif ttl <= 1 and sub.link.ipv4 is not None:
                reply = icmp.time_exceeded(ip, sub.link.ipv4.gateway)
            else:
                reply = None
        except icmp.ParseError:
            self._count("malformed subscriber ipv4")
            return
        if reply is not None:
            sub.transport.send_ppp(PPP_IPV4, reply)

    def _tunnel_entry(self, t: Tunnel):
        d: TunnelData = t.data
        peer_ip = IPv4(t.peer[0])
        nh = self.ctl.nexthop_for(peer_ip) or 0
        return self.ctl.tables.l2tp_tunnel(d.tunnel_idx, IPv4(self.local[0]), peer_ip, t.peer_id, t.peer[1], nh,
                                           self.ctl.resolved_nexthop(nh))

    def tunnel_entries_via(self, nh: int) -> list:
        """The installed tunnels' entries whose next hop is nh, as they are
        now (after its MAC changed: they carry it)."""
        return [self._tunnel_entry(t) for t in self.endpoint.tunnels.values()
                if t.data is not None and t.data.installed and self.ctl.nexthop_for(IPv4(t.peer[0])) == nh]

    def _tunnel_up(self, t: Tunnel) -> None:
        d: TunnelData | None = t.data
        if d is None:                                 # a tunnel a LAC opened to us
            try:
                t.data = d = TunnelData(self.tunnel_idx.allocate(), "lns")
            except Exception:
                self.endpoint.close_tunnel(t, ResultCode(2, 4, "no tunnel index"), "no tunnel index")
                return
        if d.expect_host and t.peer_info.host_name != d.expect_host:
            # RFC 2868 Tunnel-Server-Auth-Id: the name the tunnel terminator
            # uses in tunnel authentication. Another LNS answered: its
            # calls fail over to the next tunnel.
            self._count("lac: LNS host name mismatch")
            why = f"LNS host name {t.peer_info.host_name!r}, expected {d.expect_host!r}"
            log.warning("l2tp tunnel %d to %s refused: %s", t.local_id, t.peer[0], why)
            self.endpoint.close_tunnel(t, ResultCode(STOP_GENERAL_ERROR, 0, why), why)
            return
        if t.hold_calls:
            t.send_waiting_calls()
        d.up_since = self.ctl.clock()
        self._count(f"tunnel up ({d.role})")
        log.info("l2tp tunnel %d up with %s (%s), peer tunnel %d", t.local_id, t.peer, t.peer_info.host_name,
                 t.peer_id)
        self._spawn(self._install_tunnel(t))

    def _spawn(self, coro) -> None:
        """A background write, referenced until it ends (the loop keeps
        only weak references to tasks)."""
        task = asyncio.get_running_loop().create_task(coro)
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)

    async def _install_tunnel(self, t: Tunnel) -> None:
        d: TunnelData = t.data
        if d.installed or t.state not in (TunnelState.ESTABLISHED,):
            return
        d.installed = True
        entry = self._tunnel_entry(t)
        errors = await self.ctl.switch.write(inserts([entry]))
        if errors:
            d.installed = False                # nothing for the teardown to delete
            self._count("tunnel install failed")
            log.error("tunnel %d: l2tp_tunnel insert: %s", t.local_id, errors[0].message)
            return
        now = self._tunnel_entry(t)
        if d.installed and now != entry:       # its next hop changed while the insert was on its way
            errors = await self.ctl.switch.write(modifies([now]))
            if errors:
                log.error("tunnel %d: l2tp_tunnel modify: %s", t.local_id, errors[0].message)

    def _count_stop(self, ev: TunnelDown | TunnelFailed) -> None:
        if ev.result is not None:
            self._count(f"tunnel down: result {ev.result.result} ({'by peer' if ev.by_peer else 'by us'})")
        if ev.auth_failed:
            self._count("tunnel authentication failed")

    @staticmethod
    def _why(ev: TunnelDown | TunnelFailed) -> str:
        """The reason, with the StopCCN we sent (the peer's is in the reason)."""
        if ev.result is not None and not ev.by_peer:
            return f"{ev.reason} (StopCCN result {ev.result})"
        return ev.reason

    def _tunnel_down(self, ev: TunnelDown) -> None:
        t = ev.tunnel
        d: TunnelData | None = t.data
        self._count("tunnel down" + (" (peer dead)" if ev.result is None else ""))
        self._count_stop(ev)
        if ev.auth_failed:
            log.warning("l2tp tunnel %d to %s:%s (%s) refused: %s", t.local_id, t.peer[0], t.peer[1],
                        t.peer_info.host_name or "?", self._why(ev))
        else:
            log.info("l2tp tunnel %d with %s down: %s", t.local_id, t.peer, ev.reason)
        if d is None:
            return
        if d.key is not None and self.lac_tunnels.get(d.key) is t:
            del self.lac_tunnels[d.key]
        if d.installed:
            entry = self._tunnel_entry(t)
            d.installed = False

            async def remove():
                await self.ctl.switch.write(deletes([entry]))
                self.tunnel_idx.release(d.tunnel_idx)
            self._spawn(remove())
        else:
            self.tunnel_idx.release(d.tunnel_idx)

    def _tunnel_failed(self, ev: TunnelFailed) -> None:
        """A tunnel a LAC opened to us ended before it was up (never
        announced, nothing installed): a wrong tunnel secret, a LAC that
        stopped or went silent during setup."""
        t = ev.tunnel
        self._count("tunnel setup failed" + (" (peer dead)" if ev.result is None else ""))
        self._count_stop(ev)
        log.warning("l2tp tunnel %d from %s:%s (%s) failed before it was up: %s", t.local_id, t.peer[0],
                    t.peer[1], t.peer_info.host_name or "?", self._why(ev))

    def _session_down(self, ev: SessionDown) -> None:
        s = ev.session
        self._count("session down" + (" by peer" if ev.by_peer else ""))
        data = s.data
        s.data = None
        if isinstance(data, LacCall):
            if data.done is not None and not data.done.done():
                data.done.set_result(ev.reason or "refused")
            elif data.switched:
                self.ctl.sessions.lower_layer_down(data.sub, f"L2TP: {ev.reason}", TerminateCause.LOST_SERVICE)
        elif isinstance(data, Subscriber):
            cause = TerminateCause.USER_REQUEST if ev.by_peer else TerminateCause.LOST_SERVICE
            self.ctl.sessions.lower_layer_down(data, f"L2TP: {ev.reason}", cause)

    # ---- LNS ----
    def _policy(self, peer: tuple, host_name: str) -> TunnelConfig | None:
        if not self.cfg.lns:
            self._count("tunnel refused: not an LNS")
            return None
        p = self._lns_peers.get(IPv4(peer[0]))
        if p is None:
            self._count("tunnel refused: unknown LAC")
            log.warning("l2tp: SCCRQ from unknown LAC %s (%s) refused", peer, host_name)
            return None
        cfg = TunnelConfig.from_dict({**self.cfg.tunnel, "secret": p.secret})
        if p.host_name:
            cfg.host_name = p.host_name
        return cfg

    def _incoming_call(self, s: Session) -> None:
        t = s.tunnel
        if len(t.sessions) > self.cfg.max_sessions_per_tunnel:
            self.endpoint.refuse_session(s, ResultCode(CDN_NO_FACILITIES_TEMPORARY))
            self._count("call refused: tunnel full")
        else:
            self.endpoint.accept_session(s)

    def _lns_session_up(self, s: Session) -> None:
        t = s.tunnel
        d: TunnelData | None = t.data
        c = s.call
        line = LineInfo(port=0, line_id=0, circuit_id=(c.line.circuit_id or "") if c.line else "",
                        remote_id=(c.line.remote_id or "") if c.line else "")
        if not line.circuit_id:
            line = LineInfo(port=0, circuit_id=f"l2tp:{t.peer[0]}/{t.peer_id}/{s.peer_id}",
                            remote_id=line.remote_id)
        transport = L2tpTransport(s, d.tunnel_idx if d else 0, self.cfg.local_address, IPv4(t.peer[0]),
                                  self._send_ppp, self._close_session)
        sub = self.ctl.sessions.attach(transport, line)
        if sub is None:
            self.endpoint.close_session(s, ResultCode(CDN_NO_FACILITIES_TEMPORARY), reason="no resources")
            self._pump()
            return
        s.data = sub
        self._count("lns session up")
        proxied = self.cfg.proxy == "accept" and c.proxy_lcp is not None
        creds = _credentials(c.proxy_auth) if proxied else None

        def start(link) -> None:
            if not (proxied and link.start_proxied(c.proxy_lcp.last_sent, c.proxy_lcp.last_received, creds)):
                self._count("lcp renegotiated")
                link.start()
            else:
                self._count("lcp taken over from proxy")
        self.ctl.sessions.run(sub, start)

    def _send_ppp(self, s: Session, protocol: int, info: bytes) -> None:
        self.endpoint.send_ppp(s, protocol, info)
        self._pump()

    def _close_session(self, s: Session, result: ResultCode, reason: str) -> None:
        self.endpoint.close_session(s, result, reason=reason)
        self._pump()

    def _drop_call(self, call: LacCall, result: int, reason: str) -> None:
        """Clear a LAC call that is still its session's (CDN, or dropped
        while the tunnel is not up); its session's events no longer reach it."""
        s = call.session
        if s is not None and s.data is call:
            s.data = None
            self._close_session(s, ResultCode(result), reason)

    # ---- LAC ----
    def _tunnel_for(self, spec: TunnelSpec) -> Tunnel:
        key = (spec.server_endpoint, spec.assignment_id, spec.password, spec.client_auth_id, spec.server_auth_id)
        t = self.lac_tunnels.get(key)
        if t is not None and t.state in (TunnelState.IDLE, TunnelState.WAIT_CTL_REPLY, TunnelState.ESTABLISHED) \
                and len(t.sessions) < self.cfg.max_sessions_per_tunnel:
            return t
        cfg = TunnelConfig.from_dict({**self.cfg.tunnel, "secret": spec.password or None})
        if spec.client_auth_id:
            cfg.host_name = spec.client_auth_id
        idx = self.tunnel_idx.allocate()    # before any SCCRQ: a full table opens no orphan tunnel
        try:
            self.ctl.nexthop_for(IPv4(spec.server_endpoint))   # start resolving the way there
            t = self.endpoint.open_tunnel((spec.server_endpoint, L2TP_PORT), self.local, cfg)
        except Exception:
            self.tunnel_idx.release(idx)
            raise
        t.data = TunnelData(idx, "lac", key=key, expect_host=spec.server_auth_id)
        # with an expected LNS name, no call (calling number, line ids) goes
        # out before _tunnel_up has checked the name
        t.hold_calls = bool(spec.server_auth_id)
        self.lac_tunnels[key] = t
        self._count("tunnel opened")
        return t

    def _order(self, tunnels: list[TunnelSpec]) -> list[TunnelSpec]:
        """By preference (lower first, RFC 2868 3.8); equal preferences in
        random order, which spreads subscribers over equal LNSes. An LNS
        that let a call time out within `lac_dead_time` goes after the
        others, so one dead LNS costs one timeout, not one per subscriber."""
        rnd = random.random
        now = self.ctl.clock()
        return sorted(tunnels, key=lambda t: (self._lns_dead_until.get(t.server_endpoint, 0.0) > now,
                                              t.preference, rnd()))

    async def lac_switch(self, sub: Subscriber, creds: Credentials, result: AuthResult) -> None:
        """Switch an authenticated PPPoE subscriber to an LNS, trying the
        tunnels in preference order; close it when none takes the call."""
        mgr = self.ctl.sessions
        link = sub.link
        tr = sub.transport
        call_params = CallParams(
            calling_number=tr.calling_station,
            line=AccessLine(circuit_id=sub.line_info.circuit_id or sub.line_info.nas_port_id,
                            remote_id=sub.line_info.remote_id or None),
            tx_speed=1_000_000_000,
            proxy_lcp=ProxyLcp(initial_received=link.lcp_first_confreq, last_sent=link.lcp_last_sent,
                               last_received=link.lcp_last_confreq),
            proxy_auth=_proxy_auth(creds))
        # AAA has answered: from here each LNS has lac_call_timeout to take
        # the call, and the link's own authentication timer would only cut
        # the fail-over short (the session's setup timeout still bounds all)
        link.auth_deadline = None
        reasons = []
        for spec in self._order(result.tunnels):
            if not sub.live:
                return
            try:
                t = self._tunnel_for(spec)
            except Exception as e:
                reasons.append(f"{spec.server_endpoint}: {e}")
                continue
            call = LacCall(sub, done=asyncio.get_running_loop().create_future())
            s = self.endpoint.open_session(t, call_params)
            call.session = s
            s.data = call
            self._pending_calls[sub.sid] = call
            self._pump()
            try:
                outcome = await asyncio.wait_for(asyncio.shield(call.done), self.cfg.lac_call_timeout)
            except TimeoutError:
                outcome = f"no answer in {self.cfg.lac_call_timeout:g} s"
                self._lns_dead_until[spec.server_endpoint] = self.ctl.clock() + self.cfg.lac_dead_time
                self._drop_call(call, CDN_NO_FACILITIES_TEMPORARY, "no answer in time")
            finally:
                if self._pending_calls.get(sub.sid) is call:
                    del self._pending_calls[sub.sid]
            if not sub.live:                              # the subscriber left meanwhile
                self._drop_call(call, CDN_ADMIN, "subscriber gone")
                return
            if outcome is None:
                await self._lac_connected(sub, call, t)
                return
            reasons.append(f"{spec.server_endpoint}: {outcome}")
            self._count("lac failover")
            log.info("session %d: LNS %s did not take the call (%s)", sub.sid, spec.server_endpoint, outcome)
        self._count("lac: no LNS took the call")
        log.warning("session %d (%s): no LNS took the call: %s", sub.sid, sub.username, "; ".join(reasons))
        mgr.close(sub, "no LNS available", TerminateCause.SERVICE_UNAVAILABLE)

    async def _lac_connected(self, sub: Subscriber, call: LacCall, t: Tunnel) -> None:
        mgr = self.ctl.sessions
        s = call.session
        d: TunnelData = t.data
        await self._install_tunnel(t)
        tr = sub.transport
        entries = self.ctl.tables.lac_session(
            tr.line, tr.session_id, int.from_bytes(tr.client_mac, "big"), sub.sess_idx, d.tunnel_idx,
            s.peer_id, self.cfg.local_address, IPv4(t.peer[0]), t.local_id, s.local_id, tr.target())
        sub.installed["lac"] = entries
        sub.lac = call                         # from here on its PPP is the LNS's
        sub.link.detach()
        updates = (modifies(self.ctl.tables.session_counters_zero(sub.sess_idx)
                            + self.ctl.tables.session_meters(sub.sess_idx, sub.rate_up_kbps, sub.rate_down_kbps))
                   + inserts(entries))
        try:
            errors = await self.ctl.switch.write(updates)
            failure = errors[0].message if errors else None
        except Exception as e:          # the switch went away: not a task ending with the call up
            failure = str(e)
        if failure is not None:
            log.error("session %d: LAC entries: %s", sub.sid, failure)
            mgr.close(sub, "data plane error", TerminateCause.NAS_ERROR)
            return
        call.switched = True
        self._count("lac session switched")
        if s.data is None or not sub.live:                # the call dropped meanwhile
            mgr.lower_layer_down(sub, "L2TP call dropped", TerminateCause.LOST_SERVICE)
            return
        mgr.switched_up(sub)

    def relay_upstream(self, sub: Subscriber, protocol: int, info: bytes) -> bool:
        """A LAC subscriber's PPP frame that reached the controller (punted
        before the cross-connect was in): into its call, if it has one."""
        call = sub.lac
        if isinstance(call, LacCall) and call.session is not None and call.session.established:
            self._count("lac relayed to LNS")
            self.endpoint.send_ppp(call.session, protocol, info)
            self._pump()
            return True
        return False

    def _subscriber_down(self, sub: Subscriber) -> None:
        """A LAC subscriber left (PADT, clear, timeout): CDN to its LNS,
        also for a call still being set up (the LNS would otherwise get the
        ICCN, and the subscriber's credentials, for someone already gone)."""
        pending = self._pending_calls.pop(sub.sid, None)
        if pending is not None and pending.done is not None and not pending.done.done():
            pending.done.set_result("subscriber left")      # lac_switch closes the call
        if isinstance(sub.lac, LacCall):
            lost = sub.cause in (TerminateCause.USER_REQUEST, TerminateCause.LOST_CARRIER)
            self._drop_call(sub.lac, CDN_LOST_CARRIER if lost else CDN_ADMIN, "subscriber left")

    # ---- operator ----
    async def api(self, cmd: str, req: dict) -> dict:
        now = self.ctl.clock()
        if cmd == "l2tp_tunnels":
            out = []
            for t in self.endpoint.tunnels.values():
                d: TunnelData | None = t.data
                out.append({"id": t.local_id, "peer": f"{t.peer[0]}:{t.peer[1]}", "host_name": t.peer_info.host_name,
                            "local_tunnel_id": t.local_id, "peer_tunnel_id": t.peer_id, "state": t.state.value,
                            "role": d.role if d else "-", "sessions": len(t.sessions),
                            "uptime": round(now - d.up_since, 1) if d and d.up_since else None,
                            "counters": dict(t.counters)})
            return {"tunnels": out}
        if cmd == "l2tp_sessions":
            out = []
            for t in self.endpoint.tunnels.values():
                for s in t.sessions.values():
                    data = s.data
                    sub = data.sub if isinstance(data, LacCall) else data if isinstance(data, Subscriber) else None
                    out.append({"id": sub.sid if sub else None, "tunnel": t.local_id, "local_session_id": s.local_id,
                                "peer_session_id": s.peer_id, "state": s.state.value, "role": "lac" if s.lac else "lns",
                                "user": sub.username if sub else None,
                                "ipv4": str(sub.ipv4) if sub and sub.ipv4 else None})
            return {"sessions": out}
        if cmd == "clear_tunnel":
            t = self.endpoint.tunnel(int(req["id"]))
            if t is None:
                return {"error": f"no tunnel {req['id']}"}
            self.endpoint.close_tunnel(t, ResultCode(STOP_CLEAR, None, "cleared by operator"), "cleared by operator")
            self._pump()
            return {"cleared": t.local_id}
        if cmd == "clear_l2tp_session":
            subs = self.ctl.sessions.find(sid=int(req["id"]))
            if not subs:
                return {"error": f"no session {req['id']}"}
            self.ctl.sessions.close(subs[0], "cleared by operator", TerminateCause.ADMIN_RESET)
            return {"cleared": subs[0].sid}
        return {"error": f"unknown command {cmd}"}


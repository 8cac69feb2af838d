"""The BNG controller: one switch, its punted packets, its subscribers.

On every (re)connection to the switch the controller makes the switch
match what it knows, by diffing desired against actual entries:
  - the pipeline is pushed only if the switch does not already run it
    (same cookie), so a controller restart keeps the tables and counters;
  - the infrastructure (ports, the BNG's addresses, routes, lines) and
    every known session's entries are inserted where missing, corrected
    where different, and entries nobody owns are deleted;
  - PPPoE sessions found in the switch that no longer exist here get a
    PADT, so their CPEs redial instead of talking into the void.
After a controller crash the sessions come from the session store; after a
switch restart they come from memory. Either way the peers never notice.
"""
from __future__ import annotations

import asyncio
import collections
import gc
import hashlib
import ipaddress
import json
import logging
import os
import time

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as p4r

from . import icmp
from .aaa.base import AaaBackend, TerminateCause
from .arp import ArpAgent, Neighbor
from .config import ControllerConfig
from .dataplane import BngTables, NextHopL2
from .ipv6.responder import Ipv6Responder
from .ip_pool import PoolSet
from .lines import IndexAllocator
from .p4info_names import P4InfoNames
from .p4runtime_async import AsyncP4RuntimeClient, PacketIn, deletes, inserts, modifies
from .p4runtime_entries import entry_key
from .path_mtu import PacketTooBig
from .ppp.codec import PPP_IPV4
from .pppoe import codec as pppoe
from .pppoe.discovery import PppoeDiscovery
from .session_manager import RestoreRefused, SessionManager
from .session_store import SessionStore

log = logging.getLogger("bng.controller")
# how long an on-link address looked up for a peer may stay unanswered
DYNAMIC_NEIGHBOR_TTL = 300.0

# Packet-ins kept while the switch is being set up (a few seconds of
# keepalives and discovery from tens of thousands of subscribers).
EARLY_PACKET_INS_MAX = 50_000


def action_key(e: p4r.TableEntry) -> bytes:
    a = e.action.action
    return repr((a.action_id, sorted((p.param_id, p.value) for p in a.params))).encode()


class BngController:
    def __init__(self, cfg: ControllerConfig, aaa: AaaBackend, clock=time.monotonic):
        self.cfg = cfg
        self.aaa = aaa
        self.clock = clock
        pc = cfg.pipeline
        self.p4info = text_format.Parse(pc.path("p4info.txtpb").read_text(), p4info_pb2.P4Info())
        self.device_config = pc.path("device_config.json").read_bytes()
        enums = json.loads(pc.path("enums.json").read_text())
        self.punt_reasons: dict[int, str] = {v: k for k, v in enums["PuntReason_t"]["members"].items()}
        self.punt_values = enums["PuntReason_t"]["members"]
        self.drop_reasons: dict[int, str] = {v: k for k, v in enums["DropReason_t"]["members"].items()}
        self.cookie = int.from_bytes(hashlib.sha256(self.p4info.SerializeToString(deterministic=True)
                                                    + self.device_config).digest()[:8], "big") >> 1
        self.names = P4InfoNames(self.p4info)
        self.tables = BngTables(self.names, cfg.sessions.policer_burst_ms)
        sw = cfg.switch
        self.switch = AsyncP4RuntimeClient(sw.address, sw.device_id, (0, sw.election_id), self.on_packet_in,
                                           packet_socket=sw.packet_socket)
        self.switch.use_p4info(self.p4info)
        cfg.state_path.mkdir(parents=True, exist_ok=True)
        self.store = SessionStore(cfg.state_path / "sessions.db")
        secret = self.store.get_meta("discovery_secret")
        if secret is None:
            secret = os.urandom(32).hex()
            self.store.set_meta("discovery_secret", secret)
        self.pools = PoolSet(cfg.pools, cfg.default_pool)
        n_idx = self.names.counter("session_up").size
        self.sessions = SessionManager(cfg, self.tables, self.switch, aaa, self.pools, self.store,
                                       bytes.fromhex(secret), n_session_indices=n_idx, clock=clock)
        self.arp = ArpAgent(cfg.bng_mac, on_resolved=self._neighbor_changed)
        self.nexthop_ids = IndexAllocator(1, self.names.table("nexthop").size - 1, "next hops")
        self.nexthops: dict[ipaddress.IPv4Address, int] = {}
        # on-link addresses looked up for a peer (not configured), since when
        self._dynamic_neighbors: dict[ipaddress.IPv4Address, float] = {}
        self.core_addresses: dict[int, ipaddress.IPv4Address] = {}
        self.local_v4: set[ipaddress.IPv4Address] = cfg.own_ipv4()
        self.punts: dict[str, int] = {}
        self.unhandled_punts = 0
        self._restored = False
        self._tasks: list[asyncio.Task] = []
        self._switch_task: asyncio.Task | None = None
        self._dataplane_cache: dict = {}
        self._nexthops_installed: set[int] = set()
        self.ready = asyncio.Event()     # connected, pipeline in place, switch reconciled
        # Packet-ins that arrive before that (the packet channel opens first):
        # handled once the sessions are restored, not answered from an empty
        # session table (which would PADT every CPE whose keepalive came early).
        self._early_packet_ins: collections.deque[PacketIn] = collections.deque()
        self.early_packet_ins_dropped = 0
        self.started = time.time()
        self.l2tp = None          # l2tp.L2tpService when configured
        self.ipv6 = Ipv6Responder(self) if cfg.ipv6.enabled else None
        self.sessions.ipv6 = self.ipv6
        self._setup_core()
        self.too_big = PacketTooBig(self.sessions, lambda frame, port: self.switch.packet_out(frame, port),
                                    cfg.bng_mac, self.core_addresses,
                                    self.ipv6.core_global if self.ipv6 is not None else {})

    # ------------------------------------------------------------------
    def _setup_core(self) -> None:
        for c in self.cfg.core:
            self.core_addresses[c.port] = c.ipv4.ip
            self.arp.addresses.setdefault((c.port, c.vlan), set()).add(c.ipv4.ip)
            if c.gateway is not None:
                self._watch_nexthop(c.gateway)
        for r in self.cfg.routes:
            self._watch_nexthop(r.via)
        if self.ipv6 is not None:
            self.ipv6.nd.on_resolved = self._neighbor_changed
            for addr in self.ipv6.nd.neighbors:            # each core link's gateway6
                if addr not in self.nexthops:
                    self.nexthops[addr] = self.nexthop_ids.allocate()

    def _core_for(self, addr: ipaddress.IPv4Address):
        for c in self.cfg.core:
            if addr in c.ipv4.network:
                return c
        raise ValueError(f"next hop {addr} is on no core interface's subnet")

    def _watch_nexthop(self, addr: ipaddress.IPv4Address) -> None:
        if addr in self.nexthops:
            return
        c = self._core_for(addr)
        self.nexthops[addr] = self.nexthop_ids.allocate()
        self.arp.watch(addr, c.port, c.vlan, c.ipv4.ip)

    def nexthop_for(self, addr: ipaddress.IPv4Address) -> int | None:
        """The next hop (id) toward an IPv4 address: the address itself on a
        core link (resolved by ARP from now on), else the longest static
        route, else the default gateway. None: no route."""
        for c in self.cfg.core:
            if addr in c.ipv4.network:
                if addr not in self.nexthops:
                    self._dynamic_neighbors[addr] = self.clock()
                self._watch_nexthop(addr)
                return self.nexthops[addr]
        best = None
        for r in self.cfg.routes:
            if addr in r.prefix and (best is None or r.prefix.prefixlen > best.prefix.prefixlen):
                best = r
        if best is not None:
            return self.nexthops[best.via]
        for c in self.cfg.core:
            if c.gateway is not None:
                return self.nexthops[c.gateway]
        return None

    def _forget_silent_neighbors(self, now: float) -> None:
        """Stop looking up an on-link address that an L2TP peer made us
        resolve (not a configured gateway) and that has not answered in
        DYNAMIC_NEIGHBOR_TTL, once no tunnel is with it: anyone can send an
        SCCRQ from any address of a core subnet, and each would otherwise
        be asked for, and hold a next-hop id, for ever. One that answered
        once is a real peer and stays."""
        for addr, since in list(self._dynamic_neighbors.items()):
            n = self.arp.neighbors.get(addr)
            if n is None or n.last_seen:
                del self._dynamic_neighbors[addr]
                continue
            if now - since < DYNAMIC_NEIGHBOR_TTL or (self.l2tp is not None and self.l2tp.has_peer(addr)):
                continue
            del self._dynamic_neighbors[addr]
            del self.arp.neighbors[addr]
            self.nexthop_ids.release(self.nexthops.pop(addr))
            if self.l2tp is not None:
                self.l2tp.forget_peer(addr)
            self.sessions.counters["core neighbor forgotten: never answered"] += 1
            log.info("next hop %s never answered ARP: no longer looked up", addr)

    def _resolved_neighbor(self, nh: int | None) -> Neighbor | None:
        """The IPv4 neighbor behind next hop id nh, if ARP has its MAC."""
        for a, i in self.nexthops.items():
            if i == nh and a.version == 4:
                n = self.arp.neighbors[a]
                return n if n.mac is not None else None
        return None

    def l2_toward(self, addr: ipaddress.IPv4Address) -> tuple[int, pppoe.L2Header] | None:
        """(port, Ethernet header) for a packet the controller sends to addr
        through the core, or None while its next hop is unresolved."""
        n = self._resolved_neighbor(self.nexthop_for(addr))
        if n is None:
            return None
        return n.port, pppoe.L2Header(dst=n.mac, src=self.cfg.bng_mac, s_vid=n.vlan)

    def resolved_nexthop(self, nh: int | None) -> NextHopL2 | None:
        """Next hop id nh's L2 rewrite, for an entry that carries it
        (a tunnel's), or None while it is unresolved."""
        n = self._resolved_neighbor(nh)
        return self._nexthop_l2(n) if n is not None else None

    def _neighbor_changed(self, n: Neighbor) -> None:
        """A next hop's MAC appeared, changed or aged out. Before the switch
        is ready the reconciliation installs it from ArpAgent's state."""
        if self.ready.is_set():
            asyncio.get_running_loop().create_task(self._write_nexthop(n))

    def _nexthop_l2(self, n: Neighbor) -> NextHopL2:
        return NextHopL2(port=n.port, smac=int.from_bytes(self.cfg.bng_mac, "big"),
                         dmac=int.from_bytes(n.mac or b"\0" * 6, "big"), vid=n.vlan)

    def _ipv4_routes(self) -> list[tuple[ipaddress.IPv4Network, ipaddress.IPv4Address]]:
        """The configured IPv4 routes (the default via the first core
        gateway, then the static ones) and their next hops."""
        out = []
        for c in self.cfg.core:
            if c.gateway is not None:
                out.append((ipaddress.IPv4Network("0.0.0.0/0"), c.gateway))
                break
        out += [(r.prefix, r.via) for r in self.cfg.routes]
        return out

    def _route_entries_v4(self, via: ipaddress.IPv4Address | None = None) -> list[p4r.TableEntry]:
        """fib_v4 entries of the configured routes (those via one next hop,
        if given), each carrying its next hop's L2 rewrite once resolved."""
        out = []
        for net, gw in self._ipv4_routes():
            if via is None or gw == via:
                n = self.arp.neighbors[gw]
                out.append(self.tables.route_v4(net, self.nexthops[gw],
                                                self._nexthop_l2(n) if n.mac is not None else None))
        return out

    async def _write_nexthop(self, n: Neighbor) -> None:
        nh = self.nexthops[n.addr]
        entry = self.tables.nexthop(nh, self._nexthop_l2(n))
        installed = nh in self._nexthops_installed
        if n.mac is None:
            updates = deletes([entry]) if installed else []
            self._nexthops_installed.discard(nh)
        else:
            updates = modifies([entry]) if installed else inserts([entry])
            self._nexthops_installed.add(nh)
        if n.addr.version == 4:
            updates += modifies(self._route_entries_v4(via=n.addr))
            if self.l2tp is not None:
                updates += modifies(self.l2tp.tunnel_entries_via(nh))
        errors = await self.switch.write(updates)
        if errors:
            log.error("next hop %s: %s", n.addr, errors[0].message)
        else:
            log.info("next hop %s is %s", n.addr, pppoe.mac_str(n.mac) if n.mac else "unresolved")
        if n.mac is not None and self.l2tp is not None:
            self.l2tp.neighbor_resolved()

    def next_hop_status(self) -> dict[str, str | None]:
        """Each next hop the routes use and its MAC (None: unresolved, its
        routes drop as NO_ROUTE)."""
        out = {}
        for addr in self.nexthops:
            n = self.arp.neighbors.get(addr) if addr.version == 4 else self.ipv6.nd.neighbors.get(addr)
            out[str(addr)] = pppoe.mac_str(n.mac) if n is not None and n.mac else None
        return out

    # ------------------------------------------------------------------
    def infrastructure_entries(self) -> list[p4r.TableEntry]:
        t = self.tables
        mac = int.from_bytes(self.cfg.bng_mac, "big")
        out: list[p4r.TableEntry] = []
        routed = {c.port for c in self.cfg.core} | set(self.l2tp.ports() if self.l2tp else ())
        for p in sorted(set(self.cfg.access_ports) | routed):
            out += t.port(p, mac if p in routed else None)
        lns = self.l2tp.lns_addresses() if self.l2tp else set()
        for a in sorted(self.local_v4 | (self.l2tp.local_addresses() if self.l2tp else set())):
            out += [t.local_ipv4(a, lns=a in lns), t.local_route_v4(a)]
        if self.ipv6 is not None:
            out += [t.local_ipv6(a) for a in self.ipv6.local_addresses()]
        for pool in self.cfg.pools:
            for net in pool.prefixes:
                out.append(t.route_v4(net, 0))            # blackhole: unused pool addresses
        out += self._route_entries_v4()
        if self.ipv6 is not None:
            for c in self.cfg.core:
                if c.gateway6 is not None:
                    out.append(t.route_v6(ipaddress.IPv6Network("::/0"), self.nexthops[c.gateway6]))
                    break
            for net in (self.cfg.ipv6.wan_pool, self.cfg.ipv6.pd_pool):
                if net is not None:
                    out.append(t.route_v6(net, 0))          # blackhole: unassigned prefixes
        self._nexthops_installed = set()
        for addr, nh in self.nexthops.items():
            n = self.arp.neighbors[addr] if addr.version == 4 else self.ipv6.nd.neighbors[addr]
            if n.mac is not None:
                out.append(t.nexthop(nh, self._nexthop_l2(n)))
                self._nexthops_installed.add(nh)
        for line in self.sessions.lines.by_id.values():
            if line.installed:
                out.append(t.line(line.port, line.s_vid, line.c_vid, line.line_id))
        return out

    async def _ensure_pipeline(self) -> bool:
        """True if the switch already ran our pipeline (state kept)."""
        mode = self.cfg.pipeline.push
        current = await self.switch.get_pipeline()
        same = current is not None and current.cookie.cookie == self.cookie
        if mode == "never" or (mode == "auto" and same):
            if not same:
                log.warning("switch runs another pipeline and pipeline.push is never")
            return same
        log.info("pushing pipeline %s (cookie %x)", self.cfg.pipeline.program, self.cookie)
        await self.switch.set_pipeline(self.p4info, self.device_config, self.cookie)
        return False

    async def on_connected(self) -> None:
        self.ready.clear()
        kept = await self._ensure_pipeline()
        actual = [e.table_entry for e in await self.switch.read(self.tables.table_read())
                  if not e.table_entry.is_default_action]
        line_map = self.tables.table_id("line_map")
        for e in actual:
            if e.table_id == line_map:
                m = self.tables.b.match_values(e)
                _, params = self.tables.b.action_params(e)
                self.sessions.lines.restore(params["line_id"], m["port"], m["s_vid"], m["c_vid"], 0x8100)
        if not self._restored:
            self._restored = True
            n = 0
            for snap in self.store.load():
                try:
                    if self.sessions.restore(snap) is not None:
                        n += 1
                    continue
                except RestoreRefused as e:
                    self.sessions.counters["restore refused"] += 1
                    log.error("stored session %s not restored, dropped: %s", snap.get("sid"), e)
                except Exception:
                    self.sessions.counters["restore failed"] += 1
                    log.exception("restoring session %s failed; it is dropped", snap.get("sid"))
                self.store.delete(snap.get("sid", 0))
                await self.sessions.send_unrestored_stop(snap)
            if n:
                log.info("restored %d sessions from %s", n, self.store.path)
            if self.ipv6 is not None:
                for sub in self.sessions.subs.values():
                    if "ipv6" in sub.installed:
                        self.ipv6.network_up(sub, announce=False)
            if self.l2tp is not None:
                await self.l2tp.restore()
        if not kept:
            n = self.sessions.counters_lost()
            if n:
                log.warning("the switch counts from zero (pipeline pushed): %d sessions' accounting "
                            "goes on from the totals they last reported", n)
        await self._reconcile(actual)
        await self._configure_meters(kept)
        self.ready.set()
        early = self._early_packet_ins
        if early:
            log.info("handling %d packet-ins that came while the switch was being set up", len(early))
        while early:
            self._handle_packet_in(early.popleft())
        log.info("switch %s ready: %d sessions, pipeline %s", self.cfg.switch.address, len(self.sessions.subs),
                 "kept" if kept else "pushed")

    async def _reconcile(self, actual: list[p4r.TableEntry]) -> None:
        desired = self.infrastructure_entries() + self.sessions.desired_session_entries()
        if self.l2tp is not None:
            desired += self.l2tp.desired_entries()
        want = {entry_key(e): e for e in desired}
        have = {entry_key(e): e for e in actual}
        ins = [e for k, e in want.items() if k not in have]
        mod = [e for k, e in want.items() if k in have and action_key(have[k]) != action_key(e)]
        dels = [e for k, e in have.items() if k not in want]
        self._padt_orphans(dels)
        for kind, batch in (("delete", deletes(dels)), ("insert", inserts(ins)), ("modify", modifies(mod))):
            for i in range(0, len(batch), 2000):
                errors = await self.switch.write(batch[i:i + 2000])
                for err in errors[:5]:
                    log.error("reconcile %s: %s", kind, err.message)
        if ins or mod or dels:
            log.info("reconciled the switch: %d inserted, %d modified, %d deleted", len(ins), len(mod), len(dels))

    def _padt_orphans(self, stale: list[p4r.TableEntry]) -> None:
        sid_table = self.tables.table_id("pppoe_session")
        for e in stale:
            if e.table_id != sid_table:
                continue
            m = self.tables.b.match_values(e)
            line = self.sessions.lines.get(m["port"], m["s_vid"], m["c_vid"])
            if line is None:
                continue
            l2 = pppoe.L2Header(dst=m["src_mac"].to_bytes(6, "big"), src=self.cfg.bng_mac, s_vid=line.s_vid,
                                c_vid=line.c_vid, s_tpid=line.s_tpid)
            self.switch.packet_out(pppoe.discovery_frame(l2, PppoeDiscovery.padt(
                m["session_id"], "session lost by the BNG")), line.port)
            self.sessions.counters["pppoe PADT sent for orphan session"] += 1

    async def _configure_meters(self, kept: bool) -> None:
        t = self.tables
        updates = []
        pp = self.cfg.punt_policer
        for name, value in self.punt_values.items():
            if name == "NONE":
                continue
            rate = pp.rates.get(name, pp.default_pps)
            burst = max(int(rate * pp.burst_seconds), 10)
            updates.append(t.b.meter_entry("punt_meter", value, cir=rate, cburst=burst))
        if not kept:
            updates += self.sessions.desired_meters()
        errors = await self.switch.write(modifies(updates))
        for e in errors[:5]:
            log.error("meter config: %s", e.message)

    # ------------------------------------------------------------------
    def on_packet_in(self, pin: PacketIn) -> None:
        if not self.ready.is_set():
            if len(self._early_packet_ins) < EARLY_PACKET_INS_MAX:
                self._early_packet_ins.append(pin)
            else:
                self.early_packet_ins_dropped += 1
            return
        self._handle_packet_in(pin)

    def _handle_packet_in(self, pin: PacketIn) -> None:
        md = pin.metadata
        reason = self.punt_reasons.get(md.get("reason", 0), "UNKNOWN")
        self.punts[reason] = self.punts.get(reason, 0) + 1
        port = md.get("ingress_port", 0)
        frame = pin.payload
        s = self.sessions
        if reason == "PPP_CONTROL":
            s.on_ppp_control(port, md.get("line_id", 0), frame)
        elif reason == "PPPOE_DISCOVERY":
            s.on_discovery(port, frame)
        elif reason == "ARP":
            reply = self.arp.handle(port, frame, self.clock())
            if reply is not None:
                self.switch.packet_out(reply, port)
        elif reason in ("LOCAL_IPV4", "TTL_EXPIRED"):
            if not (reason == "TTL_EXPIRED" and self.ipv6 is not None
                    and self.ipv6.on_packet_in(reason, port, md, frame)):
                self._ipv4_to_us(reason, port, md, frame)
        elif reason == "PACKET_TOO_BIG":
            self.too_big.on_packet_in(port, frame)
        elif reason in ("L2TP_CONTROL", "L2TP_PPP_CONTROL") and self.l2tp is not None:
            self.l2tp.on_packet_in(reason, port, md, frame)
        elif reason in ("LOCAL_IPV6", "SUBSCRIBER_IPV6_CONTROL") and self.ipv6 is not None:
            self.ipv6.on_packet_in(reason, port, md, frame)
        else:
            self.unhandled_punts += 1

    def _ipv4_to_us(self, reason: str, port: int, md: dict, frame: bytes) -> None:
        """ICMP echo to the BNG and Time Exceeded, from the core or from a
        subscriber (then inside its PPPoE session)."""
        try:
            l2, etype, off = pppoe.parse_l2(frame)
            sub = None
            if etype == pppoe.ETH_P_PPPOE_SESS:
                sid, proto, ip = pppoe.parse_session(frame[off:])
                if proto != PPP_IPV4:
                    return
                sub = self.sessions.find_pppoe(md.get("line_id", 0), sid, l2.src)
                if sub is None:
                    return
            elif etype == pppoe.ETH_P_IPV4:
                ip = frame[off:]
                if self.l2tp is not None and len(ip) >= 24 and ip[9] == 17 and \
                        ip[(ip[0] & 0x0F) * 4 + 2:(ip[0] & 0x0F) * 4 + 4] == b"\x06\xa5":
                    # an LNS subscriber's packet, still in its L2TP session
                    self.l2tp.on_packet_in(reason, port, md, frame)
                    return
            else:
                return
            if reason == "LOCAL_IPV4":
                reply = icmp.echo_reply(ip, self.local_v4)
            else:
                src = (sub.link.ipv4.gateway if sub is not None and sub.link.ipv4 is not None
                       else self.core_addresses.get(port))
                reply = icmp.time_exceeded(ip, src) if src is not None else None
        except (pppoe.CodecError, icmp.ParseError):
            self.sessions.counters["malformed ipv4 punt"] += 1
            return
        if reply is None:
            return
        if sub is not None:
            sub.transport.send_ppp(PPP_IPV4, reply)
        else:
            self.switch.packet_out(l2.reply_header(self.cfg.bng_mac).encode(pppoe.ETH_P_IPV4) + reply, port)

    # ------------------------------------------------------------------
    async def dataplane_counters(self) -> dict[str, dict[str, dict[str, int]]]:
        """The switch's drop and punt counters by reason name."""
        out: dict[str, dict[str, dict[str, int]]] = {"drops": {}, "punts": {}}
        for counter, names in (("drops", self.drop_reasons), ("punts", self.punt_reasons)):
            for e in await self.switch.read(self.tables.counter_read(counter)):
                ce = e.counter_entry
                name = names.get(ce.index.index)
                if name is not None and name != "NONE":
                    out[counter][name] = {"packets": ce.data.packet_count, "bytes": ce.data.byte_count}
        return out

    async def counters(self) -> dict:
        s = self.sessions
        out = {"controller": dict(sorted(s.counters.items())), "packet_in": dict(sorted(self.punts.items())),
               "unhandled_punts": self.unhandled_punts, "early_packet_ins_dropped": self.early_packet_ins_dropped,
               "p4runtime": dict(self.switch.stats),
               "writer": dict(self.switch.writer.stats), "arp": vars(self.arp.stats),
               "packet_too_big": dict(sorted(self.too_big.counters.items()))}
        if self.switch.connected.is_set():
            out["dataplane"] = await self.dataplane_counters()
        if self.l2tp is not None:
            out["l2tp"] = self.l2tp.counters()
        if self.ipv6 is not None:
            out["ipv6"] = self.ipv6.counters()
        return out

    def stats_snapshot(self) -> dict:
        """Plain copies for the metrics thread (which must not iterate the
        loop's live dicts)."""
        s = self.sessions
        return {"sessions": s.sessions_by_state, "setups_total": s.setups_total,
                "setup_times": list(s.setup_times), "setup_seconds_sum": s.setup_seconds_sum,
                "events": dict(s.counters), "packet_in": dict(self.punts),
                "packet_out": self.switch.stats["packet_out"], "connected": self.switch.connected.is_set(),
                "pools": {n: (len(p.used), p.free) for n, p in self.pools.pools.items()},
                "dataplane": self._dataplane_cache, "writer": dict(self.switch.writer.stats),
                "l2tp": self.l2tp.counters() if self.l2tp is not None else {}}

    async def _stats_loop(self) -> None:
        while True:
            await asyncio.sleep(5.0)
            if self.switch.connected.is_set():
                try:
                    self._dataplane_cache = await self.dataplane_counters()
                except Exception as e:
                    log.debug("reading data plane counters: %s", e)

    async def _arp_loop(self) -> None:
        while True:
            if self.ready.is_set() and self.switch.connected.is_set():
                self._forget_silent_neighbors(self.clock())
                for frame, port in self.arp.tick(self.clock()):
                    self.switch.packet_out(frame, port)
                if self.ipv6 is not None:
                    self.ipv6.tick(self.clock())
            await asyncio.sleep(0.5)

    async def _flush_loop(self) -> None:
        self.sessions.flushes_itself = True
        while True:
            await asyncio.sleep(0.2)
            try:
                self.sessions.flush()
            except Exception:       # the loop must outlive any one failure
                log.exception("session store flush")

    async def _gc_loop(self, full_every_s: float = 600.0) -> None:
        """Keep the sessions out of the cyclic GC's scans: CPython's full
        collections walk every live object, tens of thousands of sessions'
        worth, and stall the loop for longer as sessions grow. What is alive
        each second moves to the permanent generation (gc.freeze); freed
        sessions still go by reference counting, and a full collection over
        everything every `full_every_s` reclaims cycles that died frozen.
        Measured with make bench-setup at 20k sessions: 638 and 671
        sessions/s without, 772 and 789 with."""
        last_full = time.monotonic()
        while True:
            await asyncio.sleep(1.0)
            if time.monotonic() - last_full >= full_every_s:
                last_full = time.monotonic()
                gc.unfreeze()
                t0 = time.perf_counter()
                n = gc.collect()
                log.debug("full collection: %d unreachable, %.1f ms", n, (time.perf_counter() - t0) * 1e3)
            gc.freeze()

    async def _stall_watch(self, tick_s: float = 0.25, report_s: float = 0.5) -> None:
        """Every protocol timer of every session runs on this one loop: a
        step that holds it (a slow disk under the session store, a huge
        batch) delays them all at once, and peers see lost keepalives and
        retransmissions. Such stalls are counted and logged with their
        length, so a burst of session failures can be told from one."""
        while True:
            t0 = time.monotonic()
            await asyncio.sleep(tick_s)
            late = time.monotonic() - t0 - tick_s
            if late >= report_s:
                self.sessions.counters["controller event loop stalled"] += 1
                log.warning("event loop stalled for %.2f s", late)

    async def run(self, stop: asyncio.Event) -> None:
        loop_tasks = [self.sessions.timers.run(), self.sessions.accounting_loop(), self._arp_loop(),
                      self._flush_loop(), self._stats_loop(), self._gc_loop(), self._stall_watch()]
        self._tasks = [asyncio.create_task(c) for c in loop_tasks]
        if self.l2tp is not None:
            self.l2tp.start()
        self._switch_task = asyncio.create_task(self.switch.run(self.on_connected))
        await stop.wait()

    async def shutdown(self, terminate: bool) -> None:
        if terminate and self.switch.connected.is_set():
            log.info("terminating %d sessions", len(self.sessions.subs))
            await self.sessions.terminate_all("BNG shutdown", TerminateCause.ADMIN_REBOOT)
            if self.l2tp is not None:
                await self.l2tp.shutdown()
        self.sessions.flush()
        self.switch.stop()
        if self._switch_task is not None:
            try:
                await asyncio.wait_for(self._switch_task, 5)
            except (asyncio.TimeoutError, Exception):
                pass
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await asyncio.sleep(0)
        self.store.close()

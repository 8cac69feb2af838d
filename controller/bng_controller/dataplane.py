"""What the BNG P4 program (p4src/include/bng_ingress.p4, p4src/pna/bng.p4)
needs installed, as P4Runtime entities.

This module is the only place that spells the program's table, action,
counter and meter names; every name is resolved against the P4Info when
`BngTables` is built, so a renamed table fails at start-up with the names
that do exist, not at the first subscriber. Nothing here does I/O: callers
hand the entities to the EntryWriter.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Protocol

from p4.v1 import p4runtime_pb2 as p4r

from .aaa.base import SessionCounters
from .p4info_names import P4InfoNames
from .p4runtime_entries import EntryBuilder

_TABLES = ("line_map", "pppoe_up_v4", "pppoe_session", "ipv6_antispoof", "my_station",
           "local_ipv4", "local_ipv6", "ipv4_session", "ipv6_session", "l2tp_up_v4", "l2tp_session",
           "l2tp_tunnel", "fib_v4", "fib_v6", "nexthop", "packet_out_port")
_COUNTERS = ("session_up", "session_down", "drops", "punts")
_SESSION_METERS = ("session_meter_up", "session_meter_down")     # up, down
_METERS = (*_SESSION_METERS, "punt_meter")


def ipv4_max_len(mru: int) -> int:
    """to_pppoe / to_l2tp's max_len in ipv4_session: the largest IPv4 total
    length a session of this MRU takes (the PPP information field is the
    whole IP packet). Larger ones are punted as PACKET_TOO_BIG."""
    return mru


def ipv6_max_len(mru: int) -> int:
    """max_len in ipv6_session: the data plane compares it with the IPv6
    payload length, which leaves out the 40-byte header."""
    return max(mru - 40, 0)


@dataclass(frozen=True)
class PppoeTarget:
    """Where downstream frames of a PPPoE session go."""
    port: int
    client_mac: int
    bng_mac: int
    s_tpid: int
    s_vid: int
    c_vid: int
    session_id: int


@dataclass(frozen=True)
class NextHopL2:
    """A resolved next hop as nexthop's set_l2 writes it."""
    port: int
    smac: int
    dmac: int
    vid: int = 0


class SubscriberLine(Protocol):
    """A subscriber line as the PPPoE session tables key it: the port and
    VLAN ids themselves (so that session traffic needs no line_map lookup),
    and the line id the session's entry hands to its packet-ins."""
    port: int
    s_vid: int
    c_vid: int
    line_id: int


def prefix64(net: ipaddress.IPv6Network) -> list[int]:
    """The /64s of a prefix as the exact-match ipv6 tables key them (the
    upper 64 bits). Prefixes longer than /64 are not subscriber prefixes."""
    if net.prefixlen > 64:
        raise ValueError(f"{net} is longer than /64")
    hi = int(net.network_address) >> 64
    return [hi + i for i in range(1 << (64 - net.prefixlen))]


class BngTables:
    def __init__(self, names: P4InfoNames, policer_burst_ms: int = 100):
        self.names = names
        self.policer_burst_ms = policer_burst_ms
        self.b = EntryBuilder(names)
        for t in _TABLES:
            names.table(t)
        for c in _COUNTERS:
            names.counter(c)
        for m in _METERS:
            names.meter(m)
        self.session_table_ids = {names.table(t).preamble.id for t in
                                  ("pppoe_up_v4", "pppoe_session", "ipv4_session", "ipv6_session",
                                   "ipv6_antispoof", "l2tp_up_v4", "l2tp_session")}

    def table_id(self, name: str) -> int:
        return self.names.table(name).preamble.id

    # ---- ports and the BNG's own addresses ----
    def port(self, port: int, bng_mac: int | None) -> list[p4r.TableEntry]:
        """The port's packet_out entry, and with bng_mac its my_station
        entry: only ports that IP is routed in through (core, L2TP) get one,
        so plain IP that a subscriber sends to the BNG's MAC on an access
        port is dropped (NOT_FOR_US) instead of being routed around its
        session's anti-spoofing, counters and policer."""
        b = self.b
        out = [b.table_entry("packet_out_port", {"egress_port": port}, "send", {"port": port})]
        if bng_mac is not None:
            out.append(b.table_entry("my_station", {"port": port, "dst_mac": bng_mac}, "set_my_station"))
        return out

    def local_ipv4(self, addr: ipaddress.IPv4Address, *, lns: bool) -> p4r.TableEntry:
        """lns: LNS sessions terminate at addr. Elsewhere L2TP data skips
        the l2tp_up_v4 lookup (set_local_no_lns), which the LAC's downstream
        would always miss: on Tofino, where local_ipv4 is looked up first;
        the DPDK build looks up sessions before addresses and treats both
        actions alike."""
        return self.b.table_entry("local_ipv4", {"addr": int(addr)},
                                  "set_local" if lns else "set_local_no_lns")

    def local_route_v4(self, addr: ipaddress.IPv4Address) -> p4r.TableEntry:
        """The same address as a /32 in the FIB: the data plane finds
        subscribers' packets to the BNG there, not in local_ipv4."""
        return self.b.table_entry("fib_v4", {"dst_ipv4": (int(addr), 32)}, "set_local")

    def local_ipv6(self, addr: ipaddress.IPv6Address) -> p4r.TableEntry:
        v = int(addr)
        return self.b.table_entry("local_ipv6", {"addr_hi": v >> 64, "addr_lo": v & ((1 << 64) - 1)},
                                  "set_local")

    def nexthop(self, nexthop_id: int, l2: NextHopL2) -> p4r.TableEntry:
        return self.b.table_entry("nexthop", {"nexthop_id": nexthop_id}, "set_l2",
                                  {"port": l2.port, "smac": l2.smac, "dmac": l2.dmac, "vid": l2.vid})

    def route_v4(self, net: ipaddress.IPv4Network, nexthop_id: int,
                 resolved: NextHopL2 | None = None) -> p4r.TableEntry:
        """nexthop_id 0 blackholes the prefix (subscriber pools: an unused
        address must not bounce back to the default route). With the next
        hop resolved the route carries its L2 rewrite (set_nexthop_l2), so
        routed packets skip the nexthop lookup; the caller rewrites the route
        when the next hop changes."""
        key = {"dst_ipv4": (int(net.network_address), net.prefixlen)}
        if resolved is not None and nexthop_id != 0:
            return self.b.table_entry("fib_v4", key, "set_nexthop_l2",
                                      {"port": resolved.port, "smac": resolved.smac,
                                       "dmac": resolved.dmac, "vid": resolved.vid})
        return self.b.table_entry("fib_v4", key, "set_nexthop", {"nexthop_id": nexthop_id})

    def route_v6(self, net: ipaddress.IPv6Network, nexthop_id: int) -> p4r.TableEntry:
        hi = int(net.network_address) >> 64
        return self.b.table_entry("fib_v6", {"dst_prefix": (hi, min(net.prefixlen, 64))},
                                  "set_nexthop", {"nexthop_id": nexthop_id})

    # ---- lines ----
    def line(self, port: int, s_vid: int, c_vid: int, line_id: int) -> p4r.TableEntry:
        return self.b.table_entry("line_map", {"port": port, "s_vid": s_vid, "c_vid": c_vid},
                                  "set_line", {"line_id": line_id})

    # ---- PPPoE sessions ----
    @staticmethod
    def _pppoe_key(line: SubscriberLine, session_id: int, client_mac: int) -> dict[str, int]:
        """A PPPoE session as pppoe_session and pppoe_up_v4 key it."""
        return {"port": line.port, "s_vid": line.s_vid, "c_vid": line.c_vid, "session_id": session_id,
                "src_mac": client_mac}

    def pppoe_session(self, line: SubscriberLine, session_id: int, client_mac: int, sess_idx: int,
                      mss_clamp: int) -> p4r.TableEntry:
        """The session itself: upstream PPP control and IPv6 are accepted
        from (line, session id, MAC)."""
        return self.b.table_entry("pppoe_session", self._pppoe_key(line, session_id, client_mac),
                                  "pppoe_term", {"sess_idx": sess_idx, "mss_clamp": mss_clamp,
                                                 "line_id": line.line_id})

    def pppoe_ipv4(self, line: SubscriberLine, session_id: int, client_mac: int, addr: ipaddress.IPv4Address,
                   sess_idx: int, mss_clamp: int, mru: int, down: PppoeTarget) -> list[p4r.TableEntry]:
        """Upstream fast path with the anti-spoof check, and the /32 down."""
        b = self.b
        return [b.table_entry("pppoe_up_v4", {**self._pppoe_key(line, session_id, client_mac),
                                              "src_ipv4": int(addr)},
                              "pppoe_term", {"sess_idx": sess_idx, "mss_clamp": mss_clamp,
                                             "line_id": line.line_id}),
                b.table_entry("ipv4_session", {"dst_ipv4": int(addr)}, "to_pppoe",
                              {**self._to_pppoe(sess_idx, down, mss_clamp), "max_len": ipv4_max_len(mru)})]

    def pppoe_ipv6(self, prefix: ipaddress.IPv6Network, sess_idx: int, mss_clamp: int, mru: int,
                   down: PppoeTarget) -> list[p4r.TableEntry]:
        b = self.b
        out = []
        for hi in prefix64(prefix):
            out.append(b.table_entry("ipv6_session", {"dst_prefix": hi}, "to_pppoe",
                                     {**self._to_pppoe(sess_idx, down, mss_clamp),
                                      "max_len": ipv6_max_len(mru)}))
            out.append(b.table_entry("ipv6_antispoof", {"sess_idx": sess_idx, "src_prefix": hi}, "permit"))
        return out

    @staticmethod
    def _to_pppoe(sess_idx: int, d: PppoeTarget, mss_clamp: int) -> dict[str, int]:
        return {"sess_idx": sess_idx, "port": d.port, "client_mac": d.client_mac, "bng_mac": d.bng_mac,
                "s_tpid": d.s_tpid, "s_vid": d.s_vid, "c_vid": d.c_vid, "pppoe_session_id": d.session_id,
                "mss_clamp": mss_clamp}

    # ---- L2TP (LAC and LNS) ----
    @staticmethod
    def _l2tp_key(local_ip: ipaddress.IPv4Address, peer_ip: ipaddress.IPv4Address, local_tunnel_id: int,
                  local_session_id: int) -> dict[str, int]:
        """An L2TP session as l2tp_session and l2tp_up_v4 key it."""
        return {"local_ip": int(local_ip), "peer_ip": int(peer_ip), "tunnel_id": local_tunnel_id,
                "session_id": local_session_id}

    def l2tp_tunnel(self, tunnel_idx: int, local_ip: ipaddress.IPv4Address, peer_ip: ipaddress.IPv4Address,
                    peer_tunnel_id: int, peer_port: int, nexthop_id: int,
                    resolved: NextHopL2 | None = None) -> p4r.TableEntry:
        """With the next hop resolved the tunnel carries its L2 rewrite
        (set_tunnel_l2), as a route does (route_v4)."""
        outer = {"local_ip": int(local_ip), "peer_ip": int(peer_ip), "peer_tunnel_id": peer_tunnel_id,
                 "peer_port": peer_port}
        if resolved is not None and nexthop_id != 0:
            return self.b.table_entry("l2tp_tunnel", {"tunnel_idx": tunnel_idx}, "set_tunnel_l2",
                                      {**outer, "port": resolved.port, "smac": resolved.smac,
                                       "dmac": resolved.dmac, "vid": resolved.vid})
        return self.b.table_entry("l2tp_tunnel", {"tunnel_idx": tunnel_idx}, "set_tunnel",
                                  {**outer, "nexthop_id": nexthop_id})

    def lac_session(self, line: SubscriberLine, session_id: int, client_mac: int, sess_idx: int,
                    tunnel_idx: int, peer_session_id: int, local_ip: ipaddress.IPv4Address,
                    peer_ip: ipaddress.IPv4Address, local_tunnel_id: int, local_session_id: int,
                    down: PppoeTarget) -> list[p4r.TableEntry]:
        """A PPPoE session switched into an L2TP session: PPPoE -> L2TP up,
        L2TP -> PPPoE down."""
        b = self.b
        return [b.table_entry("pppoe_session", self._pppoe_key(line, session_id, client_mac),
                              "pppoe_lac", {"sess_idx": sess_idx, "tunnel_idx": tunnel_idx,
                                            "peer_session_id": peer_session_id, "line_id": line.line_id}),
                b.table_entry("l2tp_session", self._l2tp_key(local_ip, peer_ip, local_tunnel_id,
                                                              local_session_id),
                              "lac_to_pppoe", {k: v for k, v in self._to_pppoe(sess_idx, down, 0).items()
                                               if k != "mss_clamp"})]

    def lns_session(self, local_ip: ipaddress.IPv4Address, peer_ip: ipaddress.IPv4Address,
                    local_tunnel_id: int, local_session_id: int, sess_idx: int,
                    mss_clamp: int) -> p4r.TableEntry:
        key = self._l2tp_key(local_ip, peer_ip, local_tunnel_id, local_session_id)
        return self.b.table_entry("l2tp_session", key, "lns_term", {"sess_idx": sess_idx, "mss_clamp": mss_clamp})

    def lns_ipv4(self, local_ip: ipaddress.IPv4Address, peer_ip: ipaddress.IPv4Address,
                 local_tunnel_id: int, local_session_id: int, addr: ipaddress.IPv4Address, sess_idx: int,
                 tunnel_idx: int, peer_session_id: int, mss_clamp: int, mru: int) -> list[p4r.TableEntry]:
        """Upstream fast path with the anti-spoof check (the session's key
        and its address in one lookup), and the /32 down."""
        b = self.b
        key = self._l2tp_key(local_ip, peer_ip, local_tunnel_id, local_session_id)
        return [b.table_entry("l2tp_up_v4", {**key, "src_ipv4": int(addr)}, "lns_term",
                              {"sess_idx": sess_idx, "mss_clamp": mss_clamp}),
                b.table_entry("ipv4_session", {"dst_ipv4": int(addr)}, "to_l2tp",
                              {"sess_idx": sess_idx, "tunnel_idx": tunnel_idx,
                               "peer_session_id": peer_session_id, "mss_clamp": mss_clamp,
                               "max_len": ipv4_max_len(mru)})]

    def lns_ipv6(self, prefix: ipaddress.IPv6Network, sess_idx: int, tunnel_idx: int, peer_session_id: int,
                 mss_clamp: int, mru: int) -> list[p4r.TableEntry]:
        b = self.b
        out = []
        for hi in prefix64(prefix):
            out.append(b.table_entry("ipv6_session", {"dst_prefix": hi}, "to_l2tp",
                                     {"sess_idx": sess_idx, "tunnel_idx": tunnel_idx,
                                      "peer_session_id": peer_session_id, "mss_clamp": mss_clamp,
                                      "max_len": ipv6_max_len(mru)}))
            out.append(b.table_entry("ipv6_antispoof", {"sess_idx": sess_idx, "src_prefix": hi}, "permit"))
        return out

    # ---- per-session counters and policers ----
    def session_counters_zero(self, sess_idx: int) -> list[p4r.CounterEntry]:
        out = []
        for name in ("session_up", "session_down"):
            ce = self.b.counter_entry(name, sess_idx)
            ce.data.packet_count = 0
            ce.data.byte_count = 0
            out.append(ce)
        return out

    def session_meters(self, sess_idx: int, up_kbps: int | None, down_kbps: int | None) -> list[p4r.MeterEntry]:
        """Byte meters (PPP payload) per direction; None: unlimited. The
        burst is `policer_burst_ms` at the rate (config
        sessions.policer_burst_ms: a long round trip needs more for one
        TCP flow to reach the rate), and never under two full frames."""
        out = []
        for name, kbps in zip(_SESSION_METERS, (up_kbps, down_kbps)):
            if kbps:
                rate = kbps * 1000 // 8
                burst = max(rate * self.policer_burst_ms // 1000, 3000)
                out.append(self.b.meter_entry(name, sess_idx, cir=rate, cburst=burst))
            else:
                out.append(self.b.meter_entry(name, sess_idx))
        return out

    def counter_read(self, name: str, index: int | None = None) -> p4r.Entity:
        return p4r.Entity(counter_entry=self.b.counter_entry(name, index))

    def session_counter_reads(self, sess_idx: int) -> list[p4r.Entity]:
        return [self.counter_read("session_up", sess_idx), self.counter_read("session_down", sess_idx)]

    def session_counters(self, entities: list[p4r.Entity]) -> dict[int, SessionCounters]:
        """SessionCounters by session index from counter reads."""
        up_id = self.names.counter("session_up").preamble.id
        out: dict[int, SessionCounters] = {}
        for e in entities:
            ce = e.counter_entry
            c = out.setdefault(ce.index.index, SessionCounters())
            if ce.counter_id == up_id:
                c.packets_in, c.octets_in = ce.data.packet_count, ce.data.byte_count
            else:
                c.packets_out, c.octets_out = ce.data.packet_count, ce.data.byte_count
        return out

    def session_policer_reads(self, sess_idx: int) -> list[p4r.Entity]:
        return [p4r.Entity(meter_entry=self.b.meter_entry(name, sess_idx))
                for name in _SESSION_METERS]

    def session_policers(self, entities: list[p4r.Entity]) -> dict[str, dict[str, dict[str, int]]]:
        """What a session's policers let through (green, yellow) and dropped
        (red), in packets and PPP payload bytes, by direction, from the
        meter reads of session_policer_reads (counted since the policer was
        last configured)."""
        up_id = self.names.meter(_SESSION_METERS[0]).preamble.id
        out: dict[str, dict[str, dict[str, int]]] = {}
        for e in entities:
            me = e.meter_entry
            out["up" if me.meter_id == up_id else "down"] = {
                colour: {"packets": c.packet_count, "bytes": c.byte_count}
                for colour, c in (("green", me.counter_data.green), ("yellow", me.counter_data.yellow),
                                  ("red", me.counter_data.red))}
        return out

    def table_read(self, name: str | None = None) -> p4r.Entity:
        return p4r.Entity(table_entry=p4r.TableEntry(table_id=self.table_id(name) if name else 0))

"""A subscriber session: one PPP link, its AAA answer, its addresses, and
the data-plane entries that forward its traffic.

The PPP link rides on a transport: a PPPoE session (this BNG terminates
PPPoE) or an L2TP session (this BNG is the LNS). The transport knows how to
send a PPP frame, which data-plane entries carry the session, and how to
tear the lower layer down; everything else (AAA, addresses, accounting,
timeouts) is the same for both and lives in the session manager.
"""
from __future__ import annotations

import enum
import ipaddress
from dataclasses import dataclass, field
from typing import Callable, Protocol

from p4.v1 import p4runtime_pb2 as p4r

from .aaa.base import AuthResult, LineInfo, SessionCounters, TerminateCause
from .dataplane import BngTables, PppoeTarget
from .lines import Line
from .ppp.link import PppLink
from .pppoe import codec as pppoe
from .pppoe.discovery import PppoeDiscovery


class State(enum.Enum):
    NEGOTIATING = "negotiating"        # LCP
    AUTHENTICATING = "authenticating"  # waiting for the peer or AAA
    NETWORK = "network"                # authenticated, NCPs negotiating
    UP = "up"                          # an NCP is open and the data plane forwards
    TERMINATING = "terminating"
    DOWN = "down"


class Transport(Protocol):
    kind: str
    persistent: bool              # survives a controller restart (session store)
    calling_station: str          # the subscriber as RADIUS names it (Calling-Station-Id)

    def send_ppp(self, protocol: int, info: bytes) -> None: ...

    def session_entries(self, tables: BngTables, sess_idx: int, mss: int) -> list[p4r.TableEntry]: ...

    def ipv4_entries(self, tables: BngTables, sess_idx: int, addr: ipaddress.IPv4Address,
                     mss: int, mru: int) -> list[p4r.TableEntry]: ...

    def ipv6_entries(self, tables: BngTables, sess_idx: int, prefix: ipaddress.IPv6Network,
                     mss: int, mru: int) -> list[p4r.TableEntry]: ...

    def lower_down(self, reason: str) -> None: ...

    def describe(self) -> dict: ...

    def snapshot(self) -> dict: ...


PacketOut = Callable[[bytes, int], None]


class PppoeTransport:
    """PPP over a PPPoE session on an access line."""

    kind = "pppoe"
    persistent = True

    def __init__(self, line: Line, client_mac: bytes, session_id: int, bng_mac: bytes,
                 host_uniq: bytes | None, max_payload: int, packet_out: PacketOut):
        self.line = line
        self.client_mac = client_mac
        self.session_id = session_id
        self.bng_mac = bng_mac
        self.host_uniq = host_uniq
        self.max_payload = max_payload
        self.l2 = pppoe.L2Header(dst=client_mac, src=bng_mac, s_vid=line.s_vid, c_vid=line.c_vid,
                                 s_tpid=line.s_tpid)
        self._packet_out = packet_out
        self.padt_received = False

    @property
    def key(self) -> tuple[int, int]:
        return (self.line.line_id, self.session_id)

    @property
    def calling_station(self) -> str:
        return pppoe.mac_str(self.client_mac)

    def send_ppp(self, protocol: int, info: bytes) -> None:
        self._packet_out(pppoe.session_frame(self.l2, self.session_id, protocol, info), self.line.port)

    def target(self) -> PppoeTarget:
        return PppoeTarget(port=self.line.port, client_mac=int.from_bytes(self.client_mac, "big"),
                           bng_mac=int.from_bytes(self.bng_mac, "big"), s_tpid=self.line.s_tpid,
                           s_vid=self.line.s_vid, c_vid=self.line.c_vid, session_id=self.session_id)

    def session_entries(self, tables: BngTables, sess_idx: int, mss: int) -> list[p4r.TableEntry]:
        return [tables.pppoe_session(self.line, self.session_id,
                                     int.from_bytes(self.client_mac, "big"), sess_idx, mss)]

    def ipv4_entries(self, tables: BngTables, sess_idx: int, addr: ipaddress.IPv4Address,
                     mss: int, mru: int) -> list[p4r.TableEntry]:
        return tables.pppoe_ipv4(self.line, self.session_id, int.from_bytes(self.client_mac, "big"),
                                 addr, sess_idx, mss, mru, self.target())

    def ipv6_entries(self, tables: BngTables, sess_idx: int, prefix: ipaddress.IPv6Network,
                     mss: int, mru: int) -> list[p4r.TableEntry]:
        return tables.pppoe_ipv6(prefix, sess_idx, mss, mru, self.target())

    def lower_down(self, reason: str) -> None:
        """PADT, unless the client sent one (then it is gone already)."""
        if not self.padt_received:
            padt = PppoeDiscovery.padt(self.session_id, reason, self.host_uniq)
            self._packet_out(pppoe.discovery_frame(self.l2, padt), self.line.port)

    def describe(self) -> dict:
        return {"type": "pppoe", "port": self.line.port, "s_vid": self.line.s_vid, "c_vid": self.line.c_vid,
                "line_id": self.line.line_id, "pppoe_session_id": self.session_id,
                "client_mac": pppoe.mac_str(self.client_mac)}

    def snapshot(self) -> dict:
        return {"type": "pppoe", "line_id": self.line.line_id, "port": self.line.port,
                "s_vid": self.line.s_vid, "c_vid": self.line.c_vid, "s_tpid": self.line.s_tpid,
                "client_mac": self.client_mac.hex(), "session_id": self.session_id,
                "host_uniq": self.host_uniq.hex() if self.host_uniq is not None else None,
                "max_payload": self.max_payload}


@dataclass(eq=False)
class Subscriber:
    sid: int                          # the controller's session number (bngctl, logs)
    transport: Transport
    link: PppLink
    line_info: LineInfo
    sess_idx: int                     # counters and meters index in the data plane
    acct_session_id: str
    created: float                    # monotonic
    state: State = State.NEGOTIATING
    username: str = ""
    auth: AuthResult | None = None
    ipv4: ipaddress.IPv4Address | None = None
    pool: str | None = None           # the pool ipv4 came from (None: static)
    ipv6_prefix: ipaddress.IPv6Network | None = None
    delegated_prefix: ipaddress.IPv6Network | None = None
    installed: dict[str, list[p4r.TableEntry]] = field(default_factory=dict)
    up_since: float | None = None     # monotonic
    up_since_wall: float | None = None
    acct_started: bool = False
    reported: SessionCounters | None = None   # the totals its last accounting record carried
    # what the switch had counted before it last lost its counters (a new
    # pipeline, a restarted switch), and what the controller sent into the
    # session itself (fragments of downstream packets over its MRU): added
    # to what the switch counts, so that the totals accounting reports
    # never go down and miss nothing the subscriber got
    counter_base: SessionCounters | None = None
    next_interim: float | None = None
    session_deadline: float | None = None
    idle_octets: int = -1
    idle_since: float = 0.0
    cause: TerminateCause | None = None
    scheduled: float | None = None    # TimerHeap
    busy: bool = False                # a data-plane write for it is in flight
    rate_up_kbps: int | None = None
    rate_down_kbps: int | None = None
    lac: object | None = None         # l2tp.service.LacCall once switched into a tunnel

    def next_deadline(self) -> float | None:
        d = self.link.next_deadline()
        if self.session_deadline is not None and (d is None or self.session_deadline < d):
            return self.session_deadline
        return d

    def count_sent_by_controller(self, packets: int, octets: int) -> None:
        """Downstream IP the controller sent into the session, which the
        switch's counters never see."""
        b = self.counter_base or SessionCounters()
        self.counter_base = SessionCounters(b.packets_in, b.octets_in, b.packets_out + packets,
                                            b.octets_out + octets)

    @property
    def mss_clamp(self) -> int:
        """TCP MSS for SYNs through this session: what fits the smaller MRU."""
        n = self.link.lcp_neg
        return max(0, min(n.our_mru, n.peer_mru) - 40)

    @property
    def live(self) -> bool:
        return self.state not in (State.TERMINATING, State.DOWN)

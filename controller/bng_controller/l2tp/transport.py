"""PPP carried in an L2TP session: the transport of an LNS subscriber.

Frames go out through the endpoint (an L2TP data message to the LAC);
the data plane forwards the session's IP both ways once its entries are
in: `l2tp_session` (decapsulate upstream; `l2tp_up_v4` for the session's
IPv4 address, with the anti-spoof check) and `ipv4_session`/`ipv6_session`
with `to_l2tp` (encapsulate downstream toward the LAC).
"""
from __future__ import annotations

import ipaddress
from typing import Callable

from p4.v1 import p4runtime_pb2 as p4r

from ..dataplane import BngTables
from .codec import CDN_ADMIN, ResultCode
from .tunnel import Session


class L2tpTransport:
    kind = "l2tp"
    persistent = False               # tunnels (Ns/Nr) do not survive a controller restart

    def __init__(self, session: Session, tunnel_idx: int, local_ip: ipaddress.IPv4Address,
                 peer_ip: ipaddress.IPv4Address, send_ppp: Callable[[Session, int, bytes], None],
                 close: Callable[[Session, ResultCode, str], None]):
        self.session = session
        self.tunnel_idx = tunnel_idx
        self.local_ip = local_ip
        self.peer_ip = peer_ip
        self._send_ppp = send_ppp
        self._close = close

    @property
    def session_id(self) -> int:
        return self.session.local_id

    @property
    def calling_station(self) -> str:
        return self.session.call.calling_number or ""

    def send_ppp(self, protocol: int, info: bytes) -> None:
        self._send_ppp(self.session, protocol, info)

    def session_entries(self, tables: BngTables, sess_idx: int, mss: int) -> list[p4r.TableEntry]:
        t = self.session.tunnel
        return [tables.lns_session(self.local_ip, self.peer_ip, t.local_id, self.session.local_id, sess_idx, mss)]

    def ipv4_entries(self, tables: BngTables, sess_idx: int, addr: ipaddress.IPv4Address,
                     mss: int, mru: int) -> list[p4r.TableEntry]:
        t = self.session.tunnel
        return tables.lns_ipv4(self.local_ip, self.peer_ip, t.local_id, self.session.local_id, addr, sess_idx,
                               self.tunnel_idx, self.session.peer_id, mss, mru)

    def ipv6_entries(self, tables: BngTables, sess_idx: int, prefix: ipaddress.IPv6Network,
                     mss: int, mru: int) -> list[p4r.TableEntry]:
        return tables.lns_ipv6(prefix, sess_idx, self.tunnel_idx, self.session.peer_id, mss, mru)

    def lower_down(self, reason: str) -> None:
        """CDN to the LAC, unless the session is already gone."""
        if self.session.established:
            self._close(self.session, ResultCode(CDN_ADMIN, None, reason[:60]), reason)

    def describe(self) -> dict:
        t = self.session.tunnel
        return {"type": "l2tp", "peer": str(self.peer_ip), "tunnel_id": t.local_id, "peer_tunnel_id": t.peer_id,
                "l2tp_session_id": self.session.local_id, "peer_session_id": self.session.peer_id,
                "calling_number": self.calling_station}

    def snapshot(self) -> dict:
        return {"type": "l2tp", **self.describe()}

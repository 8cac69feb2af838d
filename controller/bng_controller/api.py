"""The controller's local API: one JSON request per line on a unix socket,
one JSON answer per line. bngctl is its client; anything else (an
operator's script, a monitoring agent) can speak it too:

    echo '{"cmd": "sessions"}' | socat - UNIX-CONNECT:/run/bng-controller/api.sock

Commands: status, sessions (filters: user, ip, mac, state), session (id),
counters, pools, clear (id | user | ip | all), shutdown (keep_sessions),
l2tp_tunnels, l2tp_sessions, clear_tunnel (id). Errors come back as
{"error": "..."}; the connection stays usable.
"""
from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from .aaa.base import TerminateCause
from .ppp.fsm import State as FsmState

if TYPE_CHECKING:
    from .controller import BngController
    from .subscriber import Subscriber

log = logging.getLogger("bng.api")
# sessions handled between two yields to the event loop in a request over
# all of them (setups, keepalives and punts wait meanwhile)
_YIELD_EVERY = 500


class ApiError(Exception):
    pass


def session_summary(s: "Subscriber", now: float) -> dict:
    d = {"id": s.sid, "state": s.state.value, "user": s.username, "ipv4": str(s.ipv4) if s.ipv4 else None,
         "ipv6_prefix": str(s.ipv6_prefix) if s.ipv6_prefix else None,
         "delegated_prefix": str(s.delegated_prefix) if s.delegated_prefix else None,
         "uptime": round(now - s.up_since, 1) if s.up_since else None,
         "acct_session_id": s.acct_session_id}
    d.update(s.transport.describe())
    return d


def _link_events(link) -> dict:
    """The link's event counts, with what its negotiation automata count
    (invalid replies discarded, a peer's Naks taken as Rejects)."""
    d = dict(link.counters)
    for name, fsm in (("lcp", link.lcp), ("ipcp", link.ipcp), ("ipv6cp", link.ipv6cp)):
        if fsm is not None:
            if fsm.silent_discards:
                d[f"{name} discarded"] = fsm.silent_discards
            if fsm.naks_as_rejects:
                d[f"{name} naks taken as rejects"] = fsm.naks_as_rejects
    return d


def session_detail(s: "Subscriber", now: float) -> dict:
    d = session_summary(s, now)
    link = s.link
    n = link.lcp_neg
    d["ppp"] = {
        "phase": link.phase.value,
        "lcp": FsmState(link.lcp.state).name, "auth": link.auth_method.value if link.auth_method else None,
        "ipcp": FsmState(link.ipcp.state).name if link.ipcp else None,
        "ipv6cp": FsmState(link.ipv6cp.state).name if link.ipv6cp else None,
        "our_magic": f"0x{n.our_magic:08x}", "peer_magic": f"0x{n.peer_magic:08x}",
        "our_mru": n.our_mru, "peer_mru": n.peer_mru, "mss_clamp": s.mss_clamp,
        "echo_outstanding": link.echo_outstanding, "events": _link_events(link),
    }
    a = s.auth
    d["aaa"] = None if a is None else {
        "session_timeout": a.session_timeout, "idle_timeout": a.idle_timeout,
        "interim_interval": a.interim_interval, "class": [c.hex() for c in a.classes] or None,
        "dns": [str(x) for x in (link.ipv4.dns if link.ipv4 else [])],
    }
    d["rate_up_kbps"], d["rate_down_kbps"] = s.rate_up_kbps, s.rate_down_kbps
    d["sess_idx"] = s.sess_idx
    d["line"] = {"port": s.line_info.port, "s_vid": s.line_info.s_vid, "c_vid": s.line_info.c_vid,
                 "nas_port_id": s.line_info.nas_port_id, "remote_id": s.line_info.remote_id}
    d["entries"] = {k: len(v) for k, v in s.installed.items()}
    return d


class ApiServer:
    def __init__(self, ctl: "BngController", path: str, stop: asyncio.Event):
        self.ctl = ctl
        self.path = Path(path)
        self.stop_event = stop
        self.keep_sessions = False
        self._server: asyncio.AbstractServer | None = None
        self._clients: set[asyncio.StreamWriter] = set()

    async def start(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.exists():
            try:        # a live controller's socket is not ours to take over
                _, w = await asyncio.open_unix_connection(str(self.path))
            except OSError:
                self.path.unlink()      # left by one that is gone
            else:
                w.close()
                raise RuntimeError(f"another controller answers on {self.path}")
        self._server = await asyncio.start_unix_server(self._client, path=str(self.path))
        os.chmod(self.path, 0o660)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            # Python 3.12 waits for every connection: an idle monitoring
            # client must not hold up the shutdown (Accounting-Off follows)
            for w in list(self._clients):
                w.close()
            try:
                await asyncio.wait_for(self._server.wait_closed(), 2.0)
            except TimeoutError:
                log.warning("api: clients still connected at shutdown")
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._clients.add(writer)
        try:
            while True:
                try:
                    line = await reader.readline()
                except ValueError:          # over the reader's limit (64 KiB): no request is that long
                    writer.write(json.dumps({"error": "request too long"}).encode() + b"\n")
                    await writer.drain()
                    break
                if not line:
                    break
                try:
                    req = json.loads(line)
                    if not isinstance(req, dict) or "cmd" not in req:
                        raise ApiError('a request is a JSON object with "cmd"')
                    resp = await self.handle(req)
                except (ApiError, ValueError, KeyError, TypeError) as e:
                    resp = {"error": str(e)}
                except Exception as e:
                    log.exception("api request %s", line[:200])
                    resp = {"error": f"internal error: {e}"}
                writer.write(json.dumps(resp, default=str).encode() + b"\n")
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._clients.discard(writer)
            writer.close()

    # ------------------------------------------------------------------
    def _select(self, req: dict) -> list["Subscriber"]:
        """The sessions a request names: "all": true alone, or an id alone,
        or any of user, ip, mac with a value each. A selector that is
        present but empty, null or of the wrong type is an error, never
        "no filter": `{"cmd": "clear", "ip": ""}` from a script whose
        variable was empty would otherwise clear every session."""
        s = self.ctl.sessions
        given = {k: req[k] for k in ("all", "id", "user", "ip", "mac") if k in req}
        if "all" in given:
            if given["all"] is not True or len(given) > 1:
                raise ApiError('"all" must be true and alone')
            return list(s.subs.values())
        if "id" in given:
            if len(given) > 1 or isinstance(given["id"], bool) or not isinstance(given["id"], (int, str)):
                raise ApiError('"id" is one session id, alone')
            try:
                return s.find(sid=int(given["id"]))
            except ValueError:
                raise ApiError(f"not a session id: {given['id']!r}") from None
        if not given:
            raise ApiError("name the sessions: id, user, ip, mac or all")
        for k, v in given.items():
            if not isinstance(v, str) or not v:
                raise ApiError(f'"{k}" must be a non-empty string')
        try:
            ipv4 = ipaddress.IPv4Address(given["ip"]) if "ip" in given else None
        except ValueError:
            raise ApiError(f"not an IPv4 address: {given['ip']!r}") from None
        return s.find(username=given.get("user"), ipv4=ipv4, mac=given.get("mac"))

    async def handle(self, req: dict) -> dict:
        cmd = req["cmd"]
        ctl = self.ctl
        s = ctl.sessions
        now = s.clock()
        if cmd == "status":
            return {"name": ctl.cfg.name, "uptime": round(time.time() - ctl.started, 1),
                    "switch": ctl.cfg.switch.address, "switch_connected": ctl.switch.connected.is_set(),
                    "ready": ctl.ready.is_set(),
                    "sessions": s.sessions_by_state, "setups_total": s.setups_total,
                    "setup_time_ms": _percentiles(s.setup_times), "next_hops": ctl.next_hop_status()}
        if cmd == "sessions":
            subs = list(s.subs.values())
            if any(k in req for k in ("user", "ip", "mac")):
                subs = self._select(req)
            if req.get("state"):
                subs = [x for x in subs if x.state.value == req["state"]]
            total = len(subs)
            offset, limit = req.get("offset", 0), req.get("limit")
            if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0 or (
                    limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0)):
                raise ApiError('"offset" and "limit" are whole numbers, 0 or more')
            subs = subs[offset:] if limit is None else subs[offset:offset + limit]
            out = []
            for i, x in enumerate(subs):
                out.append(session_summary(x, now))
                if i % _YIELD_EVERY == _YIELD_EVERY - 1:
                    await asyncio.sleep(0)      # 40k sessions: let the loop breathe
            return {"sessions": out, "total": total}
        if cmd == "session":
            found = s.find(sid=int(req["id"]))
            if not found:
                raise ApiError(f"no session {req['id']}")
            sub = found[0]
            d = session_detail(sub, now)
            if sub.state.value == "up":
                c = (await s.read_counters([sub])).get(sub.sess_idx)
                if c is not None:
                    d["counters"] = vars(c)
                d["policer"] = await s.read_policers(sub)
            return d
        if cmd == "counters":
            return await ctl.counters()
        if cmd == "pools":
            out = {name: {"size": p.size, "used": len(p.used), "free": p.free,
                          "prefixes": [str(n) for n in p.cfg.prefixes], "gateway": str(p.cfg.gateway)}
                   for name, p in ctl.pools.pools.items()}
            for name, p6 in (("ipv6_wan", s.v6_wan), ("ipv6_pd", s.v6_pd)):
                if p6 is not None:
                    out[name] = {"prefix": str(p6.net), "length": p6.length, "size": p6.size,
                                 "used": p6.in_use}
            return {"pools": out}
        if cmd == "clear":
            subs = self._select(req)
            if not subs:
                raise ApiError("no session matches")
            for i, sub in enumerate(subs):
                s.close(sub, "cleared by operator", TerminateCause.ADMIN_RESET)
                if i % _YIELD_EVERY == _YIELD_EVERY - 1:
                    await asyncio.sleep(0)
            return {"cleared": [x.sid for x in subs]}
        if cmd == "shutdown":
            self.keep_sessions = bool(req.get("keep_sessions"))
            self.stop_event.set()
            return {"stopping": True, "keep_sessions": self.keep_sessions}
        if cmd in ("l2tp_tunnels", "l2tp_sessions", "clear_tunnel", "clear_l2tp_session"):
            if ctl.l2tp is None:
                raise ApiError("L2TP is not configured on this BNG")
            return await ctl.l2tp.api(cmd, req)
        raise ApiError(f"unknown command {cmd!r}")


def _percentiles(samples) -> dict:
    xs = sorted(samples)
    if not xs:
        return {}
    pick = lambda q: round(xs[min(len(xs) - 1, int(q * len(xs)))] * 1000, 1)  # noqa: E731
    return {"p50": pick(0.5), "p95": pick(0.95), "max": round(xs[-1] * 1000, 1), "samples": len(xs)}


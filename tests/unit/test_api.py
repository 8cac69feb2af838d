"""The control API (api.py) on its Unix socket, over a stand-in controller
whose session manager is the real one's `find`: what names sessions, and
what a client can do to the server."""
from __future__ import annotations

import asyncio
import ipaddress
import json
from types import SimpleNamespace

import pytest

from bng_controller.api import ApiServer
from bng_controller.session_manager import SessionManager


class Sessions:
    """The part of SessionManager the API's selection uses: its real `find`
    over a few stand-in sessions; `close` records."""
    find = SessionManager.find

    def __init__(self, n: int):
        self.subs = {i: SimpleNamespace(sid=i, username=f"u{i}", ipv4=ipaddress.IPv4Address(f"100.64.0.{i}"),
                                        transport=SimpleNamespace(calling_station=f"02:00:00:00:00:0{i}"))
                     for i in range(1, n + 1)}
        self.by_ipv4 = {s.ipv4: s for s in self.subs.values()}
        self.by_acct: dict = {}
        self.closed: list[int] = []
        self.clock = lambda: 0.0

    def close(self, sub, reason, cause) -> None:
        self.closed.append(sub.sid)


async def server(tmp_path, n: int = 5) -> tuple[ApiServer, Sessions]:
    sessions = Sessions(n)
    api = ApiServer(SimpleNamespace(sessions=sessions), str(tmp_path / "api.sock"), asyncio.Event())
    await api.start()
    return api, sessions


async def ask(path, *requests: bytes) -> list[dict]:
    reader, writer = await asyncio.open_unix_connection(str(path))
    out = []
    for r in requests:
        writer.write(r + b"\n")
        await writer.drain()
        line = await reader.readline()
        out.append(json.loads(line) if line else None)
    writer.close()
    return out


@pytest.mark.parametrize("request_", [
    {"ip": ""}, {"user": None}, {"mac": None}, {"user": 5}, {"all": "false"}, {"all": 1},
    {"all": True, "user": "u1"}, {"id": 1, "user": "u1"}, {"id": None}, {"id": "x"}, {"ip": "300.1.1.1"}, {},
])
def test_a_selector_that_names_nothing_clears_nothing(tmp_path, request_):
    """An empty, null or wrongly typed selector was "no filter": a script's
    `{"cmd": "clear", "ip": "$IP"}` with an empty variable cleared every
    session on the BNG."""
    async def run():
        api, sessions = await server(tmp_path)
        try:
            [resp] = await ask(api.path, json.dumps({"cmd": "clear", **request_}).encode())
            assert "error" in resp and sessions.closed == []
        finally:
            await api.stop()
    asyncio.run(run())


def test_clear_names_what_it_cleared_and_refuses_a_miss(tmp_path):
    async def run():
        api, sessions = await server(tmp_path)
        try:
            one, miss, everyone = await ask(api.path, b'{"cmd": "clear", "ip": "100.64.0.2"}',
                                            b'{"cmd": "clear", "user": "nobody"}', b'{"cmd": "clear", "all": true}')
            assert one == {"cleared": [2]}
            assert miss == {"error": "no session matches"}
            assert everyone == {"cleared": [1, 2, 3, 4, 5]}
        finally:
            await api.stop()
    asyncio.run(run())


def test_an_oversized_request_gets_an_error_and_an_idle_client_does_not_hold_up_shutdown(tmp_path):
    async def run():
        api, sessions = await server(tmp_path)
        [resp] = await ask(api.path, b'{"cmd": "x", "pad": "' + b"a" * 70000 + b'"}')
        assert resp == {"error": "request too long"}
        reader, writer = await asyncio.open_unix_connection(str(api.path))    # connected, silent
        await asyncio.sleep(0.01)
        await asyncio.wait_for(api.stop(), 5.0)
        assert await reader.read() == b""                                   # closed by the server
        writer.close()
    asyncio.run(run())


def test_a_second_controller_does_not_take_over_a_live_socket(tmp_path):
    async def run():
        api, sessions = await server(tmp_path)
        try:
            second = ApiServer(SimpleNamespace(sessions=sessions), str(api.path), asyncio.Event())
            with pytest.raises(RuntimeError, match="another controller"):
                await second.start()
            [resp] = await ask(api.path, b'{"cmd": "clear", "id": 1}')      # the first still answers
            assert resp == {"cleared": [1]}
        finally:
            await api.stop()
        (tmp_path / "api.sock").touch()                                     # left by a dead one
        third = ApiServer(SimpleNamespace(sessions=sessions), str(api.path), asyncio.Event())
        await third.start()
        await third.stop()
    asyncio.run(run())


def test_bngctl_is_quiet_when_its_reader_goes_away(tmp_path):
    import subprocess
    import sys
    script = ("import sys; from bng_controller import bngctl\n"
              "def main(argv=None):\n"
              "    for i in range(100000): print('session', i)\n"
              "    return 0\n"
              "bngctl.main = main\n"
              "sys.exit(bngctl.run())\n")
    p = subprocess.run(f"{sys.executable} -c \"{script}\" | head -1", shell=True, capture_output=True, text=True)
    assert p.stdout == "session 0\n" and "Traceback" not in p.stderr, p.stderr


def test_sessions_come_in_pages(tmp_path, monkeypatch):
    """At 40k sessions the whole list was one 14 MB answer: offset and
    limit page it, and the total says how many there are."""
    import bng_controller.api as api_module
    monkeypatch.setattr(api_module, "session_summary", lambda x, now: {"id": x.sid})   # stand-ins: no PPP

    async def run():
        api, sessions = await server(tmp_path)
        try:
            page, rest, bad = await ask(api.path, b'{"cmd": "sessions", "offset": 1, "limit": 2}',
                                        b'{"cmd": "sessions", "offset": 4}',
                                        b'{"cmd": "sessions", "limit": -1}')
            assert page == {"sessions": [{"id": 2}, {"id": 3}], "total": 5}
            assert rest == {"sessions": [{"id": 5}], "total": 5}
            assert "error" in bad
        finally:
            await api.stop()
    asyncio.run(run())

"""The IPv6 responder with the real session manager: a scripted CPE
dials in, negotiates IPCP and IPv6CP, gets the unsolicited RA the moment
the session's IPv6 entries are in, then solicits, asks DHCPv6 for a
prefix, and the session's teardown makes the responder forget it."""
from __future__ import annotations

import asyncio
import ipaddress
import struct
from pathlib import Path

import pytest
from scapy.layers import dhcp6 as sd
from scapy.layers import inet6 as si

from bng_controller.aaa.base import TerminateCause
from bng_controller.aaa.local import LocalAaa
from bng_controller.config import from_dict
from bng_controller.dataplane import BngTables
from bng_controller.ip_pool import PoolSet
from bng_controller.ipv6 import codec as c
from bng_controller.ipv6.responder import Ipv6Responder
from bng_controller.pppoe import codec as pppoe
from bng_controller.session_manager import SessionManager

from .fake_switch import FakeSwitch
from .scripted_cpe import IPV6CP, ScriptedCpe, ctl, opts
from .test_session_manager import ACCESS_PORT, BNG_MAC, Clock, deliver, names

CPE_IID = 0x0200_00FF_FE00_0002


class Ipv6Cpe(ScriptedCpe):
    """ScriptedCpe that also speaks IPv6CP and keeps the IPv6 it receives."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.ipv6cp_acked_by_peer = self.ipv6cp_acked_peer = False
        self.bng_iid = 0
        self.ipv6_in: list[bytes] = []

    def receive(self, frame: bytes) -> list[bytes]:
        off = 22 if self.c_vid else (18 if self.s_vid else 14)
        if frame[:6] != self.mac or struct.unpack_from("!H", frame, off - 2)[0] != 0x8864:
            return super().receive(frame)
        proto = struct.unpack_from("!H", frame, off + 6)[0]
        length = struct.unpack_from("!H", frame, off + 4)[0]
        info = frame[off + 8:off + 6 + length]
        if proto == 0x0057:
            self.ipv6_in.append(info)
            return []
        if proto != IPV6CP:
            return super().receive(frame)
        code, ident = info[0], info[1]
        data = info[4:struct.unpack_from("!H", info, 2)[0]]
        if code == 1:
            self.bng_iid = int.from_bytes(data[2:10], "big")
            self.ipv6cp_acked_peer = True
            out = [self.ppp(IPV6CP, ctl(2, ident, data))]
            if not self.ipv6cp_acked_by_peer:
                out.append(self.ppp(IPV6CP, ctl(1, self.next_id(), opts((1, CPE_IID.to_bytes(8, "big"))))))
            return out
        if code == 2:
            self.ipv6cp_acked_by_peer = True
        return []

    def ipv6(self, packet: bytes) -> bytes:
        return self.ppp(0x0057, packet)


class Shim:
    """What Ipv6Responder uses of the controller."""

    def __init__(self, cfg, clock, sessions, switch):
        self.cfg, self.clock, self.sessions, self.switch, self.l2tp = cfg, clock, sessions, switch, None


IPV6 = {"wan_pool": "2001:db8:1::/48", "pd_pool": "2001:db8:100::/40", "pd_length": 56, "dns": ["2001:db8::53"]}


def make(tmp_path: Path, ipv6: dict | None = None, alice: dict | None = None):
    cfg = from_dict({
        "bng_mac": "02:bb:00:00:00:01", "access_ports": [ACCESS_PORT],
        "pools": {"default": {"prefixes": ["10.0.0.0/29"], "gateway": "10.0.0.1", "dns": ["192.0.2.53"]}},
        "ppp": {"auth": ["pap"], "echo_interval": 10, "echo_failures": 3, "ipv6": True},
        "ipv6": IPV6 if ipv6 is None else ipv6})
    aaa = LocalAaa(data={"users": {"alice": {"password": "secret", **(alice or {})}}})
    sw = FakeSwitch()
    clock = Clock()
    mgr = SessionManager(cfg, BngTables(names()), sw, aaa, PoolSet(cfg.pools), None, b"k" * 32, clock=clock)
    r = Ipv6Responder(Shim(cfg, clock, mgr, sw))
    mgr.ipv6 = r
    return mgr, sw, r, clock


async def pump(mgr, sw, r, cpe, first):
    to_bng = list(first)
    for _ in range(40):
        for f in to_bng:
            _, etype, off = pppoe.parse_l2(f)
            if etype == pppoe.ETH_P_PPPOE_SESS and pppoe.parse_session(f[off:])[1] == 0x0057:
                line = mgr.lines.get(ACCESS_PORT, cpe.s_vid, cpe.c_vid)
                r.on_packet_in("SUBSCRIBER_IPV6_CONTROL", ACCESS_PORT, {"line_id": line.line_id}, f)
            else:
                deliver(mgr, f)
        to_bng = []
        for _ in range(5):
            await asyncio.sleep(0)
        for frame, port in sw.take_sent():
            to_bng += cpe.receive(frame)
        if not to_bng and not mgr._tasks:
            return


def test_session_gets_ra_and_prefix(tmp_path):
    async def run():
        mgr, sw, r, clock = make(tmp_path)
        cpe = Ipv6Cpe(b"\x02\0\0\0\0\x02", BNG_MAC, s_vid=100, c_vid=200)
        await pump(mgr, sw, r, cpe, [cpe.padi()])
        assert cpe.ipcp_up and cpe.ipv6cp_acked_peer and cpe.ipv6cp_acked_by_peer
        [sub] = mgr.subs.values()
        assert sub.ipv6_prefix == ipaddress.IPv6Network("2001:db8:1::/64")
        assert sub.delegated_prefix == ipaddress.IPv6Network("2001:db8:100::/56")
        # the unsolicited RA came with the IPv6 entries in place
        [ra] = cpe.ipv6_in
        p = si.IPv6(ra)
        our_ll = c.link_local(cpe.bng_iid)
        assert p.src == str(our_ll) and p.dst == "ff02::1"
        assert p[si.ICMPv6NDOptPrefixInfo].prefix == "2001:db8:1::" and p[si.ICMPv6NDOptMTU].mtu == 1492
        assert p[si.ICMPv6ND_RA].O == 1
        # RS and DHCPv6 from the CPE's link-local
        cpe_ll = c.link_local(CPE_IID)
        cpe.ipv6_in.clear()
        rs = c.icmpv6_packet(cpe_ll, c.ALL_ROUTERS, c.RouterSolicitation().icmp(), 255)
        sol = bytes(si.IPv6(src=str(cpe_ll), dst="ff02::1:2") / si.UDP(sport=546, dport=547) /
                    sd.DHCP6_Solicit(trid=5) / sd.DHCP6OptClientId(duid=sd.DUID_LL(lladdr="02:00:00:00:00:02")) /
                    sd.DHCP6OptIA_PD(iaid=1) / sd.DHCP6OptRapidCommit())
        await pump(mgr, sw, r, cpe, [cpe.ipv6(rs), cpe.ipv6(sol)])
        ra, reply = (si.IPv6(x) for x in cpe.ipv6_in)
        assert ra.dst == str(cpe_ll) and ra.haslayer(si.ICMPv6ND_RA)
        assert reply.haslayer(sd.DHCP6_Reply)
        pref = reply[sd.DHCP6OptIAPrefix]
        assert (pref.prefix, pref.plen) == ("2001:db8:100::", 56)
        assert r.counters()["sessions with ipv6"] == 1
        # the session ends: the responder forgets it
        mgr.close(sub, "test", TerminateCause.ADMIN_RESET)
        await pump(mgr, sw, r, cpe, [])
        for _ in range(10):
            await asyncio.sleep(0)
        assert not mgr.subs
        assert r.counters()["sessions with ipv6"] == 0 and len(r.schedule) == 0
    asyncio.run(run())


def _ipv6_routes(mgr, sw) -> int:
    return sum(1 for te in sw.entries.values() if te.table_id == mgr.tables.table_id("ipv6_session"))


def test_a_prefix_given_to_two_sessions_stays_with_the_first(tmp_path):
    """A customer with a static delegated prefix reconnects before the old
    session is gone: the second session's inserts failed (ALREADY_EXISTS)
    and its teardown deleted, by key, the first session's routes, leaving
    it up and black-holed. Now the second is refused the prefix, and a
    failed insert is never listed as the session's."""
    async def run():
        mgr, sw, r, clock = make(tmp_path, alice={"delegated_prefix": "2001:db8:100::/56"})
        a = Ipv6Cpe(b"\x02\0\0\0\0\x02", BNG_MAC, s_vid=100, c_vid=200)
        await pump(mgr, sw, r, a, [a.padi()])
        [first] = mgr.subs.values()
        assert first.delegated_prefix == ipaddress.IPv6Network("2001:db8:100::/56")
        assert _ipv6_routes(mgr, sw) == 1 + 256
        b = Ipv6Cpe(b"\x02\0\0\0\0\x03", BNG_MAC, s_vid=100, c_vid=201)
        await pump(mgr, sw, r, b, [b.padi()])
        second = next(s for s in mgr.subs.values() if s is not first)
        assert second.delegated_prefix is None and second.ipv6_prefix is not None
        assert mgr.counters["ipv6 prefix conflict"] == 1
        assert first.state.name == "UP" and _ipv6_routes(mgr, sw) == 1 + 256 + 1
        mgr.close(second, "test", None)
        await pump(mgr, sw, r, b, [])
        assert _ipv6_routes(mgr, sw) == 1 + 256
        # and the prefix is the first's until it goes: then the pool has it back
        mgr.close(first, "test", None)
        await pump(mgr, sw, r, a, [])
        assert _ipv6_routes(mgr, sw) == 0 and not mgr.by_ipv6
    asyncio.run(run())


def test_prefixes_that_overlap_without_being_equal(tmp_path):
    """An AAA prefix of another length than the pool's: a static /64 inside
    the pooled /56 of a live session is refused (it met that session's
    routes in one /64 entry and failed the insert); a /64 given inside a
    free pooled /56 makes the pool pass over that /56 until it is gone."""
    async def run():
        mgr, sw, r, clock = make(tmp_path)
        a = Ipv6Cpe(b"\x02\0\0\0\0\x02", BNG_MAC, s_vid=100, c_vid=200)
        await pump(mgr, sw, r, a, [a.padi()])
        [first] = mgr.subs.values()
        assert first.delegated_prefix == ipaddress.IPv6Network("2001:db8:100::/56")
        # inside the first's pooled /56: refused
        mgr.aaa = LocalAaa(data={"users": {"alice": {"password": "secret",
                                                     "delegated_prefix": "2001:db8:100:7::/64"}}})
        b = Ipv6Cpe(b"\x02\0\0\0\0\x03", BNG_MAC, s_vid=100, c_vid=201)
        await pump(mgr, sw, r, b, [b.padi()])
        second = next(s for s in mgr.subs.values() if s is not first)
        assert second.delegated_prefix is None and mgr.counters["ipv6 prefix conflict"] == 1
        assert first.state.name == "UP" and second.state.name == "UP"
        assert "data plane install failed" not in mgr.counters
        # inside the pool's next free /56: taken, and the pool passes that /56 over
        mgr.aaa = LocalAaa(data={"users": {"alice": {"password": "secret",
                                                     "delegated_prefix": "2001:db8:100:105::/64"}}})
        c3 = Ipv6Cpe(b"\x02\0\0\0\0\x04", BNG_MAC, s_vid=100, c_vid=202)
        await pump(mgr, sw, r, c3, [c3.padi()])
        third = next(s for s in mgr.subs.values() if s not in (first, second))
        assert third.delegated_prefix == ipaddress.IPv6Network("2001:db8:100:105::/64")
        mgr.aaa = LocalAaa(data={"users": {"alice": {"password": "secret"}}})
        d = Ipv6Cpe(b"\x02\0\0\0\0\x05", BNG_MAC, s_vid=100, c_vid=203)
        await pump(mgr, sw, r, d, [d.padi()])
        fourth = next(s for s in mgr.subs.values() if s not in (first, second, third))
        assert fourth.delegated_prefix == ipaddress.IPv6Network("2001:db8:100:200::/56")
        assert mgr.counters["ipv6 pool prefix passed over"] == 1
        assert mgr.counters["ipv6 prefix conflict"] == 1 and "data plane install failed" not in mgr.counters
        # once the /64 is gone, the /56 around it is handed out again
        mgr.close(third, "test", None)
        await pump(mgr, sw, r, c3, [])
        e = Ipv6Cpe(b"\x02\0\0\0\0\x06", BNG_MAC, s_vid=100, c_vid=204)
        await pump(mgr, sw, r, e, [e.padi()])
        fifth = next(s for s in mgr.subs.values() if s not in (first, second, fourth))
        assert fifth.delegated_prefix == ipaddress.IPv6Network("2001:db8:100:100::/56")
    asyncio.run(run())


def test_a_failed_insert_is_not_the_sessions_to_delete(tmp_path):
    """Whatever makes an insert fail, the teardown only deletes what went in."""
    from bng_controller.p4runtime_client import UpdateError
    import grpc

    async def run():
        mgr, sw, r, clock = make(tmp_path)
        write = sw.write
        refused, deleted = [], []

        async def refuse_one_ipv6_insert(updates):
            deleted.extend(u.entity.table_entry for u in updates if u.type == 3)   # DELETE
            errors = await write(updates)
            tid = mgr.tables.table_id("ipv6_session")
            for i, u in enumerate(updates):
                if u.type == 1 and u.entity.table_entry.table_id == tid and not refused:   # INSERT
                    refused.append(u.entity.table_entry)
                    errors.append(UpdateError(i, grpc.StatusCode.ALREADY_EXISTS, "someone else's"))
            return errors
        sw.write = refuse_one_ipv6_insert
        cpe = Ipv6Cpe(b"\x02\0\0\0\0\x04", BNG_MAC, s_vid=100, c_vid=200)
        await pump(mgr, sw, r, cpe, [cpe.padi()])
        assert refused and mgr.counters["data plane install failed"] == 1 and not mgr.subs
        assert deleted and refused[0] not in deleted
    asyncio.run(run())


def test_a_delegated_prefix_without_a_wan_prefix_is_routed(tmp_path):
    """RFC 7084 allows an unnumbered WAN with prefix delegation only. With no
    WAN pool the delegated prefix was allocated and handed out by DHCPv6 but
    never routed: IPv6 silently dead."""
    async def run():
        mgr, sw, r, clock = make(tmp_path, ipv6={k: v for k, v in IPV6.items() if k != "wan_pool"})
        cpe = Ipv6Cpe(b"\x02\0\0\0\0\x05", BNG_MAC, s_vid=100, c_vid=200)
        await pump(mgr, sw, r, cpe, [cpe.padi()])
        [sub] = mgr.subs.values()
        assert sub.ipv6_prefix is None and sub.delegated_prefix == ipaddress.IPv6Network("2001:db8:100::/56")
        assert "ipv6" in sub.installed and _ipv6_routes(mgr, sw) == 256
    asyncio.run(run())


@pytest.mark.parametrize("attrs,counter", [({"ipv6_prefix": "2001:db8:9::1/128"}, "ipv6 prefix length refused"),
                                           ({"delegated_prefix": "2001:db8:200::/40"}, "ipv6 prefix length refused")])
def test_aaa_prefixes_of_lengths_the_data_plane_cannot_hold_are_refused(tmp_path, attrs, counter):
    """A /128 Framed-IPv6-Prefix raised in the NCP task (the IPv6CP Ack held
    for ever); a /40 delegated prefix meant 33 million entries."""
    async def run():
        mgr, sw, r, clock = make(tmp_path, alice=attrs)
        cpe = Ipv6Cpe(b"\x02\0\0\0\0\x06", BNG_MAC, s_vid=100, c_vid=200)
        await pump(mgr, sw, r, cpe, [cpe.padi()])
        [sub] = mgr.subs.values()
        assert mgr.counters[counter] == 1 and sub.state.name == "UP"
        assert _ipv6_routes(mgr, sw) == (256 if "ipv6_prefix" in attrs else 1)
    asyncio.run(run())

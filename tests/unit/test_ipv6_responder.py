"""Ipv6Responder against fake controller pieces: RS/RA (byte-checked
against scapy's own build), DHCPv6-PD flows, NS/NA and echo on both
sides, the core ND agent resolving the IPv6 gateway, periodic RAs, Time
Exceeded, and a fuzz of the packet paths. Every reply is parsed by scapy,
which also recomputes its checksum."""
from __future__ import annotations

import ipaddress
import random

import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st
from scapy.layers import dhcp6 as sd
from scapy.layers import inet6 as si
from scapy.layers.l2 import Ether

from bng_controller.aaa.base import LineInfo
from bng_controller.config import from_dict
from bng_controller.ipv6 import codec as c
from bng_controller.ipv6 import dhcpv6_codec as d
from bng_controller.ipv6.responder import MAX_RAS_PER_TICK, Ipv6Responder
from bng_controller.ppp.fsm import State as FsmState
from bng_controller.ppp.link import LinkConfig, LinkSnapshot, PppLink
from bng_controller.pppoe import codec as pppoe
from bng_controller.subscriber import State, Subscriber

A = ipaddress.IPv6Address
N = ipaddress.IPv6Network
BNG_MAC = bytes.fromhex("02bb00000001")
CLIENT_MAC = bytes.fromhex("020000000002")
GW_MAC = bytes.fromhex("02aa000000fe")
OUR_IID, PEER_IID = 0x1111_2222_3333_4444, 0x0A0B_0C0D_0E0F_1011
OUR_LL, PEER_LL = A("fe80::1111:2222:3333:4444"), A("fe80::a0b:c0d:e0f:1011")
WAN = N("2001:db8:1:5::/64")
PD = N("2001:db8:100:500::/56")
DNS = [A("2001:db8::53"), A("2001:db8::54")]
CORE_PORT, CORE_ADDR, CORE_GW = 3, A("2001:db8:ffff::1"), A("2001:db8:ffff::fe")
CORE_LL = A("fe80::bb:ff:fe00:1")
LINE_ID, SESSION_ID = 5, 0x1234
L2_UP = pppoe.L2Header(dst=BNG_MAC, src=CLIENT_MAC, s_vid=100, c_vid=200)
CLIENT_DUID = bytes.fromhex("00030001") + CLIENT_MAC
SERVER_DUID = bytes.fromhex("00030001") + BNG_MAC


class Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


class FakeSwitch:
    def __init__(self):
        self.sent: list[tuple[bytes, int]] = []

    def packet_out(self, frame: bytes, port: int) -> None:
        self.sent.append((frame, port))

    def take(self) -> list[tuple[bytes, int]]:
        out, self.sent = self.sent, []
        return out


class FakeTransport:
    kind = "pppoe"

    def __init__(self):
        self.sent: list[tuple[int, bytes]] = []

    def send_ppp(self, protocol: int, info: bytes) -> None:
        self.sent.append((protocol, info))

    def take(self) -> list[bytes]:
        out, self.sent = self.sent, []
        assert all(p == 0x0057 for p, _ in out)
        return [i for _, i in out]


class FakeSessions:
    def __init__(self):
        self.by_key: dict[tuple[int, int, bytes], Subscriber] = {}
        self.on_session_down: list = []

    def find_pppoe(self, line_id: int, session_id: int, mac: bytes):
        return self.by_key.get((line_id, session_id, mac))


class FakeCtl:
    def __init__(self, **ipv6):
        self.cfg = from_dict({
            "bng_mac": "02:bb:00:00:00:01", "access_ports": [1],
            "pools": {"default": {"prefixes": ["10.0.0.0/24"], "gateway": "10.0.0.1"}},
            "core": [{"port": CORE_PORT, "ipv4": "192.0.2.1/24", "gateway": "192.0.2.254",
                      "ipv6": f"{CORE_ADDR}/64", "gateway6": str(CORE_GW)}],
            "ipv6": {"dns": [str(a) for a in DNS], "ra_interval": 200, "preferred_lifetime": 3600,
                     "valid_lifetime": 7200, **ipv6}})
        self.clock = Clock()
        self.sessions = FakeSessions()
        self.switch = FakeSwitch()
        self.l2tp = None


def make_sub(ctl: FakeCtl, sid: int = 1, wan=WAN, pd=PD, mru: int = 1492, session_id: int = SESSION_ID,
             mac: bytes = CLIENT_MAC) -> Subscriber:
    snap = LinkSnapshot(our_magic=1, peer_magic=2, our_mru=mru, peer_mru=mru, auth=None, ipv4=None,
                        ipv6_iids=(OUR_IID, PEER_IID))
    link = PppLink.restore(LinkConfig(), ctl.clock, snap)
    sub = Subscriber(sid=sid, transport=FakeTransport(), link=link, line_info=LineInfo(port=1, line_id=LINE_ID),
                     sess_idx=sid, acct_session_id=f"{sid:08x}", created=0.0, state=State.UP,
                     ipv6_prefix=wan, delegated_prefix=pd)
    ctl.sessions.by_key[(LINE_ID, session_id, mac)] = sub
    return sub


@pytest.fixture
def env():
    ctl = FakeCtl()
    r = Ipv6Responder(ctl, rng=random.Random(1))
    sub = make_sub(ctl)
    return ctl, r, sub


def punt(r: Ipv6Responder, ipv6: bytes, reason: str = "SUBSCRIBER_IPV6_CONTROL", session_id: int = SESSION_ID):
    frame = pppoe.session_frame(L2_UP, session_id, 0x0057, ipv6)
    return r.on_packet_in(reason, 1, {"line_id": LINE_ID, "session_id": session_id}, frame)


def scapy_ok(raw: bytes) -> si.IPv6:
    """scapy's view of a reply, after checking scapy computes the same L4 checksum."""
    p = si.IPv6(raw)
    l4 = p.payload
    field = "cksum" if hasattr(l4, "cksum") else "chksum"
    q = p.copy()
    delattr(q.payload, field)
    assert getattr(si.IPv6(bytes(q)).payload, field) == getattr(l4, field)
    assert p.plen == len(raw) - 40
    return p


def expected_ra(dst: str, mtu: int = 1492, other: int = 1, wan: N = WAN) -> bytes:
    """The RA as scapy builds it from the specification, independently of our codec."""
    p = si.IPv6(src=str(OUR_LL), dst=dst, hlim=255) / si.ICMPv6ND_RA(chlim=64, M=0, O=other, H=0, prf=0,
                                                                      routerlifetime=1800)
    p /= si.ICMPv6NDOptMTU(mtu=mtu)
    p /= si.ICMPv6NDOptPrefixInfo(prefixlen=64, L=1, A=1, validlifetime=7200, preferredlifetime=3600,
                                  prefix=str(wan.network_address))
    p /= si.ICMPv6NDOptRDNSS(dns=[str(a) for a in DNS], lifetime=1800)
    return bytes(p)


def rs(src: A = PEER_LL, hlim: int = 255, sll: bytes | None = None) -> bytes:
    return c.icmpv6_packet(src, c.ALL_ROUTERS, c.RouterSolicitation(sll).icmp(), hlim)


# ----------------------------------------------------------------------
# router advertisements
def test_network_up_sends_unsolicited_ra_to_all_nodes(env):
    ctl, r, sub = env
    r.network_up(sub)
    [ra] = sub.transport.take()
    assert ra == expected_ra("ff02::1")
    p = scapy_ok(ra)
    assert p.hlim == 255 and p[si.ICMPv6ND_RA].M == 0 and p[si.ICMPv6ND_RA].O == 1
    assert not p.haslayer(si.ICMPv6NDOptSrcLLAddr)                 # PPP has no link-layer address
    assert r.counters()["ra sent unsolicited"] == 1


def test_rs_gets_unicast_ra_byte_for_byte(env):
    ctl, r, sub = env
    assert punt(r, rs()) is True
    [ra] = sub.transport.take()
    assert ra == expected_ra(str(PEER_LL))
    p = scapy_ok(ra)
    pio = p[si.ICMPv6NDOptPrefixInfo]
    assert (pio.prefix, pio.prefixlen, pio.L, pio.A) == ("2001:db8:1:5::", 64, 1, 1)
    assert p[si.ICMPv6NDOptRDNSS].dns == ["2001:db8::53", "2001:db8::54"]
    assert r.counters()["ra sent solicited"] == 1


def test_rs_from_unspecified_goes_to_all_nodes_and_mtu_follows_mru():
    ctl = FakeCtl()
    r = Ipv6Responder(ctl)
    sub = make_sub(ctl, mru=1480)
    punt(r, rs(src=c.UNSPECIFIED))
    [ra] = sub.transport.take()
    assert ra == expected_ra("ff02::1", mtu=1480)


def test_ra_o_flag_off_without_dns_or_pd():
    ctl = FakeCtl(dns=[])
    r = Ipv6Responder(ctl)
    sub = make_sub(ctl, pd=None)
    punt(r, rs())
    [ra] = sub.transport.take()
    p = scapy_ok(ra)
    assert p[si.ICMPv6ND_RA].O == 0 and not p.haslayer(si.ICMPv6NDOptRDNSS)


def test_rs_rate_limit_and_invalid_rs(env):
    ctl, r, sub = env
    punt(r, rs())
    punt(r, rs())
    assert len(sub.transport.take()) == 1
    ctl.clock.t += 1.0
    punt(r, rs())
    assert len(sub.transport.take()) == 1
    ctl.clock.t += 5
    punt(r, rs(hlim=64))                                   # off-link: forged
    punt(r, rs(src=c.UNSPECIFIED, sll=CLIENT_MAC))        # RFC 4861 6.1.1
    assert sub.transport.take() == []
    cnt = r.counters()
    assert cnt["subscriber: rs rate limited"] == 1 and cnt["subscriber: rs hop limit not 255"] == 1
    assert cnt["subscriber: rs from :: with lladdr"] == 1


def test_nothing_answered_before_ipv6_is_up():
    ctl = FakeCtl()
    r = Ipv6Responder(ctl)
    sub = make_sub(ctl, wan=None, pd=None)
    sub.state = State.NETWORK
    punt(r, rs())
    assert sub.transport.take() == [] and r.counters()["subscriber: ipv6 not up"] == 1
    sub.link.ipv6cp.state = FsmState.CLOSED                  # IPv6CP gone
    r.network_up(sub)
    assert sub.transport.take() == [] and r.counters()["network up without ipv6"] == 1


def test_restored_session_is_adopted_on_first_packet(env):
    ctl, r, sub = env            # UP with prefixes, never announced (a controller restart)
    punt(r, rs())
    assert len(sub.transport.take()) == 1
    assert r.counters()["sessions with ipv6"] == 1


def test_unknown_session_and_non_ipv6_in_session(env):
    ctl, r, sub = env
    punt(r, rs(), session_id=0x999)
    frame = pppoe.session_frame(L2_UP, SESSION_ID, 0x0021, b"\x45" + b"\0" * 19)
    r.on_packet_in("SUBSCRIBER_IPV6_CONTROL", 1, {"line_id": LINE_ID}, frame)
    cnt = r.counters()
    assert cnt["subscriber_ipv6_control: unknown session"] == 1
    assert cnt["subscriber_ipv6_control: not ipv6 in the session"] == 1


def test_periodic_ras_spread_and_stop_when_down(env):
    ctl, r, sub = env
    subs = [sub] + [make_sub(ctl, sid=i, session_id=i) for i in range(2, 51)]
    for s in subs:
        r.network_up(s)
        s.transport.take()
    # three initial RAs within ~32 s, then one per [150, 200] s
    times: dict[int, list[float]] = {s.sid: [] for s in subs}
    t0 = ctl.clock.t
    while ctl.clock.t < t0 + 1000:
        ctl.clock.t += 0.5
        r.tick(ctl.clock.t)
        for s in subs:
            times[s.sid] += [ctl.clock.t] * len(s.transport.take())
    for s in subs:
        ts = [t0] + times[s.sid]
        gaps = [b - a for a, b in zip(ts, ts[1:])]
        assert all(g <= 16.5 for g in gaps[:2]), gaps
        assert all(149.5 <= g <= 200.5 for g in gaps[2:]), gaps
        assert len(ts) >= 3 + 4
    firsts = {times[s.sid][3] for s in subs}
    assert len(firsts) > 25                                    # not in lockstep
    # a session that goes down is forgotten (the session manager's hook)
    assert ctl.sessions.on_session_down == [r.session_down]
    r.session_down(sub)
    subs[1].state = State.DOWN                               # or found dead when due
    ctl.clock.t += 400
    r.tick(ctl.clock.t)
    assert sub.transport.take() == [] and subs[1].transport.take() == []
    assert r.counters()["sessions with ipv6"] == 48
    assert len(r.schedule) == 48


def test_tick_sends_at_most_a_budget(env):
    ctl, r, sub = env
    for _ in range(3):
        r.schedule.adopt(sub, 0)
    subs = [make_sub(ctl, sid=i, session_id=i) for i in range(2, MAX_RAS_PER_TICK + 12)]
    for s in subs:
        r.network_up(s, announce=False)
    assert all(s.transport.take() == [] for s in subs)
    ctl.clock.t += 201
    r.tick(ctl.clock.t)
    sent = sum(len(s.transport.take()) for s in subs + [sub])
    assert sent == MAX_RAS_PER_TICK
    r.tick(ctl.clock.t)
    assert sum(len(s.transport.take()) for s in subs + [sub]) == len(subs) + 1 - MAX_RAS_PER_TICK


# ----------------------------------------------------------------------
# DHCPv6
def dhcp(msg, src: A = PEER_LL, dst: A = c.ALL_DHCP_AGENTS, sport: int = 546) -> bytes:
    return bytes(si.IPv6(src=str(src), dst=str(dst), hlim=1) / si.UDP(sport=sport, dport=547) / msg)


def client_id():
    return sd.DHCP6OptClientId(duid=sd.DUID_LL(lladdr="02:00:00:00:00:02"))


def server_id(mac: str = "02:bb:00:00:00:01"):
    return sd.DHCP6OptServerId(duid=sd.DUID_LL(lladdr=mac))


def one_reply(r: Ipv6Responder, sub, raw: bytes) -> tuple[si.IPv6, d.Dhcpv6Message]:
    punt(r, raw)
    [out] = sub.transport.take()
    p = scapy_ok(out)
    assert (p.src, p.dst) == (str(OUR_LL), str(PEER_LL))
    assert (p[si.UDP].sport, p[si.UDP].dport) == (547, 546)
    return p, d.parse_message(bytes(p[si.UDP].payload))


def pd_prefixes(p: si.IPv6) -> list[tuple[str, int, int, int]]:
    return [(o.prefix, o.plen, o.preflft, o.validlft) for o in p[sd.DHCP6OptIA_PD].iapdopt
            if isinstance(o, sd.DHCP6OptIAPrefix)]


def test_solicit_gets_advertise_with_the_delegated_prefix(env):
    ctl, r, sub = env
    sol = sd.DHCP6_Solicit(trid=0x42) / client_id() / sd.DHCP6OptElapsedTime() / \
        sd.DHCP6OptIA_PD(iaid=7, iapdopt=[sd.DHCP6OptIAPrefix(prefix="::", plen=56)]) / \
        sd.DHCP6OptIA_NA(iaid=9) / sd.DHCP6OptOptReq(reqopts=[23])
    p, m = one_reply(r, sub, dhcp(sol))
    adv = p[sd.DHCP6_Advertise]
    assert adv.trid == 0x42
    assert bytes(p[sd.DHCP6OptServerId].duid) == SERVER_DUID
    assert bytes(p[sd.DHCP6OptClientId].duid) == CLIENT_DUID
    assert p[sd.DHCP6OptPref].prefval == 255
    ia = p[sd.DHCP6OptIA_PD]
    assert (ia.iaid, ia.T1, ia.T2) == (7, 1800, 2880)
    assert pd_prefixes(p) == [("2001:db8:100:500::", 56, 3600, 7200)]
    na = p[sd.DHCP6OptIA_NA]
    assert na.iaid == 9 and na.ianaopts[0].statuscode == d.NO_ADDRS_AVAIL
    assert p[sd.DHCP6OptDNSServers].dnsservers == ["2001:db8::53", "2001:db8::54"]
    assert m.msg_type == d.ADVERTISE and not m.rapid_commit
    assert r.counters()["dhcpv6 solicit answered (advertise)"] == 1


def test_solicit_with_rapid_commit_gets_reply(env):
    ctl, r, sub = env
    sol = sd.DHCP6_Solicit(trid=1) / client_id() / sd.DHCP6OptIA_PD(iaid=1) / sd.DHCP6OptRapidCommit()
    p, m = one_reply(r, sub, dhcp(sol))
    assert p.haslayer(sd.DHCP6_Reply) and p.haslayer(sd.DHCP6OptRapidCommit)
    assert pd_prefixes(p) == [("2001:db8:100:500::", 56, 3600, 7200)]
    assert not p.haslayer(sd.DHCP6OptPref)


def test_request_renew_rebind_release_flow(env):
    ctl, r, sub = env
    ia = sd.DHCP6OptIA_PD(iaid=7, iapdopt=[sd.DHCP6OptIAPrefix(prefix="2001:db8:100:500::", plen=56)])
    p, m = one_reply(r, sub, dhcp(sd.DHCP6_Request(trid=2) / client_id() / server_id() / ia))
    assert p.haslayer(sd.DHCP6_Reply) and pd_prefixes(p) == [("2001:db8:100:500::", 56, 3600, 7200)]
    assert (p[sd.DHCP6OptIA_PD].T1, p[sd.DHCP6OptIA_PD].T2) == (1800, 2880)
    assert p[sd.DHCP6OptDNSServers].dnsservers == ["2001:db8::53", "2001:db8::54"]   # no ORO: what we have
    p, m = one_reply(r, sub, dhcp(sd.DHCP6_Renew(trid=3) / client_id() / server_id() / ia))
    assert m.msg_type == d.REPLY and pd_prefixes(p) == [("2001:db8:100:500::", 56, 3600, 7200)]
    p, m = one_reply(r, sub, dhcp(sd.DHCP6_Rebind(trid=4) / client_id() / ia))
    assert m.msg_type == d.REPLY and pd_prefixes(p) == [("2001:db8:100:500::", 56, 3600, 7200)]
    p, m = one_reply(r, sub, dhcp(sd.DHCP6_Release(trid=5) / client_id() / server_id() / ia))
    assert p[sd.DHCP6OptStatusCode].statuscode == d.SUCCESS and m.ia_pd == ()
    assert sub.delegated_prefix == PD                           # tied to the session, not the lease
    p, m = one_reply(r, sub, dhcp(sd.DHCP6_Solicit(trid=6) / client_id() / sd.DHCP6OptIA_PD(iaid=8)))
    assert pd_prefixes(p) == [("2001:db8:100:500::", 56, 3600, 7200)]
    p, m = one_reply(r, sub, dhcp(sd.DHCP6_Decline(trid=7) / client_id() / server_id() / ia))
    assert p[sd.DHCP6OptStatusCode].statuscode == d.SUCCESS
    # IAs that hold nothing of ours: NoBinding each (RFC 8415 18.3.7)
    p, m = one_reply(r, sub, dhcp(sd.DHCP6_Release(trid=8) / client_id() / server_id() / sd.DHCP6OptIA_NA(iaid=3)
                                  / sd.DHCP6OptIA_PD(iaid=4)))
    assert m.status.code == d.SUCCESS
    assert m.ia_na[0].status.code == d.NO_BINDING and m.ia_pd[0].status.code == d.NO_BINDING


def test_renew_of_a_foreign_prefix_zeroes_it(env):
    ctl, r, sub = env
    ia = sd.DHCP6OptIA_PD(iaid=7, iapdopt=[sd.DHCP6OptIAPrefix(prefix="2001:db8:999::", plen=56,
                                                               preflft=100, validlft=200)])
    p, m = one_reply(r, sub, dhcp(sd.DHCP6_Renew(trid=3) / client_id() / server_id() / ia))
    assert pd_prefixes(p) == [("2001:db8:100:500::", 56, 3600, 7200), ("2001:db8:999::", 56, 0, 0)]


def test_no_delegated_prefix(env):
    ctl, r, sub = env
    sub.delegated_prefix = None
    ia = sd.DHCP6OptIA_PD(iaid=7, iapdopt=[sd.DHCP6OptIAPrefix(prefix="2001:db8:999::", plen=56)])
    p, m = one_reply(r, sub, dhcp(sd.DHCP6_Request(trid=2) / client_id() / server_id() / ia))
    assert m.ia_pd[0].status.code == d.NO_PREFIX_AVAIL and m.ia_pd[0].prefixes == ()
    p, m = one_reply(r, sub, dhcp(sd.DHCP6_Renew(trid=3) / client_id() / server_id() / ia))
    assert m.ia_pd[0].status.code == d.NO_BINDING and m.ia_pd[0].prefixes == ()
    p, m = one_reply(r, sub, dhcp(sd.DHCP6_Rebind(trid=4) / client_id() / ia))
    assert m.ia_pd[0].prefixes == (d.IaPrefix(N("2001:db8:999::/56"), 0, 0),)
    p, m = one_reply(r, sub, dhcp(sd.DHCP6_Rebind(trid=5) / client_id() / sd.DHCP6OptIA_PD(iaid=1)))
    assert m.ia_pd[0].status.code == d.NO_BINDING


def test_information_request_gets_dns(env):
    ctl, r, sub = env
    p, m = one_reply(r, sub, dhcp(sd.DHCP6_InfoRequest(trid=9) / client_id() / sd.DHCP6OptOptReq(reqopts=[23])))
    assert p.haslayer(sd.DHCP6_Reply)
    assert p[sd.DHCP6OptDNSServers].dnsservers == ["2001:db8::53", "2001:db8::54"]
    p, m = one_reply(r, sub, dhcp(sd.DHCP6_InfoRequest(trid=9) / sd.DHCP6OptOptReq(reqopts=[24])))
    assert m.dns_servers is None and m.client_id is None                # not asked for
    punt(r, dhcp(sd.DHCP6_InfoRequest(trid=9) / sd.DHCP6OptIA_PD(iaid=1)))
    assert sub.transport.take() == []


def test_confirm(env):
    ctl, r, sub = env
    on = sd.DHCP6OptIA_NA(iaid=1, ianaopts=[sd.DHCP6OptIAAddress(addr="2001:db8:1:5::99")])
    off = sd.DHCP6OptIA_NA(iaid=1, ianaopts=[sd.DHCP6OptIAAddress(addr="2001:db8:2::99")])
    p, m = one_reply(r, sub, dhcp(sd.DHCP6_Confirm(trid=1) / client_id() / on))
    assert m.status.code == d.SUCCESS
    p, m = one_reply(r, sub, dhcp(sd.DHCP6_Confirm(trid=1) / client_id() / off))
    assert m.status.code == d.NOT_ON_LINK
    punt(r, dhcp(sd.DHCP6_Confirm(trid=1) / client_id() / sd.DHCP6OptIA_PD(iaid=1)))
    assert sub.transport.take() == [] and r.counters()["dhcpv6 confirm unanswered"] == 1
    # RFC 8415 18.3.3: a server that cannot test (the session has no /64 of
    # its link, a delegated prefix only) MUST NOT answer; it said NotOnLink
    sub.ipv6_prefix = None
    punt(r, dhcp(sd.DHCP6_Confirm(trid=1) / client_id() / on))
    assert sub.transport.take() == [] and r.counters()["dhcpv6 confirm unanswered"] == 2


@pytest.mark.parametrize("msg,reason", [
    (sd.DHCP6_Request(trid=2) / client_id() / server_id("02:99:00:00:00:01") / sd.DHCP6OptIA_PD(iaid=1),
     "dhcpv6 for another server"),
    (sd.DHCP6_Renew(trid=2) / client_id() / server_id("02:99:00:00:00:01") / sd.DHCP6OptIA_PD(iaid=1),
     "dhcpv6 for another server"),
    (sd.DHCP6_InfoRequest(trid=2) / server_id("02:99:00:00:00:01"), "dhcpv6 for another server"),
    (sd.DHCP6_Solicit(trid=2) / client_id() / server_id(), "dhcpv6 solicit with server id"),
    (sd.DHCP6_Rebind(trid=2) / client_id() / server_id(), "dhcpv6 rebind with server id"),
    (sd.DHCP6_Request(trid=2) / client_id(), "dhcpv6 request without server id"),
    (sd.DHCP6_Solicit(trid=2) / sd.DHCP6OptIA_PD(iaid=1), "dhcpv6 solicit without client id"),
    (sd.DHCP6_Advertise(trid=2) / client_id() / server_id(), "dhcpv6 advertise is not a client message"),
    (sd.DHCP6_Solicit(trid=2) / client_id() / sd.DHCP6OptIA_PD(iaid=7) / sd.DHCP6OptIA_PD(iaid=7),
     "dhcpv6 with a repeated iaid"),
])
def test_dhcpv6_messages_that_are_dropped(env, msg, reason):
    ctl, r, sub = env
    punt(r, dhcp(msg))
    assert sub.transport.take() == []
    assert r.counters()[f"subscriber: {reason}"] == 1


def test_dhcpv6_bad_transport(env):
    ctl, r, sub = env
    sol = sd.DHCP6_Solicit(trid=1) / client_id()
    punt(r, dhcp(sol, dst=A("ff02::1")))
    raw = bytearray(dhcp(sol))
    raw[-1] ^= 0xFF
    punt(r, bytes(raw))
    punt(r, bytes(si.IPv6(src=str(PEER_LL), dst="ff02::1:2") / si.UDP(sport=546, dport=548) / sol))
    assert sub.transport.take() == []
    cnt = r.counters()
    assert cnt["subscriber: udp not for us"] == 1 and cnt["subscriber: bad udp checksum"] == 1
    assert cnt["subscriber: udp not to the dhcpv6 server port"] == 1
    p, m = one_reply(r, sub, dhcp(sol, sport=10546))     # from another port: answered, to 546
    assert m.msg_type == d.ADVERTISE


@pytest.mark.parametrize("msg", [
    sd.DHCP6_Request(trid=2) / client_id() / server_id() / sd.DHCP6OptIA_PD(iaid=1),
    sd.DHCP6_Renew(trid=2) / client_id() / server_id() / sd.DHCP6OptIA_PD(iaid=1),
    sd.DHCP6_Release(trid=2) / client_id() / server_id() / sd.DHCP6OptIA_PD(iaid=1),
    sd.DHCP6_Decline(trid=2) / client_id() / server_id() / sd.DHCP6OptIA_NA(iaid=1),
])
def test_dhcpv6_unicast_gets_use_multicast(env, msg):
    """RFC 8415 18.4: the BNG never offers Server Unicast, so a message a
    client may unicast only when told to gets a Reply with UseMulticast,
    the two identifiers and no other option (no prefix, no DNS)."""
    ctl, r, sub = env
    p, m = one_reply(r, sub, dhcp(msg, dst=OUR_LL))
    assert m.msg_type == d.REPLY and m.transaction_id == 2
    assert m.status == d.StatusCode(d.USE_MULTICAST, "use multicast")
    assert m.client_id == bytes(client_id())[4:] and m.server_id == bytes(server_id())[4:]
    assert (m.ia_pd, m.ia_na, m.dns_servers, m.preference, m.rapid_commit) == ((), (), None, None, False)
    assert not p.haslayer(sd.DHCP6OptIA_PD) and not p.haslayer(sd.DHCP6OptDNSServers)


@pytest.mark.parametrize("msg", [
    sd.DHCP6_Solicit(trid=2) / client_id() / sd.DHCP6OptIA_PD(iaid=1),
    sd.DHCP6_Rebind(trid=2) / client_id() / sd.DHCP6OptIA_PD(iaid=1),
    sd.DHCP6_Confirm(trid=2) / client_id() / sd.DHCP6OptIA_NA(iaid=1),
    sd.DHCP6_InfoRequest(trid=2) / client_id(),
])
def test_dhcpv6_unicast_that_is_only_ever_multicast_is_dropped(env, msg):
    ctl, r, sub = env
    punt(r, dhcp(msg, dst=OUR_LL))
    assert sub.transport.take() == []
    name = d.parse_message(bytes(msg)).name
    assert r.counters()[f"subscriber: dhcpv6 {name} by unicast"] == 1


# ----------------------------------------------------------------------
# NS and echo from the subscriber
def ns(target: A, src: A = PEER_LL, dst: A | None = None, hlim: int = 255) -> bytes:
    dst = dst or c.solicited_node(target)
    return c.icmpv6_packet(src, dst, c.NeighborSolicitation(target).icmp(), hlim)


def test_ns_for_our_link_local_gets_na(env):
    ctl, r, sub = env
    punt(r, ns(OUR_LL))
    [out] = sub.transport.take()
    p = scapy_ok(out)
    na = p[si.ICMPv6ND_NA]
    assert (p.src, p.dst, p.hlim) == (str(OUR_LL), str(PEER_LL), 255)
    assert (na.tgt, na.R, na.S, na.O) == (str(OUR_LL), 1, 1, 1)
    assert not p.haslayer(si.ICMPv6NDOptDstLLAddr)


def test_ns_dad_and_foreign_targets(env):
    ctl, r, sub = env
    punt(r, ns(PEER_LL, src=c.UNSPECIFIED))                       # the CPE's own DAD: silence
    punt(r, ns(A("2001:db8:1:5::1234"), src=c.UNSPECIFIED))
    assert sub.transport.take() == []
    punt(r, ns(OUR_LL, src=c.UNSPECIFIED))                        # DAD for our address: defend it
    [out] = sub.transport.take()
    p = scapy_ok(out)
    assert p.dst == "ff02::1" and p[si.ICMPv6ND_NA].S == 0
    punt(r, ns(OUR_LL, hlim=1))
    assert sub.transport.take() == []
    assert r.counters()["subscriber: ns not for our address"] == 2


def test_echo_to_link_local_and_to_core_address(env):
    ctl, r, sub = env
    punt(r, c.icmpv6_packet(PEER_LL, OUR_LL, c.Echo(True, 77, 3, b"hello").icmp()))
    [out] = sub.transport.take()
    p = scapy_ok(out)
    assert (p.src, p.dst) == (str(OUR_LL), str(PEER_LL))
    assert (p[si.ICMPv6EchoReply].id, p[si.ICMPv6EchoReply].seq, p[si.ICMPv6EchoReply].data) == (77, 3, b"hello")
    # a subscriber pinging the BNG's global address arrives as LOCAL_IPV6, in its session
    src = A("2001:db8:1:5::10")
    punt(r, c.icmpv6_packet(src, CORE_ADDR, c.Echo(True, 1, 1, b"x").icmp()), reason="LOCAL_IPV6")
    [out] = sub.transport.take()
    p = scapy_ok(out)
    assert (p.src, p.dst) == (str(CORE_ADDR), str(src)) and p.haslayer(si.ICMPv6EchoReply)
    punt(r, c.icmpv6_packet(PEER_LL, c.ALL_NODES, c.Echo(True, 1, 1).icmp()))
    punt(r, c.icmpv6_packet(PEER_LL, A("fe80::77"), c.Echo(True, 1, 1).icmp()))
    assert sub.transport.take() == []
    assert r.counters()["subscriber: echo not for our address"] == 2


def test_other_icmpv6_and_next_headers_are_counted(env):
    ctl, r, sub = env
    mld = bytes(si.IPv6(src=str(PEER_LL), dst="ff02::16", hlim=1) / si.IPv6ExtHdrHopByHop() / si.ICMPv6MLReport2())
    punt(r, mld)
    punt(r, c.icmpv6_packet(PEER_LL, c.ALL_ROUTERS, c.Icmpv6(143, 0, b"\0" * 4)))
    punt(r, b"\x60\0\0")
    assert sub.transport.take() == []
    cnt = r.counters()
    assert cnt["subscriber: next header 0"] == 1 and cnt["subscriber: icmpv6 type 143"] == 1
    assert cnt["subscriber: short ipv6 header"] == 1


# ----------------------------------------------------------------------
# core ports
def core_frame(ipv6: bytes, src_mac: bytes = GW_MAC, dst_mac: bytes = BNG_MAC) -> bytes:
    return pppoe.L2Header(dst=dst_mac, src=src_mac).encode(0x86DD) + ipv6


def test_local_addresses():
    r = Ipv6Responder(FakeCtl())
    # ::1 and fe80::bb:ff:fe00:1 share their solicited-node group: one entry
    assert c.solicited_node(CORE_LL) == c.solicited_node(CORE_ADDR) == A("ff02::1:ff00:1")
    assert r.local_addresses() == sorted([CORE_ADDR, CORE_LL, A("ff02::1:ff00:1"), c.ALL_NODES])


def test_core_ns_for_our_address_gets_na(env):
    ctl, r, sub = env
    host = A("2001:db8:ffff::77")
    pkt = c.icmpv6_packet(host, c.solicited_node(CORE_ADDR),
                          c.NeighborSolicitation(CORE_ADDR, bytes.fromhex("020000000077")).icmp(), 255)
    frame = core_frame(pkt, src_mac=bytes.fromhex("020000000077"), dst_mac=c.multicast_mac(c.solicited_node(CORE_ADDR)))
    r.on_packet_in("LOCAL_IPV6", CORE_PORT, {}, frame)
    [(out, port)] = ctl.switch.take()
    assert port == CORE_PORT
    e = Ether(out)
    assert (e.src, e.dst, e.type) == ("02:bb:00:00:00:01", "02:00:00:00:00:77", 0x86DD)
    p = scapy_ok(out[14:])
    na = p[si.ICMPv6ND_NA]
    assert (p.src, p.dst, p.hlim, na.tgt, na.R, na.S, na.O) == (str(CORE_ADDR), str(host), 255, str(CORE_ADDR),
                                                                 1, 1, 1)
    assert p[si.ICMPv6NDOptDstLLAddr].lladdr == "02:bb:00:00:00:01"
    # for our link-local too; on a VLAN the reply keeps the tag
    pkt = c.icmpv6_packet(A("fe80::77"), c.solicited_node(CORE_LL), c.NeighborSolicitation(CORE_LL).icmp(), 255)
    r.on_packet_in("LOCAL_IPV6", CORE_PORT, {},
                   pppoe.L2Header(dst=BNG_MAC, src=bytes.fromhex("020000000077"), s_vid=10).encode(0x86DD) + pkt)
    [(out, port)] = ctl.switch.take()
    e = Ether(out)
    assert e.vlan == 10 and e.dst == "02:00:00:00:00:77"
    assert scapy_ok(out[18:])[si.ICMPv6ND_NA].tgt == str(CORE_LL)
    # not ours, or wrong port, or forged hop limit: nothing
    for p, port in ((c.icmpv6_packet(host, CORE_ADDR, c.NeighborSolicitation(A("2001:db8:ffff::5")).icmp(), 255),
                     CORE_PORT),
                    (c.icmpv6_packet(host, CORE_ADDR, c.NeighborSolicitation(CORE_ADDR).icmp(), 255), 7),
                    (c.icmpv6_packet(host, CORE_ADDR, c.NeighborSolicitation(CORE_ADDR).icmp(), 64), CORE_PORT)):
        r.on_packet_in("LOCAL_IPV6", port, {}, core_frame(p))
    assert ctl.switch.take() == []
    assert r.counters()["nd ignored"] == 3


def test_core_echo(env):
    ctl, r, sub = env
    remote = A("2001:db8:abcd::1")
    r.on_packet_in("LOCAL_IPV6", CORE_PORT, {}, core_frame(c.icmpv6_packet(remote, CORE_ADDR,
                                                                           c.Echo(True, 5, 6, b"d").icmp())))
    [(out, port)] = ctl.switch.take()
    e = Ether(out)
    assert e.dst == "02:aa:00:00:00:fe" and e.src == "02:bb:00:00:00:01"
    p = scapy_ok(out[14:])
    assert (p.src, p.dst, p[si.ICMPv6EchoReply].id, p[si.ICMPv6EchoReply].seq) == (str(CORE_ADDR), str(remote), 5, 6)
    # to the solicited-node group: no echo
    r.on_packet_in("LOCAL_IPV6", CORE_PORT, {}, core_frame(c.icmpv6_packet(
        remote, c.solicited_node(CORE_ADDR), c.Echo(True, 5, 6).icmp())))
    assert ctl.switch.take() == []


def test_nd_agent_resolves_and_re_resolves_the_gateway(env):
    ctl, r, sub = env
    changes = []
    r.nd.on_resolved = lambda n: changes.append((n.addr, n.mac, n.port))
    assert list(r.nd.neighbors) == [CORE_GW]
    now = ctl.clock.t
    r.tick(now)
    [(out, port)] = ctl.switch.take()
    assert port == CORE_PORT
    e = Ether(out)
    group = c.solicited_node(CORE_GW)
    assert e.dst == "33:33:ff:00:00:fe" and e.src == "02:bb:00:00:00:01"
    p = scapy_ok(out[14:])
    assert (p.src, p.dst, p.hlim, p[si.ICMPv6ND_NS].tgt) == (str(CORE_ADDR), str(group), 255, str(CORE_GW))
    assert p[si.ICMPv6NDOptSrcLLAddr].lladdr == "02:bb:00:00:00:01"
    r.tick(now + 1.5)
    assert ctl.switch.take() == []                           # unanswered: the retry backs off, 2 s
    r.tick(now + 2.0)
    assert len(ctl.switch.take()) == 1
    r.tick(now + 5.5)
    assert ctl.switch.take() == []                           # then 4 s
    r.tick(now + 6.0)
    assert len(ctl.switch.take()) == 1
    # the gateway answers (as scapy builds an NA)
    na = bytes(si.IPv6(src=str(CORE_GW), dst=str(CORE_ADDR), hlim=255) /
               si.ICMPv6ND_NA(tgt=str(CORE_GW), R=1, S=1, O=1) / si.ICMPv6NDOptDstLLAddr(lladdr="02:aa:00:00:00:fe"))
    r.on_packet_in("LOCAL_IPV6", CORE_PORT, {}, core_frame(na))
    assert changes == [(CORE_GW, GW_MAC, CORE_PORT)]
    assert ctl.switch.take() == []
    # refresh 60 s after the last request: unicast to the known MAC
    r.tick(now + 66)
    [(out, _)] = ctl.switch.take()
    assert Ether(out).dst == "02:aa:00:00:00:fe" and scapy_ok(out[14:]).dst == str(CORE_GW)
    r.on_packet_in("LOCAL_IPV6", CORE_PORT, {}, core_frame(na))
    assert len(changes) == 1                                 # same MAC: no rewrite
    # the gateway goes silent: a refresh and two probes a second apart go
    # unanswered, then it is forgotten (63 s after the last answer, not 240)
    t = now + 66 + 60
    r.tick(t)
    for _ in range(2):
        t += 1
        r.tick(t)
    assert len(changes) == 1 and len(ctl.switch.take()) == 3
    t += 1
    r.tick(t)
    assert changes[-1] == (CORE_GW, None, CORE_PORT)
    [(out, _)] = ctl.switch.take()[-1:]
    assert Ether(out).dst == "33:33:ff:00:00:fe"               # multicast again
    # it comes back with a new MAC
    na2 = bytes(si.IPv6(src=str(CORE_GW), dst=str(CORE_ADDR), hlim=255) /
                si.ICMPv6ND_NA(tgt=str(CORE_GW), R=1, S=1, O=1) / si.ICMPv6NDOptDstLLAddr(lladdr="02:aa:00:00:00:ff"))
    r.on_packet_in("LOCAL_IPV6", CORE_PORT, {}, core_frame(na2))
    assert changes[-1] == (CORE_GW, bytes.fromhex("02aa000000ff"), CORE_PORT)
    # an NS from the gateway with its lladdr also teaches the MAC
    ns_gw = c.icmpv6_packet(CORE_GW, c.solicited_node(CORE_ADDR),
                            c.NeighborSolicitation(CORE_ADDR, GW_MAC).icmp(), 255)
    r.on_packet_in("LOCAL_IPV6", CORE_PORT, {}, core_frame(ns_gw))
    assert changes[-1] == (CORE_GW, GW_MAC, CORE_PORT)
    assert len(ctl.switch.take()) == 1                        # and gets its NA


def test_nd_link_local_gateway_is_solicited_from_our_link_local():
    ctl = FakeCtl()
    ctl.cfg.core[0].gateway6 = A("fe80::1")
    r = Ipv6Responder(ctl)
    r.tick(ctl.clock.t)
    [(out, _)] = ctl.switch.take()
    assert scapy_ok(out[14:]).src == str(CORE_LL)


# ----------------------------------------------------------------------
# time exceeded
def test_time_exceeded_for_subscriber_and_core(env):
    ctl, r, sub = env
    orig = bytes(si.IPv6(src="2001:db8:1:5::10", dst="2001:db8:abcd::1", hlim=1) / si.UDP(sport=1, dport=33434) /
                 (b"x" * 1500))
    assert punt(r, orig, reason="TTL_EXPIRED") is True
    [out] = sub.transport.take()
    p = scapy_ok(out)
    assert (p.src, p.dst) == (str(CORE_ADDR), "2001:db8:1:5::10")
    te = p[si.ICMPv6TimeExceeded]
    assert te.code == 0 and len(out) == 1280 and bytes(te.payload)[:40] == orig[:40]
    assert r.on_packet_in("TTL_EXPIRED", CORE_PORT, {}, core_frame(orig)) is True
    [(out, port)] = ctl.switch.take()
    assert port == CORE_PORT and scapy_ok(out[14:]).haslayer(si.ICMPv6TimeExceeded)
    # no error about an error, none to multicast
    err = c.icmpv6_packet(A("2001:db8:1:5::10"), A("2001:db8::1"), c.Icmpv6(1, 0, b"\0" * 4), 1)
    punt(r, err, reason="TTL_EXPIRED")
    assert sub.transport.take() == []
    # the L2TP service's entry point does the same
    r.handle_subscriber_ttl_expired(sub, orig)
    [out] = sub.transport.take()
    assert scapy_ok(out).haslayer(si.ICMPv6TimeExceeded)
    r.handle_subscriber_ttl_expired(sub, b"junk")
    assert sub.transport.take() == [] and r.counters()["ttl_expired: short ipv6 header"] == 1
    # IPv4 is not ours
    v4 = pppoe.session_frame(L2_UP, SESSION_ID, 0x0021, b"\x45" + b"\0" * 19)
    assert r.on_packet_in("TTL_EXPIRED", 1, {"line_id": LINE_ID}, v4) is False
    assert r.on_packet_in("TTL_EXPIRED", CORE_PORT, {}, pppoe.L2Header(BNG_MAC, GW_MAC).encode(0x0800)) is False


# ----------------------------------------------------------------------
# fuzz: nothing crashes, nothing raises, whatever arrives
@pytest.fixture(scope="module")
def fuzz_env():
    ctl = FakeCtl()
    r = Ipv6Responder(ctl)
    sub = make_sub(ctl)
    return ctl, r, sub


ICMP_TYPES = st.sampled_from([1, 3, 128, 129, 133, 134, 135, 136, 143])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=300), reason=st.sampled_from(["SUBSCRIBER_IPV6_CONTROL", "LOCAL_IPV6",
                                                            "TTL_EXPIRED"]))
def test_fuzz_random_bytes(fuzz_env, data, reason):
    ctl, r, sub = fuzz_env
    r.handle_subscriber_packet(sub, data)
    punt(r, data, reason=reason)
    r.on_packet_in(reason, CORE_PORT, {}, core_frame(data))
    r.on_packet_in(reason, 1, {"line_id": LINE_ID}, data)
    assert r.counters().get("internal error", 0) == 0


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(t=ICMP_TYPES, code=st.sampled_from([0, 0, 0, 1]), hlim=st.sampled_from([255, 255, 255, 1]),
       src=st.sampled_from([PEER_LL, PEER_LL, PEER_LL, c.UNSPECIFIED, A("ff02::1"), A("2001:db8:ffff::77")]),
       dst=st.sampled_from([OUR_LL, c.ALL_ROUTERS, c.solicited_node(OUR_LL), CORE_ADDR, c.ALL_NODES]),
       body=st.binary(max_size=120) | st.builds(lambda target, opts: b"\0" * 4 + target.packed + opts,
                                                st.sampled_from([OUR_LL, CORE_ADDR, CORE_LL]),
                                                st.sampled_from([b"", b"\x01\x01" + CLIENT_MAC]) | st.binary(max_size=24)),
       dhcp_body=st.binary(max_size=120), mtype=st.integers(0, 14))
@example(t=133, code=0, hlim=255, src=PEER_LL, dst=c.ALL_ROUTERS, body=b"\0" * 4, dhcp_body=b"", mtype=11)
@example(t=135, code=0, hlim=255, src=PEER_LL, dst=OUR_LL, body=b"\0" * 4 + OUR_LL.packed, dhcp_body=b"",
         mtype=1)
@example(t=135, code=0, hlim=255, src=A("2001:db8:ffff::77"), dst=CORE_ADDR, body=b"\0" * 4 + CORE_ADDR.packed,
         dhcp_body=b"", mtype=1)
@example(t=128, code=0, hlim=64, src=PEER_LL, dst=OUR_LL, body=b"\0" * 8, dhcp_body=b"", mtype=1)
def test_fuzz_checksummed_payloads(fuzz_env, t, code, body, hlim, src, dst, dhcp_body, mtype):
    """Valid IPv6 and checksums around random ICMPv6 bodies and DHCPv6
    messages, so the fuzz reaches past the checksum checks."""
    ctl, r, sub = fuzz_env
    ctl.clock.t += 1.1
    r.handle_subscriber_packet(sub, c.icmpv6_packet(src, dst, c.Icmpv6(t, code, body), hlim))
    r.handle_subscriber_packet(sub, c.udp_packet(src, c.ALL_DHCP_AGENTS,
                                                 c.Udp(546, 547, bytes([mtype, 0, 0, 1]) + dhcp_body)))
    r.on_packet_in("LOCAL_IPV6", CORE_PORT, {}, core_frame(c.icmpv6_packet(src, dst, c.Icmpv6(t, code, body), hlim)))
    for info in sub.transport.take():
        c.parse_ipv6(info)                                  # whatever we sent parses
    ctl.switch.take()
    assert r.counters().get("internal error", 0) == 0


def test_fuzz_reached_the_answers():
    """The checksummed fuzz (its explicit examples at least) gets past
    parsing into every answer: run it on a fresh responder and look."""
    ctl = FakeCtl()
    env = (ctl, Ipv6Responder(ctl), make_sub(ctl))
    test_fuzz_checksummed_payloads(env)
    cnt = env[1].counters()
    for what in ("ra sent solicited", "na sent", "echo answered", "nd solicitations answered"):
        assert cnt.get(what, 0) > 0, (what, cnt)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(opts=st.lists(st.tuples(st.sampled_from([1, 2, 3, 5, 6, 7, 8, 13, 14, 23, 25, 26, 99]),
                               st.binary(max_size=40)), max_size=6),
       mtype=st.sampled_from([1, 3, 4, 5, 6, 8, 9, 11]))
def test_fuzz_dhcpv6_options(fuzz_env, opts, mtype):
    """Well-formed TLVs with random contents, our server id among them."""
    ctl, r, sub = fuzz_env
    opts = [(2, SERVER_DUID) if o == 2 and i % 2 else (o, v) for i, (o, v) in enumerate(opts)]
    msg = bytes([mtype, 0, 0, 7]) + d.encode_options(opts)
    r.handle_subscriber_packet(sub, c.udp_packet(PEER_LL, c.ALL_DHCP_AGENTS, c.Udp(546, 547, msg)))
    for info in sub.transport.take():
        reply = d.parse_message(c.parse_udp(c.parse_ipv6(info)).payload)
        assert reply.transaction_id == 7 and reply.server_id == SERVER_DUID
    assert r.counters().get("internal error", 0) == 0


def test_core_nd_override_and_dad_rules():
    """RFC 4861 7.2.5: an NA without Override must not replace a different
    cached link-layer address (it did: a stray NA moved the gateway); 7.1.1:
    an NS from :: (DAD) with a source link-layer option is discarded (it
    was answered)."""
    from bng_controller.ipv6.nd import NdAgent
    from bng_controller.pppoe.codec import L2Header
    A = ipaddress.IPv6Address
    bng, gw, me = bytes.fromhex("02bb00000001"), A("2001:db8:ffff::fe"), A("2001:db8:ffff::1")
    nd = NdAgent(bng, addresses={3: {me}})
    seen = []
    nd.on_resolved = lambda n: seen.append(n.mac)
    nd.watch(gw, 3, 0, me)

    def na(mac: bytes, override: bool):
        pkt = c.Ipv6Packet(gw, me, 58, b"", 255)
        nd.handle(3, L2Header(dst=bng, src=mac), pkt,
                  c.NeighborAdvertisement(gw, router=True, solicited=True, override=override, target_lladdr=mac), 1.0)
    first, other = bytes.fromhex("02aa000000fe"), bytes.fromhex("02cc000000cc")
    na(first, False)                              # nothing cached yet: learned
    na(other, False)                              # no Override: ignored
    assert seen == [first]
    na(other, True)                               # Override: replaces
    assert seen == [first, other]
    dad = c.Ipv6Packet(c.UNSPECIFIED, c.solicited_node(me), 58, b"", 255)
    assert nd.handle(3, L2Header(dst=bng, src=bytes(6)), dad,
                     c.NeighborSolicitation(me, source_lladdr=bytes.fromhex("020000000099")), 2.0) is None
    assert nd.handle(3, L2Header(dst=bng, src=bytes(6)), dad, c.NeighborSolicitation(me), 2.0) is not None


def test_t1_t2_of_an_infinite_lifetime_are_infinite():
    """RFC 8415 21.4/21.21: with a preferred lifetime of infinity the server
    sent T1 2147483647 and T2 3435973836 instead of infinity."""
    from bng_controller.ipv6.dhcpv6_server import Dhcpv6Server, ServerPolicy
    srv = Dhcpv6Server(ServerPolicy(b"\x00\x03\x00\x01" + bytes(6), preferred_lifetime=0xFFFFFFFF,
                                    valid_lifetime=0xFFFFFFFF))
    assert (srv.t1, srv.t2) == (0xFFFFFFFF, 0xFFFFFFFF)
    srv = Dhcpv6Server(ServerPolicy(b"\x00\x03\x00\x01" + bytes(6), preferred_lifetime=3600))
    assert (srv.t1, srv.t2) == (1800, 2880)


def test_an_unsolicited_na_to_all_nodes_teaches_the_gateways_new_mac(env):
    """RFC 4861 7.2.6: a router whose MAC changed says so with an
    unsolicited NA to all-nodes. ff02::1 was not among local_ipv6, so the
    data plane dropped it and the new MAC waited for the next refresh."""
    ctl, r, sub = env
    changes = []
    r.nd.on_resolved = lambda n: changes.append(n.mac)
    assert c.ALL_NODES in r.local_addresses()
    na = bytes(si.IPv6(src=str(CORE_GW), dst=str(CORE_ADDR), hlim=255) /
               si.ICMPv6ND_NA(tgt=str(CORE_GW), R=1, S=1, O=1) / si.ICMPv6NDOptDstLLAddr(lladdr="02:aa:00:00:00:fe"))
    r.on_packet_in("LOCAL_IPV6", CORE_PORT, {}, core_frame(na))
    unsolicited = bytes(si.IPv6(src=str(CORE_GW), dst="ff02::1", hlim=255) /
                        si.ICMPv6ND_NA(tgt=str(CORE_GW), R=1, S=0, O=1) /
                        si.ICMPv6NDOptDstLLAddr(lladdr="02:aa:00:00:00:99"))
    r.on_packet_in("LOCAL_IPV6", CORE_PORT, {}, core_frame(unsolicited, dst_mac=bytes.fromhex("333300000001")))
    assert changes == [GW_MAC, bytes.fromhex("02aa00000099")]

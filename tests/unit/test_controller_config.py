"""The controller's config file: the shipped examples load, mistakes are
named with their path."""
from pathlib import Path

import pytest

from bng_controller import config

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("path", sorted((ROOT / "configs" / "controller").glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_configs_load(path):
    cfg = config.load(path)
    assert cfg.pools and cfg.switch.address


def test_unknown_key_is_named_with_its_path():
    with pytest.raises(config.ConfigError, match=r"ppp\.echo_intervall: unknown setting"):
        config.from_dict({"pools": {"p": {"prefix": "10.0.0.0/24", "gateway": "10.0.0.1"}},
                          "ppp": {"echo_intervall": 3}})


def test_a_pool_is_required():
    with pytest.raises(config.ConfigError, match="pools"):
        config.from_dict({})


def test_bad_values_are_refused():
    with pytest.raises(config.ConfigError):
        config.from_dict({"pools": {"p": {"prefix": "10.0.0.0/33", "gateway": "10.0.0.1"}}})
    with pytest.raises(config.ConfigError, match="default_pool"):
        config.from_dict({"pools": {"p": {"prefix": "10.0.0.0/24", "gateway": "10.0.0.1"}},
                          "default_pool": "q"})


def test_l2tp_section_is_checked_at_load():
    pools = {"p": {"prefix": "10.0.0.0/24", "gateway": "10.0.0.1"}}
    with pytest.raises(config.ConfigError, match=r"l2tp\.lns_peer: unknown setting"):
        config.from_dict({"pools": pools, "l2tp": {"local_address": "192.0.2.1", "lns_peer": []}})
    with pytest.raises(config.ConfigError, match="l2tp.local_address: required"):
        config.from_dict({"pools": pools, "l2tp": {"lac": True}})
    with pytest.raises(config.ConfigError, match="l2tp: missing setting 'secret'"):
        config.from_dict({"pools": pools, "l2tp": {"local_address": "192.0.2.1",
                                                   "lns_peers": [{"address": "192.0.2.9"}]}})
    with pytest.raises(config.ConfigError, match="l2tp.proxy"):
        config.from_dict({"pools": pools, "l2tp": {"local_address": "192.0.2.1", "proxy": "maybe"}})
    c = config.from_dict({"pools": pools, "l2tp": {"local_address": "192.0.2.1", "lns": True}})
    assert c.l2tp["lns"] is True


def test_a_static_route_to_one_of_our_addresses_is_refused():
    """Each of the BNG's own addresses is a /32 in fib_v4 (set_local): a
    static /32 to the same address would collide at start."""
    pools = {"p": {"prefix": "10.0.0.0/24", "gateway": "10.0.0.1"}}
    with pytest.raises(config.ConfigError, match=r"routes: 10\.0\.0\.1/32 is one of the BNG's own"):
        config.from_dict({"pools": pools, "routes": [{"prefix": "10.0.0.1/32", "via": "192.0.2.9"}]})
    with pytest.raises(config.ConfigError, match=r"routes: 192\.0\.2\.1/32 is one of the BNG's own"):
        config.from_dict({"pools": pools, "l2tp": {"local_address": "192.0.2.1", "lns": True},
                          "routes": [{"prefix": "192.0.2.1/32", "via": "192.0.2.9"}]})
    cfg = config.from_dict({"pools": pools, "routes": [{"prefix": "10.0.0.0/30", "via": "192.0.2.9"}]})
    assert cfg.routes[0].prefix.prefixlen == 30


def test_cpus_must_be_cpus_the_controller_may_use(monkeypatch):
    monkeypatch.setattr(config.os, "sched_getaffinity", lambda pid: {0, 1})
    pool = {"p": {"prefix": "10.0.0.0/24", "gateway": "10.0.0.1"}}
    assert config.from_dict({"pools": pool, "cpus": [1]}).cpus == [1]
    with pytest.raises(config.ConfigError, match=r"cpus: \[2\] are not among"):
        config.from_dict({"pools": pool, "cpus": [1, 2]})


@pytest.mark.parametrize("ipv6,words", [({"ra_interval": 20000}, "ra_interval"), ({"ra_interval": 1}, "ra_interval"),
                                        ({"valid_lifetime": 2**32}, "preferred_lifetime <= valid_lifetime"),
                                        ({"preferred_lifetime": 9000}, "preferred_lifetime <= valid_lifetime"),
                                        ({"valid_lifetime": 100, "preferred_lifetime": 50, "ra_interval": 200},
                                         "must exceed ra_interval"),
                                        ({"pd_min_length": 40}, "pd_min_length")])
def test_ipv6_timers_and_lifetimes_are_checked(ipv6, words):
    """An RA interval of 20000 s was taken (prefixes valid for 7200 s then
    expired between RAs), and a valid lifetime of 2**32 made every RA fail
    to build."""
    with pytest.raises(config.ConfigError, match=words):
        config.from_dict({"pools": {"p": {"prefixes": ["10.0.0.0/24"], "gateway": "10.0.0.1"}}, "ipv6": ipv6})


@pytest.mark.parametrize("pp", [{"default_pps": 0}, {"rates": {"ARP": 0}}, {"rates": {"ARP": 2.5}},
                                {"burst_seconds": 0}])
def test_a_punt_policer_rate_of_zero_is_refused_at_load(pp):
    """DPDK refuses a meter of rate 0: the write failed at start-up and
    left the punt meters unset."""
    with pytest.raises(config.ConfigError, match="punt_policer"):
        config.from_dict({"pools": {"p": {"prefix": "10.0.0.0/24", "gateway": "10.0.0.1"}}, "punt_policer": pp})


def test_the_policer_burst_is_configured():
    """The session policers' burst was fixed at 100 ms of the rate, which
    may hold one TCP flow over a long round trip below the rate it was sold
    (not measured here): it is the operator's to set."""
    from bng_controller.dataplane import BngTables
    from tests.unit.test_session_manager import names
    pools = {"pools": {"p": {"prefix": "10.0.0.0/24", "gateway": "10.0.0.1"}}}
    cfg = config.from_dict({**pools, "sessions": {"policer_burst_ms": 400}})
    up, down = BngTables(names(), cfg.sessions.policer_burst_ms).session_meters(1, 8000, 16)
    assert (up.config.cir, up.config.cburst) == (1_000_000, 400_000)
    assert (down.config.cir, down.config.cburst) == (2000, 3000)          # never under two full frames
    for bad in (0, 20_000, 1.5, True):
        with pytest.raises(config.ConfigError, match="policer_burst_ms"):
            config.from_dict({**pools, "sessions": {"policer_burst_ms": bad}})

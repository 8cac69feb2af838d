"""The lab's config overrides (bng_lab.topology.merge)."""
from bng_lab.topology import merge


def test_an_override_updates_nested_sections_key_by_key():
    cfg = {"aaa": {"mode": "radius", "radius": {"servers": ["a"], "timeout": 3}}, "mtu": 1492}
    out = merge(cfg, {"aaa": {"radius": {"timeout": 1}}, "mtu": 1480})
    assert out == {"aaa": {"mode": "radius", "radius": {"servers": ["a"], "timeout": 1}}, "mtu": 1480}


def test_anything_but_a_dict_on_a_dict_replaces():
    cfg = {"aaa": {"radius": {"servers": ["a", "b"]}}, "pools": {"v4": "10.0.0.0/8"}}
    out = merge(cfg, {"aaa": {"radius": {"servers": ["c"]}}, "pools": None})
    assert out == {"aaa": {"radius": {"servers": ["c"]}}, "pools": None}


def test_the_sections_of_the_base_are_not_changed_in_place():
    base = {"aaa": {"radius": {"timeout": 3}}}
    merge(dict(base), {"aaa": {"radius": {"timeout": 1}}})
    assert base == {"aaa": {"radius": {"timeout": 3}}}

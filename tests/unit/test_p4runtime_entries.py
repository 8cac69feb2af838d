"""Entries framed from per-field prefixes (EntryBuilder's fast path for
exact-match entries) against the same entries built through the protobuf
runtime: every table and action of the BNG's P4Info, random values of
every length a field takes, must give equal messages and equal bytes."""
from __future__ import annotations

import random
from pathlib import Path

import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from bng_controller.p4info_names import P4InfoNames
from bng_controller.p4runtime_entries import EntryBuilder

BUILD = Path(__file__).resolve().parents[2] / "p4src" / "build" / "bng"
_EXACT = p4info_pb2.MatchField.EXACT


@pytest.fixture(scope="module")
def p4info() -> p4info_pb2.P4Info:
    return text_format.Parse((BUILD / "bng.p4info.txtpb").read_text(), p4info_pb2.P4Info())


def _value(rng: random.Random, width: int) -> int | bytes:
    """0, the widest value, or any width in between; now and then the
    bytes themselves (passed through as given)."""
    r = rng.random()
    if r < 0.1:
        return 0
    if r < 0.2:
        return (1 << width) - 1
    v = rng.getrandbits(rng.randint(1, width))
    if r < 0.3:
        return v.to_bytes((width + 7) // 8, "big")
    return v


def _cases(p4info: p4info_pb2.P4Info):
    actions = {a.preamble.id: a for a in p4info.actions}
    for t in p4info.tables:
        for ref in t.action_refs:
            if ref.scope != p4info_pb2.ActionRef.DEFAULT_ONLY:
                yield t, actions[ref.id]


def test_framed_entries_equal_protobuf_built(p4info) -> None:
    b = EntryBuilder(P4InfoNames(p4info))
    rng = random.Random(7)
    framed = 0
    for t, a in _cases(p4info):
        exact = all(mf.match_type == _EXACT for mf in t.match_fields)
        for _ in range(30):
            match = {mf.name: _value(rng, mf.bitwidth) if mf.match_type == _EXACT
                     else (0, 0) for mf in t.match_fields}
            params = {p.name: _value(rng, p.bitwidth) for p in a.params}
            got = b.table_entry(t.preamble.name, match, a.preamble.name, params)
            want = b.message_entry(t.preamble.name, match, a.preamble.name, params)
            assert got == want
            assert got.SerializeToString() == want.SerializeToString()
        framed += exact
    assert framed >= 10, "the BNG's session tables should all take the framed path"
    assert any(f is None for f in b._frames.values()), "an LPM table should take the general path"


def test_entries_without_action_or_params(p4info) -> None:
    b = EntryBuilder(P4InfoNames(p4info))
    cases = [(t, a) for t, a in _cases(p4info)
             if not a.params and all(m.match_type == _EXACT for m in t.match_fields)]
    assert cases, "the BNG has exact tables with parameterless actions (my_station, local_ipv4)"
    for t, a in cases:
        match = {mf.name: 3 for mf in t.match_fields}
        for action in (a.preamble.name, None):
            assert b.table_entry(t.preamble.name, match, action) == b.message_entry(t.preamble.name, match, action)


def test_framed_path_refuses_what_does_not_fit(p4info) -> None:
    b = EntryBuilder(P4InfoNames(p4info))
    t = next(t for t in p4info.tables if t.match_fields and all(m.match_type == _EXACT for m in t.match_fields))
    mf = t.match_fields[0]
    for bad in (1 << mf.bitwidth, -1):
        match = {m.name: 1 for m in t.match_fields}
        match[mf.name] = bad
        for build in (b.table_entry, b.message_entry):
            with pytest.raises(ValueError, match="does not fit"):
                build(t.preamble.name, match)


def test_bytes_longer_than_the_field_pass_through_alike(p4info) -> None:
    """A caller's bytes are not checked on either path (the switch refuses
    a value that does not fit); both frame them the same."""
    b = EntryBuilder(P4InfoNames(p4info))
    t = next(t for t in p4info.tables if t.match_fields and all(m.match_type == _EXACT for m in t.match_fields))
    match = {m.name: bytes(range(1, 150)) for m in t.match_fields}       # lengths past one-byte varints
    got, want = b.table_entry(t.preamble.name, match), b.message_entry(t.preamble.name, match)
    assert got.SerializeToString() == want.SerializeToString()

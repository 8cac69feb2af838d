"""libbsw helpers that need no EAL: how it reads features off a spec
(bsw_spec_has_line), how it names DPDK meter profiles, and DPDK's own
check of a spec (bsw_spec_check, P4Runtime's VERIFY)."""
from __future__ import annotations

import ctypes
from pathlib import Path

import pytest

from bng_switch import libbsw

if not libbsw.default_library_path().exists():
    pytest.skip("libbsw is not built (make -C targets/dpdk)", allow_module_level=True)

LIB = ctypes.CDLL(str(libbsw.default_library_path()))
LIB.bsw_spec_has_line.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
LIB.bsw_meter_profile_name.argtypes = [ctypes.c_char_p] + [ctypes.c_uint64] * 4
LIB.bsw_meter_profile_name.restype = None


def has_line(tmp_path, text: str, words: str) -> int:
    spec = tmp_path / "p.spec"
    spec.write_text(text)
    return LIB.bsw_spec_has_line(str(spec).encode(), words.encode())


@pytest.mark.parametrize("line", [
    "entryid m.x", "\tentryid m.x", "L : entryid m.x", "L\t:\tentryid m.x", "L : \tentryid m.x",
    " " * 600 + "entryid m.x",
])
def test_an_instruction_is_found_however_dpdk_would_split_it(tmp_path, line):
    """DPDK's spec parser splits on any blanks and allows 2047-character
    lines; the check once wanted " :\\t" after a label and read 512 bytes."""
    assert has_line(tmp_path, f"action a args none {{\n\t{line}\n\treturn\n}}\n", "entryid ") == 1


@pytest.mark.parametrize("text", ["; entryid m.x\n", "// entryid m.x\n", "entryidx m.x\n", "mov m.entryid 1\n"])
def test_comments_and_other_words_are_not_the_instruction(tmp_path, text):
    assert has_line(tmp_path, text, "entryid ") == 0


def test_a_struct_is_found_whatever_blanks_follow_its_name(tmp_path):
    assert has_line(tmp_path, "struct bsw_frame_length_h\t{\n\tbit<32> len\n}\n", "struct bsw_frame_length_h ") == 1
    assert has_line(tmp_path, "struct bsw_frame_length_hx {\n}\n", "struct bsw_frame_length_h ") == 0


def test_an_unreadable_spec_is_minus_one(tmp_path):
    assert LIB.bsw_spec_has_line(str(tmp_path / "none.spec").encode(), b"entryid") == -1


def profile_name(cir: int, pir: int, cbs: int, pbs: int) -> str:
    buf = ctypes.create_string_buffer(64)
    LIB.bsw_meter_profile_name(buf, cir, pir, cbs, pbs)
    return buf.value.decode()


def test_meter_profile_names_fit_dpdk_and_keep_every_bit():
    """In hex the four parameters can need 69 characters; cut to DPDK's 63,
    these two once named one profile and the second meter got the first's."""
    m = 0x7FFFFFFFFFFFFFFF
    a, b = profile_name(m, m, m, 0x7FFFFFFFFF000001), profile_name(m, m, m, 0x7FFFFFFFFFABCDEF)
    assert a != b and len(a) == len(b) == 44
    base = (0x0123456789ABCDEF, 0xFEDCBA9876543210, 0x0F0F0F0F0F0F0F0F, 0xF0F0F0F0F0F0F0F0)
    names = {profile_name(*base)}
    for bit in range(256):
        v = list(base)
        v[bit // 64] ^= 1 << (bit % 64)
        names.add(profile_name(*v))
    assert len(names) == 257


def test_dpdk_checks_a_spec_without_building_it(tmp_path):
    """The BNG's spec passes; one whose action writes a field the metadata
    does not have (which the switch's own spec reader does not look into)
    is refused with DPDK's reason."""
    lib = libbsw.Library()
    spec = Path(__file__).resolve().parents[2] / "p4src" / "build" / "bng" / "bng.spec"
    lib.spec_check(str(spec))
    text = spec.read_text()
    assert "mov m.local_metadata_max_len t.max_len" in text
    bad = tmp_path / "bad.spec"
    bad.write_text(text.replace("mov m.local_metadata_max_len t.max_len",
                                "mov m.local_metadata_no_such_field t.max_len", 1))
    with pytest.raises(libbsw.BswError, match="Action configuration error"):
        lib.spec_check(str(bad))

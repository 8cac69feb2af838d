"""The exact-width field accessors that the switch puts in front of every
compiled pipeline (targets/dpdk/src/bsw_swx_exact_access.h) compute what the
DPDK instructions they replace compute: a C program runs both on random
operands and compares the memory they leave (swx_exact_access_check.c).
The PTF suite and the integration tests run the BNG program on them too;
this one covers the forms and widths the BNG program does not use."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from bng_switch.switch_config import default_dpdk_include

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent


def test_exact_access_matches_dpdk(tmp_path: Path) -> None:
    include = Path(default_dpdk_include())
    if not (include / "rte_swx_pipeline_internal.h").exists():
        pytest.fail(f"{include} has no rte_swx_pipeline_internal.h: run make setup")
    if not shutil.which("gcc") or not shutil.which("pkg-config"):
        pytest.fail("gcc and pkg-config are needed (make setup installs them)")
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "libdpdk"], check=True,
                           capture_output=True, text=True).stdout.split()
    exe = tmp_path / "check"
    subprocess.run(["gcc", "-O2", "-Wall", "-Werror", "-Wno-deprecated-declarations",
                    "-DALLOW_EXPERIMENTAL_API", f"-I{include}", f"-I{ROOT / 'targets/dpdk/src'}",
                    "-o", str(exe), str(HERE / "swx_exact_access_check.c"), *flags],
                   check=True, capture_output=True, text=True)
    out = subprocess.run([str(exe), "20000"], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.startswith("ok: 47 forms"), out.stdout


def test_fences_wrap_dpdk_instructions_only() -> None:
    """The switch's copy of the generated code (bsw_exact_access_fence.c)
    fences the DPDK instructions that read or write field bytes through their
    own types, after any label, and leaves alone the calls the header
    replaces and the instructions that touch no field bytes (extract, emit,
    validity), unless they read a metadata field (extract_m its size, emits
    fused with tx the output port)."""
    import ctypes

    from bng_switch.libbsw import default_library_path

    lib_path = default_library_path()
    if not lib_path.exists():
        pytest.fail(f"{lib_path} is missing: run make setup")
    lib = ctypes.CDLL(str(lib_path))
    libc = ctypes.CDLL(None)
    libc.fmemopen.restype = ctypes.c_void_p
    libc.fmemopen.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p]
    libc.open_memstream.restype = ctypes.c_void_p
    libc.open_memstream.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t)]
    libc.fclose.argtypes = [ctypes.c_void_p]
    libc.free.argtypes = [ctypes.c_void_p]
    lib.bsw_exact_access_fence.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p,
                                           ctypes.POINTER(ctypes.c_uint32)]
    header = (ROOT / "targets/dpdk/src/bsw_swx_exact_access.h").read_bytes()
    code = (b"\t__instr_mov_i_exec(p, t, &pipeline_instructions[1]);\n"
            b"LABEL_X : __instr_alu_ckadd_struct_exec(p, t, &pipeline_instructions[2]);\n"
            b"\t__instr_hdr_extract_exec(p, t, &pipeline_instructions[3]);\n"
            b"\t__instr_regwr_rmi_exec(p, t, &action_a_instructions[0]);\n"
            b"\t__instr_hdr_extract_m_exec(p, t, &pipeline_instructions[4]);\n"
            b"\t__instr_hdr_emit8_tx_exec(p, t, &pipeline_instructions[5]);\n"
            b"\t__instr_hdr_emit2_exec(p, t, &pipeline_instructions[7]);\n"
            b"\tif (instr_operand_hbo(t, &pipeline_instructions[6].jmp.a) == 1)\n")
    want = (b"\t__instr_mov_i_exec(p, t, &pipeline_instructions[1]);\n"
            b"LABEL_X : BSW_FENCE(); __instr_alu_ckadd_struct_exec(p, t, "
            b"&pipeline_instructions[2]); BSW_FENCE();\n"
            b"\t__instr_hdr_extract_exec(p, t, &pipeline_instructions[3]);\n"
            b"\tBSW_FENCE(); __instr_regwr_rmi_exec(p, t, &action_a_instructions[0]); "
            b"BSW_FENCE();\n"
            b"\tBSW_FENCE(); __instr_hdr_extract_m_exec(p, t, &pipeline_instructions[4]); "
            b"BSW_FENCE();\n"
            b"\tBSW_FENCE(); __instr_hdr_emit8_tx_exec(p, t, &pipeline_instructions[5]); "
            b"BSW_FENCE();\n"
            b"\t__instr_hdr_emit2_exec(p, t, &pipeline_instructions[7]);\n"
            b"\tif (instr_operand_hbo(t, &pipeline_instructions[6].jmp.a) == 1)\n")
    src = ctypes.create_string_buffer(code, len(code))
    fin = libc.fmemopen(src, len(code), b"r")
    buf, size = ctypes.c_void_p(), ctypes.c_size_t()
    fout = libc.open_memstream(ctypes.byref(buf), ctypes.byref(size))
    n = ctypes.c_uint32()
    assert lib.bsw_exact_access_fence(header, fin, fout, ctypes.byref(n)) == 0
    libc.fclose(fin)
    libc.fclose(fout)
    out = ctypes.string_at(buf, size.value)
    libc.free(buf)
    assert out == want
    assert n.value == 4

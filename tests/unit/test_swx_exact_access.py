"""The exact-width field accessors that the switch puts in front of every
compiled pipeline (targets/dpdk/src/bsw_swx_exact_access.h) compute what the
DPDK instructions they replace compute: a C program runs both on random
operands and compares the memory they leave (swx_exact_access_check.c).
The PTF suite and the integration tests run the BNG program on them too;
this one covers the forms and widths the BNG program does not use. The
header emits of bsw_swx_emit.h are checked the same way (swx_emit_check.c).
The switch copies DPDK's generated code through three passes before gcc
sees it: fences (bsw_exact_access_fence.c), fused runs of emits
(bsw_emit_run.c) and group chaining (bsw_group_chain.c); their tests are
here too."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from bng_switch.switch_config import default_dpdk_include

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent


def _build_check(source: str, tmp_path: Path) -> Path:
    """Compiles one of the differential checks beside this file against
    DPDK's internal header and the switch's headers."""
    include = Path(default_dpdk_include())
    if not (include / "rte_swx_pipeline_internal.h").exists():
        pytest.fail(f"{include} has no rte_swx_pipeline_internal.h: run make setup")
    if not shutil.which("gcc") or not shutil.which("pkg-config"):
        pytest.fail("gcc and pkg-config are needed (make setup installs them)")
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "libdpdk"], check=True,
                           capture_output=True, text=True).stdout.split()
    exe = tmp_path / Path(source).stem
    subprocess.run(["gcc", "-O2", "-Wall", "-Werror", "-Wno-deprecated-declarations",
                    "-DALLOW_EXPERIMENTAL_API", f"-I{include}", f"-I{ROOT / 'targets/dpdk/src'}",
                    "-o", str(exe), str(HERE / source), *flags],
                   check=True, capture_output=True, text=True)
    return exe


def test_exact_access_matches_dpdk(tmp_path: Path) -> None:
    out = subprocess.run([str(_build_check("swx_exact_access_check.c", tmp_path)), "20000"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.startswith("ok: 50 forms"), out.stdout


def test_emits_match_dpdk(tmp_path: Path) -> None:
    """bsw_swx_emit.h's emits leave the output header list as DPDK's do."""
    out = subprocess.run([str(_build_check("swx_emit_check.c", tmp_path)), "20000"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.startswith("ok: 20000 cases"), out.stdout


def _copy_through(func_name: str, code: bytes, *leading: object) -> tuple[bytes, int]:
    """Runs one of libbsw's copying passes, `func(*leading, in, out, &n)`,
    over `code` in memory; returns what it wrote and n."""
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
    func = getattr(lib, func_name)
    func.argtypes = [ctypes.c_char_p] * len(leading) + [
        ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint32)]
    src = ctypes.create_string_buffer(code, len(code))
    fin = libc.fmemopen(src, len(code), b"r")
    buf, size = ctypes.c_void_p(), ctypes.c_size_t()
    fout = libc.open_memstream(ctypes.byref(buf), ctypes.byref(size))
    n = ctypes.c_uint32()
    assert func(*leading, fin, fout, ctypes.byref(n)) == 0
    libc.fclose(fin)
    libc.fclose(fout)
    out = ctypes.string_at(buf, size.value)
    libc.free(buf)
    return out, n.value


def test_fences_wrap_dpdk_instructions_only() -> None:
    """The switch's copy of the generated code (bsw_exact_access_fence.c)
    fences the DPDK instructions that read or write field bytes through their
    own types, after any label, and leaves alone the calls the header
    replaces and the instructions that touch no field bytes (extract, emit,
    validity), unless they read a metadata field (extract_m its size, emits
    fused with tx the output port)."""
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
    out, n = _copy_through("bsw_exact_access_fence", code, header)
    assert out == want
    assert n == 4


def test_group_chain_calls_the_next_group_at_each_hand_over() -> None:
    """The chaining pass (bsw_group_chain.c) puts BSW_CHAIN(p) between the
    two lines of each hand-over DPDK's codegen writes (a far jump, the end of
    a group that falls through), and nowhere else: not after an instruction
    pointer set that is not followed by a return, not after an increment
    that does not end its function, not after tx (which resets the thread
    and yields)."""
    code = (b"pipeline_func_3(struct rte_swx_pipeline *p)\n{\n"
            b"\tif (!t->hit)\n\n\t\tgoto LABEL_FALSE_0;\n\n"
            b"\t {\n\t\tthread_ip_set(t, &p->instructions[59]);\n\t\treturn;\n\t}\n\n"
            b"LABEL_FALSE_0 : __instr_mov_i_exec(p, t, &pipeline_instructions[232]);\n"
            b"\t\tthread_ip_set(t, &p->instructions[7]);\n\t\tgoto X;\n"
            b"thread_ip_inc(p);\n\t__instr_mov_i_exec(p, t, &pipeline_instructions[233]);\n"
            b"\tthread_ip_reset(p, t);\n\tinstr_rx_exec(p);\n\treturn;\n"
            b"thread_ip_inc(p);\n}\n")
    want = (b"pipeline_func_3(struct rte_swx_pipeline *p)\n{\n"
            b"\tif (!t->hit)\n\n\t\tgoto LABEL_FALSE_0;\n\n"
            b"\t {\n\t\tthread_ip_set(t, &p->instructions[59]);\n\t\tBSW_CHAIN(p);\n"
            b"\t\treturn;\n\t}\n\n"
            b"LABEL_FALSE_0 : __instr_mov_i_exec(p, t, &pipeline_instructions[232]);\n"
            b"\t\tthread_ip_set(t, &p->instructions[7]);\n\t\tgoto X;\n"
            b"thread_ip_inc(p);\n\t__instr_mov_i_exec(p, t, &pipeline_instructions[233]);\n"
            b"\tthread_ip_reset(p, t);\n\tinstr_rx_exec(p);\n\treturn;\n"
            b"thread_ip_inc(p);\nBSW_CHAIN(p);\n}\n")
    out, n = _copy_through("bsw_group_chain", code)
    assert out == want
    assert n == 2
    # No trailing newline, nothing to chain: copied byte for byte.
    assert _copy_through("bsw_group_chain", b"}") == (b"}", 0)


def test_direct_group_chain_names_the_group_and_inlines_single_callers() -> None:
    """The direct form of the pass (bsw_group_chain_direct) calls a group
    compiled in the same code by its name: a far jump's target is in the
    instruction pointer it sets, a fall-through goes to the group numbered
    one more (DPDK's pipeline_adjust() leaves one instruction per group, in
    order). Groups compiled elsewhere (tables, rx, tx) keep BSW_CHAIN. A
    group called from one earlier group only is inlined into it; one called
    from two places (5) or from a later group (3) is not, so no group is
    inlined at two hand-overs and a backward jump cannot recurse into
    itself. DPDK still finds every group by its own name (a wrapper, into
    which gcc may inline the group a second time)."""
    code = (b"#include <x.h>\n\nvoid\npipeline_func_3(struct rte_swx_pipeline *p)\n{\n"
            b"\tif (!t->hit)\n\t\tgoto L;\n\t {\n\t\tthread_ip_set(t, &p->instructions[5]);\n"
            b"\t\treturn;\n\t}\nL : x();\nthread_ip_inc(p);\n}\n\n"
            b"void\npipeline_func_4(struct rte_swx_pipeline *p)\n{\nthread_ip_inc(p);\n}\n\n"
            b"void\npipeline_func_5(struct rte_swx_pipeline *p)\n{\n"
            b"\tif (a)\n\t {\n\t\tthread_ip_set(t, &p->instructions[3]);\n\t\treturn;\n\t}\n"
            b"\tif (b)\n\t {\n\t\tthread_ip_set(t, &p->instructions[2]);\n\t\treturn;\n\t}\n"
            b"thread_ip_inc(p);\n}\n")
    inline = b"static inline __attribute__((always_inline)) void"
    want = (b"#include <x.h>\n\n"
            b"static void bsw_group_3(struct rte_swx_pipeline *p);\n"
            + inline + b" bsw_group_4(struct rte_swx_pipeline *p);\n"
            b"static void bsw_group_5(struct rte_swx_pipeline *p);\n"
            b"static void\nbsw_group_3(struct rte_swx_pipeline *p)\n{\n"
            b"\tif (!t->hit)\n\t\tgoto L;\n\t {\n\t\tthread_ip_set(t, &p->instructions[5]);\n"
            b"\t\tBSW_CHAIN_TO(p, bsw_group_5);\n\t\treturn;\n\t}\nL : x();\nthread_ip_inc(p);\n"
            b"BSW_CHAIN_TO(p, bsw_group_4);\n}\n\n"
            + inline + b"\nbsw_group_4(struct rte_swx_pipeline *p)\n{\nthread_ip_inc(p);\n"
            b"BSW_CHAIN_TO(p, bsw_group_5);\n}\n\n"
            b"static void\nbsw_group_5(struct rte_swx_pipeline *p)\n{\n"
            b"\tif (a)\n\t {\n\t\tthread_ip_set(t, &p->instructions[3]);\n"
            b"\t\tBSW_CHAIN_TO(p, bsw_group_3);\n\t\treturn;\n\t}\n"
            b"\tif (b)\n\t {\n\t\tthread_ip_set(t, &p->instructions[2]);\n\t\tBSW_CHAIN(p);\n"
            b"\t\treturn;\n\t}\nthread_ip_inc(p);\nBSW_CHAIN(p);\n}\n"
            + b"".join(b"\nvoid\npipeline_func_%d(struct rte_swx_pipeline *p)\n{\n\tbsw_group_%d(p);\n}\n"
                       % (g, g) for g in (3, 4, 5)))
    out, n = _copy_through("bsw_group_chain_direct", code)
    assert out == want
    assert n == 6
    # Worded otherwise (no "void" line before a group) or numbered past what
    # the pass tracks, nothing is renamed: the hand-overs stay indirect.
    for other in (code.replace(b"void\npipeline_func_4", b"void pipeline_func_4\npipeline_func_4"),
                  code.replace(b"pipeline_func_5(", b"pipeline_func_70000(")):
        assert _copy_through("bsw_group_chain_direct", other) == _copy_through("bsw_group_chain", other)


def test_group_chain_matches_this_dpdks_codegen() -> None:
    """The pass matches DPDK's hand-overs by their text: if the installed
    DPDK's codegen words them differently, the pipeline would silently run
    through the run loop again (correct, about 10% slower). The codegen's
    format strings must be the ones the pass looks for."""
    src = Path(default_dpdk_include()) / "rte_swx_pipeline.c"
    if not src.exists():
        pytest.fail(f"{src} is missing: run make setup")
    text = src.read_text()
    assert ('"\\t\\tthread_ip_set(t, &p->instructions[%u]);\\n"\n'
            '\t\t\t"\\t\\treturn;\\n"') in text
    assert '"thread_ip_inc(p);\\n");' in text
    assert '"}\\n"' in text
    # The direct form also finds each group's definition by its wording.
    assert ('"void\\n"\n\t\t\t"pipeline_func_%u(struct rte_swx_pipeline *p)\\n"') in text


def test_emit_run_fuses_each_run_of_consecutive_emits() -> None:
    """The emit pass (bsw_emit_run.c) writes each run of two or more emits
    of consecutive instructions, blank lines between them, as one call:
    with the emits fused with tx when the run ends in them (fences kept as
    the fence pass left them). A labelled emit (a jump target) starts a new
    run; a lone emit, an emit of another instruction array, a gap in the
    instruction numbers and everything else are copied unchanged."""
    code = (b"LABEL_END : __instr_hdr_emit_exec(p, t, &pipeline_instructions[10]);\n\n"
            b"\t__instr_hdr_emit_exec(p, t, &pipeline_instructions[11]);\n\n"
            b"\t__instr_hdr_emit_exec(p, t, &pipeline_instructions[12]);\n\n"
            b"\tBSW_FENCE(); __instr_hdr_emit8_tx_exec(p, t, &pipeline_instructions[13]); "
            b"BSW_FENCE();\n"
            b"\tthread_ip_reset(p, t);\n"
            # A lone emit, then a gap in the numbering, then a labelled one.
            b"\t__instr_hdr_emit_exec(p, t, &pipeline_instructions[20]);\n"
            b"\t__instr_mov_i_exec(p, t, &pipeline_instructions[21]);\n"
            b"\t__instr_hdr_emit_exec(p, t, &pipeline_instructions[22]);\n"
            b"\t__instr_hdr_emit_exec(p, t, &pipeline_instructions[24]);\n"
            b"L2 : __instr_hdr_emit_exec(p, t, &pipeline_instructions[25]);\n"
            b"\t__instr_hdr_emit_exec(p, t, &pipeline_instructions[26]);\n"
            b"\t__instr_hdr_emit_tx_exec(p, t, &pipeline_instructions[27]);\n"
            # A run without tx, then an emit of an action's instructions.
            b"\t__instr_hdr_emit_exec(p, t, &pipeline_instructions[30]);\n"
            b"\t__instr_hdr_emit_exec(p, t, &pipeline_instructions[31]);\n"
            b"\t__instr_hdr_emit_exec(p, t, &action_a_instructions[32]);\n")
    want = (b"LABEL_END : BSW_FENCE(); bsw_hdr_emit_run_tx(p, t, &pipeline_instructions[10], 3, "
            b"&pipeline_instructions[13], 8); BSW_FENCE();\n"
            b"\tthread_ip_reset(p, t);\n"
            b"\t__instr_hdr_emit_exec(p, t, &pipeline_instructions[20]);\n"
            b"\t__instr_mov_i_exec(p, t, &pipeline_instructions[21]);\n"
            b"\t__instr_hdr_emit_exec(p, t, &pipeline_instructions[22]);\n"
            b"\t__instr_hdr_emit_exec(p, t, &pipeline_instructions[24]);\n"
            b"L2 : bsw_hdr_emit_run_tx(p, t, &pipeline_instructions[25], 2, "
            b"&pipeline_instructions[27], 1);\n"
            b"\tbsw_hdr_emit_run(p, t, &pipeline_instructions[30], 2);\n"
            b"\t__instr_hdr_emit_exec(p, t, &action_a_instructions[32]);\n")
    out, n = _copy_through("bsw_emit_run", code)
    assert out == want
    assert n == 3
    # A tx emit alone is no run; text without a final newline is kept.
    lone = b"\t__instr_hdr_emit2_tx_exec(p, t, &pipeline_instructions[5]);\n}"
    assert _copy_through("bsw_emit_run", lone) == (lone, 0)


def test_emit_run_matches_this_dpdks_codegen() -> None:
    """The pass finds the deparser by the text DPDK's codegen writes for an
    instruction (after a label or a tab) and by the emit functions' names;
    worded otherwise, the emits would stay one call each (correct, slower)."""
    src = Path(default_dpdk_include()) / "rte_swx_pipeline.c"
    if not src.exists():
        pytest.fail(f"{src} is missing: run make setup")
    text = src.read_text()
    assert 'fprintf(f, "\\n%s : ", data->label);' in text
    assert 'fprintf(f, "\\n\\t");' in text
    assert '"%s(p, t, &pipeline_instructions[%u]);\\n"' in text
    for name in ["__instr_hdr_emit_exec", "__instr_hdr_emit_tx_exec",
                 *(f"__instr_hdr_emit{n}_tx_exec" for n in range(2, 9))]:
        assert f'return "{name}";' in text

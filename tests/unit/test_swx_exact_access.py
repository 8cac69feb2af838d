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

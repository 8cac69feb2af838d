"""The compiled P4 outputs in p4src/build/ match their sources, and (where
p4c-dpdk is installed) the compiler still produces them."""
import shutil
import subprocess
import sys

import pytest

from tests.switch_process import ROOT

# Every program directory of p4src/ with a top-level <name>/<name>.p4.
PROGRAMS = sorted(d.name for d in (ROOT / "p4src").glob("*/") if (d / f"{d.name}.p4").exists())


@pytest.mark.parametrize("program", PROGRAMS)
def test_stamp_matches_sources(program):
    r = subprocess.run([sys.executable, str(ROOT / "scripts/p4build.py"), "--check", program],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("program", PROGRAMS)
def test_outputs_are_loadable(program):
    if not PROGRAMS:
        pytest.skip("no P4 program in p4src yet")
    from google.protobuf import text_format
    from p4.config.v1 import p4info_pb2

    from bng_switch.device import prepare
    d = ROOT / "p4src" / "build" / program
    p4info = text_format.Parse((d / f"{program}.p4info.txtpb").read_text(), p4info_pb2.P4Info())
    pc = prepare(p4info, (d / f"{program}.device_config.json").read_bytes())
    assert pc.pmap.tables and pc.pmap.controller_headers


@pytest.mark.parametrize("program", PROGRAMS)
def test_p4c_dpdk_reproduces_the_committed_spec(program, tmp_path):
    p4c = shutil.which("p4c-dpdk")
    if p4c is None:
        pytest.skip("p4c-dpdk not installed (it is in no package registry; see README 'Compiling P4')")
    out = tmp_path / "x.spec"
    subprocess.run([p4c, "--arch", "pna", "-I", str(ROOT / "p4src/include"), "-o", str(out),
                    str(ROOT / "p4src" / program / f"{program}.p4")], check=True)
    committed = (ROOT / "p4src/build" / program / f"{program}.spec").read_text()
    assert out.read_text() == committed

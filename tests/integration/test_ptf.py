"""The BNG PTF suite (ptf-tests/) against the switch running the compiled
bng program: run by the standard `ptf` runner through ptf-tests/run_ptf.py,
once for each way the switch can run it (its config key execution): SWX's
instruction groups, and straight-line C generated from the spec
(bng_switch/straight_codegen.py; run_ptf.py fails if the switch did not
run that)."""
import subprocess
import sys

import pytest

from tests.support import ROOT, program_files

pytestmark = pytest.mark.root


@pytest.mark.parametrize("execution", ["swx", "straight"])
def test_ptf_suite(execution):
    program_files("bng")
    r = subprocess.run([sys.executable, str(ROOT / "ptf-tests/run_ptf.py"), "--execution", execution],
                       capture_output=True, text=True, timeout=1800)
    print(r.stdout[-20000:])
    print(r.stderr[-20000:])
    assert r.returncode == 0, "PTF suite failed (output above)"

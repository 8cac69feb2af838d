"""The BNG PTF suite (ptf-tests/) against the switch running the compiled
bng program: run by the standard `ptf` runner through ptf-tests/run_ptf.py."""
import subprocess
import sys

import pytest

from tests.support import ROOT, program_files

pytestmark = pytest.mark.root


def test_ptf_suite():
    program_files("bng")
    r = subprocess.run([sys.executable, str(ROOT / "ptf-tests/run_ptf.py")], capture_output=True,
                       text=True, timeout=1800)
    print(r.stdout[-20000:])
    print(r.stderr[-20000:])
    assert r.returncode == 0, "PTF suite failed (output above)"

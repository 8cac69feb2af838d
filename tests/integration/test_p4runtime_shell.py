"""p4runtime-shell, unmodified from PyPI, connects to the switch, lists
tables, inserts and reads back an entry, reads a counter and the direct
counter of an entry."""
import subprocess

import pytest

from bng_lab import netlab
from tests.support import ROOT, SwitchProcess, program_files

pytestmark = pytest.mark.root
SHELL_PY = ROOT / ".venv-shell" / "bin" / "python"


def test_p4runtime_shell_session(tmp_path):
    if not SHELL_PY.exists():
        pytest.fail(".venv-shell missing: `make setup` installs p4runtime-shell there")
    lab = netlab.NetLab()
    sw = None
    try:
        a, _ = lab.veth("sh1", "shp1")
        b, _ = lab.veth("sh2", "shp2")
        sw = SwitchProcess(tmp_path, f"sh{lab.tag}", [{"id": 1, "type": "af_packet", "iface": a},
                                                     {"id": 2, "type": "af_packet", "iface": b}]).start()
        p4info, device_config = program_files("switch_test")
        out = subprocess.run([str(SHELL_PY), str(ROOT / "tests/integration/shell_session.py"), sw.address,
                              str(p4info), str(device_config)], capture_output=True, text=True, timeout=180)
        assert out.returncode == 0, out.stdout + out.stderr + sw.log()
        lines = out.stdout.splitlines()
        tables = next(line for line in lines if line.startswith("TABLES")).split()[1:]
        assert "MainControlImpl.l2_fwd" in tables and "MainControlImpl.ipv4_route" in tables
        assert "ENTRY 020000000042 02" in lines
        assert any(line.startswith("COUNTER 1 ") for line in lines)
        assert "DIRECT 020000000043 0 0" in lines
        assert "LEFT 0" in lines
    finally:
        if sw is not None:
            sw.stop()
        lab.cleanup()

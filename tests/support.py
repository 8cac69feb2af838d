"""Test helpers shared by unit and integration tests."""
from __future__ import annotations

from pathlib import Path

import pytest

from bng_lab import switch_process
from bng_lab.switch_process import ROOT, SwitchProcess  # noqa: F401  (re-exported for tests)


def program_files(program: str) -> tuple[Path, Path]:
    """A compiled program's files, or skip the test with the reason."""
    try:
        return switch_process.program_files(program)
    except switch_process.MissingProgram as e:
        pytest.skip(str(e))

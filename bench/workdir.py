"""Scratch directories of the benchmarks: compiled pipelines, pcaps, lab
logs and databases (tens of MB a run). Removed when the process exits, so
that repeated `make bench` runs do not fill /tmp; BENCH_KEEP_WORK=1 keeps
them for a look after a failure."""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path


def work_dir(prefix: str) -> Path:
    """A fresh directory under the system's temporary directory, removed at
    exit unless BENCH_KEEP_WORK=1."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    if os.environ.get("BENCH_KEEP_WORK") == "1":
        print(f"bench: keeping {path}", flush=True)
    else:
        atexit.register(shutil.rmtree, path, True)
    return path

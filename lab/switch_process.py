"""Run the switch (python -m bng_switch) as a child process."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "p4src" / "build"


def free_tcp_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class MissingProgram(FileNotFoundError):
    pass


def program_files(program: str, build: Path = BUILD) -> tuple[Path, Path]:
    """P4Info and device config of a compiled program of p4src/ (or of a
    copy of p4src/build kept elsewhere, such as bench_ab's baseline)."""
    d = build / program
    files = d / f"{program}.p4info.txtpb", d / f"{program}.device_config.json"
    if not all(f.exists() for f in files):
        raise MissingProgram(f"p4src/build/{program} has no compiled outputs: the program is not in this tree yet")
    return files


class SwitchProcess:
    def __init__(self, tmp: Path, name: str, ports: list[dict], workers: int = 1, cpu_port: int = 0,
                 idle_us: int = 100, **config):
        """config: further switch config keys (e.g. pipeline_mode)."""
        self.tmp = tmp
        self.address = f"127.0.0.1:{free_tcp_port()}"
        self.config = {
            "name": name, "device_id": 1, "grpc_address": self.address, "workers": workers,
            "idle_us": idle_us, "cpu_port": cpu_port, "ports": ports,
            "work_dir": str(tmp / "work"), "mempool_mbufs": 8192, **config,
        }
        self.config_path = tmp / f"{name}.yaml"
        self.config_path.write_text(yaml.safe_dump(self.config))
        self.proc: subprocess.Popen | None = None
        self.output: list[str] = []

    def start(self, timeout: float = 60.0) -> "SwitchProcess":
        """Start and wait for "ready". DPDK 22.11's af_packet PMD names its
        PACKET_FANOUT group (getpid() ^ ifindex) & 0xffff, and groups are
        shared by every process of a network namespace: a second switch
        whose pid and interface happen to give the same number cannot open
        its port (EINVAL). A new process has a new pid, so start once more."""
        for attempt in (1, 2):
            try:
                return self._start(timeout)
            except RuntimeError as e:
                if attempt == 2 or "could not set PACKET_FANOUT" not in str(e):
                    raise
                self.output.clear()
        raise AssertionError("unreachable")

    def _start(self, timeout: float) -> "SwitchProcess":
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bng_switch", "--config", str(self.config_path), "--stats-interval", "1"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"})
        ready = threading.Event()

        def pump():
            for line in self.proc.stdout:
                self.output.append(line)
                if "bng-switch ready" in line:
                    ready.set()
        pumper = threading.Thread(target=pump, daemon=True)
        pumper.start()
        deadline = time.time() + timeout
        while not ready.wait(0.2):
            if self.proc.poll() is not None or time.time() > deadline:
                self.stop()
                pumper.join(timeout=5)          # every line of its output, for the message
                raise RuntimeError("switch did not start:\n" + "".join(self.output[-40:]))
        return self

    def stop(self) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def log(self) -> str:
        return "".join(self.output)

"""The controller and the subscriber emulator as child processes."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import yaml

from .cpu_layout import taskset
from .switch_process import ROOT

EMULATOR = ROOT / "emulator" / "build" / "subemu"


class ProcessError(RuntimeError):
    pass


class LoggedProcess:
    """A child whose output is kept (and optionally echoed) line by line."""

    def __init__(self, name: str, echo: bool = False):
        self.name = name
        self.echo = echo
        self.proc: subprocess.Popen | None = None
        self.output: list[str] = []
        self._cond = threading.Condition()

    def _launch(self, cmd: list[str], env: dict | None = None, cwd: Path = ROOT) -> None:
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=cwd,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
                                     start_new_session=True)
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        for line in self.proc.stdout:
            with self._cond:
                self.output.append(line)
                self._cond.notify_all()
            if self.echo:
                sys.stdout.write(f"[{self.name}] {line}")
                sys.stdout.flush()

    def wait_for(self, text: str, timeout: float, start: int = 0) -> int:
        """Index of the first output line from `start` on containing text."""
        deadline = time.time() + timeout
        with self._cond:
            while True:
                for i in range(start, len(self.output)):
                    if text in self.output[i]:
                        return i
                if self.proc.poll() is not None:
                    raise ProcessError(f"{self.name} exited ({self.proc.returncode}) before {text!r}:\n"
                                       + "".join(self.output[-40:]))
                left = deadline - time.time()
                if left <= 0:
                    raise ProcessError(f"{self.name}: no {text!r} within {timeout} s:\n" + "".join(self.output[-40:]))
                self._cond.wait(min(left, 0.5))

    def send_signal(self, sig: int) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)

    def stop(self, timeout: float = 20.0, sig: int = signal.SIGTERM) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.send_signal(signal.SIGKILL)
                self.proc.wait()
        return self.proc.returncode

    def log(self) -> str:
        return "".join(self.output)


class ControllerProcess(LoggedProcess):
    def __init__(self, tmp: Path, name: str, config: dict, echo: bool = False):
        super().__init__(name, echo)
        self.tmp = tmp
        self.config = config
        self.config_path = tmp / f"{name}.yaml"
        self.config_path.write_text(yaml.safe_dump(config))
        self.api_socket = config["api_socket"]

    def start(self, timeout: float = 60.0) -> "ControllerProcess":
        """Start and wait until the controller has reconciled the switch."""
        self._launch([sys.executable, "-m", "bng_controller", "--config", str(self.config_path)])
        deadline = time.time() + timeout
        while True:
            if self.proc.poll() is not None:
                raise ProcessError(f"{self.name} exited ({self.proc.returncode}):\n" + "".join(self.output[-40:]))
            try:
                if self.api("status").get("ready"):
                    return self
            except (OSError, ValueError):
                pass                                  # API not up yet
            if time.time() > deadline:
                raise ProcessError(f"{self.name}: not ready within {timeout} s:\n" + "".join(self.output[-40:]))
            time.sleep(0.2)

    def kill(self) -> None:
        """A crash: no shutdown work at all."""
        self.send_signal(signal.SIGKILL)
        self.proc.wait()

    def api(self, cmd: str, **args) -> dict:
        from bng_controller.bngctl import ApiClient
        c = ApiClient(self.api_socket)
        try:
            return c.call(cmd, **args)
        finally:
            c.close()


class EmulatorProcess(LoggedProcess):
    """subemu inside a namespace; its JSON status file is the way to watch it."""

    def __init__(self, tmp: Path, name: str, netns: str, iface: str, args: list[str], echo: bool = False,
                 cpus: list[int] | tuple[int, ...] = ()):
        """cpus: where it runs (empty: anywhere)."""
        super().__init__(name, echo)
        if not EMULATOR.exists():
            raise ProcessError(f"{EMULATOR} is not built (make -C emulator)")
        self.status_file = tmp / f"{name}.status.json"
        self.report_file = tmp / f"{name}.report.json"
        self.cmd = ["ip", "netns", "exec", netns, str(EMULATOR), "--iface", iface,
                    "--status-file", str(self.status_file), "--report", str(self.report_file), *args]
        if cpus:
            self.cmd = taskset(cpus, self.cmd)

    def start(self) -> "EmulatorProcess":
        # an earlier run's files under the same name would answer status() and
        # wait_status() before this run has written anything
        self.status_file.unlink(missing_ok=True)
        self.report_file.unlink(missing_ok=True)
        self._launch(self.cmd)
        return self

    def status(self) -> dict:
        try:
            return json.loads(self.status_file.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return {}

    def wait_status(self, pred, timeout: float, what: str = "condition") -> dict:
        deadline = time.time() + timeout
        while True:
            st = self.status()
            if st and pred(st):
                return st
            if self.proc.poll() is not None:
                raise ProcessError(f"{self.name} exited ({self.proc.returncode}) waiting for {what}:\n"
                                   + "".join(self.output[-30:]))
            if time.time() > deadline:
                raise ProcessError(f"{self.name}: no {what} within {timeout} s; last status: "
                                   f"{ {k: st.get(k) for k in ('established', 'failed', 'flaps')} }\n"
                                   + "".join(self.output[-20:]))
            time.sleep(0.2)

    def report(self) -> dict:
        return json.loads(self.report_file.read_text())

    def wait(self, timeout: float) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            raise ProcessError(f"{self.name} did not finish within {timeout} s:\n" + "".join(self.output[-30:]))

"""The controller's log output never blocks the caller (the event loop)."""
from __future__ import annotations

import json
import logging
import threading
import time

from bng_controller import log_output
from bng_controller.__main__ import JsonFormatter


class BlockedOutput(logging.Handler):
    """A stdout whose reader has stopped reading, until `flowing` is set."""

    def __init__(self):
        super().__init__()
        self.flowing = threading.Event()
        self.lines: list[str] = []

    def emit(self, record):
        self.flowing.wait()
        self.lines.append(self.format(record))


def test_logging_does_not_wait_for_blocked_output_and_says_what_it_dropped():
    out = BlockedOutput()
    out.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    handler, listener = log_output.start(out, logging.INFO, max_queued=50)
    try:
        log = logging.getLogger("bng.test")
        t0 = time.monotonic()
        for i in range(5000):
            log.info("line %d", i)
        assert time.monotonic() - t0 < 2.0              # 5000 calls, none of them waited
        assert handler.dropped > 4000
        out.flowing.set()
        time.sleep(0.2)
        log.info("after")
    finally:
        listener.stop()
        logging.basicConfig(force=True, handlers=[logging.StreamHandler()])
    assert out.lines[0] == "INFO line 0"
    reports = [ln for ln in out.lines if ln.endswith("log records dropped: log output was blocked")]
    assert sum(int(ln.split()[1]) for ln in reports) == handler.dropped   # every drop told, once
    assert out.lines[-1] == "INFO after"


def test_tracebacks_cross_the_queue_apart_from_the_message():
    out = BlockedOutput()
    out.flowing.set()
    out.setFormatter(JsonFormatter())
    _, listener = log_output.start(out, logging.INFO)
    try:
        try:
            raise ValueError("boom")
        except ValueError:
            logging.getLogger("bng.test").exception("failed for %s", "session 7")
    finally:
        listener.stop()
        logging.basicConfig(force=True, handlers=[logging.StreamHandler()])
    [line] = out.lines
    d = json.loads(line)
    assert d["msg"] == "failed for session 7" and "ValueError: boom" in d["exc"]

"""Log output that cannot hold up the event loop.

Every session's protocol timers run on the controller's one asyncio loop.
A log call writes to stdout, and when whatever reads stdout falls behind
(a pipe to a supervisor or a test harness, a slow terminal), the write
blocks and with it every session. (py-spy caught the loop inside such a
write for 4 s of a stall in the lossy-line lab test on a loaded machine.)
So log records go through a bounded queue to a thread that does the
writing. When that thread cannot keep up, records are dropped rather than
queued without end, and the number dropped is logged once output flows
again.
"""
from __future__ import annotations

import copy
import logging
import queue
from logging.handlers import QueueHandler, QueueListener


class DroppingQueueHandler(QueueHandler):
    """Enqueues without ever blocking; counts what did not fit."""

    def __init__(self, q: queue.Queue):
        super().__init__(q)
        self.dropped = 0
        self._reported = 0

    def prepare(self, record: logging.LogRecord) -> logging.LogRecord:
        """The message with its arguments merged (they may change before
        the writer gets to them) and the traceback as text, kept apart
        from the message so the target's formatter places it."""
        record = copy.copy(record)
        record.msg, record.args = record.getMessage(), None
        if record.exc_info:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        record.exc_info = None
        return record

    def enqueue(self, record: logging.LogRecord) -> None:
        try:
            if self.dropped > self._reported:
                n = self.dropped - self._reported
                self.queue.put_nowait(logging.makeLogRecord({
                    "name": __name__, "levelno": logging.WARNING, "levelname": "WARNING",
                    "msg": "%d log records dropped: log output was blocked", "args": (n,)}))
                self._reported += n
            self.queue.put_nowait(record)
        except queue.Full:
            self.dropped += 1


def start(target: logging.Handler, level: int, max_queued: int = 10000) -> tuple[DroppingQueueHandler, QueueListener]:
    """Route the root logger through a queue to `target`, written by a
    thread of its own. Stop the returned listener at exit: it writes out
    what is still queued."""
    handler = DroppingQueueHandler(queue.Queue(max_queued))
    listener = QueueListener(handler.queue, target, respect_handler_level=True)
    logging.basicConfig(level=level, handlers=[handler], force=True)
    listener.start()
    return handler, listener

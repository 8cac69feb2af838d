"""The bounded queue of accounting records waiting for a RADIUS server.

Accounting is the billing record: a Stop lost in a server outage is money
lost, an Interim lost is only a missing progress report (the next Interim
or the Stop carries the totals). So the queue is bounded for memory, and
when it is full it sheds the oldest Interim first; only a queue full of
Starts and Stops loses one of those (the oldest Start, then the oldest
Stop). Records keep their order: one that failed goes back to where its
sequence number puts it, ahead of the records queued after it.

Several records are in flight at once (the RADIUS client's workers), but
never two of one session: a session's Start, Interims and Stop reach the
server one after the other, each once the one before was answered (a
Start overtaken by its Stop would leave the session open on the server).
Accounting-On and -Off are barriers: nothing else is in flight with them,
and nothing queued after one goes before it (a Start that the server saw
before the Accounting-On would be closed by it).
"""
from __future__ import annotations

import asyncio
import itertools
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

# Drop order when full: lower rank goes first.
RANK_INTERIM = 0
RANK_START = 1
RANK_STOP = 2          # Stop, and Accounting-On/Off


@dataclass
class AcctItem:
    """One record to deliver. `payload` is whatever the sender builds the
    packet from; `queued_at` (monotonic) drives Acct-Delay-Time."""
    payload: Any
    rank: int
    queued_at: float = field(default_factory=time.monotonic)
    seq: int = 0
    attempts: int = 0
    # what orders it: a session (its Acct-Session-Id), BARRIER, or "" for
    # no order
    key: str | None = ""


BARRIER = None


class AcctQueue:
    """FIFO with a bound, a drop policy and a way to wait until drained."""

    def __init__(self, maxlen: int) -> None:
        if maxlen < 1:
            raise ValueError("accounting queue needs room for at least one record")
        self.maxlen = maxlen
        self._items: deque[AcctItem] = deque()
        self._seq = itertools.count()
        self._in_flight = 0
        self._busy: set[str] = set()          # sessions with a record in flight
        self._barrier_in_flight = False
        self._waiters: list[asyncio.Future] = []
        self.dropped = 0

    def __len__(self) -> int:
        return len(self._items)

    @property
    def in_flight(self) -> int:
        return self._in_flight

    def _drop_one_for(self, item: AcctItem) -> AcctItem | None:
        """Make room for `item`; the record given up (maybe `item` itself)."""
        for rank in range(RANK_INTERIM, item.rank + 1):
            for i, queued in enumerate(self._items):
                if queued.rank == rank:
                    del self._items[i]
                    return queued
        return item

    def put_nowait(self, item: AcctItem) -> AcctItem | None:
        """Queue a new record; returns the record dropped to make room, if any."""
        item.seq = next(self._seq)
        dropped = None
        if len(self._items) >= self.maxlen:
            dropped = self._drop_one_for(item)
            self.dropped += 1
        if dropped is not item:
            self._items.append(item)
        self._notify()
        return dropped

    def requeue(self, item: AcctItem) -> None:
        """Put back a record whose delivery failed, in sequence order. It
        does not count against the bound a second time: it was admitted."""
        index = next((i for i, queued in enumerate(self._items) if queued.seq > item.seq),
                     len(self._items))
        self._items.insert(index, item)
        self._landed(item)

    def _next(self) -> int | None:
        """Index of the oldest record that may go now (see the module's
        docstring), None if none may."""
        if self._barrier_in_flight:
            return None
        held: set[str] = set()          # sessions whose older record is waiting
        for i, item in enumerate(self._items):
            key = item.key
            if key is BARRIER:
                return i if i == 0 and not self._in_flight else None
            if key and (key in self._busy or key in held):
                held.add(key)
                continue
            return i
        return None

    async def get(self) -> AcctItem:
        """The oldest record that may go now, counted in flight until `done`
        or `requeue`."""
        while (i := self._next()) is None:
            await self._changed()
        item = self._items[i]
        del self._items[i]
        self._in_flight += 1
        if item.key is BARRIER:
            self._barrier_in_flight = True
        elif item.key:
            self._busy.add(item.key)
        return item

    def done(self, item: AcctItem) -> None:
        self._landed(item)

    def _landed(self, item: AcctItem) -> None:
        """`item` is no longer in flight (delivered or put back)."""
        self._in_flight -= 1
        if item.key is BARRIER:
            self._barrier_in_flight = False
        elif item.key:
            self._busy.discard(item.key)
        self._notify()

    def drain_all(self) -> list[AcctItem]:
        """Take every queued record out (on close)."""
        items = list(self._items)
        self._items.clear()
        self._notify()
        return items

    async def wait_empty(self) -> None:
        """Return when nothing is queued and nothing is in flight."""
        while self._items or self._in_flight:
            await self._changed()

    async def _changed(self) -> None:
        """Return at the queue's next change. One event loop, no threads: a
        list of futures woken on every change is all the synchronisation
        needed."""
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        finally:
            if waiter in self._waiters:
                self._waiters.remove(waiter)

    def _notify(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

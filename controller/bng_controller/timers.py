"""One timer heap for every session: 40k subscribers with LCP, NCP, echo
and accounting timers cost one heap entry each, not one asyncio handle per
timer. Entries are never removed; a stale one (its owner rescheduled) is
skipped when it comes up."""
from __future__ import annotations

import asyncio
import heapq
import itertools
from typing import Callable, Protocol


class Timed(Protocol):
    scheduled: float | None

    def next_deadline(self) -> float | None: ...


class TimerHeap:
    def __init__(self, fire: Callable[[Timed], None], clock: Callable[[], float]):
        self._heap: list[tuple[float, int, Timed]] = []
        self._seq = itertools.count()
        self._fire = fire
        self._clock = clock
        self._wake = asyncio.Event()
        self._sleeping_until = float("inf")

    def schedule(self, obj: Timed) -> None:
        """(Re)arm obj at its next_deadline(); a later deadline than the one
        armed costs nothing until the armed one comes up."""
        d = obj.next_deadline()
        if d is None:
            obj.scheduled = None
            return
        if obj.scheduled is not None and obj.scheduled <= d:
            return
        obj.scheduled = d
        heapq.heappush(self._heap, (d, next(self._seq), obj))
        if d < self._sleeping_until:
            self._wake.set()

    def __len__(self) -> int:
        return len(self._heap)

    async def run(self) -> None:
        while True:
            now = self._clock()
            while self._heap and self._heap[0][0] <= now:
                d, _, obj = heapq.heappop(self._heap)
                if obj.scheduled != d:
                    continue                      # stale
                obj.scheduled = None
                self._fire(obj)                   # fires due timers, reschedules
            delay = self._heap[0][0] - now if self._heap else 3600.0
            self._sleeping_until = now + delay
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), max(delay, 0.0))
            except asyncio.TimeoutError:
                pass
            self._sleeping_until = float("inf")

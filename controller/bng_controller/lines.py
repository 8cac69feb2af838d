"""Subscriber lines and the identifiers handed out on them.

A line is what the access network gives a subscriber: (port, s-tag,
c-tag). The data plane keys PPPoE sessions by line id, so every line a
PADR arrives on gets an id (and a line_map entry) before its PADS leaves.
PPPoE session ids are unique per line (RFC 2516 only asks for uniqueness
per client MAC; per line is stricter and what the data plane keys on).
"""
from __future__ import annotations

import collections
import random
from dataclasses import dataclass, field


class Exhausted(Exception):
    pass


class IndexAllocator:
    """Integers lo..hi, handed out lowest-free-first from a free list, with
    released ones reused last (FIFO) so a counter index is not reused while
    its previous owner's final counters may still be read."""

    def __init__(self, lo: int, hi: int, name: str):
        self.name = name
        self.lo, self.hi = lo, hi
        self._free = collections.deque(range(lo, hi + 1))
        self._free_set = set(self._free)
        self.used: set[int] = set()

    def allocate(self) -> int:
        while self._free:
            i = self._free.popleft()
            if i in self._free_set:
                self._free_set.discard(i)
                self.used.add(i)
                return i
        raise Exhausted(f"no free {self.name} ({self.hi - self.lo + 1} in all)")

    def take(self, i: int) -> bool:
        if i in self.used or not self.lo <= i <= self.hi:
            return False
        self._free_set.discard(i)
        self.used.add(i)
        return True

    def release(self, i: int) -> None:
        if i in self.used:
            self.used.discard(i)
            self._free.append(i)
            self._free_set.add(i)

    @property
    def in_use(self) -> int:
        return len(self.used)


@dataclass
class Line:
    line_id: int
    port: int
    s_vid: int
    c_vid: int
    s_tpid: int
    sessions: set[int] = field(default_factory=set)   # PPPoE session ids in use
    installed: bool = False


class LineTable:
    MAX_SESSION_ID = 0xFFFE          # 0 and 0xffff are reserved (RFC 2516)

    def __init__(self, max_lines: int, rng: random.Random | None = None):
        self.ids = IndexAllocator(1, max_lines - 1, "line ids")
        self.by_key: dict[tuple[int, int, int], Line] = {}
        self.by_id: dict[int, Line] = {}
        self.rng = rng or random.Random()

    def get(self, port: int, s_vid: int, c_vid: int) -> Line | None:
        return self.by_key.get((port, s_vid, c_vid))

    def get_or_create(self, port: int, s_vid: int, c_vid: int, s_tpid: int) -> Line:
        line = self.by_key.get((port, s_vid, c_vid))
        if line is None:
            line = Line(self.ids.allocate(), port, s_vid, c_vid, s_tpid)
            self._add(line)
        return line

    def restore(self, line_id: int, port: int, s_vid: int, c_vid: int, s_tpid: int) -> Line:
        """A line found on the switch or in the session store."""
        line = self.by_key.get((port, s_vid, c_vid))
        if line is not None:
            return line
        if not self.ids.take(line_id):
            raise Exhausted(f"line id {line_id} already in use")
        line = Line(line_id, port, s_vid, c_vid, s_tpid, installed=True)
        self._add(line)
        return line

    def _add(self, line: Line) -> None:
        self.by_key[(line.port, line.s_vid, line.c_vid)] = line
        self.by_id[line.line_id] = line

    def new_session_id(self, line: Line) -> int:
        if len(line.sessions) >= self.MAX_SESSION_ID:
            raise Exhausted(f"line {line.line_id} has no free PPPoE session id")
        while True:
            sid = self.rng.randint(1, self.MAX_SESSION_ID)
            if sid not in line.sessions:
                line.sessions.add(sid)
                return sid

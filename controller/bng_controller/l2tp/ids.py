"""Tunnel and session identifiers: 16-bit, non-zero, unique while in use
(RFC 2661 5.3: 0 is never assigned)."""
from __future__ import annotations

import random


class IdAllocator:
    """Hands out ids from a cursor that only moves forward, so an id freed
    now comes back only after the other 65534: a late message for a closed
    session or tunnel does not reach its successor. Allocation is O(1)
    until the space is dense."""

    def __init__(self, rng: random.Random | None = None, max_id: int = 0xFFFF):
        self.max_id = max_id
        self.used: set[int] = set()
        self._next = (rng or random.SystemRandom()).randint(1, max_id)

    def allocate(self) -> int | None:
        """A free id, or None when all are in use."""
        used = self.used
        if len(used) >= self.max_id:
            return None
        i = self._next
        m = self.max_id
        while i in used:
            i = i % m + 1
        used.add(i)
        self._next = i % m + 1
        return i

    def reserve(self, i: int) -> bool:
        """Take a specific id (a restored tunnel or session); False if taken."""
        if i in self.used or not 1 <= i <= self.max_id:
            return False
        self.used.add(i)
        return True

    def release(self, i: int) -> None:
        self.used.discard(i)

    def __len__(self) -> int:
        return len(self.used)

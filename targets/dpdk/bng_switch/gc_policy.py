"""Keep the table store out of Python's cyclic garbage collector.

The store holds every entry ever written (a TableEntry message and its
pipeline bytes, a few tracked objects each). CPython's full collections scan
all of them, so with 100k entries a Write RPC every few batches stalled for
a pause that grew with the table (measured: 15 ms batches of 1000 inserts
with every eighth one taking up to 120 ms at 90k entries; 42k entries/s
instead of 64k/s with the collector off).

After each commit the committer calls `settle()`: what is alive then moves
to the permanent generation (gc.freeze), so collections only look at what
was allocated since. Entries freed later by their reference counts go as
usual; only objects in reference cycles that were alive at a freeze and
die afterwards would stay, so every `full_every_s` one full collection
runs over everything (unfreeze, collect, freeze) and reports its pause.
"""
from __future__ import annotations

import gc
import logging
import time

log = logging.getLogger("bng_switch.gc")


class GcPolicy:
    def __init__(self, full_every_s: float = 600.0):
        self.full_every_s = full_every_s
        self._last_full = time.monotonic()
        self.stats = {"freezes": 0, "full_collections": 0, "last_full_ms": 0.0}

    def settle(self) -> None:
        """Freeze what is alive now; now and then, first a full collection."""
        now = time.monotonic()
        if now - self._last_full >= self.full_every_s:
            self._last_full = now
            t0 = time.perf_counter()
            gc.unfreeze()
            found = gc.collect()
            ms = (time.perf_counter() - t0) * 1e3
            self.stats["full_collections"] += 1
            self.stats["last_full_ms"] = round(ms, 1)
            log.debug("full collection: %d unreachable objects, %.1f ms", found, ms)
        gc.freeze()
        self.stats["freezes"] += 1

"""The switch's GC policy: long-lived state leaves the collector's scans,
and cyclic garbage is still reclaimed by the periodic full collection."""
import gc
import weakref

from bng_switch.gc_policy import GcPolicy


class Node:
    def __init__(self):
        self.other = self


def test_settle_freezes_what_is_alive():
    gc.unfreeze()
    try:
        kept = [Node() for _ in range(1000)]
        GcPolicy(full_every_s=3600).settle()
        assert gc.get_freeze_count() >= len(kept)
    finally:
        gc.unfreeze()


def test_cycle_frozen_alive_then_dropped_is_collected_by_the_full_pass():
    gc.unfreeze()
    try:
        policy = GcPolicy(full_every_s=3600)
        cycle = Node()
        ref = weakref.ref(cycle)
        policy.settle()                    # frozen while alive
        del cycle
        gc.collect()
        assert ref() is not None           # frozen objects are not collected...
        policy.full_every_s = 0
        policy.settle()                    # ...until the periodic full pass
        assert ref() is None
        assert policy.stats["full_collections"] == 1 and gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()

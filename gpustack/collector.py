"""The cyclic garbage collector, paused around the stages that allocate most and make (almost) no cycles.

Loading, validating, compiling, writing and simulating a fleet-sized blueprint allocate millions of small
containers. Every 700 allocations CPython runs a collection, and every so often a full one that walks every
object alive, the blueprint and the plan among them: at 1,000 pools that was a third of compile's time and
grew faster than the blueprint. These stages leave no cyclic garbage except jsonschema's error objects (a few
MB at fleet size, collected when the pause ends); reference counting frees everything else as it goes, so a
pause costs no memory that matters. `tests/test_collector.py` measures both.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused() -> Iterator[None]:
    """No cyclic collection inside; the collector as it was afterwards (pauses nest)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()

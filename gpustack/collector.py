"""The cyclic garbage collector, paused around the stages that allocate most and make no cycles.

Loading, validating, compiling, writing and simulating a fleet-sized blueprint allocate millions of small
containers. Every 700 allocations CPython runs a collection, and every so often a full one that walks every
object alive, the blueprint and the plan among them: at 1,000 pools that was a third of compile's time and
grew faster than the blueprint. Reference counting frees what these stages drop as they go; the only cycles
they make on a valid blueprint are one Jinja sandbox per distinct template (schema.py decides the schema's `if`
conditions itself: jsonschema's way made an error object, a cycle, per failed condition, and held to the end of
a pause they doubled validation's peak memory). `tests/test_collector.py` measures what each stage leaves.
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

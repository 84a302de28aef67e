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


class Pause:
    """A pause in progress; set `acyclic` once the block knows that what it leaves alive holds no cycle."""

    __slots__ = ("acyclic",)

    def __init__(self, acyclic: bool) -> None:
        self.acyclic = acyclic


@contextmanager
def paused(*, acyclic: bool = False) -> Iterator[Pause]:
    """No cyclic collection inside; the collector as it was afterwards (pauses nest).

    `acyclic` (or the yielded Pause's, set inside): what the block leaves alive holds no cycle (the reader's plain
    dicts, lists and path tuples; a validation that rendered no template). Everything a pause allocates is young to
    the collector, and the first allocation after the pause runs a young collection that walks all of it: 20 ms of
    validate's 300 at 10,000 nodes, to find nothing. So when such a block ends without an error and the collector
    comes back on, the young objects are handed to the oldest generation unwalked (`gc.freeze()` then
    `gc.unfreeze()`, which also resets the young count); a full collection still walks them. Besides the block's own
    objects that hands over only the caller's young ones (fewer than 700 since its last young collection, and the
    survivors of up to ten before it), whose cycles, if any, then wait for a full collection. Where something else
    has frozen objects (`gc.get_freeze_count()`), unfreezing would thaw them too, and where the interpreter has no
    `gc.freeze` (not CPython): there the collector is just switched back on.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    pause = Pause(acyclic)
    hand_over = False
    try:
        yield pause
        hand_over = pause.acyclic
    finally:
        if was_enabled:
            if hand_over and _CAN_FREEZE and gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()


_CAN_FREEZE = hasattr(gc, "freeze") and hasattr(gc, "get_freeze_count")  # CPython 3.7 on

"""What each GPU of a pool's nodes is set to: MIG off, or the MIG instances it is cut into."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from gpustack.model import NodePool, SharingStrategy

MIG_OFF = "MIG off"
MIG_EMPTY = "MIG on, no instances"

GpuState = tuple[tuple[str, int], ...] | str  # sorted profile counts, or one of the two words above


def layout_text(instances: Mapping[str, int]) -> str:
    return "{" + ", ".join(f"{profile}: {count}" for profile, count in instances.items()) + "}"


def gpu_states(pool: NodePool) -> dict[int, tuple[GpuState, str]]:
    """GPU index -> (a comparable state, how to show it); order-insensitive so a reordered layout is no change."""
    count = pool.gpus_per_node
    mig = pool.sharing.mig
    if pool.sharing.strategy is not SharingStrategy.MIG or mig is None:
        return {index: (MIG_OFF, MIG_OFF) for index in range(count)}
    states: dict[int, tuple[GpuState, str]] = {index: (MIG_EMPTY, MIG_EMPTY) for index in range(count)}
    for group in mig.groups:
        devices = range(count) if group.devices is None else [d for d in group.devices if d < count]
        instances = group.instances
        for index in devices:
            # A group left whole has MIG off: to the MIG manager the same as a GPU of a pool without MIG.
            cut = (tuple(sorted(instances.items())), layout_text(instances))
            states[index] = (MIG_OFF, MIG_OFF) if group.whole else cut
    return states


def index_ranges(indexes: Iterable[int]) -> str:
    """[0, 1, 2, 3, 6] -> '0-3, 6'."""
    ordered = sorted(set(indexes))
    parts: list[str] = []
    start = previous = None
    for index in ordered:
        if previous is not None and index == previous + 1:
            previous = index
            continue
        if start is not None:
            parts.append(str(start) if start == previous else f"{start}-{previous}")
        start = previous = index
    if start is not None:
        parts.append(str(start) if start == previous else f"{start}-{previous}")
    return ", ".join(parts)

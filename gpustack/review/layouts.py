"""What each GPU of a pool's nodes is set to: MIG off, or the MIG instances it is cut into."""

from __future__ import annotations

from gpustack.mig import layout_text
from gpustack.model import NodePool, SharingStrategy

MIG_OFF = "MIG off"
MIG_EMPTY = "MIG on, no instances"

GpuState = tuple[tuple[str, int], ...] | str  # sorted profile counts, or one of the two words above


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

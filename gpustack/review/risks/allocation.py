"""Risks in how GPUs reach pods: a pool moving between the device plugin and Dynamic Resource Allocation."""

from __future__ import annotations

from gpustack.model import Allocation
from gpustack.review.risk import Level, Risk
from gpustack.review.risks.wording import plural
from gpustack.review.snapshot import Snapshot

_WHAT = {
    Allocation.DEVICE_PLUGIN: "extended resources from the NVIDIA device plugin",
    Allocation.DRA: "DRA devices claimed through ResourceClaimTemplates",
}


def allocation_switched(before: Snapshot, after: Snapshot) -> list[Risk]:
    """A pool kept by name whose GPUs move between the device plugin and the DRA driver."""
    risks = []
    for name in sorted(set(before.pools) & set(after.pools)):
        old, new = before.pools[name].allocation, after.pools[name].allocation
        if old is new:
            continue
        pool = after.pools[name]
        running = tuple(before.workloads_on(name))
        risks.append(
            Risk(
                "allocation-switched",
                Level.HIGH,
                f"Pool '{name}' moves from {old} to {new} on {plural(len(pool.nodes), 'node')}",
                f"The pool's GPUs stop being {_WHAT[old]} and become {_WHAT[new]}. Running pods keep the GPUs they "
                f"were given the old way, which the new allocator does not know are taken; a pod of the old version "
                f"that is rescheduled asks for what the nodes no longer offer and stays Pending, and new pods need "
                "the new workload templates. The two allocators must never serve a node at the same time.",
                "Drain the pool's nodes (one wave at a time), apply so the old allocator leaves them and the new one "
                "starts, roll every workload on the pool to its new template, then uncordon.",
                nodes=pool.nodes,
                workloads=running,
                pools=(name,),
            )
        )
    return risks

"""Risks in cloud pools: changes the provider cannot make in place, so it replaces the node pool and its nodes."""

from __future__ import annotations

from gpustack.compile.cloud import NodePoolSpec, node_pool_specs, replacing_changes
from gpustack.review.risk import Level, Risk
from gpustack.review.risks.scheduling import running_on
from gpustack.review.snapshot import Snapshot


def _specs(side: Snapshot) -> dict[str, NodePoolSpec]:
    if side.context is None:
        return {}
    return {spec.pool: spec for spec in node_pool_specs(side.context)}


def cloud_pool_replaced(before: Snapshot, after: Snapshot) -> list[Risk]:
    """A cloud pool's machine type, accelerator, MIG partition, disk or capacity type changes: the provider creates a
    new node pool and deletes the old one, draining every node, so every pod on it restarts elsewhere or waits."""
    old_specs, new_specs = _specs(before), _specs(after)
    risks = []
    for name in sorted(set(old_specs) & set(new_specs)):
        old, new = old_specs[name], new_specs[name]
        if old.provider != new.provider:
            changed = [f"provider {old.provider} -> {new.provider}"]
        else:
            changed = replacing_changes(old.args, new.args, new.provider)
        if not changed:
            continue
        risks.append(
            Risk(
                "cloud-pool-replaced",
                Level.HIGH,
                f"cloud pool '{name}' is replaced: {', '.join(changed)}",
                f"The {new.provider} node pool cannot change {', '.join(changed)} in place: `pulumi up` creates a new "
                "node pool and deletes the old one, which drains and deletes every node of it. Every running pod of "
                "the pool is evicted and waits until the new nodes are up (GPU nodes take minutes, and may not be "
                "available at all).",
                "Add a second pool with the new settings, move the workloads there, then remove the old pool in a "
                "later change; or make the change in a maintenance window.",
                workloads=running_on(before, [name]),
                pools=(name,),
                details=tuple(changed),
            )
        )
    return risks

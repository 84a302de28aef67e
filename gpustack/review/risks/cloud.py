"""Risks in cloud pools: changes the provider cannot make in place, so it replaces the node pool and its nodes.

Each side's provider node pools are its Plan's (`Plan.node_pools`), as `pulumi up` registers them; which of their
inputs force a replacement is review knowledge, kept here.
"""

from __future__ import annotations

from typing import Any

from gpustack.plan import NodePoolSpec, Object
from gpustack.review.risk import Level, Risk
from gpustack.review.risks.scheduling import running_on
from gpustack.review.snapshot import Snapshot

# Inputs the provider cannot change in place: a change replaces the node pool, and with it every node.
REPLACING_FIELDS: dict[str, tuple[str, ...]] = {
    "gke": ("machine_type", "guest_accelerators", "gpu_partition_size", "disk_type", "disk_size_gb", "spot"),
    "eks": ("instance_types", "ami_type", "capacity_type", "disk_size"),
    "aks": ("vm_size", "gpu_instance_profile", "os_disk_type", "os_disk_size_gb", "scale_set_priority"),
    "karpenter": (),  # Karpenter drifts nodes one by one instead (disruption budgets apply)
}


def replacing_changes(old: Object, new: Object, provider: str) -> list[str]:
    """The inputs, among those that replace the node pool, that differ between two specs of one pool."""
    fields = REPLACING_FIELDS.get(provider, ())
    flat_old, flat_new = _flatten(old), _flatten(new)
    return sorted(
        {
            path
            for path in set(flat_old) | set(flat_new)
            if flat_old.get(path) != flat_new.get(path) and any(part in fields for part in path.split("."))
        }
    )


def _flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(data, dict):
        out: dict[str, Any] = {}
        for key, value in data.items():
            out.update(_flatten(value, f"{prefix}.{key}" if prefix else str(key)))
        return out
    if isinstance(data, list) and data and all(isinstance(item, dict) for item in data):
        out = {}
        for index, item in enumerate(data):
            out.update(_flatten(item, f"{prefix}.{index}"))
        return out
    return {prefix: data}


def _specs(side: Snapshot) -> dict[str, NodePoolSpec]:
    return {spec.pool: spec for spec in side.plan.node_pools}


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

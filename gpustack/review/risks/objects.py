"""Objects a tenant's workload adds outside its own namespaces: what a tenant's template must never reach.

Validation refuses such templates (GS606); this rule is the second line, for a reviewer reading a diff: whatever
let such an object through, a new cluster-scoped object or one in another namespace among the workload objects is
a grant of power to the tenant, and is flagged high.
"""

from __future__ import annotations

from gpustack.names import TENANT_LABEL
from gpustack.plan import Manifest
from gpustack.review.risk import Level, Risk
from gpustack.review.snapshot import Snapshot

WORKLOAD_FAMILY = "workloads"


def _owner(manifest: Manifest) -> str | None:
    labels = manifest.obj.get("metadata", {}).get("labels")
    owner = labels.get(TENANT_LABEL) if isinstance(labels, dict) else None
    return str(owner) if owner is not None else None


def object_escapes_tenant(before: Snapshot, after: Snapshot) -> list[Risk]:
    """A new workload object that is cluster-scoped, or lives outside its tenant's namespaces."""
    old = {manifest.key for manifest in before.plan.objects}
    risks = []
    for manifest in after.plan.by_family(WORKLOAD_FAMILY):
        if manifest.key in old:
            continue
        owner = _owner(manifest)
        tenant = after.tenants.get(owner) if owner is not None else None
        namespaces = tenant.namespaces if tenant is not None else ()
        where = manifest.namespace
        if where is not None and where in namespaces:
            continue
        place = "cluster-scoped (no namespace)" if where is None else f"in namespace '{where}'"
        whose = f"tenant '{owner}'" if tenant is not None else "no tenant of this blueprint"
        risks.append(
            Risk(
                "object-outside-tenant",
                Level.HIGH,
                f"New {manifest.kind} '{manifest.name}' {place}, outside its tenant's namespaces",
                f"{manifest.file} adds {manifest.kind} '{manifest.name}' {place}; it belongs to {whose}, whose "
                f"namespaces are {', '.join(namespaces) or 'none'}. Whoever applies the output (usually with "
                "cluster-admin rights) grants the tenant whatever this object does.",
                "A tenant's workload objects belong in the tenant's own namespaces; remove the object or have the "
                "cluster operator own it outside the tenant's templates.",
                tenants=(owner,) if tenant is not None else (),
                details=(f"{manifest.file}: {manifest.key}",),
            )
        )
    return risks


def base_absent(before: Snapshot, after: Snapshot) -> list[Risk]:
    """Nothing to compare against: the blueprint is new at the base revision, or was moved where git sees no rename."""
    if before.blueprint is not None or after.blueprint is None:
        return []
    return [
        Risk(
            "base-absent",
            Level.HIGH,
            f"Nothing to compare: {before.label}",
            "The base revision has no blueprint at this path, so every pool, tenant and workload reads as added and "
            "no other risk can be assessed. If the file was renamed or moved, the cluster it describes is already "
            "running, and this review says nothing about what the change does to it.",
            "Review every object below. For a renamed blueprint, commit the rename (git mv) so the review follows it, "
            "or compare the two files directly: gpustack diff OLD NEW.",
        )
    ]

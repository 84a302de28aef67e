"""`compile_blueprint(context) -> Plan`: pure, deterministic, one module per output family.

It takes the Context validation built (`Validation.context`): the facts the checks derived are not derived again,
and whatever compile reports points where the checks' diagnostics do. The Plan carries what apply needs of each
pool (labels, taints, MIG config, cloud node pools), derived here once, so nothing downstream imports a family.
"""

from __future__ import annotations

from collections.abc import Callable

from gpustack import workloads
from gpustack.collector import paused
from gpustack.compile import (
    admission,
    cloud,
    controllers,
    device_plugin,
    dra,
    gpu_operator,
    hami,
    kai,
    kueue,
    mig,
    nodes,
    tenants,
    topology,
    volcano,
)
from gpustack.context import Context
from gpustack.plan import FamilyOutput, Manifest, Plan, sharing_parts

Family = Callable[[Context], FamilyOutput]

FAMILIES: tuple[Family, ...] = (
    tenants.compile_tenants,
    gpu_operator.compile_gpu_operator,
    device_plugin.compile_device_plugin,
    mig.compile_mig,
    nodes.compile_nodes,
    cloud.compile_cloud,
    topology.compile_topology,
    workloads.compile_workloads,
    admission.compile_admission,
    kueue.compile_kueue,
    volcano.compile_volcano,
    kai.compile_kai,
    hami.compile_hami,
    dra.compile_dra,
)

# Apply order: what others refer to comes first (namespaces before what lives in them,
# CRD-backed kinds after the built-in ones, workloads last).
KIND_RANK: dict[str, int] = {
    "Namespace": 0,
    "PriorityClass": 1,
    "ConfigMap": 2,
    "ResourceQuota": 3,
    "LimitRange": 3,
    "Node": 4,
    "DeviceClass": 4,
    "ValidatingAdmissionPolicy": 5,
    "ValidatingAdmissionPolicyBinding": 6,
    "ResourceFlavor": 7,
    "ClusterQueue": 8,
    "Queue": 8,
    "LocalQueue": 9,
    "ResourceClaimTemplate": 9,
    "ResourceClaim": 9,  # a `share: pods` workload's one claim, like a template just before its pods
}
WORKLOAD_RANK = 10


def _name(manifest: Manifest) -> str:
    return str(manifest.obj["metadata"]["name"])


def apply_order(objects: list[Manifest]) -> tuple[Manifest, ...]:
    """The objects by (kind rank, namespace, kind, name), in place, in two stable passes: by name, then by the rest.

    Why: one key tuple per object (23,500 at many-pools 10x) would be alive at compile's peak, with every object
    built; here the keys are the objects' own names and one tuple per (rank, namespace, kind) group: 1.2 MB less.
    Python's sort is stable, so the order is the one tuple key's: `tests/test_compile_memory.py` holds them equal.
    """
    groups: dict[tuple[int, str, str], tuple[int, str, str]] = {}

    def group(manifest: Manifest) -> tuple[int, str, str]:
        kind, metadata = manifest.obj["kind"], manifest.obj["metadata"]
        key = (KIND_RANK.get(kind, WORKLOAD_RANK), metadata.get("namespace") or "", kind)
        return groups.setdefault(key, key)

    objects.sort(key=_name)
    objects.sort(key=group)
    return tuple(objects)


@paused()  # see gpustack/collector.py
def compile_blueprint(context: Context) -> Plan:
    """The Plan for a blueprint that validated without errors, from the Context its checks ran on."""
    merged = FamilyOutput()
    with sharing_parts():  # identical parts of objects built once per compile (plan.shared_part)
        for family in FAMILIES:
            output = family(context)
            merged.objects.extend(output.objects)
            merged.releases.extend(output.releases)
            merged.artifacts.extend(output.artifacts)
            merged.diagnostics.extend(output.diagnostics)
            merged.prerequisites.extend(output.prerequisites)
            merged.pools.extend(output.pools)
            merged.node_pools.extend(output.node_pools)
    # From the objects themselves, rendered templates included: a JobSet or LeaderWorkerSet needs its controller.
    merged.releases.extend(controllers.controller_releases(merged.objects))
    return Plan(
        blueprint=context.blueprint.name,
        objects=apply_order(merged.objects),
        releases=tuple(sorted(merged.releases, key=lambda r: r.name)),
        artifacts=tuple(sorted(merged.artifacts, key=lambda a: a.path)),
        diagnostics=tuple(merged.diagnostics),
        prerequisites=tuple(sorted(set(merged.prerequisites), key=lambda p: (p.namespace, p.reason))),
        pools=tuple(merged.pools),  # one family (nodes) gives them, in blueprint order
        node_pools=tuple(merged.node_pools),  # one family (cloud) gives them, in blueprint order
    )

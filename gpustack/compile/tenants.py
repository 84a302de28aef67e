"""Tenants as Kubernetes objects: namespaces, GPU quotas, container limit ranges and priority classes.

Quotas are written on the exact extended-resource names the tenant's pools advertise (offers), and only as
`requests.<resource>`: Kubernetes' quota evaluator tracks nothing else for extended resources, so a
`limits.nvidia.com/gpu` quota would be accepted and silently never enforced.

A ResourceQuota limits only the names it lists, so every name a pool advertises has a line unless the tenant was
granted it without limit (a pool whose quota is `unlimited`): names only other pools advertise, and names of its
own pools its quota does not grant (N4: the whole GPUs of a mixed MIG pool beside the MIG slices it was granted, a
second MIG profile, a `.shared` name, HAMi's cores, every name of a granted pool with no quota entry: GS610), are
`"0"`, whether or not the blueprint writes the 0.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gpustack.context import Context
from gpustack.model import PRIORITY_VALUES, Scheduler, Tenant
from gpustack.names import MANAGED_BY, TENANT_LABEL, priority_class_name
from gpustack.offers import Isolation, Offer, full_resource_name
from gpustack.plan import FamilyOutput, Manifest, Object, shared_part
from gpustack.schedulers import closed_resources, namespace_quota, nominal_quota

FAMILY = "tenants"
PRIORITY_FILE = "cluster/priority-classes.yaml"
QUOTA_NAME = "gpustack-gpu-quota"
LIMIT_RANGE_NAME = "gpustack-defaults"
# Requests given to containers that set none, so a sidecar or debug pod in a GPU namespace is not BestEffort
# (first evicted under node pressure) and the scheduler accounts for it.
DEFAULT_CPU_REQUEST = "100m"
DEFAULT_MEMORY_REQUEST = "256Mi"


def compile_tenants(ctx: Context) -> FamilyOutput:
    output = FamilyOutput()
    limitable = limitable_resources(ctx)
    for tenant in ctx.blueprint.tenants:
        file = f"tenants/{tenant.name}.yaml"
        hard = quota_hard(ctx, tenant)
        limits = gpu_max_per_container(ctx, tenant)
        foreign = foreign_resources(ctx, tenant)
        ungranted = closed_resources(ctx, tenant)
        # Zero on every GPU resource only pools it is not granted advertise: whatever the taints, the tenant's pods
        # cannot take those pools' GPUs by resource name (a soft or missing taint no longer opens them). Zero too on
        # what its own pools advertise and its quota does not grant (N4); a Kueue tenant's ceiling has them already.
        zeros = {f"requests.{name}": 0 for name in [*foreign, *ungranted]}
        closed = dict(sorted({**zeros, **hard}.items()))
        # The LimitRange caps them at 0 too, with a clear message per container; a Kueue tenant's ClusterQueue covers
        # its own pools' names, but refuses a pod that names (even at 0) a resource it does not cover: not the others.
        shut = ungranted if tenant.scheduler is Scheduler.KUEUE else [*foreign, *ungranted]
        limits = dict(sorted({**limits, **{name: 0 for name in shut if name in limitable}}.items()))
        for namespace in tenant.namespaces:
            output.objects.append(Manifest(FAMILY, file, namespace_object(tenant, namespace)))
            if closed:
                output.objects.append(Manifest(FAMILY, file, resource_quota(tenant, namespace, closed)))
            output.objects.append(Manifest(FAMILY, file, limit_range(tenant, namespace, limits)))
    output.objects.extend(Manifest("cluster", PRIORITY_FILE, obj) for obj in priority_classes(ctx.blueprint.tenants))
    return output


def tenant_labels(tenant: Tenant) -> dict[str, str]:
    """The labels of each of the tenant's objects: one mapping within a compile (plan.shared_part)."""
    return shared_part(("tenants.labels", tenant.name), lambda: {**MANAGED_BY, TENANT_LABEL: tenant.name})


def _metadata(name: str, labels: dict[str, str], namespace: str | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    metadata["labels"] = labels
    return metadata


def namespace_object(tenant: Tenant, namespace: str) -> Object:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": _metadata(namespace, tenant_labels(tenant))}


def quota_hard(ctx: Context, tenant: Tenant) -> dict[str, int]:
    """`requests.<resource>` -> amount for one namespace; pools sharing a resource name add up (GS506 warns)."""
    # A KAI tenant in a cohort borrows as a Kueue tenant does: its KAI Queue is the limit, this the per-name ceiling.
    if tenant.scheduler is Scheduler.KUEUE or (tenant.scheduler is Scheduler.KAI and tenant.cohort is not None):
        return kueue_quota_ceiling(ctx, tenant)
    return namespace_quota(tenant)


def kueue_quota_ceiling(ctx: Context, tenant: Tenant) -> dict[str, int]:
    """A Kueue tenant's per-namespace ResourceQuota: only a ceiling behind its ClusterQueue.

    The ClusterQueue is the real limit (per pool, one total across the tenant's namespaces, borrowing included), so
    each amount here is the most the ClusterQueue can admit of the resource: per pool that advertises it, the nominal
    quota (as in kueue.py: 0 where the pool's quota does not name the resource or has no entry, the whole pool where
    the quota says `unlimited`) plus what the tenant may borrow from its cohort (its borrowingLimit, or the pool's whole
    capacity where the cohort sets none). A quota of the nominal amounts alone would make the API server refuse the
    very pods Kueue admitted on borrowed quota ("exceeded quota"). Resources the tenant holds whole on some pool and
    no quota names stay unlimited here.
    """
    named = {full_resource_name(short) for _pool, items in tenant.quota for short, _amount in items}
    named.update(closed_resources(ctx, tenant))
    totals: dict[str, int] = {}
    for name in tenant.pools:
        pool = ctx.pools.get(name)
        if pool is None:
            continue
        for offer in ctx.offers.get(name, ()):
            if offer.resource not in named:
                continue
            nominal = int(nominal_quota(ctx, tenant, pool, offer.resource))  # GPU units: always whole numbers
            key = f"requests.{offer.resource}"
            totals[key] = totals.get(key, 0) + ctx.quota_ceiling(tenant, name, offer.resource, nominal)
    return dict(sorted(totals.items()))


def resource_quota(tenant: Tenant, namespace: str, hard: dict[str, int]) -> Object:
    # Tenants with the same grants have the same spec: one object within a compile (plan.shared_part), keyed by the
    # very strings it holds.
    amounts = {key: str(amount) for key, amount in hard.items()}
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": _metadata(QUOTA_NAME, tenant_labels(tenant), namespace),
        "spec": shared_part(("tenants.quota", *amounts.items()), lambda: {"hard": amounts}),
    }


def _limitable(offer: Offer) -> bool:
    # HAMi reads nvidia.com/gpu as physical GPUs and gpumem/gpucores per GPU, and its webhook acts on any container
    # that names them: a LimitRange default of 0 would change how HAMi schedules pods that never asked for a GPU.
    return offer.isolation is not Isolation.SOFTWARE


def gpu_max_per_container(ctx: Context, tenant: Tenant) -> dict[str, int]:
    """Resource -> the most one node of the tenant's pools offers: more can never be scheduled."""
    most: dict[str, int] = {}
    for pool in tenant.pools:
        for offer in ctx.offers.get(pool, ()):
            if _limitable(offer):
                most[offer.resource] = max(most.get(offer.resource, 0), offer.per_node)
    return dict(sorted(most.items()))


def foreign_resources(ctx: Context, tenant: Tenant) -> list[str]:
    """GPU resource names that only pools the tenant is not granted advertise."""
    own = {offer.resource for pool in tenant.pools for offer in ctx.offers.get(pool, ())}
    # Names only other pools advertise: every advertised name less the tenant's own (what its pools share with
    # others stays its own), so each tenant costs its own pools, not the fleet's.
    return sorted(ctx.advertised_resources - own)


def limitable_resources(ctx: Context) -> set[str]:
    """Resource names no HAMi pool advertises: a LimitRange may name them without HAMi's webhook acting on it."""
    offers = [offer for pool_offers in ctx.offers.values() for offer in pool_offers]
    return {o.resource for o in offers} - {o.resource for o in offers if not _limitable(o)}


def limit_range(tenant: Tenant, namespace: str, gpu_max: dict[str, int]) -> Object:
    # Tenants whose pools offer the same most per node have the same spec: one object within a compile
    # (plan.shared_part), keyed by the very strings it holds.
    most = tuple((resource, str(amount)) for resource, amount in gpu_max.items())
    return {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": _metadata(LIMIT_RANGE_NAME, tenant_labels(tenant), namespace),
        "spec": shared_part(("tenants.limitRange", *most), lambda: _limit_range_spec(most)),
    }


def _limit_range_spec(gpu_max: tuple[tuple[str, str], ...]) -> Object:
    item: dict[str, Any] = {"type": "Container"}
    if gpu_max:
        # A pod asking for more GPUs than any node has would stay Pending forever; with `max` it is refused at
        # admission ("maximum nvidia.com/gpu usage per Container is 8, but limit is 16").
        item["max"] = dict(gpu_max)
        # LimitRanger requires a limit on every `max` resource and, when `default` is absent, defaults the limit
        # to `max`: without an explicit 0 every container that asks for no GPU would be given 8 of them.
        item["default"] = {resource: "0" for resource, _ in gpu_max}
    item["defaultRequest"] = {"cpu": DEFAULT_CPU_REQUEST, "memory": DEFAULT_MEMORY_REQUEST}
    if gpu_max:
        # Extended resources cannot be overcommitted: default and defaultRequest must agree when both are set.
        item["defaultRequest"].update({resource: "0" for resource, _ in gpu_max})
    return {"limits": [item]}


def priority_classes(tenants: Iterable[Tenant]) -> list[Object]:
    users: dict[str, list[str]] = {}
    for tenant in tenants:
        users.setdefault(tenant.priority, []).append(tenant.name)
    objects = []
    for level in sorted(users, key=lambda lvl: PRIORITY_VALUES[lvl]):
        objects.append(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": _metadata(priority_class_name(level), dict(MANAGED_BY)),
                "value": PRIORITY_VALUES[level],
                "globalDefault": False,
                "preemptionPolicy": "PreemptLowerPriority",
                "description": f"gpustack '{level}' priority for GPU workloads of tenants: {', '.join(users[level])}",
            }
        )
    return objects

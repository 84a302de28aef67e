"""How each scheduler holds a tenant's quota: the facts both the checks (GS507-GS511) and compile read.

A tenant with `scheduler: kueue` gets a ClusterQueue with one ResourceFlavor per pool; one with `scheduler: volcano`
gets a Volcano Queue named after it; every tenant's namespaces get a ResourceQuota. They live below the checks so a
rule and the object it protects read one definition (compile/kueue.py and compile/volcano.py import them).
"""

from __future__ import annotations

import re
from decimal import Decimal

from gpustack.context import Context
from gpustack.model import NodePool, Scheduler, Tenant
from gpustack.offers import full_resource_name
from gpustack.quantity import parse_quantity

CPU = "cpu"
MEMORY = "memory"
# ResourceFlavor CRD limits (maxItems) on nodeTaints and tolerations; GS510 reports pools with more taints.
MAX_FLAVOR_TAINTS = 8
# Queues Volcano creates and owns itself; a tenant's Queue must not take their names (GS509).
RESERVED_QUEUES = frozenset({"default", "root"})
# KAI Scheduler v0.17: the scheduler name its chart installs, the label that puts a workload in a leaf Queue, the
# queues its chart creates (values defaultQueue), and the longest label value (a leaf's name is one).
KAI_SCHEDULER = "kai-scheduler"
KAI_QUEUE_LABEL = "kai.scheduler/queue"
KAI_CHART_QUEUES = frozenset({"default-parent-queue", "default-queue"})
KAI_WHOLE_GPU = "nvidia.com/gpu"
KAI_UNLIMITED = -1
MAX_LABEL_VALUE = 63
_KAI_MIG = re.compile(r"nvidia\.com/mig-(?:\d+c\.)?(\d+)g\.\d+gb(?:[+-][a-z.]+)?")
_BINARY_UNITS = (("Ti", Decimal(2) ** 40), ("Gi", Decimal(2) ** 30), ("Mi", Decimal(2) ** 20), ("Ki", Decimal(2) ** 10))


def kueue_tenants(ctx: Context) -> list[Tenant]:
    return [t for t in ctx.blueprint.tenants if t.scheduler is Scheduler.KUEUE]


def volcano_tenants(ctx: Context) -> list[Tenant]:
    return [t for t in ctx.blueprint.tenants if t.scheduler is Scheduler.VOLCANO]


def kai_tenants(ctx: Context) -> list[Tenant]:
    return [t for t in ctx.blueprint.tenants if t.scheduler is Scheduler.KAI]


def kai_parent_queue(tenant: Tenant) -> str:
    """A KAI tenant's parent Queue: it holds the tenant's quota; jobs never name it (only leaves take jobs)."""
    return tenant.name


def kai_leaf_queue(tenant: Tenant, namespace: str) -> str:
    """The leaf Queue of one of a KAI tenant's namespaces: `<tenant>.<namespace>`. Tenant and namespace names are DNS
    labels (no dot), so a leaf never takes a parent's name, and namespaces are unique, so no two leaves clash."""
    return f"{tenant.name}.{namespace}"


def kai_gpu_units(resource: str) -> int | None:
    """What one of a resource counts in a KAI Queue's `gpu` (KAI docs/queues): a whole GPU 1, a MIG device the
    number before `g` in its profile (mig-3g.40gb: 3); None for a name KAI's queues do not count (gpu.shared)."""
    if resource == KAI_WHOLE_GPU:
        return 1
    match = _KAI_MIG.fullmatch(resource)
    return int(match.group(1)) if match else None


def kai_gpu_quota(tenant: Tenant) -> tuple[int, int]:
    """A KAI tenant's (quota, limit) in GPU units: its quota summed as KAI counts it (a name KAI does not count is
    refused before compile, GS514); the limit is -1 (none) when it holds a pool whole, as its ResourceQuota has none."""
    quota = sum(
        amount * (kai_gpu_units(full_resource_name(short)) or 0)
        for _pool, items in tenant.quota
        for short, amount in items
    )
    whole = any(not has_pool_quota(tenant, pool) for pool in tenant.pools)
    return quota, KAI_UNLIMITED if whole else quota


def queue_name(tenant: Tenant) -> str:
    """A Volcano tenant's Queue (GS509 keeps it off Volcano's own queues)."""
    return tenant.name


def namespace_quota(tenant: Tenant) -> dict[str, int]:
    """`requests.<resource>` -> amount of the ResourceQuota in each of a tenant's namespaces, Kueue aside.

    Pools sharing a resource name add up (GS506 warns), and Kubernetes has no cross-namespace quota (GS507 warns).
    """
    totals: dict[str, int] = {}
    for _pool, items in tenant.quota:
        for short, amount in items:
            key = f"requests.{full_resource_name(short)}"
            totals[key] = totals.get(key, 0) + amount
    return dict(sorted(totals.items()))


def has_pool_quota(tenant: Tenant, pool: str) -> bool:
    """Whether the tenant's quota has an entry for the pool: with one, what the entry does not name is not granted."""
    return any(name == pool for name, _ in tenant.quota)


def closed_resources(ctx: Context, tenant: Tenant) -> list[str]:
    """Resource names the tenant's own pools advertise that it was not granted (N4): its quota on a pool that
    advertises the name does not list it, no other of its quota entries lists it, and no pool of its without a quota
    entry (a whole pool granted, unlimited) advertises it. Its quotas hold them at 0, as if the blueprint wrote 0.

    On a mixed pool (whole GPUs beside MIG instances), a pool with two MIG profiles, time-sliced `.shared` names,
    HAMi's three names or a DRA pool's units, a quota naming some of the pool's names would otherwise leave the
    others unlimited.
    """
    listed = {full_resource_name(short) for _pool, items in tenant.quota for short, _amount in items}
    open_names: set[str] = set()  # advertised by a pool the tenant holds whole (no quota entry on it)
    candidates: dict[str, None] = {}
    for pool in tenant.pools:
        offers = ctx.offers.get(pool, ())
        if not has_pool_quota(tenant, pool):
            open_names.update(offer.resource for offer in offers)
            continue
        candidates.update((offer.resource, None) for offer in offers)
    return sorted(name for name in candidates if name not in listed and name not in open_names)


def _quantity(amount: Decimal, resource: str) -> int | str:
    """A whole number of units as an int; cpu as millicores, memory in the largest binary unit that is exact."""
    if resource == MEMORY:
        for suffix, size in _BINARY_UNITS:
            if amount >= size and amount % size == 0:
                return f"{int(amount / size)}{suffix}"
        return str(int(amount))
    if amount == amount.to_integral_value():
        return int(amount)
    return f"{int(amount * 1000)}m"


def pool_allocatable(pool: NodePool, resource: str) -> Decimal | None:
    """What all the pool's nodes have of cpu or memory, or None without nodeResources."""
    node = pool.node_resources
    value = None if node is None else node.cpu if resource == CPU else node.memory
    return None if value is None else parse_quantity(value) * pool.node_count


def nominal_quota(ctx: Context, tenant: Tenant, pool: NodePool, resource: str) -> int | str:
    """A Kueue tenant's nominalQuota of a resource in the flavor of a pool."""
    if resource in (CPU, MEMORY):
        allocatable = pool_allocatable(pool, resource)
        # Without nodeResources GS508 stops compile; 0 is never written for a blueprint that validated.
        return _quantity(allocatable, resource) if allocatable is not None else 0
    quota = {full_resource_name(short): amount for short, amount in tenant.quota_for(pool.name).items()}
    if resource in quota:
        return quota[resource]
    if has_pool_quota(tenant, pool.name):
        return 0  # a quota on the pool that does not name the resource grants none of it (N4)
    offer = next((o for o in ctx.offers[pool.name] if o.resource == resource), None)
    return offer.per_node * pool.node_count if offer is not None else 0

"""How each scheduler holds a tenant's quota: the facts both the checks (GS507-GS511) and compile read.

A tenant with `scheduler: kueue` gets a ClusterQueue with one ResourceFlavor per pool; one with `scheduler: volcano`
gets a Volcano Queue named after it; every tenant's namespaces get a ResourceQuota. They live below the checks so a
rule and the object it protects read one definition (compile/kueue.py and compile/volcano.py import them).
"""

from __future__ import annotations

import re
from decimal import Decimal

from gpustack.cloud import node_resources
from gpustack.context import Context
from gpustack.model import NodePool, PoolAmounts, Scheduler, Tenant
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
    refused before compile, GS514); the limit is -1 (none) only when it holds a pool whole (`unlimited`), as its
    ResourceQuota has no line for it then; a granted pool without a quota entry is closed, so it adds nothing. In a
    cohort the limit is the quota plus what it may borrow (kai_borrowing)."""
    quota = _kai_units(tenant.quota)
    whole = any(tenant.unlimited_on(pool) for pool in tenant.pools)
    borrowing = kai_borrowing(tenant)
    return quota, KAI_UNLIMITED if whole or borrowing is None else quota + borrowing


def _kai_units(amounts: PoolAmounts) -> int:
    return sum(n * (kai_gpu_units(full_resource_name(short)) or 0) for _pool, items in amounts for short, n in items)


def kai_borrowing(tenant: Tenant) -> int | None:
    """What a KAI tenant in a cohort may hold beyond its quota, in GPU units: its borrowingLimit summed as KAI counts
    it, or None (no limit: what the cohort has) when a name its quota grants has no borrowingLimit, as Kueue reads an
    unset borrowingLimit; 0 outside a cohort. Per name, its ResourceQuota holds the exact ceiling (quota_ceiling)."""
    cohort = tenant.cohort
    if tenant.scheduler is not Scheduler.KAI or cohort is None:
        return 0
    limited = {(pool, short) for pool, items in cohort.borrowing_limit for short, _n in items}
    if any((pool, short) not in limited for pool, items in tenant.quota for short, _n in items):
        return None
    return _kai_units(cohort.borrowing_limit)


def kai_cohort_queue(tenant: Tenant) -> str | None:
    """The KAI Queue above a tenant's parent in a cohort, named after the cohort: it holds its tenants' quotas' sum,
    so what they lend each other stays among them."""
    cohort = tenant.cohort
    return cohort.name if tenant.scheduler is Scheduler.KAI and cohort is not None else None


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


def closed_resources(ctx: Context, tenant: Tenant) -> list[str]:
    """Resource names the tenant's own pools advertise that it was not granted (N4): its quota on a pool that
    advertises the name does not list it (or it has no entry for the pool: closed by default, GS610), no other of
    its quota entries lists it, and no pool it holds whole (`unlimited`) advertises it. Its quotas hold them at 0, as
    if the blueprint wrote 0.

    On a mixed pool (whole GPUs beside MIG instances), a pool with two MIG profiles, time-sliced `.shared` names,
    HAMi's three names or a DRA pool's units, a quota naming some of the pool's names would otherwise leave the
    others unlimited.
    """
    listed = {full_resource_name(short) for _pool, items in tenant.quota for short, _amount in items}
    open_names: set[str] = set()  # advertised by a pool the tenant holds whole (`unlimited`)
    candidates: dict[str, None] = {}
    for pool in tenant.pools:
        offers = ctx.offers.get(pool, ())
        if tenant.unlimited_on(pool):
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


def pool_allocatable(ctx: Context, pool: NodePool, resource: str) -> Decimal | None:
    """What all the pool's nodes have of cpu or memory: nodeResources as stated, else a cloud pool's machine's
    allocatable (gpustack.cloud.node_resources); None where neither is known."""
    node = node_resources(pool, ctx.catalog)
    value = None if node is None else node.cpu if resource == CPU else node.memory
    return None if value is None else parse_quantity(value) * pool.node_count


def nominal_quota(ctx: Context, tenant: Tenant, pool: NodePool, resource: str) -> int | str:
    """A Kueue tenant's nominalQuota of a resource in the flavor of a pool."""
    if resource in (CPU, MEMORY):
        allocatable = pool_allocatable(ctx, pool, resource)
        # Without node resources (stated or the cloud machine's) GS508 stops compile; 0 is never written for a
        # blueprint that validated.
        return _quantity(allocatable, resource) if allocatable is not None else 0
    quota = {full_resource_name(short): amount for short, amount in tenant.quota_for(pool.name).items()}
    if resource in quota:
        return quota[resource]
    if not tenant.unlimited_on(pool.name):
        return 0  # a quota that does not name the resource, or no entry for the pool, grants none of it (N4, GS610)
    offer = next((o for o in ctx.offers[pool.name] if o.resource == resource), None)
    return offer.per_node * pool.node_count if offer is not None else 0

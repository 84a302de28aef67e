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
from gpustack.model import NodePool, PoolAmounts, Scheduler, Tenant, amounts_for
from gpustack.names import POOL_LABEL
from gpustack.offers import full_resource_name
from gpustack.quantity import parse_quantity

CPU = "cpu"
MEMORY = "memory"
# ResourceFlavor CRD limits (maxItems) on nodeTaints and tolerations; GS510 reports pools with more taints.
MAX_FLAVOR_TAINTS = 8
# Queues Volcano creates and owns itself; a tenant's Queue must not take their names (GS509).
RESERVED_QUEUES = frozenset({"default", "root"})
# KAI Scheduler v0.17: the scheduler name its chart installs, the label that puts a workload in a leaf Queue, the
# queues its chart creates (values defaultQueue, in the default shard), and the longest label value (a leaf's name is
# one).
KAI_SCHEDULER = "kai-scheduler"
KAI_QUEUE_LABEL = "kai.scheduler/queue"
KAI_CHART_QUEUES = frozenset({"default-parent-queue", "default-queue"})
KAI_WHOLE_GPU = "nvidia.com/gpu"
KAI_UNLIMITED = -1
# KAI's `global.nodePoolLabelKey`: the label its SchedulingShards partition nodes, Queues and PodGroups by. gpustack's
# pool label is on every pool's nodes (label-nodes.sh, a selector pool's node-pool labels) and every workload object
# it writes (so KAI's pod grouper copies it to the PodGroup): each pool is one shard.
KAI_NODE_POOL_LABEL = POOL_LABEL
# KAI v0.17's GPU-sharing requests (pkg/common/resources: RequestsGPUFraction reads these two pod annotations). KAI's
# webhook then hands the pod its GPU as NVIDIA_VISIBLE_DEVICES read from a ConfigMap in the pod's own namespace, which
# the tenant can write; it isolates no memory, and pods of different namespaces share the device. gpustack refuses
# them (compile/kai_rules.py, template_tenancy.py) and leaves the chart's gpuSharing off.
KAI_FRACTION_ANNOTATIONS = ("gpu-fraction", "gpu-memory")
# The SchedulingShard KAI's chart makes for whatever carries no node-pool label; no pool's shard may take its name.
KAI_DEFAULT_SHARD = "default"
MAX_LABEL_VALUE = 63
_KAI_MIG = re.compile(r"nvidia\.com/mig-(?:\d+c\.)?(\d+)g\.\d+gb(?:[+-][a-z.]+)?")
_BINARY_UNITS = (("Ti", Decimal(2) ** 40), ("Gi", Decimal(2) ** 30), ("Mi", Decimal(2) ** 20), ("Ki", Decimal(2) ** 10))


def kueue_tenants(ctx: Context) -> list[Tenant]:
    return [t for t in ctx.blueprint.tenants if t.scheduler is Scheduler.KUEUE]


def volcano_tenants(ctx: Context) -> list[Tenant]:
    return [t for t in ctx.blueprint.tenants if t.scheduler is Scheduler.VOLCANO]


def kai_tenants(ctx: Context) -> list[Tenant]:
    return [t for t in ctx.blueprint.tenants if t.scheduler is Scheduler.KAI]


def kai_pools(tenant: Tenant) -> tuple[str, ...]:
    """The pools a KAI tenant has Queues in: every pool it is granted, each served by its own SchedulingShard."""
    return tenant.pools if tenant.scheduler is Scheduler.KAI else ()


def kai_shard_pools(ctx: Context) -> list[str]:
    """Pools KAI schedules, in blueprint order: those granted to a KAI tenant. Each gets a SchedulingShard of its
    name, a KAI scheduler that sees only the pool's nodes (gpustack's pool label, KAI's node-pool label key) and only
    the Queues labelled with the pool."""
    granted = {pool for tenant in kai_tenants(ctx) for pool in kai_pools(tenant)}
    return [pool.name for pool in ctx.blueprint.pools if pool.name in granted]


def kai_parent_queue(tenant: Tenant, pool: str) -> str:
    """A KAI tenant's parent Queue in one pool's shard, `<tenant>.<pool>`: it holds the tenant's quota on that pool
    (its per-model limit); jobs never name it (only leaves take jobs)."""
    return f"{tenant.name}.{pool}"


def kai_leaf_queue(tenant: Tenant, namespace: str, pool: str) -> str:
    """The leaf Queue of one of a KAI tenant's namespaces in one pool's shard: `<tenant>.<pool>.<namespace>`. Tenant,
    pool and namespace names are DNS labels (no dot), so a leaf (three parts) never takes a parent's or a cohort's
    name (two parts) nor KAI's chart queues' (one), and no two leaves clash."""
    return f"{tenant.name}.{pool}.{namespace}"


def kai_leaf_pools(tenant: Tenant) -> dict[str, str]:
    """Every leaf Queue of a KAI tenant -> the pool whose shard holds it, namespaces first, then pools in order."""
    return {
        kai_leaf_queue(tenant, namespace, pool): pool for namespace in tenant.namespaces for pool in kai_pools(tenant)
    }


def kai_gpu_units(resource: str) -> int | None:
    """What one of a resource counts in a KAI Queue's `gpu` (KAI docs/queues): a whole GPU 1, a MIG device the
    number before `g` in its profile (mig-3g.40gb: 3); None for a name KAI's queues do not count (gpu.shared)."""
    if resource == KAI_WHOLE_GPU:
        return 1
    match = _KAI_MIG.fullmatch(resource)
    return int(match.group(1)) if match else None


def kai_gpu_quota(tenant: Tenant, pool: str) -> tuple[int, int]:
    """A KAI tenant's (quota, limit) in GPU units on one pool (its Queue in that pool's shard): its quota there summed
    as KAI counts it (a name KAI does not count is refused before compile, GS514); the limit is -1 (none) only when it
    holds the pool whole (`unlimited`), as its ResourceQuota has no line for it then; a granted pool without a quota
    entry is closed, 0. In a cohort the limit is the quota plus what it may borrow there (kai_borrowing)."""
    quota = _kai_units(tenant.quota, pool)
    borrowing = kai_borrowing(tenant, pool)
    return quota, KAI_UNLIMITED if tenant.unlimited_on(pool) or borrowing is None else quota + borrowing


def _kai_units(amounts: PoolAmounts, pool: str) -> int:
    return sum(n * (kai_gpu_units(full_resource_name(short)) or 0) for short, n in amounts_for(amounts, pool).items())


def kai_borrowing(tenant: Tenant, pool: str) -> int | None:
    """What a KAI tenant in a cohort may hold beyond its quota on a pool, in GPU units: its borrowingLimit there summed
    as KAI counts it, or None (no limit: what the cohort has) when a name its quota grants there has no
    borrowingLimit, as Kueue reads an unset borrowingLimit; 0 outside a cohort. Per name, its ResourceQuota holds the
    exact ceiling (quota_ceiling)."""
    cohort = tenant.cohort
    if tenant.scheduler is not Scheduler.KAI or cohort is None:
        return 0
    limited = set(amounts_for(cohort.borrowing_limit, pool))
    if any(short not in limited for short in tenant.quota_for(pool)):
        return None
    return _kai_units(cohort.borrowing_limit, pool)


def kai_cohort_queue(tenant: Tenant, pool: str) -> str | None:
    """The KAI Queue above a tenant's parent in one pool's shard when it is in a cohort, `<cohort>.<pool>`: it holds
    its tenants' quotas' sum there, so what they lend each other stays among them."""
    cohort = tenant.cohort
    return f"{cohort.name}.{pool}" if tenant.scheduler is Scheduler.KAI and cohort is not None else None


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

"""`gpustack capacity`: what each pool can give, and what each tenant may take and asks for.

Pure: a Context in, a `Capacity` out; the command prints it as text or JSON and may draw an SVG, and `gpustack diff`
compares the `Capacity` of both versions. Every unit comes from `gpustack.offers`, every demand, quota ceiling,
memory oversubscription and gang from the Context, so capacity, checks, compile, review and simulate agree: a
warning here that is a rule (GS404, GS512) is a check too, which `validate` and `compile` report at its line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from gpustack.cloud import node_resources, pool_machine
from gpustack.collector import paused
from gpustack.context import Context
from gpustack.jsondoc import dump_document
from gpustack.model import NodePool, Scheduler, SharingStrategy, Tenant
from gpustack.offers import Isolation, Offer, full_resource_name
from gpustack.quantity import format_gib, json_number
from gpustack.schedulers import KAI_NODE_POOL_LABEL, closed_resources, kai_parent_queue
from gpustack.selection import describe_selection
from gpustack.templating import package_template

ISOLATION_WORDS = {
    Isolation.EXCLUSIVE: "whole GPU",
    Isolation.HARDWARE: "hardware (MIG)",
    Isolation.MPS_LIMITS: "MPS limits (shared fault domain)",
    Isolation.SOFTWARE: "software (HAMi, bypassable)",
    Isolation.NONE: "none (time-slicing)",
}


@dataclass(frozen=True)
class Unit:
    """One resource name a pool advertises."""

    resource: str
    per_node: int
    total: int
    memory_gb: Decimal | None  # memory one unit may use (nominal GB, as profile names count it)
    compute: Decimal | None  # share of one GPU's compute a unit gets (time-slicing: a turn, not a guarantee)
    isolation: Isolation
    profile: str | None
    shared_by: int  # how many units share one physical GPU (or MIG slice)
    demand: int  # units the blueprint's workload templates request when all their pods run


@dataclass(frozen=True)
class PoolCapacity:
    name: str
    model: str | None
    nodes: int
    gpus_per_node: int
    sharing: str
    sharing_setting: str  # the strategy with its setting: 'time-slicing x4', 'mig single'
    units: tuple[Unit, ...]
    selection: str | None = None  # a selector pool: how its nodes are found, and its autoscaling range
    # What one node leaves to pods: the pool's nodeResources, or its cloud machine's allocatable (gpustack.cloud)
    node_cpu: str | None = None
    node_memory: str | None = None
    machine: str | None = None  # the cloud machine type it was derived from

    @property
    def physical_gpus(self) -> int:
        return self.nodes * self.gpus_per_node


@dataclass(frozen=True)
class Grant:
    """A tenant's standing on one resource of one pool."""

    pool: str
    resource: str
    quota: int | None  # None: no quota, the tenant may take all the pool has
    capacity: int
    demand: int
    ceiling: int | None = None  # quota plus what a Kueue tenant may borrow from its cohort; None: the quota

    @property
    def limit(self) -> int | None:
        return self.ceiling if self.ceiling is not None else self.quota

    @property
    def status(self) -> str:
        limit = self.limit
        if limit is not None and self.demand > limit:
            return "templates need more than the quota" + (" and what it may borrow" if limit != self.quota else "")
        if self.demand > self.capacity:
            return "templates need more than the pool has"
        if self.quota is not None and self.quota > self.capacity:
            return "quota above what the pool has"
        if self.quota is not None and self.demand > self.quota:
            return "ok, borrowing from the cohort"
        return "ok"


@dataclass(frozen=True)
class TenantCapacity:
    name: str
    scheduler: str
    pools: tuple[str, ...]  # the pools the tenant may use
    grants: tuple[Grant, ...]
    kai_queues: tuple[KaiQueueFigures, ...] = ()  # a KAI tenant's compiled Queues: per pool, parent then its leaves


@dataclass(frozen=True)
class KaiQueueFigures:
    """One of a KAI tenant's Queues as compile writes it: gpu quota (guaranteed), limit and over-quota weight, in
    KAI's GPU units (a MIG device counts its compute slices; -1: unlimited)."""

    name: str
    pool: str  # the pool whose SchedulingShard holds it
    parent: str | None
    leaf: bool  # a leaf takes jobs; a tenant's parent holds its quota on the pool
    quota: int
    limit: int
    over_quota_weight: int


@dataclass(frozen=True)
class Capacity:
    blueprint: str
    pools: tuple[PoolCapacity, ...]
    tenants: tuple[TenantCapacity, ...]
    warnings: tuple[tuple[str, str], ...]  # (pool, message)


@paused()  # see gpustack/collector.py
def measure_capacity(context: Context) -> Capacity:
    demand = _demand_by_pool(context)
    pools = tuple(pool_capacity(context, pool, demand.get(pool.name, {})) for pool in context.blueprint.pools)
    by_pool = {p.name: p for p in pools}
    tenants = tuple(
        TenantCapacity(
            tenant.name,
            str(tenant.scheduler),
            tenant.pools,
            tuple(_grants(context, tenant.name, by_pool)),
            _compiled_queues(tenant),
        )
        for tenant in context.blueprint.tenants
    )
    return Capacity(context.blueprint.name, pools, tenants, tuple([*_warnings(context), *_gang_warnings(context)]))


def _compiled_queues(tenant: Tenant) -> tuple[KaiQueueFigures, ...]:
    """A KAI tenant's Queues, read from the objects compile writes for it (never worked out again here)."""
    if tenant.scheduler is not Scheduler.KAI:
        return ()
    from gpustack.compile.kai import tenant_queues  # loaded only for a blueprint with a KAI tenant

    out = []
    parents = {kai_parent_queue(tenant, pool) for pool in tenant.pools}
    for obj in tenant_queues(tenant):
        spec = obj["spec"]
        gpu = spec["resources"]["gpu"]
        parent = spec.get("parentQueue")
        out.append(
            KaiQueueFigures(
                str(obj["metadata"]["name"]),
                str(obj["metadata"]["labels"][KAI_NODE_POOL_LABEL]),
                None if parent is None else str(parent),
                parent in parents,
                int(gpu["quota"]),
                int(gpu["limit"]),
                int(gpu["overQuotaWeight"]),
            )
        )
    return tuple(out)


def _compute_share(context: Context, pool: NodePool, offer: Offer) -> Decimal | None:
    model = context.models.get(pool.name)
    if offer.memory_gib is None:  # HAMi's gpumem and gpucores are amounts, not units of a GPU
        return None
    if offer.profile is not None and model is not None and model.mig is not None:
        profile = model.mig.profile(offer.profile)
        # A time-sliced instance's replicas take turns on its slices.
        slices = Decimal(profile.compute) / model.mig.compute_slices if profile is not None else None
        return slices / offer.shared_by if slices is not None else None
    return Decimal(1) / offer.shared_by


def _demand_by_pool(context: Context) -> dict[str, dict[str, int]]:
    """Pool -> resource -> units every tenant's templates request when all their pods run."""
    found: dict[str, dict[str, int]] = {}
    for by_tenant in context.demand.values():
        for (pool_name, resource), amount in by_tenant.items():
            pool_demand = found.setdefault(pool_name, {})
            pool_demand[resource] = pool_demand.get(resource, 0) + amount
    return found


def pool_capacity(context: Context, pool: NodePool, demand: Mapping[str, int]) -> PoolCapacity:
    """One pool's units; `demand`: resource -> units requested from it (_demand_by_pool)."""
    model = context.models.get(pool.name)
    nodes = pool.node_count
    units = tuple(
        Unit(
            resource=offer.resource,
            per_node=offer.per_node,
            total=offer.per_node * nodes,
            memory_gb=offer.memory_gib,
            compute=_compute_share(context, pool, offer),
            isolation=offer.isolation,
            profile=offer.profile,
            shared_by=offer.shared_by,
            demand=demand.get(offer.resource, 0),
        )
        for offer in context.offers.get(pool.name, ())
    )
    node = node_resources(pool, context.catalog)
    machine = pool_machine(pool, context.catalog) if pool.node_resources is None else None
    return PoolCapacity(
        pool.name,
        model.key if model else None,
        nodes,
        pool.gpus_per_node,
        str(pool.sharing.strategy),
        _sharing_setting(pool),
        units,
        _selection(pool),
        None if node is None else node.cpu,
        None if node is None else node.memory,
        None if machine is None or node is None else machine.name,
    )


def _sharing_setting(pool: NodePool) -> str:
    sharing = pool.sharing
    if sharing.replication is not None:
        return f"{sharing.strategy} x{sharing.replication.replicas}"
    if sharing.mig is not None and sharing.strategy is SharingStrategy.MIG:
        sliced = sharing.mig.time_slicing
        return f"mig {sharing.mig.strategy}" + (f", time-sliced {sliced.counts_text}" if sliced is not None else "")
    return str(sharing.strategy)


def _selection(pool: NodePool) -> str | None:
    if pool.selector is None:
        return None
    scaled = ""
    if pool.count is None:
        # Capacity at the least and at the most: quotas count on the most, pods beyond the least wait for a scale-up.
        low, high = pool.guaranteed_nodes * pool.gpus_per_node, pool.node_count * pool.gpus_per_node
        gpus = f"; {low} GPU(s) at minNodes, {high} at maxNodes" if pool.gpu is not None else ""
        scaled = f", {pool.guaranteed_nodes} to {pool.node_count} nodes (counted at the most{gpus})"
    return f"nodes selected by {describe_selection(pool)}{scaled}"


def _grants(context: Context, tenant_name: str, pools: dict[str, PoolCapacity]) -> list[Grant]:
    tenant = context.tenants[tenant_name]
    demand = context.demand.get(tenant_name, {})
    grants = []
    closed = set(closed_resources(context, tenant))  # what its quotas hold at 0 without the blueprint saying so (N4)
    for pool_name in tenant.pools:
        pool = pools.get(pool_name)
        if pool is None:
            continue
        quota = {full_resource_name(k): v for k, v in tenant.quota_for(pool_name).items()}
        for unit in pool.units:
            wanted = demand.get((pool_name, unit.resource), 0)
            # A ResourceQuota limits only the resources it names; gpustack names every one the tenant was not granted.
            limit = quota.get(unit.resource, 0 if unit.resource in closed else None)
            ceiling = None if limit is None else context.quota_ceiling(tenant, pool_name, unit.resource, limit)
            grants.append(
                Grant(pool_name, unit.resource, limit, unit.total, wanted, ceiling if ceiling != limit else None)
            )
    return grants


def _warnings(context: Context) -> list[tuple[str, str]]:
    """What a pool's sharing setting means for the pods on it, as report prose.

    The time-slicing memory note and HAMi's memoryScaling note stay report-only, not checks: they word what a
    deliberately chosen setting does (time-slicing shares compute, not memory; memoryScaling > 1 promises memory on
    purpose), on every blueprint that chooses it, so there is no mistake to fix at a line. The rule hidden in them,
    workloads whose memory need the shared GPU cannot hold for every pod, is a check (GS404), and the report words
    that fact below from `Context.oversubscriptions`, as it words GS512's from `Context.gangs`.
    """
    out = []
    for pool in context.blueprint.pools:
        model = context.models.get(pool.name)
        replication = pool.sharing.replication
        if model is None:
            continue
        if pool.sharing.strategy is SharingStrategy.TIME_SLICING and replication is not None:
            out.append(
                (
                    pool.name,
                    f"time-slicing does not isolate memory: each of the {replication.replicas} pods sharing one "
                    f"{model.key} may use all {model.memory_gib} GiB, so together they can ask for "
                    f"{replication.replicas * model.memory_gib} GiB; the last to allocate fails out of memory",
                )
            )
            out += _oversubscription_warnings(context, pool)
        mig = pool.sharing.mig
        if pool.sharing.strategy is SharingStrategy.MIG and mig is not None and mig.time_slicing is not None:
            sliced = mig.time_slicing
            note = (
                f"time-slicing does not isolate memory inside a MIG instance: each of the {sliced.replicas} pods "
                "sharing one instance may use all of its memory; the last to allocate fails out of memory"
            )
            if sliced.per_profile:  # each count named (GPUs left whole may be time-sliced too)
                note = (
                    f"time-slicing does not isolate memory: each of the pods sharing one MIG instance or GPU "
                    f"({sliced.counts_text}) may use all of its memory; the last to allocate fails out of memory"
                )
            out.append((pool.name, note))
            out += _oversubscription_warnings(context, pool)
        hami = pool.sharing.hami
        if pool.sharing.strategy is SharingStrategy.HAMI and hami is not None and hami.memory_scaling > 1:
            out.append(
                (
                    pool.name,
                    f"HAMi memoryScaling {hami.memory_scaling} advertises more GPU memory than {model.key} has: "
                    "pods may be promised memory that is not there",
                )
            )
    return out


def _oversubscription_warnings(context: Context, pool: NodePool) -> list[tuple[str, str]]:
    """GS404's fact, worded for the report."""
    return [
        (
            pool.name,
            f"workload '{fact.workload.name}' needs {format_gib(fact.need)}: {fact.replicas} of its pods on one "
            f"{'GPU' if fact.profile is None else fact.profile + ' instance'} "
            f"ask for {format_gib(fact.total)} of {format_gib(fact.gpu_memory)}",
        )
        for fact in context.oversubscriptions
        if fact.pool.name == pool.name
    ]


def _gang_warnings(context: Context) -> list[tuple[str, str]]:
    """GS512's fact (`Context.gangs`), worded for the report: a gang starts all its pods or none, so one the pool or
    the tenant's quota cannot hold whole never starts, however idle the GPUs are."""
    out = []
    for gang in context.gangs:
        name, pool = gang.workload.name, gang.pool.name
        if not gang.pool_holds_it:
            out.append(
                (
                    pool,
                    f"workload '{name}' starts {gang.size} pods together (all or none), each asking {gang.amount} "
                    f"{gang.resource}; pool '{pool}' holds at most {gang.room} such pods at once, so it never starts",
                )
            )
        if not gang.quota_admits_it and gang.tenant is not None:
            out.append(
                (
                    pool,
                    f"workload '{name}' starts {gang.size} pods together (all or none), {gang.total} {gang.resource} "
                    f"in all; tenant '{gang.tenant.name}' may hold at most {gang.ceiling}, so it is never admitted "
                    "whole",
                )
            )
    return out


# --- report ------------------------------------------------------------------------------------


def capacity_data(capacity: Capacity, file: str) -> dict[str, Any]:
    return {
        "blueprint": capacity.blueprint,
        "file": file,
        "pools": [
            {
                "name": pool.name,
                "model": pool.model,
                "nodes": pool.nodes,
                "selection": pool.selection,
                "gpusPerNode": pool.gpus_per_node,
                "physicalGpus": pool.physical_gpus,
                "sharing": pool.sharing,
                "nodeAllocatable": None
                if pool.node_cpu is None and pool.node_memory is None
                else {"cpu": pool.node_cpu, "memory": pool.node_memory, "machineType": pool.machine},
                "units": [
                    {
                        "resource": unit.resource,
                        "perNode": unit.per_node,
                        "total": unit.total,
                        "memoryGB": json_number(unit.memory_gb, "0.01"),
                        "computeShare": json_number(unit.compute, "0.001"),
                        "isolation": str(unit.isolation),
                        "isolationText": ISOLATION_WORDS[unit.isolation],
                        "profile": unit.profile,
                        "demand": unit.demand,
                    }
                    for unit in pool.units
                ],
            }
            for pool in capacity.pools
        ],
        "tenants": [
            {
                "name": tenant.name,
                "scheduler": tenant.scheduler,
                **_kai_queue(tenant),
                "grants": [
                    {
                        "pool": g.pool,
                        "resource": g.resource,
                        "quota": g.quota,
                        "withBorrowing": g.ceiling,
                        "capacity": g.capacity,
                        "demand": g.demand,
                        "status": g.status,
                    }
                    for g in tenant.grants
                ],
            }
            for tenant in capacity.tenants
        ],
        "warnings": [{"pool": pool, "message": message} for pool, message in capacity.warnings],
    }


def _kai_queue(tenant: TenantCapacity) -> dict[str, Any]:
    """A KAI tenant's Queues beside its quota, in KAI's GPU units (a MIG device counts its compute slices): in each
    pool's shard its parent (its quota on the pool) and a leaf per namespace."""
    if not tenant.kai_queues:
        return {}
    return {
        "kaiQueues": [
            {
                "name": q.name,
                "pool": q.pool,
                "parent": q.parent,
                "leaf": q.leaf,
                "gpuQuota": q.quota,
                "gpuLimit": q.limit,
                "overQuotaWeight": q.over_quota_weight,
            }
            for q in tenant.kai_queues
        ],
    }


def format_json(data: dict[str, Any]) -> str:
    return dump_document("CapacityReport", data)


def format_text(data: dict[str, Any]) -> str:
    return package_template("capacity-report.txt.j2").render(report=data)

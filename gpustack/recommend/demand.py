"""What an auto pool must hold: per MIG profile (or whole GPU) the pods' units and the tenants' quotas.

Read from validation's Context, so a workload needs here exactly what compile will make it request once real
layouts replace `auto`: a memory need is the smallest profile that holds it (the pool's auto offers list every
profile, `gpustack.offers`), a profile need is that profile, a count is whole GPUs.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpustack.catalog import MigGeometry
from gpustack.context import Context
from gpustack.diagnostic import JsonPath
from gpustack.model import MigStrategy, NodePool
from gpustack.offers import GPU, full_resource_name, offer_for
from gpustack.quantity import GIB, parse_quantity

WHOLE = "whole"  # the unit of a GPU left whole (MIG off), beside the profiles


@dataclass(frozen=True)
class Need:
    """One unit kind the pool must offer: a MIG profile or WHOLE."""

    unit: str
    pods: tuple[int, ...]  # units each pod requests, largest first (a pod cannot span nodes)
    quota: int  # the largest quota any tenant holds of it on the pool (capacity must reach it, else GS501 warns)
    named: bool  # a quota names it, so the pool must advertise it even at quota 0
    workloads: tuple[str, ...]  # who asks, for messages

    @property
    def units(self) -> int:
        return sum(self.pods)


@dataclass(frozen=True)
class PoolDemand:
    pool: NodePool
    model_key: str
    geometry: MigGeometry
    gpus_per_node: int
    max_nodes: int  # listed nodes, count or maxNodes
    whole_allowed: bool  # strategy mixed: GPUs may stay whole beside the cut ones
    shared_by: int  # MIG time-slicing replicas (1: none): pods per instance
    needs: tuple[Need, ...]  # in the geometry's profile order, WHOLE last
    layout_path: JsonPath  # sharing.mig.layout, the value --write replaces


def auto_pools(ctx: Context) -> tuple[PoolDemand, ...]:
    """Every pool with layout: auto and a MIG-capable model, in blueprint order."""
    found = []
    for pool in ctx.blueprint.pools:
        mig = pool.sharing.mig
        model = ctx.models.get(pool.name)
        if mig is None or not mig.auto or model is None or model.mig is None or pool.gpu is None:
            continue
        shared_by = mig.time_slicing.replicas if mig.time_slicing is not None else 1
        found.append(
            pool_demand(ctx, pool, model.key, model.mig, mig.strategy, shared_by, layout_path=mig.groups[0].path)
        )
    return tuple(found)


def pool_demand(
    ctx: Context,
    pool: NodePool,
    model_key: str,
    geometry: MigGeometry,
    strategy: MigStrategy,
    shared_by: int,
    layout_path: JsonPath,
) -> PoolDemand:
    """What the pool's workloads and quotas ask of it, per unit, as the pool's offers resolve them."""
    assert pool.gpu is not None
    offers = ctx.offers[pool.name]
    unit_of = {o.resource: (o.profile or WHOLE) for o in offers}
    pods: dict[str, list[int]] = {}
    who: dict[str, list[str]] = {}
    for workload in ctx.blueprint.workloads:
        requests = ctx.requests.get(workload.name)
        if workload.pool != pool.name or requests is None:
            continue
        resource, amount = requests.items[0]
        unit = _unit(ctx, workload.name, resource, unit_of, strategy, geometry)
        pods.setdefault(unit, []).extend([amount] * workload.pods)
        who.setdefault(unit, []).append(workload.name)
    quota: dict[str, int] = {}
    for tenant in ctx.blueprint.tenants:
        for short, amount in tenant.quota_for(pool.name).items():
            offer = offer_for(offers, full_resource_name(short))
            if offer is None:
                continue  # GS302's business: validate already said so
            unit = offer.profile or WHOLE
            quota[unit] = max(quota.get(unit, 0), amount)
    order = [p.name for p in geometry.profiles] + [WHOLE]
    needs = tuple(
        Need(
            unit,
            tuple(sorted(pods.get(unit, ()), reverse=True)),
            quota.get(unit, 0),
            unit in quota,
            tuple(who.get(unit, ())),
        )
        for unit in order
        if unit in pods or unit in quota
    )
    return PoolDemand(
        pool=pool,
        model_key=model_key,
        geometry=geometry,
        gpus_per_node=pool.gpu.count,
        max_nodes=pool.node_count,
        whole_allowed=strategy is MigStrategy.MIXED,
        shared_by=shared_by,
        needs=needs,
        layout_path=layout_path,
    )


def _unit(
    ctx: Context, workload: str, resource: str, unit_of: dict[str, str], strategy: MigStrategy, geometry: MigGeometry
) -> str:
    if strategy is MigStrategy.MIXED or resource != GPU:
        return unit_of.get(resource, WHOLE)
    # single: every profile is advertised as nvidia.com/gpu; the need names the profile or its memory picks one.
    need = next(w for w in ctx.blueprint.workloads if w.name == workload).gpu
    if need.profile is not None:
        return need.profile
    return smallest_holding(geometry, need.memory)


def smallest_holding(geometry: MigGeometry, memory: str | None) -> str:
    """The profile a memory need resolves to (gpustack.needs: the smallest offered profile that holds it)."""
    wanted = parse_quantity(memory) if memory is not None else 0
    fitting = [p for p in geometry.profiles if p.memory_gb * GIB >= wanted and "+" not in p.name]
    return min(fitting, key=lambda p: (p.memory_gb, p.name)).name if fitting else geometry.profiles[-1].name

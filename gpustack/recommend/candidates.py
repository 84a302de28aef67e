"""The three sharings a `sharing.strategy: auto` pool may get, each sized on its own or refused with a reason.

- whole GPUs (`strategy: none`): every pod gets `gpu.count` GPUs, spread over the nodes as the scheduler spreads
  them (`packing`); a `gpu.profile` need rules it out. Nothing to cut, so first-fit-decreasing is the same count.
- MIG (`strategy: mig`, mixed, GPUs left whole beside cut ones): the layout solver over the catalog's layouts.
- time-slicing: only where every workload on the pool sets `gpu.shareable`, states `gpu.memory` and asks one GPU
  per pod, and every tenant that may run pods there has such a workload (a tenant whose pods the blueprint does
  not describe never said it tolerates an unisolated GPU). Replicas are memory-safe: the largest need times the
  replicas fits the GPU (GS404's rule), at least 2 (the device plugin's minimum); of those, the fewest that still
  give the fewest nodes, so no GPU carries more pods than the count requires.

Quotas are in the units each sharing advertises: `gpu` counts GPUs under whole GPUs, replicas (pods) under
time-slicing, GPUs left whole under MIG, where `mig-<profile>` counts instances. A sharing is refused where a
tenant's quota on the pool names a resource it does not advertise (GS502 would refuse the written blueprint), or
leaves out the resource one of the tenant's workloads asks under it (the quota would admit none of its pods).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum

from gpustack.catalog import GpuModel
from gpustack.context import Context
from gpustack.model import MigStrategy, NodePool, Tenant, Workload
from gpustack.offers import GPU, full_resource_name
from gpustack.quantity import GIB, format_gib, parse_quantity
from gpustack.recommend.demand import pool_demand
from gpustack.recommend.layouts import Recommendation, has_slices, no_fit_words, solved
from gpustack.recommend.packing import whole_nodes


class Choice(StrEnum):
    """What --write puts in sharing.strategy; in order of isolation, strongest first (the tie-break)."""

    WHOLE = "none"
    MIG = "mig"
    TIME_SLICING = "time-slicing"

    @property
    def words(self) -> str:
        return {"none": "whole GPUs", "mig": "MIG", "time-slicing": "time-slicing"}[self.value]


@dataclass(frozen=True)
class Candidate:
    choice: Choice
    gpus_per_node: int
    refusal: str | None = None  # why it is no candidate at all (None: it is one)
    nodes: int | None = None  # the fewest nodes within the pool's (None: refused, or nothing fits them)
    bound_nodes: int | None = None  # nodes it cannot go below
    optimal: bool = False
    baseline_nodes: int | None = None  # first-fit-decreasing (None: no fit within the pool's nodes)
    too_small: str | None = None  # where nothing fits the pool's nodes: what does not, and what it would take
    layouts: Recommendation | None = None  # MIG: the layouts chosen
    replicas: int | None = None  # time-slicing: pods per GPU
    most_replicas: int | None = None  # time-slicing: the most the largest memory need allows

    @property
    def fits(self) -> bool:
        return self.nodes is not None

    @property
    def gpus(self) -> int:
        assert self.nodes is not None
        return self.nodes * self.gpus_per_node

    @property
    def bound_gpus(self) -> int | None:
        return None if self.bound_nodes is None else self.bound_nodes * self.gpus_per_node

    @property
    def baseline_gpus(self) -> int | None:
        return None if self.baseline_nodes is None else self.baseline_nodes * self.gpus_per_node


@dataclass(frozen=True)
class Pool:
    """What every candidate reads: the pool, its GPU, the workloads on it and the tenants granted it."""

    ctx: Context
    pool: NodePool
    model: GpuModel
    workloads: tuple[Workload, ...]
    tenants: tuple[Tenant, ...]

    @property
    def gpus_per_node(self) -> int:
        return self.pool.gpus_per_node

    @property
    def max_nodes(self) -> int:
        return self.pool.node_count

    def limited(self) -> tuple[Tenant, ...]:
        """Tenants whose quota entry on the pool limits it (not `unlimited`; no entry at all is GS610's business)."""
        name = self.pool.name
        return tuple(t for t in self.tenants if name in dict(t.quota) and not t.unlimited_on(name))

    def quota_of(self, resource: str) -> int:
        """The largest quota any tenant holds of `resource` on the pool: capacity must reach it (else GS501)."""
        short = resource.removeprefix("nvidia.com/")
        return max((t.quota_for(self.pool.name).get(short, 0) for t in self.limited()), default=0)


def pool_facts(ctx: Context, pool: NodePool, model: GpuModel) -> Pool:
    workloads = tuple(w for w in ctx.blueprint.workloads if w.pool == pool.name)
    tenants = tuple(t for t in ctx.blueprint.tenants if pool.name in t.pools)
    return Pool(ctx, pool, model, workloads, tenants)


def whole_candidate(facts: Pool) -> Candidate:
    g = facts.gpus_per_node
    for workload in facts.workloads:
        if workload.gpu.profile is not None:
            return Candidate(Choice.WHOLE, g, f"workload '{workload.name}' asks for MIG profile {workload.gpu.profile}")
    refusal = _quota_refusal(facts, {GPU}, {w.name: GPU for w in facts.workloads}, Choice.WHOLE)
    if refusal is not None:
        return Candidate(Choice.WHOLE, g, refusal)
    for workload in facts.workloads:
        if workload.gpu.count > g:  # a pod cannot span nodes: no node count holds it
            return Candidate(
                Choice.WHOLE, g, f"workload '{workload.name}' asks {workload.gpu.count} GPUs per pod, a node has {g}"
            )
    pods = [w.gpu.count for w in facts.workloads for _ in range(w.pods)]
    quota = facts.quota_of(GPU)
    packed = whole_nodes(pods, g, quota)
    fits = packed.nodes <= facts.max_nodes
    asked = f"{len(pods)} pod(s) ask {sum(pods)} GPU(s)" + _quota_words(quota, "GPU(s)")
    return Candidate(
        Choice.WHOLE,
        g,
        nodes=packed.nodes if fits else None,
        bound_nodes=packed.bound,
        optimal=packed.optimal,
        baseline_nodes=packed.nodes if fits else None,  # nothing to cut: the same spread
        too_small=None if fits else asked + _takes(packed.nodes, facts.max_nodes),
    )


def mig_candidate(facts: Pool) -> Candidate:
    g = facts.gpus_per_node
    geometry = facts.model.mig
    if geometry is None:
        return Candidate(Choice.MIG, g, f"{facts.model.key} has no MIG")
    pool = facts.pool
    demand = pool_demand(
        facts.ctx, pool, facts.model.key, geometry, MigStrategy.MIXED, 1, layout_path=(*pool.sharing.path, "strategy")
    )
    if not has_slices(demand):
        return Candidate(Choice.MIG, g, "nothing to cut: every workload and quota on the pool asks for whole GPUs")
    asks = {w.name: requests.gpu_resource for w in facts.workloads if (requests := facts.ctx.requests.get(w.name))}
    refusal = _quota_refusal(facts, None, asks, Choice.MIG)
    if refusal is not None:
        return Candidate(Choice.MIG, g, refusal)
    found = solved(demand)
    if found is None:
        return Candidate(Choice.MIG, g, too_small=no_fit_words(demand))
    return Candidate(
        Choice.MIG,
        g,
        nodes=found.nodes,
        bound_nodes=found.search.bound.nodes,
        optimal=found.optimal,
        baseline_nodes=found.search.baseline_nodes,
        layouts=found,
    )


def time_slicing_candidate(facts: Pool) -> Candidate:
    g = facts.gpus_per_node
    refusal = _not_shareable(facts)
    if refusal is not None:
        return Candidate(Choice.TIME_SLICING, g, refusal)
    refusal = _quota_refusal(facts, {GPU}, {w.name: GPU for w in facts.workloads}, Choice.TIME_SLICING)
    if refusal is not None:
        return Candidate(Choice.TIME_SLICING, g, refusal)
    gpu = Decimal(facts.model.memory_gib) * GIB
    needs = {w.name: parse_quantity(w.gpu.memory or "0") for w in facts.workloads}
    largest = max(needs, key=lambda name: (needs[name], name))
    most = int(gpu // needs[largest]) if needs[largest] > 0 else 0
    if most < 2:
        return Candidate(
            Choice.TIME_SLICING,
            g,
            f"workload '{largest}' needs {format_gib(needs[largest])}: two of its pods do not fit one "
            f"{facts.model.key} ({facts.model.memory_gib} GiB), and time-slicing needs at least 2 replicas",
        )
    pods = sum(w.pods for w in facts.workloads)
    units = max(pods, facts.quota_of(GPU))  # a replica per pod; the quota counts replicas
    nodes = max(1, -(-units // (g * most)))
    replicas = max(2, -(-units // (g * nodes)))  # the fewest replicas that keep that node count
    fits = nodes <= facts.max_nodes
    return Candidate(
        Choice.TIME_SLICING,
        g,
        nodes=nodes if fits else None,
        bound_nodes=nodes,
        optimal=True,  # a pod takes one replica: the count is exact, not a packing
        baseline_nodes=nodes if fits else None,
        too_small=None
        if fits
        else f"{pods} pod(s)"
        + _quota_words(facts.quota_of(GPU), "replica(s)")
        + f", at most {most} per GPU"
        + _takes(nodes, facts.max_nodes),
        replicas=replicas if fits else None,
        most_replicas=most,
    )


def _not_shareable(facts: Pool) -> str | None:
    """Why time-slicing may not hold the pool's pods (None: every one of them tolerates it)."""
    if not facts.workloads:
        return "no workload on the pool says it tolerates sharing (gpu.shareable)"
    for workload in facts.workloads:
        need = workload.gpu
        if not need.shareable:
            return f"workload '{workload.name}' does not set gpu.shareable: true"
        if need.profile is not None:
            return f"workload '{workload.name}' asks for MIG profile {need.profile}"
        if need.memory is None:
            return f"workload '{workload.name}' states no gpu.memory, so no replica count is safe for it"
        if need.count != 1:
            return (
                f"workload '{workload.name}' asks {need.count} GPUs per pod; a time-sliced pod gets one replica "
                "(more give it no more compute, and the device plugin refuses them)"
            )
    described = {w.tenant for w in facts.workloads}
    for tenant in facts.tenants:
        name = facts.pool.name
        may_run = tenant.unlimited_on(name) or any(amount > 0 for amount in tenant.quota_for(name).values())
        if may_run and tenant.name not in described:
            return (
                f"tenant '{tenant.name}' may run pods on the pool (its quota) but has no workload there to say "
                "they tolerate an unisolated GPU"
            )
    return None


def _quota_refusal(facts: Pool, advertised: set[str] | None, asks: Mapping[str, str], choice: Choice) -> str | None:
    """Why a tenant's quota on the pool does not fit `choice` (None: every quota does).

    `advertised`: the resource names the sharing has (None: any a quota names, as MIG's layouts then offer it);
    `asks`: the resource each workload requests under it.
    """
    name = facts.pool.name
    for tenant in facts.limited():
        amounts = tenant.quota_for(name)
        for short in amounts:
            if advertised is not None and full_resource_name(short) not in advertised:
                return f"the quota of tenant '{tenant.name}' names {short}, which {choice.words} do not advertise"
        for workload in facts.workloads:
            resource = asks.get(workload.name)
            if workload.tenant != tenant.name or resource is None or _opened(facts, tenant, resource):
                continue
            short = resource.removeprefix("nvidia.com/")
            return (
                f"the quota of tenant '{tenant.name}' on the pool does not name {short}, which workload "
                f"'{workload.name}' asks under {choice.words}: it would admit none of its pods"
            )
    return None


def _opened(facts: Pool, tenant: Tenant, resource: str) -> bool:
    """Whether the tenant's quotas let it ask `resource` at all (gpustack.schedulers.closed_resources' rule): some
    quota entry of it names the resource, or it holds whole (unlimited) another pool that advertises it."""
    if any(full_resource_name(short) == resource for _pool, items in tenant.quota for short, _ in items):
        return True
    return any(
        tenant.unlimited_on(pool) and any(o.resource == resource for o in facts.ctx.offers.get(pool, ()))
        for pool in tenant.pools
        if pool != facts.pool.name
    )


def _quota_words(quota: int, unit: str) -> str:
    return f" and a quota of {quota} {unit}" if quota else ""


def _takes(nodes: int, most: int) -> str:
    return f"; it would take {nodes} node(s), the pool has at most {most}"

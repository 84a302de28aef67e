"""A workload's GPU need, as written ("2 GPUs", "a 3g.40gb slice", "24Gi"), resolved against its pool.

The answer is either the exact extended-resource requests a pod of the workload makes,
or why the pool cannot serve it and what would.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from gpustack.catalog import GpuModel
from gpustack.model import MigStrategy, NodePool, SharingStrategy, Workload
from gpustack.offers import GPU, HAMI_CORES, HAMI_MEMORY, Isolation, Offer
from gpustack.quantity import GIB, MIB, format_gib, parse_quantity


@dataclass(frozen=True)
class Requests:
    """Per pod (per worker for Volcano Jobs): resource name -> amount; requests equal limits."""

    items: tuple[tuple[str, int], ...]

    @property
    def gpu_resource(self) -> str:
        return self.items[0][0]

    def as_dict(self) -> dict[str, int]:
        return dict(self.items)


@dataclass(frozen=True)
class Unfit:
    reason: str
    hint: str
    field: str | None = None  # the gpu field at fault when it is not the one that picked the unit (count, ...)


def resolve_need(workload: Workload, pool: NodePool, model: GpuModel, offers: tuple[Offer, ...]) -> Requests | Unfit:
    need = workload.gpu
    hami = pool.sharing.strategy is SharingStrategy.HAMI
    if need.cores is not None and not hami:
        return Unfit(
            f"asks for gpu.cores ({need.cores}% of each GPU's compute), which only a HAMi pool can give; "
            f"pool '{pool.name}' uses sharing strategy {pool.sharing.strategy}",
            "drop gpu.cores, or place the workload on a pool with sharing.strategy: hami",
            field="cores",
        )
    if need.profile is not None:
        result = _by_profile(need.profile, need.count, pool, model, offers)
    elif need.memory is not None:
        result = _by_memory(parse_quantity(need.memory), need.count, pool, model, offers)
    else:
        result = _by_count(need.count, pool, offers)
    if isinstance(result, Requests) and need.cores is not None:
        # HAMi reads gpucores per GPU, beside the count (and gpumem) the need already resolved to.
        return Requests((*result.items, (HAMI_CORES, need.cores)))
    return result


def _profiles_offered(offers: tuple[Offer, ...]) -> list[Offer]:
    return sorted((o for o in offers if o.profile is not None), key=lambda o: (o.memory_gib or 0, o.resource))


def _by_profile(
    profile: str, count: int, pool: NodePool, model: GpuModel, offers: tuple[Offer, ...]
) -> Requests | Unfit:
    if pool.sharing.strategy not in (SharingStrategy.MIG, SharingStrategy.AUTO):
        return Unfit(
            f"asks for MIG profile {profile}, but pool '{pool.name}' does not use MIG "
            f"(its sharing strategy is {pool.sharing.strategy})",
            "ask for gpu.count or gpu.memory instead, or place the workload on a MIG pool",
        )
    offer = next((o for o in offers if o.profile == profile), None)
    if offer is None:
        offered = ", ".join(o.profile or "" for o in _profiles_offered(offers)) or "none"
        exists = model.mig is not None and model.mig.profile(profile) is not None
        where = (
            f"{profile} is a {model.key} profile, but the pool's layout does not create it"
            if exists
            else f"{profile} is not a MIG profile of {model.key}"
        )
        return Unfit(
            f"asks for MIG profile {profile}, which no node of pool '{pool.name}' offers: {where}",
            f"the pool offers {offered}; ask for one of those, or add {profile} to the pool's layout",
        )
    return _within_node(Requests(((offer.resource, count),)), pool, offers)


def _by_memory(
    memory: Decimal, count: int, pool: NodePool, model: GpuModel, offers: tuple[Offer, ...]
) -> Requests | Unfit:
    need = format_gib(memory)
    strategy = pool.sharing.strategy
    # sharing.strategy: auto resolves as MIG's mixed strategy would over its menu (every profile, whole GPUs beside):
    # what the MIG candidate of `gpustack recommend` asks; the whole-GPU and time-slicing candidates ask nvidia.com/gpu.
    if strategy is SharingStrategy.MIG or (strategy is SharingStrategy.AUTO and model.mig is not None):
        fitting = [o for o in _profiles_offered(offers) if o.memory_gib is not None and o.memory_gib * GIB >= memory]
        if fitting:
            return _within_node(Requests(((fitting[0].resource, count),)), pool, offers)
        # The smallest unit that holds the need: a slice if one does, else a GPU the pool leaves whole.
        whole = _whole_gpus(offers)
        if whole is not None and memory <= Decimal(model.memory_gib) * GIB:
            return _within_node(Requests(((whole.resource, count),)), pool, offers)
        largest = _profiles_offered(offers)[-1] if _profiles_offered(offers) else None
        return Unfit(
            f"needs {need} of GPU memory, but the largest MIG slice pool '{pool.name}' offers is "
            f"{largest.profile if largest else 'none'} ({largest.memory_gib if largest else 0} GB)"
            + (f", and its whole {model.key} GPUs have {model.memory_gib} GiB" if whole is not None else ""),
            _memory_ways_out(memory, pool, model),
        )
    if strategy is SharingStrategy.HAMI and pool.sharing.hami is not None:
        available = Decimal(model.memory_gib) * GIB * Decimal(str(pool.sharing.hami.memory_scaling))
        if memory > available:
            return Unfit(
                f"needs {need} of GPU memory, more than one {model.key} in pool '{pool.name}' gives "
                f"({format_gib(available)})",
                "use a pool with larger GPUs or raise hami.memoryScaling (oversubscription)",
            )
        mib = int((memory / MIB).to_integral_value(rounding="ROUND_CEILING"))
        return _within_node(Requests(((GPU, count), (HAMI_MEMORY, mib))), pool, offers)
    unit = offers[0]
    if unit.isolation is Isolation.MPS_LIMITS and unit.memory_gib is not None and memory > unit.memory_gib * GIB:
        return Unfit(
            f"needs {need} of GPU memory, but MPS in pool '{pool.name}' limits each client to "
            f"{format_gib(unit.memory_gib * GIB)} ({model.memory_gib} GiB / {unit.shared_by} replicas)",
            "lower mps.replicas, or use a whole-GPU or MIG pool",
        )
    if memory > Decimal(model.memory_gib) * GIB:
        return Unfit(
            f"needs {need} of GPU memory, more than one {model.key} has ({model.memory_gib} GiB)",
            "ask for several GPUs with gpu.count and shard the model, or use a pool with larger GPUs",
        )
    return _within_node(Requests(((unit.resource, count),)), pool, offers)


def _memory_ways_out(memory: Decimal, pool: NodePool, model: GpuModel) -> str:
    ways = []
    if model.mig is not None:
        fits = [p.name for p in model.mig.profiles if Decimal(p.memory_gb) * GIB >= memory and "+" not in p.name]
        if fits:
            ways.append(f"a layout with a profile that fits ({', '.join(dict.fromkeys(fits))})")
    if Decimal(model.memory_gib) * GIB >= memory:
        ways.append("a whole-GPU pool")
        ways.append("a HAMi pool (sharing.strategy: hami) that gives each pod exactly the memory it asks for")
    return "ways out: " + "; ".join(ways) if ways else f"no {model.key} can hold {format_gib(memory)}: use larger GPUs"


def _whole_gpus(offers: tuple[Offer, ...]) -> Offer | None:
    """The whole GPUs a MIG pool's group leaves uncut (nvidia.com/gpu beside the slices), if any: exclusive, or
    time-sliced where mig.timeSlicing gives `whole` a count (nvidia.com/gpu.shared under renameByDefault)."""
    return next((o for o in offers if o.profile is None and o.isolation in (Isolation.EXCLUSIVE, Isolation.NONE)), None)


def _by_count(count: int, pool: NodePool, offers: tuple[Offer, ...]) -> Requests | Unfit:
    mig = pool.sharing.mig
    if mig is not None and mig.strategy is MigStrategy.MIXED:
        whole = _whole_gpus(offers)
        if whole is not None:
            return _within_node(Requests(((whole.resource, count),)), pool, offers)
        offered = ", ".join(o.profile or "" for o in _profiles_offered(offers))
        return Unfit(
            f"asks for {count} GPU(s), but pool '{pool.name}' is partitioned by MIG (mixed) "
            "and advertises no whole GPUs",
            f"name a MIG profile in gpu.profile (the pool offers {offered}) or a memory need in gpu.memory, "
            "or leave some GPUs whole (a mig group with whole: true)",
        )
    return _within_node(Requests(((offers[0].resource, count),)), pool, offers)


def _within_node(requests: Requests, pool: NodePool, offers: tuple[Offer, ...]) -> Requests | Unfit:
    for resource, amount in requests.items:
        offer = next((o for o in offers if o.resource == resource), None)
        if offer is not None and amount > offer.per_node:
            return Unfit(
                f"asks for {amount} {resource} per pod, but a node of pool '{pool.name}' has only {offer.per_node}",
                "a pod cannot span nodes: lower the count, or use more workers (VolcanoJob) or larger nodes",
            )
    return requests

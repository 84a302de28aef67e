"""What a pool's nodes advertise to the scheduler, derived once from its GPU model and sharing.

Checks, the compiler, capacity reports and the simulator all read resource names
from here, so a pool's resource name is written in exactly one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum

from gpustack.catalog import GpuModel
from gpustack.mig import resource_name as mig_resource_name
from gpustack.model import MigGroup, MigStrategy, NodePool, Replication, SharingStrategy

GPU = "nvidia.com/gpu"
GPU_SHARED = "nvidia.com/gpu.shared"
# The device plugin's name for a replicated resource under renameByDefault: <resource>.shared.
SHARED_SUFFIX = ".shared"
HAMI_MEMORY = "nvidia.com/gpumem"
HAMI_CORES = "nvidia.com/gpucores"
RESOURCE_PREFIX = "nvidia.com/"


class Isolation(StrEnum):
    EXCLUSIVE = "exclusive"  # a whole GPU per unit
    HARDWARE = "hardware"  # MIG: own memory and compute
    MPS_LIMITS = "mps-limits"  # MPS: memory and thread limits per client, shared fault domain
    SOFTWARE = "software"  # HAMi: limits enforced in the CUDA library, bypassable
    NONE = "none"  # time-slicing: nothing isolated


@dataclass(frozen=True)
class Offer:
    """One extended resource a node of the pool advertises."""

    resource: str
    per_node: int
    memory_gib: Decimal | None  # memory a unit can use (None: not a GPU unit, e.g. gpumem itself)
    isolation: Isolation
    profile: str | None = None  # MIG profile behind the unit
    shared_by: int = 1  # how many units share one physical GPU (or MIG slice)
    gpus: int | None = None  # a node's GPUs the units are cut from, where not all of them (MIG groups)

    @property
    def short_name(self) -> str:
        return self.resource.removeprefix(RESOURCE_PREFIX)


def group_devices(group: MigGroup, gpu_count: int) -> int:
    return gpu_count if group.devices is None else len([d for d in group.devices if d < gpu_count])


def pool_offers(pool: NodePool, model: GpuModel | None) -> tuple[Offer, ...]:
    """Resources per node, in a stable order; empty when the model is unknown."""
    if model is None or pool.gpu is None:
        return ()
    sharing = pool.sharing
    gpus = pool.gpu.count
    memory = Decimal(model.memory_gib)
    if sharing.strategy is SharingStrategy.MIG and sharing.mig is not None:
        return _mig_offers(pool, model)
    if sharing.strategy is SharingStrategy.AUTO:
        return _auto_offers(pool, model)
    if sharing.strategy in (SharingStrategy.TIME_SLICING, SharingStrategy.MPS) and sharing.replication is not None:
        replicas = sharing.replication.replicas
        name = GPU_SHARED if sharing.replication.rename_by_default else GPU
        if sharing.strategy is SharingStrategy.MPS:
            return (Offer(name, gpus * replicas, memory / replicas, Isolation.MPS_LIMITS, shared_by=replicas),)
        return (Offer(name, gpus * replicas, memory, Isolation.NONE, shared_by=replicas),)
    if sharing.strategy is SharingStrategy.HAMI and sharing.hami is not None:
        hami = sharing.hami
        memory_mib = int(Decimal(model.memory_gib * 1024) * Decimal(str(hami.memory_scaling)))
        return (
            Offer(GPU, gpus * hami.split_count, memory, Isolation.SOFTWARE, shared_by=hami.split_count),
            Offer(HAMI_MEMORY, gpus * memory_mib, None, Isolation.SOFTWARE),
            Offer(HAMI_CORES, gpus * 100, None, Isolation.SOFTWARE),
        )
    return (Offer(GPU, gpus, memory, Isolation.EXCLUSIVE),)


def _mig_offers(pool: NodePool, model: GpuModel) -> tuple[Offer, ...]:
    mig = pool.sharing.mig
    assert mig is not None
    if mig.auto:
        return _auto_offers(pool, model)
    single = mig.strategy is MigStrategy.SINGLE
    counts: dict[str, int] = {}
    hosts: dict[str, int] = {}  # profile -> GPUs of the node that carry it
    for group in mig.cut_groups:
        devices = group_devices(group, pool.gpus_per_node)
        for profile, count in group.instances.items():
            counts[profile] = counts.get(profile, 0) + devices * count
            hosts[profile] = hosts.get(profile, 0) + devices
    # Only where groups split the node: a pool-wide layout's units come from every GPU, as before.
    split = any(group.devices is not None for group in mig.groups)
    offers = []
    # GPUs a group leaves whole (MIG off) are plain GPUs to the plugin under the mixed strategy: nvidia.com/gpu.
    whole = sum(group_devices(group, pool.gpus_per_node) for group in mig.whole_groups)
    sliced = mig.time_slicing
    if whole and not single:  # single refuses such a node (a check says so): nothing to advertise
        offers.append(_whole_offer(model, whole, sliced))
    geometry = model.mig
    for profile, units in counts.items():
        spec = geometry.profile(profile) if geometry is not None else None
        memory = Decimal(spec.memory_gb) if spec is not None else None
        if sliced is not None and sliced.shares(profile) and not single:
            # Each instance advertised `replicas` times; the pods on one instance share its memory, unisolated.
            name = mig_resource_name(profile) + (SHARED_SUFFIX if sliced.rename_by_default else "")
            replicas = sliced.replicas_for(profile)
            offers.append(
                Offer(
                    name,
                    units * replicas,
                    memory,
                    Isolation.NONE,
                    profile=profile,
                    shared_by=replicas,
                    gpus=hosts[profile] if split else None,
                )
            )
            continue
        name = GPU if single else mig_resource_name(profile)
        offers.append(
            Offer(name, units, memory, Isolation.HARDWARE, profile=profile, gpus=hosts[profile] if split else None)
        )
    return tuple(offers)


def _whole_offer(model: GpuModel, whole: int, sliced: Replication | None) -> Offer:
    """The GPUs a mixed pool leaves whole: nvidia.com/gpu, time-sliced where mig.timeSlicing gives `whole` a count
    (nvidia.com/gpu.shared under renameByDefault), as the plugin replicates any resource its config names."""
    memory = Decimal(model.memory_gib)
    if sliced is None or not sliced.shares(None):
        return Offer(GPU, whole, memory, Isolation.EXCLUSIVE, gpus=whole)
    replicas = sliced.replicas_for(None)
    name = GPU_SHARED if sliced.rename_by_default else GPU
    return Offer(name, whole * replicas, memory, Isolation.NONE, shared_by=replicas, gpus=whole)


def _auto_offers(pool: NodePool, model: GpuModel) -> tuple[Offer, ...]:
    """layout: auto (or sharing.strategy: auto), before `gpustack recommend` chose: whole GPUs (but under MIG's
    single strategy) and every profile the GPU has, each as many times as one node could hold it.

    Needs resolve against this menu as they will against the chosen layouts (the smallest profile that holds a
    memory need), and quotas may name any profile; compile refuses the pool until real layouts replace auto.
    """
    mig = pool.sharing.mig  # None under sharing.strategy: auto, which offers what MIG's mixed strategy would
    assert pool.gpu is not None
    single = mig is not None and mig.strategy is MigStrategy.SINGLE
    gpus = pool.gpu.count
    offers = [] if single else [Offer(GPU, gpus, Decimal(model.memory_gib), Isolation.EXCLUSIVE)]
    sliced = mig.time_slicing if mig is not None else None
    for spec in model.mig.profiles if model.mig is not None else ():
        units = spec.max_count * gpus
        if sliced is not None and not single:
            name = mig_resource_name(spec.name) + (SHARED_SUFFIX if sliced.rename_by_default else "")
            offers.append(
                Offer(
                    name,
                    units * sliced.replicas,
                    Decimal(spec.memory_gb),
                    Isolation.NONE,
                    profile=spec.name,
                    shared_by=sliced.replicas,
                )
            )
            continue
        name = GPU if single else mig_resource_name(spec.name)
        offers.append(Offer(name, units, Decimal(spec.memory_gb), Isolation.HARDWARE, profile=spec.name))
    return tuple(offers)


def offer_for(offers: tuple[Offer, ...], resource: str) -> Offer | None:
    return next((o for o in offers if o.resource == resource), None)


def full_resource_name(short: str) -> str:
    return short if short.startswith(RESOURCE_PREFIX) else RESOURCE_PREFIX + short

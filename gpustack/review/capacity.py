"""Capacity before and after: per pool what its nodes advertise, per tenant what it may and wants to take."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Generic, TypeVar

from gpustack.checks.tenancy import tenant_demand
from gpustack.offers import Offer, full_resource_name
from gpustack.review.snapshot import Snapshot

T = TypeVar("T")


@dataclass(frozen=True)
class Pair(Generic[T]):
    """One figure in both versions; None where the version does not have it."""

    before: T | None
    after: T | None

    @property
    def changed(self) -> bool:
        return self.before != self.after


@dataclass(frozen=True)
class Units:
    """What one advertised resource gives across a pool."""

    per_node: int
    total: int
    memory_gib: Decimal | None  # memory one unit can use; None for counters such as gpumem
    isolation: str
    profile: str | None
    shared_by: int


@dataclass(frozen=True)
class ResourceCapacity:
    resource: str
    units: Pair[Units]

    @property
    def changed(self) -> bool:
        return self.units.changed


@dataclass(frozen=True)
class PoolCapacity:
    pool: str
    model: Pair[str]
    nodes: Pair[int]
    gpus: Pair[int]  # physical GPUs in the pool
    sharing: Pair[str]
    resources: tuple[ResourceCapacity, ...]

    @property
    def changed(self) -> bool:
        figures = (self.model, self.nodes, self.gpus, self.sharing)
        return any(f.changed for f in figures) or any(r.changed for r in self.resources)


@dataclass(frozen=True)
class TenantResource:
    pool: str
    resource: str
    access: Pair[bool]  # whether the tenant may use the pool; None where the tenant does not exist
    quota: Pair[int]  # None: no quota (the pool's whole supply), or no access
    need: Pair[int]  # units the tenant's workload templates request with every pod running; None without access
    supply: Pair[int]  # units the whole pool advertises; None where the pool does not exist

    @property
    def changed(self) -> bool:
        return any(f.changed for f in (self.access, self.quota, self.need, self.supply))


@dataclass(frozen=True)
class TenantCapacity:
    tenant: str
    pools: Pair[tuple[str, ...]]
    resources: tuple[TenantResource, ...]

    @property
    def changed(self) -> bool:
        return self.pools.changed or any(r.changed for r in self.resources)


@dataclass(frozen=True)
class Capacity:
    pools: tuple[PoolCapacity, ...]
    tenants: tuple[TenantCapacity, ...]


def _units(offer: Offer, nodes: int) -> Units:
    return Units(
        offer.per_node, offer.per_node * nodes, offer.memory_gib, str(offer.isolation), offer.profile, offer.shared_by
    )


def _pool_units(snapshot: Snapshot, pool: str) -> dict[str, Units]:
    found = snapshot.pools.get(pool)
    if found is None:
        return {}
    return {offer.resource: _units(offer, found.node_count) for offer in snapshot.offers(pool)}


def _sharing_text(snapshot: Snapshot, pool: str) -> str | None:
    found = snapshot.pools.get(pool)
    if found is None:
        return None
    sharing = found.sharing
    if sharing.replication is not None:
        return f"{sharing.strategy} x{sharing.replication.replicas}"
    if sharing.mig is not None and str(sharing.strategy) == "mig":
        return f"mig {sharing.mig.strategy}"
    return str(sharing.strategy)


def pool_capacity(before: Snapshot, after: Snapshot, pool: str) -> PoolCapacity:
    old, new = _pool_units(before, pool), _pool_units(after, pool)
    sides = (before.pools.get(pool), after.pools.get(pool))
    resources = tuple(ResourceCapacity(name, Pair(old.get(name), new.get(name))) for name in _ordered(old, new))
    return PoolCapacity(
        pool=pool,
        model=Pair(before.model_name(pool), after.model_name(pool)),
        nodes=Pair(*(None if p is None else p.node_count for p in sides)),
        gpus=Pair(*(None if p is None else p.node_count * p.gpu.count for p in sides)),
        sharing=Pair(_sharing_text(before, pool), _sharing_text(after, pool)),
        resources=resources,
    )


def _ordered(old: dict[str, Units], new: dict[str, Units]) -> list[str]:
    """The new version's resource order (offers are in a stable order), then those that went away."""
    return list(new) + [name for name in old if name not in new]


def _quota(snapshot: Snapshot, tenant: str, pool: str) -> dict[str, int]:
    found = snapshot.tenants.get(tenant)
    if found is None:
        return {}
    return {full_resource_name(short): amount for short, amount in found.quota_for(pool).items()}


def _needs(snapshot: Snapshot, tenant: str) -> dict[tuple[str, str], int]:
    if snapshot.context is None or tenant not in snapshot.tenants:
        return {}
    return tenant_demand(snapshot.context, tenant)


def _access(snapshot: Snapshot, tenant: str) -> tuple[str, ...] | None:
    found = snapshot.tenants.get(tenant)
    return None if found is None else found.pools


def tenant_capacity(before: Snapshot, after: Snapshot, tenant: str) -> TenantCapacity:
    needs = (_needs(before, tenant), _needs(after, tenant))
    pools = Pair(_access(before, tenant), _access(after, tenant))
    rows: list[TenantResource] = []
    for pool in dict.fromkeys([*(pools.after or ()), *(pools.before or ())]):
        quotas = (_quota(before, tenant, pool), _quota(after, tenant, pool))
        supplies = (_pool_units(before, pool), _pool_units(after, pool))
        gpu_units = [n for side in reversed(supplies) for n, units in side.items() if units.memory_gib is not None]
        wanted = [name for side in reversed(quotas) for name in side]
        wanted += [resource for side in reversed(needs) for (p, resource) in side if p == pool]
        access = tuple(None if side is None else pool in side for side in (pools.before, pools.after))
        for resource in dict.fromkeys(wanted or gpu_units):
            rows.append(
                TenantResource(
                    pool,
                    resource,
                    Pair(*access),
                    Pair(*(q.get(resource) for q in quotas)),
                    Pair(*(n.get((pool, resource), 0) if a else None for n, a in zip(needs, access, strict=True))),
                    Pair(*(None if resource not in s else s[resource].total for s in supplies)),
                )
            )
    return TenantCapacity(tenant, pools, tuple(rows))


def capacity_deltas(before: Snapshot, after: Snapshot) -> Capacity:
    pools = list(dict.fromkeys([*after.pools, *before.pools]))
    tenants = list(dict.fromkeys([*after.tenants, *before.tenants]))
    return Capacity(
        pools=tuple(pool_capacity(before, after, p) for p in pools),
        tenants=tuple(tenant_capacity(before, after, t) for t in tenants),
    )

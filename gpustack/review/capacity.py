"""Capacity before and after: the `gpustack capacity` figures of both versions, side by side.

Each side is `gpustack.capacity.measure_capacity` of its Context, so `gpustack diff` and `gpustack capacity` can
never disagree on what a pool gives or a tenant may take and asks for.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from gpustack.capacity import Capacity, Grant, PoolCapacity, TenantCapacity, Unit
from gpustack.offers import full_resource_name
from gpustack.review.snapshot import Snapshot

T = TypeVar("T")
S = TypeVar("S")


@dataclass(frozen=True)
class Pair(Generic[T]):
    """One figure in both versions; None where the version does not have it."""

    before: T | None
    after: T | None

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def map(self, figure: Callable[[T], S | None]) -> Pair[S]:
        return Pair(*(None if side is None else figure(side) for side in (self.before, self.after)))


def _offered(unit: Unit | None) -> tuple[object, ...] | None:
    """What a pool gives of a resource: a change in what the templates ask of it is the tenant rows' business."""
    if unit is None:
        return None
    return (unit.per_node, unit.total, unit.memory_gb, unit.isolation, unit.profile, unit.shared_by)


@dataclass(frozen=True)
class ResourceChange:
    resource: str
    units: Pair[Unit]

    @property
    def changed(self) -> bool:
        return _offered(self.units.before) != _offered(self.units.after)


@dataclass(frozen=True)
class PoolChange:
    pool: str
    capacity: Pair[PoolCapacity]
    resources: tuple[ResourceChange, ...]

    @property
    def model(self) -> Pair[str]:
        return self.capacity.map(lambda p: p.model)

    @property
    def nodes(self) -> Pair[int]:
        return self.capacity.map(lambda p: p.nodes)

    @property
    def gpus(self) -> Pair[int]:
        return self.capacity.map(lambda p: p.physical_gpus)

    @property
    def sharing(self) -> Pair[str]:
        return self.capacity.map(lambda p: p.sharing_setting)

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
class TenantChange:
    tenant: str
    pools: Pair[tuple[str, ...]]
    resources: tuple[TenantResource, ...]

    @property
    def changed(self) -> bool:
        return self.pools.changed or any(r.changed for r in self.resources)


@dataclass(frozen=True)
class CapacityChange:
    pools: tuple[PoolChange, ...]
    tenants: tuple[TenantChange, ...]


def _pool(capacity: Capacity | None, name: str) -> PoolCapacity | None:
    return None if capacity is None else next((p for p in capacity.pools if p.name == name), None)


def _tenant(capacity: Capacity | None, name: str) -> TenantCapacity | None:
    return None if capacity is None else next((t for t in capacity.tenants if t.name == name), None)


def _units(pool: PoolCapacity | None) -> dict[str, Unit]:
    return {} if pool is None else {unit.resource: unit for unit in pool.units}


def pool_change(before: Capacity | None, after: Capacity | None, pool: str) -> PoolChange:
    sides = Pair(_pool(before, pool), _pool(after, pool))
    old, new = _units(sides.before), _units(sides.after)
    ordered = list(new) + [name for name in old if name not in new]  # the new version's (stable) order first
    return PoolChange(pool, sides, tuple(ResourceChange(name, Pair(old.get(name), new.get(name))) for name in ordered))


def _grants(tenant: TenantCapacity | None, pool: str) -> dict[str, Grant]:
    return {} if tenant is None else {g.resource: g for g in tenant.grants if g.pool == pool}


def _quota_names(snapshot: Snapshot, tenant: str, pool: str) -> list[str]:
    """Resources the tenant's quota names on the pool, in the blueprint's order."""
    found = snapshot.tenants.get(tenant)
    return [] if found is None else [full_resource_name(short) for short in found.quota_for(pool)]


def _need_names(snapshot: Snapshot, tenant: str, pool: str) -> list[str]:
    """Resources the tenant's workload templates request on the pool, in workload order."""
    if snapshot.context is None or tenant not in snapshot.tenants:
        return []
    return [resource for (p, resource) in snapshot.context.tenant_demand(tenant) if p == pool]


def tenant_change(before: Snapshot, after: Snapshot, tenant: str) -> TenantChange:
    capacities = (before.capacity, after.capacity)
    tenants = Pair(_tenant(capacities[0], tenant), _tenant(capacities[1], tenant))
    pools = tenants.map(lambda t: t.pools)
    rows: list[TenantResource] = []
    for pool in dict.fromkeys([*(pools.after or ()), *(pools.before or ())]):
        supplies = [_units(_pool(c, pool)) for c in capacities]
        grants = [_grants(t, pool) for t in (tenants.before, tenants.after)]
        access = [None if side is None else pool in side for side in (pools.before, pools.after)]
        wanted = [*_quota_names(after, tenant, pool), *_quota_names(before, tenant, pool)]
        wanted += [*_need_names(after, tenant, pool), *_need_names(before, tenant, pool)]
        gpu_units = [n for side in reversed(supplies) for n, unit in side.items() if unit.memory_gb is not None]
        for resource in dict.fromkeys(wanted or gpu_units):
            sides = list(zip(grants, access, strict=True))
            rows.append(
                TenantResource(
                    pool,
                    resource,
                    Pair(*access),
                    Pair(*(g[resource].quota if resource in g else None for g in grants)),
                    Pair(*(None if not a else g[resource].demand if resource in g else 0 for g, a in sides)),
                    Pair(*(s[resource].total if resource in s else None for s in supplies)),
                )
            )
    return TenantChange(tenant, pools, tuple(rows))


def capacity_deltas(before: Snapshot, after: Snapshot) -> CapacityChange:
    pools = list(dict.fromkeys([*after.pools, *before.pools]))
    tenants = list(dict.fromkeys([*after.tenants, *before.tenants]))
    return CapacityChange(
        pools=tuple(pool_change(before.capacity, after.capacity, p) for p in pools),
        tenants=tuple(tenant_change(before, after, t) for t in tenants),
    )

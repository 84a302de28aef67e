"""A blueprint with its derived facts (models, advertised resources, resolved requests) and a way to point at source.

Semantic checks and every compile family read the same Context, so a fact is derived once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property, partialmethod
from typing import Any, TypeVar

from gpustack.catalog import Catalog, GpuModel
from gpustack.diagnostic import Diagnostic, JsonPath, Severity, Span
from gpustack.model import Allocation, Blueprint, NodePool, SharingStrategy, Tenant, Workload
from gpustack.needs import Requests, resolve_need
from gpustack.offers import Offer, pool_offers

Locate = Callable[[JsonPath, bool], Span | None]
T = TypeVar("T")


def _nowhere(path: JsonPath, key: bool) -> Span | None:
    return None


@dataclass(frozen=True)
class Context:
    blueprint: Blueprint
    catalog: Catalog
    locate: Locate = field(default=_nowhere)
    _derived: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def derive(self, name: str, compute: Callable[[Context], T]) -> T:
        """A fact about the whole blueprint, computed once per context (e.g. device-plugin config keys)."""
        if name not in self._derived:
            self._derived[name] = compute(self)
        value: T = self._derived[name]
        return value

    @cached_property
    def models(self) -> dict[str, GpuModel | None]:
        return {pool.name: self.catalog.resolve(pool.gpu.model) for pool in self.blueprint.pools}

    @cached_property
    def offers(self) -> dict[str, tuple[Offer, ...]]:
        return {pool.name: pool_offers(pool, self.models[pool.name]) for pool in self.blueprint.pools}

    @cached_property
    def pools(self) -> dict[str, NodePool]:
        return {pool.name: pool for pool in self.blueprint.pools}

    @cached_property
    def tenants(self) -> dict[str, Tenant]:
        return {tenant.name: tenant for tenant in self.blueprint.tenants}

    @cached_property
    def requests(self) -> dict[str, Requests]:
        """Workload name -> per-pod extended-resource requests, for every workload whose need its pool can meet."""
        resolved: dict[str, Requests] = {}
        for workload in self.blueprint.workloads:
            pool = self.pools.get(workload.pool)
            model = self.models.get(workload.pool)
            if pool is None or model is None:
                continue
            result = resolve_need(workload, pool, model, self.offers[pool.name])
            if isinstance(result, Requests):
                resolved[workload.name] = result
        return resolved

    def namespace_of(self, workload: Workload) -> str:
        if workload.namespace is not None:
            return workload.namespace
        tenant = self.tenants.get(workload.tenant)
        return tenant.namespaces[0] if tenant is not None else workload.tenant

    @cached_property
    def system_namespaces(self) -> tuple[str, ...]:
        """Namespaces whose pods must reach every pool (device plugins, MIG manager, kube-system's node agents).

        Admission policies leave them alone, so they can never be a tenant's.
        """
        blueprint = self.blueprint
        names = {"kube-system", blueprint.device_plugin.namespace, blueprint.mig_manager.namespace}
        if any(pool.sharing.strategy is SharingStrategy.HAMI for pool in blueprint.pools):
            names.add(blueprint.hami.namespace)  # HAMi's device plugin runs there, on the HAMi pools
        if any(pool.allocation is Allocation.DRA for pool in blueprint.pools):
            names.add(blueprint.dra.namespace)  # the DRA driver's kubelet plugin runs there, on the DRA pools
        return tuple(sorted(names))

    @cached_property
    def tenants_by_pool(self) -> dict[str, list[str]]:
        users: dict[str, list[str]] = {pool.name: [] for pool in self.blueprint.pools}
        for tenant in self.blueprint.tenants:
            for pool in tenant.pools:
                users.setdefault(pool, []).append(tenant.name)
        return users

    def diagnostic(
        self,
        severity: Severity,
        code: str,
        path: JsonPath,
        message: str,
        hint: str | None = None,
        *,
        key: bool = False,
        related: Iterable[JsonPath] = (),
    ) -> Diagnostic:
        """A diagnostic pointing at `path` in the source (its key when `key`), with related places."""
        spans = tuple(s for s in (self.locate(p, False) for p in related) if s is not None)
        return Diagnostic(code, severity, message, self.locate(path, key), path, hint, spans)

    error = partialmethod(diagnostic, Severity.ERROR)
    warning = partialmethod(diagnostic, Severity.WARNING)


def tenant_demand(ctx: Context, tenant_name: str) -> dict[tuple[str, str], int]:
    """(pool, resource) -> units the tenant's templates request when all their pods run."""
    demand: dict[tuple[str, str], int] = {}
    for workload in ctx.blueprint.workloads:
        requests = ctx.requests.get(workload.name)  # resolved once per context; absent where the need cannot fit
        if workload.tenant != tenant_name or requests is None:
            continue
        for resource, amount in requests.items:
            key = (workload.pool, resource)
            demand[key] = demand.get(key, 0) + amount * workload.pods
    return demand

"""A blueprint with its derived facts (models, advertised resources, resolved requests, tenant demand, quota
ceilings) and a way to point at source.

Semantic checks, every compile family, the capacity report and review read the same Context, so a fact is derived
once: `validation` builds one per blueprint it reads and keeps it (`Validation.context`); every later stage takes
that one (tests/test_one_context.py counts them).

Every Context is given its locator: no diagnostic is born without a position. A blueprint read from text points
into it; a Blueprint built in code (a Pulumi program's `GpuClusterArgs.blueprint`, a test) has no text, and the
edge that takes it says so by passing `unplaced`: its diagnostics carry their JSON path alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cached_property, partialmethod
from typing import Any, TypeVar

from gpustack.catalog import Catalog, GpuModel
from gpustack.diagnostic import Diagnostic, JsonPath, Severity, Span
from gpustack.model import (
    Allocation,
    Blueprint,
    ClaimShare,
    NodePool,
    Scheduler,
    SharingStrategy,
    Stack,
    Tenant,
    Workload,
    amounts_for,
)
from gpustack.names import KAI_NAMESPACES
from gpustack.needs import Requests, resolve_need
from gpustack.offers import Offer, full_resource_name, offer_for, pool_offers
from gpustack.quantity import GIB, parse_quantity

Locate = Callable[[JsonPath, bool], Span | None]
T = TypeVar("T")


def unplaced(path: JsonPath, key: bool) -> Span | None:
    """The locator of a Blueprint built in code: there is no text to point into, so a diagnostic names its path."""
    return None


@dataclass(frozen=True)
class Oversubscription:
    """A workload whose GPU memory need, times the pods time-slicing may put on one GPU, exceeds the GPU (GS404)."""

    workload: Workload
    pool: NodePool
    model: GpuModel
    need: Decimal  # bytes one pod needs
    replicas: int  # pods that may share one GPU
    profile: str | None = None  # the time-sliced MIG instance the pods share (None: a whole GPU)
    slice_gib: Decimal | None = None  # that instance's memory

    @property
    def total(self) -> Decimal:
        return self.need * self.replicas

    @property
    def gpu_memory(self) -> Decimal:
        """Bytes the pods that share one unit have between them: the GPU's, or the MIG instance's."""
        return (self.slice_gib if self.slice_gib is not None else Decimal(self.model.memory_gib)) * GIB


@dataclass(frozen=True)
class Gang:
    """A workload whose pods start together or not at all (a VolcanoJob's or JobSet's, one LeaderWorkerSet group),
    and what could hold them whole (GS512's fact): the pool at its largest, and the tenant's quota ceiling."""

    workload: Workload
    pool: NodePool
    resource: str  # the GPU resource each pod requests
    amount: int  # units of it per pod
    room: int  # pods of this shape the whole pool holds at once: a pod cannot span nodes
    tenant: Tenant | None
    ceiling: int | None  # the most of `resource` the tenant may hold in the pool (borrowing included); None: no quota

    @property
    def size(self) -> int:
        return self.workload.gang or 0

    @property
    def total(self) -> int:
        return self.size * self.amount

    @property
    def pool_holds_it(self) -> bool:
        return self.size <= self.room

    @property
    def quota_admits_it(self) -> bool:
        return self.ceiling is None or self.total <= self.ceiling


@dataclass(frozen=True)
class Context:
    blueprint: Blueprint
    catalog: Catalog
    locate: Locate  # where a path stands in the blueprint's text (`unplaced`: built in code, no text)
    _derived: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def derive(self, name: str, compute: Callable[[Context], T]) -> T:
        """A fact about the whole blueprint, computed once per context (e.g. device-plugin config keys)."""
        if name not in self._derived:
            self._derived[name] = compute(self)
        value: T = self._derived[name]
        return value

    @cached_property
    def models(self) -> dict[str, GpuModel | None]:
        return {
            pool.name: self.catalog.resolve(pool.gpu.model) if pool.gpu is not None else None
            for pool in self.blueprint.pools
        }

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

    @cached_property
    def advertised_resources(self) -> frozenset[str]:
        """Every resource name some pool advertises (read per tenant: computed once)."""
        return frozenset(offer.resource for offers in self.offers.values() for offer in offers)

    @cached_property
    def demand(self) -> dict[str, dict[tuple[str, str], int]]:
        """Tenant name -> (pool, resource) -> units its workload templates request when all their pods run.

        Workloads whose need their pool cannot meet request nothing (a check reports them).
        """
        out: dict[str, dict[tuple[str, str], int]] = {}
        for workload in self.blueprint.workloads:
            requests = self.requests.get(workload.name)
            if requests is None:
                continue
            tenant = out.setdefault(workload.tenant, {})
            # Pods sharing one DRA ResourceClaim (gpu.claim.share: pods) hold its devices together, and quota counts
            # it once. (On a device-plugin pool gpu.claim is GS613, and this figure is never read past it.)
            claim = workload.gpu.claim
            holders = 1 if claim is not None and claim.share is ClaimShare.PODS else workload.pods
            for resource, amount in requests.items:
                key = (workload.pool, resource)
                tenant[key] = tenant.get(key, 0) + amount * holders
        return out

    def tenant_demand(self, tenant_name: str) -> dict[tuple[str, str], int]:
        """(pool, resource) -> units the tenant's templates request when all their pods run; a copy to keep."""
        return dict(self.demand.get(tenant_name, {}))

    def quota_ceiling(self, tenant: Tenant, pool_name: str, resource: str, nominal: int) -> int:
        """The most of a pool resource (full name) the tenant may hold: its nominal quota, plus, for a Kueue or KAI
        tenant in a cohort, what it may borrow: the cohort's borrowingLimit, or without one (unlimited borrowing)
        up to the whole pool.
        """
        cohort = tenant.cohort
        if tenant.scheduler not in (Scheduler.KUEUE, Scheduler.KAI) or cohort is None:
            return nominal
        borrowing = {
            full_resource_name(short): n for short, n in amounts_for(cohort.borrowing_limit, pool_name).items()
        }
        if resource in borrowing:
            return nominal + borrowing[resource]
        pool = self.pools.get(pool_name)
        offer = offer_for(self.offers.get(pool_name, ()), resource)
        if pool is None or offer is None:
            return nominal
        return max(nominal, offer.per_node * pool.node_count)

    @cached_property
    def oversubscriptions(self) -> tuple[Oversubscription, ...]:
        """Workloads on time-sliced pools whose memory need the shared GPU cannot hold for every pod, in order."""
        found = []
        for workload in self.blueprint.workloads:
            pool = self.pools.get(workload.pool)
            model = self.models.get(workload.pool)
            if pool is None or model is None or workload.gpu.memory is None:
                continue
            try:
                need = parse_quantity(workload.gpu.memory)
            except ValueError:
                continue  # the schema reports a malformed quantity
            if pool.sharing.strategy is SharingStrategy.TIME_SLICING and pool.sharing.replication is not None:
                fact = Oversubscription(workload, pool, model, need, pool.sharing.replication.replicas)
            else:
                # A time-sliced MIG instance: the pods on one instance share its memory, as on a time-sliced GPU.
                requests = self.requests.get(workload.name)
                offer = offer_for(self.offers[pool.name], requests.gpu_resource) if requests is not None else None
                if offer is None or offer.shared_by < 2 or offer.memory_gib is None:
                    continue
                if offer.profile is not None:
                    fact = Oversubscription(
                        workload, pool, model, need, offer.shared_by, offer.profile, offer.memory_gib
                    )
                elif pool.sharing.strategy is SharingStrategy.MIG:  # whole GPUs time-sliced beside the instances
                    fact = Oversubscription(workload, pool, model, need, offer.shared_by)
                else:
                    continue  # MPS and HAMi units carry their own memory limits
            if fact.total > fact.gpu_memory:
                found.append(fact)
        return tuple(found)

    @cached_property
    def gangs(self) -> tuple[Gang, ...]:
        """Every gang whose pods' GPU requests resolve, in order, with the room its pool and quota leave it."""
        found = []
        for workload in self.blueprint.workloads:
            requests = self.requests.get(workload.name)
            pool = self.pools.get(workload.pool)
            if workload.gang is None or requests is None or pool is None:
                continue
            resource = requests.gpu_resource
            amount = dict(requests.items)[resource]
            offer = offer_for(self.offers.get(pool.name, ()), resource)
            if offer is None or amount <= 0:
                continue
            tenant = self.tenants.get(workload.tenant)
            quota = {full_resource_name(k): v for k, v in tenant.quota_for(pool.name).items()} if tenant else {}
            nominal = quota.get(resource)  # a ResourceQuota limits only the resources it names
            ceiling = None
            if tenant is not None and nominal is not None:
                ceiling = self.quota_ceiling(tenant, pool.name, resource, nominal)
            room = offer.per_node // amount * pool.node_count  # the most nodes an autoscaled pool may have
            found.append(Gang(workload, pool, resource, amount, room, tenant, ceiling))
        return tuple(found)

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
        if blueprint.stack is Stack.GPU_OPERATOR:
            names = {"kube-system", blueprint.gpu_operator.namespace}  # the operator runs the plugin and MIG manager
        else:
            names = {"kube-system", blueprint.device_plugin.namespace, blueprint.mig_manager.namespace}
        if any(pool.sharing.strategy is SharingStrategy.HAMI for pool in blueprint.pools):
            names.add(blueprint.hami.namespace)  # HAMi's device plugin runs there, on the HAMi pools
        if any(pool.allocation is Allocation.DRA for pool in blueprint.pools):
            names.add(blueprint.dra.namespace)  # the DRA driver's kubelet plugin runs there, on the DRA pools
        if any(tenant.scheduler is Scheduler.KAI for tenant in blueprint.tenants):
            names.update(KAI_NAMESPACES)  # KAI's scheduler, binder and reservation pods: a tenant there would own them
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

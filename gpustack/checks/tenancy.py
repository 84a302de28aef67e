"""Tenants get only the pools they are granted, and quotas that mean something (GS501-GS506)."""

from __future__ import annotations

from collections.abc import Iterator

from gpustack.checks.references import tenant_amounts
from gpustack.codes import (
    DEMAND_ABOVE_QUOTA,
    QUOTA_ABOVE_POOL,
    QUOTA_ON_SHARED_RESOURCE,
    QUOTA_ON_UNGRANTED_POOL,
    QUOTA_ON_UNKNOWN_RESOURCE,
    WORKLOAD_ON_UNGRANTED_POOL,
)
from gpustack.context import Context
from gpustack.diagnostic import Diagnostic
from gpustack.model import Scheduler
from gpustack.offers import full_resource_name, offer_for
from gpustack.schedulers import closed_resources


def check_quota_resources(ctx: Context) -> Iterator[Diagnostic]:
    for tenant in ctx.blueprint.tenants:
        for what, amounts, base in tenant_amounts(tenant):
            for pool_name, items in amounts:
                pool = ctx.pools.get(pool_name)
                if pool is None:
                    continue
                path = (*base, pool_name)
                if pool_name not in tenant.pools:
                    yield ctx.error(
                        QUOTA_ON_UNGRANTED_POOL,
                        path,
                        f"tenant '{tenant.name}' has a {what} on pool '{pool_name}' but is not allowed on it",
                        f"add '{pool_name}' to the tenant's pools, or drop the {what}",
                        key=True,
                    )
                offers = ctx.offers[pool_name]
                if not offers:
                    continue
                nodes = pool.node_count
                for resource, amount in items:
                    offer = offer_for(offers, full_resource_name(resource))
                    if offer is None:
                        advertised = ", ".join(o.short_name for o in offers)
                        yield ctx.error(
                            QUOTA_ON_UNKNOWN_RESOURCE,
                            (*path, resource),
                            f"{what} names '{resource}', which pool '{pool_name}' does not advertise",
                            f"pool '{pool_name}' advertises {advertised}",
                            key=True,
                        )
                        continue
                    capacity = offer.per_node * nodes
                    if what == "quota" and amount > capacity:
                        yield ctx.warning(
                            QUOTA_ABOVE_POOL,
                            (*path, resource),
                            f"tenant '{tenant.name}' may use {amount} {offer.resource} in pool '{pool_name}', but the "
                            f"pool has only {capacity} ({nodes} node(s) x {offer.per_node})",
                            f"lower the quota to at most {capacity}, or add nodes to the pool",
                        )


def check_workload_pool_allowed(ctx: Context) -> Iterator[Diagnostic]:
    tenants = {t.name: t for t in ctx.blueprint.tenants}
    for workload in ctx.blueprint.workloads:
        tenant = tenants.get(workload.tenant)
        if tenant is None or workload.pool not in ctx.pools:
            continue
        if workload.pool not in tenant.pools:
            yield ctx.error(
                WORKLOAD_ON_UNGRANTED_POOL,
                (*workload.path, "pool"),
                f"workload '{workload.name}' of tenant '{tenant.name}' runs on pool '{workload.pool}', "
                "which the tenant is not allowed on",
                f"tenant '{tenant.name}' may use {', '.join(tenant.pools)}; or grant the pool in the tenant's pools",
            )


def check_quota_covers_templates(ctx: Context) -> Iterator[Diagnostic]:
    for tenant in ctx.blueprint.tenants:
        quota = {pool: dict(items) for pool, items in tenant.quota}
        closed = set(closed_resources(ctx, tenant))
        for (pool, resource), needed in sorted(ctx.tenant_demand(tenant.name).items()):
            if pool not in quota:
                continue
            short = resource.removeprefix("nvidia.com/")
            nominal = quota[pool].get(short)
            unnamed = nominal is None
            if nominal is None:
                if resource not in closed:
                    continue  # granted elsewhere: another pool's line, or a pool held whole
                nominal = 0  # the quota closes what it does not name (N4)
            # A Kueue tenant in a cohort may also run on what it borrows (its borrowingLimit, or up to the pool).
            allowed = ctx.quota_ceiling(tenant, pool, resource, nominal)
            if needed > allowed:
                borrowed = f" (nominal {nominal} + borrowing {allowed - nominal})" if allowed != nominal else ""
                allows = (
                    f", which its quota on the pool does not name: gpustack closes it (allows {allowed}{borrowed})"
                    if unnamed
                    else f", its quota allows {allowed}{borrowed}"
                )
                yield ctx.warning(
                    DEMAND_ABOVE_QUOTA,
                    (*tenant.path, "quota", pool, *(() if unnamed else (short,))),
                    f"tenant '{tenant.name}''s workload templates request {needed} {resource} in pool '{pool}'{allows}",
                    (
                        "Kueue keeps workloads beyond the ClusterQueue's quota suspended"
                        if tenant.scheduler is Scheduler.KUEUE
                        else "pods beyond the quota are refused with 'exceeded quota'"
                    )
                    + "; raise the quota or scale the templates",
                )


def check_shared_resource_names(ctx: Context) -> Iterator[Diagnostic]:
    for tenant in ctx.blueprint.tenants:
        if tenant.scheduler is Scheduler.KUEUE:
            continue  # its ClusterQueue has a ResourceFlavor per pool: each pool's amount is enforced on its own
        by_resource: dict[str, list[str]] = {}
        for pool_name, _ in tenant.quota:
            for offer in ctx.offers.get(pool_name, ()):
                by_resource.setdefault(offer.resource, []).append(pool_name)
        for resource, pools in sorted(by_resource.items()):
            if len(pools) > 1:
                yield ctx.warning(
                    QUOTA_ON_SHARED_RESOURCE,
                    (*tenant.path, "quota"),
                    f"tenant '{tenant.name}' has quotas on pools {', '.join(repr(p) for p in pools)}, which all "
                    f"advertise {resource}: a ResourceQuota counts them together, "
                    "so per-pool amounts cannot be enforced",
                    "gpustack writes the sum as the namespace quota. Per-pool (per GPU model) quota is enforceable "
                    "with the Kueue integration: set the tenant's scheduler: kueue, and gpustack gives its "
                    "ClusterQueue a ResourceFlavor per pool, so each pool's amount is enforced on its own",
                    key=True,
                )


RULES = (check_quota_resources, check_workload_pool_allowed, check_quota_covers_templates, check_shared_resource_names)

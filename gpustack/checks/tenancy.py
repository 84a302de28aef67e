"""Tenants get only the pools they are granted, and quotas that mean something (GS501-GS506, GS610)."""

from __future__ import annotations

from collections.abc import Iterator

from gpustack.checks.references import tenant_amounts
from gpustack.codes import (
    DEMAND_ABOVE_QUOTA,
    POOL_WITHOUT_QUOTA,
    QUOTA_ABOVE_POOL,
    QUOTA_ON_SHARED_RESOURCE,
    QUOTA_ON_UNGRANTED_POOL,
    QUOTA_ON_UNKNOWN_RESOURCE,
    WORKLOAD_ON_UNGRANTED_POOL,
)
from gpustack.context import Context
from gpustack.diagnostic import Diagnostic
from gpustack.model import Scheduler, SharingStrategy
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
                    if what == "quota" and amount > capacity and not _sharing_left_to_recommend(ctx, pool_name):
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
            if pool not in quota or _sharing_left_to_recommend(ctx, pool):
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


def _sharing_left_to_recommend(ctx: Context, pool: str) -> bool:
    """sharing.strategy: auto: which resource a workload asks (nvidia.com/gpu or a MIG profile), and what a unit of
    nvidia.com/gpu is (a GPU, or a time-sliced replica), wait on the sharing `gpustack recommend` chooses; it sizes
    the pool for each tenant's quota and judges the quota against each choice. Once --write has chosen, GS501 and
    GS505 run on the real offers and requests."""
    found = ctx.pools.get(pool)
    return found is not None and found.sharing.strategy is SharingStrategy.AUTO


def check_shared_resource_names(ctx: Context) -> Iterator[Diagnostic]:
    for tenant in ctx.blueprint.tenants:
        if tenant.scheduler is Scheduler.KUEUE:
            continue  # its ClusterQueue has a ResourceFlavor per pool: each pool's amount is enforced on its own
        named = {full_resource_name(short) for _pool, items in tenant.quota for short, _amount in items}
        by_resource: dict[str, list[str]] = {}
        for pool_name, _ in tenant.quota:
            for offer in ctx.offers.get(pool_name, ()):
                # An `unlimited` pool clashes only where another entry's amount makes a line its pods count against.
                if not tenant.unlimited_on(pool_name) or offer.resource in named:
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


def check_pools_without_quota(ctx: Context) -> Iterator[Diagnostic]:
    """A granted GPU pool the tenant's quota has no entry for is closed (every name at 0): say so, once per pool.

    The one diagnostic of this mistake: GS505 leaves such a pool to this warning, which names the demand it refuses.
    """
    for tenant in ctx.blueprint.tenants:
        entries = {pool for pool, _items in tenant.quota}
        closed = set(closed_resources(ctx, tenant))
        demand = ctx.tenant_demand(tenant.name)
        for index, pool_name in enumerate(tenant.pools):
            pool = ctx.pools.get(pool_name)
            offers = ctx.offers.get(pool_name, ())
            if pool is None or not offers or pool_name in entries or pool_name in tenant.pools[:index]:
                continue
            shut = [o.resource for o in offers if o.resource in closed or tenant.scheduler is Scheduler.KUEUE]
            counted = [o.resource for o in offers if o.resource not in shut]
            wanted = {resource: n for (p, resource), n in demand.items() if p == pool_name and n > 0}
            parts = [f"gpustack closes it to the tenant (0 {', '.join(shut)})"] if shut else []
            if counted:
                # A ResourceQuota counts a name for the namespace, not per pool: another entry's line holds these.
                parts.append(
                    f"its pods there count against the quota lines its other pools' entries write for "
                    f"{', '.join(counted)} (a ResourceQuota cannot tell pools apart)"
                )
            if tenant.cohort is not None:
                parts.append("it may still borrow from its Kueue cohort")
            asked = ", ".join(f"{n} {resource}" for resource, n in sorted(wanted.items()))
            if asked:
                parts.append(f"its workload templates request {asked} there")
            example = {r.removeprefix("nvidia.com/"): n for r, n in sorted(wanted.items())} or {
                offers[0].short_name: offers[0].per_node * pool.node_count
            }
            amounts = ", ".join(f"{short}: {n}" for short, n in example.items())
            yield ctx.warning(
                POOL_WITHOUT_QUOTA,
                (*tenant.path, "pools", index),
                f"tenant '{tenant.name}' is granted pool '{pool_name}' but its quota has no entry for it; "
                + "; ".join(parts),
                f"to open the pool write `{pool_name}: unlimited` under the tenant's quota (it may take every GPU "
                f"of the pool) or amounts (`{pool_name}: {{{amounts}}}`); `{pool_name}: {{}}` keeps it closed "
                "without this warning",
            )


RULES = (
    check_quota_resources,
    check_workload_pool_allowed,
    check_quota_covers_templates,
    check_shared_resource_names,
    check_pools_without_quota,
)

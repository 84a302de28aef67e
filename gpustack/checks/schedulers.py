"""What the quotas, Kueue and Volcano objects gpustack writes need from the blueprint (GS507-GS511), and gangs their
pool or quota can never hold whole (GS512)."""

from __future__ import annotations

from collections.abc import Iterator

from gpustack.codes import (
    GANG_NEVER_FITS,
    KUEUE_LENDING_ABOVE_QUOTA,
    KUEUE_NO_NODE_RESOURCES,
    KUEUE_TOO_MANY_TAINTS,
    QUOTA_PER_NAMESPACE,
    VOLCANO_RESERVED_QUEUE,
)
from gpustack.context import Context, Gang
from gpustack.diagnostic import Diagnostic
from gpustack.model import Scheduler
from gpustack.offers import full_resource_name
from gpustack.schedulers import (
    MAX_FLAVOR_TAINTS,
    RESERVED_QUEUES,
    kueue_tenants,
    namespace_quota,
    nominal_quota,
    volcano_tenants,
)


def check_quota_per_namespace(ctx: Context) -> Iterator[Diagnostic]:
    for tenant in ctx.blueprint.tenants:
        # A Kueue tenant's ClusterQueue holds one total across all its namespaces (compile/kueue.py), and its
        # LocalQueues named `default` catch workloads that carry no queue label; its ResourceQuotas are a backstop.
        if tenant.scheduler is Scheduler.KUEUE or len(tenant.namespaces) < 2:
            continue
        hard = namespace_quota(tenant)
        if not hard:
            continue
        count = len(tenant.namespaces)
        reach = ", ".join(f"{key} up to {amount * count}" for key, amount in hard.items())
        yield ctx.warning(
            QUOTA_PER_NAMESPACE,
            (*tenant.path, "namespaces"),
            f"tenant '{tenant.name}' has a quota and {count} namespaces: Kubernetes has no cross-namespace "
            f"quota, so each namespace gets the full quota and the tenant's total can reach {count} x quota ({reach})",
            "use one namespace per quota, or the Kueue integration (tenant scheduler: kueue), whose "
            "ClusterQueue enforces one total across all the tenant's namespaces",
        )


def check_kueue_pools_have_node_resources(ctx: Context) -> Iterator[Diagnostic]:
    users: dict[str, list[str]] = {}
    for tenant in kueue_tenants(ctx):
        for name in tenant.pools:
            users.setdefault(name, []).append(tenant.name)
    for pool in ctx.blueprint.pools:
        if pool.name not in users:
            continue
        node = pool.node_resources
        values = (("cpu", node.cpu if node else None), ("memory", node.memory if node else None))
        missing = [name for name, value in values if value is None]
        if not missing:
            continue
        tenants = ", ".join(repr(t) for t in users[pool.name])
        yield ctx.error(
            KUEUE_NO_NODE_RESOURCES,
            (*pool.path, "name"),
            f"pool '{pool.name}' gives no nodeResources {' or '.join(missing)}, but tenant(s) {tenants} use Kueue, "
            "which admits a workload only if its ClusterQueue covers every resource the pods request, cpu and "
            f'memory included ("resource {missing[0]} unavailable in ClusterQueue")',
            f"add nodeResources: {{cpu: ..., memory: ...}} (allocatable per node) to pool '{pool.name}': gpustack "
            "sets the ClusterQueue's cpu and memory quota to what the pool's nodes have, so only GPUs are limited",
        )


def check_kueue_flavor_taints(ctx: Context) -> Iterator[Diagnostic]:
    used = {pool for tenant in kueue_tenants(ctx) for pool in tenant.pools}
    for pool in ctx.blueprint.pools:
        if pool.name in used and len(pool.taints) > MAX_FLAVOR_TAINTS:
            yield ctx.error(
                KUEUE_TOO_MANY_TAINTS,
                pool.taints[MAX_FLAVOR_TAINTS].path,
                f"pool '{pool.name}' has {len(pool.taints)} taints; a Kueue ResourceFlavor holds at most "
                f"{MAX_FLAVOR_TAINTS}, so the flavor for this pool could not name them all",
                f"keep at most {MAX_FLAVOR_TAINTS} taints on pools that Kueue tenants use",
            )


def check_kueue_lending_limits(ctx: Context) -> Iterator[Diagnostic]:
    for tenant in kueue_tenants(ctx):
        cohort = tenant.cohort
        if cohort is None:
            continue
        for pool_name, items in cohort.lending_limit:
            pool = ctx.pools.get(pool_name)
            if pool is None or pool_name not in tenant.pools or not ctx.offers.get(pool_name):
                continue  # GS204 / GS503 / GS301 say why
            advertised = {offer.resource for offer in ctx.offers[pool_name]}
            for short, amount in items:
                resource = full_resource_name(short)
                if resource not in advertised:
                    continue  # GS502
                nominal = nominal_quota(ctx, tenant, pool, resource)
                if isinstance(nominal, int) and amount > nominal:
                    yield ctx.error(
                        KUEUE_LENDING_ABOVE_QUOTA,
                        (*cohort.path, "lendingLimit", pool_name, short),
                        f"tenant '{tenant.name}' lends up to {amount} {resource} of pool '{pool_name}', more than "
                        f"its nominal quota there ({nominal}); Kueue rejects a ClusterQueue whose lendingLimit "
                        "exceeds its nominalQuota",
                        f"lend at most {nominal}, or raise the tenant's quota on pool '{pool_name}'",
                    )


def check_volcano_queue_names(ctx: Context) -> Iterator[Diagnostic]:
    for tenant in volcano_tenants(ctx):
        if tenant.name in RESERVED_QUEUES:
            yield ctx.error(
                VOLCANO_RESERVED_QUEUE,
                (*tenant.path, "name"),
                f"tenant '{tenant.name}' uses Volcano, and its Queue would be named '{tenant.name}', a queue Volcano "
                "creates and manages itself: applying gpustack's Queue would overwrite it for every other user",
                "rename the tenant; gpustack names each Volcano tenant's Queue after the tenant",
            )


def _gang_field(gang: Gang) -> str:
    """The field that sets how many pods start together: a LeaderWorkerSet group's size, or the workers."""
    return "size" if gang.workload.size is not None else "workers"


def _fixes(gang: Gang, most: int, last: str) -> str:
    """The hint's ways out: fewer pods in the gang (where `most` > 0 of them fit), smaller pods, or `last`."""
    ways = [f"lower {_gang_field(gang)} to {most} or less"] if most > 0 else []
    ways += [f"ask for fewer {gang.resource} per pod", last]
    return ", ".join(ways[:-1]) + f", or {ways[-1]}"


def check_gangs_fit(ctx: Context) -> Iterator[Diagnostic]:
    """A gang starts all its pods or none: one its pool or its tenant's quota can never hold whole never starts."""
    for gang in ctx.gangs:
        workload, pool = gang.workload, gang.pool
        where = (*workload.path, _gang_field(gang))
        if not gang.pool_holds_it:
            yield ctx.warning(
                GANG_NEVER_FITS,
                where,
                f"workload '{workload.name}' starts {gang.size} pods together (all or none), each asking "
                f"{gang.amount} {gang.resource}; pool '{pool.name}' holds at most {gang.room} such pods at once "
                "(a pod cannot span nodes), so it never starts",
                _fixes(gang, gang.room, f"give pool '{pool.name}' more nodes"),
                related=[(*pool.path, "name")],
            )
        if not gang.quota_admits_it and gang.tenant is not None and gang.ceiling is not None:
            yield ctx.warning(
                GANG_NEVER_FITS,
                where,
                f"workload '{workload.name}' starts {gang.size} pods together (all or none), {gang.total} "
                f"{gang.resource} in all; tenant '{gang.tenant.name}' may hold at most {gang.ceiling} in pool "
                f"'{pool.name}', so it is never admitted whole",
                _fixes(
                    gang,
                    gang.ceiling // gang.amount,
                    f"raise tenant '{gang.tenant.name}''s quota on pool '{pool.name}' to at least {gang.total}",
                ),
                related=[(*gang.tenant.path, "quota", pool.name)],
            )


RULES = (
    check_quota_per_namespace,
    check_kueue_pools_have_node_resources,
    check_kueue_flavor_taints,
    check_kueue_lending_limits,
    check_volcano_queue_names,
    check_gangs_fit,
)

"""What the quotas, Kueue and Volcano objects gpustack writes need from the blueprint (GS507-GS511), and gangs their
pool or quota can never hold whole (GS512)."""

from __future__ import annotations

from collections.abc import Iterator

from gpustack.cloud import node_resources
from gpustack.codes import (
    GANG_NEVER_FITS,
    KAI_COHORT_NAME,
    KAI_LENDING_LIMIT,
    KAI_QUEUE_NAME,
    KAI_UNCOUNTED_SHARING,
    KUEUE_LENDING_ABOVE_QUOTA,
    KUEUE_NO_NODE_RESOURCES,
    KUEUE_TOO_MANY_TAINTS,
    QUOTA_PER_NAMESPACE,
    VOLCANO_RESERVED_QUEUE,
)
from gpustack.context import Context, Gang
from gpustack.diagnostic import Diagnostic
from gpustack.model import Scheduler, SharingStrategy
from gpustack.offers import full_resource_name
from gpustack.schedulers import (
    KAI_DEFAULT_SHARD,
    MAX_FLAVOR_TAINTS,
    MAX_LABEL_VALUE,
    RESERVED_QUEUES,
    kai_gpu_units,
    kai_leaf_queue,
    kai_pools,
    kai_shard_pools,
    kai_tenants,
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
        names = {full_resource_name(short) for _pool, items in tenant.quota for short, _amount in items}
        if tenant.scheduler is Scheduler.KAI and len(names) == 1:
            continue  # its parent Queue holds one total of its one resource across its namespaces (compile/kai.py)
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
        node = node_resources(pool, ctx.catalog)  # as stated, else a cloud pool's machine's allocatable
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


def check_kai_queue_names(ctx: Context) -> Iterator[Diagnostic]:
    """Each pool KAI schedules is a SchedulingShard named after it, and a leaf's name is a label value."""
    for name in kai_shard_pools(ctx):
        if name == KAI_DEFAULT_SHARD:
            pool = ctx.pools[name]
            yield ctx.error(
                KAI_QUEUE_NAME,
                (*pool.path, "name"),
                f"pool '{name}' is granted to a KAI tenant, and its SchedulingShard would be named '{name}', the "
                "shard KAI's chart makes for everything outside a pool: applying gpustack's would overwrite it",
                "rename the pool; gpustack names each pool's KAI SchedulingShard after the pool",
            )
    for tenant in kai_tenants(ctx):
        pools = kai_pools(tenant)
        if not pools:
            continue
        longest = max(pools, key=len)  # one error per namespace, naming the pool that makes its leaf longest
        for index, namespace in enumerate(tenant.namespaces):
            leaf = kai_leaf_queue(tenant, namespace, longest)
            if len(leaf) > MAX_LABEL_VALUE:
                yield ctx.error(
                    KAI_QUEUE_NAME,
                    (*tenant.path, "namespaces", index),
                    f"the KAI leaf Queue of tenant '{tenant.name}' in namespace '{namespace}' on pool '{longest}' "
                    f"would be '{leaf}' ({len(leaf)} characters): the {MAX_LABEL_VALUE}-character limit of a label "
                    "value keeps the kai.scheduler/queue label from naming it",
                    "shorten the tenant, the pool or the namespace name",
                )


def check_kai_cohorts(ctx: Context) -> Iterator[Diagnostic]:
    """Kueue's cohort words on a KAI tenant: what KAI cannot hold (a lendingLimit) and a cohort Queue's name."""
    tenants = {tenant.name for tenant in kai_tenants(ctx)}
    for tenant in kai_tenants(ctx):
        cohort = tenant.cohort
        if cohort is None:
            continue
        for pool, items in cohort.lending_limit:
            for short, amount in items:
                quota = tenant.quota_for(pool).get(short, 0)
                if amount == quota:  # all of it: what KAI does
                    continue
                yield ctx.error(
                    KAI_LENDING_LIMIT,
                    (*cohort.path, "lendingLimit", pool, short),
                    f"tenant '{tenant.name}' lends {amount} {short} of pool '{pool}' of its quota of {quota} there; "
                    "it uses KAI, whose Queues cannot keep unused quota from the cohort: KAI lends all of it and "
                    "reclaims it (evicting borrowers' over-quota jobs) when the tenant's jobs need it",
                    f"remove lendingLimit or lend all {quota} (the quota stays guaranteed), or use scheduler: kueue "
                    "to keep part of it unlent",
                )
        if cohort.name in tenants:
            yield ctx.error(
                KAI_COHORT_NAME,
                (*cohort.path, "name"),
                f"the KAI cohort '{cohort.name}' of tenant '{tenant.name}' would get a Queue '{cohort.name}.<pool>' in "
                f"each pool's shard, the name of tenant '{cohort.name}''s parent Queue there",
                "rename the cohort; gpustack names each KAI cohort's Queue after the cohort and the pool",
            )


def check_kai_pool_sharing(ctx: Context) -> Iterator[Diagnostic]:
    """KAI's Queue counts whole GPUs and MIG devices only; a HAMi pool's pods need HAMi's scheduler, not KAI's."""
    for tenant in kai_tenants(ctx):
        for name in tenant.pools:
            pool = ctx.pools.get(name)
            if pool is None:
                continue
            uncounted = [o.resource for o in ctx.offers.get(name, ()) if kai_gpu_units(o.resource) is None]
            if pool.sharing.strategy is SharingStrategy.HAMI:
                reason = "its pods need HAMi's scheduler (only it knows which share of a GPU is free), not KAI's"
            elif uncounted:
                reason = (
                    f"it advertises {', '.join(uncounted)}, which KAI's Queue does not count (only nvidia.com/gpu "
                    "and MIG devices): the tenant's pods would use them outside its queue"
                )
            else:
                continue
            yield ctx.error(
                KAI_UNCOUNTED_SHARING,
                (*pool.path, "sharing", "strategy"),
                f"tenant '{tenant.name}' uses KAI on pool '{name}' (sharing {pool.sharing.strategy}): {reason}",
                "give KAI tenants pools of whole GPUs, MIG, or time-slicing without renameByDefault (each replica "
                "counts as one GPU in the queue); or give this tenant another scheduler",
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
    check_kai_queue_names,
    check_kai_cohorts,
    check_kai_pool_sharing,
    check_gangs_fit,
)

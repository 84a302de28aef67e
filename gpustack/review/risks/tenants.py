"""Risks to tenants: quotas cut below their own needs, and pools they can no longer use."""

from __future__ import annotations

from gpustack.offers import full_resource_name
from gpustack.review.risk import Level, Risk
from gpustack.review.risks.wording import pool_list, quoted, sorted_names
from gpustack.review.snapshot import Snapshot


def quota_below_need(before: Snapshot, after: Snapshot) -> list[Risk]:
    """A tenant's quota is cut below what its own workload templates request with every pod running."""
    if after.context is None:
        return []
    risks = []
    for name in sorted(set(before.tenants) & set(after.tenants)):
        old, new = before.tenants[name], after.tenants[name]
        demand = after.context.tenant_demand(name)
        for pool, items in new.quota:
            old_quota = old.quota_for(pool) if pool in old.pools else {}
            for short, amount in items:
                # None: there was no limit (the pool was `unlimited`); a name the old quota left out was closed, 0
                was = old_quota.get(short, None if old.unlimited_on(pool) or pool not in old.pools else 0)
                needed = demand.get((pool, full_resource_name(short)), 0)
                if (was is None or amount < was) and amount < needed:
                    risks.append(_quota_risk(after, name, pool, short, (was, amount), needed))
    return risks


def quota_closed(before: Snapshot, after: Snapshot) -> list[Risk]:
    """A pool the tenant held whole (`unlimited`) and keeps is closed: no quota entry now, or an empty one (GS610)."""
    risks = []
    for name in sorted(set(before.tenants) & set(after.tenants)):
        old, new = before.tenants[name], after.tenants[name]
        demand = after.context.tenant_demand(name) if after.context is not None else {}
        for pool in new.pools:
            if pool not in old.pools or not old.unlimited_on(pool) or new.unlimited_on(pool) or new.quota_for(pool):
                continue
            needed = {resource: n for (p, resource), n in demand.items() if p == pool and n > 0}
            users = sorted_names(w.name for w in after.workloads.values() if w.tenant == name and w.pool == pool)
            asked = ", ".join(f"{n} {resource}" for resource, n in sorted(needed.items()))
            risks.append(
                Risk(
                    "quota-closed",
                    Level.HIGH if needed else Level.MEDIUM,
                    f"Tenant '{name}' quota on pool '{pool}' goes from unlimited to closed (0)",
                    "The tenant held the pool whole; now its quota grants none of the pool's GPUs. Running pods stay; "
                    "every new pod there (scale-ups, rollouts, restarts of evicted pods) is refused with 'exceeded "
                    "quota'" + (f", and its workload templates request {asked} there." if asked else "."),
                    f"Give the pool amounts (or `{pool}: unlimited`) under the tenant's quota, or move the tenant's "
                    "workloads off the pool in the same change.",
                    workloads=users,
                    pools=(pool,),
                    tenants=(name,),
                )
            )
    return risks


def _quota_risk(after: Snapshot, tenant: str, pool: str, short: str, cut: tuple[int | None, int], needed: int) -> Risk:
    was, amount = cut
    resource = full_resource_name(short)
    users = sorted_names(
        w.name
        for w in after.workloads.values()
        if w.tenant == tenant and w.pool == pool and (r := after.requests(w.name)) and resource in r.as_dict()
    )
    return Risk(
        "quota-below-need",
        Level.MEDIUM,
        f"Tenant '{tenant}' quota for {short} in pool '{pool}' cut to {amount}, below the {needed} its workloads need",
        f"The quota goes from {'no limit' if was is None else was} to {amount}, but the tenant's workload templates "
        f"request {needed} {resource} with every pod running. Running pods stay; pods beyond the quota (scale-ups, "
        "rollouts, restarts of evicted pods) are refused with 'exceeded quota'.",
        f"Raise the quota to at least {needed}, or scale the workloads down in the same change.",
        workloads=users,
        pools=(pool,),
        tenants=(tenant,),
    )


def tenant_access_lost(before: Snapshot, after: Snapshot) -> list[Risk]:
    """A tenant can no longer use a pool it could (or the tenant is removed)."""
    risks = []
    for name, tenant in sorted(before.tenants.items()):
        new = after.tenants.get(name)
        lost = [p for p in tenant.pools if new is None or p not in new.pools]
        if not lost:
            continue
        workloads = sorted_names(w.name for w in before.workloads.values() if w.tenant == name and w.pool in lost)
        nodes = sorted_names(n for p in lost if p in before.pools for n in before.pools[p].nodes)
        if new is None:
            kept = {m.name for m in after.plan.objects if m.kind == "Namespace"}
            dropped = [n for n in tenant.namespaces if n not in kept]
            risks.append(
                Risk(
                    "tenant-access-lost",
                    Level.HIGH if dropped else Level.MEDIUM,
                    f"Tenant '{name}' removed: loses {pool_list(lost)}",
                    "The tenant's quotas and pool grants go. "
                    + (
                        f"Its namespaces {quoted(dropped)} leave the manifests: applying with pruning deletes them "
                        "and every pod in them."
                        if dropped
                        else "Its namespaces stay, now without a GPU grant."
                    ),
                    "Move or stop the tenant's workloads first; apply without pruning if the namespaces must stay.",
                    nodes=nodes,
                    workloads=workloads,
                    pools=tuple(lost),
                    tenants=(name,),
                )
            )
            continue
        risks.append(
            Risk(
                "tenant-access-lost",
                Level.MEDIUM,
                f"Tenant '{name}' loses access to {pool_list(lost)}",
                "Admission refuses the tenant's new pods there and its quota there goes. Running pods are not "
                "evicted, but none can be replaced.",
                "Move the tenant's workloads off first.",
                nodes=nodes,
                workloads=workloads,
                pools=tuple(lost),
                tenants=(name,),
            )
        )
    return risks

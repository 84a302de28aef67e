"""How much of a pool resource a tenant may hold, borrowing included: shared by compile, checks and capacity."""

from __future__ import annotations

from gpustack.context import Context
from gpustack.model import Scheduler, Tenant, amounts_for
from gpustack.offers import full_resource_name, offer_for


def quota_ceiling(ctx: Context, tenant: Tenant, pool_name: str, resource: str, nominal: int) -> int:
    """The most of a pool resource (full name) the tenant may hold: its nominal quota, plus, for a Kueue tenant in
    a cohort, what it may borrow: the cohort's borrowingLimit, or without one (Kueue's unlimited borrowing) up to
    the whole pool.
    """
    cohort = tenant.cohort
    if tenant.scheduler is not Scheduler.KUEUE or cohort is None:
        return nominal
    borrowing = {full_resource_name(short): n for short, n in amounts_for(cohort.borrowing_limit, pool_name).items()}
    if resource in borrowing:
        return nominal + borrowing[resource]
    pool = ctx.pools.get(pool_name)
    offer = offer_for(ctx.offers.get(pool_name, ()), resource)
    if pool is None or offer is None:
        return nominal
    return max(nominal, offer.per_node * pool.node_count)

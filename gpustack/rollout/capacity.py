"""What each pool offers while each wave is out, against the quota its tenants were guaranteed before the change.

A node counts with its old offers until its wave, with nothing while a draining wave has it, and with its new
offers after. The guarantee during the rollout is the old quota: raises apply before the waves but promise
capacity only the converted nodes give; cuts apply after the last wave, so the old quota holds until then.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from gpustack.offers import full_resource_name
from gpustack.review.snapshot import Snapshot
from gpustack.rollout.model import Availability
from gpustack.rollout.nodes import NodeState

Supply = dict[tuple[str, str], int]  # (pool, resource) -> units


def guarantees(snapshot: Snapshot) -> dict[tuple[str, str], dict[str, int]]:
    """(pool, resource) -> tenant -> quota, from one side of the change."""
    found: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)
    for tenant in snapshot.tenants.values():
        for pool in tenant.pools:
            for short, amount in tenant.quota_for(pool).items():
                found[(pool, full_resource_name(short))][tenant.name] = amount
    return dict(found)


def supply(states: Iterable[NodeState]) -> Supply:
    total: Supply = defaultdict(int)
    for state in states:
        for resource, units in state.offers:
            total[(state.pool, resource)] += units
    return dict(total)


def availability(offered: Supply, guaranteed: dict[tuple[str, str], dict[str, int]]) -> tuple[Availability, ...]:
    """One row per (pool, resource) offered or guaranteed, in a stable order."""
    keys = sorted(set(offered) | set(guaranteed))
    return tuple(
        Availability(
            pool,
            resource,
            offered.get((pool, resource), 0),
            sum(guaranteed.get((pool, resource), {}).values()),
            tuple(sorted(guaranteed.get((pool, resource), {}))),
        )
        for pool, resource in keys
    )

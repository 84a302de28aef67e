"""The facts each tenant's admission policy is written from: its pools' taints, labels, schedulers, resources and
priority classes, and the distinct keys every pool uses.

Only a tenant's own pools' facts and the distinct keys pools use go into its policy, never a list of the other
pools, so a policy's size does not grow with the number of pools or tenants.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from gpustack.compile.pod_rules import HOSTNAME_LABEL
from gpustack.context import Context
from gpustack.model import NodePool, Scheduler, SharingStrategy, Taint, Tenant
from gpustack.names import VOLCANO_SCHEDULER
from gpustack.schedulers import queue_name
from gpustack.selection import identifying_labels
from gpustack.taints import taint_text
from gpustack.workload_templates import allowed_priority_classes

DEFAULT_SCHEDULER = "default-scheduler"


@dataclass(frozen=True)
class Grants:
    """What the policy of one tenant (or of a tenant the blueprint does not know) lets its pods reach.

    Only its own pools' facts and the distinct keys pools use: never a list of the other pools, so a policy's size
    does not grow with the number of pools or tenants.
    """

    pools: tuple[str, ...]
    taint_keys: tuple[str, ...]  # every key a pool taint uses
    own_taints: tuple[str, ...]  # 'key=value:effect' of its pools' taints ('' for no value)
    own_taint_texts: tuple[str, ...]  # the same, as taint_text writes them, for messages
    own_key_values: tuple[str, ...]  # 'key=value' whose every pool taint (any effect) is its own
    own_key_effects: tuple[str, ...]  # 'key:effect' whose every pool taint (any value) is its own
    own_keys: tuple[str, ...]  # keys whose every pool taint is its own
    label_keys: tuple[str, ...]  # every node label key that names pools
    own_labels: tuple[str, ...]  # 'key=value' its pools' nodes carry
    schedulers: tuple[str, ...]
    foreign_resources: tuple[str, ...] = ()  # GPU resource names only pools it is not granted advertise
    priority_classes: tuple[str, ...] = ()  # the PriorityClasses its pods may name
    queues: tuple[str, ...] = ()  # the Volcano queues its jobs may name (a Volcano tenant's own; N3)


@dataclass(frozen=True)
class PoolFacts:
    """The facts about every pool that the tenants' policies are written from, gathered once per blueprint."""

    taints: tuple[tuple[str, str, str], ...]  # distinct (key, value, effect), in blueprint order
    texts: Mapping[tuple[str, str, str], str]
    label_keys: tuple[str, ...]
    # Indexes for resolve_grants, so that each tenant costs its own pools rather than the fleet's.
    taint_keys: tuple[str, ...] = ()  # distinct taint keys, in blueprint order
    pool_order: Mapping[str, int] = field(default_factory=dict)  # pool name -> position in the blueprint
    # How many distinct taints share a key, a key and value, a key and effect: a tenant owns one of these when it
    # owns that many of them, found without walking the other pools' taints.
    taints_per: Mapping[tuple[str, ...], int] = field(default_factory=dict)


def gather_pool_facts(ctx: Context) -> PoolFacts:
    texts: dict[tuple[str, str, str], str] = {}
    for pool in ctx.blueprint.pools:
        for taint in pool.taints:
            texts.setdefault(identify_taint(taint), taint_text(taint))
    label_keys = dict.fromkeys(key for pool in ctx.blueprint.pools for key, _ in collect_pool_labels(pool))
    order = {pool.name: index for index, pool in reversed(list(enumerate(ctx.blueprint.pools)))}
    return PoolFacts(
        tuple(texts),
        texts,
        tuple(label_keys),
        tuple(dict.fromkeys(key for key, _, _ in texts)),
        order,
        Counter(share for taint in texts for share in _taint_shares(taint)),
    )


def _taint_shares(taint: tuple[str, str, str]) -> tuple[tuple[str, ...], ...]:
    """The groups one toleration can cover that hold this taint: its key, its key and value, its key and effect."""
    key, value, effect = taint
    return ("key", key), ("value", key, value), ("effect", key, effect)


def describe_owners(pools: Sequence[str]) -> str:
    return f"pool {pools[0]}" if len(pools) == 1 else f"pools {', '.join(pools[:-1])} and {pools[-1]}"


def identify_taint(taint: Taint) -> tuple[str, str, str]:
    return (taint.key, taint.value or "", taint.effect)


def collect_taints(
    pools: Iterable[NodePool], skip: set[tuple[str, str, str]]
) -> dict[tuple[str, str, str], tuple[str, list[str]]]:
    """Taint (key, value, effect) -> (display text, pool names carrying it), in blueprint order, minus `skip`."""
    found: dict[tuple[str, str, str], tuple[str, list[str]]] = {}
    for pool in pools:
        for taint in pool.taints:
            key = identify_taint(taint)
            if key in skip:
                continue
            found.setdefault(key, (taint_text(taint), []))[1].append(pool.name)
    return found


def collect_pool_labels(pool: NodePool) -> list[tuple[str, str]]:
    """The node labels that name the pool: gpustack's pool label, a selector's values, the pool's own labels, its
    nodes' hostnames.

    Not the device-plugin and MIG config labels: they name a configuration that pools share, and the GPU Operator
    puts `nvidia.com/mig.config=all-disabled` on nodes outside any pool.
    """
    return [*identifying_labels(pool), *pool.labels, *((HOSTNAME_LABEL, node) for node in pool.nodes)]


def list_schedulers(ctx: Context, tenant: Tenant | None) -> tuple[str, ...]:
    """default-scheduler always (Kueue tenants too: Kueue admits, kube-scheduler places); Volcano and HAMi when used."""
    names = [DEFAULT_SCHEDULER]
    if tenant is not None and tenant.scheduler is Scheduler.VOLCANO:
        names.append(VOLCANO_SCHEDULER)
    if tenant is not None and any(
        ctx.pools[name].sharing.strategy is SharingStrategy.HAMI for name in tenant.pools if name in ctx.pools
    ):
        names.append(ctx.blueprint.hami.scheduler_name)
    return tuple(dict.fromkeys(names))  # a HAMi scheduler renamed to one of the others is listed once


def resolve_grants(ctx: Context, tenant: Tenant | None, facts: PoolFacts | None = None) -> Grants:
    """What `tenant` may reach; None: a tenant the blueprint does not know, which is granted nothing."""
    facts = facts or gather_pool_facts(ctx)
    granted_names = {name for name in tenant.pools if name in facts.pool_order} if tenant is not None else set()
    granted = [
        ctx.blueprint.pools[facts.pool_order[name]] for name in sorted(granted_names, key=facts.pool_order.__getitem__)
    ]
    own = list(dict.fromkeys(identify_taint(taint) for pool in granted for taint in pool.taints))
    # A taint one of its own pools carries stays tolerable, even if other pools carry it too (pools that share a
    # taint are told apart by labels). A toleration that covers several taints (a key, a key and value, a key and
    # effect) is allowed if all of them are its own: if it owns as many of that group as the fleet has.
    owned = Counter(share for taint in own for share in _taint_shares(taint))
    mine = [share for share, count in owned.items() if count == facts.taints_per.get(share, 0)]
    keys = [share[1] for share in mine if share[0] == "key"]
    key_values = [f"{share[1]}={share[2]}" for share in mine if share[0] == "value"]
    key_effects = [f"{share[1]}:{share[2]}" for share in mine if share[0] == "effect"]
    labels = dict.fromkeys(f"{key}={value}" for pool in granted for key, value in collect_pool_labels(pool))
    return Grants(
        pools=tuple(pool.name for pool in granted),
        taint_keys=facts.taint_keys,
        own_taints=tuple(f"{k}={v}:{e}" for k, v, e in own),
        own_taint_texts=tuple(facts.texts[taint] for taint in own),
        own_key_values=tuple(key_values),
        own_key_effects=tuple(key_effects),
        own_keys=tuple(keys),
        label_keys=facts.label_keys,
        own_labels=tuple(labels),
        schedulers=list_schedulers(ctx, tenant),
        # Advertised only by pools not granted: every name some pool advertises, less the tenant's own.
        foreign_resources=tuple(sorted(ctx.advertised_resources - advertised(ctx, granted))),
        priority_classes=tuple(allowed_priority_classes(ctx, tenant.name)) if tenant is not None else (),
        queues=(queue_name(tenant),) if tenant is not None and tenant.scheduler is Scheduler.VOLCANO else (),
    )


def advertised(ctx: Context, pools: Iterable[NodePool]) -> set[str]:
    return {offer.resource for pool in pools for offer in ctx.offers.get(pool.name, ())}


def find_granted_pools(ctx: Context) -> list[tuple[NodePool, list[str]]]:
    """(pool, the tenants granted it) for every pool granted to at least one tenant, in blueprint order.

    Shared pools too: a namespace without a tenant is granted none of them, and a pod of its that reached one would
    take GPUs outside every tenant's quota and queue.
    """
    return [(pool, users) for pool in ctx.blueprint.pools if (users := ctx.tenants_by_pool.get(pool.name, []))]


def describe_tenants(tenants: Sequence[str]) -> str:
    if len(tenants) == 1:
        return f"tenant {tenants[0]}"
    return f"tenants {', '.join(tenants[:-1])} and {tenants[-1]}"

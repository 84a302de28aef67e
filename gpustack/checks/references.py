"""Names are unique and every reference resolves (GS201-GS205)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator

from gpustack.codes import (
    CORDONED_NOT_IN_POOL,
    DUPLICATE_NAME,
    NAMESPACE_IN_TWO_TENANTS,
    NODE_IN_TWO_POOLS,
    SYSTEM_NAMESPACE,
    UNKNOWN_POOL,
    UNKNOWN_TENANT,
)
from gpustack.context import Context
from gpustack.diagnostic import Diagnostic, JsonPath
from gpustack.model import NodePool, PoolAmounts, Tenant


def tenant_amounts(tenant: Tenant) -> list[tuple[str, PoolAmounts, JsonPath]]:
    """Every per-pool map of a tenant (its quota, its Kueue borrowing and lending limits), named and located."""
    found: list[tuple[str, PoolAmounts, JsonPath]] = [("quota", tenant.quota, (*tenant.path, "quota"))]
    cohort = tenant.cohort
    if cohort is not None:
        found.append(("borrowing limit", cohort.borrowing_limit, (*cohort.path, "borrowingLimit")))
        found.append(("lending limit", cohort.lending_limit, (*cohort.path, "lendingLimit")))
    return found


def _did_you_mean(name: str, choices: Iterable[str]) -> str:
    options = sorted(set(choices))
    close = difflib.get_close_matches(name, options, n=1)
    if close:
        return f"did you mean '{close[0]}'?"
    return f"known: {', '.join(options)}" if options else "none are defined"


def _duplicates(ctx: Context, what: str, items: Iterable[tuple[str, JsonPath]]) -> Iterator[Diagnostic]:
    first: dict[str, JsonPath] = {}
    for name, path in items:
        if name in first:
            yield ctx.error(
                DUPLICATE_NAME,
                path,
                f"{what} '{name}' is defined twice",
                "give each one its own name",
                related=[first[name]],
            )
        else:
            first[name] = path


def check_unique_names(ctx: Context) -> Iterator[Diagnostic]:
    bp = ctx.blueprint
    yield from _duplicates(ctx, "node pool", ((p.name, (*p.path, "name")) for p in bp.pools))
    yield from _duplicates(ctx, "tenant", ((t.name, (*t.path, "name")) for t in bp.tenants))
    yield from _duplicates(ctx, "workload", ((w.name, (*w.path, "name")) for w in bp.workloads))


def check_namespace_owners(ctx: Context) -> Iterator[Diagnostic]:
    owner: dict[str, tuple[str, JsonPath]] = {}
    for tenant in ctx.blueprint.tenants:
        for i, namespace in enumerate(tenant.namespaces):
            path = (*tenant.path, "namespaces", i)
            if namespace in owner and owner[namespace][0] != tenant.name:
                yield ctx.error(
                    NAMESPACE_IN_TWO_TENANTS,
                    path,
                    f"namespace '{namespace}' belongs to tenants '{owner[namespace][0]}' and '{tenant.name}'",
                    "a namespace has one tenant: its quota and admission policy cannot serve two",
                    related=[owner[namespace][1]],
                )
            owner.setdefault(namespace, (tenant.name, path))


def check_nodes_in_one_pool(ctx: Context) -> Iterator[Diagnostic]:
    # Node -> the pool that lists it first; its place there is looked up only for a report (10,000 nodes, no paths).
    seen: dict[str, NodePool] = {}
    for pool in ctx.blueprint.pools:
        for i, node in enumerate(pool.nodes):
            first = seen.setdefault(node, pool)
            if first.name != pool.name:
                yield ctx.error(
                    NODE_IN_TWO_POOLS,
                    (*pool.path, "nodes", i),
                    f"node '{node}' is in pools '{first.name}' and '{pool.name}'",
                    "a node carries one pool's labels, taints and device-plugin config: list it in one pool",
                    related=[(*first.path, "nodes", first.nodes.index(node))],
                )


def check_cordoned_nodes(ctx: Context) -> Iterator[Diagnostic]:
    for pool in ctx.blueprint.pools:
        for i, node in enumerate(pool.cordoned):
            if node not in pool.nodes:
                yield ctx.error(
                    CORDONED_NOT_IN_POOL,
                    (*pool.path, "cordoned", i),
                    f"cordoned node '{node}' is not a node of pool '{pool.name}'; expected one of its nodes",
                    _did_you_mean(node, pool.nodes) or "list the node under nodes first",
                )


def check_references(ctx: Context) -> Iterator[Diagnostic]:
    bp = ctx.blueprint
    pools = set(ctx.pools)
    tenants = {t.name: t for t in bp.tenants}
    for tenant in bp.tenants:
        for i, pool in enumerate(tenant.pools):
            if pool not in pools:
                yield ctx.error(
                    UNKNOWN_POOL,
                    (*tenant.path, "pools", i),
                    f"tenant '{tenant.name}' names pool '{pool}', which is not defined",
                    _did_you_mean(pool, pools),
                )
        for what, amounts, path in tenant_amounts(tenant):
            for pool, _ in amounts:
                if pool not in pools:
                    yield ctx.error(
                        UNKNOWN_POOL,
                        (*path, pool),
                        f"tenant '{tenant.name}' has a {what} on pool '{pool}', which is not defined",
                        _did_you_mean(pool, pools),
                        key=True,
                    )
    for workload in bp.workloads:
        if workload.pool not in pools:
            yield ctx.error(
                UNKNOWN_POOL,
                (*workload.path, "pool"),
                f"workload '{workload.name}' runs on pool '{workload.pool}', which is not defined",
                _did_you_mean(workload.pool, pools),
            )
        owning = tenants.get(workload.tenant)
        if owning is None:
            yield ctx.error(
                UNKNOWN_TENANT,
                (*workload.path, "tenant"),
                f"workload '{workload.name}' belongs to tenant '{workload.tenant}', which is not defined",
                _did_you_mean(workload.tenant, tenants),
            )
        elif workload.namespace is not None and workload.namespace not in owning.namespaces:
            yield ctx.error(
                UNKNOWN_TENANT,
                (*workload.path, "namespace"),
                f"workload '{workload.name}' is in namespace '{workload.namespace}', "
                f"which is not one of tenant '{owning.name}''s namespaces",
                f"use one of: {', '.join(owning.namespaces)}",
            )


def check_system_namespaces(ctx: Context) -> Iterator[Diagnostic]:
    system = set(ctx.system_namespaces)
    for tenant in ctx.blueprint.tenants:
        for i, namespace in enumerate(tenant.namespaces):
            if namespace in system or namespace.startswith("kube-"):
                yield ctx.error(
                    SYSTEM_NAMESPACE,
                    (*tenant.path, "namespaces", i),
                    f"tenant '{tenant.name}' claims namespace '{namespace}', which belongs to the cluster's own "
                    "components (GPU device plugins, the MIG manager, KAI Scheduler, Kubernetes itself)",
                    "those namespaces must reach every pool, so gpustack's admission policies leave them alone and "
                    "a tenant there would be unconfined; give the tenant a namespace of its own",
                )


RULES = (
    check_unique_names,
    check_namespace_owners,
    check_nodes_in_one_pool,
    check_cordoned_nodes,
    check_references,
    check_system_namespaces,
)

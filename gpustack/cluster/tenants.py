"""The tenants a cluster implies: namespaces with GPU quotas, grouped by their gpustack.io/tenant label.

A quota's `requests.nvidia.com/<resource>` goes to the pools whose nodes advertise that resource, split in
node order when several do and capped at what they have (a quota above the pool is an error in a blueprint);
every such choice is returned as a guess for the importer to write as a comment. A DRA pool advertises no
extended resource: its quota is read from gpustack's device-class quota (`<unit>.<pool>.gpustack.io` devices),
and taken off the same unit's `requests.nvidia.com/` quota, which gpustack writes for DRA pools too.
"""

from __future__ import annotations

import re
from typing import Any

from gpustack.cluster.snapshot import ClusterSnapshot
from gpustack.dra import CLASS_SUFFIX, load_facts
from gpustack.model import PRIORITY_VALUES
from gpustack.names import POOL_LABEL, TENANT_LABEL, priority_class_name
from gpustack.quantity import parse_quantity

SYSTEM_NAMESPACE_PREFIXES = ("kube-", "openshift")
SYSTEM_NAMESPACES = frozenset({"default", "gpu-operator", "nvidia-device-plugin", "kueue-system", "volcano-system"})
_DNS_LABEL = re.compile(r"[^a-z0-9-]+")


def dns_label(text: str, fallback: str) -> str:
    cleaned = _DNS_LABEL.sub("-", text.lower()).strip("-")[:63].strip("-")
    return cleaned or fallback


def _is_tenant_namespace(name: str) -> bool:
    return name not in SYSTEM_NAMESPACES and not name.startswith(SYSTEM_NAMESPACE_PREFIXES)


def infer_tenants(
    snapshot: ClusterSnapshot, advertised: dict[str, dict[str, int]], pool_nodes: dict[str, set[str]]
) -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
    """Tenants from namespaces with GPU quotas, grouped by their gpustack.io/tenant label where they carry one.

    Where several pools advertise a quota's resource, the pools the tenant's pods run on are preferred: a quota
    split onto a pool the tenant never used would grant it that pool.
    """
    labels = {ns.name: dict(ns.labels) for ns in snapshot.namespaces}
    per_namespace: dict[str, dict[str, int]] = {}
    devices = _device_quotas(snapshot, pool_nodes)
    for found in snapshot.quotas:
        if not _is_tenant_namespace(found.namespace):
            continue
        for key, written in found.hard:
            if key.startswith("requests.nvidia.com/"):
                resource = key.removeprefix("requests.")
                largest = per_namespace.setdefault(found.namespace, {})
                largest[resource] = max(largest.get(resource, 0), int(parse_quantity(written)))
    for namespace, granted in devices.items():
        largest = per_namespace.setdefault(namespace, {})
        for (_pool, unit), amount in granted.items():  # the DRA pools' share of the extended-resource quota
            resource = f"nvidia.com/{unit}"
            if resource in largest:
                largest[resource] = max(largest[resource] - amount, 0)
    grouped: dict[str, list[str]] = {}
    for namespace in sorted(per_namespace):
        label = labels.get(namespace, {}).get(TENANT_LABEL) or namespace
        grouped.setdefault(dns_label(label, "tenant"), []).append(namespace)
    tenants: list[dict[str, Any]] = []
    notes: dict[str, list[str]] = {}
    for name, namespaces in grouped.items():
        guesses = notes.setdefault(name, [])
        if len(namespaces) > 1:
            # Whoever may label a namespace may claim a tenant this way: the grouping is a guess, never a fact.
            guesses.append(
                f"namespaces: grouped by their {TENANT_LABEL} label; check that each belongs to this tenant, "
                "which gets them its pools and quota"
            )
        hard: dict[str, int] = {}
        for namespace in namespaces:
            for resource, amount in per_namespace[namespace].items():
                if resource in hard and hard[resource] != amount:
                    guesses.append(
                        f"quota {resource}: the namespaces differ; the largest, {max(amount, hard[resource])}"
                    )
                hard[resource] = max(hard.get(resource, 0), amount)
        quota: dict[str, dict[str, int]] = {}
        for namespace in namespaces:
            for (pool, unit), amount in sorted(devices.get(namespace, {}).items()):
                quota.setdefault(pool, {})[unit] = max(quota.get(pool, {}).get(unit, 0), amount)
        for resource, amount in sorted(hard.items()):
            if amount == 0:
                continue
            holders = [p for p in advertised if resource in advertised[p]]
            used = [p for p in holders if p in _pools_in_use(snapshot, namespaces, pool_nodes)]
            holders = used or holders
            if not holders:
                guesses.append(f"quota {resource}: no pool advertises it; left out")
                continue
            if len(holders) > 1:
                guesses.append(f"quota {resource}: several pools advertise it; split over {', '.join(holders)}")
            left = amount
            for index, pool in enumerate(holders):
                take = left if index == len(holders) - 1 else min(left, advertised[pool][resource])
                if take > advertised[pool][resource]:
                    guesses.append(
                        f"quota {resource}: {amount} is above what the pools have; "
                        f"capped at {advertised[pool][resource]}"
                    )
                    take = advertised[pool][resource]
                if take == 0 and index > 0:  # the pools before took it all: no grant on this one
                    continue
                quota.setdefault(pool, {})[resource.removeprefix("nvidia.com/")] = take
                left -= take
        # A 0 on a resource one of its own pools advertises is a grant of none (a pool split between tenants by
        # unit, e.g. whole GPUs to one and MIG instances to another); gpustack's 0s on other pools' names are not.
        for resource, amount in sorted(hard.items()):
            own = [pool for pool in quota if resource in advertised.get(pool, {})]
            if amount == 0 and len(own) == 1:
                quota[own[0]].setdefault(resource.removeprefix("nvidia.com/"), 0)
        if not quota:
            continue
        priority = _priority(snapshot, namespaces)
        if priority is None:
            guesses.append("priority: no pod in its namespaces runs at one gpustack PriorityClass; normal")
        tenant = {"name": name, "namespaces": namespaces, "pools": sorted(quota), "priority": priority or "normal"}
        tenants.append({**tenant, "quota": quota})
    return tenants, notes


def _device_quotas(snapshot: ClusterSnapshot, pool_nodes: dict[str, set[str]]) -> dict[str, dict[tuple[str, str], int]]:
    """namespace -> (imported pool, unit) -> devices, from gpustack's DRA device-class quotas above 0."""
    suffix = f".{CLASS_SUFFIX}{load_facts().quota_suffix}"
    # The class names the pool as gpustack called it; the nodes' pool label says which imported pool that is.
    node_pool = {node: pool for pool, nodes in pool_nodes.items() for node in nodes}
    renamed = {
        label: node_pool[node.name]
        for node in snapshot.nodes
        if (label := node.label(POOL_LABEL)) is not None and node.name in node_pool
    }
    out: dict[str, dict[tuple[str, str], int]] = {}
    for quota in snapshot.quotas:
        if not _is_tenant_namespace(quota.namespace):
            continue
        for key, amount in quota.hard:
            if not key.endswith(suffix):
                continue
            unit, _, pool = key.removesuffix(suffix).rpartition(".")
            count = int(parse_quantity(amount))
            if count > 0 and pool in renamed and (unit == "gpu" or unit.startswith("mig-")):
                unit = unit[: -len("-me")] + "+me" if unit.endswith("-me") else unit  # class_name's '+' -> '-'
                out.setdefault(quota.namespace, {})[(renamed[pool], unit)] = count
    return out


def _pools_in_use(snapshot: ClusterSnapshot, namespaces: list[str], pool_nodes: dict[str, set[str]]) -> set[str]:
    nodes = {pod.node_name for pod in snapshot.pods if pod.namespace in namespaces and pod.holds_resources}
    return {pool for pool, members in pool_nodes.items() if members & nodes}


def _priority(snapshot: ClusterSnapshot, namespaces: list[str]) -> str | None:
    """The tenant's level where its pods all run at one gpustack-<level> PriorityClass (as gpustack compiles them)."""
    prefix = priority_class_name("")
    levels = {
        pod.priority_class.removeprefix(prefix)
        for pod in snapshot.pods
        if pod.namespace in namespaces and pod.priority_class is not None and pod.priority_class.startswith(prefix)
    }
    return levels.pop() if len(levels) == 1 and levels <= set(PRIORITY_VALUES) else None

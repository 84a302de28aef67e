"""The tenants a cluster implies: namespaces with GPU quotas, grouped by their gpustack.io/tenant label.

A quota's `requests.nvidia.com/<resource>` goes to the pools whose nodes advertise that resource, split in
node order when several do and capped at what they have (a quota above the pool is an error in a blueprint);
every such choice is returned as a guess for the importer to write as a comment. A DRA pool advertises no
extended resource: its quota is read from gpustack's device-class quota (`<unit>.<pool>.gpustack.io` devices),
and taken off the same unit's `requests.nvidia.com/` quota, which gpustack writes for DRA pools too.

Import never grants more than the cluster enforces (N5). The API server admits a pod only if every ResourceQuota of
its namespace that covers the pod has room, so of several quotas on one resource the smallest binds. A quota with
`scopes` or a `scopeSelector` covers only the pods in its scope (a PriorityClass, Terminating pods, ...), while the
blueprint's quota binds every pod of the tenant (gpustack compiles it unscoped). The imported amount is therefore the
smallest over every quota of the namespace, scoped or not: taking only the unscoped ones would let the pods a scoped
quota holds to less run up to the larger limit. For the pods outside the scope the blueprint is then stricter than
the cluster, which the guess note says, naming the scope. Several namespaces grouped under one tenant share its one
quota, each getting all of it, so the tenant gets the smallest of theirs too: grouping never raises a namespace's
limit. A namespace without a quota on a resource is unlimited in it and constrains nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from gpustack.cluster.queues import SnapshotQueue
from gpustack.cluster.snapshot import ClusterSnapshot, SnapshotPod, SnapshotQuota
from gpustack.dra import CLASS_SUFFIX, load_facts
from gpustack.model import PRIORITY_VALUES, UNLIMITED
from gpustack.names import KAI_NAMESPACES, POOL_LABEL, TENANT_LABEL, priority_class_name
from gpustack.quantity import parse_quantity

SYSTEM_NAMESPACE_PREFIXES = ("kube-", "openshift")
SYSTEM_NAMESPACES = frozenset(
    {"default", "gpu-operator", "nvidia-device-plugin", "kueue-system", "volcano-system", *KAI_NAMESPACES}
)
QUOTA_PREFIX = "requests.nvidia.com/"  # extended resources take quota only as requests.<name>
_DNS_LABEL = re.compile(r"[^a-z0-9-]+")
_Found = list[tuple[int, SnapshotQuota]]  # one resource's hard amounts in one namespace, with their quotas


def dns_label(text: str, fallback: str) -> str:
    cleaned = _DNS_LABEL.sub("-", text.lower()).strip("-")[:63].strip("-")
    return cleaned or fallback


def _is_tenant_namespace(name: str) -> bool:
    return name not in SYSTEM_NAMESPACES and not name.startswith(SYSTEM_NAMESPACE_PREFIXES)


def _smallest(what: str, namespace: str, found: _Found, notes: list[str]) -> int:
    """The smallest of one namespace's hard amounts on a resource (what the API server enforces), noted where the
    quotas disagree or the binding one is scoped."""
    amount, binding = min(found, key=lambda item: item[0])
    amounts = sorted({a for a, _ in found})
    if len(amounts) > 1:
        listed = ", ".join(f"{quota.name} {a}" for a, quota in sorted(found, key=lambda item: (item[0], item[1].name)))
        notes.append(
            f"quota {what}: {namespace}'s ResourceQuotas differ ({listed}); the smallest, {amount}, which the "
            "API server enforces"
        )
    if binding.scoped:
        notes.append(
            f"quota {what}: {namespace}'s ResourceQuota {binding.name} ({amount}) counts only pods in scope "
            f"{binding.scope_text()}; imported for every pod, so stricter than the cluster for the others"
        )
    return amount


def _namespace_quotas(snapshot: ClusterSnapshot) -> dict[str, dict[str, _Found]]:
    """namespace -> nvidia.com resource -> the hard amounts of the tenant namespaces' quotas on it."""
    found: dict[str, dict[str, _Found]] = {}
    for quota in snapshot.quotas:
        if not _is_tenant_namespace(quota.namespace):
            continue
        for key, written in quota.hard:
            if key.startswith(QUOTA_PREFIX):
                resource = key.removeprefix("requests.")
                found.setdefault(quota.namespace, {}).setdefault(resource, []).append(
                    (int(parse_quantity(written)), quota)
                )
    return found


def infer_tenants(
    snapshot: ClusterSnapshot, advertised: dict[str, dict[str, int]], pool_nodes: dict[str, set[str]]
) -> tuple[list[dict[str, Any]], dict[str, list[str]], list[str]]:
    """Tenants from namespaces with GPU quotas, grouped by the parent of their KAI leaf Queue where one is named
    `<parent>.<namespace>`, else by their gpustack.io/tenant label where they carry one. A tenant's scheduler is
    what the cluster shows: Kueue LocalQueues in its namespaces, KAI leaf Queues under its name, a Volcano Queue of
    its name.

    Where several pools advertise a quota's resource, the pools the tenant's pods run on are preferred: a quota
    split onto a pool the tenant never used would grant it that pool.
    """
    labels = {ns.name: dict(ns.labels) for ns in snapshot.namespaces}
    namespace_notes: dict[str, list[str]] = {}
    per_namespace: dict[str, dict[str, int]] = {}
    for namespace, resources in _namespace_quotas(snapshot).items():
        said = namespace_notes.setdefault(namespace, [])
        per_namespace[namespace] = {
            resource: _smallest(resource, namespace, amounts, said) for resource, amounts in sorted(resources.items())
        }
    devices = _device_quotas(snapshot, pool_nodes, namespace_notes)
    for namespace, granted in devices.items():
        limits = per_namespace.setdefault(namespace, {})
        for (_pool, unit), amount in granted.items():  # the DRA pools' share of the extended-resource quota
            resource = f"nvidia.com/{unit}"
            if resource in limits:
                limits[resource] = max(limits[resource] - amount, 0)
    # A tenant whose every pool is `unlimited` may have no ResourceQuota naming a GPU (nothing to close), yet its
    # namespace carries gpustack's tenant label: it is a tenant too, whose pools its running pods show.
    for name, namespace_labels in labels.items():
        if TENANT_LABEL in namespace_labels and _is_tenant_namespace(name):
            per_namespace.setdefault(name, {})
    grouped: dict[str, list[str]] = {}
    kai_parents = _kai_parents(snapshot)
    for namespace in sorted(per_namespace):
        # A KAI leaf `<parent>.<namespace>` names the tenant as compile does: keeping it keeps the cluster's Queues.
        label = kai_parents.get(namespace) or labels.get(namespace, {}).get(TENANT_LABEL) or namespace
        grouped.setdefault(dns_label(label, "tenant"), []).append(namespace)
    pods = _pods_by_namespace(snapshot.pods)
    node_pool = {node: pool for pool, nodes in pool_nodes.items() for node in nodes}
    holders: dict[str, list[str]] = {}  # resource -> the pools that advertise it, in pool order
    for pool, names in advertised.items():
        for resource in names:
            holders.setdefault(resource, []).append(pool)
    tenants: list[dict[str, Any]] = []
    notes: dict[str, list[str]] = {}
    limited: dict[str, set[str]] = {}  # tenant -> the resources its quotas name (0 included)
    others_use = {name: _pools_in_use(pods, namespaces, node_pool) for name, namespaces in grouped.items()}
    queued = {queue.namespace for queue in snapshot.local_queues}
    for name, namespaces in grouped.items():
        guesses = notes.setdefault(name, [])
        if len(namespaces) > 1:
            # Whoever may label a namespace may claim a tenant this way: the grouping is a guess, never a fact.
            kai = kai_parents.get(namespaces[0]) == name
            grouped_by = "KAI leaf Queues' parent" if kai else f"{TENANT_LABEL} label"
            guesses.append(
                f"namespaces: grouped by their {grouped_by}; check that each belongs to this tenant, "
                "which gets them its pools and quota"
            )
        for namespace in namespaces:
            guesses.extend(namespace_notes.get(namespace, ()))
        hard = _shared({ns: per_namespace[ns] for ns in namespaces}, guesses)
        quota: dict[str, dict[str, int]] = {}
        for (pool, unit), amount in sorted(_shared_devices(devices, namespaces).items()):
            quota.setdefault(pool, {})[unit] = amount
        in_use = _pools_in_use(pods, namespaces, node_pool)
        for resource, amount in sorted(hard.items()):
            if amount == 0:
                continue
            offered = holders.get(resource, [])
            used = [p for p in offered if p in in_use]
            # Not a pool only another tenant's pods run on: a split onto it would grant this tenant that one.
            theirs = {p for other, pools in others_use.items() if other != name for p in pools}
            offered = used or [p for p in offered if p not in theirs] or offered
            if not offered:
                guesses.append(f"quota {resource}: no pool advertises it; left out")
                continue
            if len(offered) > 1:
                guesses.append(f"quota {resource}: several pools advertise it; split over {', '.join(offered)}")
            left = amount
            for index, pool in enumerate(offered):
                take = left if index == len(offered) - 1 else min(left, advertised[pool][resource])
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
        priority = _priority(pods, namespaces)
        if priority is None:
            guesses.append("priority: no pod in its namespaces runs at one gpustack PriorityClass; normal")
        tenant = {"name": name, "namespaces": namespaces, "pools": sorted(quota), "priority": priority or "normal"}
        if any(namespace in queued for namespace in namespaces):  # a Kueue LocalQueue there: Kueue queues its pods
            tenant["scheduler"] = "kueue"
        else:
            tenant.update(_queue_scheduler(snapshot, name, namespaces, kai_parents, guesses))
        tenants.append({**tenant, "quota": quota})
        limited[name] = set(hard)
    _whole_pools(tenants, limited, advertised, notes)
    _unlimited_in_use(tenants, limited, advertised, others_use, notes)
    kept = [tenant for tenant in tenants if tenant["pools"]]
    # No GPU quota limits these and no GPU pod runs there: nothing the snapshot shows says which pools they hold.
    unplaced = sorted(namespace for tenant in tenants if not tenant["pools"] for namespace in tenant["namespaces"])
    return kept, {tenant["name"]: notes.get(tenant["name"], []) for tenant in kept}, unplaced


def _whole_pools(
    tenants: list[dict[str, Any]],
    limited: dict[str, set[str]],
    advertised: dict[str, dict[str, int]],
    notes: dict[str, list[str]],
) -> None:
    """Pools a tenant holds whole, as gpustack compiles them: its quotas name every other pool's resources and
    leave this pool's unlimited. Only a pool no tenant has a quota on, so no tenant is given another's pool. The
    quota says `unlimited` for it: a granted pool without an entry is closed (GS610), and the cluster has no line."""
    quota_pools = {pool for tenant in tenants for pool in tenant["quota"]}
    every_name = {name for names in advertised.values() for name in names}
    # The other pools' names, less this pool's own, are every name less this pool's: one set per pool, not per
    # tenant and pair of pools (that was quadratic in pools: 11 s of a 13,000-node import).
    others = {pool: every_name.difference(names) for pool, names in advertised.items() if pool not in quota_pools}
    for tenant in tenants:
        hard = limited[tenant["name"]]
        for pool, names in advertised.items():
            if names and pool in others and others[pool] <= hard and hard.isdisjoint(names):
                tenant["pools"] = sorted({*tenant["pools"], pool})
                tenant["quota"][pool] = UNLIMITED
                unlimited = ", ".join(sorted(names))
                notes.setdefault(tenant["name"], []).append(
                    f"pools: {pool} held whole, since its quotas limit every other pool's resources but not {unlimited}"
                )


def _unlimited_in_use(
    tenants: list[dict[str, Any]],
    limited: dict[str, set[str]],
    advertised: dict[str, dict[str, int]],
    in_use: dict[str, set[str]],
    notes: dict[str, list[str]],
) -> None:
    """A tenant no quota gives a pool takes, `unlimited`, the pools its GPU pods run on where its quotas limit none of
    the pool's names: what the cluster lets it use there, as `unlimited` compiles it (no quota line)."""
    for tenant in tenants:
        if tenant["pools"]:
            continue
        hard = limited[tenant["name"]]
        for pool in sorted(in_use[tenant["name"]]):
            names = advertised.get(pool, {})
            if names and hard.isdisjoint(names):
                tenant["pools"].append(pool)
                tenant["quota"][pool] = UNLIMITED
                notes.setdefault(tenant["name"], []).append(
                    f"pools: {pool} unlimited, since its GPU pods run there and no quota limits "
                    f"{', '.join(sorted(names))}"
                )


def _kai_parents(snapshot: ClusterSnapshot) -> dict[str, str]:
    """namespace -> the tenant its KAI leaf Queues name, where a leaf is named `<parent>.<namespace>` as gpustack names
    them: the parent `<tenant>.<pool>` in a pool's shard (its pool label says which), or a lone `<tenant>` (one tree
    for every pool, as a hand-made cluster may have it). A namespace whose leaves name two tenants names none."""
    queues = {queue.name: queue for queue in snapshot.queues if queue.scheduler == "kai"}
    found: dict[str, set[str]] = {}
    for queue in queues.values():
        parent = queue.parent
        if parent is None or not queue.name.startswith(f"{parent}."):
            continue
        namespace = queue.name.removeprefix(f"{parent}.")
        tenant = _kai_tenant_of(parent, queues.get(parent))
        if tenant is not None and dns_label(namespace, "") == namespace:
            found.setdefault(namespace, set()).add(tenant)
    return {namespace: tenants.pop() for namespace, tenants in found.items() if len(tenants) == 1}


def _kai_tenant_of(parent: str, queue: SnapshotQueue | None) -> str | None:
    """The tenant a parent Queue is named after: `<tenant>` itself, or `<tenant>.<pool>` where the Queue is labelled
    with that pool (gpustack's shard per pool)."""
    if dns_label(parent, "") == parent:
        return parent
    tenant, _, pool = parent.rpartition(".")
    labels = dict(queue.labels) if queue is not None else {}
    if labels.get(POOL_LABEL) == pool and dns_label(tenant, "") == tenant:
        return tenant
    return None


def _queue_scheduler(
    snapshot: ClusterSnapshot, name: str, namespaces: list[str], kai_parents: dict[str, str], guesses: list[str]
) -> dict[str, Any]:
    """KAI where every namespace of the tenant has its leaf Queues under parents of the tenant's name (its cohort is
    a guess left out: import writes the quota its ResourceQuotas enforce); Volcano where a Volcano Queue has its name
    (gpustack's, from compile/volcano.py), with that Queue's weight and reclaimable."""
    if namespaces and all(kai_parents.get(namespace) == name for namespace in namespaces):
        kai = [q for q in snapshot.queues if q.scheduler == "kai" and _kai_tenant_of(q.name, q) == name]
        cohorts = sorted({q.parent for q in kai if q.parent is not None})
        if cohorts:
            guesses.append(
                f"scheduler: KAI queue(s) of {name} sit under {', '.join(cohorts)}; the cohort and its borrowing are "
                "not imported"
            )
        return {"scheduler": "kai"}
    if any(namespace in kai_parents for namespace in namespaces):
        guesses.append("scheduler: some of its namespaces have KAI leaf Queues, not all; left to kube-scheduler")
    volcano = next((q for q in snapshot.queues if q.scheduler == "volcano" and q.name == name), None)
    if volcano is None or name in ("default", "root"):  # Volcano's own queues are no tenant's
        return {}
    settings: dict[str, Any] = {}
    if volcano.weight is not None and volcano.weight != 1:
        settings["weight"] = volcano.weight
    if volcano.reclaimable is False:
        settings["reclaimable"] = False
    return {"scheduler": "volcano", **({"volcano": settings} if settings else {})}


def _shared(limits: dict[str, dict[str, int]], guesses: list[str]) -> dict[str, int]:
    """One tenant's quota from its namespaces' limits: each namespace gets the whole quota, so the smallest."""
    by_resource: dict[str, list[tuple[int, str]]] = {}
    for namespace, resources in limits.items():
        for resource, amount in resources.items():
            by_resource.setdefault(resource, []).append((amount, namespace))
    hard: dict[str, int] = {}
    for resource, found in by_resource.items():
        hard[resource] = min(amount for amount, _ in found)
        if len({amount for amount, _ in found}) > 1:
            listed = ", ".join(f"{namespace} {amount}" for amount, namespace in sorted(found, key=lambda f: f[1]))
            guesses.append(
                f"quota {resource}: the namespaces differ ({listed}); the smallest, {hard[resource]}, which each "
                "namespace gets, so none gets more than it has"
            )
    return hard


def _shared_devices(
    devices: dict[str, dict[tuple[str, str], int]], namespaces: Iterable[str]
) -> dict[tuple[str, str], int]:
    out: dict[tuple[str, str], int] = {}
    for namespace in namespaces:
        for key, amount in devices.get(namespace, {}).items():
            out[key] = min(out.get(key, amount), amount)
    return out


def _pods_by_namespace(pods: Iterable[SnapshotPod]) -> dict[str, list[SnapshotPod]]:
    out: dict[str, list[SnapshotPod]] = {}
    for pod in pods:
        out.setdefault(pod.namespace, []).append(pod)
    return out


def _device_quotas(
    snapshot: ClusterSnapshot, pool_nodes: dict[str, set[str]], notes: dict[str, list[str]]
) -> dict[str, dict[tuple[str, str], int]]:
    """namespace -> (imported pool, unit) -> devices, from gpustack's DRA device-class quotas: the smallest over a
    namespace's quotas on a class, as for extended resources, and only where that is above 0."""
    suffix = f".{CLASS_SUFFIX}{load_facts().quota_suffix}"
    # The class names the pool as gpustack called it; the nodes' pool label says which imported pool that is.
    node_pool = {node: pool for pool, nodes in pool_nodes.items() for node in nodes}
    renamed = {
        label: node_pool[node.name]
        for node in snapshot.nodes
        if (label := node.label(POOL_LABEL)) is not None and node.name in node_pool
    }
    found: dict[str, dict[tuple[str, str, str], _Found]] = {}
    for quota in snapshot.quotas:
        if not _is_tenant_namespace(quota.namespace):
            continue
        for key, amount in quota.hard:
            if not key.endswith(suffix):
                continue
            unit, _, pool = key.removesuffix(suffix).rpartition(".")
            if pool in renamed and (unit == "gpu" or unit.startswith("mig-")):
                named = (key, renamed[pool], unit[: -len("-me")] + "+me" if unit.endswith("-me") else unit)
                found.setdefault(quota.namespace, {}).setdefault(named, []).append((int(parse_quantity(amount)), quota))
    out: dict[str, dict[tuple[str, str], int]] = {}
    for namespace, classes in sorted(found.items()):
        for (key, pool, unit), amounts in sorted(classes.items()):
            count = _smallest(key, namespace, amounts, notes.setdefault(namespace, []))
            if count > 0:
                out.setdefault(namespace, {})[(pool, unit)] = count  # class_name's '+' -> '-' undone above
    return out


def _pools_in_use(pods: dict[str, list[SnapshotPod]], namespaces: list[str], node_pool: dict[str, str]) -> set[str]:
    return {
        node_pool[pod.node_name]
        for namespace in namespaces
        for pod in pods.get(namespace, ())
        if pod.holds_resources and pod.node_name in node_pool
    }


def _priority(pods: dict[str, list[SnapshotPod]], namespaces: list[str]) -> str | None:
    """The tenant's level where its pods all run at one gpustack-<level> PriorityClass (as gpustack compiles them)."""
    prefix = priority_class_name("")
    levels = {
        pod.priority_class.removeprefix(prefix)
        for namespace in namespaces
        for pod in pods.get(namespace, ())
        if pod.priority_class is not None and pod.priority_class.startswith(prefix)
    }
    return levels.pop() if len(levels) == 1 and levels <= set(PRIORITY_VALUES) else None

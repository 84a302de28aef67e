"""Risk flags: one function per way a blueprint change can hurt what is already running.

Each rule reads both versions and returns the risks it finds, naming the nodes and workloads they touch.
"Running" means what the old version put on the cluster: its workloads' pods, on its pools' nodes.
Apply order matters to several of them: gpustack's manifests patch Nodes before workloads roll.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from gpustack.checks.tenancy import tenant_demand
from gpustack.model import NodePool, SharingStrategy, Taint, WorkloadKind
from gpustack.offers import Isolation, full_resource_name
from gpustack.review.fields import taint_text
from gpustack.review.layouts import MIG_OFF, gpu_states, index_ranges
from gpustack.review.risk import Level, Risk
from gpustack.review.snapshot import Snapshot

Rule = Callable[[Snapshot, Snapshot], list[Risk]]

ISOLATION_RANK: dict[str, int] = {
    Isolation.EXCLUSIVE: 4,
    Isolation.HARDWARE: 3,
    Isolation.MPS_LIMITS: 2,
    Isolation.SOFTWARE: 1,
    Isolation.NONE: 0,
}


def _sorted(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted(set(items)))


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _quoted(names: Iterable[str]) -> str:
    return ", ".join(f"'{name}'" for name in names)


def _running_on(before: Snapshot, pools: Iterable[str]) -> tuple[str, ...]:
    """Workloads the old version runs on these pools: their pods are the ones a change can hit."""
    return _sorted(w for pool in pools for w in before.workloads_on(pool))


def mig_repartition(before: Snapshot, after: Snapshot) -> list[Risk]:
    """A node's GPUs get a different MIG layout (or MIG turned on or off): GPU reset, pods on them killed."""
    changes: dict[str, list[tuple[str, str]]] = {}  # after pool -> (node, detail)
    old_pools: dict[str, set[str]] = {}
    for node, new_pool in after.node_pools.items():
        old_pool = before.node_pools.get(node)
        if old_pool is None:  # a node new to the blueprint: its current state is unknown, not a change we can see
            continue
        old, new = gpu_states(old_pool), gpu_states(new_pool)
        changed = [i for i in sorted(set(old) & set(new)) if old[i][0] != new[i][0]]
        if not changed:
            continue
        moves = sorted({(old[i][1], new[i][1]) for i in changed})
        detail = "; ".join(
            f"GPUs {index_ranges(i for i in changed if (old[i][1], new[i][1]) == move)}: {move[0]} -> {move[1]}"
            for move in moves
        )
        changes.setdefault(new_pool.name, []).append((node, detail))
        old_pools.setdefault(new_pool.name, set()).add(old_pool.name)
    risks = []
    for pool, entries in sorted(changes.items()):
        nodes = tuple(node for node, _ in entries)
        toggles = any(MIG_OFF in detail for _, detail in entries)
        reset = (
            "MIG mode changes, which needs a GPU reset (on some systems a reboot)"
            if toggles
            else ("the GPUs' MIG instances are destroyed and re-created")
        )
        risks.append(
            Risk(
                "mig-repartition",
                Level.HIGH,
                f"MIG re-partitioning in pool '{pool}' on {_plural(len(nodes), 'node')}",
                f"The MIG manager re-partitions GPUs on {_plural(len(nodes), 'node')}: it stops the GPU operands "
                f"(device plugin, GPU Feature Discovery, DCGM) on each node, {reset}, and every pod using those "
                "GPUs is killed. The node advertises no MIG devices until the new layout is in place.",
                "Cordon and drain the nodes before applying (one at a time to keep capacity), then wait for the "
                "node label nvidia.com/mig.config.state=success before uncordoning.",
                nodes=nodes,
                workloads=_running_on(before, sorted(old_pools[pool])),
                pools=(pool,),
                details=tuple(f"{node}: {detail}" for node, detail in entries),
            )
        )
    return risks


def _taint_key(taint: Taint) -> tuple[str, str | None, str]:
    return (taint.key, taint.value, taint.effect)


def _tolerated(pool: NodePool | None, taint: Taint) -> bool:
    """Whether pods made for `pool` (gpustack tolerates exactly its pool's taints) tolerate `taint`."""
    if pool is None:
        return False
    for own in pool.taints:
        if own.key == taint.key and own.effect == taint.effect and (own.value is None or own.value == taint.value):
            return True
    return False


def noexecute_taint(before: Snapshot, after: Snapshot) -> list[Risk]:
    """A NoExecute taint appears on a node: every running pod that does not tolerate it is evicted."""
    found: dict[tuple[str, tuple[str, ...]], list[str]] = {}  # (after pool, new taints) -> nodes
    old_pools: dict[tuple[str, tuple[str, ...]], set[str]] = {}
    for node, new_pool in after.node_pools.items():
        old_pool = before.node_pools.get(node)
        old = {_taint_key(t) for t in old_pool.taints} if old_pool is not None else set()
        added = [t for t in new_pool.taints if t.effect == "NoExecute" and _taint_key(t) not in old]
        if not added:
            continue
        key = (new_pool.name, tuple(taint_text(t.key, t.value, t.effect) for t in added))
        found.setdefault(key, []).append(node)
        if old_pool is not None and not all(_tolerated(old_pool, t) for t in added):
            old_pools.setdefault(key, set()).add(old_pool.name)
    risks = []
    for (pool, taints), nodes in sorted(found.items()):
        new_nodes = [n for n in nodes if n not in before.node_pools]
        newly = ""
        if new_nodes:
            newly = f" ({_plural(len(new_nodes), 'node')} new to the blueprint, whose pods are evicted too)"
        risks.append(
            Risk(
                "noexecute-taint",
                Level.HIGH,
                f"NoExecute taint {', '.join(taints)} added to {_plural(len(nodes), 'node')} of pool '{pool}'",
                f"A NoExecute taint evicts every running pod that does not tolerate it, at once{newly}. gpustack "
                "patches Nodes before it rolls workloads, so the pool's own running pods are evicted before "
                "replacements with the new toleration exist, and so are DaemonSet and other pods without it.",
                "Use NoSchedule unless running pods must leave; otherwise add the toleration to the workloads in one "
                "change and the NoExecute taint in a later one.",
                nodes=tuple(nodes),
                workloads=_running_on(before, sorted(old_pools.get((pool, taints), ()))),
                pools=(pool,),
            )
        )
    return risks


def _naming(pool: NodePool) -> tuple[str, bool, str | None]:
    """What decides the advertised resource names (besides the MIG layout, which mig-repartition covers)."""
    sharing = pool.sharing
    rename = sharing.replication.rename_by_default if sharing.replication is not None else False
    mig = str(sharing.mig.strategy) if sharing.mig is not None and sharing.strategy is SharingStrategy.MIG else None
    return (str(sharing.strategy), rename, mig)


def _naming_text(pool: NodePool) -> str:
    strategy, rename, mig = _naming(pool)
    if mig is not None:
        return f"mig ({mig})"
    return f"{strategy} (renameByDefault: true)" if rename else strategy


def resource_renamed(before: Snapshot, after: Snapshot) -> list[Risk]:
    """A sharing-mode change makes the pool advertise other resource names: running pods' requests are stranded."""
    risks = []
    for name in sorted(set(before.pools) & set(after.pools)):
        old_pool, new_pool = before.pools[name], after.pools[name]
        if _naming(old_pool) == _naming(new_pool):
            continue
        old_names = [o.resource for o in before.offers(name)]
        new_names = {o.resource for o in after.offers(name)}
        gone = [r for r in old_names if r not in new_names]
        if not gone:
            continue
        stranded = _sorted(
            w
            for w in before.workloads_on(name)
            if (requests := before.requests(w)) is not None and any(r in gone for r in requests.as_dict())
        )
        now = ", ".join(o.resource for o in after.offers(name))
        risks.append(
            Risk(
                "resource-renamed",
                Level.HIGH if stranded else Level.MEDIUM,
                f"Pool '{name}' stops advertising {', '.join(gone)} (sharing {_naming_text(old_pool)} -> "
                f"{_naming_text(new_pool)})",
                f"The device plugin will advertise {now} instead. Running pods keep their GPUs until they stop, but "
                f"they request {', '.join(gone)}, which no node of the pool offers any more: a restarted pod fails "
                "admission, a new one stays Pending, and quotas on the old name stop counting."
                + (
                    f" Stranded: {_quoted(stranded)}."
                    if stranded
                    else " No workload of the blueprint asks for it; pods from outside the blueprint may."
                ),
                "Roll the affected workloads right after the device plugin picks up the new config, or move them to "
                "another pool first; expect their pods to restart.",
                nodes=_sorted(n for n in new_pool.nodes if n in old_pool.nodes),
                workloads=stranded,
                pools=(name,),
            )
        )
    return risks


def workload_stranded(before: Snapshot, after: Snapshot) -> list[Risk]:
    """A workload that stays loses the pool, the resource (MIG profile) or the tolerations its running pods use."""
    risks = []
    for name in sorted(set(before.workloads) & set(after.workloads)):
        old, new = before.workloads[name], after.workloads[name]
        if old.pool not in after.pools:
            risks.append(
                Risk(
                    "workload-stranded",
                    Level.MEDIUM,
                    f"Workload '{name}' loses its pool '{old.pool}'",
                    f"Pool '{old.pool}' is removed; the workload now runs on pool '{new.pool}'. Its running pods "
                    f"require nodes labelled gpustack.io/pool={old.pool}: once the nodes are relabelled, a pod of the "
                    "old version that is rescheduled stays Pending, and the rollout re-creates every pod on "
                    f"'{new.pool}' hardware.",
                    f"Check that pool '{new.pool}' has room for the workload before the old pool's nodes go.",
                    nodes=before.pools[old.pool].nodes,
                    workloads=(name,),
                    pools=(old.pool, new.pool),
                )
            )
            continue
        risks.extend(_lost_resources(before, after, name))
        risks.extend(_lost_tolerations(before, after, name))
    return risks


def _lost_resources(before: Snapshot, after: Snapshot, name: str) -> list[Risk]:
    old = before.workloads[name]
    requests = before.requests(name)
    if requests is None or _naming(before.pools[old.pool]) != _naming(after.pools[old.pool]):
        return []  # a renamed resource is resource-renamed's to report
    offered = {o.resource for o in after.offers(old.pool)}
    gone = [r for r in requests.as_dict() if r not in offered]
    if not gone:
        return []
    new_requests = after.requests(name)
    now = ", ".join(new_requests.as_dict()) if new_requests is not None else "nothing it can get"
    return [
        Risk(
            "workload-stranded",
            Level.HIGH,
            f"Workload '{name}' asks for {', '.join(gone)}, which pool '{old.pool}' no longer offers",
            f"Its running pods request {', '.join(gone)}; after the change the pool's nodes do not advertise it, so a "
            f"pod that restarts or is rescheduled cannot be placed. The new template requests {now}.",
            "Roll the workload together with the layout change, or keep the profile in the layout until it has moved.",
            nodes=before.pools[old.pool].nodes,
            workloads=(name,),
            pools=(old.pool,),
        )
    ]


def _lost_tolerations(before: Snapshot, after: Snapshot, name: str) -> list[Risk]:
    """Jobs only: their pod template cannot change in place, so pods they start later keep the old tolerations."""
    old = before.workloads[name]
    if old.kind not in (WorkloadKind.JOB, WorkloadKind.VOLCANO_JOB):
        return []
    old_pool = before.pools[old.pool]
    untolerated: dict[str, list[str]] = {}
    for node in old_pool.nodes:
        new_pool = after.node_pools.get(node)
        if new_pool is None:
            continue
        for taint in new_pool.taints:
            if taint.effect == "NoSchedule" and not _tolerated(old_pool, taint):
                untolerated.setdefault(taint_text(taint.key, taint.value, taint.effect), []).append(node)
    return [
        Risk(
            "workload-stranded",
            Level.MEDIUM,
            f"{old.kind} '{name}' does not tolerate the new taint {taint} on {_plural(len(nodes), 'node')}",
            f"A {old.kind}'s pod template cannot be changed in place: pods it starts from now on (retries, remaining "
            f"completions) carry the old tolerations and are not placed on nodes with {taint}.",
            f"Delete and re-create the {old.kind} after applying, or let it finish before the taint is added.",
            nodes=tuple(nodes),
            workloads=(name,),
            pools=(old.pool,),
        )
        for taint, nodes in sorted(untolerated.items())
    ]


def quota_below_need(before: Snapshot, after: Snapshot) -> list[Risk]:
    """A tenant's quota is cut below what its own workload templates request with every pod running."""
    if after.context is None:
        return []
    risks = []
    for name in sorted(set(before.tenants) & set(after.tenants)):
        old, new = before.tenants[name], after.tenants[name]
        demand = tenant_demand(after.context, name)
        for pool, items in new.quota:
            old_quota = old.quota_for(pool) if pool in old.pools else {}
            for short, amount in items:
                was = old_quota.get(short)  # None: there was no limit
                needed = demand.get((pool, full_resource_name(short)), 0)
                if (was is None or amount < was) and amount < needed:
                    risks.append(_quota_risk(after, name, pool, short, (was, amount), needed))
    return risks


def _quota_risk(after: Snapshot, tenant: str, pool: str, short: str, cut: tuple[int | None, int], needed: int) -> Risk:
    was, amount = cut
    resource = full_resource_name(short)
    users = _sorted(
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


def node_moved(before: Snapshot, after: Snapshot) -> list[Risk]:
    """A node changes pools: it takes the new pool's labels, taints, device-plugin config and MIG layout."""
    moves: dict[tuple[str, str], list[str]] = {}
    for node, new_pool in after.node_pools.items():
        old_pool = before.node_pools.get(node)
        if old_pool is not None and old_pool.name != new_pool.name:
            moves.setdefault((old_pool.name, new_pool.name), []).append(node)
    return [
        Risk(
            "node-moved",
            Level.MEDIUM,
            f"{_plural(len(nodes), 'node')} moved from pool '{old}' to pool '{new}'",
            f"{', '.join(nodes)} get pool '{new}''s labels, taints and device-plugin configuration. Pods of '{old}''s "
            "workloads already there are not evicted by the label change but no longer match it; their GPUs now "
            f"count toward '{new}', and '{old}' has fewer nodes for them to come back to.",
            "Drain the nodes before applying so the old pool's pods move to its remaining nodes first.",
            nodes=tuple(nodes),
            workloads=_running_on(before, [old]),
            pools=(old, new),
        )
        for (old, new), nodes in sorted(moves.items())
    ]


def _version(text: str) -> tuple[int, ...]:
    parts = []
    for part in text.lstrip("v").split("."):
        digits = "".join(c for c in part if c.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def device_plugin_chart(before: Snapshot, after: Snapshot) -> list[Risk]:
    """The NVIDIA device plugin chart changes version or source: its DaemonSet rolls on every GPU node."""
    if before.blueprint is None or after.blueprint is None:
        return []
    old, new = before.blueprint.device_plugin, after.blueprint.device_plugin
    if (old.chart_version, old.repository) == (new.chart_version, new.repository):
        return []
    changes = []
    if old.chart_version != new.chart_version:
        direction = "downgraded" if _version(new.chart_version) < _version(old.chart_version) else "upgraded"
        changes.append(f"{direction} from {old.chart_version} to {new.chart_version}")
    if old.repository != new.repository:
        changes.append(f"pulled from {new.repository} instead of {old.repository}")
    nodes = tuple(sorted(after.node_pools))
    return [
        Risk(
            "device-plugin-chart",
            Level.MEDIUM,
            f"NVIDIA device plugin chart {' and '.join(changes)}",
            f"helm upgrade rolls the device plugin (and GPU Feature Discovery) on every GPU node "
            f"({_plural(len(nodes), 'node')}). Running pods keep their GPUs; while a node's plugin restarts, pods "
            "asking for GPUs there wait. Defaults and behaviour can change between chart versions.",
            "Read the chart's changelog between the two versions and roll it out in a quiet window.",
            nodes=nodes,
        )
    ]


def tenant_access_lost(before: Snapshot, after: Snapshot) -> list[Risk]:
    """A tenant can no longer use a pool it could (or the tenant is removed)."""
    risks = []
    for name, tenant in sorted(before.tenants.items()):
        new = after.tenants.get(name)
        lost = [p for p in tenant.pools if new is None or p not in new.pools]
        if not lost:
            continue
        workloads = _sorted(w.name for w in before.workloads.values() if w.tenant == name and w.pool in lost)
        if new is None:
            kept = {m.name for m in after.plan.objects if m.kind == "Namespace"}
            dropped = [n for n in tenant.namespaces if n not in kept]
            risks.append(
                Risk(
                    "tenant-access-lost",
                    Level.HIGH if dropped else Level.MEDIUM,
                    f"Tenant '{name}' removed: loses pools {_quoted(lost)}",
                    "The tenant's quotas and pool grants go. "
                    + (
                        f"Its namespaces {_quoted(dropped)} leave the manifests: applying with pruning deletes them "
                        "and every pod in them."
                        if dropped
                        else "Its namespaces stay, now without a GPU grant."
                    ),
                    "Move or stop the tenant's workloads first; apply without pruning if the namespaces must stay.",
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
                f"Tenant '{name}' loses access to pool(s) {_quoted(lost)}",
                "Admission refuses the tenant's new pods on the pool(s) and its quota there goes. Running pods are not "
                "evicted, but none can be replaced there.",
                "Move the tenant's workloads off the pool(s) first.",
                workloads=workloads,
                pools=tuple(lost),
                tenants=(name,),
            )
        )
    return risks


def _weakest(snapshot: Snapshot, pool: str) -> str | None:
    units = [o for o in snapshot.offers(pool) if o.memory_gib is not None]
    return min((str(o.isolation) for o in units), key=ISOLATION_RANK.__getitem__, default=None)


def isolation_weakened(before: Snapshot, after: Snapshot) -> list[Risk]:
    """A pool's GPUs give less isolation than before: pods that had a GPU (or slice) to themselves now share."""
    risks = []
    for name in sorted(set(before.pools) & set(after.pools)):
        old, new = _weakest(before, name), _weakest(after, name)
        if old is None or new is None or ISOLATION_RANK[new] >= ISOLATION_RANK[old]:
            continue
        tenants = _sorted(after.context.tenants_by_pool.get(name, ()) if after.context is not None else ())
        risks.append(
            Risk(
                "isolation-weakened",
                Level.MEDIUM if len(tenants) > 1 else Level.LOW,
                f"Pool '{name}' isolation drops from {old} to {new}",
                f"Pods on pool '{name}' will share GPUs with {new} isolation instead of {old}: memory and faults are "
                "less contained, so one pod's out-of-memory or crash can hurt its neighbours"
                + (f", across tenants {_quoted(tenants)}." if len(tenants) > 1 else "."),
                "Keep tenants that must not affect each other on separate pools.",
                nodes=after.pools[name].nodes,
                workloads=tuple(after.workloads_on(name)),
                pools=(name,),
                tenants=tenants,
            )
        )
    return risks


RULES: tuple[Rule, ...] = (
    mig_repartition,
    noexecute_taint,
    resource_renamed,
    workload_stranded,
    quota_below_need,
    node_moved,
    device_plugin_chart,
    tenant_access_lost,
    isolation_weakened,
)


def assess_risks(before: Snapshot, after: Snapshot) -> tuple[Risk, ...]:
    found = [risk for rule in RULES for risk in rule(before, after)]
    return tuple(sorted(found, key=Risk.sort_key))

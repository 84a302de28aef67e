"""Risks in what nodes carry: taints that evict, and nodes that change pools."""

from __future__ import annotations

from gpustack.review.risk import Level, Risk
from gpustack.review.risks.scheduling import running_on, taint_key, tolerated
from gpustack.review.risks.wording import plural
from gpustack.review.snapshot import Snapshot
from gpustack.taints import taint_text


def noexecute_taint(before: Snapshot, after: Snapshot) -> list[Risk]:
    """A NoExecute taint appears on a node: every running pod that does not tolerate it is evicted."""
    found: dict[tuple[str, tuple[str, ...]], list[str]] = {}  # (after pool, new taints) -> nodes
    old_pools: dict[tuple[str, tuple[str, ...]], set[str]] = {}
    for node, new_pool in after.node_pools.items():
        old_pool = before.node_pools.get(node)
        old = {taint_key(t) for t in old_pool.taints} if old_pool is not None else set()
        added = [t for t in new_pool.taints if t.effect == "NoExecute" and taint_key(t) not in old]
        if not added:
            continue
        key = (new_pool.name, tuple(taint_text(t) for t in added))
        found.setdefault(key, []).append(node)
        if old_pool is not None and not all(tolerated(old_pool, t) for t in added):
            old_pools.setdefault(key, set()).add(old_pool.name)
    risks = []
    for (pool, taints), nodes in sorted(found.items()):
        new_nodes = [n for n in nodes if n not in before.node_pools]
        newly = ""
        if new_nodes:
            newly = f" ({plural(len(new_nodes), 'node')} new to the blueprint, whose pods are evicted too)"
        risks.append(
            Risk(
                "noexecute-taint",
                Level.HIGH,
                f"NoExecute taint {', '.join(taints)} added to {plural(len(nodes), 'node')} of pool '{pool}'",
                f"A NoExecute taint evicts every running pod that does not tolerate it, at once{newly}. gpustack "
                "patches Nodes before it rolls workloads, so the pool's own running pods are evicted before "
                "replacements with the new toleration exist, and so are DaemonSet and other pods without it.",
                "Use NoSchedule unless running pods must leave; otherwise add the toleration to the workloads in one "
                "change and the NoExecute taint in a later one.",
                nodes=tuple(nodes),
                workloads=running_on(before, sorted(old_pools.get((pool, taints), ()))),
                pools=(pool,),
            )
        )
    return risks


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
            f"{plural(len(nodes), 'node')} moved from pool '{old}' to pool '{new}'",
            f"{', '.join(nodes)} {'takes' if len(nodes) == 1 else 'take'} the labels, taints, device-plugin "
            f"configuration and MIG layout of pool '{new}'. Pods of pool '{old}' running there are not evicted by the "
            f"label change but no longer match their pool; the GPUs now count toward '{new}', and '{old}' has fewer "
            "nodes to take its pods back.",
            "Drain the nodes before applying so the old pool's pods move to its remaining nodes first.",
            nodes=tuple(nodes),
            workloads=running_on(before, [old]),
            pools=(old, new),
        )
        for (old, new), nodes in sorted(moves.items())
    ]

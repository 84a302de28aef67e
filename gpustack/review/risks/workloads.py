"""Risks to workloads that stay in the blueprint but lose what their running pods stand on."""

from __future__ import annotations

from gpustack.model import WorkloadKind
from gpustack.review.risk import Level, Risk
from gpustack.review.risks.scheduling import naming, tolerated
from gpustack.review.risks.wording import plural
from gpustack.review.snapshot import Snapshot
from gpustack.taints import taint_text


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
    if requests is None or naming(before.pools[old.pool]) != naming(after.pools[old.pool]):
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
        if new_pool is None or new_pool.name != old.pool:  # a node that left the pool is node-moved's to report
            continue
        for taint in new_pool.taints:
            if taint.effect == "NoSchedule" and not tolerated(old_pool, taint):
                untolerated.setdefault(taint_text(taint), []).append(node)
    return [
        Risk(
            "workload-stranded",
            Level.MEDIUM,
            f"{old.kind} '{name}' does not tolerate the new taint {taint} on {plural(len(nodes), 'node')}",
            f"A {old.kind}'s pod template cannot be changed in place: pods it starts from now on (retries, remaining "
            f"completions) carry the old tolerations and are not placed on nodes with {taint}.",
            f"Delete and re-create the {old.kind} after applying, or let it finish before the taint is added.",
            nodes=tuple(nodes),
            workloads=(name,),
            pools=(old.pool,),
        )
        for taint, nodes in sorted(untolerated.items())
    ]

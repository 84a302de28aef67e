"""kube-scheduler's DefaultPreemption, carried out: which node, which victims, and the victims' events.

When no node fits a pod, kube-scheduler dry-runs preemption on every node that failed for a reason
eviction can cure (`Unschedulable`, not `UnschedulableAndUnresolvable`). On each such node
(default_preemption.go SelectVictimsOnNode) it removes every pod of strictly lower priority, checks the
pod fits, then adds the removed pods back most important first (higher priority, then the one that
started earlier; here: bound earlier) while the pod still fits; the pods that could not come back are
the victims. Among the nodes that work (preemption.go pickOneNodeForPreemption) it takes the one with
the fewest PodDisruptionBudget violations (gpustack models none), then the lowest highest-victim
priority, the smallest sum of victim priorities, the fewest victims, the latest start among the most
important victims (unknown here: the first node in the blueprint wins instead), then the first.
Members of Volcano gangs are never chosen as victims here (see select_victims).

The preemptor is then nominated to the node; the victims are deleted with the event
`Preempted by pod <preemptor UID> on node <node>`. A pod has no UID before it exists, so the simulation
names the preemptor `namespace/name` where the cluster would print its UID.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gpustack.simulate.cluster import Cluster
from gpustack.simulate.demand import Pod
from gpustack.simulate.filters import resource_verdict
from gpustack.simulate.messages import KubeVersion
from gpustack.simulate.placement import Rejection
from gpustack.simulate.pods import PODS

PREEMPTED = "Preempted"
INT32_MAX = 2**31 - 1  # victims' priorities are offset by MaxInt32+1 before summing, so negatives count


@dataclass(frozen=True)
class Preemption:
    node: int
    victims: tuple[Pod, ...]  # most important first


def preempted_message(preemptor: Pod, node: str) -> str:
    return f"Preempted by pod {preemptor.namespace}/{preemptor.name} on node {node}"


def _fits(cluster: Cluster, pod: Pod, node: int, gone: list[Pod], version: KubeVersion) -> bool:
    node_class = cluster.classes[cluster.class_of[node]]
    freed = dict.fromkeys(node_class.resources, 0)
    for victim in gone:
        for resource, value in (*victim.shape.requests, (PODS, 1)):
            if resource in freed:
                freed[resource] += value
    usage = tuple(u - freed[r] for u, r in zip(cluster.usage_of(node), node_class.resources, strict=True))
    return resource_verdict(pod.shape, node_class, usage, version) is None


def select_victims(cluster: Cluster, pod: Pod, node: int, version: KubeVersion) -> tuple[Pod, ...] | None:
    """The pods to evict from `node` for `pod` to fit, or None when evicting every lower-priority pod is not enough."""
    bound = cluster.pods[node]
    # Members of a Volcano gang are left alone: evicting one breaks its gang, which the simulation does not
    # follow further (Volcano would re-plan the whole job), so such a node is judged without them.
    lower = [p for p in bound if p.priority < pod.priority and not (p.volcano and p.gang is not None)]
    if not lower or not _fits(cluster, pod, node, lower, version):
        return None
    # MoreImportantPod: higher priority first, then the earlier start (bind order stands in for start time).
    ranked = sorted(lower, key=lambda p: (-p.priority, bound.index(p)))
    victims = list(ranked)
    for candidate in ranked:
        trial = [v for v in victims if v is not candidate]
        if _fits(cluster, pod, node, trial, version):
            victims = trial  # reprieved: it stays
    return tuple(victims)


def _rank(item: tuple[int, tuple[Pod, ...]]) -> tuple[int, int, int, int]:
    node, victims = item
    highest = max(v.priority for v in victims)
    total = sum(v.priority + INT32_MAX + 1 for v in victims)
    return (highest, total, len(victims), node)


def find_preemption(
    cluster: Cluster, pod: Pod, rejections: Sequence[Rejection], version: KubeVersion
) -> Preemption | None:
    """The node and victims kube-scheduler's default preemption would pick; None when it finds none.

    Only resolvable refusals are tried (`Unplaced.resolvable` holds just those).
    """
    if pod.preempt_never:
        return None
    candidates: list[tuple[int, tuple[Pod, ...]]] = []
    for rejection in rejections:
        if rejection.verdict.unresolvable:
            continue
        nodes = (
            [rejection.node] if rejection.node is not None else cluster.members(rejection.node_class, rejection.usage)
        )
        for node in nodes:
            victims = select_victims(cluster, pod, node, version)
            if victims is not None:
                candidates.append((node, victims))
    if not candidates:
        return None
    node, victims = min(candidates, key=_rank)
    return Preemption(node, victims)


def carry_out(cluster: Cluster, pod: Pod, preemption: Preemption) -> None:
    """Evict the victims and bind the preemptor to the node it was nominated to."""
    for victim in preemption.victims:
        cluster.unbind(victim, preemption.node)
    cluster.bind(pod, preemption.node)

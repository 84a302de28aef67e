"""Volcano's allocate action for one job: all of its gang (minAvailable pods) or none.

Tasks are tried in order, each on the best node; the first task that fits nowhere ends the attempt
(allocate.go `break`s). "Best" depends on the scheduler configuration gpustack compiles: with
`spec.volcano.binpack` the binpack plugin scores the fullest node highest (most-allocated); without
it only the nodeorder plugin scores, whose leastrequested part spreads pods like kube-scheduler's
default (least-allocated). If fewer than minAvailable found a node, every tentative
placement is given back and the PodGroup reports `N/M tasks in gang unschedulable: ...`.
Messages follow Volcano v1.10+ (job_info.go FitError, unschedule_info.go FitErrors).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from gpustack.simulate.cluster import Cluster
from gpustack.simulate.demand import GangSpec, Pod
from gpustack.simulate.messages import (
    volcano_gang_message,
    volcano_nodes_error,
    volcano_too_few_tasks,
    volcano_waiting,
)
from gpustack.simulate.placement import Judge, Rejection, place

ALL_UNAVAILABLE = "all nodes are unavailable"


@dataclass(frozen=True)
class GangResult:
    bound: tuple[tuple[Pod, int], ...]  # committed placements
    pending: tuple[tuple[Pod, str, tuple[Rejection, ...]], ...]  # pod, its PodScheduled message, refusals
    message: str | None  # the PodGroup's condition when the gang is not ready
    schedulable: int = 0  # members that found a node before the gang was given up


def allocate_gang(cluster: Cluster, spec: GangSpec, pods: list[Pod], judge: Judge, binpack: bool = False) -> GangResult:
    if len(pods) < spec.min_available:
        # The gang plugin refuses the job before allocating anything.
        message = volcano_too_few_tasks(len(pods), spec.min_available)
        return GangResult((), tuple((p, message, ()) for p in pods), message)
    bound: list[tuple[Pod, int]] = []
    failed: tuple[Pod, str, tuple[Rejection, ...]] | None = None
    for pod in pods:
        node, refused = place(cluster, pod.shape, judge, most_allocated=binpack)
        if node is None:
            failed = (pod, _nodes_error(cluster, refused.rejections), refused.rejections)
            break
        cluster.bind(pod, node)
        bound.append((pod, node))
    tried = len(bound) + (failed is not None)
    if len(bound) >= spec.min_available:
        # Untried tasks get Volcano's fallback text; the tried task's refusals stand for theirs, for the hint.
        rest = [(p, ALL_UNAVAILABLE, failed[2] if failed else ()) for p in pods[tried:]]
        return GangResult(tuple(bound), tuple(([failed] if failed else []) + rest), None)
    for pod, node in bound:
        cluster.unbind(pod, node)
    origin = (failed[0].name, failed[1]) if failed is not None else None
    message = volcano_gang_message(
        unready=spec.min_available - len(bound),
        tasks=len(pods),
        pending=len(pods),
        min_available=spec.min_available,
        schedulable=len(bound),
        origin=origin,
    )
    pending: list[tuple[Pod, str, tuple[Rejection, ...]]] = [
        (pod, volcano_waiting(pod.namespace, pod.name, cluster.nodes[node].name), ()) for pod, node in bound
    ]
    if failed is not None:
        pending.append(failed)
    pending += [(pod, message, failed[2] if failed is not None else ()) for pod in pods[tried:]]
    return GangResult((), tuple(pending), message, len(bound))


def _nodes_error(cluster: Cluster, rejections: tuple[Rejection, ...]) -> str:
    reasons: Counter[str] = Counter()
    for rejection in rejections:
        for reason in rejection.verdict.reasons:
            reasons[reason] += rejection.count
    return volcano_nodes_error(sum(r.count for r in rejections), reasons)

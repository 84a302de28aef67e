"""A JobSet's pods, or one LeaderWorkerSet group: placed by kube-scheduler, started whole or not at all.

Kueue admits a JobSet as one Workload and each LeaderWorkerSet group as one, and the controllers restart the whole
set when one pod fails (a collective or a tensor-parallel ring cannot run short a rank). So a group that cannot place
every pod runs none: each pod is placed as kube-scheduler would, in creation order, and if one finds no node the
others are given back. The refused pod keeps kube-scheduler's own FailedScheduling message; the messages of the
others are gpustack's, since no component words that wait.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpustack.simulate.cluster import Cluster
from gpustack.simulate.demand import GangSpec, Pod
from gpustack.simulate.messages import KubeVersion
from gpustack.simulate.placement import Judge, Rejection
from gpustack.simulate.scheduler import Unplaced, schedule_pod

GROUP_INCOMPLETE = "its group cannot be created whole"


@dataclass(frozen=True)
class GroupResult:
    bound: tuple[tuple[Pod, int], ...]
    pending: tuple[tuple[Pod, str, tuple[Rejection, ...], bool], ...]  # pod, message, refusals, refused itself
    message: str | None  # why the group does not start


def allocate_group(
    cluster: Cluster, spec: GangSpec, pods: list[Pod], judge: Judge, version: KubeVersion
) -> GroupResult:
    if len(pods) < spec.min_available:
        # The namespace quota refused some of its pods: the rest would wait for them forever.
        message = f"{GROUP_INCOMPLETE}: {len(pods)} of its {spec.min_available} pods were admitted"
        return GroupResult((), tuple((pod, message, (), False) for pod in pods), message)
    bound: list[tuple[Pod, int]] = []
    for pod in pods:
        result = schedule_pod(cluster, pod, judge, version, most_allocated=False)
        if not isinstance(result, Unplaced):
            bound.append((pod, result))
            continue
        for placed, node in bound:
            cluster.unbind(placed, node)
        message = (
            f"{len(bound)} of its {spec.min_available} pods found a node before {pod.name} did not: the group "
            "starts all its pods or none"
        )
        pending = [(placed, message, result.rejections, False) for placed, _ in bound]
        pending.append((pod, result.message, result.rejections, True))
        pending += [(rest, message, result.rejections, False) for rest in pods[len(bound) + 1 :]]
        return GroupResult((), tuple(pending), message)
    return GroupResult(tuple(bound), (), None)

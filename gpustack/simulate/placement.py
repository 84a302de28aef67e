"""Finding a pod's node: filter every node (group), score the feasible ones, keep the best.

Both schedulers share this; they differ in how a node is judged (`Judge`) and in the resource
score (least- or most-allocated). Ties go to the node listed first in the blueprint, where
kube-scheduler picks at random among equal scores, so the same blueprint always places the same way.
kube-scheduler on large clusters also stops filtering after enough feasible nodes
(percentageOfNodesToScore); that changes which node wins, never whether a pod fits, so all are scored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from gpustack.simulate.cluster import Cluster, NodeClass, Usage
from gpustack.simulate.filters import (
    Verdict,
    affinity_weight,
    fit_score,
    normalize,
    resource_verdict,
    static_verdict,
    statically_fits,
    taint_penalty,
    volcano_verdict,
)
from gpustack.simulate.messages import KubeVersion
from gpustack.simulate.pods import PodShape

# kube-scheduler's default score weights: TaintToleration 3, NodeAffinity 2, NodeResourcesFit 1.
TAINT_WEIGHT, AFFINITY_WEIGHT, FIT_WEIGHT = 3, 2, 1


class Judge(Protocol):
    def __call__(self, shape: PodShape, node_class: NodeClass, usage: Usage, *, single: bool = False) -> Verdict | None:
        """Why the class's nodes with this usage refuse the pod, or None; `single`: a one-node class."""
        ...


@dataclass(frozen=True)
class Rejection:
    """`count` nodes of one class (and usage) refused the pod with `verdict`."""

    node_class: int
    usage: Usage
    verdict: Verdict
    count: int
    node: int | None = None  # set when judged node by node


@dataclass(frozen=True)
class _Candidate:
    node_class: NodeClass
    usage: Usage
    first: int  # the lowest node index with this class and usage


@dataclass
class KubeJudge:
    """kube-scheduler's filters; the usage-independent part is cached per (pod shape, class)."""

    version: KubeVersion
    # Keyed by the shape's identity: pods of one workload share one shape, and hashing a shape is not cheap.
    _static: dict[tuple[int, int], Verdict | None] = field(default_factory=dict)
    _shapes: list[PodShape] = field(default_factory=list)  # keeps every keyed shape alive, so ids stay unique

    def __call__(self, shape: PodShape, node_class: NodeClass, usage: Usage, *, single: bool = False) -> Verdict | None:
        if single:  # per-node classes share their class's index: never cache them
            static = static_verdict(shape, node_class.node, self.version)
        else:
            key = (id(shape), node_class.index)
            if key not in self._static:
                self._shapes.append(shape)
                self._static[key] = static_verdict(shape, node_class.node, self.version)
            static = self._static[key]
        return static or resource_verdict(shape, node_class, usage, self.version)


@dataclass(frozen=True)
class VolcanoJudge:
    version: KubeVersion

    def __call__(self, shape: PodShape, node_class: NodeClass, usage: Usage, *, single: bool = False) -> Verdict | None:
        return volcano_verdict(shape, node_class, usage, self.version)


def place(cluster: Cluster, shape: PodShape, judge: Judge, most_allocated: bool) -> tuple[int | None, list[Rejection]]:
    """The node index the pod goes to, or None and every refusal (the scheduler's message counts them all).

    A pod that fits is placed from the classes its shape can ever use (cluster.index), so placing it
    costs its own pools, not the fleet; only a pod that fits nowhere has every class judged.
    """
    if not shape.mentions_hostname:
        candidates: list[_Candidate] = []
        for class_index in cluster.index.feasible(shape, statically_fits):
            node_class = cluster.classes[class_index]
            for usage, _, first in cluster.groups(class_index):
                if judge(shape, node_class, usage) is None:
                    candidates.append(_Candidate(node_class, usage, first))
        if candidates:
            return _best(shape, candidates, most_allocated), []
    rejections: list[Rejection] = []
    candidates: list[_Candidate] = []
    by_node = shape.mentions_hostname
    for node_class in cluster.classes:
        if by_node:
            _judge_nodes(cluster, shape, node_class, judge, rejections, candidates)
            continue
        for usage, count, first in cluster.groups(node_class.index):
            verdict = judge(shape, node_class, usage)
            if verdict is None:
                candidates.append(_Candidate(node_class, usage, first))
            else:
                rejections.append(Rejection(node_class.index, usage, verdict, count))
    if not candidates:
        return None, rejections
    return _best(shape, candidates, most_allocated), rejections


def _judge_nodes(
    cluster: Cluster,
    shape: PodShape,
    node_class: NodeClass,
    judge: Judge,
    rejections: list[Rejection],
    candidates: list[_Candidate],
) -> None:
    """The slow path, for pods that select nodes by name: each node is its own class."""
    for index in node_class.members:
        node = cluster.nodes[index]
        single = NodeClass(node_class.index, node, (index,), node_class.resources)
        usage = cluster.usage_of(index)
        verdict = judge(shape, single, usage, single=True)
        if verdict is None:
            candidates.append(_Candidate(single, usage, index))
        else:
            rejections.append(Rejection(node_class.index, usage, verdict, 1, index))


def _best(shape: PodShape, candidates: list[_Candidate], most_allocated: bool) -> int:
    taints = normalize([taint_penalty(shape, c.node_class.node) for c in candidates], reverse=True)
    affinity = normalize([affinity_weight(shape, c.node_class.node) for c in candidates], reverse=False)
    best_key: tuple[int, int] | None = None
    for candidate, taint, preferred in zip(candidates, taints, affinity, strict=True):
        fit = fit_score(shape, candidate.node_class, candidate.usage, most_allocated)
        total = TAINT_WEIGHT * taint + AFFINITY_WEIGHT * preferred + FIT_WEIGHT * fit
        key = (total, -candidate.first)
        if best_key is None or key > best_key:
            best_key = key
    assert best_key is not None
    return -best_key[1]

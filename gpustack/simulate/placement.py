"""Finding a pod's node: filter every node (group), score the feasible ones, keep the best.

Both schedulers share this; they differ in how a node is judged (`Judge`) and in the resource
score (least- or most-allocated). Ties go to the node listed first in the blueprint, where
kube-scheduler picks at random among equal scores, so the same blueprint always places the same way.
kube-scheduler on large clusters also stops filtering after enough feasible nodes
(percentageOfNodesToScore); that changes which node wins, never whether a pod fits, so all are scored.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Protocol

from gpustack.simulate.cluster import Cluster
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
from gpustack.simulate.messages import Histogram, KubeVersion
from gpustack.simulate.node_class import FitScores, NodeClass, Usage
from gpustack.simulate.pods import PodShape

_BARE = PodShape(requests=())  # tolerates nothing, selects nothing: refused only by cordons and hard taints
# kube-scheduler's default score weights: TaintToleration 3, NodeAffinity 2, NodeResourcesFit 1.
TAINT_WEIGHT, AFFINITY_WEIGHT, FIT_WEIGHT = 3, 2, 1


class Judge(Protocol):
    def __call__(self, shape: PodShape, node_class: NodeClass, usage: Usage, *, single: bool = False) -> Verdict | None:
        """Why the class's nodes with this usage refuse the pod, or None; `single`: a one-node class."""
        ...

    def settled(self, cluster: Cluster, shape: PodShape) -> Settled | None:
        """The refusals of the shape that no usage changes, or None when this judge's refusals all depend on usage."""
        ...


@dataclass(frozen=True)
class Rejection:
    """`count` nodes of one class (and usage) refused the pod with `verdict`."""

    node_class: int
    usage: Usage  # () for a refusal no usage changes (always unresolvable): it counts every node of the class
    verdict: Verdict
    count: int
    node: int | None = None  # set when judged node by node


_CLASS_OF = attrgetter("node_class")


def _reasons(rejections: Iterable[Rejection], sign: int = 1, counts: dict[str, int] | None = None) -> dict[str, int]:
    """Reason -> nodes, as kube-scheduler's filter histogram counts them (into `counts`; `sign` -1 takes away)."""
    counts = {} if counts is None else counts
    for rejection in rejections:
        for reason in rejection.verdict.reasons:
            counts[reason] = counts.get(reason, 0) + sign * rejection.count
    return counts


@dataclass(frozen=True)
class Settled:
    """One shape's refusals that no usage changes, and what kube-scheduler's message counts of them.

    All are static filters' (cordon, taint, node affinity), so all unresolvable: preemption counts their nodes as
    "not helpful" and tries none of them.
    """

    refusals: tuple[Rejection | None, ...]  # per class; None where usage decides
    listed: tuple[Rejection, ...]  # the refusals that are not None, in class order
    open: tuple[int, ...]  # the classes where usage decides, in order
    histogram: Histogram  # the refusals' reasons -> nodes
    nodes: int  # the nodes they refuse

    @staticmethod
    def of(refusals: tuple[Rejection | None, ...]) -> Settled:
        listed = tuple(filter(None, refusals))
        open_classes = tuple(i for i, r in enumerate(refusals) if r is None)
        return Settled(refusals, listed, open_classes, Histogram.of(_reasons(listed)), sum(r.count for r in listed))

    def replacing(self, changed: dict[int, Rejection | None]) -> Settled:
        """These refusals with a few classes' replaced: the cost of the few, not of every class."""
        refusals = list(self.refusals)
        changes: dict[str, int] = {}
        nodes = self.nodes
        opened: set[int] = set()
        closed: set[int] = set()
        for index, refusal in changed.items():
            for sign, rejection in ((-1, refusals[index]), (1, refusal)):
                if rejection is not None:
                    nodes += sign * rejection.count
                    _reasons((rejection,), sign, changes)
            (opened if refusal is None else closed).add(index)
            refusals[index] = refusal
        listed = tuple(filter(None, refusals))  # a Rejection is always true: C's filter, not a loop per class
        open_classes = tuple(sorted(set(self.open).difference(closed).union(opened)))
        return Settled(tuple(refusals), listed, open_classes, self.histogram.plus(changes), nodes)


@dataclass(frozen=True)
class Refused:
    """Every refusal of a pod that found no node, in class order, and how each was found.

    `settled`: the shape's refusals no usage changes, tallied once per shape (None: every refusal was judged);
    `judged`: the rest, judged on the classes' usage now. kube-scheduler's message adds the two, so a pod that
    fits nowhere is worded at the cost of the classes it may use.
    """

    rejections: tuple[Rejection, ...]
    judged: tuple[Rejection, ...]
    settled: Settled | None = None

    def reasons(self) -> Histogram:
        """Reason -> nodes over every refusal, as kube-scheduler's filter histogram counts them."""
        counts = _reasons(self.judged)
        return Histogram.of(counts) if self.settled is None else self.settled.histogram.plus(counts)


def by_classes(rejections: Sequence[Rejection], classes: Iterable[int]) -> list[Rejection]:
    """The refusals by these classes' nodes, in order. `place` gives refusals in class order, so each class's are
    found by bisection: a pending workload's refusals in its own pool cost that pool's classes, not the fleet's."""
    found: list[Rejection] = []
    for index in classes:
        start = bisect_left(rejections, index, key=_CLASS_OF)
        found += rejections[start : bisect_right(rejections, index, lo=start, key=_CLASS_OF)]
    return found


@dataclass(frozen=True)
class _Candidate:
    node_class: NodeClass
    usage: Usage
    first: int  # the lowest node index with this class and usage


@dataclass
class KubeJudge:
    """kube-scheduler's filters; the usage-independent part is cached per (pod shape, class).

    kube-scheduler stops at the first filter that refuses, and NodeUnschedulable and TaintToleration come
    first: a class whose cordon or first hard taint the shape does not tolerate refuses it for that reason
    alone. Those refusals are worded once per class (`_first_refusals`), so a pod that fits nowhere
    costs the classes it may tolerate, not the fleet, until its message is counted.
    A judge serves one cluster: its memory is keyed by class index.
    """

    version: KubeVersion
    # Keyed by the shape's identity: pods of one workload share one shape, and hashing a shape is not cheap.
    _static: dict[tuple[int, int], Verdict | None] = field(default_factory=dict)
    _shapes: list[PodShape] = field(default_factory=list)  # keeps every keyed shape alive, so ids stay unique
    _settled: dict[int, Settled] = field(default_factory=dict)  # id(shape) -> its settled refusals
    _first_refusals: Settled | None = None  # per class: its cordon's or first hard taint's
    # (id(shape), class index, usage) -> the verdict: a filter's answer is a function of those three, and the
    # replicas of a workload meet the same few groups' usages pod after pod (150,000 pods, 260,000 judgements).
    _verdicts: dict[tuple[int, int, Usage], Verdict | None] = field(default_factory=dict)

    def settled(self, cluster: Cluster, shape: PodShape) -> Settled:
        """The fleet's first refusals (tallied once per judge) with the classes the shape may tolerate judged."""
        known = self._settled.get(id(shape))
        if known is not None:
            return known
        if self._first_refusals is None:
            self._first_refusals = Settled.of(tuple(self._first_refusal(c) for c in cluster.classes))
        changed: dict[int, Rejection | None] = {}
        for index in cluster.index.tolerated(shape):
            node_class = cluster.classes[index]
            verdict = self._static_verdict(shape, node_class)
            changed[index] = None if verdict is None else Rejection(index, (), verdict, len(node_class.members))
        self._shapes.append(shape)
        self._settled[id(shape)] = settled = self._first_refusals.replacing(changed)
        return settled

    def _first_refusal(self, node_class: NodeClass) -> Rejection | None:
        """The refusal of a shape that tolerates none of the class's hard taints (nor its cordon); None: no such."""
        verdict = static_verdict(_BARE, node_class.node, self.version)
        return None if verdict is None else Rejection(node_class.index, (), verdict, len(node_class.members))

    def _static_verdict(self, shape: PodShape, node_class: NodeClass) -> Verdict | None:
        key = (id(shape), node_class.index)
        if key not in self._static:
            self._shapes.append(shape)
            self._static[key] = static_verdict(shape, node_class.node, self.version)
        return self._static[key]

    def __call__(self, shape: PodShape, node_class: NodeClass, usage: Usage, *, single: bool = False) -> Verdict | None:
        if single:  # per-node classes share their class's index: never cache them
            return static_verdict(shape, node_class.node, self.version) or resource_verdict(
                shape, node_class, usage, self.version
            )
        key = (id(shape), node_class.index, usage)
        if key in self._verdicts:
            return self._verdicts[key]
        static = self._static_verdict(shape, node_class)  # keeps the shape alive (_shapes), so its id stays its own
        verdict = self._verdicts[key] = static or resource_verdict(shape, node_class, usage, self.version)
        return verdict


@dataclass(frozen=True)
class VolcanoJudge:
    version: KubeVersion

    def __call__(self, shape: PodShape, node_class: NodeClass, usage: Usage, *, single: bool = False) -> Verdict | None:
        return volcano_verdict(shape, node_class, usage, self.version)

    def settled(self, cluster: Cluster, shape: PodShape) -> None:
        """None: Volcano checks resources first, so every refusal's wording depends on usage."""
        return None


def place(cluster: Cluster, shape: PodShape, judge: Judge, most_allocated: bool) -> tuple[int | None, Refused]:
    """The node index the pod goes to, or None and every refusal (the scheduler's message counts them all).

    A pod that fits is placed from the classes its shape can ever use (cluster.index), so placing it
    costs its own pools, not the fleet; a pod that fits nowhere has the classes its judge cannot settle
    without usage judged, and the settled refusals of the rest copied in, in class order.
    """
    if not shape.mentions_hostname:
        candidates: list[_Candidate] = []
        for class_index in cluster.index.feasible(shape, statically_fits):
            node_class = cluster.classes[class_index]
            for usage, _, first in cluster.groups(class_index):
                if judge(shape, node_class, usage) is None:
                    candidates.append(_Candidate(node_class, usage, first))
        if candidates:
            return _best(shape, candidates, most_allocated, cluster.fit_scores), _NONE
    rejections: list[Rejection] = []
    judged: list[Rejection] = []
    candidates = []
    settled = None if shape.mentions_hostname else judge.settled(cluster, shape)
    if settled is None:
        for node_class in cluster.classes:
            if shape.mentions_hostname:
                _judge_nodes(cluster, shape, node_class, judge, judged, candidates)
            else:
                _judge_groups(cluster, shape, node_class, judge, judged, candidates)
        rejections = judged
    else:
        listed, start = settled.listed, 0
        for index in settled.open:
            cut = bisect_left(listed, index, lo=start, key=_CLASS_OF)
            rejections += listed[start:cut]  # the settled refusals of the classes before this one
            start = cut
            mark = len(judged)
            _judge_groups(cluster, shape, cluster.classes[index], judge, judged, candidates)
            rejections += judged[mark:]
        rejections += listed[start:]
    refused = Refused(tuple(rejections), tuple(judged), settled)
    if not candidates:
        return None, refused
    return _best(shape, candidates, most_allocated, cluster.fit_scores), refused


_NONE = Refused((), ())


def _judge_groups(
    cluster: Cluster,
    shape: PodShape,
    node_class: NodeClass,
    judge: Judge,
    rejections: list[Rejection],
    candidates: list[_Candidate],
) -> None:
    """Each group of the class (its nodes with one usage) judged once."""
    for usage, count, first in cluster.groups(node_class.index):
        verdict = judge(shape, node_class, usage)
        if verdict is None:
            candidates.append(_Candidate(node_class, usage, first))
        else:
            rejections.append(Rejection(node_class.index, usage, verdict, count))


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


def _best(shape: PodShape, candidates: list[_Candidate], most_allocated: bool, scores: FitScores) -> int:
    if len(candidates) == 1:  # the only feasible group wins whatever it scores: scoring it changes nothing
        return candidates[0].first
    taints = normalize([taint_penalty(shape, c.node_class.node) for c in candidates], reverse=True)
    affinity = normalize([affinity_weight(shape, c.node_class.node) for c in candidates], reverse=False)
    best_key: tuple[int, int] | None = None
    for candidate, taint, preferred in zip(candidates, taints, affinity, strict=True):
        fit = _fit(shape, candidate, most_allocated, scores)
        total = TAINT_WEIGHT * taint + AFFINITY_WEIGHT * preferred + FIT_WEIGHT * fit
        key = (total, -candidate.first)
        if best_key is None or key > best_key:
            best_key = key
    assert best_key is not None
    return -best_key[1]


def _fit(shape: PodShape, candidate: _Candidate, most_allocated: bool, scores: FitScores) -> int:
    """fit_score, once per (shape, class, usage, strategy): it is a function of those, and consecutive replicas
    score the same groups. The entry holds the shape, so an id reused by another shape is never taken for it."""
    key = (id(shape), candidate.node_class.index, candidate.usage, most_allocated)
    known = scores.get(key)
    if known is None or known[0] is not shape:
        known = scores[key] = (shape, fit_score(shape, candidate.node_class, candidate.usage, most_allocated))
    return known[1]

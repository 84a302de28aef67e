"""kube-scheduler for one pod: place it, or word why not exactly as the cluster's version would.

The event reads `0/N nodes are available: <filter histogram>. <post-filter>`, where the post-filter
part is the DefaultPreemption dry run (and, from 1.34, DynamicResources' own line before it).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass

from gpustack.simulate.claims import holds_claims
from gpustack.simulate.cluster import Cluster
from gpustack.simulate.demand import Pod
from gpustack.simulate.filters import resource_verdict
from gpustack.simulate.messages import (
    NO_NODES,
    NO_VICTIMS,
    NOT_ELIGIBLE_NEVER,
    NOT_HELPFUL,
    KubeVersion,
    fit_error,
    post_filter,
    preemption_fit_error,
)
from gpustack.simulate.placement import Judge, Refused, Rejection, place
from gpustack.simulate.pods import PodShape, Requirement, Term


def pinned(cluster: Cluster, shape: PodShape) -> PodShape:
    """The shape restricted to the node its shared claim is allocated on (the DynamicResources plugin filters every
    other node: the claim's devices are there); the shape itself for a claim not allocated yet, or none."""
    if shape.shared_claim is None:
        return shape
    node = cluster.claim_nodes.get(shape.shared_claim)
    if node is None:
        return shape
    here = Term((Requirement("metadata.name", "In", (cluster.nodes[node].name,), field=True),))
    terms = (
        (here,)
        if shape.required is None
        else tuple(Term((*t.requirements, *here.requirements)) for t in shape.required)
    )
    return dataclasses.replace(shape, required=terms)


def allocate(cluster: Cluster, shape: PodShape, node: int) -> None:
    """Record where a pod's shared claim was allocated: its first holder's node."""
    if shape.shared_claim is not None:
        cluster.claim_nodes.setdefault(shape.shared_claim, node)


@dataclass(frozen=True)
class Unplaced:
    message: str
    rejections: tuple[Rejection, ...]
    resolvable: tuple[Rejection, ...] = ()  # the refusals eviction could cure: all that preemption looks at


# (id(shape), priority, preempt_never) -> (cluster generation, shape, why it stayed pending then)
Refusals = dict[tuple[int, int, bool], tuple[int, PodShape, Unplaced]]


def schedule_pod(
    cluster: Cluster,
    pod: Pod,
    judge: Judge,
    version: KubeVersion,
    most_allocated: bool,
    refusals: Refusals | None = None,
) -> int | Unplaced:
    """Bind the pod to its node and return the node's index, or say why no node takes it.

    `refusals` (one per run, with one judge) remembers why a shape stayed pending: the replicas
    of a workload that does not fit are refused alike until some pod is bound or unbound.
    """
    if not cluster.nodes:
        return Unplaced(NO_NODES, ())
    shape = pinned(cluster, pod.shape)  # a shared claim already allocated: only its node
    if shape is not pod.shape:
        refusals = None  # a pinned shape is judged on this cluster's state only
    key = (id(pod.shape), pod.priority, pod.preempt_never)
    known = refusals.get(key) if refusals is not None else None
    if known is not None and known[0] == cluster.generation and known[1] is pod.shape:
        return known[2]
    node, refused = place(cluster, shape, judge, most_allocated)
    if node is not None:
        cluster.bind(pod, node)
        allocate(cluster, pod.shape, node)
        return node
    resolvable = tuple(r for r in refused.judged if not r.verdict.unresolvable)  # settled ones never are
    unplaced = Unplaced(failed_scheduling(cluster, pod, refused, version), refused.rejections, resolvable)
    if refusals is not None:
        refusals[key] = (cluster.generation, pod.shape, unplaced)
    return unplaced


def failed_scheduling(cluster: Cluster, pod: Pod, refused: Refused, version: KubeVersion) -> str:
    preemption = _preemption(cluster, pod, refused, version)
    claims = holds_claims(pod.shape)
    post = post_filter(version, preemption, claims=claims) if preemption is not None else ""
    return fit_error(len(cluster.nodes), refused.reasons(), post)


def _preemption(cluster: Cluster, pod: Pod, refused: Refused, version: KubeVersion) -> str | None:
    """DefaultPreemption's message; None when some node would make room (the pod is then nominated)."""
    if pod.preempt_never:
        return NOT_ELIGIBLE_NEVER
    reasons: Counter[str] = Counter()
    if refused.settled is not None and refused.settled.nodes:
        reasons[NOT_HELPFUL] = refused.settled.nodes  # static filters' refusals: eviction changes none of them
    # Pods are scheduled highest priority first, so lower-priority victims exist only if some were bound before.
    any_victims = cluster.lowest_priority is not None and cluster.lowest_priority < pod.priority
    for rejection in refused.judged:
        if rejection.verdict.unresolvable:
            reasons[NOT_HELPFUL] += rejection.count
        elif not any_victims:
            reasons[NO_VICTIMS] += rejection.count
        else:
            for node in _nodes_of(cluster, rejection):
                verdict = _after_eviction(cluster, pod, node, version)
                if verdict is None:
                    return None
                reasons.update(verdict)
    return preemption_fit_error(version, len(cluster.nodes), reasons)


def _nodes_of(cluster: Cluster, rejection: Rejection) -> list[int]:
    if rejection.node is not None:
        return [rejection.node]
    return list(cluster.members(rejection.node_class, rejection.usage))


def _after_eviction(cluster: Cluster, pod: Pod, node: int, version: KubeVersion) -> tuple[str, ...] | None:
    """The node's reasons once every lower-priority pod is gone: none means preemption would succeed."""
    victims = [p for p in cluster.pods[node] if p.priority < pod.priority]
    if not victims:
        return (NO_VICTIMS,)
    node_class = cluster.classes[cluster.class_of[node]]
    freed = {r: 0 for r in node_class.resources}
    for victim in victims:
        for resource, value in (*victim.shape.requests, ("pods", 1)):
            if resource in freed:
                freed[resource] += value
    usage = tuple(u - freed[r] for u, r in zip(cluster.usage_of(node), node_class.resources, strict=True))
    verdict = resource_verdict(pod.shape, node_class, usage, version)
    return None if verdict is None else verdict.reasons

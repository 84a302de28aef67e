"""Filters and scores for one pod on one node (class), in the order each scheduler runs them.

kube-scheduler stops at the first plugin that rejects a node, and that plugin's reasons are the
node's: NodeUnschedulable, TaintToleration, NodeAffinity, then NodeResourcesFit (which lists every
short resource). Volcano checks resources first and reports only the first short one.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpustack.simulate.claims import is_claim
from gpustack.simulate.inventory import Node
from gpustack.simulate.messages import (
    AFFINITY_MISMATCH,
    CLAIMS_UNALLOCATABLE,
    TOO_MANY_PODS,
    UNSCHEDULABLE_NODE,
    KubeVersion,
    insufficient,
)
from gpustack.simulate.node_class import NodeClass, Usage
from gpustack.simulate.pods import CPU, MEMORY, NO_SCHEDULE_EFFECTS, PODS, UNSCHEDULABLE_TAINT, PodShape, Taint

VOLCANO_POD_NUMBER = "node(s) pod number exceeded"
# kube-scheduler scores pods without cpu/memory requests as if they asked for this much (NonZeroRequested).
DEFAULT_SCORE_REQUEST = {CPU: 100, MEMORY: 200 * 1024 * 1024}
MAX_SCORE = 100


@dataclass(frozen=True)
class Verdict:
    """Why a node refuses a pod: the plugin, its reasons, and whether preemption could ever help."""

    plugin: str
    reasons: tuple[str, ...]
    unresolvable: bool
    taint: Taint | None = None  # TaintToleration: the first untolerated taint
    short: tuple[str, ...] = ()  # NodeResourcesFit: the resources that do not fit


def untolerated_taint(shape: PodShape, node: Node) -> Taint | None:
    """The first NoSchedule/NoExecute taint, in the node's order, that the pod does not tolerate."""
    return next((t for t in node.taints if t.effect in NO_SCHEDULE_EFFECTS and not shape.tolerates(t)), None)


def static_verdict(shape: PodShape, node: Node, version: KubeVersion) -> Verdict | None:
    """NodeUnschedulable, TaintToleration and NodeAffinity: all that does not depend on what is running."""
    if node.unschedulable and not shape.tolerates(UNSCHEDULABLE_TAINT):
        return Verdict("NodeUnschedulable", (UNSCHEDULABLE_NODE,), True)
    taint = untolerated_taint(shape, node)
    if taint is not None:
        return Verdict("TaintToleration", (version.taint_reason(taint.key, taint.value),), True, taint)
    if not shape.matches_node(node.labels, node.name):
        return Verdict("NodeAffinity", (AFFINITY_MISMATCH,), True)
    return None


def statically_fits(shape: PodShape, node: Node) -> bool:
    """static_verdict(...) is None, without wording a reason: Volcano's predicates check the same three."""
    if node.unschedulable and not shape.tolerates(UNSCHEDULABLE_TAINT):
        return False
    return untolerated_taint(shape, node) is None and shape.matches_node(node.labels, node.name)


def _short(shape: PodShape, node_class: NodeClass, usage: Usage) -> tuple[list[str], bool]:
    """Resources the pod does not fit in, in request order, and whether one exceeds the node's allocatable."""
    node = node_class.node
    short, over = [], False
    for requested, quantity in shape.requests:
        resource = node.serving(requested) if node.served else requested  # the hot path: most nodes serve none
        capacity = node.capacity(resource)
        if capacity is None:
            continue
        position = node_class.position(resource)
        used = usage[position] if position is not None else 0
        if used + quantity > capacity:
            short.append(resource)
            over = over or quantity > capacity
    return short, over


def _pods_full(node_class: NodeClass, usage: Usage) -> bool:
    position = node_class.position(PODS)
    return position is not None and usage[position] + 1 > node_class.node.allocatable[PODS]


def resource_verdict(shape: PodShape, node_class: NodeClass, usage: Usage, version: KubeVersion) -> Verdict | None:
    """NodeResourcesFit: `Too many pods` and one `Insufficient <resource>` per short resource; then, where that
    passes, DynamicResources (the last filter) when the node's devices cannot satisfy the pod's claims."""
    everything, over = _short(shape, node_class, usage)
    short = [r for r in everything if not is_claim(r)]
    reasons = [TOO_MANY_PODS] if _pods_full(node_class, usage) else []
    reasons += [insufficient(r) for r in short]
    if not reasons:
        devices = tuple(r for r in everything if is_claim(r))
        # The plugin's statusUnschedulable is UnschedulableAndUnresolvable: preemption is not tried for devices.
        return Verdict("DynamicResources", (CLAIMS_UNALLOCATABLE,), True, short=devices) if devices else None
    return Verdict(
        "NodeResourcesFit", tuple(reasons), over and version.unresolvable_when_over_allocatable, short=tuple(short)
    )


def volcano_verdict(shape: PodShape, node_class: NodeClass, usage: Usage, version: KubeVersion) -> Verdict | None:
    """Volcano's allocate predicate: the first short resource (cpu, memory, then the rest), then its predicates."""
    short, _ = _short(shape, node_class, usage)
    if short:
        first = sorted(short, key=lambda r: (r != CPU, r != MEMORY, r))[0]
        return Verdict("ResourceFit", (insufficient(first),), False, short=tuple(short))
    reasons = [VOLCANO_POD_NUMBER] if _pods_full(node_class, usage) else []
    node = node_class.node
    # Volcano's predicates plugin runs NodeUnschedulable, NodeAffinity, TaintToleration, in that order.
    static = None
    if node.unschedulable and not shape.tolerates(UNSCHEDULABLE_TAINT):
        static = Verdict("NodeUnschedulable", (UNSCHEDULABLE_NODE,), True)
    elif not shape.matches_node(node.labels, node.name):
        static = Verdict("NodeAffinity", (AFFINITY_MISMATCH,), True)
    elif (taint := untolerated_taint(shape, node)) is not None:
        static = Verdict("TaintToleration", (version.taint_reason(taint.key, taint.value),), True, taint)
    if static is not None:
        return Verdict(static.plugin, (*reasons, *static.reasons), True, static.taint)
    return Verdict("predicates", tuple(reasons), False) if reasons else None


# --- scores --------------------------------------------------------------------------------------


def taint_penalty(shape: PodShape, node: Node) -> int:
    """TaintToleration score input: PreferNoSchedule taints the pod does not tolerate (fewer is better)."""
    return sum(1 for t in node.taints if t.effect == "PreferNoSchedule" and not shape.tolerates(t))


def affinity_weight(shape: PodShape, node: Node) -> int:
    """NodeAffinity score input: the weights of the preferred terms the node matches."""
    return sum(weight for weight, term in shape.preferred if term.matches(node.labels, node.name))


def fit_score(shape: PodShape, node_class: NodeClass, usage: Usage, most_allocated: bool) -> int:
    """NodeResourcesFit: LeastAllocated (spread) or MostAllocated (binpack), 0-100, equal weights.

    Scored resources: cpu and memory where the pool states them, as kube-scheduler's default does,
    plus the extended resources the pod asks for. The default profile scores cpu and memory only;
    pools rarely state those, and GPU pods would then all tie and land by chance, so gpustack scores
    GPUs too, as a NodeResourcesFit scoringStrategy listing nvidia.com/gpu would.
    """
    node = node_class.node
    requested = dict(shape.requests)
    resources = [r for r in (CPU, MEMORY) if r in node.allocatable]
    resources += [r for r in requested if r not in (CPU, MEMORY, PODS)]
    total = count = 0
    for resource in resources:
        capacity = node.capacity(resource)
        if not capacity:
            continue
        position = node_class.position(resource)
        used = usage[position] if position is not None else 0
        wanted = used + (requested.get(resource) or DEFAULT_SCORE_REQUEST.get(resource, 0))
        if most_allocated:
            total += min(wanted, capacity) * MAX_SCORE // capacity
        else:
            total += (capacity - wanted) * MAX_SCORE // capacity if wanted <= capacity else 0
        count += 1
    return total // count if count else 0


def normalize(scores: list[int], reverse: bool) -> list[int]:
    """framework.DefaultNormalizeScore: scale to 0-100 by the largest; reversed, fewer is better."""
    highest = max(scores, default=0)
    if highest == 0:
        return [MAX_SCORE if reverse else 0 for _ in scores]
    scaled = [MAX_SCORE * s // highest for s in scores]
    return [MAX_SCORE - s for s in scaled] if reverse else scaled

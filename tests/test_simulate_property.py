"""Properties of any simulation: no node over-allocated; every placed pod tolerates and matches its node.

Also: the grouped engine (nodes judged per class and usage) places exactly as a plain node-by-node
reference scheduler with the same filters, scores and tie-break would.
"""

from __future__ import annotations

from unittest.mock import patch

from hypothesis import given, settings
from hypothesis import strategies as st

from gpustack.simulate import simulation
from gpustack.simulate.cluster import Cluster
from gpustack.simulate.demand import Demand, GangSpec, Pod, Source
from gpustack.simulate.filters import (
    affinity_weight,
    fit_score,
    normalize,
    resource_verdict,
    static_verdict,
    statically_fits,
    taint_penalty,
)
from gpustack.simulate.inventory import Node
from gpustack.simulate.messages import KubeVersion
from gpustack.simulate.placement import KubeJudge, Settled
from gpustack.simulate.pods import NO_SCHEDULE_EFFECTS, PodShape, Requirement, Taint, Term, Toleration
from gpustack.simulate.preemption import Preemption, find_preemption
from gpustack.simulate.scheduler import Refusals, Unplaced, schedule_pod
from gpustack.simulate.simulation import simulate

GPU = "nvidia.com/gpu"
MIG = "nvidia.com/mig-1g.10gb"
VERSION = KubeVersion.parse("1.33")
TAINTS = [Taint("pool", "a", "NoSchedule"), Taint("pool", "b", "NoExecute"), Taint("spot", "1", "PreferNoSchedule")]
ZONES = ["z1", "z2"]


@st.composite
def nodes(draw: st.DrawFn) -> list[Node]:
    count = draw(st.integers(1, 7))
    out = []
    for index in range(count):
        resources = {GPU: draw(st.integers(0, 4)), MIG: draw(st.integers(0, 3)), "pods": draw(st.integers(1, 6))}
        if draw(st.booleans()):
            resources["cpu"] = draw(st.sampled_from([2000, 4000]))
        taints = tuple(draw(st.lists(st.sampled_from(TAINTS), max_size=2, unique=True)))
        labels = {"kubernetes.io/hostname": f"n{index}", "zone": draw(st.sampled_from(ZONES))}
        cordoned = draw(st.integers(0, 5)) == 0
        out.append(Node(f"n{index}", draw(st.sampled_from(["p", "q"])), labels, taints, resources, cordoned))
    return out


@st.composite
def shapes(draw: st.DrawFn) -> PodShape:
    requests = {GPU: draw(st.integers(0, 3)), MIG: draw(st.integers(0, 2))}
    if draw(st.booleans()):
        requests["cpu"] = draw(st.sampled_from([500, 1500]))
    tolerations = tuple(
        draw(
            st.lists(
                st.sampled_from(
                    [
                        Toleration("pool", "Equal", "a", "NoSchedule"),
                        Toleration("pool", "Exists", None, None),
                        Toleration("gpu", "Equal", "true", "NoSchedule"),
                        Toleration("pool", "Equal", "b", "NoSchedule"),  # the right value, the wrong effect
                        Toleration("node.kubernetes.io/unschedulable", "Exists", None, "NoSchedule"),
                        Toleration(None, "Exists", None, None),
                    ]
                ),
                max_size=2,
            )
        )
    )
    required = None
    if draw(st.booleans()):
        required = (Term((Requirement("zone", "In", (draw(st.sampled_from(ZONES)),)),)),)
    preferred = ()
    if draw(st.booleans()):
        preferred = ((draw(st.integers(1, 100)), Term((Requirement("zone", "In", ("z2",)),))),)
    selector = (("kubernetes.io/hostname", "n0"),) if draw(st.integers(0, 9)) == 0 else ()
    return PodShape(
        requests=tuple(sorted((r, v) for r, v in requests.items() if v)),
        tolerations=tolerations,
        node_selector=selector,
        required=required,
        preferred=preferred,
        scheduler_name=draw(st.sampled_from(["default-scheduler", "default-scheduler", "volcano"])),
    )


@st.composite
def demands(draw: st.DrawFn) -> Demand:
    templates = draw(st.lists(shapes(), min_size=1, max_size=3))
    pods = []
    gangs = {}
    for index in range(draw(st.integers(1, 14))):
        shape = draw(st.sampled_from(templates))
        gang = None
        if shape.scheduler_name == "volcano" and draw(st.booleans()):
            gang = f"ns/job{templates.index(shape)}"
        pods.append(Pod(f"p{index}", "ns", shape, draw(st.sampled_from([0, 10])), False, Source(None), gang, index))
    for pod in pods:
        if pod.gang is not None and pod.gang not in gangs:
            size = sum(p.gang == pod.gang for p in pods)
            gangs[pod.gang] = GangSpec(pod.gang, pod.gang, "ns", draw(st.integers(1, size)), size)
    return Demand(tuple(pods), gangs, ())


@settings(max_examples=300, deadline=None)
@given(nodes(), demands())
def test_no_node_is_over_allocated_and_placements_respect_taints_and_affinity(
    inventory: list[Node], demand: Demand
) -> None:
    outcome = simulate(inventory, demand, (), VERSION)
    used: dict[int, dict[str, int]] = {}
    for pod, index in outcome.placed:
        node = inventory[index]
        for resource, amount in (*pod.shape.requests, ("pods", 1)):
            used.setdefault(index, {}).setdefault(resource, 0)
            used[index][resource] += amount
        for taint in node.taints:
            if taint.effect in NO_SCHEDULE_EFFECTS:
                assert pod.shape.tolerates(taint), (pod.name, node.name, taint)
        assert pod.shape.matches_node(node.labels, node.name)
    for index, amounts in used.items():
        for resource, amount in amounts.items():
            capacity = inventory[index].capacity(resource)
            assert capacity is None or amount <= capacity, (inventory[index].name, resource, amount)
    assert len(outcome.placed) + len(outcome.pending) == len(demand.pods)
    gang_sizes: dict[str, int] = {}
    for pod, _ in outcome.placed:
        if pod.gang is not None and pod.shape.scheduler_name == "volcano":
            gang_sizes[pod.gang] = gang_sizes.get(pod.gang, 0) + 1
    for gang, placed in gang_sizes.items():
        assert placed >= demand.gangs[gang].min_available  # all of the gang's minimum, or none


def _reference_place(cluster: Cluster, shape: PodShape) -> int | None:
    """Node by node, no grouping: the filters and scores of the engine, applied naively."""
    feasible = []
    for index, node in enumerate(cluster.nodes):
        node_class = cluster.classes[cluster.class_of[index]]
        single = type(node_class)(node_class.index, node, (index,), node_class.resources)
        usage = cluster.usage_of(index)
        if static_verdict(shape, node, VERSION) or resource_verdict(shape, single, usage, VERSION):
            continue
        feasible.append((index, single, usage))
    if not feasible:
        return None
    taints = normalize([taint_penalty(shape, f[1].node) for f in feasible], reverse=True)
    affinity = normalize([affinity_weight(shape, f[1].node) for f in feasible], reverse=False)
    scored = [
        (3 * t + 2 * a + fit_score(shape, single, usage, False), -index)
        for (index, single, usage), t, a in zip(feasible, taints, affinity, strict=True)
    ]
    return -max(scored)[1]


@settings(max_examples=200, deadline=None)
@given(nodes(), demands())
def test_grouped_engine_places_like_a_node_by_node_scheduler(inventory: list[Node], demand: Demand) -> None:
    kube_pods = [
        Pod(
            p.name,
            p.namespace,
            PodShape(**{**p.shape.__dict__, "scheduler_name": "default-scheduler"}),
            0,
            False,
            p.source,
        )
        for p in demand.pods
    ]
    reference = Cluster(inventory)
    expected = {}
    for pod in kube_pods:
        index = _reference_place(reference, pod.shape)
        if index is not None:
            reference.bind(pod, index)
            expected[pod.name] = index
    outcome = simulate(inventory, Demand(tuple(kube_pods), {}, ()), (), VERSION)
    assert {pod.name: index for pod, index in outcome.placed} == expected


@settings(max_examples=300, deadline=None)
@given(nodes(), st.lists(shapes(), min_size=1, max_size=4))
def test_each_shapes_feasible_classes_are_exactly_those_a_full_scan_finds(
    inventory: list[Node], pod_shapes: list[PodShape]
) -> None:
    cluster = Cluster(inventory)
    for shape in pod_shapes * 2:  # the second time from the index's memory
        full = tuple(c.index for c in cluster.classes if static_verdict(shape, c.node, VERSION) is None)
        assert cluster.index.feasible(shape, statically_fits) == full


@settings(max_examples=200, deadline=None)
@given(nodes(), demands())
def test_remembered_refusals_word_every_pending_pod_as_a_fresh_scan_would(
    inventory: list[Node], demand: Demand
) -> None:
    remembered, fresh = Cluster(inventory), Cluster(inventory)
    refusals: Refusals = {}
    for pod in sorted(demand.pods, key=lambda p: (-p.priority, p.order)):
        assert schedule_pod(remembered, pod, KubeJudge(VERSION), VERSION, False, refusals) == schedule_pod(
            fresh, pod, KubeJudge(VERSION), VERSION, False
        )


@settings(max_examples=300, deadline=None)
@given(nodes(), st.lists(shapes(), min_size=1, max_size=4))
def test_settled_refusals_are_what_the_static_filters_say_of_each_class(
    inventory: list[Node], pod_shapes: list[PodShape]
) -> None:
    """A class's cordon or first hard taint is worded once for every shape that tolerates neither: the wording
    must be the one static_verdict gives that shape on that class's nodes."""
    cluster = Cluster(inventory)
    judge = KubeJudge(VERSION)
    for shape in pod_shapes * 2:  # the second time from the judge's memory
        settled = judge.settled(cluster, shape)
        for node_class, refusal in zip(cluster.classes, settled.refusals, strict=True):
            verdict = static_verdict(shape, node_class.node, VERSION)
            if verdict is None:
                assert refusal is None
            else:
                assert refusal is not None
                assert (refusal.verdict, refusal.count) == (verdict, len(node_class.members))
        # The tally, adjusted from the fleet's first refusals by the classes the shape may tolerate, is a recount.
        assert settled == Settled.of(settled.refusals)


@st.composite
def running_pods(draw: st.DrawFn, count: int) -> list[tuple[Pod, int]]:
    """Low-priority pods a snapshot shows bound: the only victims, since the plan's own pods go highest first."""
    shape = PodShape(requests=((GPU, draw(st.integers(1, 2))),))
    nodes_used = draw(st.lists(st.integers(0, count - 1), max_size=6))
    return [(Pod(f"r{i}", "ns", shape, -5, False, Source(None), None, 100 + i), n) for i, n in enumerate(nodes_used)]


@settings(max_examples=300, deadline=None)
@given(nodes(), demands(), st.data())
def test_one_preemption_dry_run_per_refusal_finds_what_one_per_pod_would(
    inventory: list[Node], demand: Demand, data: st.DataObject
) -> None:
    def every_pod(cluster: Cluster, pod: Pod, refused: Unplaced, version: KubeVersion, _: object) -> Preemption | None:
        return find_preemption(cluster, pod, refused.rejections, version)

    running = data.draw(running_pods(len(inventory)))
    remembered = simulate(inventory, demand, (), VERSION, running=running)
    with patch.object(simulation, "preempt", every_pod):
        fresh = simulate(inventory, demand, (), VERSION, running=running)
    for field in ("placed", "pending", "preempted", "nominated"):
        assert getattr(remembered, field) == getattr(fresh, field), field

"""The scheduling engine on hand-made nodes and pods: filter order, scores, preemption wording."""

from __future__ import annotations

import itertools
from collections.abc import Mapping

from gpustack.simulate.cluster import Cluster
from gpustack.simulate.demand import Demand, Pod, Source
from gpustack.simulate.inventory import Node
from gpustack.simulate.messages import KubeVersion
from gpustack.simulate.placement import KubeJudge
from gpustack.simulate.pods import PodShape, Requirement, Taint, Term, Toleration
from gpustack.simulate.scheduler import Unplaced, schedule_pod
from gpustack.simulate.simulation import simulate

GPU = "nvidia.com/gpu"
V133 = KubeVersion.parse("1.33")
V135 = KubeVersion.parse("1.35")
_order = itertools.count()


def make_node(
    name: str,
    gpus: int = 8,
    labels: Mapping[str, str] | None = None,
    taints: tuple[Taint, ...] = (),
    extra: Mapping[str, int] | None = None,
    unschedulable: bool = False,
    pool: str = "p",
) -> Node:
    allocatable = {GPU: gpus, "pods": 110, **(extra or {})}
    return Node(name, pool, {"kubernetes.io/hostname": name, **(labels or {})}, taints, allocatable, unschedulable)


def make_pod(name: str, gpus: int = 1, priority: int = 0, never: bool = False, **shape: object) -> Pod:
    requests = shape.pop("requests", ((GPU, gpus),))
    return Pod(name, "ns", PodShape(requests=requests, **shape), priority, never, Source(None), order=next(_order))  # type: ignore[arg-type]


def run(cluster: Cluster, pod: Pod, version: KubeVersion = V133, most: bool = False) -> int | Unplaced:
    return schedule_pod(cluster, pod, KubeJudge(version), version, most)


def test_no_nodes() -> None:
    result = run(Cluster([]), make_pod("a"))
    assert isinstance(result, Unplaced)
    assert result.message == "no nodes available to schedule pods"


def test_a_tainted_full_node_reports_only_the_taint() -> None:
    taint = Taint("dedicated", "x", "NoSchedule")
    cluster = Cluster([make_node("n1", gpus=0, taints=(taint,))])
    result = run(cluster, make_pod("a"))
    assert isinstance(result, Unplaced)
    assert result.message.startswith("0/1 nodes are available: 1 node(s) had untolerated taint {dedicated: x}.")


def test_a_cordoned_node_reports_only_that() -> None:
    cluster = Cluster([make_node("n1", taints=(Taint("a", "b", "NoSchedule"),), unschedulable=True)])
    result = run(cluster, make_pod("a"))
    assert isinstance(result, Unplaced)
    assert result.message.startswith("0/1 nodes are available: 1 node(s) were unschedulable.")


def test_taint_filter_runs_before_affinity() -> None:
    required = (Term((Requirement("zone", "In", ("a",)),)),)
    cluster = Cluster([make_node("n1", taints=(Taint("t", "1", "NoExecute"),)), make_node("n2")])
    result = run(cluster, make_pod("a", required=required), V135)
    assert isinstance(result, Unplaced)
    assert result.message.startswith(
        "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
        "1 node(s) had untolerated taint(s). no new claims to deallocate, preemption: "
        "0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )


def test_every_short_resource_is_listed_and_counts_can_exceed_nodes() -> None:
    cluster = Cluster([make_node("n1", gpus=0, extra={"cpu": 1000}), make_node("n2", gpus=0, extra={"cpu": 1000})])
    pod = make_pod("a", requests=(("cpu", 2000), (GPU, 1)))
    result = run(cluster, pod)
    assert isinstance(result, Unplaced)
    assert result.message.startswith("0/2 nodes are available: 2 Insufficient cpu, 2 Insufficient nvidia.com/gpu.")


def test_too_many_pods() -> None:
    cluster = Cluster([make_node("n1", extra={"pods": 1})])
    assert run(cluster, make_pod("a")) == 0
    result = run(cluster, make_pod("b"))
    assert isinstance(result, Unplaced)
    assert result.message.startswith("0/1 nodes are available: 1 Too many pods.")


def test_unstated_cpu_and_memory_refuse_nobody() -> None:
    cluster = Cluster([make_node("n1")])
    assert run(cluster, make_pod("a", requests=(("cpu", 10**6), ("memory", 10**15), (GPU, 1)))) == 0


def test_request_over_allocatable_stops_preemption_from_1_34() -> None:
    cluster = Cluster([make_node("n1", gpus=0)])
    old, new = run(cluster, make_pod("a"), V133), run(cluster, make_pod("b"), V135)
    assert isinstance(old, Unplaced) and isinstance(new, Unplaced)
    assert old.message.endswith("preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.")
    assert new.message.endswith("preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.")


def test_preemption_policy_never() -> None:
    cluster = Cluster([make_node("n1", gpus=0)])
    result = run(cluster, make_pod("a", never=True))
    assert isinstance(result, Unplaced)
    assert result.message.endswith(" preemption: not eligible due to preemptionPolicy=Never.")


def test_victims_that_free_enough_mean_no_post_filter_text() -> None:
    cluster = Cluster([make_node("n1", gpus=1)])
    cluster.bind(make_pod("low", priority=1), 0)
    result = run(cluster, make_pod("high", priority=100))
    assert isinstance(result, Unplaced)
    assert result.message == "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."


def test_victims_that_do_not_free_enough_repeat_the_filter_reason() -> None:
    cluster = Cluster([make_node("n1", gpus=2)])
    cluster.bind(make_pod("low", priority=1), 0)
    cluster.bind(make_pod("peer", priority=100), 0)
    result = run(cluster, make_pod("big", gpus=2, priority=100))
    assert isinstance(result, Unplaced)
    assert result.message.endswith("preemption: 0/1 nodes are available: 1 Insufficient nvidia.com/gpu.")


def test_prefer_no_schedule_is_only_a_score() -> None:
    soft = Taint("spot", "true", "PreferNoSchedule")
    cluster = Cluster([make_node("soft", taints=(soft,)), make_node("plain")])
    assert run(cluster, make_pod("a")) == 1
    only_soft = Cluster([make_node("soft", taints=(soft,))])
    assert run(only_soft, make_pod("b")) == 0


def test_preferred_affinity_is_a_score() -> None:
    preferred = ((50, Term((Requirement("zone", "In", ("b",)),))),)
    cluster = Cluster([make_node("a1", labels={"zone": "a"}), make_node("b1", labels={"zone": "b"})])
    assert run(cluster, make_pod("a", preferred=preferred)) == 1


def test_least_allocated_spreads_and_most_allocated_packs() -> None:
    spread = Cluster([make_node(f"n{i}", gpus=4) for i in range(3)])
    assert [run(spread, make_pod(f"s{i}")) for i in range(3)] == [0, 1, 2]
    packed = Cluster([make_node(f"n{i}", gpus=4) for i in range(3)])
    assert [run(packed, make_pod(f"p{i}"), most=True) for i in range(5)] == [0, 0, 0, 0, 1]


def test_selecting_a_node_by_hostname() -> None:
    selector = (("kubernetes.io/hostname", "n2"),)
    cluster = Cluster([make_node(f"n{i}") for i in range(3)])
    assert run(cluster, make_pod("a", node_selector=selector)) == 2
    result = run(cluster, make_pod("b", gpus=9, node_selector=selector))
    assert isinstance(result, Unplaced)
    assert result.message.startswith(
        "0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 node(s) didn't match Pod's node affinity/selector."
    )


def test_toleration_semantics() -> None:
    taint = Taint("nvidia.com/gpu", "true", "NoSchedule")
    assert Toleration("nvidia.com/gpu", "Equal", "true", "NoSchedule").tolerates(taint)
    assert Toleration("nvidia.com/gpu", "Exists", None, None).tolerates(taint)
    assert Toleration(None, "Exists", None, None).tolerates(taint)  # tolerates everything
    assert not Toleration("gpu", "Equal", "true", "NoSchedule").tolerates(taint)  # the seed's mistake
    assert not Toleration("nvidia.com/gpu", "Equal", "false", "NoSchedule").tolerates(taint)
    assert not Toleration("nvidia.com/gpu", "Exists", None, "NoExecute").tolerates(taint)


def test_higher_priority_is_scheduled_first() -> None:
    nodes = [make_node("n1", gpus=1)]
    low, high = make_pod("low", priority=1), make_pod("high", priority=1000)
    outcome = simulate(nodes, Demand((low, high), {}, ()), (), V133)
    assert [(p.name, i) for p, i in outcome.placed] == [("high", 0)]
    assert [p.pod.name for p in outcome.pending] == ["low"]

"""kube-scheduler's message for a pod that fits nowhere, counted from the settled refusals' tally (placement.Settled,
messages.Histogram), is word for word the message counted refusal by refusal over every class.

The tally exists for speed (issue 28: 1,000 tainted pools, a clause per pool in every pending workload's message);
this is its reference: a full scan of every class in order, each class's static verdict or each of its usage groups'
resource verdict, summed with a Counter and sorted as Go sorts, and DefaultPreemption's dry run over all of them.
"""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_simulate_property import VERSION, demands, nodes, running_pods

from gpustack.simulate.cluster import Cluster
from gpustack.simulate.demand import Demand, Pod, Source
from gpustack.simulate.filters import resource_verdict, static_verdict
from gpustack.simulate.inventory import Node
from gpustack.simulate.messages import (
    NO_VICTIMS,
    NOT_ELIGIBLE_NEVER,
    NOT_HELPFUL,
    Histogram,
    fit_error,
    histogram,
    post_filter,
    preemption_fit_error,
)
from gpustack.simulate.placement import KubeJudge, Rejection, by_classes
from gpustack.simulate.pods import PodShape, Taint, Toleration
from gpustack.simulate.scheduler import Unplaced, _after_eviction, schedule_pod

GPU = "nvidia.com/gpu"
REASONS = ["Insufficient cpu", "Insufficient nvidia.com/gpu", "node(s) were unschedulable", "Too many pods"]


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(st.sampled_from(REASONS), st.integers(1, 12)),
    st.dictionaries(st.sampled_from(REASONS), st.integers(-12, 12)),
)
def test_a_histogram_plus_changes_is_the_histogram_of_the_changed_counts(
    counts: dict[str, int], changes: dict[str, int]
) -> None:
    after = {r: counts.get(r, 0) + changes.get(r, 0) for r in {*counts, *changes}}
    if any(n < 0 for n in after.values()):
        with pytest.raises(ValueError, match="nodes less"):
            Histogram.of(counts).plus(changes)
        return
    changed = Histogram.of(counts).plus(changes)
    expected = {r: n for r, n in after.items() if n}
    assert dict(changed.counts) == expected
    assert list(changed.entries) == histogram(expected)


def test_ten_sorts_before_nine_in_a_changed_histogram_as_in_go() -> None:
    changed = Histogram.of({"x": 9, "y": 9}).plus({"x": 1})
    assert list(changed.entries) == ["10 x", "9 y"] == histogram({"x": 10, "y": 9})


def _every_refusal(cluster: Cluster, pod: Pod) -> list[Rejection]:
    """Every class in order: its static verdict for all its nodes, else each usage group's resource verdict."""
    shape = pod.shape
    found = []
    for node_class in cluster.classes:
        static = static_verdict(shape, node_class.node, VERSION)
        if static is not None:
            found.append(Rejection(node_class.index, (), static, len(node_class.members)))
            continue
        for usage, count, _ in cluster.groups(node_class.index):
            verdict = resource_verdict(shape, node_class, usage, VERSION)
            if verdict is not None:
                found.append(Rejection(node_class.index, usage, verdict, count))
    return found


def _preemption(cluster: Cluster, pod: Pod, rejections: list[Rejection]) -> str | None:
    if pod.preempt_never:
        return NOT_ELIGIBLE_NEVER
    reasons: Counter[str] = Counter()
    any_victims = cluster.lowest_priority is not None and cluster.lowest_priority < pod.priority
    for rejection in rejections:
        if rejection.verdict.unresolvable:
            reasons[NOT_HELPFUL] += rejection.count
        elif not any_victims:
            reasons[NO_VICTIMS] += rejection.count
        else:
            for node in cluster.members(rejection.node_class, rejection.usage):
                verdict = _after_eviction(cluster, pod, node, VERSION)
                if verdict is None:
                    return None
                reasons.update(verdict)
    return preemption_fit_error(VERSION, len(cluster.nodes), reasons)


def _message(cluster: Cluster, pod: Pod, rejections: list[Rejection]) -> str:
    reasons: Counter[str] = Counter()
    for rejection in rejections:
        for reason in rejection.verdict.reasons:
            reasons[reason] += rejection.count
    preemption = _preemption(cluster, pod, rejections)
    return fit_error(len(cluster.nodes), reasons, post_filter(VERSION, preemption) if preemption is not None else "")


@settings(max_examples=300, deadline=None)
@given(nodes(), demands(), st.data())
def test_a_pending_pods_message_from_the_tally_is_the_one_counted_over_every_class_and_its_pools_refusals_found(
    inventory: list[Node], demand: Demand, data: st.DataObject
) -> None:
    cluster = Cluster(inventory)
    for pod, node in data.draw(running_pods(len(inventory))):  # victims, so the dry run has nodes to try
        cluster.bind(pod, node)
    judge = KubeJudge(VERSION)  # one judge for the run: its tallies are reused from pod to pod
    for pod in demand.pods:
        result = schedule_pod(cluster, pod, judge, VERSION, False)
        if not isinstance(result, Unplaced):
            continue
        for pool in ("p", "q", "absent"):  # hints read a pod's refusals in its own pool
            in_pool = [r for r in result.rejections if cluster.classes[r.node_class].node.pool == pool]
            assert by_classes(result.rejections, cluster.pool_classes.get(pool, ())) == in_pool
        if pod.shape.mentions_hostname:
            continue  # judged node by node, without a tally
        every = _every_refusal(cluster, pod)
        assert list(result.rejections) == every
        assert result.message == _message(cluster, pod, every)
        assert result.resolvable == tuple(r for r in every if not r.verdict.unresolvable)


def test_a_thousand_tainted_pools_are_counted_in_one_message_each() -> None:
    """The case the tally is for: a clause per pool's taint but the pod's own, whose nodes are too small."""
    pools = [f"pool-{i:04d}" for i in range(1000)]
    inventory = [
        Node(f"{pool}-{j}", pool, {"pool": pool}, (Taint("pool", pool, "NoSchedule"),), {GPU: 1, "pods": 9})
        for pool in pools
        for j in range(2)
    ]
    cluster = Cluster(inventory)
    judge = KubeJudge(VERSION)
    for pool in ("pool-0000", "pool-0001", "pool-0999"):
        shape = PodShape(requests=((GPU, 2),), tolerations=(Toleration("pool", "Equal", pool, None),))
        pod = Pod(f"{pool}-0", "ns", shape, 0, False, Source(None))
        result = schedule_pod(cluster, pod, judge, VERSION, False)
        assert isinstance(result, Unplaced)
        assert result.message == _message(cluster, pod, _every_refusal(cluster, pod))
        assert result.message.startswith(f"0/2000 nodes are available: 2 Insufficient {GPU}, 2 node(s) had untolerated")
        assert result.message.count("untolerated taint") == 999
        assert f"{{pool: {pool}}}" not in result.message

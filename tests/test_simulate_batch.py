"""Runs of identical replicas (simulate/replicas.py) place exactly as one-by-one placement does.

`simulate(..., runs=False)` places every pod on its own, through `placement.place`; the default places each run of a
workload's replicas in stretches (`Cluster.bind_run`). On generated clusters (whole-GPU, MIG and time-sliced pools,
taints hard and soft, zones, cordons, nodes partly full of running pods that preemption may evict, quotas, a
LimitRange, Volcano gangs and JobSet-style groups, priorities) both must leave the same outcome: every placement, every
pending pod's event, message and refusals, the victims, quota use, and the cluster's state, down to the order of its
node groups (a later refusal lists them in that order). The blueprints and cases under version control must give the
same report, byte for byte.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gpustack.simulate as simulate_package
from gpustack.cluster.snapshot import read_snapshot
from gpustack.load import parse_document, read_document
from gpustack.simulate import run_simulation
from gpustack.simulate.cluster import Cluster
from gpustack.simulate.demand import Demand, GangSpec, Pod, Source
from gpustack.simulate.gates import Gates, LimitItem
from gpustack.simulate.inventory import Node
from gpustack.simulate.messages import KubeVersion
from gpustack.simulate.pods import Container, PodShape, Requirement, Taint, Term, Toleration
from gpustack.simulate.quota import Quota
from gpustack.simulate.report import format_json, report_data
from gpustack.simulate.scenario import scenario_from
from gpustack.simulate.simulation import Outcome, simulate
from gpustack.validation import validate_path

GPU = "nvidia.com/gpu"
MIG = "nvidia.com/mig-1g.10gb"
VERSION = KubeVersion.parse("1.33")
HARD = Taint("pool", "gpu", "NoSchedule")
SOFT = Taint("spot", "1", "PreferNoSchedule")
ZONES = ("z1", "z2")
ROOT = Path(__file__).parent.parent


@st.composite
def inventories(draw: st.DrawFn) -> list[Node]:
    """1-3 pools of 1-6 nodes: whole GPUs, MIG slices or time-sliced GPUs; zones split a pool into classes."""
    nodes = []
    for pool in range(draw(st.integers(1, 3))):
        resource, per_node = draw(
            st.sampled_from([(GPU, 1), (GPU, 2), (GPU, 8), (MIG, 7), (MIG, 14), (GPU, 16), (GPU, 32)])
        )
        taints = tuple(draw(st.lists(st.sampled_from([HARD, SOFT]), max_size=2, unique=True)))
        cpu = draw(st.sampled_from([None, 4000, 16000]))
        slots = draw(st.integers(2, 12))
        for index in range(draw(st.integers(1, 6))):
            name = f"p{pool}-{index}"
            allocatable = {resource: per_node, "pods": slots, **({"cpu": cpu} if cpu else {})}
            labels = {"kubernetes.io/hostname": name, "zone": draw(st.sampled_from(ZONES))}
            cordoned = draw(st.integers(0, 9)) == 0
            nodes.append(Node(name, f"p{pool}", labels, taints, allocatable, cordoned))
    return nodes


@st.composite
def shapes(draw: st.DrawFn) -> PodShape:
    requests = {draw(st.sampled_from([GPU, MIG])): draw(st.integers(0, 2))}
    if draw(st.booleans()):
        requests["cpu"] = draw(st.sampled_from([500, 1500, 3000]))
    amounts = tuple(sorted((r, v) for r, v in requests.items() if v))
    tolerations = tuple(
        draw(
            st.lists(
                st.sampled_from(
                    [Toleration("pool", "Equal", "gpu", "NoSchedule"), Toleration("spot", "Exists", None, None)]
                ),
                max_size=2,
                unique=True,
            )
        )
    )
    required = (Term((Requirement("zone", "In", (draw(st.sampled_from(ZONES)),)),)),) if draw(st.booleans()) else None
    preferred = (
        ((draw(st.integers(1, 100)), Term((Requirement("zone", "In", ("z2",)),))),) if draw(st.booleans()) else ()
    )
    return PodShape(
        requests=amounts,
        limits=amounts,
        tolerations=tolerations,
        required=required,
        preferred=preferred,
        scheduler_name=draw(st.sampled_from(["default-scheduler"] * 4 + ["volcano"])),
        containers=(Container("main", amounts, amounts),),
    )


@st.composite
def demands(draw: st.DrawFn) -> Demand:
    """1-5 workloads, each 1-15 replicas sharing one shape (as a workload's pods do), some of them gangs."""
    pods: list[Pod] = []
    gangs: dict[str, GangSpec] = {}
    for workload in range(draw(st.integers(1, 5))):
        shape = draw(shapes())
        namespace = draw(st.sampled_from(["a", "b"]))
        priority = draw(st.sampled_from([0, 10]))
        replicas = draw(st.integers(1, 15))
        gang = None
        if shape.scheduler_name == "volcano" or draw(st.integers(0, 4)) == 0:  # a VolcanoJob, or a JobSet's group
            gang = f"{namespace}/w{workload}"
            gangs[gang] = GangSpec(gang, f"w{workload}", namespace, draw(st.integers(1, replicas)), replicas)
        for index in range(replicas):
            pods.append(Pod(f"w{workload}-{index}", namespace, shape, priority, False, Source(None), gang, len(pods)))
    return Demand(tuple(pods), gangs, ())


@st.composite
def running(draw: st.DrawFn, count: int) -> list[tuple[Pod, int]]:
    """Pods already bound: nodes partly full, and victims for the plan's higher-priority pods."""
    out = []
    for index in range(draw(st.integers(0, 8))):
        shape = PodShape(requests=tuple(sorted({(draw(st.sampled_from([GPU, MIG])), draw(st.integers(1, 3)))})))
        pod = Pod(f"r{index}", "a", shape, draw(st.sampled_from([-5, 0, 20])), False, Source(None), None, -100 + index)
        out.append((pod, draw(st.integers(0, count - 1))))
    return out


def quotas() -> st.SearchStrategy[tuple[Quota, ...]]:
    quota = st.builds(
        lambda namespace, gpus, slots: Quota("q", namespace, {"requests.nvidia.com/gpu": gpus, "pods": slots}),
        st.sampled_from(["a", "b"]),
        st.integers(0, 30),
        st.integers(1, 40),
    )
    return st.lists(quota, max_size=2, unique_by=lambda q: q.namespace).map(tuple)


def gates() -> st.SearchStrategy[Gates | None]:
    """None, or a LimitRange in namespace b capping a container at one GPU."""
    limit = Gates({"b": (LimitItem({}, {}, {}, {GPU: 1}),)})
    return st.sampled_from([None, limit])


def _state(outcome: Outcome) -> tuple[Any, ...]:
    cluster = outcome.cluster
    return (
        [(pod.name, node) for pod, node in outcome.placed],
        [(p.pod.name, p.event, p.message, p.rejections, p.quota, p.gang_partial) for p in outcome.pending],
        [(spec.key, message) for spec, message in outcome.gangs],
        [(quota.namespace, used) for quota, used in outcome.quotas],
        [(pod.name, node, message) for pod, node, message in outcome.preempted],
        [(pod.name, node, message) for pod, node, message in outcome.nominated],
        [list(used.items()) for used in cluster.used],
        [[pod.name for pod in pods] for pods in cluster.pods],
        [list(cluster.groups(node_class.index)) for node_class in cluster.classes],
        (cluster.generation, cluster.lowest_priority),
    )


@settings(max_examples=400, deadline=None)
@given(inventories(), demands(), quotas(), gates(), st.booleans(), st.data())
def test_runs_of_replicas_place_as_one_pod_at_a_time(
    inventory: list[Node],
    demand: Demand,
    limits: tuple[Quota, ...],
    gate: Gates | None,
    binpack: bool,
    data: st.DataObject,
) -> None:
    bound = data.draw(running(len(inventory)))
    args = (inventory, demand, limits, VERSION, binpack, bound, None, gate)
    assert _state(simulate(*args)) == _state(simulate(*args, runs=False))


def test_a_run_binds_whole_rounds_at_once() -> None:
    """Not vacuous: 60 replicas on 20 empty nodes of one class are bound in stretches, not one bind per pod."""
    nodes = [
        Node(f"n{i}", "p", {"kubernetes.io/hostname": f"n{i}"}, (), {GPU: 8, "pods": 110, "cpu": 190000})
        for i in range(20)
    ]
    shape = PodShape(requests=(("cpu", 1000), (GPU, 1)))
    pods = tuple(Pod(f"w-{i}", "a", shape, 0, False, Source(None), None, i) for i in range(60))
    stretches: list[int] = []
    original = Cluster.bind_run

    def counted(cluster: Cluster, *args: Any, **kwargs: Any) -> list[int]:
        taken = original(cluster, *args, **kwargs)
        stretches.append(len(taken))
        return taken

    with patch.object(Cluster, "bind_run", counted):
        outcome = simulate(nodes, Demand(pods, {}, ()), (), VERSION)
    assert [node for _, node in outcome.placed] == [i % 20 for i in range(60)]  # spread, round by round
    assert stretches == [20, 20, 20]


def test_a_node_whose_score_holds_takes_the_next_pods_without_a_judgement() -> None:
    """Not vacuous: where one more pod leaves a node's fit score as it was (224 GPUs: 1 and 2 used both score 99),
    one-by-one placement gives that node the next pod too; the run binds it there without judging the groups again
    (replicas._stack), and the nodes are the one-by-one ones."""
    nodes = [
        Node(f"n{i}", "p", {"kubernetes.io/hostname": f"n{i}"}, (), {GPU: 224, "pods": 110, "cpu": 1_000_000})
        for i in range(4)
    ]
    shape = PodShape(requests=(("cpu", 1), (GPU, 1)))
    pods = tuple(Pod(f"w-{i}", "a", shape, 0, False, Source(None), None, i) for i in range(8))
    judged: list[int] = []
    original = Cluster.bind_run

    def counted(cluster: Cluster, *args: Any, **kwargs: Any) -> list[int]:
        taken = original(cluster, *args, **kwargs)
        judged.append(len(taken))
        return taken

    with patch.object(Cluster, "bind_run", counted):
        outcome = simulate(nodes, Demand(pods, {}, ()), (), VERSION)
    assert [node for _, node in outcome.placed] == [0, 0, 1, 1, 2, 2, 3, 3]
    assert _state(outcome) == _state(simulate(nodes, Demand(pods, {}, ()), (), VERSION, runs=False))
    assert judged == [1, 1, 1, 1]  # one judgement per node, its second pod stacked


def _simulations() -> list[tuple[str, str | None, str | None]]:
    """(blueprint, scenario, cluster snapshot) of every simulation under version control."""
    out: list[tuple[str, str | None, str | None]] = [
        (str(p), None, None) for p in sorted((ROOT / "blueprints").glob("*.yaml"))
    ]
    for case in sorted((ROOT / "tests" / "cases" / "simulate").iterdir()):
        scenario = case / "scenario.yaml"
        out.append((str(case / "blueprint.yaml"), str(scenario) if scenario.is_file() else None, None))
    clusters = ROOT / "tests" / "cases" / "simulate-cluster"
    out.append((str(clusters / "owned" / "blueprint.yaml"), None, str(clusters / "owned" / "cluster.yaml")))
    out.append(
        (str(clusters / "fidelity" / "blueprint.yaml"), FIDELITY_PODS, str(clusters / "fidelity" / "cluster.yaml"))
    )
    multi_tenant = str(ROOT / "blueprints" / "multi-tenant.yaml")
    out.append((multi_tenant, str(clusters / "scenario.yaml"), str(clusters / "cluster.yaml")))
    out.append(
        (str(ROOT / "blueprints" / "kai.yaml"), None, str(ROOT / "tests" / "cases" / "kai-sim" / "cluster.yaml"))
    )
    return out


# The fidelity case's blueprint runs no workload: replicas of a CPU pod, one LimitRanger refuses, one whose claim is
# missing and one that fits no node, on its snapshot's nodes (partly full, scoped quotas, a PVC).
FIDELITY_PODS = """pods:
  - {name: web, namespace: research, replicas: 6, spec: {containers: [{name: c, resources: {requests: {cpu: '7'}}}]}}
  - name: capped
    namespace: research
    replicas: 2
    spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu.shared: 1}}}]}
  - name: lost
    namespace: research
    spec:
      containers: [{name: c, resources: {requests: {cpu: '1'}}}]
      volumes: [{name: v, persistentVolumeClaim: {claimName: scratch}}]
  - {name: huge, namespace: research, replicas: 3, spec: {containers: [{name: c, resources: {requests: {cpu: '900'}}}]}}
"""


def _report(blueprint: str, scenario: str | None, cluster: str | None) -> str:
    from gpustack.compile import compile_blueprint

    result = validate_path(blueprint)
    assert result.context is not None, blueprint
    context = result.context
    objects = [m.obj for m in compile_blueprint(context).objects]
    loaded = None
    if scenario is not None:
        document = (
            parse_document(scenario, "scenario.yaml") if scenario.startswith("pods:") else read_document(scenario)
        )
        loaded = scenario_from(document, context.blueprint)
    snapshot = read_snapshot(cluster) if cluster is not None else None
    return format_json(report_data(run_simulation(context, objects, loaded, snapshot=snapshot), blueprint))


@pytest.mark.parametrize(
    ("blueprint", "scenario", "cluster"),
    _simulations(),
    ids=lambda value: value and Path(value).parent.name + "/" + Path(value).name,
)
def test_every_simulation_under_version_control_reports_the_same_with_runs(
    blueprint: str, scenario: str | None, cluster: str | None
) -> None:
    with_runs = _report(blueprint, scenario, cluster)
    with patch.object(simulate_package, "simulate", functools.partial(simulate, runs=False)):
        one_by_one = _report(blueprint, scenario, cluster)
    assert with_runs == one_by_one
    summary = json.loads(with_runs)["summary"]
    assert summary["pods"] + summary["running"] > 0

"""Simulating on a cluster as it is: pods pinned by nodeName, cordons, pod limits, CPU-only nodes, bound pods
and preemption, each checked against the exact words kube-scheduler and the kubelet use."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders import sourceless

from gpustack.codes import CORDONED_NOT_IN_POOL
from gpustack.compile import compile_blueprint
from gpustack.model import Blueprint
from gpustack.simulate import Simulation, run_simulation
from gpustack.simulate.scenario import load_scenario
from gpustack.validation import validate_path, validate_text

BLUEPRINTS = Path(__file__).parent.parent / "blueprints"


@pytest.fixture(scope="module")
def multi_tenant() -> Blueprint:
    result = validate_path(BLUEPRINTS / "multi-tenant.yaml")
    assert result.ok and result.blueprint is not None
    return result.blueprint


def simulate(blueprint: Blueprint, scenario: str | None = None, **kwargs: object) -> Simulation:
    loaded = load_scenario(scenario, "scenario.yaml", blueprint) if scenario is not None else None
    objects = [m.obj for m in compile_blueprint(sourceless(blueprint)).objects]
    return run_simulation(sourceless(blueprint), objects, loaded, **kwargs)  # type: ignore[arg-type]


def placements(simulation: Simulation) -> dict[str, str]:
    nodes = simulation.outcome.cluster.nodes
    return {pod.name: nodes[index].name for pod, index in simulation.outcome.placed}


def pending(simulation: Simulation) -> dict[str, tuple[str, str]]:
    return {item.pod.name: (item.event, item.message) for item in simulation.outcome.pending}


PINNED = """
pods:
  - name: pinned
    namespace: research
    spec:
      nodeName: a100-c
      containers: [{name: c, resources: {limits: {nvidia.com/gpu: 2}}}]
  - name: ghost
    namespace: research
    spec:
      nodeName: gpu-9
      containers: [{name: c}]
  - name: greedy
    namespace: research
    spec:
      nodeName: a100-c
      containers: [{name: c, resources: {limits: {nvidia.com/gpu: 7}}}]
  - name: elsewhere
    namespace: research
    spec:
      nodeName: l4-a
      nodeSelector: {gpustack.io/pool: a100-40-training}
      containers: [{name: c}]
"""


def test_node_name_is_honoured_past_the_scheduler(multi_tenant: Blueprint) -> None:
    """nodeName skips the scheduler (a100-c's NoSchedule taint is not tolerated, yet the pod runs there);
    the kubelet still refuses what does not fit, and a missing node leaves the pod to the pod GC."""
    simulation = simulate(multi_tenant, PINNED)
    assert placements(simulation)["pinned"] == "a100-c"
    assert pending(simulation) == {
        "ghost": ("DeletionByPodGC", "PodGC: node no longer exists"),
        "greedy": (
            "OutOfnvidia.com/gpu",
            "Pod was rejected: Node didn't have enough resource: nvidia.com/gpu, requested: 7, used: 2, capacity: 8",
        ),
        "elsewhere": ("NodeAffinity", "Pod was rejected: Predicate NodeAffinity failed"),
    }
    # Rejected pods are Failed: they no longer count toward the namespace's quota (finetune's 8 + pinned's 2).
    research = next(used for quota, used in simulation.outcome.quotas if quota.namespace == "research")
    assert research["requests.nvidia.com/gpu"] == 10


def _with_pool_fields(extra: str) -> Blueprint:
    text = (BLUEPRINTS / "multi-tenant.yaml").read_text()
    text = text.replace("      nodes: [a100-a, a100-b, a100-c]\n", f"      nodes: [a100-a, a100-b, a100-c]\n{extra}")
    # gpustack's own Job rather than the template, which validate_text (no file to resolve it from) cannot read
    text = "\n".join(line for line in text.splitlines() if "template: templates/" not in line) + "\n"

    result = validate_text(text, str(BLUEPRINTS / "multi-tenant.yaml"))
    assert result.ok and result.blueprint is not None, [d.message for d in result.diagnostics]
    return result.blueprint


FINETUNE_3 = "workloads:\n  finetune:\n    replicas: 3\n"


def test_cordoned_nodes_take_no_new_pods() -> None:
    simulation = simulate(_with_pool_fields("      cordoned: [a100-a, a100-b]\n"), FINETUNE_3)
    assert placements(simulation)["finetune-0"] == placements(simulation)["finetune-1"] == "a100-c"
    assert pending(simulation)["finetune-2"] == (
        "FailedScheduling",
        "0/7 nodes are available: 1 Insufficient nvidia.com/gpu, 2 node(s) had untolerated taint "
        "{gpustack.io/pool: h100-mig}, 2 node(s) had untolerated taint {gpustack.io/pool: l4-shared}, "
        "2 node(s) were unschedulable. preemption: 0/7 nodes are available: 1 No preemption victims found for "
        "incoming pod, 6 Preemption is not helpful for scheduling.",
    )


def test_max_pods_limits_each_node() -> None:
    simulation = simulate(_with_pool_fields("      maxPods: 1\n"), FINETUNE_3.replace("3", "4"))
    assert sorted(placements(simulation)[f"finetune-{i}"] for i in range(3)) == ["a100-a", "a100-b", "a100-c"]
    assert pending(simulation)["finetune-3"][1] == (
        "0/7 nodes are available: 2 node(s) had untolerated taint {gpustack.io/pool: h100-mig}, 2 node(s) had "
        "untolerated taint {gpustack.io/pool: l4-shared}, 3 Too many pods. preemption: 0/7 nodes are available: "
        "3 No preemption victims found for incoming pod, 4 Preemption is not helpful for scheduling."
    )


def test_a_cordoned_node_outside_the_pool_is_reported() -> None:
    text = (BLUEPRINTS / "multi-tenant.yaml").read_text()
    text = text.replace(
        "      nodes: [a100-a, a100-b, a100-c]\n", "      nodes: [a100-a, a100-b, a100-c]\n      cordoned: [a100-x]\n"
    )
    (problem,) = [d for d in validate_text(text, "bp.yaml").diagnostics if d.code == CORDONED_NOT_IN_POOL]
    assert (
        problem.message == "cordoned node 'a100-x' is not a node of pool 'a100-40-training'; expected one of its nodes"
    )
    assert problem.hint == "did you mean 'a100-c'?"
    assert problem.span is not None and problem.span.start.line == 39


CLUSTER = Path(__file__).parent / "cases" / "simulate-cluster"


def on_cluster(blueprint: Blueprint, scenario: bool = False) -> Simulation:
    from gpustack.cluster.snapshot import read_snapshot

    text = (CLUSTER / "scenario.yaml").read_text() if scenario else None
    return simulate(blueprint, text, snapshot=read_snapshot(str(CLUSTER / "cluster.yaml")))


def test_bound_pods_keep_their_nodes_and_lower_priority_ones_are_preempted(multi_tenant: Blueprint) -> None:
    """a100-a is cordoned and the scavenger pods fill a100-b and half of a100-c: finetune-0 takes a100-c's other
    half, finetune-1 preempts one scavenger pod. Both a100-b and a100-c offer one victim of priority 100; the
    first node wins the tie, and of a100-b's two equal pods the one bound first is reprieved."""
    simulation = on_cluster(multi_tenant)
    outcome = simulation.outcome
    assert [pod.name for pod, _ in outcome.running] == ["batch-0", "batch-1", "batch-2", "coredns-5d78c9869d-x2x7q"]
    assert placements(simulation)["finetune-0"] == "a100-c"
    assert placements(simulation)["finetune-1"] == "a100-b"
    nodes = outcome.cluster.nodes
    assert [(pod.name, nodes[node].name, text) for pod, node, text in outcome.preempted] == [
        ("batch-1", "a100-b", "Preempted by pod research/finetune-1 on node a100-b")
    ]
    # The preemptor's first attempt failed as the cluster words it: no post-filter text once preemption succeeds.
    ((preemptor, node, message),) = outcome.nominated
    assert (preemptor.name, nodes[node].name) == ("finetune-1", "a100-b")
    assert message == (
        "0/9 nodes are available: 1 node(s) were unschedulable, 2 Insufficient nvidia.com/gpu, 2 node(s) didn't "
        "match Pod's node affinity/selector, 2 node(s) had untolerated taint {gpustack.io/pool: h100-mig}, 2 node(s) "
        "had untolerated taint {gpustack.io/pool: l4-shared}."
    )
    # Running pods count toward quota; the victim no longer does, the Succeeded pod never did.
    research = next(used for quota, used in outcome.quotas if quota.namespace == "research")
    assert research["requests.nvidia.com/gpu"] == 16
    assert outcome.ok


def test_preemption_wording_follows_the_version(multi_tenant: Blueprint) -> None:
    from gpustack.cluster.snapshot import read_snapshot
    from gpustack.simulate.messages import KubeVersion

    loaded = read_snapshot(str(CLUSTER / "cluster.yaml"))
    simulation = simulate(multi_tenant, None, version=KubeVersion.parse("1.35"), snapshot=loaded)
    ((_, _, message),) = simulation.outcome.nominated
    assert message == (
        "0/9 nodes are available: 1 node(s) were unschedulable, 2 Insufficient nvidia.com/gpu, 2 node(s) didn't "
        "match Pod's node affinity/selector, 4 node(s) had untolerated taint(s)."
    )


def test_snapshot_nodes_cordons_pod_limits_and_preemption_policy(multi_tenant: Blueprint) -> None:
    simulation = on_cluster(multi_tenant, scenario=True)
    where = placements(simulation)
    assert where["web-0"] == where["web-1"] == "cpu-1"  # CPU-only and untainted; cpu-2 is at its pod limit
    assert where["repair"] == "a100-a"  # nodeName: the cordon stops the scheduler, not the kubelet
    assert pending(simulation) == {
        "polite": (
            "FailedScheduling",
            "0/9 nodes are available: 1 Too many pods, 1 node(s) were unschedulable, 2 node(s) had untolerated "
            "taint {gpustack.io/pool: h100-mig}, 2 node(s) had untolerated taint {gpustack.io/pool: l4-shared}, "
            "4 Insufficient nvidia.com/gpu. preemption: not eligible due to preemptionPolicy=Never.",
        )
    }


def test_cli_reports_running_and_preempted_pods(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from gpustack.cli import group

    run = CliRunner().invoke(
        group, ["simulate", str(BLUEPRINTS / "multi-tenant.yaml"), "--cluster", str(CLUSTER / "cluster.yaml")]
    )
    assert run.exit_code == 0, run.output
    assert "14 pod(s) on 9 node(s): 14 placed, 0 pending\n4 pod(s) already running in the cluster\n" in run.stdout
    assert (
        "  research/batch-1 on a100-b  Preempted\n    Preempted by pod research/finetune-1 on node a100-b\n"
        in run.stdout
    )
    broken = tmp_path / "cluster.yaml"
    broken.write_text("kind: List\nitems:\n- kind: Pod\n  metadata: {name: p}\n  spec: {priority: high}\n")
    bad = CliRunner().invoke(group, ["simulate", str(BLUEPRINTS / "multi-tenant.yaml"), "--cluster", str(broken)])
    assert bad.exit_code == 1
    assert f"{broken}:5:20: error[GS020]: priority is a string; expected an integer" in bad.stderr


CPU_SCENARIO = """
pods:
  - name: batch
    namespace: web
    replicas: 3
    spec:
      containers: [{name: main, resources: {requests: {cpu: "6", memory: 8Gi}}}]
"""


@pytest.mark.parametrize("stack", ["gpu-operator", "device-plugin"])
def test_cpu_only_pool_compiles_without_device_plugin_and_takes_cpu_pods(stack: str) -> None:
    text = (CLUSTER / "cpu-pool.yaml").read_text()
    # A tainted CPU pool: nothing that runs on GPU nodes only should tolerate its taint.
    text = text.replace(
        "      cordoned: [cpu-2]\n",
        "      cordoned: [cpu-2]\n      taints: [{key: cpu-only, effect: PreferNoSchedule}]\n",
    )
    text = text.replace("spec:\n", f"spec:\n  stack: {stack}\n", 1)
    result = validate_text(text, "cpu-pool.yaml")
    assert result.ok and result.blueprint is not None, [d.message for d in result.diagnostics]
    plan = compile_blueprint(sourceless(result.blueprint))
    labels = {m.name: m.obj["metadata"]["labels"] for m in plan.by_family("nodes")}
    assert labels["cpu-1"] == {"gpustack.io/pool": "cpu"}  # no device-plugin config for a pool without GPUs
    (release,) = plan.releases
    if stack == "device-plugin":
        assert release.name == "nvidia-device-plugin"
        term = release.values["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert term["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == ["l4"]
        tolerations = release.values["tolerations"]
        assert list(release.values["config"]["map"]) == ["whole-gpu"]
    else:
        # The operator's operands run on GPU nodes only (NFD finds them): one config, for the L4s.
        assert release.name == "gpu-operator"
        assert list(release.values["devicePlugin"]["config"]["data"]) == ["whole-gpu"]
        tolerations = release.values["daemonsets"]["tolerations"]
        nfd = release.values["node-feature-discovery"]["worker"]["tolerations"]
        assert "cpu-only" not in [t["key"] for t in nfd]
    assert "gpustack.io/pool" in [t["key"] for t in tolerations]
    assert "cpu-only" not in [t["key"] for t in tolerations]
    simulation = simulate(result.blueprint, CPU_SCENARIO)
    where = placements(simulation)
    assert where["infer-0"] == where["infer-1"] == "l4-1"
    # cpu-2 is cordoned, cpu-1 has 16 cores: two 6-core pods fit, the third does not; l4-1 is tainted and full.
    assert where["batch-0"] == where["batch-1"] == "cpu-1"
    assert pending(simulation) == {
        "batch-2": (
            "FailedScheduling",
            "0/3 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint {gpustack.io/pool: l4}, "
            "1 node(s) were unschedulable. preemption: 0/3 nodes are available: 1 No preemption victims found for "
            "incoming pod, 2 Preemption is not helpful for scheduling.",
        )
    }

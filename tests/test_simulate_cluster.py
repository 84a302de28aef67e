"""Simulating on a cluster as it is: pods pinned by nodeName, cordons, pod limits, CPU-only nodes, bound pods
and preemption, each checked against the exact words kube-scheduler and the kubelet use."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpustack.compile import compile_blueprint
from gpustack.model import Blueprint
from gpustack.simulate import Simulation, run_simulation
from gpustack.simulate.scenario import load_scenario
from gpustack.validation import validate_path

BLUEPRINTS = Path(__file__).parent.parent / "blueprints"


@pytest.fixture(scope="module")
def multi_tenant() -> Blueprint:
    result = validate_path(BLUEPRINTS / "multi-tenant.yaml")
    assert result.ok and result.blueprint is not None
    return result.blueprint


def simulate(blueprint: Blueprint, scenario: str | None = None, **kwargs: object) -> Simulation:
    loaded = load_scenario(scenario, "scenario.yaml", blueprint) if scenario is not None else None
    objects = [m.obj for m in compile_blueprint(blueprint).objects]
    return run_simulation(blueprint, objects, loaded, **kwargs)  # type: ignore[arg-type]


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

"""simulate --cluster on a cluster the blueprint already runs on: the workload's own running pods are its replicas,
counted once (issue 27 item 7: a 7-replica MIG workload showed 14 of 56 slices used, 16 after scaling to 9)."""

from __future__ import annotations

from pathlib import Path

from gpustack.cluster.snapshot import parse_snapshot
from gpustack.compile import compile_blueprint
from gpustack.simulate import Simulation, run_simulation
from gpustack.simulate.scenario import load_scenario
from gpustack.validation import validate_text

CASE = Path(__file__).parent / "cases" / "simulate-cluster" / "owned"
SLICE = "nvidia.com/mig-1g.10gb"
QUOTA = f"requests.{SLICE}"


def simulate(scenario: str | None = None, snapshot: str | None = None, blueprint: str | None = None) -> Simulation:
    text = blueprint if blueprint is not None else (CASE / "blueprint.yaml").read_text()
    result = validate_text(text, str(CASE / "blueprint.yaml"))
    assert result.ok and result.blueprint is not None and result.context is not None
    objects = [m.obj for m in compile_blueprint(result.context).objects]
    loaded = load_scenario(scenario, "scenario.yaml", result.blueprint) if scenario is not None else None
    cluster = parse_snapshot(snapshot if snapshot is not None else (CASE / "cluster.yaml").read_text(), "cluster.yaml")
    return run_simulation(result.context, objects, loaded, snapshot=cluster)


def slices_used(simulation: Simulation) -> int:
    outcome = simulation.outcome
    return sum(used.get(SLICE, 0) for used in outcome.cluster.used)


def quota_used(simulation: Simulation) -> int:
    return next(used[QUOTA] for quota, used in simulation.outcome.quotas if quota.namespace == "serving")


def test_an_applied_workload_is_not_created_twice() -> None:
    """The seven chat pods run: nothing new is created; 7 slices are chat's and 1 the notebook's, not 15."""
    simulation = simulate()
    assert simulation.outcome.placed == () and simulation.outcome.pending == ()
    assert len(simulation.outcome.running) == 8
    assert slices_used(simulation) == 8
    assert quota_used(simulation) == 8


def test_scaling_up_creates_only_the_missing_replicas() -> None:
    simulation = simulate("workloads:\n  chat: {replicas: 9}\n")
    assert [pod.name for pod, _ in simulation.outcome.placed] == ["chat-7", "chat-8"]
    assert slices_used(simulation) == 9 + 1  # nine chat pods in all, as the cluster would run, and the notebook
    assert quota_used(simulation) == 10


def test_scaling_down_deletes_the_extra_running_pods() -> None:
    simulation = simulate("workloads:\n  chat: {replicas: 5}\n")
    assert simulation.outcome.placed == ()
    names = [pod.name for pod, _ in simulation.outcome.running]
    assert len([n for n in names if n.startswith("chat-")]) == 5 and "notebook" in names
    assert slices_used(simulation) == 5 + 1


def test_pods_found_by_their_replica_set_without_gpustacks_label() -> None:
    """A pod someone relabelled still belongs to the workload through its owner, the Deployment's ReplicaSet."""
    text = (CASE / "cluster.yaml").read_text().replace("gpustack.io/workload: chat, ", "")
    assert "gpustack.io/workload" not in text
    simulation = simulate(snapshot=text)
    assert simulation.outcome.placed == () and slices_used(simulation) == 8


def test_a_namesake_in_another_namespace_is_not_the_workloads() -> None:
    text = (CASE / "cluster.yaml").read_text().replace("namespace: serving", "namespace: staging")
    simulation = simulate(snapshot=text)
    assert len(simulation.outcome.placed) == 7  # all seven are new: the running ones are another namespace's
    assert slices_used(simulation) == 15


def test_a_deployment_refused_by_quota_is_named_as_its_replica_set_names_it() -> None:
    """kube-controller-manager's FailedCreate on the ReplicaSet: `Error creating: pods "<rs>-<suffix>" is
    forbidden: exceeded quota: ...`; the ReplicaSet's pod-template-hash comes from the running pods."""
    text = (CASE / "blueprint.yaml").read_text().replace("{mig-1g.10gb: 56}", "{mig-1g.10gb: 9}")
    simulation = simulate("workloads:\n  chat: {replicas: 9}\n", blueprint=text)
    assert [pod.name for pod, _ in simulation.outcome.placed] == ["chat-7"]
    ((refused),) = simulation.outcome.pending
    assert (refused.pod.name, refused.event) == ("chat-8", "FailedCreate")
    assert refused.message == (
        'Error creating: pods "chat-6d4cf56db6-8" is forbidden: exceeded quota: gpustack-gpu-quota, '
        f"requested: {QUOTA}=1, used: {QUOTA}=9, limited: {QUOTA}=9"
    )

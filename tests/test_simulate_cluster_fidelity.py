"""simulate --cluster against what a real control plane showed (issue 27 items 5 and 7): extended resources the
snapshot shows, autoscaled pools at zero, scoped quotas, LimitRanger's and VolumeBinding's words, and DRA-backed
extended resources by version. Each case is a snapshot + blueprint under tests/cases/simulate-cluster/."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpustack.cluster.snapshot import parse_snapshot
from gpustack.compile import compile_blueprint
from gpustack.simulate import Simulation, run_simulation
from gpustack.simulate.messages import KubeVersion
from gpustack.simulate.scenario import load_scenario
from gpustack.validation import validate_text

CASES = Path(__file__).parent / "cases" / "simulate-cluster"
BLUEPRINTS = Path(__file__).parent.parent / "blueprints"
FIDELITY = CASES / "fidelity"


def simulate(
    blueprint: Path | str,
    scenario: str | None = None,
    snapshot: str | None = None,
    version: str | None = None,
) -> Simulation:
    text = blueprint.read_text() if isinstance(blueprint, Path) else blueprint
    result = validate_text(text, str(FIDELITY / "blueprint.yaml"))
    assert result.ok and result.blueprint is not None and result.context is not None
    objects = [m.obj for m in compile_blueprint(result.context).objects]
    loaded = load_scenario(scenario, "scenario.yaml", result.blueprint) if scenario is not None else None
    cluster = parse_snapshot(snapshot, "cluster.yaml") if snapshot is not None else None
    kube = KubeVersion.parse(version) if version is not None else None
    return run_simulation(result.context, objects, loaded, version=kube, snapshot=cluster)


def on_fidelity(scenario: str, snapshot: str | None = None) -> Simulation:
    text = snapshot if snapshot is not None else (FIDELITY / "cluster.yaml").read_text()
    return simulate(FIDELITY / "blueprint.yaml", scenario, text)


def placed(simulation: Simulation) -> dict[str, str]:
    nodes = simulation.outcome.cluster.nodes
    return {pod.name: nodes[node].name for pod, node in simulation.outcome.placed}


def pending(simulation: Simulation) -> dict[str, tuple[str, str]]:
    return {item.pod.name: (item.event, item.message) for item in simulation.outcome.pending}


def raw_pod(name: str, spec: str, replicas: int = 1) -> str:
    return f"  - name: {name}\n    namespace: research\n    replicas: {replicas}\n    spec:\n{spec}"


CPU = "      containers: [{name: c, resources: {requests: {cpu: '1'}, limits: {%s}}}]\n"


# --- item 5: what the snapshot shows of a blueprint node, and pools with no node yet -------------------------------


def test_a_blueprint_node_keeps_the_extended_resources_the_snapshot_shows() -> None:
    """a100-a advertises one RDMA device and 800Gi of disk: the first pod takes the device, the second is refused
    for it as kube-scheduler would; before, the blueprint's node had neither and both pods pended."""
    spec = CPU % "rdma/hca_shared_devices_a: 1, ephemeral-storage: 100Gi"
    simulation = on_fidelity("pods:\n" + raw_pod("rdma", spec, 2))
    assert placed(simulation) == {"rdma-0": "a100-a"}
    event, message = pending(simulation)["rdma-1"]
    assert event == "FailedScheduling"
    assert message.startswith("0/2 nodes are available: 2 Insufficient rdma/hca_shared_devices_a.")
    a100 = next(i for i, node in enumerate(simulation.outcome.cluster.nodes) if node.name == "a100-a")
    node = simulation.outcome.cluster.nodes[a100]
    # The pool's GPUs are what gpustack's device plugin makes of the node, not what the snapshot saw before apply.
    assert node.allocatable["nvidia.com/gpu"] == 8 and node.allocatable["ephemeral-storage"] == 800 * 2**30


AUTOSCALED = (BLUEPRINTS / "volcano.yaml").read_text().replace("minNodes: 2", "minNodes: 0")
CPU_NODE = """apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: cpu-1}
  status: {allocatable: {cpu: "16", memory: 64Gi, pods: "110"}}
- apiVersion: v1
  kind: Pod
  metadata: {name: web-0, namespace: llm}
  spec:
    nodeName: cpu-1
    containers: [{name: c, resources: {requests: {cpu: "2"}}}]
  status: {phase: Running}
"""


def test_an_autoscaled_pool_at_zero_simulates_on_the_snapshots_nodes() -> None:
    """minNodes 0: the second run, on the nodes always there, has none of the pool's; the running pod stays on cpu-1
    (it used to be looked up by its index in the full node list: IndexError)."""
    simulation = simulate(AUTOSCALED, snapshot=CPU_NODE)
    assert simulation.outcome.ok
    ((pod, node),) = simulation.outcome.running
    assert (pod.name, simulation.outcome.cluster.nodes[node].name) == ("web-0", "cpu-1")
    assert {name for _, name in simulation.after_scale_up} >= {"pretrain-master-0", "pretrain-worker-0"}


def test_a_cluster_of_none() -> None:
    """Every pool autoscaled at zero and an empty cluster: everything is placed only after scale-up."""
    text = AUTOSCALED.replace("      count: 1\n", "      minNodes: 0\n      maxNodes: 1\n")
    simulation = simulate(text, snapshot="apiVersion: v1\nkind: List\nitems: []\n")
    assert simulation.outcome.ok
    assert len(simulation.after_scale_up) == len(simulation.outcome.placed) == 6


def test_a_selector_pools_running_nodes_take_the_places_of_its_simulated_ones() -> None:
    """h100-training (minNodes 2, maxNodes 4) already runs 3 nodes: they are the pool's first 3 nodes and the
    autoscaler may add one more, not 4 beside the 3 (which would let simulate place pods on 7 nodes of a pool of 4)."""
    nodes = "".join(
        f"- apiVersion: v1\n  kind: Node\n"
        f"  metadata: {{name: h100-{i}, labels: {{karpenter.sh/nodepool: h100-training}}}}\n"
        f'  status: {{allocatable: {{cpu: "192", memory: 2Ti, pods: "110", nvidia.com/gpu: "8"}}}}\n'
        for i in range(3)
    )
    simulation = simulate(BLUEPRINTS / "volcano.yaml", snapshot="apiVersion: v1\nkind: List\nitems:\n" + nodes)
    pool = [(n.name, n.scale_up) for n in simulation.outcome.cluster.nodes if n.pool == "h100-training"]
    assert pool == [("h100-0", False), ("h100-1", False), ("h100-2", False), ("h100-training-4", True)]
    assert simulation.outcome.ok


# --- item 7: admission and VolumeBinding in the control plane's words --------------------------------------------


def test_a_limit_range_refusal_is_worded_as_the_api_server_words_it() -> None:
    """LimitRanger runs before ResourceQuota: the tenant's closed gpu.shared is refused by its LimitRange, in
    maxConstraint's words, not as an exceeded quota."""
    simulation = on_fidelity("pods:\n" + raw_pod("shared", CPU % "nvidia.com/gpu.shared: 1"))
    assert pending(simulation)["shared"] == (
        "FailedCreate",
        'pods "shared" is forbidden: maximum nvidia.com/gpu.shared usage per Container is 0, but limit is 1',
    )


def test_limit_range_failures_of_several_containers_are_one_aggregate() -> None:
    spec = (
        "      containers:\n"
        "        - {name: a, resources: {limits: {nvidia.com/gpu.shared: 1}}}\n"
        "        - {name: b, resources: {limits: {nvidia.com/gpu: 9}}}\n"
    )
    simulation = on_fidelity("pods:\n" + raw_pod("two", spec))
    assert pending(simulation)["two"][1] == (
        'pods "two" is forbidden: [maximum nvidia.com/gpu.shared usage per Container is 0, but limit is 1, '
        "maximum nvidia.com/gpu usage per Container is 8, but limit is 9]"
    )


def test_a_pod_mounting_a_missing_claim_stays_pending_as_volume_binding_says() -> None:
    volume = "      volumes: [{name: v, persistentVolumeClaim: {claimName: %s}}]\n"
    scenario = (
        "pods:\n"
        + raw_pod("ok", CPU % "cpu: '1'" + volume % "data")
        + raw_pod("lost", CPU % "cpu: '1'" + volume % "scratch")
    )
    simulation = on_fidelity(scenario)
    assert "ok" in placed(simulation)
    assert pending(simulation)["lost"] == (
        "FailedScheduling",
        '0/2 nodes are available: persistentvolumeclaim "scratch" not found. no new claims to deallocate, '
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.",
    )
    # A snapshot made without persistentvolumeclaims says nothing about claims: the pod is not held back.
    without = (FIDELITY / "cluster.yaml").read_text()
    without = without.replace(
        "  kind: PersistentVolumeClaim\n  metadata: {name: data", "  kind: ConfigMap\n  metadata: {name: data"
    )
    assert "lost" in placed(on_fidelity(scenario, without))


# --- quota scopes --------------------------------------------------------------------------------------------------


def test_snapshot_quotas_bind_only_the_pods_their_scopes_select() -> None:
    """`scavengers` (PriorityClass In [scavenger], pods: 1) holds one scavenger pod and no other; `no-best-effort`
    refuses only a pod without cpu or memory; `no-deadlines` only a pod with activeDeadlineSeconds."""
    pods = (
        raw_pod("scav", "      priorityClassName: scavenger\n" + CPU % "cpu: '1'", 2)
        + raw_pod("plain", CPU % "cpu: '1'", 2)
        + raw_pod("besteffort", "      containers: [{name: c}]\n")
        + raw_pod("deadline", "      activeDeadlineSeconds: 60\n" + CPU % "cpu: '1'")
    )
    simulation = on_fidelity("pods:\n" + pods)
    assert sorted(placed(simulation)) == ["plain-0", "plain-1", "scav-0"]
    refused = pending(simulation)
    assert refused["scav-1"][1] == (
        'pods "scav-1" is forbidden: exceeded quota: scavengers, requested: pods=1, used: pods=1, limited: pods=1'
    )
    assert "exceeded quota: no-best-effort," in refused["besteffort"][1]
    assert "exceeded quota: no-deadlines," in refused["deadline"][1]


# --- DRA-backed extended resources --------------------------------------------------------------------------------

PLAIN_GPU = """pods:
  - name: plain
    namespace: research
    spec:
      tolerations: [{key: gpustack.io/pool, operator: Equal, value: h100-train, effect: NoSchedule}]
      nodeSelector: {gpustack.io/pool: h100-train}
      containers: [{name: c, resources: {limits: {nvidia.com/gpu: %d}}}]
"""


def test_plain_gpu_requests_land_on_a_dra_pool_from_1_36() -> None:
    """docs/dra.md: from 1.36 the DeviceClass's extendedResourceName serves `nvidia.com/gpu` with the pool's devices."""
    simulation = simulate(BLUEPRINTS / "dra.yaml", PLAIN_GPU % 1)
    assert placed(simulation)["plain"] in ("h100-a", "h100-b")
    used = simulation.outcome.cluster.used
    assert sum(u.get("claim:gpu.h100-train.gpustack.io", 0) for u in used) == 8 + 1  # pretrain's claim, and plain's


@pytest.mark.parametrize("version", ["1.35", "1.34"])
def test_before_1_36_the_dra_pool_lacks_the_extended_resource(version: str) -> None:
    simulation = simulate(BLUEPRINTS / "dra.yaml", PLAIN_GPU % 1, version=version)
    assert pending(simulation)["plain"][1].startswith("0/5 nodes are available: 2 Insufficient nvidia.com/gpu")


def test_a_dra_backed_request_short_of_devices_cannot_allocate_its_claim() -> None:
    """9 GPUs on 8-device nodes: the DynamicResources filter refuses every h100 node; the others fail earlier. (In a
    namespace without research's LimitRange, which would refuse 9 GPUs at creation.)"""
    scenario = (PLAIN_GPU % 9).replace("namespace: research", "namespace: ops")
    message = pending(simulate(BLUEPRINTS / "dra.yaml", scenario))["plain"][1]
    assert message.startswith("0/5 nodes are available: 2 cannot allocate all claims, 3 node(s) had untolerated")

"""What a cluster snapshot adds to a simulation: the nodes, pods, priority classes and quotas already there.

The blueprint's nodes are simulated as they will be after apply (gpustack's labels, taints and device
plugin setup), with what only the cluster knows taken from the snapshot: cordons, allocatable cpu, memory
and pod slots, and taints others put there (gpustack's label script leaves them in place). Nodes the
blueprint does not list join as they are, CPU-only ones included. Pods bound to a node and not finished
keep that node and count toward its resources, its pod slots and their namespace's quotas. The snapshot's
PriorityClasses and ResourceQuotas join the compiled ones (a compiled object of the same name wins).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from gpustack.cluster.snapshot import ClusterSnapshot, SnapshotNode, SnapshotPod
from gpustack.simulate.demand import Pod, PriorityClass, Source
from gpustack.simulate.inventory import HOSTNAME, Node
from gpustack.simulate.pods import CPU, MEMORY, PODS, PodShape, Taint, amount

UNSCHEDULABLE_TAINT_KEY = "node.kubernetes.io/unschedulable"  # the cordon's own taint: `unschedulable` stands for it
RUNNING = "running"  # the raw-pod name running pods carry, for reports


def _allocatable(node: SnapshotNode) -> dict[str, int]:
    out = {}
    for resource, text in node.allocatable:
        try:
            out[resource] = amount(resource, text)
        except ValueError:  # the snapshot reader checked pods' quantities, not every node field: skip the odd one
            continue
    return out


def _taints(node: SnapshotNode) -> tuple[Taint, ...]:
    return tuple(Taint(t.key, t.value, t.effect) for t in node.taints if t.key != UNSCHEDULABLE_TAINT_KEY)


def merge_nodes(nodes: Sequence[Node], snapshot: ClusterSnapshot) -> tuple[Node, ...]:
    """The blueprint's nodes with the cluster's cordons, sizes and foreign taints; then every other node."""
    listed = {node.name for node in nodes}
    merged = []
    for node in nodes:
        found = snapshot.node(node.name)
        if found is None:
            merged.append(node)
            continue
        actual = _allocatable(found)
        allocatable = dict(node.allocatable)
        allocatable.update({r: actual[r] for r in (CPU, MEMORY, PODS) if r in actual})
        own = {(t.key, t.effect) for t in node.taints}
        foreign = tuple(t for t in _taints(found) if (t.key, t.effect) not in own)
        cordoned = node.unschedulable or found.unschedulable
        merged.append(replace(node, allocatable=allocatable, taints=(*node.taints, *foreign), unschedulable=cordoned))
    for found in snapshot.nodes:
        if found.name not in listed:
            labels = {HOSTNAME: found.name, **dict(found.labels)}
            merged.append(Node(found.name, None, labels, _taints(found), _allocatable(found), found.unschedulable))
    return tuple(merged)


def _running_pod(pod: SnapshotPod, classes: Mapping[str, PriorityClass], order: int) -> Pod:
    requests = tuple(sorted((r, amount(r, text)) for r, text in pod.requests if amount(r, text) > 0))
    shape = PodShape(requests=requests, priority_class=pod.priority_class)
    known = classes.get(pod.priority_class or "")
    never = known.preempt_never if known is not None else False
    # The Priority admission plugin wrote spec.priority when the pod was created: it is the pod's priority now,
    # whatever the class says today; only a hand-written snapshot without it falls back to the class.
    value = pod.priority if pod.priority is not None else (known.value if known is not None else 0)
    return Pod(pod.name, pod.namespace, shape, value, never, Source(None, raw=RUNNING), order=order)


def running_pods(
    snapshot: ClusterSnapshot, nodes: Sequence[Node], classes: Mapping[str, PriorityClass]
) -> list[tuple[Pod, int]]:
    """Every pod the snapshot shows bound to a node of the simulation and not finished, with its node index."""
    index = {node.name: i for i, node in enumerate(nodes)}
    out: list[tuple[Pod, int]] = []
    for pod in snapshot.pods:
        if pod.holds_resources and pod.node_name in index:
            out.append((_running_pod(pod, classes, -len(snapshot.pods) + len(out)), index[pod.node_name]))
    return out


def extra_objects(snapshot: ClusterSnapshot, compiled: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The snapshot's PriorityClasses and ResourceQuotas as objects, where the plan has none of that name."""
    taken = {
        (str(o.get("kind")), str(o["metadata"].get("namespace")), str(o["metadata"]["name"]))
        for o in compiled
        if isinstance(o.get("metadata"), Mapping)
    }
    out: list[dict[str, Any]] = []
    for pc in snapshot.priority_classes:
        if ("PriorityClass", "None", pc.name) not in taken:
            out.append(
                {
                    "kind": "PriorityClass",
                    "metadata": {"name": pc.name},
                    "value": pc.value,
                    "preemptionPolicy": pc.preemption_policy,
                    "globalDefault": pc.global_default,
                }
            )
    for quota in snapshot.quotas:
        if ("ResourceQuota", quota.namespace, quota.name) not in taken:
            hard = dict(quota.hard)
            out.append(
                {
                    "kind": "ResourceQuota",
                    "metadata": {"name": quota.name, "namespace": quota.namespace},
                    "spec": {"hard": hard},
                }
            )
    return out

"""What a cluster snapshot adds to a simulation: the nodes, pods, priority classes and quotas already there.

The blueprint's nodes are simulated as they will be after apply (gpustack's labels, taints and device
plugin setup), with what only the cluster knows taken from the snapshot: cordons, allocatable cpu, memory,
pod slots and every resource the NVIDIA device plugin does not advertise (ephemeral-storage, hugepages, RDMA
devices...), and taints others put there (gpustack's label script leaves them in place). Nodes the
blueprint does not list join as they are, CPU-only ones included. Pods bound to a node and not finished
keep that node and count toward its resources, its pod slots and their namespace's quotas; those that are a
blueprint workload's own pods (its label, or its controller as owner, in its namespace) are that workload's
replicas already running, so only the replicas beyond them are created. The snapshot's PriorityClasses,
ResourceQuotas (with their scopes) and LimitRanges join the compiled ones (a compiled object of the same name wins).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from gpustack.cluster.snapshot import ClusterSnapshot, SnapshotNode, SnapshotPod
from gpustack.model import LabelRequirement, NodePool
from gpustack.names import WORKLOAD_LABEL
from gpustack.simulate.claims import is_claim
from gpustack.simulate.demand import Demand, Pod, PriorityClass, Source
from gpustack.simulate.inventory import HOSTNAME, Node
from gpustack.simulate.pods import CPU, MEMORY, PODS, PodShape, Taint, amount
from gpustack.simulate.snapshot_facts import PodFacts, compiled_claims, limit_ranges, pod_facts, terminating
from gpustack.simulate.snapshot_facts import volume_claims as snapshot_claims

UNSCHEDULABLE_TAINT_KEY = "node.kubernetes.io/unschedulable"  # the cordon's own taint: `unschedulable` stands for it
RUNNING = "running"  # the raw-pod name running pods carry, for reports
# What the NVIDIA device plugin (or HAMi) advertises: after apply, the blueprint's pool decides these on its nodes.
DEVICE_PLUGIN_PREFIX = "nvidia.com/"
POD_TEMPLATE_HASH = "pod-template-hash"  # the label a Deployment's ReplicaSet puts on its pods
_Shapes = Callable[[tuple[tuple[str, str], ...], str | None, bool], PodShape]  # requests as written, class, deadline


def _allocatable(written: tuple[tuple[str, str], ...]) -> dict[str, int]:
    """A node's allocatable amounts from its quantities as written (merge_nodes reads each distinct one once)."""
    out = {}
    for resource, text in written:
        try:
            out[resource] = amount(resource, text)
        except ValueError:  # the snapshot reader checked pods' quantities, not every node field: skip the odd one
            continue
    return out


def _taints(node: SnapshotNode) -> tuple[Taint, ...]:
    return tuple(Taint(t.key, t.value, t.effect) for t in node.taints if t.key != UNSCHEDULABLE_TAINT_KEY)


def _selects(requirements: Sequence[LabelRequirement], labels: Mapping[str, str]) -> bool:
    """Whether a node's labels satisfy a pool's selector (In, NotIn, Exists, DoesNotExist)."""
    for requirement in requirements:
        value = labels.get(requirement.key)
        operator = requirement.operator
        if operator == "In" and value not in requirement.values:
            return False
        if operator == "NotIn" and value in requirement.values:
            return False
        if (operator == "Exists" and value is None) or (operator == "DoesNotExist" and value is not None):
            return False
    return True


def _adopted(nodes: Sequence[Node], snapshot: ClusterSnapshot, pools: Iterable[NodePool]) -> list[Node]:
    """A selector pool's nodes the cluster already has take the places of the ones simulated for it, first ones first:
    an autoscaled pool with 3 of its 4 nodes running can add one, not 4 beside the 3."""
    out = list(nodes)
    places: dict[str | None, list[int]] = {}  # pool -> its simulated nodes' indexes, found once for every pool
    for index, node in enumerate(out):
        places.setdefault(node.pool, []).append(index)
    for pool in pools:
        if pool.selector is None:
            continue
        requirements = pool.selector.requirements()
        first = next((r for r in requirements if r.operator == "In"), None)
        candidates = snapshot.nodes_labelled(first.key, first.values) if first is not None else snapshot.nodes
        real = [found for found in candidates if _selects(requirements, found.label_map)]
        for index, found in zip(places.get(pool.name, ()), real, strict=False):
            made = out[index]
            labels = {**dict(found.labels), **made.labels, HOSTNAME: found.name}
            out[index] = replace(made, name=found.name, labels=labels, scale_up=False)
    return out


def merge_nodes(nodes: Sequence[Node], snapshot: ClusterSnapshot, pools: Iterable[NodePool] = ()) -> tuple[Node, ...]:
    """The blueprint's nodes with the cluster's cordons, sizes and foreign taints; then every other node.

    `pools`: the blueprint's; a selector pool's nodes the snapshot shows are the pool's, not strangers beside it."""
    nodes = _adopted(nodes, snapshot, pools)
    listed = {node.name for node in nodes}
    merged = []
    # 5,000 nodes of a few sizes: each size's quantities parsed once; each node gets its own copy
    parsed = functools.lru_cache(maxsize=None)(_allocatable)

    def allocatable_of(found: SnapshotNode) -> dict[str, int]:
        return dict(parsed(found.allocatable))

    for node in nodes:
        found = snapshot.node(node.name)
        if found is None:
            merged.append(node)
            continue
        actual = allocatable_of(found)
        allocatable = dict(node.allocatable)
        # The pool's GPU units are what gpustack's device plugin setup makes of the node, whatever it advertised
        # before; everything else the node advertises stays (cpu, memory and pods as measured, extended resources
        # of other plugins).
        gpu = any(r.startswith(DEVICE_PLUGIN_PREFIX) or is_claim(r) for r in allocatable)
        kept = {r: v for r, v in actual.items() if not (gpu and r.startswith(DEVICE_PLUGIN_PREFIX))}
        allocatable.update({r: v for r, v in kept.items() if r in (CPU, MEMORY, PODS) or r not in allocatable})
        own = {(t.key, t.effect) for t in node.taints}
        foreign = tuple(t for t in _taints(found) if (t.key, t.effect) not in own)
        cordoned = node.unschedulable or found.unschedulable
        merged.append(replace(node, allocatable=allocatable, taints=(*node.taints, *foreign), unschedulable=cordoned))
    for found in snapshot.nodes:
        if found.name not in listed:
            labels = {HOSTNAME: found.name, **dict(found.labels)}
            merged.append(Node(found.name, None, labels, _taints(found), allocatable_of(found), found.unschedulable))
    return tuple(merged)


def _shape(written: tuple[tuple[str, str], ...], priority_class: str | None, deadline: bool) -> PodShape:
    """A running pod's shape from its requests as written, its priority class and whether it has a deadline."""
    requests = tuple(sorted((r, amount(r, text)) for r, text in written if amount(r, text) > 0))
    return PodShape(requests=requests, priority_class=priority_class, terminating=deadline)


def _running_pod(
    pod: SnapshotPod,
    deadline: bool,
    classes: Mapping[str, PriorityClass],
    order: int,
    shape_of: _Shapes,
    source: Source,
) -> Pod:
    shape = shape_of(pod.requests, pod.priority_class, deadline)
    known = classes.get(pod.priority_class or "")
    never = known.preempt_never if known is not None else False
    # The Priority admission plugin wrote spec.priority when the pod was created: it is the pod's priority now,
    # whatever the class says today; only a hand-written snapshot without it falls back to the class.
    value = pod.priority if pod.priority is not None else (known.value if known is not None else 0)
    return Pod(pod.name, pod.namespace, shape, value, never, source, order=order)


def running_pods(
    snapshot: ClusterSnapshot, nodes: Sequence[Node], classes: Mapping[str, PriorityClass]
) -> list[tuple[Pod, int]]:
    """Every pod the snapshot shows bound to a node of the simulation and not finished, with its node index."""
    index = {node.name: i for i, node in enumerate(nodes)}
    out: list[tuple[Pod, int]] = []
    # A snapshot's 20,000 agents' pods write a few distinct requests: each read as amounts, and made a shape, once.
    # One frozen shape for all the pods alike also lets the quota and feasibility memos (keyed by the shape) hit.
    shape_of = functools.lru_cache(maxsize=None)(_shape)
    source = Source(None, raw=RUNNING)  # one for all: a frozen record of no pod's own
    for pod in snapshot.pods:
        if pod.holds_resources and pod.node_name in index:
            deadline = terminating(snapshot, pod)
            made = _running_pod(pod, deadline, classes, -len(snapshot.pods) + len(out), shape_of, source)
            out.append((made, index[pod.node_name]))
    return out


def _workload_of(facts: PodFacts, namespace: str, workloads: Mapping[str, list[Pod]]) -> str | None:
    """The workload a running pod is one of: gpustack's workload label on it, or its controller named after the
    workload (a Deployment's ReplicaSet `<name>-<hash>`, a StatefulSet or Job `<name>`), in the workload's namespace."""
    names = [facts.labels.get(WORKLOAD_LABEL)]
    for kind, owner in facts.owners:
        names.append(owner.rpartition("-")[0] if kind == "ReplicaSet" else owner)
    for name in names:
        pods = workloads.get(name) if name else None
        if pods is not None and pods[0].namespace == namespace:
            return name
    return None


def take_over(
    snapshot: ClusterSnapshot, demand: Demand, running: Sequence[tuple[Pod, int]]
) -> tuple[Demand, list[tuple[Pod, int]]]:
    """The demand less the replicas already running, and the running pods less those a scale-down deletes.

    A workload asking for N pods with R of them running creates N - R more (7 running, scaled to 9: two new pods,
    nine in all); with R > N the controller deletes R - N of them. A StatefulSet's running pods keep their names, so
    the ones still missing are created; other controllers name pods at random, so the first ones stand in. A
    Deployment's new pods learn its ReplicaSet's name from the running ones' pod-template-hash.
    """
    by_workload: dict[str, list[Pod]] = {}
    for pod in demand.pods:
        if pod.source.workload is not None:
            by_workload.setdefault(pod.source.workload.name, []).append(pod)
    found = {(pod.namespace, pod.name): pod for pod in snapshot.pods}
    namespaces = {pods[0].namespace for pods in by_workload.values()}
    owned: dict[str, list[int]] = {}
    replica_sets: dict[str, str] = {}
    for position, (pod, _) in enumerate(running):
        if pod.namespace not in namespaces:  # _workload_of finds no workload where none runs: skip reading its facts
            continue
        record = found.get((pod.namespace, pod.name))
        facts = pod_facts(snapshot, record) if record is not None else None
        workload = _workload_of(facts, pod.namespace, by_workload) if facts is not None else None
        if facts is None or workload is None:
            continue
        owned.setdefault(workload, []).append(position)
        template_hash = facts.labels.get(POD_TEMPLATE_HASH)
        if template_hash:
            replica_sets.setdefault(workload, f"{by_workload[workload][0].name.rpartition('-')[0]}-{template_hash}")
    if not owned:
        return demand, list(running)
    dropped: set[int] = set()  # ids of demand pods already running
    deleted: set[int] = set()  # positions in `running` a scale-down removes
    for workload, positions in owned.items():
        pods = by_workload[workload]
        names = {running[p][0].name for p in positions}
        ordered = [pod for pod in pods if pod.name in names] + [pod for pod in pods if pod.name not in names]
        dropped.update(id(pod) for pod in ordered[: len(positions)])
        deleted.update(positions[len(pods) :])
    gangs = dict(demand.gangs)
    remaining = []
    for pod in demand.pods:
        if id(pod) in dropped:
            if pod.gang is not None and pod.gang in gangs:  # a running member already counts toward its gang
                spec = gangs[pod.gang]
                gangs[pod.gang] = replace(spec, min_available=max(1, spec.min_available - 1), size=spec.size - 1)
            continue
        owner = pod.source.workload
        replica_set = replica_sets.get(owner.name) if owner is not None else None
        remaining.append(pod._replace(source=replace(pod.source, replica_set=replica_set)) if replica_set else pod)
    kept = [item for position, item in enumerate(running) if position not in deleted]
    return replace(demand, pods=tuple(remaining), gangs=gangs), kept


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
            spec: dict[str, Any] = {"hard": dict(quota.hard)}
            if quota.scopes:
                spec["scopes"] = list(quota.scopes)
            if quota.scope_selector:
                expressions = [
                    {"scopeName": r.scope, "operator": r.operator, "values": list(r.values)}
                    for r in quota.scope_selector
                ]
                spec["scopeSelector"] = {"matchExpressions": expressions}
            out.append(
                {"kind": "ResourceQuota", "metadata": {"name": quota.name, "namespace": quota.namespace}, "spec": spec}
            )
    for limits in limit_ranges(snapshot):
        metadata = limits["metadata"]
        if ("LimitRange", str(metadata.get("namespace")), str(metadata["name"])) not in taken:
            out.append(limits)
    return out


def rebound(running: Sequence[tuple[Pod, int]], nodes: Sequence[Node], subset: Sequence[Node]) -> list[tuple[Pod, int]]:
    """Running pods with their node indexes in `subset` (the nodes an autoscaled cluster always has): a pod on a node
    left out goes with it."""
    where = {id(node): index for index, node in enumerate(subset)}
    out = []
    for pod, index in running:
        new = where.get(id(nodes[index]))
        if new is not None:
            out.append((pod, new))
    return out


def volume_claims(snapshot: ClusterSnapshot, objects: Iterable[Mapping[str, Any]]) -> frozenset[tuple[str, str]] | None:
    """The PersistentVolumeClaims that exist once the plan is applied; None where the snapshot lists none."""
    listed = snapshot_claims(snapshot)
    return None if listed is None else listed | compiled_claims(objects)

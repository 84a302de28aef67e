"""The pods a plan asks for: every compiled workload's pods (scaled by a scenario), plus raw pods.

Pods are read from the compiled objects (a Deployment's template, a VolcanoJob's tasks), so the
simulator sees the same tolerations, affinity and requests that `gpustack compile` writes.
Pod names follow the controllers where they are deterministic (StatefulSet `name-0`, VolcanoJob
`job-task-0`); Deployments and Jobs get random suffixes in a cluster, so `name-0`, `name-1`... stand in.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import itertools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, NamedTuple

from gpustack.diagnostic import JsonPath
from gpustack.model import Blueprint, Workload
from gpustack.simulate.claims import claimed_devices, shared_claim, templates_by_key, with_claims
from gpustack.simulate.pods import PodShape, SpecError, parse_pod_spec
from gpustack.simulate.scenario import RawPods, Scenario, WorkloadOverride

WORKLOAD_LABEL = "gpustack.io/workload"
VOLCANO_API = "batch.volcano.sh/"
VOLCANO_SCHEDULER = "volcano"
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "Job", "JobSet", "LeaderWorkerSet")
MAX_PODS = 250_000  # a scenario can multiply replicas; past this the answer is "too many", not a long wait


class TooManyPods(ValueError):
    """The demand asks for more pods than one simulation takes."""


@dataclass(frozen=True)
class Source:
    """Where a pod's spec came from, so a hint can point at the line to change."""

    workload: Workload | None  # the blueprint's workload; None for a scenario's raw pods
    scenario: Mapping[str, JsonPath] = field(default_factory=dict)  # pod spec field -> scenario path that set it
    raw: str | None = None  # the name a scenario gave its raw pods
    replica_set: str | None = None  # a Deployment's ReplicaSet (`<name>-<pod-template-hash>`) where a snapshot shows it


class Pod(NamedTuple):
    """One pod the plan asks for (or the cluster runs): immutable, and equal only to itself, as the simulation
    tells pods apart by identity (a node's pods, the pods a preemption evicts).

    A NamedTuple, not a frozen dataclass: 150,000 of them are made at the Kubernetes limit, and a frozen dataclass's
    __init__ sets each field through object.__setattr__ (0.20 s for 130,000, against 0.07 s for a tuple, which also
    holds them in two-thirds of the memory). `_replace` stands in for dataclasses.replace.
    """

    name: str
    namespace: str
    shape: PodShape
    priority: int
    preempt_never: bool
    source: Source
    gang: str | None = None  # namespace/job of its Volcano gang
    order: int = 0  # creation order: ties in the scheduling queue go to the older pod

    @property
    def workload(self) -> str:
        """The workload (or scenario pod entry) this pod belongs to."""
        if self.source.workload is not None:
            return self.source.workload.name
        return self.source.raw or self.name

    @property
    def volcano(self) -> bool:
        return self.shape.scheduler_name == VOLCANO_SCHEDULER

    # Identity, as the frozen dataclass with eq=False had it: two pods with the same fields are still two pods.
    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return self is not other

    def __hash__(self) -> int:
        return object.__hash__(self)


@dataclass(frozen=True)
class GangSpec:
    key: str
    name: str
    namespace: str
    min_available: int
    size: int  # pods the job asks for


@dataclass(frozen=True)
class Demand:
    pods: tuple[Pod, ...]
    gangs: Mapping[str, GangSpec]
    skipped: tuple[tuple[Workload, str], ...]  # workloads not simulated, and why


@dataclass(frozen=True)
class PriorityClass:
    value: int
    preempt_never: bool
    global_default: bool = False


def priority_classes(objects: Iterable[Mapping[str, Any]]) -> dict[str, PriorityClass]:
    return {
        str(o["metadata"]["name"]): PriorityClass(
            int(o.get("value", 0)), o.get("preemptionPolicy") == "Never", bool(o.get("globalDefault", False))
        )
        for o in objects
        if o.get("kind") == "PriorityClass"
    }


def _priority_of(shape: PodShape, classes: Mapping[str, PriorityClass]) -> PriorityClass | None:
    """The pod's class; without priorityClassName the globalDefault one (highest value wins), else none (0)."""
    if shape.priority_class is not None:
        return classes.get(shape.priority_class)
    defaults = [c for c in classes.values() if c.global_default]
    return max(defaults, key=lambda c: c.value) if defaults else None


def build_demand(
    blueprint: Blueprint,
    namespaces: Mapping[str, str],
    objects: Iterable[Mapping[str, Any]],
    scenario: Scenario | None = None,
) -> Demand:
    """`namespaces`: workload name -> namespace it runs in."""
    objects = list(objects)
    priorities = _Priorities(priority_classes(objects))
    templates = templates_by_key(objects)
    pods: list[Pod] = []
    gangs: dict[str, GangSpec] = {}
    skipped: list[tuple[Workload, str]] = []
    candidates = _WorkloadObjects(objects)
    charged: set[str] = set()  # shared claims whose devices a pod already holds
    for workload in blueprint.workloads:
        namespace = namespaces[workload.name]
        obj = candidates.find(workload, namespace)
        if obj is None:
            skipped.append((workload, "compile produced no Deployment, StatefulSet or Job for it"))
            continue
        override = scenario.workloads.get(workload.name) if scenario is not None else None
        scale = scenario.scale if scenario is not None else None
        source = Source(workload, _overridden(override))
        try:
            # Stop one past the cap: 10**12 replicas must not be listed before they are counted.
            expanded = list(itertools.islice(_expand(obj, override, scale, gangs), MAX_PODS - len(pods) + 1))
            specs = {id(spec): spec for _, spec, _ in expanded}  # a workload's pods share one spec: parse it once
            bases = {key: parse_pod_spec(spec) for key, spec in specs.items()}
            shapes = {
                key: with_claims(bases[key], claimed_devices(spec, namespace, templates)) for key, spec in specs.items()
            }
        except (SpecError, KeyError, TypeError, ValueError) as error:  # a user template can render anything
            skipped.append((workload, f"its compiled object cannot be read as pods: {error}"))
            continue
        if len(pods) + len(expanded) > MAX_PODS:
            raise TooManyPods(
                f"more than {MAX_PODS} pods to simulate (workload '{workload.name}' adds {len(expanded)})"
            )
        holds = {key: shared_claim(spec, namespace) for key, spec in specs.items()}
        for name, spec, gang in expanded:
            held = holds[id(spec)]
            if held is None:
                pods.append(priorities.pod(name, namespace, shapes[id(spec)], source, gang, len(pods)))
                continue
            # A shared ResourceClaim is allocated once: its devices are the first holder's, as its quota counts them.
            shape = bases[id(spec)] if held in charged else shapes[id(spec)]
            charged.add(held)  # every holder goes where the claim is allocated (simulate/claims.py)
            shape = dataclasses.replace(shape, shared_claim=held)
            pods.append(priorities.pod(name, namespace, shape, source, gang, len(pods)))
    for raw in scenario.pods if scenario is not None else ():
        shape, source = parse_pod_spec(raw.spec), _raw_source(raw)  # the scenario loader has checked the spec
        # A claim template the plan does not hold: the pod asks for no device gpustack knows.
        with contextlib.suppress(KeyError, TypeError, ValueError):
            shape = with_claims(shape, claimed_devices(raw.spec, raw.namespace, templates))
        if len(pods) + raw.replicas > MAX_PODS:
            raise TooManyPods(f"more than {MAX_PODS} pods to simulate (scenario pod '{raw.name}' adds {raw.replicas})")
        for index in range(raw.replicas):
            name = f"{raw.name}-{index}" if raw.replicas > 1 else raw.name
            pods.append(priorities.pod(name, raw.namespace, shape, source, None, len(pods)))
    return Demand(tuple(pods), gangs, tuple(skipped))


class _Priorities:
    """Each pod's priority and preemption policy from its class, looked up once per class name (the answer depends on
    nothing else) rather than once per replica."""

    def __init__(self, classes: Mapping[str, PriorityClass]) -> None:
        self._classes = classes
        self._known: dict[str | None, tuple[int, bool]] = {}

    def pod(self, name: str, namespace: str, shape: PodShape, source: Source, gang: str | None, order: int) -> Pod:
        known = self._known.get(shape.priority_class)
        if known is None:
            priority = _priority_of(shape, self._classes)
            known = (priority.value, priority.preempt_never) if priority is not None else (0, False)
            self._known[shape.priority_class] = known
        return Pod(name, namespace, shape, known[0], known[1], source, gang, order)


class _WorkloadObjects:
    """The compiled workload objects, indexed once: by the workload label, then by name, per namespace."""

    def __init__(self, objects: list[Mapping[str, Any]]) -> None:
        self.by_label: dict[tuple[str, Any], Mapping[str, Any]] = {}
        self.by_name: dict[tuple[Any, Any], Mapping[str, Any]] = {}
        for obj in objects:
            if obj.get("kind") not in WORKLOAD_KINDS or not obj.get("metadata"):
                continue
            metadata = obj["metadata"]
            namespace = metadata.get("namespace")
            label = (metadata.get("labels") or {}).get(WORKLOAD_LABEL)
            if isinstance(label, str):  # the first object wins, as a scan in order would find it
                self.by_label.setdefault((label, namespace), obj)
            name = metadata.get("name")
            if isinstance(name, str):
                self.by_name.setdefault((name, namespace), obj)

    def find(self, workload: Workload, namespace: str) -> Mapping[str, Any] | None:
        found = self.by_label.get((workload.name, namespace))
        return found if found is not None else self.by_name.get((workload.name, namespace))


def _scaled(count: int, override: WorkloadOverride | None, scale: Decimal | None) -> int:
    if override is not None and override.replicas is not None:
        return override.replicas
    if scale is not None:
        return math.ceil(count * scale)
    return count


def _expand(
    obj: Mapping[str, Any], override: WorkloadOverride | None, scale: Decimal | None, gangs: dict[str, GangSpec]
) -> Iterable[tuple[str, Mapping[str, Any], str | None]]:
    """(pod name, pod spec, gang key) for every pod the object's controller would create."""
    name = str(obj["metadata"]["name"])
    namespace = str(obj["metadata"].get("namespace", "default"))
    spec = obj.get("spec") or {}
    if str(obj.get("apiVersion", "")).startswith(VOLCANO_API):
        yield from _volcano_pods(name, namespace, spec, override, scale, gangs)
        return
    if obj["kind"] == "JobSet":
        yield from _job_set_pods(name, namespace, spec, override, scale, gangs)
        return
    if obj["kind"] == "LeaderWorkerSet":
        yield from _leader_worker_pods(name, namespace, spec, override, scale, gangs)
        return
    if obj["kind"] == "Job":
        count = min(int(spec.get("parallelism", 1)), int(spec.get("completions", spec.get("parallelism", 1))))
    else:
        count = int(spec.get("replicas", 1))
    pod_spec = _apply(spec["template"]["spec"], override)
    for index in range(_scaled(count, override, scale)):
        yield f"{name}-{index}", pod_spec, None


def _volcano_pods(
    name: str,
    namespace: str,
    spec: Mapping[str, Any],
    override: WorkloadOverride | None,
    scale: Decimal | None,
    gangs: dict[str, GangSpec],
) -> Iterable[tuple[str, Mapping[str, Any], str | None]]:
    tasks = spec.get("tasks") or []
    total = sum(int(t.get("replicas", 1)) for t in tasks)
    wanted = _scaled(total, override, scale)
    factor = Decimal(wanted) / total if total else Decimal(0)
    declared = int(spec.get("minAvailable", total))
    # All-or-none stays all-or-none when scaled; a partial gang scales with the job.
    minimum = wanted if declared >= total else min(wanted, math.ceil(declared * factor))
    key = f"{namespace}/{name}"
    sizes = _shares([int(t.get("replicas", 1)) for t in tasks], wanted)
    gangs[key] = GangSpec(key, name, namespace, minimum, sum(sizes))
    for task, size in zip(tasks, sizes, strict=True):
        pod_spec = dict(_apply(task["template"]["spec"], override))
        # The Volcano controller gives every pod the job's scheduler and, unless the task says otherwise, its priority.
        pod_spec["schedulerName"] = spec.get("schedulerName", VOLCANO_SCHEDULER)
        if "priorityClassName" in spec and "priorityClassName" not in pod_spec:
            pod_spec["priorityClassName"] = spec["priorityClassName"]
        for index in range(size):
            yield f"{name}-{task.get('name', 'task')}-{index}", pod_spec, key


def _job_set_pods(
    name: str,
    namespace: str,
    spec: Mapping[str, Any],
    override: WorkloadOverride | None,
    scale: Decimal | None,
    gangs: dict[str, GangSpec],
) -> Iterable[tuple[str, Mapping[str, Any], str | None]]:
    """Every pod of every replicated job, one group: `<jobset>-<job>-<job index>-<pod index>` as the controller
    names their hostnames. A scenario's count scales the pods of each Job."""
    key = f"{namespace}/{name}"
    expanded = []
    for replicated in spec.get("replicatedJobs") or []:
        job = replicated["template"]["spec"]
        count = min(int(job.get("parallelism", 1)), int(job.get("completions", job.get("parallelism", 1))))
        pod_spec = _apply(job["template"]["spec"], override)
        for job_index in range(int(replicated.get("replicas", 1))):
            for index in range(_scaled(count, override, scale)):
                expanded.append((f"{name}-{replicated['name']}-{job_index}-{index}", pod_spec, key))
    gangs[key] = GangSpec(key, name, namespace, len(expanded), len(expanded))
    yield from expanded


def _leader_worker_pods(
    name: str,
    namespace: str,
    spec: Mapping[str, Any],
    override: WorkloadOverride | None,
    scale: Decimal | None,
    gangs: dict[str, GangSpec],
) -> Iterable[tuple[str, Mapping[str, Any], str | None]]:
    """Each group a gang of its own: leader `<lws>-<group>`, workers `<lws>-<group>-<index>` (LeaderWorkerSet's
    names). A scenario's count scales the groups; a group's size is fixed by the model it serves."""
    group = spec["leaderWorkerTemplate"]
    size = int(group.get("size", 1))
    worker = _apply(group["workerTemplate"]["spec"], override)
    leader = _apply(group["leaderTemplate"]["spec"], override) if "leaderTemplate" in group else worker
    for replica in range(_scaled(int(spec.get("replicas", 1)), override, scale)):
        key = f"{namespace}/{name}-{replica}"
        gangs[key] = GangSpec(key, f"{name}-{replica}", namespace, size, size)
        yield f"{name}-{replica}", leader, key
        for index in range(1, size):
            yield f"{name}-{replica}-{index}", worker, key


def _shares(replicas: list[int], wanted: int) -> list[int]:
    """`wanted` pods split over tasks in proportion to their replicas (largest remainder, ties to the later task):
    scaling a master + workers job keeps one master and gives the rest to the workers."""
    total = sum(replicas)
    if total == 0:
        return [0 for _ in replicas]
    exact = [Decimal(r) * wanted / total for r in replicas]
    sizes = [int(x) for x in exact]
    order = sorted(range(len(replicas)), key=lambda i: (exact[i] - sizes[i], i), reverse=True)
    for i in order[: wanted - sum(sizes)]:
        sizes[i] += 1
    return sizes


def _apply(pod_spec: Mapping[str, Any], override: WorkloadOverride | None) -> Mapping[str, Any]:
    if override is None or (not override.pod_spec and override.resources is None):
        return pod_spec
    out = copy.deepcopy(dict(pod_spec))
    out.update(copy.deepcopy(dict(override.pod_spec)))
    if override.resources is not None:
        out["containers"] = [
            {**c, "resources": copy.deepcopy(dict(override.resources))} for c in out.get("containers", [])
        ]
    return out


def _overridden(override: WorkloadOverride | None) -> dict[str, JsonPath]:
    if override is None:
        return {}
    fields = {key: (*override.path, "podSpec", key) for key in override.pod_spec}
    if override.resources is not None:
        fields["resources"] = (*override.path, "resources")
    return fields


def _raw_source(raw: RawPods) -> Source:
    spec = raw.spec
    fields = {key: (*raw.path, "spec", key) for key in spec}
    fields["resources"] = (*raw.path, "spec", "containers")
    fields["pod"] = raw.path
    return Source(None, fields, raw.name)

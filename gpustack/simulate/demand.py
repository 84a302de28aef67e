"""The pods a plan asks for: every compiled workload's pods (scaled by a scenario), plus raw pods.

Pods are read from the compiled objects (a Deployment's template, a VolcanoJob's tasks), so the
simulator sees the same tolerations, affinity and requests that `gpustack compile` writes.
Pod names follow the controllers where they are deterministic (StatefulSet `name-0`, VolcanoJob
`job-task-0`); Deployments and Jobs get random suffixes in a cluster, so `name-0`, `name-1`... stand in.
"""

from __future__ import annotations

import contextlib
import copy
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from gpustack.diagnostic import JsonPath
from gpustack.model import Blueprint, Workload
from gpustack.simulate.claims import claimed_devices, templates_by_key, with_claims
from gpustack.simulate.pods import PodShape, SpecError, parse_pod_spec
from gpustack.simulate.scenario import RawPods, Scenario, WorkloadOverride

WORKLOAD_LABEL = "gpustack.io/workload"
VOLCANO_API = "batch.volcano.sh/"
VOLCANO_SCHEDULER = "volcano"
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "Job")
MAX_PODS = 250_000  # a scenario can multiply replicas; past this the answer is "too many", not a long wait


class TooManyPods(ValueError):
    """The demand asks for more pods than one simulation takes."""


@dataclass(frozen=True)
class Source:
    """Where a pod's spec came from, so a hint can point at the line to change."""

    workload: Workload | None  # the blueprint's workload; None for a scenario's raw pods
    scenario: Mapping[str, JsonPath] = field(default_factory=dict)  # pod spec field -> scenario path that set it
    raw: str | None = None  # the name a scenario gave its raw pods


@dataclass(frozen=True, eq=False)
class Pod:
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
    classes = priority_classes(objects)
    templates = templates_by_key(objects)
    pods: list[Pod] = []
    gangs: dict[str, GangSpec] = {}
    skipped: list[tuple[Workload, str]] = []
    for workload in blueprint.workloads:
        namespace = namespaces[workload.name]
        obj = _find(objects, workload, namespace)
        if obj is None:
            skipped.append((workload, "compile produced no Deployment, StatefulSet or Job for it"))
            continue
        override = scenario.workloads.get(workload.name) if scenario is not None else None
        scale = scenario.scale if scenario is not None else None
        source = Source(workload, _overridden(override))
        try:
            expanded = list(_expand(obj, override, scale, gangs))
            specs = {id(spec): spec for _, spec, _ in expanded}  # a workload's pods share one spec: parse it once
            shapes = {
                key: with_claims(parse_pod_spec(spec), claimed_devices(spec, namespace, templates))
                for key, spec in specs.items()
            }
        except (SpecError, KeyError, TypeError, ValueError) as error:  # a user template can render anything
            skipped.append((workload, f"its compiled object cannot be read as pods: {error}"))
            continue
        if len(pods) + len(expanded) > MAX_PODS:
            raise TooManyPods(
                f"more than {MAX_PODS} pods to simulate (workload '{workload.name}' adds {len(expanded)})"
            )
        for name, spec, gang in expanded:
            pods.append(_pod(name, namespace, shapes[id(spec)], classes, source, gang, len(pods)))
    for raw in scenario.pods if scenario is not None else ():
        shape, source = parse_pod_spec(raw.spec), _raw_source(raw)  # the scenario loader has checked the spec
        # A claim template the plan does not hold: the pod asks for no device gpustack knows.
        with contextlib.suppress(KeyError, TypeError, ValueError):
            shape = with_claims(shape, claimed_devices(raw.spec, raw.namespace, templates))
        if len(pods) + raw.replicas > MAX_PODS:
            raise TooManyPods(f"more than {MAX_PODS} pods to simulate (scenario pod '{raw.name}' adds {raw.replicas})")
        for index in range(raw.replicas):
            name = f"{raw.name}-{index}" if raw.replicas > 1 else raw.name
            pods.append(_pod(name, raw.namespace, shape, classes, source, None, len(pods)))
    return Demand(tuple(pods), gangs, tuple(skipped))


def _pod(
    name: str,
    namespace: str,
    shape: PodShape,
    classes: Mapping[str, PriorityClass],
    source: Source,
    gang: str | None,
    order: int,
) -> Pod:
    priority = _priority_of(shape, classes)
    value = priority.value if priority is not None else 0
    never = priority.preempt_never if priority is not None else False
    return Pod(name, namespace, shape, value, never, source, gang, order)


def _find(objects: list[Mapping[str, Any]], workload: Workload, namespace: str) -> Mapping[str, Any] | None:
    candidates = [o for o in objects if o.get("kind") in WORKLOAD_KINDS and o.get("metadata")]
    for obj in candidates:
        labels = obj["metadata"].get("labels") or {}
        if labels.get(WORKLOAD_LABEL) == workload.name and obj["metadata"].get("namespace") == namespace:
            return obj
    return next(
        (
            o
            for o in candidates
            if o["metadata"].get("name") == workload.name and o["metadata"].get("namespace") == namespace
        ),
        None,
    )


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
    sizes = [math.ceil(int(t.get("replicas", 1)) * factor) for t in tasks]
    gangs[key] = GangSpec(key, name, namespace, minimum, sum(sizes))
    for task, size in zip(tasks, sizes, strict=True):
        pod_spec = dict(_apply(task["template"]["spec"], override))
        # The Volcano controller gives every pod the job's scheduler and, unless the task says otherwise, its priority.
        pod_spec["schedulerName"] = spec.get("schedulerName", VOLCANO_SCHEDULER)
        if "priorityClassName" in spec and "priorityClassName" not in pod_spec:
            pod_spec["priorityClassName"] = spec["priorityClassName"]
        for index in range(size):
            yield f"{name}-{task.get('name', 'task')}-{index}", pod_spec, key


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

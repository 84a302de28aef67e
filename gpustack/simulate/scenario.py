"""The optional demand scenario: how many pods each workload runs, and hand-written pod specs.

A blueprint compiled by gpustack cannot make the seed's mistakes (tolerations are derived from
taints, selectors from pools), so a scenario may override parts of a workload's compiled pod spec,
or add raw pods, to reproduce what a person would have written by hand:

    scale: 2                          # every workload's replicas (workers) x 2, rounded up
    workloads:
      llm-inference:
        replicas: 6                   # workers: for a VolcanoJob
        podSpec:                      # replace these pod spec fields of the compiled template
          tolerations: [{key: gpu, operator: Equal, value: "true", effect: NoSchedule}]
          nodeSelector: {accelerator: nvidia-a100}
          affinity: {nodeAffinity: {...}}
          priorityClassName: gpustack-low
          schedulerName: default-scheduler
        resources: {limits: {nvidia.com/mig-3g.20gb: 1}}   # every container's resources
    pods:                             # pods nobody compiled, as a person would write them
      - {name: handmade, namespace: search-prod, replicas: 2, spec: {containers: [...], tolerations: [...]}}

Loaded with gpustack's hardened YAML loader; every problem is a diagnostic at its line.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from gpustack.codes import COMBINATION, MISSING_FIELD, NOT_ALLOWED_VALUE, OUT_OF_RANGE, UNKNOWN_FIELD, WRONG_TYPE
from gpustack.diagnostic import Diagnostic, DiagnosticError, JsonPath, Severity
from gpustack.load import Document, parse_document
from gpustack.model import Blueprint
from gpustack.simulate.pods import SpecError, parse_pod_spec

KIND = "SimulationScenario"
API_VERSION = "gpustack.io/v1alpha1"
_TOP = ("apiVersion", "kind", "description", "scale", "workloads", "pods")
_OVERRIDE = ("replicas", "workers", "podSpec", "resources")
POD_SPEC_FIELDS = ("tolerations", "nodeSelector", "affinity", "priorityClassName", "schedulerName", "nodeName")
_RAW_POD = ("name", "namespace", "replicas", "spec")
MAX_REPLICAS = 100_000


@dataclass(frozen=True)
class WorkloadOverride:
    path: JsonPath  # of the override in the scenario
    replicas: int | None = None
    pod_spec: Mapping[str, Any] = field(default_factory=dict)
    resources: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class RawPods:
    path: JsonPath
    name: str
    namespace: str
    replicas: int
    spec: Mapping[str, Any]


@dataclass(frozen=True)
class Scenario:
    file: str
    scale: Decimal | None = None
    workloads: Mapping[str, WorkloadOverride] = field(default_factory=dict)
    pods: tuple[RawPods, ...] = ()
    document: Document | None = None  # for pointing hints at scenario lines


def load_scenario(text: str | bytes, file: str, blueprint: Blueprint) -> Scenario:
    """The scenario in `text`; DiagnosticError with every problem found otherwise."""
    return scenario_from(parse_document(text, file), blueprint)


def scenario_from(document: Document, blueprint: Blueprint) -> Scenario:
    """The scenario a loaded document describes; DiagnosticError with every problem found otherwise."""
    file = document.file
    problems: list[Diagnostic] = []

    def fail(code: str, path: JsonPath, message: str, hint: str | None = None, *, key: bool = False) -> None:
        problems.append(Diagnostic(code, Severity.ERROR, message, document.span(path, key=key), path, hint))

    data = document.data
    if not isinstance(data, Mapping):
        fail(WRONG_TYPE, (), "a scenario is a mapping (scale, workloads, pods)")
        raise DiagnosticError(problems)
    _unknown_keys(data, (), _TOP, fail)
    if data.get("kind", KIND) != KIND:
        fail(NOT_ALLOWED_VALUE, ("kind",), f"kind must be {KIND}")
    if data.get("apiVersion", API_VERSION) != API_VERSION:
        fail(NOT_ALLOWED_VALUE, ("apiVersion",), f"apiVersion must be {API_VERSION}")
    scale = _scale(data.get("scale"), fail)
    names = [w.name for w in blueprint.workloads]
    overrides = {}
    raw_workloads = data.get("workloads") or {}
    if not isinstance(raw_workloads, Mapping):
        fail(WRONG_TYPE, ("workloads",), "workloads is a mapping of workload name -> override")
        raw_workloads = {}
    for name, raw in raw_workloads.items():
        path: JsonPath = ("workloads", name)
        if name not in names:
            close = difflib.get_close_matches(str(name), names, n=1)
            hint = f"did you mean '{close[0]}'?" if close else f"the blueprint's workloads: {', '.join(names)}"
            fail(UNKNOWN_FIELD, path, f"the blueprint has no workload '{name}'", hint, key=True)
            continue
        override = _override(raw, path, fail)
        if override is not None:
            overrides[str(name)] = override
    pods = _raw_pods(data.get("pods"), fail)
    if problems:
        raise DiagnosticError(problems)
    return Scenario(file, scale, overrides, pods, document)


def _unknown_keys(data: Mapping[str, Any], path: JsonPath, allowed: Iterable[str], fail: Any) -> None:
    allowed = tuple(allowed)
    for key in data:
        if key not in allowed:
            close = difflib.get_close_matches(str(key), allowed, n=1)
            hint = f"did you mean '{close[0]}'?" if close else f"allowed here: {', '.join(allowed)}"
            fail(UNKNOWN_FIELD, (*path, key), f"unknown field '{key}'", hint, key=True)


def _scale(value: Any, fail: Any) -> Decimal | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1000:
        fail(OUT_OF_RANGE, ("scale",), "scale is a number from 0 to 1000 (a factor on every workload's replicas)")
        return None
    return Decimal(str(value))


def _count(value: Any, path: JsonPath, fail: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_REPLICAS:
        fail(OUT_OF_RANGE, path, f"expected a whole number from 0 to {MAX_REPLICAS}")
        return None
    return value


def _override(raw: Any, path: JsonPath, fail: Any) -> WorkloadOverride | None:
    if not isinstance(raw, Mapping):
        fail(WRONG_TYPE, path, "a workload override is a mapping (replicas, workers, podSpec, resources)")
        return None
    _unknown_keys(raw, path, _OVERRIDE, fail)
    if "replicas" in raw and "workers" in raw:
        fail(COMBINATION, path, "give replicas or workers, not both", key=True)
    count_key = "workers" if "workers" in raw else "replicas"
    replicas = _count(raw[count_key], (*path, count_key), fail) if count_key in raw else None
    pod_spec = raw.get("podSpec") or {}
    if not isinstance(pod_spec, Mapping):
        fail(WRONG_TYPE, (*path, "podSpec"), "podSpec is a mapping of pod spec fields")
        pod_spec = {}
    _unknown_keys(pod_spec, (*path, "podSpec"), POD_SPEC_FIELDS, fail)
    resources = raw.get("resources")
    # Checked apart, so a bad toleration and a bad quantity are both reported.
    for trial, base in ((dict(pod_spec), ("podSpec",)), ({"containers": [{"resources": resources or {}}]}, ())):
        try:
            parse_pod_spec(trial)
        except SpecError as error:
            where = ("resources", *error.path[3:]) if error.path[:1] == ("containers",) else (*base, *error.path)
            fail(WRONG_TYPE, (*path, *where), error.message)
    return WorkloadOverride(path, replicas, dict(pod_spec), resources)


def _raw_pods(raw: Any, fail: Any) -> tuple[RawPods, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        fail(WRONG_TYPE, ("pods",), "pods is a list of {name, namespace, replicas, spec}")
        return ()
    out = []
    for index, item in enumerate(raw):
        path: JsonPath = ("pods", index)
        if not isinstance(item, Mapping):
            fail(WRONG_TYPE, path, "a pod is a mapping {name, namespace, replicas, spec}")
            continue
        _unknown_keys(item, path, _RAW_POD, fail)
        missing = [k for k in ("name", "namespace", "spec") if k not in item]
        for key in missing:
            fail(MISSING_FIELD, path, f"a pod needs '{key}'")
        if missing:
            continue
        replicas = _count(item.get("replicas", 1), (*path, "replicas"), fail)
        try:
            parse_pod_spec(item["spec"])
        except SpecError as error:
            fail(WRONG_TYPE, (*path, "spec", *error.path), error.message)
            continue
        if replicas is not None:
            out.append(RawPods(path, str(item["name"]), str(item["namespace"]), replicas, item["spec"]))
    return tuple(out)

"""What the scheduler reads from a pod spec: requests, tolerations, node selector and node affinity.

Parsed from plain Kubernetes-shaped data (a compiled workload's pod template, or a pod a
scenario writes by hand), so the simulator sees exactly the fields that would be applied.
Quantities become integers: cpu in millicores, memory and everything else in base units.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from gpustack.diagnostic import JsonPath
from gpustack.quantity import parse_quantity
from gpustack.simulate.snapshot_facts import claim_names
from gpustack.taints import Toleration

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
NO_SCHEDULE_EFFECTS = ("NoSchedule", "NoExecute")
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
DEFAULT_SCHEDULER = "default-scheduler"


class SpecError(ValueError):
    """A pod spec field the simulator cannot read; `path` is relative to the spec."""

    def __init__(self, path: JsonPath, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


@dataclass(frozen=True)
class Taint:
    key: str
    value: str | None
    effect: str


# The taint a cordoned node acts as if it had (NodeUnschedulable tolerates pods that tolerate it).
UNSCHEDULABLE_TAINT: Final = Taint("node.kubernetes.io/unschedulable", None, "NoSchedule")


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: str
    values: tuple[str, ...]
    field: bool = False  # matchFields (metadata.name) rather than matchExpressions

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        present = node_name if self.field else labels.get(self.key)
        if self.operator == "Exists":
            return present is not None
        if self.operator == "DoesNotExist":
            return present is None
        if self.operator == "NotIn":
            return present is None or present not in self.values
        if present is None:
            return False
        if self.operator == "In":
            return present in self.values
        try:  # Gt/Lt compare integers; a label that is not one never matches
            number, bound = int(present), int(self.values[0])
        except (ValueError, IndexError):
            return False
        return number > bound if self.operator == "Gt" else number < bound


@dataclass(frozen=True)
class Term:
    """A NodeSelectorTerm: every requirement must hold; a term with none matches no node."""

    requirements: tuple[Requirement, ...]

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        return bool(self.requirements) and all(r.matches(labels, node_name) for r in self.requirements)


@dataclass(frozen=True)
class Container:
    """One container's requests (a limit without a request sets it, as API defaulting does) and limits."""

    name: str
    requests: tuple[tuple[str, int], ...]
    limits: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class PodShape:
    """Everything about a pod that filters and scores read; equal shapes schedule alike."""

    requests: tuple[tuple[str, int], ...]
    limits: tuple[tuple[str, int], ...] = ()  # read only by ResourceQuota (limits.cpu, limits.memory)
    tolerations: tuple[Toleration, ...] = ()
    node_selector: tuple[tuple[str, str], ...] = ()
    required: tuple[Term, ...] | None = None  # None: no required node affinity
    preferred: tuple[tuple[int, Term], ...] = ()
    priority_class: str | None = None
    scheduler_name: str = DEFAULT_SCHEDULER
    node_name: str | None = None  # spec.nodeName: bound at creation, past the scheduler, admitted by the kubelet
    shared_claim: str | None = None  # `namespace/name` of a ResourceClaim held by name: its pods go where it is
    terminating: bool = False  # spec.activeDeadlineSeconds is set (the Terminating quota scope)
    claims: tuple[str, ...] = ()  # the PersistentVolumeClaims its volumes mount (VolumeBinding)
    containers: tuple[Container, ...] = ()  # each container's own amounts: LimitRanger judges them one by one

    def request(self, resource: str) -> int:
        return dict(self.requests).get(resource, 0)

    def tolerates(self, taint: Taint) -> bool:
        return any(t.tolerates(taint) for t in self.tolerations)

    def matches_node(self, labels: Mapping[str, str], node_name: str) -> bool:
        """nodeSelector and required node affinity (the NodeAffinity filter)."""
        if any(labels.get(key) != value for key, value in self.node_selector):
            return False
        return self.required is None or any(term.matches(labels, node_name) for term in self.required)

    @functools.cached_property
    def mentions_hostname(self) -> bool:
        """Whether this pod picks nodes by name, so nodes of one pool cannot be judged alike.

        Worked out once per shape (every placement asks; 150,000 pods share a few hundred shapes). A cached_property
        writes the instance's __dict__, not its fields: the shape stays frozen, equal and hashable as before."""
        keys = [key for key, _ in self.node_selector]
        for term in (*(self.required or ()), *(t for _, t in self.preferred)):
            keys += [r.key if not r.field else "metadata.name" for r in term.requirements]
        return any(k in ("kubernetes.io/hostname", "metadata.name") for k in keys)


def amount(resource: str, value: Any) -> int:
    """A quantity in the simulator's integer unit for `resource` (millicores for cpu), rounded up."""
    number = parse_quantity(value)
    if resource == CPU:
        number *= 1000
    return math.ceil(number)


def parse_pod_spec(spec: Any) -> PodShape:
    """The PodShape of a core/v1 PodSpec; SpecError for a field that is not what Kubernetes accepts."""
    spec = _mapping(spec, ())
    return PodShape(
        requests=_requests(spec, "requests"),
        limits=_requests(spec, "limits"),
        tolerations=tuple(_toleration(t, ("tolerations", i)) for i, t in enumerate(_list(spec, "tolerations"))),
        node_selector=tuple(sorted(_string_map(spec.get("nodeSelector"), ("nodeSelector",)).items())),
        required=_required(spec),
        preferred=_preferred(spec),
        priority_class=_optional_string(spec, "priorityClassName"),
        scheduler_name=_optional_string(spec, "schedulerName") or DEFAULT_SCHEDULER,
        node_name=_optional_string(spec, "nodeName") or None,
        terminating=spec.get("activeDeadlineSeconds") is not None,
        claims=claim_names(spec),
        containers=_containers(spec),
    )


def _containers(spec: Mapping[str, Any]) -> tuple[Container, ...]:
    out = []
    for key in ("containers", "initContainers"):
        for index, raw in enumerate(_list(spec, key)):
            path = (key, index)
            name = _optional_string(_mapping(raw, path), "name", path) or ""
            requests = _container_resources(raw, path, "requests")
            limits = _container_resources(raw, path, "limits")
            out.append(Container(name, tuple(sorted(requests.items())), tuple(sorted(limits.items()))))
    return tuple(out)


def _requests(spec: Mapping[str, Any], which: str) -> tuple[tuple[str, int], ...]:
    """Effective pod requests (or limits): the containers' sum, or the largest init container if that is more."""
    total: dict[str, int] = {}
    for index, container in enumerate(_list(spec, "containers")):
        for resource, value in _container_resources(container, ("containers", index), which).items():
            total[resource] = total.get(resource, 0) + value
    for index, container in enumerate(_list(spec, "initContainers")):
        for resource, value in _container_resources(container, ("initContainers", index), which).items():
            total[resource] = max(total.get(resource, 0), value)
    return tuple(sorted((r, v) for r, v in total.items() if v > 0))


def _container_resources(container: Any, path: JsonPath, which: str) -> dict[str, int]:
    resources = _mapping(_mapping(container, path).get("resources") or {}, (*path, "resources"))
    limits = _mapping(resources.get("limits") or {}, (*path, "resources", "limits"))
    requests = _mapping(resources.get("requests") or {}, (*path, "resources", "requests"))
    # A limit without a request sets the request (extended resources must have request == limit anyway).
    merged = {**limits, **requests} if which == "requests" else dict(limits)
    out: dict[str, int] = {}
    for resource, value in merged.items():
        where = (*path, "resources", "requests" if which == "requests" and resource in requests else "limits", resource)
        try:
            out[str(resource)] = amount(str(resource), value)
        except ValueError as error:
            raise SpecError(where, str(error)) from error
    return out


def _toleration(raw: Any, path: JsonPath) -> Toleration:
    data = _mapping(raw, path)
    operator = _optional_string(data, "operator", path) or "Equal"
    if operator not in ("Equal", "Exists"):
        raise SpecError((*path, "operator"), f"toleration operator must be Equal or Exists, not {operator!r}")
    effect = _optional_string(data, "effect", path)
    if effect and effect not in EFFECTS:
        raise SpecError((*path, "effect"), f"toleration effect must be one of {', '.join(EFFECTS)}, not {effect!r}")
    key = _optional_string(data, "key", path)
    if not key and operator != "Exists":
        raise SpecError(path, "a toleration without a key must use operator: Exists")
    return Toleration(key, operator, _optional_string(data, "value", path), effect)


def _node_affinity(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    affinity = _mapping(spec.get("affinity") or {}, ("affinity",))
    return _mapping(affinity.get("nodeAffinity") or {}, ("affinity", "nodeAffinity"))


def _required(spec: Mapping[str, Any]) -> tuple[Term, ...] | None:
    field = "requiredDuringSchedulingIgnoredDuringExecution"
    base: JsonPath = ("affinity", "nodeAffinity", field)
    required = _node_affinity(spec).get(field)
    if required is None:
        return None
    selector = _mapping(required, base)
    terms = _list(selector, "nodeSelectorTerms", base)
    return tuple(_term(term, (*base, "nodeSelectorTerms", i)) for i, term in enumerate(terms))


def _preferred(spec: Mapping[str, Any]) -> tuple[tuple[int, Term], ...]:
    field = "preferredDuringSchedulingIgnoredDuringExecution"
    base: JsonPath = ("affinity", "nodeAffinity", field)
    out = []
    for index, raw in enumerate(_list(_node_affinity(spec), field, base[:-1])):
        path = (*base, index)
        item = _mapping(raw, path)
        weight = item.get("weight")
        if not isinstance(weight, int) or isinstance(weight, bool) or not 1 <= weight <= 100:
            raise SpecError((*path, "weight"), "a preferred term's weight must be an integer from 1 to 100")
        out.append((weight, _term(item.get("preference"), (*path, "preference"))))
    return tuple(out)


def _term(raw: Any, path: JsonPath) -> Term:
    data = _mapping(raw, path)
    requirements = [
        _requirement(r, (*path, "matchExpressions", i)) for i, r in enumerate(_list(data, "matchExpressions", path))
    ]
    for index, raw_field in enumerate(_list(data, "matchFields", path)):
        requirement = _requirement(raw_field, (*path, "matchFields", index))
        if requirement.key != "metadata.name":
            raise SpecError((*path, "matchFields", index, "key"), "matchFields supports only metadata.name")
        requirements.append(Requirement(requirement.key, requirement.operator, requirement.values, field=True))
    return Term(tuple(requirements))


def _requirement(raw: Any, path: JsonPath) -> Requirement:
    data = _mapping(raw, path)
    key = _optional_string(data, "key", path)
    operator = _optional_string(data, "operator", path)
    if not key:
        raise SpecError(path, "a node selector requirement needs a key")
    if operator not in OPERATORS:
        raise SpecError((*path, "operator"), f"operator must be one of {', '.join(OPERATORS)}, not {operator!r}")
    values = tuple(str(v) for v in _list(data, "values", path))
    if operator in ("In", "NotIn") and not values:
        raise SpecError((*path, "values"), f"operator {operator} needs at least one value")
    if operator in ("Exists", "DoesNotExist") and values:
        raise SpecError((*path, "values"), f"operator {operator} takes no values")
    if operator in ("Gt", "Lt") and len(values) != 1:
        raise SpecError((*path, "values"), f"operator {operator} takes exactly one integer value")
    return Requirement(key, operator, values)


# --- shape helpers: each names the path of what is wrong ----------------------------------------


def _mapping(value: Any, path: JsonPath) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise SpecError(path, f"expected a mapping, got {type(value).__name__}")
    return value


def _list(data: Mapping[str, Any], key: str, path: JsonPath = ()) -> list[Any]:
    value = data.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise SpecError((*path, key), f"expected a list, got {type(value).__name__}")
    return value


def _optional_string(data: Mapping[str, Any], key: str, path: JsonPath = ()) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise SpecError((*path, key), f"expected a string, got {type(value).__name__}")
    return str(value)


def _string_map(value: Any, path: JsonPath) -> dict[str, str]:
    if value is None:
        return {}
    data = _mapping(value, path)
    out = {}
    for key, item in data.items():
        if not isinstance(item, str):
            raise SpecError((*path, str(key)), f"label values are strings; quote {item!r}")
        out[str(key)] = item
    return out

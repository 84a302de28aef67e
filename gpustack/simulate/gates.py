"""What stops a pod before any node is judged: the LimitRanger admission plugin, and VolumeBinding's PreFilter.

LimitRanger (plugin/pkg/admission/limitranger/admission.go) runs before ResourceQuota. Its mutation gives each
container the LimitRange's `default` limits and `defaultRequest` requests it lacks; its validation then checks every
container (init containers too) against each `type: Container` item, `min` before `max`, and refuses the pod with
every failure (utilerrors.NewAggregate: one message alone, several as `[a, b]`, duplicates dropped), in the API
server's words: `pods "x" is forbidden: maximum nvidia.com/gpu.shared usage per Container is 0, but limit is 1`
(maxConstraint), `... is 2.  No limit is specified`, `minimum ... but request is ...` (minConstraint). Go walks the
item's resources in map order, so the cluster may list several failures in another order; here they are sorted.
Pod-level items and maxLimitRequestRatio are not modelled. The defaults are applied for this check only: what the
scheduler and ResourceQuota count is still the pod as written.

VolumeBinding's PreFilter (pkg/scheduler/framework/plugins/volumebinding, podHasPVCs) looks up each
PersistentVolumeClaim a pod mounts; a missing one makes the pod UnschedulableAndUnresolvable on every node, with the
lister's NotFound text `persistentvolumeclaim "data" not found` as the FitError's PreFilter message:
`0/N nodes are available: persistentvolumeclaim "data" not found.` and preemption's `N Preemption is not helpful for
scheduling`. Claims are known only from a snapshot that lists them (and the plan's own).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gpustack.simulate.demand import Pod
from gpustack.simulate.messages import NOT_HELPFUL, KubeVersion, fit_error, post_filter, preemption_fit_error
from gpustack.simulate.pods import Container, PodShape, amount
from gpustack.simulate.quota import format_quantity

CONTAINER = "Container"


@dataclass(frozen=True)
class LimitItem:
    """One `type: Container` item of a LimitRange, amounts in the simulator's units."""

    default: Mapping[str, int]
    default_request: Mapping[str, int]
    minimum: Mapping[str, int]
    maximum: Mapping[str, int]


@dataclass(frozen=True)
class Gates:
    limits: Mapping[str, tuple[LimitItem, ...]] = field(default_factory=dict)  # namespace -> its Container items
    claims: frozenset[tuple[str, str]] | None = None  # (namespace, name) of every PVC; None: unknown, not checked

    def limit_violations(self, namespace: str, shape: PodShape) -> str | None:
        """What LimitRanger finds wrong with a pod of this shape in this namespace (the API server's refusal is
        `forbidden(pod, this)`), or None when every container is within range: a function of the two, so a workload's
        replicas share one answer."""
        items = self.limits.get(namespace, ())
        if not items:
            return None
        errors: list[str] = []
        for item in items:
            for container in shape.containers:
                errors += _violations(item, container)
        unique = list(dict.fromkeys(errors))
        if not unique:
            return None
        return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"

    def missing_claim(self, pod: Pod) -> str | None:
        """The first PersistentVolumeClaim the pod mounts that does not exist, as the PVC lister says it."""
        if self.claims is None:
            return None
        for claim in pod.shape.claims:
            if (pod.namespace, claim) not in self.claims:
                return f'persistentvolumeclaim "{claim}" not found'
        return None


def forbidden(pod: Pod, violations: str) -> str:
    """The API server's refusal of a pod, in its words, for what LimitRanger found (`Gates.limit_violations`)."""
    return f'pods "{pod.name}" is forbidden: {violations}'


def claim_not_found(version: KubeVersion, nodes: int, reason: str, claims: bool) -> str:
    """The FailedScheduling message of a pod VolumeBinding's PreFilter rejects: every node alike, none helped by
    preemption."""
    message = fit_error(nodes, {}).removesuffix(":") + ": " + reason + "."
    preemption = preemption_fit_error(version, nodes, {NOT_HELPFUL: nodes})
    post = post_filter(version, preemption, claims=claims)
    return f"{message} {post}" if post else message


def _violations(item: LimitItem, container: Container) -> list[str]:
    requests = {**item.default_request, **dict(container.requests)}
    limits = {**item.default, **dict(container.limits)}
    out = []
    for resource in sorted(item.minimum):
        enforced = item.minimum[resource]
        if resource not in requests:
            out.append(
                f"minimum {resource} usage per {CONTAINER} is {_text(resource, enforced)}.  No request is specified"
            )
        elif requests[resource] < enforced:
            out.append(
                f"minimum {resource} usage per {CONTAINER} is {_text(resource, enforced)}, "
                f"but request is {_text(resource, requests[resource])}"
            )
        elif resource in limits and limits[resource] < enforced:
            out.append(
                f"minimum {resource} usage per {CONTAINER} is {_text(resource, enforced)}, "
                f"but limit is {_text(resource, limits[resource])}"
            )
    for resource in sorted(item.maximum):
        enforced = item.maximum[resource]
        if resource not in limits:
            out.append(
                f"maximum {resource} usage per {CONTAINER} is {_text(resource, enforced)}.  No limit is specified"
            )
        elif limits[resource] > enforced:
            out.append(
                f"maximum {resource} usage per {CONTAINER} is {_text(resource, enforced)}, "
                f"but limit is {_text(resource, limits[resource])}"
            )
        elif resource in requests and requests[resource] > enforced:
            out.append(
                f"maximum {resource} usage per {CONTAINER} is {_text(resource, enforced)}, "
                f"but request is {_text(resource, requests[resource])}"
            )
    return out


def _text(resource: str, value: int) -> str:
    return format_quantity(resource, value)


def _amounts(raw: Any) -> dict[str, int]:
    out = {}
    for resource, value in (raw if isinstance(raw, Mapping) else {}).items():
        try:
            out[str(resource)] = amount(str(resource), value)
        except ValueError:  # a LimitRange the API server would not have stored: nothing to enforce
            continue
    return out


def gates_from(objects: Iterable[Mapping[str, Any]], claims: frozenset[tuple[str, str]] | None = None) -> Gates:
    """The LimitRanges of the plan (and snapshot) by namespace, LimitRanger's order (by name), and the known PVCs."""
    ranges = sorted(
        (str(o["metadata"].get("namespace") or "default"), str(o["metadata"]["name"]), o.get("spec") or {})
        for o in objects
        if o.get("kind") == "LimitRange" and isinstance(o.get("metadata"), Mapping)
    )
    limits: dict[str, list[LimitItem]] = {}
    for namespace, _, spec in ranges:
        for raw in spec.get("limits") or ():
            if not isinstance(raw, Mapping) or raw.get("type") != CONTAINER:
                continue
            default = _amounts(raw.get("default"))
            # The API server defaults defaultRequest to default (SetDefaults_LimitRangeItem).
            request = {**default, **_amounts(raw.get("defaultRequest"))}
            item = LimitItem(default, request, _amounts(raw.get("min")), _amounts(raw.get("max")))
            limits.setdefault(namespace, []).append(item)
    return Gates({ns: tuple(items) for ns, items in limits.items()}, claims)

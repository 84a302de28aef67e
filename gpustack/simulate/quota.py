"""ResourceQuota admission: pods are counted against their namespace's quotas when created.

The API server refuses a pod whose creation would take any tracked resource over its hard limit,
in its own words (kube-scheduler-messages.md section 5):
`pods "x" is forbidden: exceeded quota: <name>, requested: <k=v>, used: <k=v>, limited: <k=v>`,
listing only the exceeded resources, keys sorted, quantities in canonical form.
Pods that are admitted count whether or not they are ever scheduled.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gpustack.simulate.claims import device_quota_key, is_claim
from gpustack.simulate.demand import Pod
from gpustack.simulate.pods import CPU, MEMORY, PodShape, amount

_CPU_KEYS = ("cpu", "requests.cpu", "limits.cpu")
_MEMORY_KEYS = ("memory", "requests.memory", "limits.memory")


Scope = tuple[str, str, tuple[str, ...]]  # (scopeName, operator, values): spec.scopes entries are (name, Exists, ())


@dataclass(frozen=True)
class Quota:
    name: str
    namespace: str
    hard: Mapping[str, int]  # quota key (requests.nvidia.com/gpu, pods, limits.cpu...) -> limit
    scopes: tuple[Scope, ...] = ()  # spec.scopes and spec.scopeSelector: the quota binds pods that match them all

    def applies_to(self, pod: Pod) -> bool:
        return all(_matches(scope, pod) for scope in self.scopes)


def _matches(scope: Scope, pod: Pod) -> bool:
    """podMatchesScopeFunc (pkg/quota/v1/evaluator/core/pods.go), for one scope requirement."""
    name, operator, values = scope
    shape = pod.shape
    if name in ("Terminating", "NotTerminating"):
        return shape.terminating == (name == "Terminating")  # activeDeadlineSeconds set
    if name in ("BestEffort", "NotBestEffort"):
        # QoS BestEffort: no container requests or limits a non-zero cpu or memory.
        best_effort = not any(r in (CPU, MEMORY) for r, _ in (*shape.requests, *shape.limits))
        return best_effort == (name == "BestEffort")
    if name == "PriorityClass":
        if operator == "Exists":
            return shape.priority_class is not None
        # A label selector over {"PriorityClass": <name, "" without one>}: the key is always there.
        value = shape.priority_class or ""
        if operator == "In":
            return value in values
        if operator == "NotIn":
            return value not in values
        return False  # DoesNotExist: the key always exists
    # CrossNamespacePodAffinity: the simulator reads no pod affinity, so no simulated pod has it.
    return False


@dataclass(frozen=True)
class Rejection:
    quota: Quota
    message: str
    exceeded: tuple[str, ...]  # the quota keys that would go over


@dataclass
class QuotaLedger:
    quotas: tuple[Quota, ...]
    used: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)
    _by_namespace: dict[str, list[Quota]] = field(default_factory=dict, init=False, repr=False)
    # id(shape) -> (shape, pod_usage): holding the shape keeps its id from being reused.
    _usages: dict[int, tuple[PodShape, dict[str, int]]] = field(default_factory=dict, init=False, repr=False)
    # (namespace, id(shape)) -> (shape, _applicable's answer)
    _bindings: dict[tuple[str, int], tuple[PodShape, list[tuple[Quota, list[tuple[str, int, int]]]]]] = field(
        default_factory=dict, init=False, repr=False
    )

    def __post_init__(self) -> None:
        for quota in sorted(self.quotas, key=_name):  # a stable sort: equal names keep their order
            self._by_namespace.setdefault(quota.namespace, []).append(quota)

    def _usage(self, pod: Pod) -> Mapping[str, int]:
        """pod_usage(pod), worked out once per shape: a pod's usage is its shape's, and a workload's replicas share
        one shape (150,000 pods, a few hundred shapes). Read only, never changed."""
        known = self._usages.get(id(pod.shape))
        if known is None or known[0] is not pod.shape:
            known = self._usages[id(pod.shape)] = (pod.shape, pod_usage(pod))
        return known[1]

    def _applicable(self, pod: Pod) -> list[tuple[Quota, list[tuple[str, int, int]]]]:
        """The quotas that bind the pod, each with (key, limit, the pod's amount) of every key it counts for: a
        function of the namespace and the shape (scopes read only the shape), worked out once for a workload's pods
        rather than for each of 130,000."""
        key = (pod.namespace, id(pod.shape))
        known = self._bindings.get(key)
        if known is None or known[0] is not pod.shape:
            usage = self._usage(pod)
            applicable = [
                (quota, [(k, limit, usage[k]) for k, limit in quota.hard.items() if usage.get(k, 0)])
                for quota in self._by_namespace.get(pod.namespace, ())
                if quota.applies_to(pod)
            ]
            known = self._bindings[key] = (pod.shape, applicable)
        return known[1]

    def admit(self, pod: Pod) -> Rejection | None:
        """Count the pod against its namespace's quotas, or say why the API server refuses it."""
        applicable = self._applicable(pod)
        for quota, counted in applicable:
            used = self.used.get((quota.namespace, quota.name), {})
            exceeded = tuple(sorted(k for k, limit, wanted in counted if used.get(k, 0) + wanted > limit))
            if exceeded:
                return Rejection(quota, forbidden(pod.name, quota, exceeded, self._usage(pod), used), exceeded)
        for quota, counted in applicable:
            used = self.used.setdefault((quota.namespace, quota.name), {})
            for key, _, wanted in counted:  # a key the pod does not count for stays as it is
                used[key] = used.get(key, 0) + wanted
        return None

    def admit_alike(self, pod: Pod, count: int) -> int:
        """How many of `count` pods alike (`pod`'s namespace and shape) the quotas admit one after another, counted:
        the first ones, each admitted as `admit` would, until one would go over. A refused pod counts for nothing,
        so every pod after it is refused too (`admit` says why, pod by pod)."""
        admitted = count
        for quota, counted in self._applicable(pod):
            used = self.used.get((quota.namespace, quota.name), {})
            for key, limit, wanted in counted:
                admitted = min(admitted, max(0, (limit - used.get(key, 0)) // wanted))
        if admitted:
            for quota, counted in self._applicable(pod):
                used = self.used.setdefault((quota.namespace, quota.name), {})
                for key, _, wanted in counted:
                    used[key] = used.get(key, 0) + wanted * admitted
        return admitted

    def charge(self, pod: Pod) -> None:
        """Count a pod that already exists (a cluster snapshot's): the API server admitted it long ago."""
        usage = self._usage(pod)
        for quota in self._by_namespace.get(pod.namespace, ()):  # not every quota per pod: 20,000 bound pods, 500
            if quota.applies_to(pod):  # tenants' quotas made reading a snapshot quadratic
                used = self.used.setdefault((quota.namespace, quota.name), {})
                for key in quota.hard:
                    used[key] = used.get(key, 0) + usage.get(key, 0)

    def release(self, pod: Pod) -> None:
        """Stop counting a pod that ended (Failed or Succeeded): quota tracks only pods that can still run."""
        usage = self._usage(pod)
        for quota in self._by_namespace.get(pod.namespace, ()):
            if quota.applies_to(pod):
                used = self.used.get((quota.namespace, quota.name), {})
                for key in quota.hard:
                    used[key] = used.get(key, 0) - usage.get(key, 0)

    def use(self, quota: Quota) -> dict[str, int]:
        used = self.used.get((quota.namespace, quota.name), {})
        return {key: used.get(key, 0) for key in quota.hard}


def _name(quota: Quota) -> str:
    return quota.name


def pod_usage(pod: Pod) -> dict[str, int]:
    """What one pod counts for, under every quota key that can track it."""
    requests = dict(pod.shape.requests)
    limits = dict(pod.shape.limits)
    usage = {"pods": 1, "count/pods": 1}
    for resource, value in requests.items():
        if is_claim(resource):  # the pod's claim, created with it from its template, counts its devices per class
            usage[device_quota_key(resource)] = usage.get(device_quota_key(resource), 0) + value
            continue
        usage[f"requests.{resource}"] = value
        if resource in (CPU, MEMORY):
            usage[resource] = value
    for resource in (CPU, MEMORY):
        if resource in limits:
            usage[f"limits.{resource}"] = limits[resource]
    return usage


def forbidden(
    pod: str, quota: Quota, keys: Iterable[str], requested: Mapping[str, int], used: Mapping[str, int]
) -> str:
    keys = sorted(keys)

    def listing(values: Mapping[str, int]) -> str:
        return ",".join(f"{k}={format_quantity(k, values.get(k, 0))}" for k in keys)

    return (
        f'pods "{pod}" is forbidden: exceeded quota: {quota.name}, requested: {listing(requested)}, '
        f"used: {listing(used)}, limited: {listing(quota.hard)}"
    )


def format_quantity(key: str, value: int) -> str:
    """Quantity.String() for the key's unit: cpu as cores or millicores, memory with a binary suffix."""
    if key in _CPU_KEYS:
        return str(value // 1000) if value % 1000 == 0 else f"{value}m"
    if key in _MEMORY_KEYS and value:
        for suffix, size in (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if value % size == 0:
                return f"{value // size}{suffix}"
    return str(value)


def quotas_from(objects: Iterable[Mapping[str, Any]]) -> tuple[Quota, ...]:
    """The ResourceQuota objects of a plan (and a snapshot), with their scopes."""
    out = []
    for obj in objects:
        if obj.get("kind") != "ResourceQuota":
            continue
        spec = obj.get("spec") or {}
        hard = {str(k): _quota_amount(str(k), v) for k, v in (spec.get("hard") or {}).items()}
        out.append(
            Quota(str(obj["metadata"]["name"]), str(obj["metadata"].get("namespace", "default")), hard, _scopes(spec))
        )
    return tuple(sorted(out, key=lambda q: (q.namespace, q.name)))


def _quota_amount(key: str, value: Any) -> int:
    resource = key.removeprefix("requests.").removeprefix("limits.")
    return amount(CPU if resource == CPU else resource, value)


def _scopes(spec: Mapping[str, Any]) -> tuple[Scope, ...]:
    scopes: list[Scope] = [(str(name), "Exists", ()) for name in spec.get("scopes") or ()]
    for expression in (spec.get("scopeSelector") or {}).get("matchExpressions") or ():
        values = tuple(str(v) for v in expression.get("values") or ())
        scopes.append((str(expression.get("scopeName")), str(expression.get("operator")), values))
    return tuple(scopes)

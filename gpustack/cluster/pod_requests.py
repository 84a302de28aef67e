"""A pod's effective requests, read from its spec in a snapshot; pods written alike are read once.

A snapshot of 20,000 running pods writes a few dozen distinct `resources` blocks: each agent's containers ask for
the same cpu and memory on every node. Reading one (mappings checked, quantities parsed, containers summed, init
containers' maxima) cost about 9 us a pod, 0.18 s at kube-limit 10x; its key (`request_key`) costs a fifth of that.
A key is made only where the reading depends on nothing but the key: containers and init containers as lists of
mappings, each one's `resources` a mapping (or absent) whose `requests` and `limits` are mappings of strings (or
absent), as kubectl writes them. Anything else gets no key and is read as always, with its diagnostics; a result is
kept only when reading it found nothing wrong, so a hit never hides a diagnostic.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from decimal import Decimal
from typing import Any, Protocol

from gpustack.diagnostic import Diagnostic, JsonPath

_FIELDS = ("containers", "initContainers")


class Reading(Protocol):
    """What snapshot._Reader offers the reading of requests."""

    problems: list[Diagnostic]
    requests: dict[Hashable, tuple[tuple[str, str], ...]]  # request_key -> a pod's requests

    def fail(self, path: JsonPath, message: str, expected: str, hint: str) -> None: ...

    def amount(self, text: str) -> Decimal: ...

    def mapping(self, value: Any, path: JsonPath, what: str) -> Mapping[str, Any] | None: ...

    def string_map(self, value: Any, path: JsonPath, what: str) -> tuple[tuple[str, str], ...]: ...


def _container_requests(reader: Reading, containers: Any, path: JsonPath) -> list[dict[str, Decimal]]:
    out = []
    for index, raw in enumerate(containers if isinstance(containers, list) else []):
        container = reader.mapping(raw, (*path, index), "a container") or {}
        resources = raw_resources if isinstance(raw_resources := container.get("resources"), dict) else {}
        requests = dict(
            reader.string_map(resources.get("requests"), (*path, index, "resources", "requests"), "request")
        )
        # Kubernetes defaults a missing request to the limit; extended resources are only ever set as limits.
        limits = dict(reader.string_map(resources.get("limits"), (*path, index, "resources", "limits"), "limit"))
        merged = {**limits, **requests}
        amounts = {}
        for name, amount in merged.items():
            try:
                amounts[name] = reader.amount(amount)
            except ValueError:
                where = (*path, index, "resources", "requests" if name in requests else "limits", name)
                reader.fail(where, f"resource {name!r} is {amount!r}", "a Kubernetes quantity", "e.g. 2, 500m, 8Gi")
        out.append(amounts)
    return out


def pod_requests(reader: Reading, spec: Mapping[str, Any], path: JsonPath) -> tuple[tuple[str, str], ...]:
    """A pod's effective requests: the containers' sum, or an init container's larger request; read once per
    `request_key` where reading it found nothing wrong."""
    key = request_key(spec)
    known = reader.requests.get(key) if key is not None else None
    if known is not None:
        return known
    problems = len(reader.problems)
    found = _read_requests(reader, spec, path)
    if key is not None and len(reader.problems) == problems:
        reader.requests[key] = found
    return found


def _read_requests(reader: Reading, spec: Mapping[str, Any], path: JsonPath) -> tuple[tuple[str, str], ...]:
    total: dict[str, Decimal] = {}
    for requests in _container_requests(reader, spec.get("containers"), (*path, "spec", "containers")):
        for name, amount in requests.items():
            total[name] = total.get(name, Decimal(0)) + amount
    for requests in _container_requests(reader, spec.get("initContainers"), (*path, "spec", "initContainers")):
        for name, amount in requests.items():
            total[name] = max(total.get(name, Decimal(0)), amount)
    return tuple(sorted((name, _format_amount(amount)) for name, amount in total.items()))


def _format_amount(amount: Decimal) -> str:
    return str(int(amount)) if amount == int(amount) else f"{int(amount * 1000)}m"


def request_key(spec: Mapping[str, Any]) -> Hashable | None:
    """What the pod's effective requests depend on, or None where that is more than its resource strings."""
    key: list[object] = []
    for field in _FIELDS:
        containers = spec.get(field)
        if containers is None:
            key.append(None)
            continue
        if type(containers) is not list:
            return None
        part: list[object] = []
        for container in containers:
            if type(container) is not dict:
                return None
            resources = container.get("resources")
            if resources is None:
                part.append(None)
                continue
            if type(resources) is not dict:  # read as no resources at all, with no diagnostic: not worth a key
                return None
            pair = (_strings(resources.get("requests")), _strings(resources.get("limits")))
            if pair[0] is None or pair[1] is None:
                return None
            part.append(pair)
        key.append(tuple(part))
    return tuple(key)


def _strings(value: Any) -> tuple[tuple[str, str], ...] | None:
    """A mapping of strings as its items (() for none); None for anything else (an int is read as its string, but
    1 and True are one key: only strings get a key)."""
    if value is None:
        return ()
    if type(value) is not dict:
        return None
    items = tuple(value.items())
    for name, amount in items:
        if type(name) is not str or type(amount) is not str:
            return None
    return items

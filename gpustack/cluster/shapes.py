"""The shapes of a snapshot's fields that no typed record keeps, checked where snapshot.py reads each object.

simulate reads a few fields from the snapshot document itself (simulate/snapshot_facts.py): a pod's labels, owner
references, volumes and `activeDeadlineSeconds`, and the LimitRanges and PersistentVolumeClaims the snapshot holds.
A value of the wrong shape there would be skipped without a word, and the simulation would quietly answer about
another cluster (a LimitRange whose maximum is not a quantity refuses nothing; a taint list that is a string taints
nothing). Each is reported here at its line instead (GS020), as the typed records' fields are. So is an object the
snapshot lists twice (the same kind, API group, namespace and name): `kubectl get` never prints one twice, so two
are two outputs appended by hand, and which one the cluster holds cannot be told.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from gpustack.diagnostic import JsonPath
from gpustack.load import Document
from gpustack.names import SNAPSHOT_COMMAND
from gpustack.quantity import parse_quantity

HINT = f"give the unedited output of `{SNAPSHOT_COMMAND}`"
LIMIT_FIELDS = ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio")


class _Reader(Protocol):
    """What snapshot.py's reader offers (the one place that words a malformed object)."""

    document: Document

    def fail(self, path: JsonPath, message: str, expected: str, hint: str) -> None: ...

    def mapping(self, value: Any, path: JsonPath, what: str) -> Mapping[str, Any] | None: ...

    def name(self, item: Mapping[str, Any], path: JsonPath) -> tuple[str, str | None] | None: ...

    def string_map(self, value: Any, path: JsonPath, what: str) -> tuple[tuple[str, str], ...]: ...

    def integer(self, value: Any, path: JsonPath, what: str, default: int) -> int: ...


def kind_of(value: Any) -> str:
    """A value's YAML kind in a diagnostic's words."""
    if value is None:
        return "empty"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "a mapping"


def _listed(reader: _Reader, value: Any, path: JsonPath, what: str) -> list[tuple[Mapping[str, Any], JsonPath]]:
    """The mappings of a list field (absent: none); a list that is not one, or an item that is not a mapping, is
    reported."""
    if value is None:
        return []
    if not isinstance(value, list):
        reader.fail(path, f"{what} list is {kind_of(value)}", "a list", HINT)
        return []
    out = []
    for index, item in enumerate(value):
        found = reader.mapping(item, (*path, index), f"a {what} entry")
        if found is not None:
            out.append((found, (*path, index)))
    return out


def _string(reader: _Reader, value: Any, path: JsonPath, what: str) -> None:
    if value is not None and not isinstance(value, str):
        reader.fail(path, f"{what} is {kind_of(value)}", "a string", HINT)


def _quantities(reader: _Reader, value: Any, path: JsonPath, what: str) -> None:
    for name, amount in reader.string_map(value, path, what):
        try:
            parse_quantity(amount)
        except ValueError:
            reader.fail((*path, name), f"{what} {name!r} is {amount!r}", "a Kubernetes quantity", "e.g. 8, 500m, 64Gi")


def _fields(item: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    """A mapping field of an object, empty where it is not one (its reader says so)."""
    value = item.get(name)
    return value if isinstance(value, dict) else {}


def check_node(reader: _Reader, spec: Mapping[str, Any], path: JsonPath) -> None:
    """A Node's taints are a list (each taint is read by snapshot.py) and `unschedulable` a boolean."""
    taints = spec.get("taints")
    if taints is not None and not isinstance(taints, list):
        reader.fail((*path, "spec", "taints"), f"the taint list is {kind_of(taints)}", "a list of taints", HINT)
    cordon = spec.get("unschedulable")
    if cordon is not None and not isinstance(cordon, bool):
        reader.fail((*path, "spec", "unschedulable"), f"unschedulable is {kind_of(cordon)}", "true or false", HINT)


def check_pod(reader: _Reader, item: Mapping[str, Any], path: JsonPath) -> None:
    """The fields of a Pod simulate reads besides its record: node, phase, labels, owners, volumes, deadline. Every pod
    of a 13,000-node snapshot passes here: the well-formed case is a few type tests, paths are built only to report."""
    meta, spec, status = (_fields(item, name) for name in ("metadata", "spec", "status"))
    node, phase, labels = spec.get("nodeName"), status.get("phase"), meta.get("labels")
    if node is not None and type(node) is not str:
        _string(reader, node, (*path, "spec", "nodeName"), "nodeName")
    if phase is not None and type(phase) is not str:
        _string(reader, phase, (*path, "status", "phase"), "phase")
    if labels is not None and not (type(labels) is dict and all(type(v) is str for v in labels.values())):
        reader.string_map(labels, (*path, "metadata", "labels"), "label")
    if meta.get("ownerReferences") is not None:
        owners = (*path, "metadata", "ownerReferences")
        for owner, where in _listed(reader, meta["ownerReferences"], owners, "ownerReferences"):
            for field in ("kind", "name"):
                if not isinstance(owner.get(field), str) or not owner[field]:
                    reader.fail(where, f"an owner reference without {field}", f"{field} as a string", HINT)
    if spec.get("volumes") is not None:
        for volume, where in _listed(reader, spec["volumes"], (*path, "spec", "volumes"), "volume"):
            if "persistentVolumeClaim" not in volume:
                continue
            claim = reader.mapping(volume["persistentVolumeClaim"], (*where, "persistentVolumeClaim"), "the claim")
            if claim is not None and (not isinstance(claim.get("claimName"), str) or not claim["claimName"]):
                reader.fail((*where, "persistentVolumeClaim"), "a claim volume without claimName", "claimName", HINT)
    deadline = spec.get("activeDeadlineSeconds")
    if deadline is not None:
        reader.integer(deadline, (*path, "spec", "activeDeadlineSeconds"), "activeDeadlineSeconds", 0)


def check_limit_range(reader: _Reader, item: Mapping[str, Any], path: JsonPath) -> None:
    """A LimitRange as simulate applies it (LimitRanger): each limit a mapping with a type and quantity maps."""
    if reader.name(item, path) is None:
        return
    spec = reader.mapping(item.get("spec"), (*path, "spec"), "spec") or {}
    for limit, where in _listed(reader, spec.get("limits"), (*path, "spec", "limits"), "limit"):
        _string(reader, limit.get("type"), (*where, "type"), "the limit's type")
        for field in LIMIT_FIELDS:
            _quantities(reader, limit.get(field), (*where, field), field)


def check_claim(reader: _Reader, item: Mapping[str, Any], path: JsonPath) -> None:
    """A PersistentVolumeClaim is only looked up by its namespace and name."""
    reader.name(item, path)


HELM_RELEASE_ANNOTATION = "meta.helm.sh/release-name"  # Helm writes it on every object a release makes


def helm_release(reader: _Reader, item: Mapping[str, Any], path: JsonPath) -> str | None:
    """The Helm release that made an object, from its annotations (checked as a string map); None where none did."""
    meta = _fields(item, "metadata")
    annotations = dict(reader.string_map(meta.get("annotations"), (*path, "metadata", "annotations"), "annotation"))
    return annotations.get(HELM_RELEASE_ANNOTATION) or None


def object_key(item: Mapping[str, Any], kind: str) -> tuple[str, str, str, str] | None:
    """(apiVersion, kind, namespace, name) of an object that has a name; None otherwise (its reader says why). The
    apiVersion tells KAI's Queues from Volcano's; kubectl prints an object in one version only."""
    meta = item.get("metadata")
    if type(meta) is not dict or type(name := meta.get("name")) is not str:
        return None
    api_version, namespace = item.get("apiVersion"), meta.get("namespace")
    return (
        api_version if type(api_version) is str else "",
        kind,
        namespace if type(namespace) is str else "",
        name,
    )


def check_unique(
    reader: _Reader, seen: dict[tuple[str, str, str, str], JsonPath], item: Mapping[str, Any], kind: str, path: JsonPath
) -> None:
    """Report the second of two objects of one kind, group, namespace and name, naming where the first is."""
    key = object_key(item, kind)
    if key is None:
        return
    if key not in seen:
        seen[key] = path
        return
    span = reader.document.span(seen[key])
    _, _, namespace, name = key
    where = f"{namespace}/{name}" if namespace else name
    reader.fail(
        (*path, "metadata", "name"),
        f"{kind} {where} is listed twice" + (f" (first at line {span.start.line})" if span is not None else ""),
        "each object once",
        "the snapshot joins outputs that overlap: keep one of them (which one the cluster holds cannot be told)",
    )

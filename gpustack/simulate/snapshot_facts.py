"""What a snapshot's objects say beyond the typed records simulate needs: whose pod each one is, and which claims exist.

Read from the snapshot document itself, at each pod's path, so the snapshot reader keeps only what every command
reads: a pod's labels and owner references (a running pod that IS a blueprint workload's pod counts once, as the
workload's, not as a stranger beside it), the PersistentVolumeClaims its volumes mount, whether it has an
`activeDeadlineSeconds` (the Terminating quota scope), and the PersistentVolumeClaims the snapshot holds. `kubectl get
-o yaml` writes these fields in their one shape, and cluster/shapes.py reports any other as the snapshot is read
(GS020), so what is skipped here is only what a snapshot built in code leaves out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gpustack.cluster.snapshot import ClusterSnapshot, SnapshotPod
from gpustack.diagnostic import JsonPath

PVC_KIND = "PersistentVolumeClaim"


@dataclass(frozen=True)
class PodFacts:
    labels: Mapping[str, str]
    owners: tuple[tuple[str, str], ...]  # (kind, name) of each ownerReference
    claims: tuple[str, ...]  # the PersistentVolumeClaims its volumes name
    terminating: bool  # spec.activeDeadlineSeconds is set: what the Terminating quota scope counts


NO_FACTS = PodFacts({}, (), (), False)


def _at(data: Any, path: JsonPath) -> Any:
    for step in path:
        if isinstance(step, int) and isinstance(data, list) and 0 <= step < len(data):
            data = data[step]
        elif isinstance(step, str) and isinstance(data, dict):
            data = data.get(step)
        else:
            return None
    return data


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def pod_facts(snapshot: ClusterSnapshot, pod: SnapshotPod) -> PodFacts:
    """The labels, owners, claims and deadline of a snapshot pod (none for a snapshot built in code)."""
    if snapshot.document is None:
        return NO_FACTS
    item = _mapping(_at(snapshot.document.data, pod.path))
    meta, spec = _mapping(item.get("metadata")), _mapping(item.get("spec"))
    labels = {str(k): str(v) for k, v in _mapping(meta.get("labels")).items() if isinstance(v, (str, int, float))}
    owners = tuple(
        (str(ref.get("kind")), str(ref.get("name")))
        for ref in map(_mapping, _list(meta.get("ownerReferences")))
        if ref.get("kind") and ref.get("name")
    )
    return PodFacts(labels, owners, claim_names(spec), spec.get("activeDeadlineSeconds") is not None)


def terminating(snapshot: ClusterSnapshot, pod: SnapshotPod) -> bool:
    """`pod_facts(snapshot, pod).terminating` alone: every running pod needs it, and its labels, owners and claims
    (two thirds of pod_facts' cost, 20,000 times at kube-limit 10x) only where `take_over` or the gates ask."""
    if snapshot.document is None:
        return NO_FACTS.terminating
    spec = _mapping(_mapping(_at(snapshot.document.data, pod.path)).get("spec"))
    return spec.get("activeDeadlineSeconds") is not None


def claim_names(spec: Mapping[str, Any]) -> tuple[str, ...]:
    """The PersistentVolumeClaims a pod spec's volumes mount, in volume order (ephemeral volumes make their own)."""
    out = []
    for volume in map(_mapping, _list(spec.get("volumes"))):
        claim = _mapping(volume.get("persistentVolumeClaim")).get("claimName")
        if isinstance(claim, str) and claim:
            out.append(claim)
    return tuple(out)


def _objects(snapshot: ClusterSnapshot, kind: str) -> list[tuple[str, Mapping[str, Any]]]:
    """(namespace, object) of every object of `kind` with a name, in the snapshot's order."""
    if kind not in snapshot.kinds or snapshot.document is None:
        return []
    data = _mapping(snapshot.document.data)
    out = []
    for item in map(_mapping, _list(data.get("items")) if "items" in data else [data]):
        meta = _mapping(item.get("metadata"))
        if item.get("kind") == kind and isinstance(meta.get("name"), str):
            namespace = meta.get("namespace")
            out.append((namespace if isinstance(namespace, str) else "default", item))
    return out


def volume_claims(snapshot: ClusterSnapshot) -> frozenset[tuple[str, str]] | None:
    """(namespace, name) of every PersistentVolumeClaim the snapshot holds; None when it holds none, so a snapshot
    made without `persistentvolumeclaims` never leaves a pod pending for a claim it simply did not list."""
    if PVC_KIND not in snapshot.kinds:
        return None
    return frozenset((namespace, str(item["metadata"]["name"])) for namespace, item in _objects(snapshot, PVC_KIND))


def limit_ranges(snapshot: ClusterSnapshot) -> list[dict[str, Any]]:
    """The snapshot's LimitRanges as plan objects (kind, metadata with the namespace, spec.limits)."""
    return [
        {
            "kind": "LimitRange",
            "metadata": {"name": str(item["metadata"]["name"]), "namespace": namespace},
            "spec": {
                "limits": [
                    limit for limit in _list(_mapping(item.get("spec")).get("limits")) if isinstance(limit, dict)
                ]
            },
        }
        for namespace, item in _objects(snapshot, "LimitRange")
    ]


def compiled_claims(objects: Iterable[Mapping[str, Any]]) -> set[tuple[str, str]]:
    """The PersistentVolumeClaims the plan itself creates (a workload template may write them)."""
    return {
        (str(o["metadata"].get("namespace") or "default"), str(o["metadata"]["name"]))
        for o in objects
        if o.get("kind") == PVC_KIND and isinstance(o.get("metadata"), Mapping) and "name" in o["metadata"]
    }

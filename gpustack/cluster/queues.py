"""Scheduler Queues in a cluster snapshot: KAI Scheduler's (`scheduling.run.ai/v2`) and Volcano's
(`scheduling.volcano.sh/v1beta1`), both of kind `Queue` and cluster-scoped, told apart by their API group.

Import reads them to tell which tenants KAI or Volcano schedules (cluster/tenants.py), drift to compare the KAI
Queues gpustack compiles with what the cluster holds (cluster/drift.py). Only the fields those two read are kept:
a KAI Queue's parent and its `spec.resources.{cpu,gpu,memory}.{quota,limit,overQuotaWeight}` (numbers in KAI's
units, -1 unlimited), a Volcano Queue's weight and reclaimable. snapshot.py builds them with its reader, so a
malformed Queue is reported at its line (GS020) like any other object.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol

from gpustack.diagnostic import JsonPath

KAI_GROUP = "scheduling.run.ai"
VOLCANO_GROUP = "scheduling.volcano.sh"
KAI_RESOURCES = ("cpu", "gpu", "memory")
KAI_FIELDS = ("quota", "limit", "overQuotaWeight")


class _Reader(Protocol):
    """What snapshot.py's reader offers (the one place that words a malformed object)."""

    def fail(self, path: JsonPath, message: str, expected: str, hint: str) -> None: ...

    def mapping(self, value: Any, path: JsonPath, what: str) -> Mapping[str, Any] | None: ...

    def name(self, item: Mapping[str, Any], path: JsonPath) -> tuple[str, str | None] | None: ...

    def string_map(self, value: Any, path: JsonPath, what: str) -> tuple[tuple[str, str], ...]: ...


@dataclass(frozen=True)
class SnapshotQueue:
    name: str
    scheduler: str  # "kai" or "volcano"
    labels: tuple[tuple[str, str], ...]
    path: JsonPath
    parent: str | None = None  # KAI: spec.parentQueue
    # KAI: (resource, field) -> the number written, for cpu/gpu/memory x quota/limit/overQuotaWeight
    resources: tuple[tuple[tuple[str, str], Decimal], ...] = ()
    weight: int | None = None  # Volcano: spec.weight
    reclaimable: bool | None = None  # Volcano: spec.reclaimable

    def resource(self, name: str, field: str) -> Decimal | None:
        return dict(self.resources).get((name, field))


def queue_scheduler(item: Mapping[str, Any]) -> str | None:
    """'kai' or 'volcano' for a Queue of either API group; None for any other group's Queue (ignored)."""
    api_version = item.get("apiVersion")
    group = api_version.split("/", 1)[0] if isinstance(api_version, str) else ""
    return {KAI_GROUP: "kai", VOLCANO_GROUP: "volcano"}.get(group)


def read_queue(reader: _Reader, item: Mapping[str, Any], path: JsonPath) -> SnapshotQueue | None:
    scheduler = queue_scheduler(item)
    named = reader.name(item, path) if scheduler is not None else None
    if scheduler is None or named is None:
        return None
    meta = item.get("metadata") or {}
    labels = reader.string_map(meta.get("labels"), (*path, "metadata", "labels"), "label")
    spec = reader.mapping(item.get("spec"), (*path, "spec"), "spec") or {}
    if scheduler == "volcano":
        weight, reclaimable = spec.get("weight"), spec.get("reclaimable")
        return SnapshotQueue(
            named[0],
            scheduler,
            labels,
            path,
            weight=weight if isinstance(weight, int) and not isinstance(weight, bool) else None,
            reclaimable=reclaimable if isinstance(reclaimable, bool) else None,
        )
    parent = spec.get("parentQueue")
    found: list[tuple[tuple[str, str], Decimal]] = []
    resources = reader.mapping(spec.get("resources"), (*path, "spec", "resources"), "spec.resources") or {}
    for resource in KAI_RESOURCES:
        where = (*path, "spec", "resources", resource)
        values = reader.mapping(resources.get(resource), where, f"spec.resources.{resource}") or {}
        for field in KAI_FIELDS:
            value = values.get(field)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                reader.fail((*where, field), f"{resource} {field} is {value!r}", "a number", "as KAI's Queue CRD has")
                continue
            found.append(((resource, field), Decimal(str(value))))
    return SnapshotQueue(
        named[0], scheduler, labels, path, parent if isinstance(parent, str) and parent else None, tuple(found)
    )

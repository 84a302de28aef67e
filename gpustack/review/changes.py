"""What was added, removed or changed, field by field: cluster settings, pools, tenants and workloads."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from gpustack.review.fields import Fields, cluster_fields, pool_fields, tenant_fields, workload_fields
from gpustack.review.snapshot import Snapshot


class Status(StrEnum):
    ADDED = "added"
    REMOVED = "removed"
    CHANGED = "changed"


class Kind(StrEnum):
    CLUSTER = "cluster"
    POOL = "pool"
    TENANT = "tenant"
    WORKLOAD = "workload"


@dataclass(frozen=True)
class FieldChange:
    field: str
    before: Any  # None: the field was not set
    after: Any

    @property
    def added_items(self) -> list[Any]:
        """For list fields: members only the new version has (a long node list reads better as a delta)."""
        if not isinstance(self.before, list) or not isinstance(self.after, list):
            return []
        return [item for item in self.after if item not in self.before]

    @property
    def removed_items(self) -> list[Any]:
        if not isinstance(self.before, list) or not isinstance(self.after, list):
            return []
        return [item for item in self.before if item not in self.after]


@dataclass(frozen=True)
class EntityChange:
    kind: Kind
    name: str
    status: Status
    fields: tuple[FieldChange, ...]  # every field for added/removed entities, so the report can show what went


def field_changes(before: Fields, after: Fields) -> tuple[FieldChange, ...]:
    """Changed fields in the new version's order, then fields only the old version had."""
    names = list(after) + [name for name in before if name not in after]
    return tuple(
        FieldChange(name, before.get(name), after.get(name)) for name in names if before.get(name) != after.get(name)
    )


def _entity_changes(kind: Kind, before: Mapping[str, Fields], after: Mapping[str, Fields]) -> list[EntityChange]:
    changes: list[EntityChange] = []
    for name in sorted(set(before) | set(after)):
        if name not in before:
            changes.append(EntityChange(kind, name, Status.ADDED, field_changes({}, after[name])))
        elif name not in after:
            changes.append(EntityChange(kind, name, Status.REMOVED, field_changes(before[name], {})))
        else:
            fields = field_changes(before[name], after[name])
            if fields:
                changes.append(EntityChange(kind, name, Status.CHANGED, fields))
    return changes


def _flatten(snapshot: Snapshot, kind: Kind) -> dict[str, Fields]:
    blueprint = snapshot.blueprint
    if blueprint is None:
        return {}
    flatteners: dict[Kind, Callable[[], dict[str, Fields]]] = {
        Kind.POOL: lambda: {p.name: pool_fields(p) for p in blueprint.pools},
        Kind.TENANT: lambda: {t.name: tenant_fields(t) for t in blueprint.tenants},
        Kind.WORKLOAD: lambda: {w.name: workload_fields(w, blueprint) for w in blueprint.workloads},
    }
    return flatteners[kind]()


def _cluster_change(before: Snapshot, after: Snapshot) -> list[EntityChange]:
    """Cluster settings compare as one entity even when the blueprint is renamed."""
    if after.blueprint is None:
        return []
    if before.blueprint is None:
        everything = field_changes({}, cluster_fields(after.blueprint))
        return [EntityChange(Kind.CLUSTER, after.blueprint.name, Status.ADDED, everything)]
    fields = field_changes(cluster_fields(before.blueprint), cluster_fields(after.blueprint))
    return [EntityChange(Kind.CLUSTER, after.blueprint.name, Status.CHANGED, fields)] if fields else []


def blueprint_changes(before: Snapshot, after: Snapshot) -> tuple[EntityChange, ...]:
    changes = _cluster_change(before, after)
    for kind in (Kind.POOL, Kind.TENANT, Kind.WORKLOAD):
        changes.extend(_entity_changes(kind, _flatten(before, kind), _flatten(after, kind)))
    return tuple(changes)

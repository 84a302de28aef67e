"""A Review as plain data: the JSON output, and what the text and markdown templates render.

One structure for all three outputs keeps them saying the same thing.
"""

from __future__ import annotations

from typing import Any

from gpustack.capacity import Unit
from gpustack.graph import Graph, blueprint_graph, compare_graphs, render_mermaid
from gpustack.quantity import json_number
from gpustack.review.capacity import Pair, PoolChange, TenantChange
from gpustack.review.changes import EntityChange, Kind, Status
from gpustack.review.review import Review
from gpustack.review.risk import Risk, count_by_severity
from gpustack.review.snapshot import Snapshot


def _pair(pair: Pair[Any]) -> dict[str, Any]:
    before, after = pair.before, pair.after
    return {
        "before": list(before) if isinstance(before, tuple) else before,
        "after": list(after) if isinstance(after, tuple) else after,
    }


def _memory(units: Unit) -> dict[str, Any] | None:
    """Memory one unit can use. MIG units are named by the profile's GB; any other unit is a share of GiB."""
    if units.memory_gb is None:
        return None
    return {"value": json_number(units.memory_gb), "unit": "GB" if units.profile is not None else "GiB"}


def _units(units: Unit | None) -> dict[str, Any] | None:
    if units is None:
        return None
    return {
        "perNode": units.per_node,
        "total": units.total,
        "memory": _memory(units),
        "isolation": str(units.isolation),
        "profile": units.profile,
        "sharedBy": units.shared_by,
    }


def _pool(pool: PoolChange) -> dict[str, Any]:
    return {
        "pool": pool.pool,
        "changed": pool.changed,
        "model": _pair(pool.model),
        "nodes": _pair(pool.nodes),
        "gpus": _pair(pool.gpus),
        "sharing": _pair(pool.sharing),
        "resources": [
            {
                "resource": r.resource,
                "changed": r.changed,
                "before": _units(r.units.before),
                "after": _units(r.units.after),
            }
            for r in pool.resources
        ],
    }


def _tenant(tenant: TenantChange) -> dict[str, Any]:
    return {
        "tenant": tenant.tenant,
        "changed": tenant.changed,
        "pools": _pair(tenant.pools),
        "resources": [
            {
                "pool": r.pool,
                "resource": r.resource,
                "changed": r.changed,
                "access": _pair(r.access),
                "quota": _pair(r.quota),
                "need": _pair(r.need),
                "supply": _pair(r.supply),
            }
            for r in tenant.resources
        ],
    }


def _risk(risk: Risk) -> dict[str, Any]:
    return {
        "code": risk.code,
        "severity": str(risk.severity),
        "title": risk.title,
        "message": risk.message,
        "advice": risk.advice,
        "nodes": list(risk.nodes),
        "workloads": list(risk.workloads),
        "pools": list(risk.pools),
        "tenants": list(risk.tenants),
        "details": list(risk.details),
    }


def _change(change: EntityChange) -> dict[str, Any]:
    return {
        "kind": str(change.kind),
        "name": change.name,
        "status": str(change.status),
        "fields": [
            {
                "field": f.field,
                "before": f.before,
                "after": f.after,
                "added": f.added_items,
                "removed": f.removed_items,
            }
            for f in change.fields
        ],
    }


def _counts(review: Review) -> dict[str, Any]:
    counts: dict[str, Any] = {}
    for kind in (Kind.POOL, Kind.TENANT, Kind.WORKLOAD):
        counts[f"{kind}s"] = {
            str(status): sum(c.kind is kind and c.status is status for c in review.changes) for status in Status
        }
    counts["clusterSettings"] = sum(len(c.fields) for c in review.changes if c.kind is Kind.CLUSTER)
    counts["risks"] = count_by_severity(review.risks)
    counts["objects"] = {str(status): sum(o.status is status for o in review.objects) for status in Status}
    return counts


def review_graph(review: Review) -> str:
    """Mermaid source of both versions in one picture, with what the change touches marked."""
    after = _graph_of(review.after)
    before = _graph_of(review.before) if review.before.blueprint is not None else None
    if after is None:
        return ""
    changed = [(str(c.kind), c.name) for c in review.changes if c.status is Status.CHANGED]
    return render_mermaid(compare_graphs(before, after, changed))


def _graph_of(snapshot: Snapshot) -> Graph | None:
    return None if snapshot.blueprint is None else blueprint_graph(snapshot.blueprint, snapshot.context)


def _side(snapshot: Snapshot) -> dict[str, Any]:
    return {"file": snapshot.label, "blueprint": None if snapshot.blueprint is None else snapshot.blueprint.name}


def review_data(review: Review) -> dict[str, Any]:
    return {
        "before": _side(review.before),
        "after": _side(review.after),
        "changed": review.changed,
        "summary": _counts(review),
        "risks": [_risk(r) for r in review.risks],
        "changes": [_change(c) for c in review.changes],
        "capacity": {
            "pools": [_pool(p) for p in review.capacity.pools],
            "tenants": [_tenant(t) for t in review.capacity.tenants],
        },
        "objects": [
            {
                "key": o.key,
                "kind": o.kind,
                "name": o.name,
                "namespace": o.namespace,
                "file": o.file,
                "status": str(o.status),
                "diff": o.diff,
            }
            for o in review.objects
        ],
        "graph": review_graph(review) if review.changed else "",
    }

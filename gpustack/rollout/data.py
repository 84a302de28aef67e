"""A RolloutPlan as plain data (camelCase keys): the JSON output, and what the text and markdown renderers read."""

from __future__ import annotations

from typing import Any

from gpustack.report import diagnostic_json
from gpustack.rollout.model import (
    API_VERSION,
    DRAIN_TIMEOUT_S,
    KIND,
    MIG_TIMEOUT_S,
    RESOURCES_TIMEOUT_S,
    Availability,
    Phase,
    RolloutPlan,
    Step,
)


def _availability(row: Availability) -> dict[str, Any]:
    return {
        "pool": row.pool,
        "resource": row.resource,
        "available": row.available,
        "guaranteed": row.guaranteed,
        "short": row.short,
        "tenants": list(row.tenants),
    }


def _step(step: Step) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": step.id,
        "action": str(step.action),
        "description": step.description,
        "command": list(step.command),
    }
    if step.node is not None:
        out["node"] = step.node
    if step.stdin is not None:
        out["stdin"] = step.stdin
    if step.timeout_s is not None:
        out["timeoutSeconds"] = step.timeout_s
    return out


def _phase(phase: Phase) -> dict[str, Any]:
    return {
        "id": phase.id,
        "kind": str(phase.kind),
        "title": phase.title,
        "pool": phase.pool,
        "nodes": list(phase.nodes),
        "drains": phase.drains,
        "workloadsWithoutDisruptionBudget": list(phase.unprotected),
        "maxSeconds": phase.max_seconds,
        "capacity": [_availability(row) for row in phase.capacity],
        "steps": [_step(step) for step in phase.steps],
    }


def summary_data(plan: RolloutPlan) -> dict[str, Any]:
    """The few figures a reviewer needs first: waves, the time the waits may take, the deepest capacity dip."""
    dips = [{"wave": phase.id, **_availability(row)} for phase, row in plan.dips]
    return {
        "waves": len(plan.waves),
        "drainingWaves": sum(p.drains for p in plan.waves),
        "nodes": len({n for p in plan.waves for n in p.nodes}),
        "steps": len(plan.steps),
        "maxSeconds": plan.max_seconds,
        "maxUnavailable": plan.max_unavailable,
        "assumptions": {
            "drainTimeoutSeconds": DRAIN_TIMEOUT_S,
            "migReconfigureTimeoutSeconds": MIG_TIMEOUT_S,
            "resourcesTimeoutSeconds": RESOURCES_TIMEOUT_S,
        },
        "lowestCapacity": [_availability(row) for _, row in plan.lowest],
        "belowGuarantee": dips,
        "refused": bool(plan.refusals),
    }


def rollout_data(plan: RolloutPlan) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "before": plan.before,
        "after": plan.after,
        "summary": summary_data(plan),
        "capacityBefore": [_availability(row) for row in plan.capacity_before],
        "capacityAfter": [_availability(row) for row in plan.capacity_after],
        "phases": [_phase(phase) for phase in plan.phases],
        "refusals": [diagnostic_json(d) for d in plan.refusals],
    }

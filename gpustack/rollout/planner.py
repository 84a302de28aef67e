"""Plan a rollout: which nodes change, in which waves, with which steps, and what capacity is left meanwhile."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from functools import partial

from gpustack.codes import ROLLOUT_CAPACITY_DROP
from gpustack.collector import paused
from gpustack.diagnostic import Diagnostic, JsonPath, Severity, Span
from gpustack.names import WORKLOAD_LABEL
from gpustack.plan import HelmRelease
from gpustack.review.snapshot import Snapshot
from gpustack.rollout.capacity import Tracker, availability, guarantees, supply
from gpustack.rollout.model import DEFAULT_PERCENT, Action, Availability, Phase, PhaseKind, RolloutPlan, Step
from gpustack.rollout.nodes import NodeChange, node_changes, node_states
from gpustack.rollout.objects import (
    ObjectMoves,
    apply_step,
    delete_step,
    helm_uninstall_step,
    helm_upgrade_step,
    object_moves,
    workload_pool,
)
from gpustack.rollout.steps import StepIds, wave_steps

MAX_UNAVAILABLE = re.compile(r"^([1-9][0-9]{0,5})(%?)$")
PDB_KIND = "PodDisruptionBudget"
Locate = Callable[[JsonPath], Span | None]


class MaxUnavailableError(ValueError):
    """--max-unavailable is neither a positive whole number nor a percentage."""


def wave_size(max_unavailable: str | None, pool_nodes: int) -> int:
    """Nodes out at once in a pool: N, or N % of the pool rounded down (like a Deployment's), at least one."""
    if max_unavailable is None:
        return max(1, math.floor(pool_nodes * DEFAULT_PERCENT / 100))
    match = MAX_UNAVAILABLE.match(max_unavailable)
    if match is None or (match.group(2) and int(match.group(1)) > 100):
        raise MaxUnavailableError(
            f"'{max_unavailable}' is not a node count (e.g. 2) or a percentage up to 100% (e.g. 25%)"
        )
    number = int(match.group(1))
    return max(1, math.floor(pool_nodes * number / 100)) if match.group(2) else number


def _pool_sizes(before: Snapshot, after: Snapshot) -> dict[str, int]:
    sizes = {name: len(pool.nodes) for name, pool in before.pools.items()}
    sizes.update({name: len(pool.nodes) for name, pool in after.pools.items()})
    return sizes


def _protected(snapshot: Snapshot) -> set[str]:
    """Workloads some PodDisruptionBudget in the old plan selects by gpustack's workload label (read once a plan)."""
    found: set[str] = set()
    for manifest in snapshot.plan.objects:
        if manifest.kind != PDB_KIND:
            continue
        labels = manifest.obj.get("spec", {}).get("selector", {}).get("matchLabels") or {}
        if isinstance(name := labels.get(WORKLOAD_LABEL), str):
            found.add(name)
    return found


def _unprotected_by_pool(before: Snapshot) -> dict[str, tuple[str, ...]]:
    """Pool -> the old workloads on it that no PodDisruptionBudget protects, by name: found once, read per wave."""
    protected = _protected(before)
    found: dict[str, list[str]] = {}
    for workload in before.workloads.values():
        if workload.name not in protected:
            found.setdefault(workload.pool, []).append(workload.name)
    return {pool: tuple(sorted(names)) for pool, names in found.items()}


def _unprotected(unprotected: dict[str, tuple[str, ...]], changes: list[NodeChange]) -> tuple[str, ...]:
    pools = {c.old.pool for c in changes if c.old is not None}
    return tuple(w for pool in sorted(pools) for w in unprotected.get(pool, ()))


def _waves(
    changes: list[NodeChange], size_of: dict[str, int], max_unavailable: str | None
) -> list[tuple[str, list[NodeChange], bool]]:
    """(pool, nodes, drains) per wave: per pool, the nodes that need no drain together first (they add or keep
    capacity), then the draining nodes in groups no larger than the pool's wave size."""
    by_pool: dict[str, tuple[list[NodeChange], list[NodeChange]]] = {}
    for change in changes:
        calm, rough = by_pool.setdefault(change.pool, ([], []))
        (rough if change.disruptive else calm).append(change)
    waves: list[tuple[str, list[NodeChange], bool]] = []
    for pool, (calm, rough) in by_pool.items():
        if calm:
            waves.append((pool, calm, False))
        size = wave_size(max_unavailable, size_of.get(pool, 1))
        waves += [(pool, rough[i : i + size], True) for i in range(0, len(rough), size)]
    return waves


def _templates_after(moves: ObjectMoves, waves: list[tuple[str, list[NodeChange], bool]]) -> dict[int, list[int]]:
    """Wave index -> indexes of the workload objects applied once that wave is ready (index -1: before any wave)."""
    first: dict[str, int] = {}
    for index, (pool, _, _) in enumerate(waves):
        first.setdefault(pool, index)
    placed: dict[int, list[int]] = {}
    for position, manifest in enumerate(moves.templates):
        target = workload_pool(manifest)
        placed.setdefault(first.get(target, -1) if target is not None else -1, []).append(position)
    return placed


def _prepare(moves: ObjectMoves, early_templates: list[int]) -> Phase:
    ids = StepIds("prepare")
    steps: list[Step] = [
        delete_step(ids.next(Action.DELETE), m, "removed from the blueprint; frees its GPUs")
        for m in moves.delete_first
    ]
    steps += [helm_upgrade_step(ids.next(Action.HELM_UPGRADE), r, _upgrade_why(r, moves)) for r in moves.upgrades]
    steps += [apply_step(ids.next(Action.APPLY), m, "before any node changes") for m in moves.prepare]
    steps += [
        apply_step(ids.next(Action.APPLY), moves.templates[i], "its pool's nodes do not change")
        for i in early_templates
    ]
    title = "Before the first wave: charts, configs, quota raises, removed workloads"
    return Phase("prepare", PhaseKind.PREPARE, title, tuple(steps))


def _upgrade_why(release: HelmRelease, moves: ObjectMoves) -> str:
    if any(r.name == release.name for r in moves.settles):
        return "with values for the old and the new nodes alike (the new alone after the last wave)"
    return "with the new values"


def _finish(moves: ObjectMoves) -> Phase:
    ids = StepIds("finish")
    steps = [
        helm_upgrade_step(ids.next(Action.HELM_UPGRADE), r, "with the new values alone (the old nodes are gone)")
        for r in moves.settles
    ]
    steps += [apply_step(ids.next(Action.APPLY), m, "quota cut, once every node is done") for m in moves.finish]
    steps += [delete_step(ids.next(Action.DELETE), m, "removed from the blueprint") for m in moves.delete_last]
    steps += [helm_uninstall_step(ids.next(Action.HELM_UNINSTALL), r) for r in moves.uninstalls]
    title = "After the last wave: quota cuts, removed objects"
    return Phase("finish", PhaseKind.FINISH, title, tuple(steps))


def _wave_title(pool: str, changes: list[NodeChange], drains: bool) -> str:
    reasons = sorted({reason for c in changes for reason in c.reasons})
    how = "drain and change" if drains else "change in place"
    return f"pool {pool}: {how} {', '.join(c.node for c in changes)} ({'; '.join(reasons)})"


def _refusals(dips: list[tuple[int, Availability]], after: Snapshot, locate: Locate | None) -> tuple[Diagnostic, ...]:
    """One error per (pool, resource) that dips below its tenants' old guarantee, at its deepest wave."""
    worst: dict[tuple[str, str], tuple[int, Availability]] = {}
    for wave, row in dips:
        key = (row.pool, row.resource)
        if key not in worst or row.short > worst[key][1].short:
            worst[key] = (wave, row)
    found: list[Diagnostic] = []
    for (pool, resource), (wave, row) in sorted(worst.items()):
        tenant = after.tenants.get(row.tenants[0]) if row.tenants else None
        path: JsonPath = (*tenant.path, "quota", pool) if tenant is not None and pool in dict(tenant.quota) else ()
        span = locate(path) if path and locate is not None else None
        found.append(
            Diagnostic(
                ROLLOUT_CAPACITY_DROP,
                Severity.ERROR,
                f"wave{wave:02d} leaves pool '{pool}' with {row.available} {resource} while tenant(s) "
                f"{', '.join(row.tenants)} were guaranteed {row.guaranteed}",
                span,
                path,
                "lower --max-unavailable, add nodes to the pool first, or accept the dip with --allow-capacity-drop",
            )
        )
    return tuple(found)


@paused()  # see gpustack/collector.py: planning makes no cycles, and a fleet's two plans make full passes slow
def plan_rollout(
    before: Snapshot, after: Snapshot, max_unavailable: str | None = None, locate: Locate | None = None
) -> RolloutPlan:
    """The ordered plan from the old blueprint to the new; raises MaxUnavailableError on a bad wave size."""
    for pool_nodes in _pool_sizes(before, after).values():
        wave_size(max_unavailable, pool_nodes)  # fail on a bad value even when no pool changes
    changes = node_changes(before, after)
    waves = _waves(changes, _pool_sizes(before, after), max_unavailable)
    moves = object_moves(before.plan, after.plan)
    placed = _templates_after(moves, waves)
    old_states, new_states = node_states(before), node_states(after)
    promised = guarantees(before)
    tracker = Tracker(old_states, promised)
    unprotected = _unprotected_by_pool(before)
    phases = [_prepare(moves, placed.get(-1, []))]
    dips: list[tuple[int, Availability]] = []
    for index, (pool, group, drains) in enumerate(waves):
        number = index + 1
        ids = StepIds(f"wave{number:02d}")
        steps = wave_steps(ids, group, drains)
        steps += [
            apply_step(ids.next(Action.APPLY), moves.templates[i], f"the first wave of pool {pool} is ready")
            for i in placed.get(index, [])
        ]
        out = [c.node for c in group] if drains else []
        own, below = tracker.wave(pool, out, [(c.node, c.new) for c in group], shown=bool(steps))
        dips += [(number, row) for row in below]
        phases.append(
            Phase(
                f"wave{number:02d}",
                PhaseKind.WAVE,
                _wave_title(pool, group, drains),
                tuple(steps),
                pool=pool,
                nodes=tuple(c.node for c in group),
                drains=drains,
                unprotected=_unprotected(unprotected, group) if drains else (),
                pool_capacity=own,
                dips=below,
                capacity_of=partial(tracker.timeline.at, index),
            )
        )
    phases.append(_finish(moves))
    return RolloutPlan(
        before=before.label,
        after=after.label,
        max_unavailable=max_unavailable or f"{DEFAULT_PERCENT}% (at least 1 node)",
        phases=tuple(p for p in phases if p.steps),
        capacity_before=availability(supply(old_states.values()), promised),
        capacity_after=availability(supply(new_states.values()), guarantees(after)),
        refusals=_refusals(dips, after, locate),
        lowest=tuple((f"wave{wave + 1:02d}", row) for _, (wave, row) in sorted(tracker.lowest.items())),
    )

"""Semantic rules over a typed blueprint: each returns diagnostics, none prints or exits."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from gpustack.checks import (
    cloud,
    cluster,
    dra,
    hardware,
    isolation,
    references,
    schedulers,
    sharing,
    templates,
    tenancy,
    workloads,
)
from gpustack.context import Context
from gpustack.diagnostic import Diagnostic, JsonPath, Severity, has_errors, sort_diagnostics

Rule = Callable[[Context], Iterable[Diagnostic]]

RULES: tuple[Rule, ...] = (
    *references.RULES,
    *hardware.RULES,
    *cloud.RULES,
    *sharing.RULES,
    *tenancy.RULES,
    *schedulers.RULES,
    *workloads.RULES,
    *isolation.RULES,
    *cluster.RULES,
    *dra.RULES,
)
# Rules that render workload templates into the objects compile would write: they run only where RULES found no
# error, since building those objects assumes a blueprint that holds together.
RENDER_RULES: tuple[Rule, ...] = templates.RULES


def run_checks(context: Context) -> list[Diagnostic]:
    """Every rule over the blueprint's context: the one validation builds, which compile then takes (its facts,
    derived here, are not derived again)."""
    found: list[Diagnostic] = []
    for rule in RULES:
        found.extend(rule(context))
    if not has_errors(found):
        for rule in RENDER_RULES:
            found.extend(rule(context))
    return sort_diagnostics(without_consequences(context, found))


def without_consequences(context: Context, found: list[Diagnostic]) -> list[Diagnostic]:
    """The diagnostics less the warnings that only follow from an error already reported: a quota warning on a
    pool that is itself in error (a MIG layout that does not fit advertises nothing, so any quota on it looks
    wrong), or on a tenant's quota entry that holds an error (a resource the pool does not advertise leaves the
    pool's real resource unnamed). One mistake, one report: the cause."""
    errors = [d.path for d in found if d.severity is Severity.ERROR]
    if not errors:
        return found
    pools = context.blueprint.pools
    broken = {pools[i].name for p in errors if p[:2] == ("spec", "nodePools") and (i := _index(p, 2, len(pools))) >= 0}
    erred = set(errors)
    kept: list[Diagnostic] = []
    for d in found:
        if d.severity is Severity.WARNING:
            pool = _quota_pool(context, d.path)
            if pool is not None and (pool in broken or any(p[: len(d.path)] == d.path for p in erred)):
                continue
        kept.append(d)
    return kept


def _index(path: JsonPath, at: int, size: int) -> int:
    """The list index at `path[at]`, or -1 where there is none in range."""
    step = path[at] if len(path) > at else None
    return step if isinstance(step, int) and 0 <= step < size else -1


def _quota_pool(context: Context, path: JsonPath) -> str | None:
    """The pool a warning on a tenant's quota (`tenants[i].quota.<pool>...`) or grant (`tenants[i].pools[j]`) is
    about, else None."""
    tenants = context.blueprint.tenants
    index = _index(path, 2, len(tenants))
    if len(path) < 5 or path[:2] != ("spec", "tenants") or index < 0:
        return None
    where, what = path[3], path[4]
    if where == "quota" and isinstance(what, str):
        return what
    tenant = tenants[index]
    if where == "pools" and isinstance(what, int) and 0 <= what < len(tenant.pools):
        return tenant.pools[what]
    return None

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
from gpustack.diagnostic import Diagnostic, has_errors, sort_diagnostics

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
    return sort_diagnostics(found)

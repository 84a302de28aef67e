"""Semantic rules over a typed blueprint: each returns diagnostics, none prints or exits."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from gpustack.catalog import Catalog
from gpustack.checks import cluster, hardware, isolation, references, schedulers, sharing, tenancy, workloads
from gpustack.context import Context, Locate
from gpustack.diagnostic import Diagnostic, sort_diagnostics
from gpustack.model import Blueprint

Rule = Callable[[Context], Iterable[Diagnostic]]

RULES: tuple[Rule, ...] = (
    *references.RULES,
    *hardware.RULES,
    *sharing.RULES,
    *tenancy.RULES,
    *schedulers.RULES,
    *workloads.RULES,
    *isolation.RULES,
    *cluster.RULES,
)


def run_checks(blueprint: Blueprint, catalog: Catalog, locate: Locate | None = None) -> list[Diagnostic]:
    context = Context(blueprint, catalog) if locate is None else Context(blueprint, catalog, locate)
    found: list[Diagnostic] = []
    for rule in RULES:
        found.extend(rule(context))
    return sort_diagnostics(found)

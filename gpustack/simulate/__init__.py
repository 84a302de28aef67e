"""`gpustack simulate`: place a blueprint's pods as kube-scheduler and Volcano would, before apply.

`run_simulation(blueprint, objects)` is pure: the compiled objects (Node patches, workloads,
PriorityClasses, ResourceQuotas) and an optional scenario in, a `Simulation` out. The command
is the only part that reads files or prints.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gpustack.catalog import Catalog, load_catalog
from gpustack.context import Context
from gpustack.model import Blueprint
from gpustack.simulate.demand import Demand, build_demand
from gpustack.simulate.inventory import build_inventory
from gpustack.simulate.messages import KubeVersion
from gpustack.simulate.quota import quotas_from
from gpustack.simulate.scenario import Scenario
from gpustack.simulate.simulation import Outcome, simulate


@dataclass(frozen=True)
class Simulation:
    context: Context
    demand: Demand
    outcome: Outcome
    scenario: Scenario | None


def run_simulation(
    blueprint: Blueprint,
    objects: Iterable[Mapping[str, Any]],
    scenario: Scenario | None = None,
    version: KubeVersion | None = None,
    catalog: Catalog | None = None,
) -> Simulation:
    context = Context(blueprint, catalog or load_catalog())
    objects = list(objects)
    nodes = build_inventory(context, (o for o in objects if o.get("kind") == "Node"))
    namespaces = {w.name: context.namespace_of(w) for w in blueprint.workloads}
    demand = build_demand(blueprint, namespaces, objects, scenario)
    version = version or KubeVersion.parse(blueprint.kubernetes_version)
    return Simulation(context, demand, simulate(nodes, demand, quotas_from(objects), version), scenario)

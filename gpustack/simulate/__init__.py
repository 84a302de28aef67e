"""`gpustack simulate`: place a blueprint's pods as kube-scheduler and Volcano would, before apply.

`run_simulation(blueprint, objects)` is pure: the compiled objects (Node patches, workloads,
PriorityClasses, ResourceQuotas) and an optional scenario in, a `Simulation` out. The command
is the only part that reads files or prints.

Modelled: quota admission, kube-scheduler's filters (NodeUnschedulable, TaintToleration,
NodeAffinity with nodeSelector, NodeResourcesFit) and scores (PreferNoSchedule, preferred affinity,
least-allocated), Volcano's gangs (packed with spec.volcano.binpack, else spread), priority order,
and the messages of both.
Not modelled, so a pod placed here can still pend for these: LimitRange defaults and maxima, Kueue
admission, Volcano queue capability, per-GPU packing of HAMi and MIG slices inside a node (units
are counted per node, as the scheduler counts them), pod (anti-)affinity and topology spread,
DaemonSet pods taking a node's pod slots, and the eviction a successful preemption would start
(pods are scheduled highest priority first, so lower-priority victims never exist here).
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
    return Simulation(
        context, demand, simulate(nodes, demand, quotas_from(objects), version, blueprint.volcano.binpack), scenario
    )

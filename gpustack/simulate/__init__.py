"""`gpustack simulate`: place a blueprint's pods as kube-scheduler and Volcano would, before apply.

`run_simulation(context, objects)` is pure: the blueprint's Context (validation's), the compiled objects (Node
patches, workloads, PriorityClasses, ResourceQuotas) and an optional scenario in, a `Simulation` out. The command
is the only part that reads files or prints.

Modelled: quota admission, kube-scheduler's filters (NodeUnschedulable, TaintToleration,
NodeAffinity with nodeSelector, NodeResourcesFit) and scores (PreferNoSchedule, preferred affinity,
least-allocated), Volcano's gangs (packed with spec.volcano.binpack, else spread), priority order,
and the messages of both; KAI Scheduler's queue limits and over-quota placement for `scheduler: kai` tenants
(simulate/kai.py, in KAI's words, from the compiled Queues).
LimitRanger's min/max per container (refused at creation, before quota), VolumeBinding's missing PVC (when a snapshot
lists claims), DRA classes serving extended resources from 1.36.
Not modelled, so a pod placed here can still pend for these: LimitRange defaults in what quota and the scheduler
count, Pod-level LimitRange items, Kueue admission, Volcano queue capability, per-GPU packing of HAMi and MIG
slices inside a node (units are counted per node, as the scheduler counts them), pod (anti-)affinity and topology
spread,
DaemonSet pods taking a node's pod slots (unless a cluster snapshot shows them bound), and Volcano gang
members as preemption victims.
With a cluster snapshot, pods already bound keep their nodes; kube-scheduler's default preemption picks
victims among them (and among pods bound by nodeName) as it would.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gpustack.cluster.snapshot import ClusterSnapshot
from gpustack.collector import paused
from gpustack.context import Context
from gpustack.simulate.demand import Demand, Pod, build_demand, priority_classes
from gpustack.simulate.existing import extra_objects, merge_nodes, rebound, running_pods, take_over, volume_claims
from gpustack.simulate.extended import serve_extended
from gpustack.simulate.gates import gates_from
from gpustack.simulate.inventory import build_inventory
from gpustack.simulate.kai import kai_queues
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
    # Pods placed only because autoscaled pools grew past minNodes: pending on the pools' minimum nodes.
    after_scale_up: tuple[tuple[str, str], ...] = ()  # (namespace, pod)


@paused()  # see gpustack/collector.py
def run_simulation(
    context: Context,
    objects: Iterable[Mapping[str, Any]],
    scenario: Scenario | None = None,
    version: KubeVersion | None = None,
    snapshot: ClusterSnapshot | None = None,
) -> Simulation:
    """`snapshot`: start from a running cluster (its nodes, bound pods, cordons, priority classes, quotas)."""
    blueprint = context.blueprint
    objects = list(objects)
    if snapshot is not None:
        objects += extra_objects(snapshot, objects)
    nodes = build_inventory(context, (o for o in objects if o.get("kind") == "Node"))
    running: list[tuple[Pod, int]] = []
    if snapshot is not None:
        nodes = merge_nodes(nodes, snapshot, blueprint.pools)
        running = running_pods(snapshot, nodes, priority_classes(objects))
    namespaces = {w.name: context.namespace_of(w) for w in blueprint.workloads}
    demand = build_demand(blueprint, namespaces, objects, scenario)
    if snapshot is not None:  # the workloads' own running pods are replicas already there, not strangers
        demand, running = take_over(snapshot, demand, running)
    gates = gates_from(objects, volume_claims(snapshot, objects) if snapshot is not None else None)
    version = version or KubeVersion.parse(blueprint.kubernetes_version)
    nodes = serve_extended(nodes, objects, version)  # DRA classes serving nvidia.com/* requests, from 1.36
    kai = kai_queues(context, objects)
    outcome = simulate(nodes, demand, quotas_from(objects), version, blueprint.volcano.binpack, running, kai, gates)
    after_scale_up: tuple[tuple[str, str], ...] = ()
    at_least = tuple(node for node in nodes if not node.scale_up)
    if len(at_least) < len(nodes):
        # Once more on the nodes that are always there: what waits there and is placed above needs a scale-up.
        floor_running = rebound(running, nodes, at_least)
        floor = simulate(
            at_least, demand, quotas_from(objects), version, blueprint.volcano.binpack, floor_running, kai, gates
        )
        waiting = {(item.pod.namespace, item.pod.name) for item in floor.pending}
        after_scale_up = tuple(
            (pod.namespace, pod.name) for pod, _ in outcome.placed if (pod.namespace, pod.name) in waiting
        )
    return Simulation(context, demand, outcome, scenario, after_scale_up)

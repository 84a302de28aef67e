"""`gpustack drift`: what differs between a blueprint and a cluster snapshot, pool by pool and node by node.

The blueprint's side is what compile made of each node: the labels and taints gpustack sets (the Plan's
`PoolNodes`, read, not derived again) and the resources the pool advertises (the Context's offers). The
cluster's side is the snapshot.
Only what gpustack owns is compared: a label gpustack does not set is nobody's drift, but a taint that is not
the system's and not the pool's is, since it keeps the pool's workloads off the node; so is a cordon the
blueprint does not list (or a listed one that is gone), and a pod limit other than the pool's maxPods.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpustack.cluster.labels import is_gpu_node, user_taints
from gpustack.cluster.snapshot import ClusterSnapshot, SnapshotNode, SnapshotTaint
from gpustack.context import Context
from gpustack.model import Blueprint, NodePool, SharingStrategy
from gpustack.names import GFD_PRODUCT_LABEL, MIG_CONFIG_LABEL, POOL_LABEL
from gpustack.offers import RESOURCE_PREFIX
from gpustack.plan import NodeTaint, Plan, PoolNodes
from gpustack.selection import describe_selection, pool_requirements, selects
from gpustack.taints import taint_text

MIG_STATE_LABEL = "nvidia.com/mig.config.state"
MIG_SUCCESS = "success"
API_VERSION = "gpustack.io/v1alpha1"
KIND = "DriftReport"
# Resources HAMi's plugin advertises beside nvidia.com/gpu; drift checks them only on HAMi pools.
_HAMI_ONLY = ("nvidia.com/gpumem", "nvidia.com/gpucores")


@dataclass(frozen=True)
class Difference:
    node: str
    kind: str  # missing-node, extra-node, node-count, gpu, label, taint, resource, mig-state, cordon
    key: str  # the label key, taint key, resource name, selector ('' for a whole node)
    expected: str | None
    actual: str | None
    message: str


@dataclass(frozen=True)
class PoolDrift:
    name: str
    nodes: tuple[str, ...]
    differences: tuple[Difference, ...]


@dataclass(frozen=True)
class Drift:
    blueprint: str
    snapshot: str
    pools: tuple[PoolDrift, ...]
    extra_nodes: tuple[Difference, ...]

    @property
    def differences(self) -> tuple[Difference, ...]:
        return (*(d for pool in self.pools for d in pool.differences), *self.extra_nodes)

    @property
    def in_sync(self) -> bool:
        return not self.differences


def _labels(planned: PoolNodes, node: SnapshotNode) -> list[Difference]:
    out = []
    actual = dict(node.labels)
    for key, value in planned.labels.items():
        found = actual.get(key)
        if found != value:
            what = "none" if found is None else f"'{found}'"
            message = f"label {key}: expected '{value}', found {what}"
            out.append(Difference(node.name, "label", key, value, found, message))
    return out


def _taints(planned: PoolNodes, node: SnapshotNode) -> list[Difference]:
    def text(taint: NodeTaint | SnapshotTaint) -> str:
        return taint_text(taint)

    expected = [text(t) for t in planned.taints]
    actual = [text(t) for t in user_taints(node)]
    out = [
        Difference(node.name, "taint", taint, taint, None, f"taint {taint}: missing")
        for taint in expected
        if taint not in actual
    ]
    out += [
        Difference(node.name, "taint", taint, None, taint, f"taint {taint}: not in the blueprint")
        for taint in actual
        if taint not in expected
    ]
    return out


def _resources(ctx: Context, pool: NodePool, node: SnapshotNode) -> list[Difference]:
    offers = {offer.resource: offer.per_node for offer in ctx.offers.get(pool.name, ())}
    actual = {
        name: int(node.allocatable_amount(name)) for name, _ in node.allocatable if name.startswith(RESOURCE_PREFIX)
    }
    if pool.sharing.strategy is not SharingStrategy.HAMI:
        actual = {name: amount for name, amount in actual.items() if name not in _HAMI_ONLY}
    out = []
    for resource, amount in offers.items():
        found = actual.get(resource)
        if found != amount:
            what = "none" if found is None else str(found)
            message = f"allocatable {resource}: expected {amount}, found {what}"
            out.append(
                Difference(node.name, "resource", resource, str(amount), None if found is None else str(found), message)
            )
    for resource, amount in sorted(actual.items()):
        if resource not in offers and amount > 0:
            message = f"allocatable {resource}: {amount} advertised, but the pool does not advertise it"
            out.append(Difference(node.name, "resource", resource, None, str(amount), message))
    return out


def _gpu(ctx: Context, pool: NodePool, node: SnapshotNode) -> list[Difference]:
    product = node.label(GFD_PRODUCT_LABEL)
    model = ctx.models.get(pool.name)
    found = ctx.catalog.resolve(product) if product else None
    if model is None or found is None or found.key == model.key:
        return []
    message = f"GPU {GFD_PRODUCT_LABEL}: expected {model.key}, found {product} ({found.key})"
    return [Difference(node.name, "gpu", GFD_PRODUCT_LABEL, model.key, product, message)]


def _mig_state(ctx: Context, pool: NodePool, node: SnapshotNode) -> list[Difference]:
    if pool.sharing.strategy is not SharingStrategy.MIG:
        return []
    state = node.label(MIG_STATE_LABEL)
    if state == MIG_SUCCESS:
        return []
    config = node.label(MIG_CONFIG_LABEL)
    what = "no state (the MIG manager has not acted)" if state is None else f"'{state}'"
    message = f"MIG {MIG_STATE_LABEL}: expected '{MIG_SUCCESS}' for config '{config}', found {what}"
    return [Difference(node.name, "mig-state", MIG_STATE_LABEL, MIG_SUCCESS, state, message)]


def _scheduling(ctx: Context, pool: NodePool, node: SnapshotNode) -> list[Difference]:
    """The cordon and the pod limit, where the blueprint states them for simulate."""
    out = []
    cordoned = node.name in pool.cordoned
    if cordoned != node.unschedulable:
        where = "the cluster, not in the blueprint" if node.unschedulable else "the blueprint, not in the cluster"
        expected, actual = str(cordoned).lower(), str(node.unschedulable).lower()
        out.append(Difference(node.name, "cordon", "spec.unschedulable", expected, actual, f"cordoned in {where}"))
    slots = dict(node.allocatable).get("pods")
    if pool.max_pods is not None and slots is not None and int(node.allocatable_amount("pods")) != pool.max_pods:
        message = f"allocatable pods: expected {pool.max_pods} (maxPods), found {slots}"
        out.append(Difference(node.name, "resource", "pods", str(pool.max_pods), slots, message))
    return out


def pool_nodes(pool: NodePool, snapshot: ClusterSnapshot) -> tuple[str, ...]:
    """The nodes that are the pool's: a static pool's names, or the snapshot's nodes its selector matches."""
    if pool.selector is None:
        return pool.nodes
    requirements = pool_requirements(pool)
    first = next((r for r in requirements if r.operator == "In"), None)  # candidates by lookup, not by a scan (N7)
    candidates = snapshot.nodes if first is None else snapshot.nodes_labelled(first.key, first.values)
    return tuple(node.name for node in candidates if selects(pool, node.label_map))


def _size(pool: NodePool, found: int) -> list[Difference]:
    """A selector pool's node count against its count, or minNodes..maxNodes."""
    if pool.selector is None:
        return []
    low = pool.count if pool.count is not None else pool.min_nodes or 0
    high = pool.count if pool.count is not None else pool.max_nodes
    if low <= found and (high is None or found <= high):
        return []
    expected = str(low) if low == high else f"{low}..{high}"
    message = f"{found} node(s) match {describe_selection(pool)}: expected {expected}"
    # About the pool, not one node: node is ''.
    return [Difference("", "node-count", describe_selection(pool), expected, str(found), message)]


def _pool_drift(ctx: Context, planned: PoolNodes, pool: NodePool, snapshot: ClusterSnapshot) -> PoolDrift:
    names = pool_nodes(pool, snapshot)
    differences: list[Difference] = _size(pool, len(names))
    for name in names:
        node = snapshot.node(name)
        if node is None:
            differences.append(Difference(name, "missing-node", "", name, None, "missing from the cluster"))
            continue
        differences += _gpu(ctx, pool, node)
        differences += _labels(planned, node)
        for check in (_resources, _mig_state, _scheduling):
            differences += check(ctx, pool, node)
        differences += _taints(planned, node)
    return PoolDrift(pool.name, names, tuple(differences))


def _extra_nodes(blueprint: Blueprint, snapshot: ClusterSnapshot) -> list[Difference]:
    known = {node for pool in blueprint.pools for node in pool_nodes(pool, snapshot)}
    out = []
    for node in snapshot.nodes:
        if node.name in known:
            continue
        claimed = node.label(POOL_LABEL)
        if claimed is not None:
            message = f"labelled {POOL_LABEL}={claimed} but in no pool of the blueprint"
        elif is_gpu_node(node):
            product = node.label(GFD_PRODUCT_LABEL) or "no product label"
            message = f"a GPU node ({product}) in no pool of the blueprint"
        else:
            continue
        out.append(Difference(node.name, "extra-node", "", None, node.name, message))
    return out


def compare(context: Context, plan: Plan, snapshot: ClusterSnapshot, blueprint_file: str) -> Drift:
    """The snapshot against the blueprint's Plan (compiled from `context`, the blueprint's one Context)."""
    blueprint = context.blueprint
    pools = []
    for pool in blueprint.pools:
        planned = plan.pool(pool.name)
        assert planned is not None, pool.name  # compile plans every pool of a valid blueprint
        pools.append(_pool_drift(context, planned, pool, snapshot))
    return Drift(blueprint_file, snapshot.file, tuple(pools), tuple(_extra_nodes(blueprint, snapshot)))


# --- reporters -----------------------------------------------------------------------------------------------


def _count(drift: Drift) -> str:
    differences = drift.differences
    nodes = len({d.node for d in differences if d.node})
    return f"{len(differences)} difference(s) on {nodes} node(s)"


def format_text(drift: Drift) -> str:
    if drift.in_sync:
        return f"{drift.snapshot} matches {drift.blueprint}: {len(drift.pools)} pool(s) in sync\n"
    lines = [f"drift between {drift.blueprint} and {drift.snapshot}: {_count(drift)}"]
    for pool in drift.pools:
        state = f"{len(pool.differences)} difference(s)" if pool.differences else "in sync"
        lines += ["", f"pool {pool.name} ({len(pool.nodes)} node(s)): {state}"]
        lines += [f"  {d.node or 'pool'}: {d.message}" for d in pool.differences]
    if drift.extra_nodes:
        lines += ["", "nodes in no pool:"]
        lines += [f"  {d.node}: {d.message}" for d in drift.extra_nodes]
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def format_markdown(drift: Drift) -> str:
    if drift.in_sync:
        return f"### Cluster in sync\n\n`{drift.snapshot}` matches `{drift.blueprint}` ({len(drift.pools)} pools).\n"
    lines = [f"### Cluster drift: {_count(drift)}", "", f"`{drift.snapshot}` against `{drift.blueprint}`."]
    lines += ["", "| pool | nodes | differences |", "|---|---:|---:|"]
    lines += [f"| {_cell(p.name)} | {len(p.nodes)} | {len(p.differences)} |" for p in drift.pools]
    rows = [(p.name, d) for p in drift.pools for d in p.differences] + [("", d) for d in drift.extra_nodes]
    lines += ["", "| pool | node | what | difference |", "|---|---|---|---|"]
    lines += [f"| {_cell(pool) or '—'} | {_cell(d.node)} | {d.kind} | {_cell(d.message)} |" for pool, d in rows]
    return "\n".join(lines) + "\n"


def _difference_data(difference: Difference) -> dict[str, Any]:
    return {
        "node": difference.node,
        "kind": difference.kind,
        "key": difference.key,
        "expected": difference.expected,
        "actual": difference.actual,
        "message": difference.message,
    }


def report_data(drift: Drift) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "blueprint": drift.blueprint,
        "snapshot": drift.snapshot,
        "inSync": drift.in_sync,
        "pools": [
            {
                "name": pool.name,
                "nodes": list(pool.nodes),
                "inSync": not pool.differences,
                "differences": [_difference_data(d) for d in pool.differences],
            }
            for pool in drift.pools
        ],
        "extraNodes": [_difference_data(d) for d in drift.extra_nodes],
    }

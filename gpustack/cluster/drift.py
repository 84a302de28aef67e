"""`gpustack drift`: what differs between a blueprint and a cluster snapshot, pool by pool and node by node.

The blueprint's side is what compile made of each node: the labels and taints gpustack sets (the Plan's
`PoolNodes`, read, not derived again) and the resources the pool advertises (the Context's offers). The
cluster's side is the snapshot.
Only what gpustack owns is compared: a label gpustack does not set is nobody's drift, but a taint that is not
the system's and not the pool's is, since it keeps the pool's workloads off the node; so is a cordon the
blueprint does not list (or a listed one that is gone), and a pod limit other than the pool's maxPods.

Drift is told from adoption: what gpustack would only add to make a cluster its own (on a node without a
gpustack.io/ label: its ownership labels, and the device-plugin and MIG config labels where the node has none; a
quota of gpustack's name where the namespace's quotas already enforce the same; an admission policy binding not
there yet) changes nothing a running pod sees, so it is listed as an adoption step and is not drift. A value
that differs, a taint, a quota that changed or is gone, a binding whose validationActions changed, a node in no
pool: those are drift.
Tenant quotas are compared when the snapshot holds ResourceQuota or Namespace objects, admission policy bindings
when it holds ValidatingAdmissionPolicyBinding objects, KAI Queues (parent, and each resource's quota, limit and
over-quota weight) when it holds Queue objects (the kinds `drift --help` names). A KAI Queue gpustack makes is
never an adoption step: a tenant's queue that is missing lets its pods name no queue KAI knows.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from gpustack.cluster.labels import is_gpu_node, user_taints
from gpustack.cluster.snapshot import ClusterSnapshot, SnapshotNode, SnapshotQuota, SnapshotTaint
from gpustack.context import Context
from gpustack.model import Blueprint, NodePool, SharingStrategy
from gpustack.names import DEVICE_PLUGIN_CONFIG_LABEL, GFD_PRODUCT_LABEL, MIG_CONFIG_LABEL, POOL_LABEL
from gpustack.offers import RESOURCE_PREFIX
from gpustack.plan import Manifest, NodeTaint, Plan, PoolNodes
from gpustack.quantity import parse_quantity
from gpustack.selection import describe_selection, pool_requirements, selects
from gpustack.taints import taint_text

MIG_STATE_LABEL = "nvidia.com/mig.config.state"
MIG_SUCCESS = "success"
API_VERSION = "gpustack.io/v1alpha1"
KIND = "DriftReport"
# Resources HAMi's plugin advertises beside nvidia.com/gpu; drift checks them only on HAMi pools.
_HAMI_ONLY = ("nvidia.com/gpumem", "nvidia.com/gpucores")
# Labels gpustack adds to take a node over: where the node has none, adding one restarts nothing that runs.
_ADOPTION_LABELS = frozenset({DEVICE_PLUGIN_CONFIG_LABEL, MIG_CONFIG_LABEL})
_ADOPTION_DOMAIN = POOL_LABEL.split("/", 1)[0] + "/"  # gpustack.io/: gpustack's own labels
QUOTA_KINDS = ("ResourceQuota", "Namespace")
BINDING_KIND = "ValidatingAdmissionPolicyBinding"
QUEUE_KIND = "Queue"
KAI_QUEUE_GROUP = "scheduling.run.ai/"


@dataclass(frozen=True)
class Difference:
    node: str
    kind: str  # missing-node, extra-node, node-count, gpu, label, taint, resource, mig-state, cordon, quota, queue
    key: str  # the label key, taint key, resource name, selector ('' for a whole node)
    expected: str | None
    actual: str | None
    message: str


@dataclass(frozen=True)
class PoolDrift:
    name: str
    nodes: tuple[str, ...]
    differences: tuple[Difference, ...]
    adoption: tuple[Difference, ...] = ()  # what gpustack would only add: not drift


@dataclass(frozen=True)
class Drift:
    blueprint: str
    snapshot: str
    pools: tuple[PoolDrift, ...]
    extra_nodes: tuple[Difference, ...]
    objects: tuple[Difference, ...] = ()  # tenant quotas and admission policy bindings (node is '')
    object_adoption: tuple[Difference, ...] = ()
    not_compared: tuple[str, ...] = ()  # kinds the snapshot does not hold, so not compared

    @property
    def differences(self) -> tuple[Difference, ...]:
        return (*(d for pool in self.pools for d in pool.differences), *self.extra_nodes, *self.objects)

    @property
    def adoption(self) -> tuple[Difference, ...]:
        return (*(d for pool in self.pools for d in pool.adoption), *self.object_adoption)

    @property
    def in_sync(self) -> bool:
        return not self.differences


def _labels(planned: PoolNodes, node: SnapshotNode) -> list[Difference]:
    out = []
    actual = node.label_map
    for key, value in planned.labels.items():
        found = actual.get(key)
        if found != value:
            what = "none" if found is None else f"'{found}'"
            message = f"label {key}: expected '{value}', found {what}"
            out.append(Difference(node.name, "label", key, value, found, message))
    return out


def _adopts(difference: Difference, node: SnapshotNode | None) -> bool:
    """Whether gpustack would only add this to a node not yet its own (no gpustack.io/ label): one of its labels
    where the node has no value (a value of the cluster's own is drift: changing it restarts the device plugin), or
    the MIG manager's state where no MIG config label says a manager has acted."""
    if node is not None and any(key.startswith(_ADOPTION_DOMAIN) for key in node.label_map):
        return False  # gpustack's node already (its gpustack.io/ labels say so): a label of its own gone is drift
    if difference.kind == "label" and difference.actual is None:
        return _owned(difference.key)
    if difference.kind == "mig-state" and difference.actual is None and node is not None:
        return node.label(MIG_CONFIG_LABEL) is None
    return False


def _owned(key: str) -> bool:
    return key.startswith(_ADOPTION_DOMAIN) or key in _ADOPTION_LABELS


def _adoption_message(difference: Difference) -> str:
    if difference.kind == "mig-state":
        return f"{MIG_CONFIG_LABEL} set: the MIG manager then confirms the layout ({MIG_STATE_LABEL})"
    return f"label {difference.key}={difference.expected} added"


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
    # A DRA pool's GPUs are in the driver's ResourceSlices, never in the node's allocatable.
    dra = pool.allocation == "dra"
    offers = {} if dra else {offer.resource: offer.per_node for offer in ctx.offers.get(pool.name, ())}
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
    adoption: list[Difference] = []
    for name in names:
        node = snapshot.node(name)
        if node is None:
            differences.append(Difference(name, "missing-node", "", name, None, "missing from the cluster"))
            continue
        found = [*_gpu(ctx, pool, node), *_labels(planned, node)]
        for check in (_resources, _mig_state, _scheduling):
            found += check(ctx, pool, node)
        found += _taints(planned, node)
        for difference in found:
            if _adopts(difference, node):
                adopted = Difference(
                    difference.node,
                    difference.kind,
                    difference.key,
                    difference.expected,
                    difference.actual,
                    _adoption_message(difference),
                )
                adoption.append(adopted)
            else:
                differences.append(difference)
    return PoolDrift(pool.name, names, tuple(differences), tuple(adoption))


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
    objects: list[Difference] = []
    adoption: list[Difference] = []
    not_compared: list[str] = []
    if any(kind in snapshot.kinds for kind in QUOTA_KINDS):
        _quotas(plan, snapshot, objects, adoption)
    elif any(m.kind == "ResourceQuota" for m in plan.objects):
        not_compared.append("ResourceQuota")
    if BINDING_KIND in snapshot.kinds:
        _bindings(plan, snapshot, objects, adoption)
    elif any(m.kind == BINDING_KIND for m in plan.objects):
        not_compared.append(BINDING_KIND)
    kai = [m for m in plan.objects if m.kind == QUEUE_KIND and str(m.obj["apiVersion"]).startswith(KAI_QUEUE_GROUP)]
    if QUEUE_KIND in snapshot.kinds:
        _kai_queues(kai, snapshot, objects)
    elif kai:
        not_compared.append(f"{QUEUE_KIND} ({KAI_QUEUE_GROUP.rstrip('/')})")
    return Drift(
        blueprint_file,
        snapshot.file,
        tuple(pools),
        tuple(_extra_nodes(blueprint, snapshot)),
        tuple(objects),
        tuple(adoption),
        tuple(not_compared),
    )


def _enforced(quotas: list[SnapshotQuota], resource: str) -> Decimal | None:
    """What a namespace's unscoped quotas let its pods have of a resource: the smallest, as the API server enforces."""
    found = [parse_quantity(amount) for q in quotas if not q.scoped for name, amount in q.hard if name == resource]
    return min(found) if found else None


def _quotas(plan: Plan, snapshot: ClusterSnapshot, objects: list[Difference], adoption: list[Difference]) -> None:
    """Each tenant quota the Plan makes against the namespace's quotas: the same name's, else all of them."""
    by_namespace: dict[str, list[SnapshotQuota]] = {}
    for quota in snapshot.quotas:
        by_namespace.setdefault(quota.namespace, []).append(quota)
    for manifest in plan.objects:
        if manifest.kind != "ResourceQuota":
            continue
        if (manifest.obj.get("spec") or {}).get("scopeSelector"):
            continue  # a scoped quota (GKE's for the GPU Operator's critical pods) is no tenant's limit
        namespace = manifest.namespace or "default"
        key = f"{namespace}/{manifest.name}"
        hard = {str(k): str(v) for k, v in (manifest.obj.get("spec", {}).get("hard") or {}).items()}
        present = by_namespace.get(namespace, [])
        same = [q for q in present if q.name == manifest.name]
        if not present:
            message = f"ResourceQuota {key}: missing (the namespace has no quota)"
            objects.append(Difference("", "quota", key, ", ".join(f"{k}={v}" for k, v in hard.items()), None, message))
            continue
        compared = same or present
        changed = [
            (resource, amount, _enforced(compared, resource))
            for resource, amount in sorted(hard.items())
            if _enforced(compared, resource) != parse_quantity(amount)
        ]
        for resource, amount, found in changed:
            what = "no limit" if found is None else _amount(found)
            message = f"ResourceQuota {key}: {resource} expected {amount}, found {what}"
            objects.append(
                Difference("", "quota", f"{key}:{resource}", amount, None if found is None else _amount(found), message)
            )
        if not same and not changed:
            names = ", ".join(q.name for q in present)
            message = f"ResourceQuota {key} created beside {names}, which already enforce the same"
            adoption.append(Difference("", "quota", key, None, None, message))


def _amount(value: Decimal) -> str:
    return str(int(value)) if value == int(value) else str(value)


def _bindings(plan: Plan, snapshot: ClusterSnapshot, objects: list[Difference], adoption: list[Difference]) -> None:
    found = {binding.name: binding for binding in snapshot.policy_bindings}
    for manifest in plan.objects:
        if manifest.kind != BINDING_KIND:
            continue
        actions = tuple(str(a) for a in manifest.obj.get("spec", {}).get("validationActions") or ())
        binding = found.get(manifest.name)
        expected = ", ".join(actions)
        if binding is None:
            message = f"{BINDING_KIND} {manifest.name} created ({expected})"
            adoption.append(Difference("", "policy-binding", manifest.name, expected, None, message))
        elif tuple(sorted(binding.validation_actions)) != tuple(sorted(actions)):
            actual = ", ".join(binding.validation_actions) or "none"
            message = f"{BINDING_KIND} {manifest.name}: validationActions expected {expected}, found {actual}"
            objects.append(Difference("", "policy-binding", manifest.name, expected, actual, message))


def _kai_queues(planned: list[Manifest], snapshot: ClusterSnapshot, objects: list[Difference]) -> None:
    """Each KAI Queue the Plan makes against the snapshot's Queue of that name: gone, or its pool label, its parent or
    a figure changed (KAI schedules by them: a lower limit strands jobs, a lost parent takes a tenant out of its
    cohort, a lost pool label takes the Queue out of its pool's shard)."""
    found = {queue.name: queue for queue in snapshot.queues if queue.scheduler == "kai"}
    for manifest in planned:
        spec = manifest.obj.get("spec") or {}
        queue = found.get(manifest.name)
        if queue is None:
            message = f"KAI Queue {manifest.name}: missing (its tenant's pods would name a queue KAI does not know)"
            objects.append(Difference("", "queue", manifest.name, "present", None, message))
            continue
        pool = ((manifest.obj.get("metadata") or {}).get("labels") or {}).get(POOL_LABEL)
        found_pool = dict(queue.labels).get(POOL_LABEL)
        if pool is not None and found_pool != pool:
            message = (
                f"KAI Queue {manifest.name}: label {POOL_LABEL} expected {pool}, found {found_pool or 'none'} (it "
                "puts the Queue in that pool's KAI shard; elsewhere the shard's jobs do not find it)"
            )
            objects.append(Difference("", "queue", f"{manifest.name}:{POOL_LABEL}", pool, found_pool, message))
        parent = spec.get("parentQueue")
        if parent != queue.parent:
            message = (
                f"KAI Queue {manifest.name}: parentQueue expected {parent or 'none'}, found {queue.parent or 'none'}"
            )
            objects.append(Difference("", "queue", f"{manifest.name}:parentQueue", parent, queue.parent, message))
        for resource, values in sorted((spec.get("resources") or {}).items()):
            for field, value in values.items():
                actual = queue.resource(resource, field)
                if actual is not None and actual == Decimal(str(value)):
                    continue
                shown = "not set" if actual is None else _amount(actual)
                key = f"{manifest.name}:{resource}.{field}"
                message = f"KAI Queue {manifest.name}: {resource}.{field} expected {value}, found {shown}"
                objects.append(Difference("", "queue", key, str(value), None if actual is None else shown, message))


# --- reporters -----------------------------------------------------------------------------------------------


def _count(drift: Drift) -> str:
    differences = drift.differences
    nodes = len({d.node for d in differences if d.node})
    return f"{len(differences)} difference(s) on {nodes} node(s)"


def _tail_text(drift: Drift) -> list[str]:
    """Adoption steps and kinds not compared, after the drift (or the all-clear)."""
    lines: list[str] = []
    if drift.adoption:
        lines += ["", f"adoption: {len(drift.adoption)} step(s) gpustack would only add (not drift):"]
        lines += [f"  {d.node or 'cluster'}: {d.message}" for d in drift.adoption]
    if drift.not_compared:
        lines += ["", f"not compared (not in the snapshot): {', '.join(drift.not_compared)}"]
    return lines


def format_text(drift: Drift) -> str:
    if drift.in_sync:
        lines = [f"{drift.snapshot} matches {drift.blueprint}: {len(drift.pools)} pool(s) in sync", *_tail_text(drift)]
        return "\n".join(lines) + "\n"
    lines = [f"drift between {drift.blueprint} and {drift.snapshot}: {_count(drift)}"]
    for pool in drift.pools:
        state = f"{len(pool.differences)} difference(s)" if pool.differences else "in sync"
        lines += ["", f"pool {pool.name} ({len(pool.nodes)} node(s)): {state}"]
        lines += [f"  {d.node or 'pool'}: {d.message}" for d in pool.differences]
    if drift.extra_nodes:
        lines += ["", "nodes in no pool:"]
        lines += [f"  {d.node}: {d.message}" for d in drift.extra_nodes]
    if drift.objects:
        lines += ["", "cluster objects:"]
        lines += [f"  {d.message}" for d in drift.objects]
    return "\n".join([*lines, *_tail_text(drift)]) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _tail_markdown(drift: Drift) -> str:
    lines: list[str] = []
    if drift.adoption:
        lines += ["", f"Adoption ({len(drift.adoption)} step(s) gpustack would only add, not drift):", ""]
        lines += [f"- {_cell(d.node or 'cluster')}: {_cell(d.message)}" for d in drift.adoption]
    if drift.not_compared:
        lines += ["", f"Not compared (not in the snapshot): {', '.join(drift.not_compared)}."]
    return "\n".join(lines) + "\n" if lines else ""


def format_markdown(drift: Drift) -> str:
    if drift.in_sync:
        head = f"### Cluster in sync\n\n`{drift.snapshot}` matches `{drift.blueprint}` ({len(drift.pools)} pools).\n"
        return head + _tail_markdown(drift)
    lines = [f"### Cluster drift: {_count(drift)}", "", f"`{drift.snapshot}` against `{drift.blueprint}`."]
    lines += ["", "| pool | nodes | differences |", "|---|---:|---:|"]
    lines += [f"| {_cell(p.name)} | {len(p.nodes)} | {len(p.differences)} |" for p in drift.pools]
    rows = [(p.name, d) for p in drift.pools for d in p.differences] + [("", d) for d in drift.extra_nodes]
    rows += [("", d) for d in drift.objects]
    lines += ["", "| pool | node | what | difference |", "|---|---|---|---|"]
    lines += [f"| {_cell(pool) or '—'} | {_cell(d.node)} | {d.kind} | {_cell(d.message)} |" for pool, d in rows]
    return "\n".join(lines) + "\n" + _tail_markdown(drift)


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
                "adoption": [_difference_data(d) for d in pool.adoption],
            }
            for pool in drift.pools
        ],
        "extraNodes": [_difference_data(d) for d in drift.extra_nodes],
        # Added in issue 27 (additive: v1alpha1 readers that ignore unknown fields read on): tenant quotas and
        # policy bindings that drifted, what gpustack would only add, and the kinds the snapshot lacked.
        "objects": [_difference_data(d) for d in drift.objects],
        "adoption": [_difference_data(d) for d in drift.object_adoption],
        "notCompared": list(drift.not_compared),
    }

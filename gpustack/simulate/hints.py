"""gpustack's own explanation of a pending pod, pointing at the line to change.

kube-scheduler counts nodes; it does not say which pool a pod was meant for or which blueprint
line made it miss. A hint looks at the nodes of the pod's own pool and names the cause: a taint
its tolerations miss (and the near-miss key), a label GFD renamed under sharing, a resource no
node advertises, a pool that is full, a quota, or a gang that fits only partly.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from gpustack.context import Context
from gpustack.diagnostic import JsonPath
from gpustack.model import NodePool, SharingStrategy, Tenant
from gpustack.names import GFD_PRODUCT_LABEL, POOL_LABEL
from gpustack.offers import RESOURCE_PREFIX
from gpustack.simulate.claims import display_name
from gpustack.simulate.cluster import Cluster
from gpustack.simulate.demand import Pod
from gpustack.simulate.filters import Verdict
from gpustack.simulate.group import GROUP_INCOMPLETE
from gpustack.simulate.inventory import Node
from gpustack.simulate.kai import OVER_LIMIT
from gpustack.simulate.placement import Rejection, by_classes
from gpustack.simulate.pods import Requirement, Taint, Toleration
from gpustack.simulate.simulation import Pending
from gpustack.taints import taint_text

BLUEPRINT, SCENARIO = "blueprint", "scenario"


@dataclass(frozen=True)
class Hint:
    message: str
    document: str  # BLUEPRINT or SCENARIO: which file `path` is in
    path: JsonPath


@dataclass(frozen=True)
class Stock:
    """One resource of one pool, summed once per report: hints read it for every pending pod."""

    total: int
    largest: int  # on one node
    used: int


def pool_stock(cluster: Cluster) -> dict[str | None, dict[str, Stock]]:
    sums: dict[str | None, dict[str, list[int]]] = {}
    for index, node in enumerate(cluster.nodes):
        pool = sums.setdefault(node.pool, {})
        for resource, capacity in node.allocatable.items():
            entry = pool.setdefault(resource, [0, 0, 0])
            entry[0] += capacity
            entry[1] = max(entry[1], capacity)
            entry[2] += cluster.used[index].get(resource, 0)
    return {pool: {r: Stock(*v) for r, v in resources.items()} for pool, resources in sums.items()}


# id(a pending pod's rejections), pool -> (those rejections, the ones in that pool)
PoolRejections = dict[tuple[int, str | None], tuple[tuple[Rejection, ...], list[Rejection]]]


def explain(
    pending: Pending,
    context: Context,
    cluster: Cluster,
    stock: dict[str | None, dict[str, Stock]] | None = None,
    in_pool: PoolRejections | None = None,
) -> Hint | None:
    """gpustack's hint for a pending pod; `stock` (from pool_stock) saves recounting the nodes for each pod.

    `in_pool` (one per report) saves sorting out the same refusals again: the replicas of a workload
    that does not fit share one tuple of rejections.
    """
    pod = pending.pod
    stock = stock if stock is not None else pool_stock(cluster)
    if pending.quota is not None:
        return _quota_hint(pending, context)
    if pending.event == OVER_LIMIT:
        return _kai_queue_hint(pending, context)
    if pending.gang_partial or pending.message.startswith("Not enough valid tasks"):
        return _gang_hint(pod, context, cluster, pending)
    if not pending.rejections:
        return None
    pool = context.pools.get(pod.source.workload.pool) if pod.source.workload is not None else None
    key = (id(pending.rejections), pool.name if pool is not None else None)
    known = in_pool.get(key) if in_pool is not None else None
    if known is not None and known[0] is pending.rejections:
        mine = known[1]
    else:
        classes = None if pool is None else cluster.pool_classes.get(pool.name, ())
        mine = list(pending.rejections) if classes is None else by_classes(pending.rejections, classes)
        if in_pool is not None:
            in_pool[key] = (pending.rejections, mine)
    if not mine:
        return _where(pod, None, f"no node of pool '{pool.name if pool else '?'}' is in the cluster", ())
    plugin, verdict = _dominant(mine)
    node = cluster.classes[verdict[0].node_class].node
    if plugin == "TaintToleration":
        return _taint_hint(pod, pool or context.pools.get(node.pool or ""), verdict[1].taint)
    if plugin == "NodeAffinity":
        return _affinity_hint(pod, pool, node, context)
    if plugin == "NodeUnschedulable":
        return _where(pod, pool, f"the nodes of pool '{node.pool}' are cordoned (unschedulable)", ("nodeSelector",))
    return _resource_hint(pod, pool, verdict[1], stock, context)


def _dominant(rejections: list[Rejection]) -> tuple[str, tuple[Rejection, Verdict]]:
    """The plugin that refused the most of these nodes, with one of its refusals."""
    counts: Counter[str] = Counter()
    for rejection in rejections:
        counts[_family(rejection.verdict)] += rejection.count
    plugin = max(counts, key=lambda p: (counts[p], p))
    first = next(r for r in rejections if _family(r.verdict) == plugin)
    return plugin, (first, first.verdict)


def _family(verdict: Verdict) -> str:
    return "NodeResourcesFit" if verdict.short or verdict.plugin in ("ResourceFit", "predicates") else verdict.plugin


def _where(pod: Pod, pool: NodePool | None, message: str, fields: Iterable[str], blueprint_path: JsonPath = ()) -> Hint:
    """Point at the scenario field that overrode the compiled spec, else at `blueprint_path` (or the workload)."""
    for name in fields:
        if name in pod.source.scenario:
            return Hint(message, SCENARIO, pod.source.scenario[name])
    if "pod" in pod.source.scenario:
        return Hint(message, SCENARIO, pod.source.scenario["pod"])
    if blueprint_path:
        return Hint(message, BLUEPRINT, blueprint_path)
    workload = pod.source.workload
    return Hint(message, BLUEPRINT, workload.path if workload is not None else pool.path if pool is not None else ())


def _taint_hint(pod: Pod, pool: NodePool | None, taint: Taint | None) -> Hint:
    where = f"pool '{pool.name}'" if pool is not None else "the nodes"
    if taint is None:
        return _where(pod, pool, f"the pods of '{pod.workload}' do not tolerate a taint of {where}", ("tolerations",))
    message = f"{where} is tainted {taint_text(taint)} and the pods of '{pod.workload}' do not tolerate it"
    near = _near_miss(pod.shape.tolerations, taint)
    if near is not None:
        message += f": the toleration is keyed '{near.key}', the taint '{taint.key}' (keys must match exactly)"
    if "tolerations" in pod.source.scenario or "pod" in pod.source.scenario:
        message += "; let gpustack derive tolerations from the pool's taints instead of typing them twice"
        return _where(pod, pool, message, ("tolerations",))
    taints = pool.taints if pool is not None else ()
    index = next((i for i, t in enumerate(taints) if t.key == taint.key and t.effect == taint.effect), None)
    path = (*pool.path, "taints", index) if pool is not None and index is not None else ()
    return _where(pod, pool, message + "; change the taint or the pool the workload runs on", (), path)


def _near_miss(tolerations: Iterable[Toleration], taint: Taint) -> Toleration | None:
    """A toleration that would match but for its key (gpu vs nvidia.com/gpu: the seed's mistake)."""
    for toleration in tolerations:
        other_key = bool(toleration.key) and toleration.key != taint.key
        same_effect = toleration.effect in (None, "", taint.effect)
        same_value = toleration.operator == "Exists" or (toleration.value or "") == (taint.value or "")
        if other_key and same_effect and same_value:
            return toleration
    return None


def _affinity_hint(pod: Pod, pool: NodePool | None, node: Node, context: Context) -> Hint:
    failing = _failing_requirement(pod, node)
    where = f"pool '{pool.name}'" if pool is not None else "the nodes"
    fields = ("affinity", "nodeSelector")
    if failing is None:
        return _where(pod, pool, f"no node of {where} matches the pods' node selector or affinity", fields)
    key, wanted, phrase = failing
    have = node.labels.get(key)
    message = f"the pods of '{pod.workload}' require {key} {phrase}, but the nodes of {where} "
    message += f"have {key}={have}" if have is not None else f"have no label {key}"
    if key == GFD_PRODUCT_LABEL and have is not None and pool is not None:
        message += _product_note(have, wanted, pool, context)
        if any(have.startswith(w + "-") for w in wanted):
            return _where(pod, pool, message, fields, (*pool.path, "sharing"))
    return _where(pod, pool, message, fields)


def _product_note(have: str, wanted: Iterable[str], pool: NodePool, context: Context) -> str:
    for value in wanted:
        if have.startswith(value + "-SHARED"):
            # A mixed MIG pool's whole GPUs are -SHARED when mig.timeSlicing time-slices them.
            how = "time-slicing" if pool.sharing.strategy is SharingStrategy.MIG else pool.sharing.strategy
            return (
                f": GPU Feature Discovery appends -SHARED to the product of a GPU shared by {how} "
                f"(pool '{pool.name}', renameByDefault false), without renaming the resource; select "
                f"{POOL_LABEL}={pool.name}, which sharing never changes, or set renameByDefault: true"
            )
        if have.startswith(value + "-MIG-"):
            return (
                f": under the single MIG strategy GFD reports the slice ({have}), not the whole GPU; select "
                f"{POOL_LABEL}={pool.name} instead"
            )
    unknown = [v for v in wanted if context.catalog.resolve(v) is None]
    if unknown:
        models = (context.catalog.resolve(name) for name in context.catalog.suggest(unknown[0]))
        suggestions = list(dict.fromkeys(m.product_label for m in models if m is not None))
        return f": no GPU reports {GFD_PRODUCT_LABEL}={unknown[0]}" + (
            f" (real values look like {', '.join(suggestions)})" if suggestions else ""
        )
    return ""


def _failing_requirement(pod: Pod, node: Node) -> tuple[str, tuple[str, ...], str] | None:
    """The first selector or required-affinity requirement the node fails: key, values, and how it reads."""
    for key, value in pod.shape.node_selector:
        if node.labels.get(key) != value:
            return key, (value,), f"= {value}"
    for term in pod.shape.required or ():
        for requirement in term.requirements:
            if not requirement.matches(node.labels, node.name):
                return requirement.key, requirement.values, _phrase(requirement)
    return None


def _phrase(requirement: Requirement) -> str:
    values = ", ".join(requirement.values)
    return {
        "In": f"in [{values}]",
        "NotIn": f"not in [{values}]",
        "Exists": "to exist",
        "DoesNotExist": "to be absent",
        "Gt": f"> {values}",
        "Lt": f"< {values}",
    }[requirement.operator]


def _resource_hint(
    pod: Pod, pool: NodePool | None, verdict: Verdict, stock: dict[str | None, dict[str, Stock]], context: Context
) -> Hint:
    resource = verdict.short[0] if verdict.short else "pods"
    pools = [stock.get(pool.name, {})] if pool is not None else list(stock.values())
    where = f"pool '{pool.name}'" if pool is not None else "the cluster"
    have = [p[resource] for p in pools if resource in p]
    total, largest, used = (
        sum(s.total for s in have),
        max((s.largest for s in have), default=0),
        sum(s.used for s in have),
    )
    quantity = pod.shape.request(resource)
    fields = ("resources",)
    if total == 0:
        offered = sorted({r for p in pools for r, s in p.items() if s.total and r.startswith(RESOURCE_PREFIX)})
        offers = ", ".join(offered) or "no GPU resources"
        message = f"no node of {where} advertises {display_name(resource)}; it offers {offers}"
        if resource.startswith(RESOURCE_PREFIX + "mig-") and pool is not None:
            profile = resource.removeprefix(RESOURCE_PREFIX + "mig-")
            message += _mig_note(profile, pool, context)
            return _where(pod, pool, message, fields, (*pool.path, "sharing"))
        return _where(pod, pool, message, fields, _gpu_path(pod))
    if quantity > largest:
        message = f"one pod asks for {quantity} {display_name(resource)}, but a node of {where} has only {largest}"
        return _where(pod, pool, message, fields, _gpu_path(pod))
    message = (
        f"{where} has {total} {display_name(resource)} and the pods placed there hold {used}; "
        f"add nodes to {where} or run fewer pods of '{pod.workload}'"
    )
    return _where(pod, pool, message, fields, (*pool.path, "nodes") if pool is not None else ())


def _mig_note(profile: str, pool: NodePool, context: Context) -> str:
    model = context.models.get(pool.name)
    if model is not None and model.mig is not None and model.mig.profile(profile) is not None:
        return f"; add {profile} to the pool's MIG layout, or ask for a profile it offers"
    owners = sorted(name for name, geometry in context.catalog.geometries.items() if geometry.profile(profile))
    gpu = model.key if model is not None else "the pool's GPU"
    elsewhere = f" (it is a profile of {', '.join(owners)})" if owners else ""
    return f"; {profile} is not a MIG profile of {gpu}{elsewhere}: ask for a profile the pool offers"


def _gpu_path(pod: Pod) -> JsonPath:
    workload = pod.source.workload
    return workload.gpu.path if workload is not None else ()


def _quota_hint(pending: Pending, context: Context) -> Hint:
    assert pending.quota is not None
    pod = pending.pod
    key = pending.quota.exceeded[0]
    resource = key.removeprefix("requests.").removeprefix("limits.")
    tenant = next((t for t in context.blueprint.tenants if pod.namespace in t.namespaces), None)
    limit = pending.quota.quota.hard[key]
    message = (
        f"namespace '{pod.namespace}' may hold {limit} {key} (quota {pending.quota.quota.name}) and the pods created "
        f"before this one take it all; raise the tenant's quota or run fewer pods of '{pod.workload}'"
    )
    if tenant is None:  # a namespace no tenant owns: its quota is not the blueprint's to change
        return _where(pod, None, message, ())
    return Hint(message, BLUEPRINT, _quota_path(tenant, resource, context))


def _kai_queue_hint(pending: Pending, context: Context) -> Hint:
    """KAI held the job at its queue's limit, which compile writes from the tenant's quota (in GPU units)."""
    pod = pending.pod
    tenant = next((t for t in context.blueprint.tenants if pod.namespace in t.namespaces), None)
    owner = f"tenant '{tenant.name}'" if tenant is not None else "its tenant"
    workload = pod.source.workload
    on = f" on pool '{workload.pool}'" if workload is not None else ""
    message = (
        f"the KAI queue named above is at its limit, which is {owner}'s quota{on} in GPU units (a MIG device counts "
        f"its slices; each pool is a KAI shard of its own); raise the quota or run fewer pods of '{pod.workload}'"
    )
    resource = next((r for r, _ in pod.shape.requests if r.startswith(RESOURCE_PREFIX)), None)
    if tenant is None or resource is None:
        return _where(pod, None, message, ())
    return Hint(message, BLUEPRINT, _quota_path(tenant, resource, context, workload.pool if workload else None))


def _quota_path(tenant: Tenant, resource: str, context: Context, on: str | None = None) -> JsonPath:
    """The tenant's quota line for the resource (on pool `on` where given, else the first pool naming it)."""
    short = resource.removeprefix(RESOURCE_PREFIX)
    for pool, items in tenant.quota:
        if (on is None or pool == on) and any(name == short for name, _ in items):
            return (*tenant.path, "quota", pool, short)
    return (*tenant.path, "quota") if tenant.quota else tenant.path


def _gang_hint(pod: Pod, context: Context, cluster: Cluster, pending: Pending) -> Hint:
    workload = pod.source.workload
    if pending.message.startswith(("Not enough valid tasks", GROUP_INCOMPLETE)):
        message = (
            f"the namespace quota refused some workers of '{pod.workload}', so its gang can never be complete; "
            "raise the tenant's quota or lower workers"
        )
        tenant = next((t for t in context.blueprint.tenants if pod.namespace in t.namespaces), None)
        resource = next((r for r, _ in pod.shape.requests if r.startswith(RESOURCE_PREFIX)), None)
        if tenant is not None and resource is not None:
            return Hint(message, BLUEPRINT, _quota_path(tenant, resource, context))
        return _where(pod, None, message, (), workload.path if workload is not None else ())
    pool = context.pools.get(workload.pool) if workload is not None else None
    where = f"pool '{pool.name}'" if pool is not None else "the cluster"
    field = "size" if workload is not None and workload.size is not None else "workers"
    members = "workers" if field == "workers" else "group's pods"
    message = (
        f"'{pod.workload}' is gang-scheduled: all its {members} "
        f"start together or none does, and {where} cannot hold them all at once; add nodes to {where} or lower {field}"
    )
    path = (*workload.path, field) if workload is not None and workload.gang is not None else ()
    return _where(pod, pool, message, ("resources",), path)

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
from gpustack.model import NodePool, Tenant
from gpustack.offers import RESOURCE_PREFIX
from gpustack.simulate.cluster import Cluster
from gpustack.simulate.demand import Pod
from gpustack.simulate.filters import Verdict
from gpustack.simulate.inventory import Node
from gpustack.simulate.placement import Rejection
from gpustack.simulate.pods import Requirement, Taint, Toleration
from gpustack.simulate.simulation import Pending

BLUEPRINT, SCENARIO = "blueprint", "scenario"
PRODUCT_LABEL = "nvidia.com/gpu.product"


@dataclass(frozen=True)
class Hint:
    message: str
    document: str  # BLUEPRINT or SCENARIO: which file `path` is in
    path: JsonPath


def explain(pending: Pending, context: Context, cluster: Cluster) -> Hint | None:
    pod = pending.pod
    if pending.quota is not None:
        return _quota_hint(pending, context)
    if pending.message.startswith(("Not enough valid tasks", "Pod ")) or "tasks in gang" in pending.message:
        return _gang_hint(pod, context, cluster, pending)
    if not pending.rejections:
        return None
    pool = context.pools.get(pod.source.workload.pool) if pod.source.workload is not None else None
    mine = [r for r in pending.rejections if pool is None or cluster.classes[r.node_class].node.pool == pool.name]
    if not mine:
        return _where(pod, None, f"no node of pool '{pool.name if pool else '?'}' is in the cluster", ())
    plugin, verdict = _dominant(mine)
    node = cluster.classes[verdict[0].node_class].node
    if plugin == "TaintToleration":
        return _taint_hint(pod, pool, verdict[1].taint, context)
    if plugin == "NodeAffinity":
        return _affinity_hint(pod, pool, node, context)
    if plugin == "NodeUnschedulable":
        return _where(pod, pool, f"the nodes of pool '{node.pool}' are cordoned (unschedulable)", ("nodeSelector",))
    return _resource_hint(pod, pool, verdict[1], cluster, context)


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


def _taint_hint(pod: Pod, pool: NodePool | None, taint: Taint | None, context: Context) -> Hint:
    assert taint is not None
    shown = f"{taint.key}={taint.value}:{taint.effect}" if taint.value else f"{taint.key}:{taint.effect}"
    where = f"pool '{pool.name}'" if pool is not None else "the nodes"
    message = f"{where} is tainted {shown} and the pods of '{pod.workload}' do not tolerate it"
    near = _near_miss(pod.shape.tolerations, taint)
    if near is not None:
        message += f": the toleration is keyed '{near.key}', the taint '{taint.key}'; keys must match exactly"
    if "tolerations" in pod.source.scenario or "pod" in pod.source.scenario:
        message += (
            "; derive tolerations from the pool's taints (gpustack's compiled template does) instead of typing them"
        )
        return _where(pod, pool, message, ("tolerations",))
    index = (
        next((i for i, t in enumerate(pool.taints) if t.key == taint.key and t.effect == taint.effect), None)
        if pool
        else None
    )
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
    key, wanted = failing
    have = node.labels.get(key)
    message = f"the pods of '{pod.workload}' require {key} in [{', '.join(wanted)}], but the nodes of {where} "
    message += f"have {key}={have}" if have is not None else f"have no label {key}"
    if key == PRODUCT_LABEL and have is not None and pool is not None:
        message += _product_note(have, wanted, pool, context)
        if any(have.startswith(w + "-") for w in wanted):
            return _where(pod, pool, message, fields, (*pool.path, "sharing"))
    return _where(pod, pool, message, fields)


def _product_note(have: str, wanted: Iterable[str], pool: NodePool, context: Context) -> str:
    for value in wanted:
        if have.startswith(value + "-SHARED"):
            return (
                f": GPU Feature Discovery appends -SHARED to the product of a GPU shared by {pool.sharing.strategy} "
                f"(pool '{pool.name}', renameByDefault false), without renaming the resource; select "
                f"gpustack.io/pool={pool.name}, which sharing never changes, or set renameByDefault: true"
            )
        if have.startswith(value + "-MIG-"):
            return (
                f": under the single MIG strategy GFD reports the slice ({have}), not the whole GPU; select "
                f"gpustack.io/pool={pool.name} instead"
            )
    unknown = [v for v in wanted if context.catalog.resolve(v) is None]
    if unknown:
        suggestions = context.catalog.suggest(unknown[0])
        return f": no GPU reports {PRODUCT_LABEL}={unknown[0]}" + (
            f" (real values look like {', '.join(suggestions)})" if suggestions else ""
        )
    return ""


def _failing_requirement(pod: Pod, node: Node) -> tuple[str, tuple[str, ...]] | None:
    for key, value in pod.shape.node_selector:
        if node.labels.get(key) != value:
            return key, (value,)
    for term in pod.shape.required or ():
        for requirement in term.requirements:
            if not requirement.matches(node.labels, node.name):
                return requirement.key, _shown(requirement)
    return None


def _shown(requirement: Requirement) -> tuple[str, ...]:
    return requirement.values if requirement.values else (f"<{requirement.operator}>",)


def _resource_hint(pod: Pod, pool: NodePool | None, verdict: Verdict, cluster: Cluster, context: Context) -> Hint:
    resource = verdict.short[0] if verdict.short else "pods"
    nodes = [n for n in cluster.nodes if pool is None or n.pool == pool.name]
    where = f"pool '{pool.name}'" if pool is not None else "the cluster"
    capacity = [n.capacity(resource) or 0 for n in nodes]
    quantity = pod.shape.request(resource)
    fields = ("resources",)
    if not any(capacity):
        offered = sorted({r for n in nodes for r, v in n.allocatable.items() if v and r.startswith(RESOURCE_PREFIX)})
        message = f"no node of {where} advertises {resource}; it offers {', '.join(offered) or 'no GPU resources'}"
        if resource.startswith(RESOURCE_PREFIX + "mig-") and pool is not None:
            profile = resource.removeprefix(RESOURCE_PREFIX + "mig-")
            model = context.models.get(pool.name)
            real = model is not None and model.mig is not None and model.mig.profile(profile) is not None
            message += (
                f"; add {profile} to the pool's MIG layout or ask for an offered profile"
                if real
                else f"; {profile} is not a MIG profile of {model.key if model else 'its GPU'}: ask for an offered one"
            )
            return _where(pod, pool, message, fields, (*pool.path, "sharing"))
        return _where(pod, pool, message, fields, _gpu_path(pod))
    if quantity > max(capacity):
        message = f"one pod asks for {quantity} {resource}, but a node of {where} has only {max(capacity)}"
        return _where(pod, pool, message, fields, _gpu_path(pod))
    used = sum(cluster.used[i].get(resource, 0) for i, n in enumerate(cluster.nodes) if n in nodes)
    message = (
        f"{where} has {sum(capacity)} {resource} on {len(nodes)} node(s) and the pods placed before this one "
        f"hold {used}; "
        f"add nodes to {where} or lower the replicas of '{pod.workload}'"
    )
    return _where(pod, pool, message, fields, (*pool.path, "nodes") if pool is not None else ())


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
        f"before this one take it all; raise the tenant's quota or lower the replicas of '{pod.workload}'"
    )
    path = _quota_path(tenant, resource, context) if tenant is not None else ()
    return _where(pod, None, message, (), path)


def _quota_path(tenant: Tenant, resource: str, context: Context) -> JsonPath:
    short = resource.removeprefix(RESOURCE_PREFIX)
    for pool, items in tenant.quota:
        if any(name == short for name, _ in items):
            return (*tenant.path, "quota", pool, short)
    return (*tenant.path, "quota") if tenant.quota else tenant.path


def _gang_hint(pod: Pod, context: Context, cluster: Cluster, pending: Pending) -> Hint:
    workload = pod.source.workload
    if pending.message.startswith("Not enough valid tasks"):
        message = (
            f"some workers of '{pod.workload}' were refused by the namespace quota, so the gang can never be complete"
        )
        return _where(pod, None, message, (), workload.path if workload is not None else ())
    pool = context.pools.get(workload.pool) if workload is not None else None
    where = f"pool '{pool.name}'" if pool is not None else "the cluster"
    message = (
        f"'{pod.workload}' is gang-scheduled: all its workers start together or none does, and {where} cannot hold "
        f"them all at once; add nodes to {where} or lower workers"
    )
    path = (*workload.path, "workers") if workload is not None and workload.workers is not None else ()
    return _where(pod, pool, message, ("resources",), path)

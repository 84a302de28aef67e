"""What keeps a tenant's template inside the tenant (M3, M4, N3, N15): its pool's nodes and taints, the GPU
resources its pool advertises, its schedulers, priority classes and Volcano queue.

These are the rules the admission policies apply on a cluster (compile/admission.py), checked on the rendered
object before anything reaches one, from the same facts: `selection.pool_node_labels` for the node labels that
tell pools apart (the provider node-pool keys of cloud and selector pools included), `allowed_priority_classes`
for priority, `schedulers.queue_name` for the queue.
"""

from __future__ import annotations

from typing import Any

from gpustack.context import Context
from gpustack.model import PRIORITY_VALUES, Scheduler, SharingStrategy, Workload
from gpustack.names import VOLCANO_DEFAULT_QUEUE, VOLCANO_QUEUE_ANNOTATION, VOLCANO_SCHEDULER, priority_class_name
from gpustack.offers import RESOURCE_PREFIX
from gpustack.plan import Object
from gpustack.quantity import parse_quantity
from gpustack.schedulers import (
    KAI_FRACTION_ANNOTATIONS,
    KAI_NODE_POOL_LABEL,
    KAI_QUEUE_LABEL,
    KAI_SCHEDULER,
    kai_leaf_queue,
    queue_name,
)
from gpustack.selection import HOSTNAME_LABEL, pool_node_labels
from gpustack.taints import read_toleration, taint_text
from gpustack.template_kinds import VOLCANO_JOB, PodTemplate, at, containers, every_metadata, kind_of, listed

DEFAULT_SCHEDULER = "default-scheduler"
# Where Volcano reads a queue: a pod's annotation (Volcano makes a PodGroup of it), the same annotation on the
# object that owns the pods (inherited by the PodGroup; LeaderWorkerSet's Volcano provider reads it there), and
# the annotation the Volcano Job controller stamps on its pods, which other Volcano components read back.
QUEUE_KEYS = (VOLCANO_QUEUE_ANNOTATION, "volcano.sh/queue-name")
PLACE = "let gpustack place the pod: keep `affinity: {{ affinity | toyaml }}` and drop node pins"
PRIORITY_HINT = "drop priorityClassName, or keep the one gpustack sets from the tenant's priority"


def allowed_priority_classes(ctx: Context, tenant_name: str) -> list[str]:
    """gpustack's classes at or below the tenant's own level: never another tenant's higher one, never system-*."""
    tenant = ctx.tenants.get(tenant_name)
    if tenant is None:
        return []
    ceiling = PRIORITY_VALUES[tenant.priority]
    return [priority_class_name(level) for level, value in PRIORITY_VALUES.items() if value <= ceiling]


def _priority_problem(ctx: Context, workload: Workload, where: str, priority: Any) -> list[tuple[str, str]]:
    classes = allowed_priority_classes(ctx, workload.tenant)
    if priority in (None, "") or priority in classes:
        return []
    return [
        (
            f"{where}priorityClassName '{priority}' is not one of tenant '{workload.tenant}''s classes "
            f"({', '.join(classes)}): it could preempt other tenants' pods",
            PRIORITY_HINT,
        )
    ]


def own_queue(ctx: Context, workload: Workload) -> str:
    """The one Volcano queue the workload's pods may use: its tenant's, or Volcano's default queue for a tenant on
    another scheduler (what gpustack generates, workloads.volcano_job)."""
    tenant = ctx.tenants.get(workload.tenant)
    if tenant is not None and tenant.scheduler is Scheduler.VOLCANO:
        return queue_name(tenant)
    return VOLCANO_DEFAULT_QUEUE


def _queue_problem(ctx: Context, workload: Workload, where: str, queue: Any) -> list[tuple[str, str]]:
    allowed = own_queue(ctx, workload)
    if queue == allowed:
        return []
    named = "no queue, so Volcano's default queue" if queue in (None, "") else f"Volcano queue {queue!r}"
    return [
        (
            f"{where} names {named}; workload '{workload.name}' of tenant '{workload.tenant}' may only use "
            f"queue '{allowed}': another queue is another tenant's capability, weight and reclaim",
            f"keep the queue gpustack sets ('{allowed}'), or drop the field",
        )
    ]


def object_problems(ctx: Context, workload: Workload, obj: Object) -> list[tuple[str, str]]:
    """Rules on the object itself, outside its pod specs: its Volcano queue and priority, its metadata's queue
    annotations, a Service's external IPs."""
    spec = obj.get("spec")
    spec = spec if isinstance(spec, dict) else {}
    problems = []
    if kind_of(obj) == ("v1", "Service") and spec.get("externalIPs"):
        problems.append(
            (
                "with spec.externalIPs: it intercepts traffic to those addresses for the whole cluster (CVE-2020-8554)",
                "drop externalIPs; expose the workload with a LoadBalancer or an Ingress the cluster operator owns",
            )
        )
    if kind_of(obj) == VOLCANO_JOB:
        name = spec.get("schedulerName")
        if name not in (None, VOLCANO_SCHEDULER):
            problems.append((f"with spec.schedulerName '{name}'", "a Volcano Job runs under the volcano scheduler"))
        problems += _queue_problem(ctx, workload, "whose spec.queue", spec.get("queue"))
        problems += _priority_problem(ctx, workload, "whose spec.", spec.get("priorityClassName"))
    for where, metadata in every_metadata(obj):
        for field_name in ("annotations", "labels"):
            values = at(metadata, field_name)
            for key in QUEUE_KEYS:
                if isinstance(values, dict) and key in values:
                    problems += _queue_problem(ctx, workload, f"whose {where}.{field_name} {key}", values[key])
    return problems + _kai_queue_problems(ctx, workload, obj)


def own_kai_leaf(ctx: Context, workload: Workload) -> str | None:
    """The one KAI leaf Queue the workload's pods may name (its namespace's, in its pool's shard), for a KAI tenant."""
    tenant = ctx.tenants.get(workload.tenant)
    if tenant is None or tenant.scheduler is not Scheduler.KAI:
        return None
    return kai_leaf_queue(tenant, ctx.namespace_of(workload), workload.pool)


def _kai_queue_problems(ctx: Context, workload: Workload, obj: Object) -> list[tuple[str, str]]:
    """KAI reads the queue label on the workload object and its pod templates, and puts the PodGroup in the shard of
    the object's pool label: each must be the workload's own leaf and pool, as the admission policy requires."""
    own = own_kai_leaf(ctx, workload)
    if own is None:  # only a KAI tenant's pods are KAI's (its scheduler list): a label elsewhere is read by nobody
        return []
    named = [
        (where, at(metadata, "labels", KAI_QUEUE_LABEL))
        for where, metadata in every_metadata(obj)
        if isinstance(at(metadata, "labels"), dict) and KAI_QUEUE_LABEL in at(metadata, "labels")
    ]
    problems = []
    for where, queue in named:
        if queue != own:
            problems.append(
                (
                    f"whose {where}.labels {KAI_QUEUE_LABEL} names KAI queue {queue!r}; workload '{workload.name}' "
                    f"of tenant '{workload.tenant}' may only name its leaf '{own}': another queue is another "
                    "tenant's quota, or another pool's",
                    f"keep the label gpustack sets ('{own}')",
                )
            )
    for where, metadata in every_metadata(obj):
        annotations = at(metadata, "annotations")
        for key in KAI_FRACTION_ANNOTATIONS:
            if isinstance(annotations, dict) and key in annotations:
                problems.append(
                    (
                        f"whose {where}.annotations ask KAI for a share of a GPU ({key}): KAI would hand the pod its "
                        "GPU as NVIDIA_VISIBLE_DEVICES from a ConfigMap in its namespace, which the tenant can write, "
                        "with no memory isolation from other namespaces' pods on the device",
                        "drop the annotation; share the pool's GPUs by its time-slicing or MIG (sharing.strategy)",
                    )
                )
    pool = at(obj, "metadata", "labels", KAI_NODE_POOL_LABEL)
    if named and pool != workload.pool:
        problems.append(
            (
                f"whose metadata.labels {KAI_NODE_POOL_LABEL} is {pool!r}, not its pool '{workload.pool}': KAI puts "
                "the PodGroup in the shard that label names, where its leaf queue is not",
                f"keep the label gpustack sets ({KAI_NODE_POOL_LABEL}: {workload.pool})",
            )
        )
    return problems


def _own_labels(ctx: Context, pool_name: str) -> tuple[set[str], set[str]]:
    """(every node label key pools are told apart by, 'key=value' of this pool's nodes): the admission policy's."""
    keys: set[str] = set()
    own: set[str] = set()
    for pool in ctx.blueprint.pools:
        pairs = pool_node_labels(pool)
        keys.update(key for key, _ in pairs)
        if pool.name == pool_name:
            own.update(f"{key}={value}" for key, value in pairs)
    return keys, own


def _selected_pairs(spec: dict[str, Any]) -> list[tuple[str, str, list[Any]]]:
    """(where, key, values) for every node a pod spec's nodeSelector or required node affinity names."""
    found: list[tuple[str, str, list[Any]]] = []
    selector = spec.get("nodeSelector")
    for key, value in selector.items() if isinstance(selector, dict) else []:
        found.append(("nodeSelector", str(key), [value]))
    required = at(spec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
    for term in listed(at(required, "nodeSelectorTerms")):
        for field_name, rename in (("matchExpressions", None), ("matchFields", HOSTNAME_LABEL)):
            for expression in listed(at(term, field_name)):
                if not isinstance(expression, dict):
                    continue
                key = (
                    rename if rename is not None and expression.get("key") == "metadata.name" else expression.get("key")
                )
                values = listed(expression.get("values"))
                found.append((f"required node affinity ({expression.get('operator')})", str(key), values))
    return found


def _allowed_schedulers(ctx: Context, workload: Workload) -> set[Any]:
    names: set[Any] = {None, "", DEFAULT_SCHEDULER}
    tenant = ctx.tenants.get(workload.tenant)
    if tenant is not None and tenant.scheduler is Scheduler.VOLCANO:
        names.add(VOLCANO_SCHEDULER)
    if tenant is not None and tenant.scheduler is Scheduler.KAI:
        names.add(KAI_SCHEDULER)  # what gpustack writes on a KAI tenant's pods (workloads.scheduler_name)
    pool = ctx.pools.get(workload.pool)
    if pool is not None and pool.sharing.strategy is SharingStrategy.HAMI:
        names.add(ctx.blueprint.hami.scheduler_name)
    return names


def _toleration_problems(ctx: Context, pool_name: str, spec: dict[str, Any]) -> list[tuple[str, str]]:
    pool = ctx.pools.get(pool_name)
    if pool is None:
        return []
    given = [t for t in listed(spec.get("tolerations")) if isinstance(t, dict)]
    keyed = [t for t in map(read_toleration, given) if t is not None and t.key]  # wildcards are refused below
    problems = []
    hint_exact = "keep `tolerations` as gpustack derives them: `tolerations: {{ tolerations | toyaml }}`"
    for index, toleration in enumerate(given):
        if not toleration.get("key"):
            problems.append(
                (
                    f"tolerations[{index}] has no key: a wildcard toleration tolerates every pool's taints",
                    hint_exact,
                )
            )
    own = {(t.key, t.value, t.effect) for t in pool.taints}
    for taint in pool.taints:
        if not any(t.tolerates(taint) for t in keyed):
            problems.append(
                (
                    f"tolerations do not tolerate taint {taint_text(taint)} of pool '{pool.name}': "
                    "its pods would stay Pending",
                    hint_exact,
                )
            )
    for other in ctx.blueprint.pools:
        if other.name == pool.name:
            continue
        for taint in other.taints:
            if (taint.key, taint.value, taint.effect) in own:
                continue
            if any(t.tolerates(taint) for t in keyed):
                problems.append(
                    (
                        f"tolerations tolerate taint {taint_text(taint)} of pool '{other.name}': "
                        f"a workload of pool '{pool.name}' may only tolerate its own pool's taints",
                        hint_exact,
                    )
                )
    return problems


def _quantity_equal(left: Any, right: Any) -> bool:
    try:
        return bool(parse_quantity(str(left)) == parse_quantity(str(right)))
    except (ValueError, ArithmeticError):  # not a quantity: the API server rejects it anyway; compare as written
        return str(left) == str(right)


def _is_extended(resource: str) -> bool:
    domain = resource.split("/", 1)[0] if "/" in resource else ""
    return bool(domain) and domain != "kubernetes.io" and not domain.endswith(".kubernetes.io")


def _resource_problems(ctx: Context, pool_name: str, label: str, container: dict[str, Any]) -> list[tuple[str, str]]:
    problems = []
    advertised = {offer.resource for offer in ctx.offers.get(pool_name, ())}
    resources = container.get("resources")
    resources = resources if isinstance(resources, dict) else {}
    requests = raw_requests if isinstance(raw_requests := resources.get("requests"), dict) else {}
    limits = raw_limits if isinstance(raw_limits := resources.get("limits"), dict) else {}
    for name in sorted({str(key) for key in (*requests, *limits)}):
        if name.startswith(RESOURCE_PREFIX) and name not in advertised:
            offered = ", ".join(sorted(advertised)) or "none"
            problems.append(
                (
                    f"{label} asks for {name}, which pool '{pool_name}' does not advertise (it offers {offered})",
                    "use the resources gpustack resolved: `{{ resources }}`, or the requests in `manifest`",
                )
            )
        if _is_extended(name) and (
            name not in requests or name not in limits or not _quantity_equal(requests[name], limits[name])
        ):
            problems.append(
                (
                    f"{label} resources: requests and limits of extended resource {name} differ "
                    f"(requests {requests.get(name)!r}, limits {limits.get(name)!r})",
                    "Kubernetes requires requests == limits for extended resources: set both to the same amount",
                )
            )
    return problems


def pod_problems(
    ctx: Context, workload: Workload, obj: Object, template: PodTemplate, spec: dict[str, Any]
) -> list[tuple[str, str]]:
    """The pod-level rules the admission policies apply, checked before anything reaches a cluster."""
    problems = _toleration_problems(ctx, workload.pool, spec)
    if spec.get("nodeName"):
        problems.append((f"nodeName pins the pod to node '{spec['nodeName']}', past the scheduler and taints", PLACE))
    keys, own = _own_labels(ctx, workload.pool)
    for where, key, values in _selected_pairs(spec):
        if key not in keys:
            continue
        foreign = [str(v) for v in values if f"{key}={v}" not in own]
        if foreign or (not values and where.startswith("required")):
            problems.append(
                (
                    f"{where} selects {key} {', '.join(foreign) or '(any value)'}, which is not a label of pool "
                    f"'{workload.pool}'",
                    PLACE,
                )
            )
    scheduler = spec.get("schedulerName")
    allowed = _allowed_schedulers(ctx, workload)
    if scheduler not in allowed:
        names = ", ".join(sorted(str(n) for n in allowed if n))
        problems.append((f"schedulerName '{scheduler}' is not one of this tenant's schedulers ({names})", PLACE))
    problems += _priority_problem(ctx, workload, "", spec.get("priorityClassName"))
    tenant = ctx.tenants.get(workload.tenant)
    volcano_tenant = tenant is not None and tenant.scheduler is Scheduler.VOLCANO
    if volcano_tenant and scheduler == VOLCANO_SCHEDULER and kind_of(obj) != VOLCANO_JOB:
        # Volcano makes a PodGroup of such a pod, in the queue its annotation (or its owner's) names, else its
        # default queue: without one, the tenant's pods leave its queue's capability.
        named = [
            at(metadata, "annotations", VOLCANO_QUEUE_ANNOTATION)
            for metadata in (template.metadata, obj.get("metadata"))
        ]
        if not any(isinstance(queue, str) and queue for queue in named):
            problems += _queue_problem(ctx, workload, f"{VOLCANO_QUEUE_ANNOTATION} annotation: the pod", None)
    own_leaf = own_kai_leaf(ctx, workload)
    if own_leaf is not None and scheduler == KAI_SCHEDULER:
        # KAI puts a pod (or its top owner) naming no queue in its default-queue, outside the tenant's quota.
        named = [at(metadata, "labels", KAI_QUEUE_LABEL) for metadata in (template.metadata, obj.get("metadata"))]
        if not any(isinstance(queue, str) and queue for queue in named):
            problems.append(
                (
                    f"the pod names no KAI queue ({KAI_QUEUE_LABEL}): KAI would put it in its default-queue, outside "
                    f"tenant '{workload.tenant}''s quota",
                    f"keep the label gpustack sets ({KAI_QUEUE_LABEL}: {own_leaf})",
                )
            )
    for label, container in containers(spec):
        problems += _resource_problems(ctx, workload.pool, label, container)
    return problems

"""Workloads as ready-to-use objects: Deployments, StatefulSets, Jobs and Volcano Jobs with correct GPU scheduling.

Everything that makes a GPU pod land is derived, never typed twice: tolerations come from exactly its pool's
taints, the required node affinity is gpustack's own pool label (GFD's product label changes with sharing:
`-SHARED`, `-MIG-3g.40gb`), and the GPU resource names and amounts are the ones `Context.requests` resolved
against what the pool advertises, with requests equal to limits.

The workloads family lives below the checks, not in compile/: the template check (checks/templates.py) renders each
workload's template exactly as compile does, through `workload_manifests`, so `validate` fails exactly where
`compile` would.
"""

from __future__ import annotations

import math
from decimal import ROUND_FLOOR, Decimal
from typing import Any

from gpustack.context import Context
from gpustack.diagnostic import Diagnostic
from gpustack.dra import claim_devices, claim_template, is_dra
from gpustack.model import NodePool, Scheduler, SharingStrategy, Tenant, Workload, WorkloadKind
from gpustack.names import (
    KUEUE_LOCAL_QUEUE,
    KUEUE_QUEUE_LABEL,
    MANAGED_BY,
    POOL_LABEL,
    TENANT_LABEL,
    VOLCANO_DEFAULT_QUEUE,
    VOLCANO_QUEUE_ANNOTATION,
    VOLCANO_SCHEDULER,
    WORKLOAD_LABEL,
    priority_class_name,
)
from gpustack.needs import Requests
from gpustack.offers import offer_for
from gpustack.plan import FamilyOutput, Manifest, Object
from gpustack.quantity import GIB, parse_quantity
from gpustack.schedulers import queue_name
from gpustack.workload_templates import check_rendered, render_workload_template, template_variables

FAMILY = "workloads"
DRIVER_CAPABILITIES = "compute,utility"  # CUDA and nvidia-smi; no graphics or video libraries mounted
PORT_NAME = "http"
PROBE_PERIOD_SECONDS = 10
# Without nodeResources in the pool, a pod gets this much CPU and memory unless the workload says otherwise.
FALLBACK_CPU = "2"
FALLBACK_MEMORY = "8Gi"
# Share of a node's allocatable CPU/memory handed out with its GPUs: the rest is left to DaemonSets (device
# plugin, GFD, DCGM exporter, CNI), so a pod taking all of a node's GPUs still fits on it.
NODE_SHARE = Decimal("0.9")
JOB_BACKOFF_LIMIT = 3
VOLCANO_MAX_RETRY = 3
VOLCANO_TASK = "worker"
SHM_VOLUME = "dshm"


def compile_workloads(ctx: Context) -> FamilyOutput:
    output = FamilyOutput()
    for workload in ctx.blueprint.workloads:
        objects, problems = workload_manifests(ctx, workload)
        # Only for a blueprint that skipped validation: checks/templates.py reports these before compile runs.
        output.diagnostics.extend(problems)
        file = f"workloads/{workload.tenant}/{workload.name}.yaml"
        output.objects.extend(Manifest(FAMILY, file, obj) for obj in objects)
    return output


def workload_manifests(ctx: Context, workload: Workload) -> tuple[list[Object], list[Diagnostic]]:
    """A workload's objects, its template rendered in place of the generated one; or none, with the GS606 errors
    of a template that fails to render or breaks a rule."""
    requests = ctx.requests.get(workload.name)
    pool = ctx.pools.get(workload.pool)
    if requests is None or pool is None:
        return [], []  # validation already explained why this workload cannot be placed
    tenant = ctx.tenants.get(workload.tenant)
    objects = workload_objects(ctx, workload, pool, tenant, requests)
    if workload.template is not None:
        main = objects[-1]
        variables = template_variables(ctx, workload, requests, main)
        rendered = render_workload_template(ctx, workload, variables)
        if not isinstance(rendered, dict):
            return [], [rendered]
        violations = check_rendered(ctx, workload, rendered)
        if violations:
            return [], violations
        objects[-1] = rendered
    return objects, []


def workload_objects(
    ctx: Context, workload: Workload, pool: NodePool, tenant: Tenant | None, requests: Requests
) -> list[Object]:
    """The Services a workload needs, then the workload object itself (last)."""
    namespace = ctx.namespace_of(workload)
    pod = pod_template(ctx, workload, pool, tenant, requests)
    queued = tenant is not None and tenant.scheduler is Scheduler.KUEUE
    # A DRA pool's pods claim devices from a ResourceClaimTemplate, which goes before the workload.
    template = claim_template(ctx, workload.name, namespace, pool.name, requests) if is_dra(pool) else None
    claims = [template] if template is not None else []
    if workload.kind is WorkloadKind.DEPLOYMENT:
        services = [service(workload, namespace)] if workload.serve is not None else []
        return [*claims, *services, queue_label(deployment(workload, namespace, pod), queued=queued)]
    if workload.kind is WorkloadKind.STATEFUL_SET:
        return [
            *claims,
            service(workload, namespace, headless=True),
            queue_label(stateful_set(workload, namespace, pod), queued=queued),
        ]
    if workload.kind is WorkloadKind.JOB:
        return [*claims, queue_label(batch_job(workload, namespace, pod), queued=queued)]
    return [*claims, volcano_job(workload, namespace, pod, tenant)]


def queue_label(obj: Object, *, queued: bool) -> Object:
    """A Kueue tenant's workload names its LocalQueue: Kueue suspends it until the tenant's ClusterQueue admits it.

    On the workload object only: Kueue's Job, Deployment and StatefulSet integrations read it there and manage the
    pods themselves.
    """
    if queued:
        obj["metadata"]["labels"][KUEUE_QUEUE_LABEL] = KUEUE_LOCAL_QUEUE
    return obj


def scheduler_name(ctx: Context, pool: NodePool, tenant: Tenant | None) -> str | None:
    """The pod's schedulerName, or None for kube-scheduler.

    A HAMi pool's pods need HAMi's scheduler whatever the tenant's scheduler: only it knows which share of which
    GPU is free (gpumem and gpucores are not node resources). A Volcano tenant's other pods go to Volcano.
    """
    if pool.sharing.strategy is SharingStrategy.HAMI:
        return ctx.blueprint.hami.scheduler_name
    if tenant is not None and tenant.scheduler is Scheduler.VOLCANO:
        return VOLCANO_SCHEDULER
    return None


# --- labels, placement, resources -----------------------------------------------------------------------------------


def workload_labels(workload: Workload) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": workload.name,
        **MANAGED_BY,
        TENANT_LABEL: workload.tenant,
        WORKLOAD_LABEL: workload.name,
        POOL_LABEL: workload.pool,
    }


def selector_labels(workload: Workload) -> dict[str, str]:
    return {WORKLOAD_LABEL: workload.name}


def _metadata(workload: Workload, namespace: str, name: str | None = None) -> dict[str, Any]:
    return {"name": name or workload.name, "namespace": namespace, "labels": workload_labels(workload)}


def tolerations(pool: NodePool) -> list[dict[str, Any]]:
    """Exactly the pool's taints, tolerated: no more (that would open other pools), no less (Pending)."""
    result = []
    for taint in pool.taints:
        if taint.value is None:
            result.append({"key": taint.key, "operator": "Exists", "effect": taint.effect})
        else:
            result.append({"key": taint.key, "operator": "Equal", "value": taint.value, "effect": taint.effect})
    return result


def affinity(workload: Workload) -> dict[str, Any]:
    node: dict[str, Any] = {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": POOL_LABEL, "operator": "In", "values": [workload.pool]}]}
            ]
        }
    }
    if workload.prefer:
        node["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {
                "weight": preference.weight,
                "preference": {
                    "matchExpressions": [
                        {"key": key, "operator": "In", "values": [value]} for key, value in preference.labels
                    ]
                },
            }
            for preference in workload.prefer
        ]
    return {"nodeAffinity": node}


def cpu_and_memory(workload: Workload, pool: NodePool, requests: Requests, ctx: Context) -> tuple[str, str]:
    """The workload's CPU and memory, or the node share that goes with its GPUs, or a fallback."""
    cpu, memory = workload.cpu, workload.memory
    offer = offer_for(ctx.offers.get(pool.name, ()), requests.gpu_resource)
    node = pool.node_resources
    if offer is not None and offer.per_node > 0 and node is not None:
        share = Decimal(requests.items[0][1]) / Decimal(offer.per_node) * NODE_SHARE
        if cpu is None and node.cpu is not None:
            cores = (parse_quantity(node.cpu) * share).to_integral_value(rounding=ROUND_FLOOR)
            cpu = str(max(int(cores), 1))
        if memory is None and node.memory is not None:
            gib = (parse_quantity(node.memory) * share / GIB).to_integral_value(rounding=ROUND_FLOOR)
            memory = f"{max(int(gib), 1)}Gi"
    return cpu or FALLBACK_CPU, memory or FALLBACK_MEMORY


def container_resources(cpu: str, memory: str, requests: Requests) -> dict[str, Any]:
    # Requests == limits everywhere: extended resources must (Kubernetes rejects anything else), and for CPU and
    # memory it makes the pod Guaranteed, which the CPU and Topology Managers need to align CPUs with GPUs.
    amounts = {"cpu": cpu, "memory": memory, **{name: str(amount) for name, amount in requests.items}}
    return {"requests": dict(amounts), "limits": dict(amounts)}


def uses_nccl(workload: Workload) -> bool:
    return workload.kind is WorkloadKind.VOLCANO_JOB or workload.nccl is not None


def needs_shm(workload: Workload) -> bool:
    # NCCL and PyTorch DataLoader workers exchange data through /dev/shm; the container runtime's default is 64 MiB.
    return uses_nccl(workload) or workload.gpu.count > 1


def environment(workload: Workload) -> list[dict[str, str]]:
    env: dict[str, str] = {"NVIDIA_DRIVER_CAPABILITIES": DRIVER_CAPABILITIES}
    if uses_nccl(workload):
        nccl = workload.nccl
        env["NCCL_DEBUG"] = (nccl.debug if nccl is not None else None) or "WARN"
        if nccl is not None and nccl.socket_ifname is not None:
            env["NCCL_SOCKET_IFNAME"] = nccl.socket_ifname
        if nccl is not None and nccl.ib_disable is not None:
            env["NCCL_IB_DISABLE"] = "1" if nccl.ib_disable else "0"
        if nccl is not None and nccl.p2p_level is not None:
            env["NCCL_P2P_LEVEL"] = nccl.p2p_level
    for key, value in workload.env:
        # The user's value wins; CUDA_VISIBLE_DEVICES never goes out (GS602: it fights the device plugin).
        if key != "CUDA_VISIBLE_DEVICES":
            env[key] = str(value)
    return [{"name": key, "value": value} for key, value in env.items()]


def probes(workload: Workload) -> dict[str, Any]:
    """Startup probe sized to the model's load time; liveness and readiness only start once it has passed."""
    if workload.serve is None:
        return {}
    serve = workload.serve

    def http_get() -> dict[str, Any]:
        return {"path": serve.path, "port": PORT_NAME}

    return {
        "startupProbe": {
            "httpGet": http_get(),
            "periodSeconds": PROBE_PERIOD_SECONDS,
            "timeoutSeconds": 5,
            "failureThreshold": max(math.ceil(serve.startup_seconds / PROBE_PERIOD_SECONDS), 1),
        },
        "readinessProbe": {"httpGet": http_get(), "periodSeconds": 10, "timeoutSeconds": 5, "failureThreshold": 3},
        # Generous: a GPU server busy with a long batch answers slowly, and a restart reloads the whole model.
        "livenessProbe": {"httpGet": http_get(), "periodSeconds": 30, "timeoutSeconds": 10, "failureThreshold": 5},
    }


def container(ctx: Context, workload: Workload, pool: NodePool, requests: Requests) -> dict[str, Any]:
    cpu, memory = cpu_and_memory(workload, pool, requests, ctx)
    spec: dict[str, Any] = {"name": workload.name, "image": workload.image}
    if workload.command:
        spec["command"] = list(workload.command)
    if workload.args:
        spec["args"] = list(workload.args)
    if workload.serve is not None:
        spec["ports"] = [{"name": PORT_NAME, "containerPort": workload.serve.port, "protocol": "TCP"}]
    spec["env"] = environment(workload)
    spec["resources"] = container_resources(cpu, memory, requests)
    spec.update(probes(workload))
    if needs_shm(workload):
        spec["volumeMounts"] = [{"name": SHM_VOLUME, "mountPath": "/dev/shm"}]
    spec["securityContext"] = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
    return spec


def pod_template(
    ctx: Context, workload: Workload, pool: NodePool, tenant: Tenant | None, requests: Requests
) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    metadata: dict[str, Any] = {"labels": workload_labels(workload)}
    name = scheduler_name(ctx, pool, tenant)
    # A VolcanoJob names its scheduler and queue on the Job; the controller copies them to the pods.
    if name is not None and workload.kind is not WorkloadKind.VOLCANO_JOB:
        spec["schedulerName"] = name
        if name == VOLCANO_SCHEDULER and tenant is not None:
            # Volcano puts a pod of no Volcano Job in a PodGroup of one, in the queue this annotation names.
            metadata["annotations"] = {VOLCANO_QUEUE_ANNOTATION: queue_name(tenant)}
    if tenant is not None:
        spec["priorityClassName"] = priority_class_name(tenant.priority)
    spec["automountServiceAccountToken"] = False  # GPU jobs do not talk to the API server
    spec["securityContext"] = {"seccompProfile": {"type": "RuntimeDefault"}}
    spec["affinity"] = affinity(workload)
    if pool.taints:
        spec["tolerations"] = tolerations(pool)
    spec["containers"] = [container(ctx, workload, pool, requests)]
    if is_dra(pool):
        claim_devices(spec, workload.name, requests)
    if workload.kind in (WorkloadKind.JOB, WorkloadKind.VOLCANO_JOB):
        spec["restartPolicy"] = "Never"
    if needs_shm(workload):
        spec["volumes"] = [{"name": SHM_VOLUME, "emptyDir": {"medium": "Memory"}}]
    return {"metadata": metadata, "spec": spec}


# --- the workload objects -------------------------------------------------------------------------------------------


def service_name(workload: Workload) -> str:
    """The workload's name, or with a prefix when it starts with a digit: Service names must be DNS-1035 labels."""
    if workload.name[:1].isalpha():
        return workload.name
    return f"svc-{workload.name}"[:63].rstrip("-")


def service(workload: Workload, namespace: str, *, headless: bool = False) -> Object:
    spec: dict[str, Any] = {"type": "ClusterIP"}
    if headless:
        spec["clusterIP"] = "None"
        # Peers must find each other while they are still loading, before they report ready.
        spec["publishNotReadyAddresses"] = True
    spec["selector"] = selector_labels(workload)
    if workload.serve is not None:
        spec["ports"] = [{"name": PORT_NAME, "port": workload.serve.port, "targetPort": PORT_NAME, "protocol": "TCP"}]
    metadata = _metadata(workload, namespace, service_name(workload))
    return {"apiVersion": "v1", "kind": "Service", "metadata": metadata, "spec": spec}


def deployment(workload: Workload, namespace: str, pod: dict[str, Any]) -> Object:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _metadata(workload, namespace),
        "spec": {
            "replicas": workload.replicas,
            "selector": {"matchLabels": selector_labels(workload)},
            # Replace pods one at a time without a surge pod: a surge would need a spare GPU, which a full pool
            # does not have, and the rollout would hang.
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}},
            "template": pod,
        },
    }


def stateful_set(workload: Workload, namespace: str, pod: dict[str, Any]) -> Object:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": _metadata(workload, namespace),
        "spec": {
            "replicas": workload.replicas,
            "serviceName": service_name(workload),
            # Start all replicas at once: one after another would multiply the model load time.
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": selector_labels(workload)},
            "template": pod,
        },
    }


def batch_job(workload: Workload, namespace: str, pod: dict[str, Any]) -> Object:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _metadata(workload, namespace),
        "spec": {
            "parallelism": workload.replicas,
            "completions": workload.replicas,
            "backoffLimit": JOB_BACKOFF_LIMIT,
            "template": pod,
        },
    }


def volcano_job(workload: Workload, namespace: str, pod: dict[str, Any], tenant: Tenant | None) -> Object:
    workers = workload.pods
    # A VolcanoJob of a tenant on another scheduler (GS604 warns) falls back to Volcano's own default queue.
    queue = (
        queue_name(tenant) if tenant is not None and tenant.scheduler is Scheduler.VOLCANO else VOLCANO_DEFAULT_QUEUE
    )
    spec: dict[str, Any] = {
        "schedulerName": VOLCANO_SCHEDULER,
        # The tenant's Queue (volcano.py): its capability caps the tenant, its weight sets the tenant's share.
        "queue": queue,
        # Gang scheduling: all workers start together or none does, so no GPU idles waiting for a missing peer.
        "minAvailable": workers,
        "maxRetry": VOLCANO_MAX_RETRY,
    }
    if tenant is not None:
        spec["priorityClassName"] = priority_class_name(tenant.priority)
    # svc: a headless Service and hostfile so workers find each other; env: VK_TASK_INDEX for each worker's rank.
    spec["plugins"] = {"env": [], "svc": []}
    # An evicted worker breaks the collective: restart the whole gang instead of leaving it hanging.
    spec["policies"] = [{"event": "PodEvicted", "action": "RestartJob"}]
    spec["tasks"] = [{"name": VOLCANO_TASK, "replicas": workers, "template": pod}]
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": _metadata(workload, namespace),
        "spec": spec,
    }

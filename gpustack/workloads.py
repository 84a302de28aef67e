"""Workloads as ready-to-use objects: Deployments, StatefulSets, Jobs, Volcano Jobs, JobSets and LeaderWorkerSets
with correct GPU scheduling.

Everything that makes a GPU pod land is derived, never typed twice: tolerations come from exactly its pool's
taints, the required node affinity is gpustack's own pool label or a selector pool's selector (GFD's product
label changes with sharing: `-SHARED`, `-MIG-3g.40gb`), and the GPU resource names and amounts are the ones
`Context.requests` resolved against what the pool advertises, with requests equal to limits.

The workloads family lives below the checks, not in compile/: the template check (checks/templates.py) renders each
workload's template exactly as compile does, through `workload_manifests`, so `validate` fails exactly where
`compile` would.
"""

from __future__ import annotations

import math
from typing import Any

from gpustack.codes import TEMPLATE_ERROR
from gpustack.context import Context
from gpustack.diagnostic import Diagnostic
from gpustack.dra import claim_devices, claim_object, is_dra
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
from gpustack.plan import FamilyOutput, Manifest, Object, shared_part
from gpustack.rendezvous import MASTER_PORT, derived_command, training_shape
from gpustack.schedulers import KAI_QUEUE_LABEL, KAI_SCHEDULER, kai_leaf_queue, queue_name
from gpustack.selection import node_selector_term
from gpustack.sizing import size_pod
from gpustack.taints import toleration_for
from gpustack.workload_templates import (
    check_env_sources,
    check_rendered,
    render_workload_template,
    template_variables,
)

FAMILY = "workloads"
DRIVER_CAPABILITIES = "compute,utility"  # CUDA and nvidia-smi; no graphics or video libraries mounted
PORT_NAME = "http"
PROBE_PERIOD_SECONDS = 10
# On a pod whose CPU and memory gpustack sized (sizing.py): where the amounts came from, so none is a silent default.
SIZED_FROM_ANNOTATION = "gpustack.io/resources-from"
JOB_BACKOFF_LIMIT = 3
VOLCANO_MAX_RETRY = 3
# Volcano's pytorch plugin finds rank 0 in the task it names master and numbers the worker task's pods 1..n.
VOLCANO_MASTER_TASK = "master"
VOLCANO_WORKER_TASK = "worker"
SHM_VOLUME = "dshm"
JOBSET_API = "jobset.x-k8s.io/v1alpha2"
JOBSET_REPLICATED_JOB = "workers"
JOBSET_MAX_RESTARTS = 3
# Kubernetes sets it on every pod of an Indexed Job: the pod's index, which is its node rank.
COMPLETION_INDEX = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
TORCHRUN_PORT = 29500  # torchrun's own default master port
LWS_API = "leaderworkerset.x-k8s.io/v1"
# LeaderWorkerSet labels each pod with its index in the group; the leader is 0.
LWS_WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"


def compile_workloads(ctx: Context) -> FamilyOutput:
    output = FamilyOutput()
    for workload, objects, problems in workload_outputs(ctx):
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


def workload_outputs(ctx: Context) -> list[tuple[Workload, list[Object], list[Diagnostic]]]:
    """Every workload's objects (or its GS606 errors), in blueprint order. A rendered object may not take the identity
    of one gpustack generates or another template renders: kustomize refuses the whole output over one duplicate,
    and the later object would silently replace the earlier."""
    built = [(workload, *workload_manifests(ctx, workload)) for workload in ctx.blueprint.workloads]
    taken = {identity(obj): None for _, objects, _ in built for obj in objects[:-1]}
    taken.update(
        {identity(objects[-1]): None for workload, objects, _ in built if workload.template is None and objects}
    )
    out: list[tuple[Workload, list[Object], list[Diagnostic]]] = []
    for workload, objects, problems in built:
        if workload.template is not None and objects:
            rendered = identity(objects[-1])
            if rendered in taken:
                out.append((workload, [], [duplicate_identity(ctx, workload, objects[-1])]))
                continue
            taken[rendered] = None
        out.append((workload, objects, problems))
    return check_env_sources(ctx, out)


def identity(obj: Object) -> tuple[str, str, str, str]:
    """(API group, kind, namespace, name): what kustomize and the API server tell objects apart by."""
    group = str(obj.get("apiVersion", "")).rpartition("/")[0]
    metadata = obj.get("metadata", {})
    return (group, str(obj.get("kind")), str(metadata.get("namespace", "")), str(metadata.get("name")))


def duplicate_identity(ctx: Context, workload: Workload, obj: Object) -> Diagnostic:
    _, kind, namespace, name = identity(obj)
    return ctx.error(
        TEMPLATE_ERROR,
        (*workload.path, "template"),
        f"workload '{workload.name}': template {workload.template} renders {kind} '{name}' in namespace "
        f"'{namespace}', which another object of the output already is: one would replace the other",
        "give the rendered object a name of its own (gpustack names a workload's objects after the workload)",
    )


def workload_objects(
    ctx: Context, workload: Workload, pool: NodePool, tenant: Tenant | None, requests: Requests
) -> list[Object]:
    """The Services a workload needs, then the workload object itself (last)."""
    namespace = ctx.namespace_of(workload)
    pod = pod_template(ctx, workload, pool, tenant, requests)
    queued = tenant is not None and tenant.scheduler is Scheduler.KUEUE
    # A DRA pool's pods claim devices from a ResourceClaimTemplate (or share one ResourceClaim), before the workload.
    template = claim_object(ctx, workload, namespace, pool.name, requests) if is_dra(pool) else None
    if template is not None:  # labelled like the workload's other objects: its tenant owns it (review, admission)
        template["metadata"]["labels"] = workload_labels(workload)
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
    if workload.kind is WorkloadKind.JOB_SET:
        return [*claims, queue_label(job_set(workload, namespace, pod), queued=queued)]
    if workload.kind is WorkloadKind.LEADER_WORKER_SET:
        # The workers run the leader's pod without its port and probes: only the leader serves (vLLM, SGLang).
        worker = pod_template(ctx, workload, pool, tenant, requests, leader=False)
        services = [service(workload, namespace, leaders_only=True)] if workload.serve is not None else []
        return [*claims, *services, queue_label(leader_worker_set(workload, namespace, pod, worker), queued=queued)]
    return [*claims, volcano_job(workload, namespace, pod, tenant)]


def queue_label(obj: Object, *, queued: bool) -> Object:
    """A Kueue tenant's workload names its LocalQueue: Kueue suspends it until the tenant's ClusterQueue admits it.

    On the workload object only: Kueue's Job, Deployment, StatefulSet, JobSet and LeaderWorkerSet integrations read
    it there and manage the pods themselves (a JobSet is admitted as one Workload, a LeaderWorkerSet group as one).
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
    if tenant is not None and tenant.scheduler is Scheduler.KAI:
        return KAI_SCHEDULER
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
    return [toleration_for(taint).as_object() for taint in pool.taints]


def affinity(workload: Workload, pool: NodePool) -> dict[str, Any]:
    # A selector pool is found by its selector (the labels its provider sets), a static one by gpustack's pool label.
    node: dict[str, Any] = {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [node_selector_term(pool)]}
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


def container_resources(
    cpu: str, memory: str, requests: Requests, ephemeral_storage: str | None = None
) -> dict[str, Any]:
    # Requests == limits everywhere: extended resources must (Kubernetes rejects anything else), and for CPU and
    # memory it makes the pod Guaranteed, which the CPU and Topology Managers need to align CPUs with GPUs.
    disk = {} if ephemeral_storage is None else {"ephemeral-storage": ephemeral_storage}
    amounts = {"cpu": cpu, "memory": memory, **disk, **{name: str(amount) for name, amount in requests.items}}
    return {"requests": dict(amounts), "limits": dict(amounts)}


MULTI_NODE_KINDS = (WorkloadKind.VOLCANO_JOB, WorkloadKind.JOB_SET, WorkloadKind.LEADER_WORKER_SET)


def uses_nccl(workload: Workload) -> bool:
    return workload.kind in MULTI_NODE_KINDS or workload.nccl is not None


def needs_shm(workload: Workload) -> bool:
    # NCCL and PyTorch DataLoader workers exchange data through /dev/shm; the container runtime's default is 64 MiB.
    return workload.shm_size is not None or uses_nccl(workload) or workload.gpu.count > 1


def shm_volume(workload: Workload) -> dict[str, Any]:
    """The in-memory emptyDir mounted at /dev/shm, sized where the blueprint says (it counts as the pod's memory)."""
    empty_dir: dict[str, Any] = {"medium": "Memory"}
    if workload.shm_size is not None:
        empty_dir["sizeLimit"] = workload.shm_size
    return {"name": SHM_VOLUME, "emptyDir": empty_dir}


def rendezvous_environment(workload: Workload) -> dict[str, str | dict[str, Any]]:
    """What torchrun needs in a JobSet pod, as Volcano's pytorch plugin provides it in a VolcanoJob's: rank 0's
    address (its pod's hostname under the JobSet's headless Service), the port, the number of pods and this pod's
    rank (its completion index)."""
    if workload.kind is not WorkloadKind.JOB_SET:
        return {}
    host = f"{workload.name}-{JOBSET_REPLICATED_JOB}-0-0.{service_name(workload)}"
    return {
        "MASTER_ADDR": host,
        "MASTER_PORT": str(TORCHRUN_PORT),
        "WORLD_SIZE": str(workload.pods),
        "RANK": {"fieldRef": {"fieldPath": COMPLETION_INDEX}},
    }


def environment(workload: Workload) -> list[dict[str, Any]]:
    env: dict[str, str | dict[str, Any]] = {"NVIDIA_DRIVER_CAPABILITIES": DRIVER_CAPABILITIES}
    env.update(rendezvous_environment(workload))
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
        # The user's value wins; CUDA_VISIBLE_DEVICES never goes out (GS602: it fights the device plugin). A Secret's
        # or ConfigMap's key goes out as Kubernetes' valueFrom, read in the pod's own namespace.
        if key != "CUDA_VISIBLE_DEVICES":
            env[key] = value if isinstance(value, str) else value.value_from()
    return [
        {"name": key, "valueFrom": value} if isinstance(value, dict) else {"name": key, "value": value}
        for key, value in env.items()
    ]


def probes(workload: Workload) -> dict[str, Any]:
    """Startup probe sized to the model's load time; liveness and readiness only start once it has passed (the same
    for every workload serving one path with one startup time: one object within a compile, plan.shared_part)."""
    if workload.serve is None:
        return {}
    path, startup = workload.serve.path, max(math.ceil(workload.serve.startup_seconds / PROBE_PERIOD_SECONDS), 1)
    return shared_part(("workloads.probes", path, startup), lambda: _probes(path, startup))


def _probes(path: str, startup_failures: int) -> dict[str, Any]:
    def http_get() -> dict[str, Any]:
        return {"path": path, "port": PORT_NAME}

    return {
        "startupProbe": {
            "httpGet": http_get(),
            "periodSeconds": PROBE_PERIOD_SECONDS,
            "timeoutSeconds": 5,
            "failureThreshold": startup_failures,
        },
        "readinessProbe": {"httpGet": http_get(), "periodSeconds": 10, "timeoutSeconds": 5, "failureThreshold": 3},
        # Generous: a GPU server busy with a long batch answers slowly, and a restart reloads the whole model.
        "livenessProbe": {"httpGet": http_get(), "periodSeconds": 30, "timeoutSeconds": 10, "failureThreshold": 5},
    }


# Parts every generated workload repeats: one object each within a compile (plan.shared_part), never changed once built.
def _container_security() -> dict[str, Any]:
    return {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


def _pod_security() -> dict[str, Any]:
    return {"seccompProfile": {"type": "RuntimeDefault"}}


def _one_pod_at_a_time() -> dict[str, Any]:
    return {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}


def container(
    ctx: Context, workload: Workload, pool: NodePool, requests: Requests, *, leader: bool = True
) -> dict[str, Any]:
    cpu, memory, _ = size_pod(ctx, workload, pool, requests)
    spec: dict[str, Any] = {"name": workload.name, "image": workload.image}
    command = launch_command(workload)
    if command:
        spec["command"] = list(command)
    if workload.args:
        spec["args"] = list(workload.args)
    if workload.serve is not None and leader:
        port = workload.serve.port
        spec["ports"] = shared_part(
            ("workloads.containerPorts", port), lambda: [{"name": PORT_NAME, "containerPort": port, "protocol": "TCP"}]
        )
    spec["env"] = environment(workload)
    spec["resources"] = container_resources(cpu, memory, requests, workload.ephemeral_storage)
    if leader:
        spec.update(probes(workload))
    if needs_shm(workload):
        spec["volumeMounts"] = [{"name": SHM_VOLUME, "mountPath": "/dev/shm"}]
    spec["securityContext"] = shared_part("workloads.containerSecurity", _container_security)
    return spec


def launch_command(workload: Workload) -> tuple[str, ...]:
    """The command as written, with a multi-node torchrun launch given the job's shape and rendezvous endpoint."""
    shape = training_shape(workload)
    if shape is None:
        return workload.command
    return derived_command(workload.command, workload.args, shape)


def pod_template(
    ctx: Context, workload: Workload, pool: NodePool, tenant: Tenant | None, requests: Requests, *, leader: bool = True
) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    metadata: dict[str, Any] = {"labels": workload_labels(workload)}
    sized_from = size_pod(ctx, workload, pool, requests)[2]
    if sized_from != "resources":
        metadata["annotations"] = {SIZED_FROM_ANNOTATION: sized_from}
    name = scheduler_name(ctx, pool, tenant)
    # A VolcanoJob names its scheduler and queue on the Job; the controller copies them to the pods.
    if name is not None and workload.kind is not WorkloadKind.VOLCANO_JOB:
        spec["schedulerName"] = name
        if name == VOLCANO_SCHEDULER and tenant is not None:
            # Volcano puts a pod of no Volcano Job in a PodGroup of one, in the queue this annotation names.
            metadata.setdefault("annotations", {})[VOLCANO_QUEUE_ANNOTATION] = queue_name(tenant)
        if name == KAI_SCHEDULER and tenant is not None:
            # KAI's pod grouper puts the pod's PodGroup in the leaf Queue this label names, in the shard of the pool
            # label the workload object carries (compile/kai.py); gangs are its own: one PodGroup per JobSet
            # (minMember = workers) and per LeaderWorkerSet group (size).
            metadata["labels"][KAI_QUEUE_LABEL] = kai_leaf_queue(tenant, ctx.namespace_of(workload), pool.name)
    if tenant is not None:
        spec["priorityClassName"] = priority_class_name(tenant.priority)
    spec["automountServiceAccountToken"] = False  # GPU jobs do not talk to the API server
    spec["securityContext"] = shared_part("workloads.podSecurity", _pod_security)
    spec["affinity"] = affinity(workload, pool)
    if pool.taints:
        spec["tolerations"] = tolerations(pool)
    spec["containers"] = [container(ctx, workload, pool, requests, leader=leader)]
    if is_dra(pool):
        claim_devices(spec, workload, requests)
    if workload.kind in (WorkloadKind.JOB, WorkloadKind.VOLCANO_JOB, WorkloadKind.JOB_SET):
        spec["restartPolicy"] = "Never"
    if needs_shm(workload):
        spec["volumes"] = [shm_volume(workload)]
    return {"metadata": metadata, "spec": spec}


# --- the workload objects -------------------------------------------------------------------------------------------


def service_name(workload: Workload) -> str:
    """The workload's name, or with a prefix when it starts with a digit: Service names must be DNS-1035 labels."""
    if workload.name[:1].isalpha():
        return workload.name
    return f"svc-{workload.name}"[:63].rstrip("-")


def service(workload: Workload, namespace: str, *, headless: bool = False, leaders_only: bool = False) -> Object:
    spec: dict[str, Any] = {"type": "ClusterIP"}
    if headless:
        spec["clusterIP"] = "None"
        # Peers must find each other while they are still loading, before they report ready.
        spec["publishNotReadyAddresses"] = True
    spec["selector"] = selector_labels(workload)
    if leaders_only:
        spec["selector"][LWS_WORKER_INDEX_LABEL] = "0"  # requests go to each group's leader, which serves it
    if workload.serve is not None:
        port = workload.serve.port
        spec["ports"] = shared_part(
            ("workloads.servicePorts", port),
            lambda: [{"name": PORT_NAME, "port": port, "targetPort": PORT_NAME, "protocol": "TCP"}],
        )
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
            "strategy": shared_part("workloads.strategy", _one_pod_at_a_time),
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
    # pytorch: MASTER_ADDR (the master task's first pod, through svc's headless Service), MASTER_PORT, WORLD_SIZE
    # (pods) and RANK in every container, and the port opened; svc: that Service, each pod's hostname and subdomain;
    # env: VK_TASK_INDEX. The plugin would turn svc on by itself: written out so the object says what runs.
    spec["plugins"] = {
        "env": [],
        "pytorch": [f"--master={VOLCANO_MASTER_TASK}", f"--worker={VOLCANO_WORKER_TASK}", f"--port={MASTER_PORT}"],
        "svc": [],
    }
    # An evicted worker breaks the collective: restart the whole gang instead of leaving it hanging.
    spec["policies"] = [{"event": "PodEvicted", "action": "RestartJob"}]
    # Rank 0 finishing means the run is over (every rank leaves the collective together).
    master: dict[str, Any] = {
        "name": VOLCANO_MASTER_TASK,
        "replicas": 1,
        "policies": [{"event": "TaskCompleted", "action": "CompleteJob"}],
        "template": pod,
    }
    spec["tasks"] = [master]
    if workers > 1:
        spec["tasks"].append({"name": VOLCANO_WORKER_TASK, "replicas": workers - 1, "template": pod})
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": _metadata(workload, namespace),
        "spec": spec,
    }


def job_set(workload: Workload, namespace: str, pod: dict[str, Any]) -> Object:
    """Multi-node training: one Indexed Job of `workers` pods, each reachable by hostname through the JobSet's
    headless Service, the pod's completion index its rank."""
    workers = workload.pods
    job = {
        "parallelism": workers,
        "completions": workers,
        "completionMode": "Indexed",
        # A failed pod fails the Job and the JobSet restarts every Job: a collective cannot continue without a rank.
        "backoffLimit": 0,
        "template": pod,
    }
    return {
        "apiVersion": JOBSET_API,
        "kind": "JobSet",
        "metadata": _metadata(workload, namespace),
        "spec": {
            # The controller creates the headless Service named subdomain (ready or not, so rank 0 resolves early).
            "network": {
                "enableDNSHostnames": True,
                "subdomain": service_name(workload),
                "publishNotReadyAddresses": True,
            },
            "failurePolicy": {"maxRestarts": JOBSET_MAX_RESTARTS},
            "replicatedJobs": [{"name": JOBSET_REPLICATED_JOB, "replicas": 1, "template": {"spec": job}}],
        },
    }


def leader_worker_set(workload: Workload, namespace: str, leader: dict[str, Any], worker: dict[str, Any]) -> Object:
    """Multi-node inference: `replicas` groups of `size` pods, each a leader and size-1 workers that start,
    restart and roll together. LeaderWorkerSet sets LWS_LEADER_ADDRESS, LWS_GROUP_SIZE and LWS_WORKER_INDEX in
    every container."""
    return {
        "apiVersion": LWS_API,
        "kind": "LeaderWorkerSet",
        "metadata": _metadata(workload, namespace),
        "spec": {
            "replicas": workload.replicas,
            # The workers join the leader's address: create them once the leader pod exists.
            "startupPolicy": "LeaderCreated",
            # One group at a time without a surge group: a surge would need spare GPUs for a whole group.
            "rolloutStrategy": {
                "type": "RollingUpdate",
                "rollingUpdateConfiguration": {"maxUnavailable": 1, "maxSurge": 0},
            },
            "leaderWorkerTemplate": {
                "size": workload.size or 1,
                # A lost pod breaks the group's tensor-parallel ring: recreate the whole group.
                "restartPolicy": "RecreateGroupOnPodRestart",
                "leaderTemplate": leader,
                "workerTemplate": worker,
            },
        },
    }

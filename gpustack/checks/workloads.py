"""Workload templates ask for what their pool can actually give (GS601-GS604, GS607), with the host memory their
GPUs imply (GS608), and launch what their shape says (GS609)."""

from __future__ import annotations

from collections.abc import Iterator

from gpustack.codes import (
    DEVICE_ENV_SET,
    MEMORY_BELOW_GPU_MEMORY,
    NEED_UNMET,
    SHARED_REQUEST_ABOVE_ONE,
    SHM_ABOVE_MEMORY,
    TORCHRUN_SHAPE,
    VOLCANO_JOB_ON_HAMI,
    VOLCANO_JOB_WITHOUT_VOLCANO,
)
from gpustack.context import Context
from gpustack.diagnostic import Diagnostic
from gpustack.model import Scheduler, SharingStrategy, WorkloadKind
from gpustack.names import DEVICE_ENV
from gpustack.needs import Unfit, resolve_need
from gpustack.offers import offer_for
from gpustack.quantity import GIB, parse_quantity
from gpustack.rendezvous import disagreements, training_shape
from gpustack.sizing import gpu_memory_gib, size_pod


def check_gpu_need_fits_pool(ctx: Context) -> Iterator[Diagnostic]:
    for workload in ctx.blueprint.workloads:
        pool = ctx.pools.get(workload.pool)
        model = ctx.models.get(workload.pool)
        if pool is None or model is None or not ctx.offers[pool.name]:
            continue
        result = resolve_need(workload, pool, model, ctx.offers[pool.name])
        if isinstance(result, Unfit):
            need = workload.gpu
            # count is only defaulted when profile or memory is written, so the field named here always exists
            field = result.field or ("profile" if need.profile else "memory" if need.memory else "count")
            path = (*need.path, field)
            yield ctx.error(NEED_UNMET, path, f"workload '{workload.name}' {result.reason}", result.hint)


def check_cuda_visible_devices(ctx: Context) -> Iterator[Diagnostic]:
    for workload in ctx.blueprint.workloads:
        for key, _ in workload.env:
            if key in DEVICE_ENV:
                yield ctx.error(
                    DEVICE_ENV_SET,
                    (*workload.path, "env", key),
                    f"workload '{workload.name}' sets {key}, which the NVIDIA container toolkit can read as a device "
                    "request: the container may get GPUs outside the device plugin and every quota",
                    "remove it: the device plugin hands the container exactly the GPUs it requests",
                    key=True,
                )
            if key == "CUDA_VISIBLE_DEVICES":
                yield ctx.error(
                    DEVICE_ENV_SET,
                    (*workload.path, "env", key),
                    f"workload '{workload.name}' sets CUDA_VISIBLE_DEVICES by hand",
                    "remove it: the device plugin exposes exactly the allocated GPUs to the container, and a "
                    "hand-set index points at the wrong device or none",
                    key=True,
                )


def check_shared_request_size(ctx: Context) -> Iterator[Diagnostic]:
    for workload in ctx.blueprint.workloads:
        pool = ctx.pools.get(workload.pool)
        if pool is None or workload.gpu.count <= 1:
            continue
        replication, kind = (
            pool.sharing.replication,
            ("time-slicing" if pool.sharing.strategy is SharingStrategy.TIME_SLICING else "MPS"),
        )
        mig = pool.sharing.mig
        if pool.sharing.strategy is SharingStrategy.MIG and mig is not None and mig.time_slicing is not None:
            # Only what mig.timeSlicing replicates is shared: the instances it names, and whole GPUs where it names
            # `whole`; a request for an unshared resource of the pool is not a shared one.
            requests = ctx.requests.get(workload.name)
            offer = offer_for(ctx.offers.get(pool.name, ()), requests.gpu_resource) if requests is not None else None
            if offer is None or offer.shared_by < 2:
                continue
            replication, kind = mig.time_slicing, ("MIG time-slicing" if offer.profile is not None else "time-slicing")
        if replication is None:
            continue
        if replication.fail_requests_greater_than_one:
            yield ctx.error(
                SHARED_REQUEST_ABOVE_ONE,
                (*workload.gpu.path, "count"),
                f"workload '{workload.name}' asks for {workload.gpu.count} shared "
                f"{'MIG instances' if kind.startswith('MIG') else 'GPUs'} in pool '{pool.name}', whose "
                f"{kind} config has failRequestsGreaterThanOne: the kubelet rejects such pods "
                "(UnexpectedAdmissionError: maximum request size for shared resources is 1)",
                "ask for 1; more replicas of one GPU do not give more compute anyway",
            )


def check_volcano_scheduler(ctx: Context) -> Iterator[Diagnostic]:
    tenants = {t.name: t for t in ctx.blueprint.tenants}
    for workload in ctx.blueprint.workloads:
        tenant = tenants.get(workload.tenant)
        if (
            workload.kind is WorkloadKind.VOLCANO_JOB
            and tenant is not None
            and tenant.scheduler is not Scheduler.VOLCANO
        ):
            yield ctx.warning(
                VOLCANO_JOB_WITHOUT_VOLCANO,
                (*workload.path, "kind"),
                f"workload '{workload.name}' is a VolcanoJob, but tenant '{tenant.name}' uses the "
                f"{tenant.scheduler} scheduler",
                "set the tenant's scheduler: volcano so its queue and gang scheduling are generated",
            )


def check_volcano_job_on_hami_pool(ctx: Context) -> Iterator[Diagnostic]:
    for workload in ctx.blueprint.workloads:
        pool = ctx.pools.get(workload.pool)
        if (
            workload.kind is WorkloadKind.VOLCANO_JOB
            and pool is not None
            and pool.sharing.strategy is SharingStrategy.HAMI
        ):
            yield ctx.error(
                VOLCANO_JOB_ON_HAMI,
                (*workload.path, "pool"),
                f"workload '{workload.name}' is a VolcanoJob on HAMi pool '{pool.name}': Volcano schedules a Volcano "
                "Job's pods, and only HAMi's scheduler knows which share of which GPU is free (gpumem and gpucores "
                "are not node resources), so the pods would be placed blind or not at all",
                "run it as a Job or Deployment on the HAMi pool (gpustack gives it HAMi's scheduler), or as a "
                "VolcanoJob on a pool that does not use HAMi",
            )


def check_memory_covers_gpu_memory(ctx: Context) -> Iterator[Diagnostic]:
    """A model's weights pass through host memory on their way to the GPU: a pod with less RAM than the GPU memory
    it holds is OOM-killed while loading (a 70B model on 8 GPUs with 8Gi never starts)."""
    for workload in ctx.blueprint.workloads:
        pool = ctx.pools.get(workload.pool)
        requests = ctx.requests.get(workload.name)
        if workload.memory is None or pool is None or requests is None:
            continue
        offer = offer_for(ctx.offers.get(pool.name, ()), requests.gpu_resource)
        if offer is not None and offer.shared_by > 1:
            continue  # time-slicing and MPS: a pod's model shares the GPU's memory and need not fill it
        held = gpu_memory_gib(ctx, pool, requests)
        memory = parse_quantity(workload.memory) / GIB
        if held is not None and memory < held:
            yield ctx.warning(
                MEMORY_BELOW_GPU_MEMORY,
                (*workload.path, "resources", "memory"),
                f"workload '{workload.name}' gives each pod {workload.memory} of memory but {held.normalize():f}Gi "
                "of GPU memory: loading a model that fills its GPUs passes the weights through host memory, and "
                "the pod is OOM-killed at its memory limit",
                f"give it at least {int(held.to_integral_value(rounding='ROUND_CEILING'))}Gi, or leave resources "
                "out to have gpustack size it from its GPUs",
            )


def check_shm_within_memory(ctx: Context) -> Iterator[Diagnostic]:
    """/dev/shm is an in-memory emptyDir: what it holds is charged to the pod's memory, so a /dev/shm larger than
    the pod's memory limit cannot be filled; the pod is OOM-killed first (the upstream vLLM recipe's 15Gi /dev/shm
    on a pod given less memory)."""
    for workload in ctx.blueprint.workloads:
        pool = ctx.pools.get(workload.pool)
        requests = ctx.requests.get(workload.name)
        if workload.shm_size is None or pool is None or requests is None:
            continue
        _cpu, memory, sized_from = size_pod(ctx, workload, pool, requests)
        if parse_quantity(workload.shm_size) <= parse_quantity(memory):
            continue
        given = "" if sized_from == "resources" else f" (sized from {sized_from})"
        yield ctx.warning(
            SHM_ABOVE_MEMORY,
            (*workload.path, "shmSize"),
            f"workload '{workload.name}' sizes /dev/shm at {workload.shm_size}, above its pods' {memory} of "
            f"memory{given}: /dev/shm is in memory and counts against the pod's memory limit, so the pod is "
            "OOM-killed before /dev/shm fills",
            f"make shmSize smaller than {memory}, leaving room for the process itself, or give the workload more "
            "resources.memory",
        )


def check_launch_matches_shape(ctx: Context) -> Iterator[Diagnostic]:
    """A torchrun command that repeats the job's shape must repeat it right: gpustack adds what it leaves out."""
    for workload in ctx.blueprint.workloads:
        shape = training_shape(workload)
        if shape is None:
            continue
        for problem in disagreements((*workload.command, *workload.args), shape):
            if problem.index < len(workload.command):
                path = (*workload.path, "command", problem.index)
            else:
                path = (*workload.path, "args", problem.index - len(workload.command))
            yield ctx.error(TORCHRUN_SHAPE, path, f"workload '{workload.name}': {problem.message}", problem.hint)


RULES = (
    check_gpu_need_fits_pool,
    check_memory_covers_gpu_memory,
    check_shm_within_memory,
    check_cuda_visible_devices,
    check_shared_request_size,
    check_volcano_scheduler,
    check_volcano_job_on_hami_pool,
    check_launch_matches_shape,
)

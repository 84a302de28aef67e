"""Pools with allocation: dra (GS420-GS424, and GS801 for the driver's chart) and workloads' claims (GS613-GS615).

What the DRA driver can serve, where it may run, and which resource.k8s.io version the target Kubernetes serves.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from gpustack.codes import (
    DRA_AND_DEVICE_PLUGIN,
    DRA_API_UNAVAILABLE,
    DRA_BETA_API,
    DRA_CLAIM_OFF_DRA,
    DRA_CLAIM_SHARING,
    DRA_SCHEDULER,
    DRA_SHARED_CLAIM_SPREAD,
    DRA_SHARING,
    UNPINNED_CHART,
)
from gpustack.context import Context
from gpustack.diagnostic import Diagnostic
from gpustack.dra import V1, api_version, class_for, dra_pools, first_minor, is_dra, load_facts
from gpustack.model import ClaimShare, Scheduler, SharingStrategy, Workload, WorkloadKind

_PINNED = re.compile(r"^v?[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$")
# Sharing across pods under DRA: the driver shares one claim's GPU between the containers that reference it, and
# shares a GPU between independent claims only with ConsumableShares (driver alpha, v0.5 unreleased; Kubernetes
# DRAConsumableCapacity, beta from 1.36).
_ACROSS_PODS = {
    SharingStrategy.TIME_SLICING: "time-slicing (driver gate TimeSlicingSettings, alpha)",
    SharingStrategy.MPS: "MPS (driver gate MPSSupport, alpha)",
    SharingStrategy.HAMI: "HAMi (its own device plugin and scheduler)",
}


def check_dra_sharing(ctx: Context) -> Iterator[Diagnostic]:
    for pool in dra_pools(ctx.blueprint):
        mig = pool.sharing.mig
        if pool.sharing.strategy is SharingStrategy.MIG and mig is not None and mig.time_slicing is not None:
            # GPUs left whole are fine (the driver publishes MIG-disabled GPUs as type gpu beside the MIG devices).
            yield ctx.error(
                DRA_SHARING,
                (*mig.path, "timeSlicing"),
                f"pool '{pool.name}' uses allocation: dra with time-sliced MIG instances: the NVIDIA DRA driver "
                "hands each MIG device to one claim (its MigDeviceConfig accepts TimeSlicing but it has no effect on "
                "MIG), so the replicas cannot be handed to separate pods",
                "drop mig.timeSlicing on the DRA pool (each claim gets a MIG instance), or keep this pool on "
                "allocation: device-plugin, whose device plugin time-slices nvidia.com/mig-<profile>",
                key=True,
            )
        what = _ACROSS_PODS.get(pool.sharing.strategy)
        if what is None:
            continue
        yield ctx.error(
            DRA_SHARING,
            (*pool.sharing.path, "strategy"),
            f"pool '{pool.name}' uses allocation: dra with sharing {what}: the NVIDIA DRA driver shares a GPU only "
            "between the containers of one claim, so the pool's replicas per GPU cannot be handed to separate pods",
            "use sharing none or mig on a DRA pool (static MIG: pre-made MIG devices are GA in the driver), or keep "
            "this pool on allocation: device-plugin; sharing a GPU between pods under DRA needs the driver's "
            "ConsumableShares gate (alpha, driver 0.5) and Kubernetes 1.36",
        )


def check_one_allocator_per_node(ctx: Context) -> Iterator[Diagnostic]:
    """The DRA driver and a device plugin (NVIDIA's or HAMi's) on one node would both hand out its GPUs."""
    plugin_nodes: dict[str, str] = {}
    for pool in ctx.blueprint.pools:
        if not is_dra(pool):
            for node in pool.nodes:
                plugin_nodes.setdefault(node, pool.name)
    for pool in dra_pools(ctx.blueprint):
        for index, node in enumerate(pool.nodes):
            other = plugin_nodes.get(node)
            if other is None:
                continue
            yield ctx.error(
                DRA_AND_DEVICE_PLUGIN,
                (*pool.path, "nodes", index),
                f"node {node} is in DRA pool '{pool.name}' and in pool '{other}', which a device plugin serves: the "
                "DRA driver and the plugin would both hand out its GPUs, and pods of each could get the same GPU",
                f"give {node} to one pool only; a node changes allocation by leaving one pool for the other",
                related=[next(p.path for p in ctx.blueprint.pools if p.name == other)],
            )


def check_resource_api(ctx: Context) -> Iterator[Diagnostic]:
    """resource.k8s.io/v1 from 1.34; a beta version earlier only by explicit opt-in, and only where it is served."""
    blueprint = ctx.blueprint
    pools = dra_pools(blueprint)
    if not pools:
        return
    minor = blueprint.kubernetes_minor
    version = api_version(blueprint)
    written = blueprint.dra.api_version is not None
    path = (*blueprint.dra.path, "apiVersion") if written else (*pools[0].path, "allocation")
    served_from = first_minor(version)
    if minor < served_from:
        if written:
            message = f"{version} is served from Kubernetes 1.{served_from}, and the blueprint targets 1.{minor}"
        else:
            message = (
                f"pool '{pools[0].name}' uses DRA, whose GA API {V1} arrives in Kubernetes 1.{served_from}; "
                f"the blueprint targets 1.{minor}"
            )
        betas = [v for v, first in sorted(load_facts().api_minor.items(), key=lambda i: i[1]) if first <= minor]
        hint = (
            f"target Kubernetes 1.{first_minor(V1)} or newer, or opt in to a beta API served at 1.{minor} with "
            f"spec.dra.apiVersion: {betas[-1]} (beta: off unless its feature gate and API are turned on)"
            if betas
            else f"DRA's first beta API arrives in Kubernetes 1.{min(load_facts().api_minor.values())}: "
            f"target 1.{first_minor(V1)} or newer, or keep the pools on allocation: device-plugin"
        )
        yield ctx.error(DRA_API_UNAVAILABLE, path, message, hint)
        return
    if version != V1 and minor >= served_from and minor >= first_minor(V1):
        yield ctx.warning(
            DRA_BETA_API,
            path,
            f"DRA through {version}, a beta API, on Kubernetes 1.{minor}, which serves the GA {V1}: the betas are "
            "deprecated there, and DeviceClass.extendedResourceName exists only in v1",
            f"drop spec.dra.apiVersion to use {V1}",
        )
    elif version != V1:
        yield ctx.warning(
            DRA_BETA_API,
            path,
            f"DRA through {version}: a beta API, off by default before Kubernetes 1.34 (the DynamicResourceAllocation "
            "gate and the API must be turned on in the API server, scheduler, controller manager and kubelets), "
            "and DeviceClass.extendedResourceName does not exist there, so pods asking nvidia.com/gpu never land "
            "on DRA pools",
            f"target Kubernetes 1.{first_minor(V1)} or newer and drop spec.dra.apiVersion to use the GA "
            f"{V1}; the driver's own prerequisites ask for 1.34.2",
        )


def check_dra_schedulers(ctx: Context) -> Iterator[Diagnostic]:
    """Kueue and Volcano queue on extended resources; a DRA pod asks for none, so their quotas would not hold."""
    dra = {pool.name for pool in dra_pools(ctx.blueprint)}
    if not dra:
        return
    for tenant in ctx.blueprint.tenants:
        if tenant.scheduler is Scheduler.DEFAULT:
            continue
        for index, pool in enumerate(tenant.pools):
            if pool in dra:
                yield ctx.error(
                    DRA_SCHEDULER,
                    (*tenant.path, "pools", index),
                    f"tenant '{tenant.name}' queues through {tenant.scheduler} on DRA pool '{pool}': gpustack writes "
                    f"{tenant.scheduler}'s quotas on extended resources, which a pod that claims devices does not ask "
                    "for, so the queue would admit without limit",
                    "give the tenant scheduler: default on DRA pools (its quota becomes device counts per "
                    "DeviceClass in a ResourceQuota), or keep the pool on allocation: device-plugin",
                )
    for workload in ctx.blueprint.workloads:
        if workload.kind is WorkloadKind.VOLCANO_JOB and workload.pool in dra:
            yield ctx.error(
                DRA_SCHEDULER,
                (*workload.path, "kind"),
                f"VolcanoJob '{workload.name}' on DRA pool '{workload.pool}': gpustack's Volcano gangs and queues "
                "count extended resources, which its claim-holding pods do not ask for",
                "use a Job (or Deployment/StatefulSet), or place the workload on a device-plugin pool",
            )


def check_dra_chart_pinned(ctx: Context) -> Iterator[Diagnostic]:
    settings = ctx.blueprint.dra
    if dra_pools(ctx.blueprint) and not _PINNED.match(settings.chart_version):
        yield ctx.error(
            UNPINNED_CHART,
            (*settings.path, "chartVersion"),
            f"DRA driver chart version '{settings.chart_version}' is not pinned",
            'name an exact release such as "0.4.1": a floating version changes the driver under running workloads',
        )


# Options of each claim sharing strategy (the driver's GpuSharing: timeSlicingConfig or mpsConfig, never both).
_OPTIONS = {"interval": "TimeSlicing", "activeThreadPercentage": "MPS", "pinnedMemoryLimit": "MPS"}
# Kinds whose pods a job spreads over nodes: one claim's devices are on one node.
_SPREAD = (WorkloadKind.JOB_SET, WorkloadKind.LEADER_WORKER_SET)


def _release(version: str) -> tuple[int, int, int] | None:
    found = re.match(r"^v?([0-9]+)\.([0-9]+)\.([0-9]+)", version)
    return None if found is None else (int(found[1]), int(found[2]), int(found[3]))


def check_workload_claims(ctx: Context) -> Iterator[Diagnostic]:
    """`gpu.claim` only where a claim exists (a DRA pool), shared across pods only where the pods can share a node,
    with sharing config the pinned driver can apply."""
    for workload in ctx.blueprint.workloads:
        claim = workload.gpu.claim
        pool = ctx.pools.get(workload.pool)
        if claim is None or pool is None:
            continue
        if not is_dra(pool):
            yield ctx.error(
                DRA_CLAIM_OFF_DRA,
                claim.path,
                f"workload '{workload.name}' writes gpu.claim and pool '{pool.name}' hands out its GPUs through the "
                "device plugin: its pods request extended resources and hold no claim to share",
                "drop gpu.claim, or place the workload on a pool with allocation: dra",
                key=True,
            )
            continue
        if claim.share is ClaimShare.PODS and workload.kind in _SPREAD:
            yield ctx.error(
                DRA_SHARED_CLAIM_SPREAD,
                (*claim.path, "share"),
                f"{workload.kind} '{workload.name}' shares one claim between its pods: the claim's devices are on one "
                f"node, so every pod holding it must run there, and a {workload.kind} spreads its pods over nodes",
                "use share: containers (each pod its own devices), or a Deployment, StatefulSet or Job for pods "
                "that share one node's GPUs",
            )
        yield from _sharing_problems(ctx, workload)


def _sharing_problems(ctx: Context, workload: Workload) -> Iterator[Diagnostic]:
    claim = workload.gpu.claim
    if claim is None or claim.sharing is None:
        return
    sharing = claim.sharing
    written = {
        "interval": sharing.interval,
        "activeThreadPercentage": sharing.active_thread_percentage,
        "pinnedMemoryLimit": sharing.pinned_memory_limit,
    }
    for option, value in written.items():
        if value is not None and _OPTIONS[option] != sharing.strategy:
            yield ctx.error(
                DRA_CLAIM_SHARING,
                (*sharing.path, option),
                f"workload '{workload.name}': {option} is an option of {_OPTIONS[option]} sharing, and the claim "
                f"shares by {sharing.strategy}: the driver refuses a GpuConfig that mixes the two",
                f"drop {option}, or set strategy: {_OPTIONS[option]}",
                key=True,
            )
    requests = ctx.requests.get(workload.name)
    fact = class_for(ctx, workload.pool, requests.items[0][0]) if requests is not None and requests.items else None
    if fact is not None and fact.profile is not None:
        yield ctx.error(
            DRA_CLAIM_SHARING,
            (*sharing.path, "strategy"),
            f"workload '{workload.name}' claims MIG devices ({fact.profile}) with {sharing.strategy} sharing: the "
            "driver's GpuConfig applies to whole GPUs, and it hands each MIG device to one claim unshared",
            "drop gpu.claim.sharing (the claim's holders still share the MIG device), or claim whole GPUs",
            key=True,
        )
    feature = load_facts().claim_sharing[sharing.strategy]
    chart = ctx.blueprint.dra.chart_version
    pinned, since = _release(chart), _release(feature.since)
    if pinned is not None and since is not None and pinned < since:
        yield ctx.error(
            DRA_CLAIM_SHARING,
            (*sharing.path, "strategy"),
            f"workload '{workload.name}' shares its claim by {sharing.strategy}, which the DRA driver turns on with "
            f"its {feature.gate} feature gate from chart {feature.since}; spec.dra.chartVersion pins {chart}",
            f'pin spec.dra.chartVersion to "{feature.since}" or newer (gpustack sets featureGates.{feature.gate}), '
            "or drop gpu.claim.sharing",
            related=[(*ctx.blueprint.dra.path, "chartVersion")],
        )


RULES = (
    check_workload_claims,
    check_dra_sharing,
    check_one_allocator_per_node,
    check_resource_api,
    check_dra_schedulers,
    check_dra_chart_pinned,
)

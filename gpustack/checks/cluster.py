"""Cluster-wide settings: pinned charts, a Kubernetes version gpustack knows, a stack that can run the pools
(GS801-GS806)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from gpustack.codes import (
    MIG_WITHOUT_OPERATOR,
    NO_ADMISSION_POLICIES,
    OPERATOR_CHART_SERIES,
    SELECTOR_RANGE,
    UNPINNED_CHART,
    UNSUPPORTED_KUBERNETES,
)
from gpustack.context import Context
from gpustack.diagnostic import Diagnostic
from gpustack.model import Scheduler, SharingStrategy, Stack, WorkloadKind
from gpustack.names import ADMISSION_POLICY_MINOR

_PINNED = re.compile(r"^v?[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$")
OLDEST_MINOR = 25
NEWEST_MINOR = 37


def check_chart_pinned(ctx: Context) -> Iterator[Diagnostic]:
    if ctx.blueprint.stack is Stack.GPU_OPERATOR:
        operator = ctx.blueprint.gpu_operator
        charts = [("GPU Operator", (*operator.path, "chartVersion"), operator.chart_version)]
    else:
        charts = [
            ("device plugin", ("spec", "devicePlugin", "chartVersion"), ctx.blueprint.device_plugin.chart_version)
        ]
    if any(pool.sharing.strategy is SharingStrategy.HAMI for pool in ctx.blueprint.pools):
        charts.append(("HAMi", (*ctx.blueprint.hami.path, "chartVersion"), ctx.blueprint.hami.chart_version))
    schedulers = {tenant.scheduler for tenant in ctx.blueprint.tenants}
    if Scheduler.VOLCANO in schedulers or any(w.kind is WorkloadKind.VOLCANO_JOB for w in ctx.blueprint.workloads):
        volcano = ctx.blueprint.volcano
        charts.append(("Volcano", (*volcano.path, "chartVersion"), volcano.chart_version))
    if Scheduler.KUEUE in schedulers:
        kueue = ctx.blueprint.kueue
        charts.append(("Kueue", (*kueue.path, "chartVersion"), kueue.chart_version))
    for what, path, version in charts:
        if not _PINNED.fullmatch(version):  # match() with `$` would let a trailing newline through
            yield ctx.error(
                UNPINNED_CHART,
                path,
                f"{what} chart version '{version}' is not pinned",
                'name an exact release such as "0.20.0": a floating version changes the plugin under running '
                "workloads on the next install, and the same blueprint stops meaning the same cluster",
            )


def check_kubernetes_version(ctx: Context) -> Iterator[Diagnostic]:
    minor = ctx.blueprint.kubernetes_minor
    path = ("spec", "kubernetes", "version")
    version = ctx.blueprint.kubernetes_version
    if minor < OLDEST_MINOR:
        yield ctx.error(
            UNSUPPORTED_KUBERNETES,
            path,
            f"Kubernetes {version} is older than gpustack supports (1.{OLDEST_MINOR} to 1.{NEWEST_MINOR})",
            "upgrade the cluster, or target 1.25 or newer",
        )
    elif minor > NEWEST_MINOR:
        yield ctx.warning(
            UNSUPPORTED_KUBERNETES,
            path,
            f"Kubernetes {version} is newer than gpustack knows; manifests are checked against 1.{NEWEST_MINOR}",
            None,
        )
    if minor < ADMISSION_POLICY_MINOR:
        yield ctx.warning(
            NO_ADMISSION_POLICIES,
            path,
            f"Kubernetes {version} has no ValidatingAdmissionPolicy (GA in 1.30): tenant isolation rests on taints "
            "and tolerations alone, which any pod can copy",
            "upgrade to 1.30 or newer to have gpustack enforce each tenant's pools at admission",
        )


def check_stack_runs_mig(ctx: Context) -> Iterator[Diagnostic]:
    """The standalone device plugin cannot partition GPUs: a MIG pool needs the GPU Operator's MIG manager."""
    if ctx.blueprint.stack is not Stack.DEVICE_PLUGIN:
        return
    manager = ctx.blueprint.mig_manager
    for pool in ctx.blueprint.pools:
        if pool.sharing.strategy is SharingStrategy.MIG:
            yield ctx.warning(
                MIG_WITHOUT_OPERATOR,
                (*pool.sharing.path, "strategy"),
                f"pool '{pool.name}' uses MIG, but with stack: device-plugin nothing applies its layout: it needs "
                f"an existing GPU Operator's MIG manager in namespace '{manager.namespace}' (an output prerequisite)",
                "set spec.stack: gpu-operator to have gpustack install the operator with the layouts, or keep "
                f"device-plugin and run the GPU Operator in '{manager.namespace}' as mig/README.md says",
                related=[("spec", "stack")],
            )


CHECKED_OPERATOR_SERIES = "v26.7."  # the chart line whose values.yaml the written keys are checked against


def check_operator_series(ctx: Context) -> Iterator[Diagnostic]:
    operator = ctx.blueprint.gpu_operator
    if ctx.blueprint.stack is not Stack.GPU_OPERATOR or not _PINNED.match(operator.chart_version):
        return
    if not operator.chart_version.startswith(CHECKED_OPERATOR_SERIES):
        yield ctx.warning(
            OPERATOR_CHART_SERIES,
            (*operator.path, "chartVersion"),
            f"GPU Operator chart {operator.chart_version} is not a {CHECKED_OPERATOR_SERIES}x release: the values "
            "gpustack writes are checked against v26.7.0, and the chart silently ignores keys it does not know",
            "pin a v26.7.x release, or compare gpu-operator/values.yaml with that chart's values.yaml first",
        )


def check_pool_size(ctx: Context) -> Iterator[Diagnostic]:
    for pool in ctx.blueprint.pools:
        if pool.min_nodes is not None and pool.max_nodes is not None and pool.min_nodes > pool.max_nodes:
            yield ctx.error(
                SELECTOR_RANGE,
                (*pool.path, "minNodes"),
                f"pool '{pool.name}' has minNodes {pool.min_nodes} above maxNodes {pool.max_nodes}",
                "give the autoscaled node pool's real range: minNodes is the floor, maxNodes the ceiling",
                related=[(*pool.path, "maxNodes")],
            )


RULES = (check_chart_pinned, check_kubernetes_version, check_stack_runs_mig, check_operator_series, check_pool_size)

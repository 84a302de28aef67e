"""Cluster-wide settings: pinned charts and a Kubernetes version gpustack knows (GS801-GS803)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from gpustack.context import Context
from gpustack.diagnostic import Diagnostic
from gpustack.model import Scheduler, SharingStrategy, WorkloadKind
from gpustack.names import ADMISSION_POLICY_MINOR

_PINNED = re.compile(r"^v?[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$")
OLDEST_MINOR = 25
NEWEST_MINOR = 37


def check_chart_pinned(ctx: Context) -> Iterator[Diagnostic]:
    charts = [("device plugin", ("spec", "devicePlugin", "chartVersion"), ctx.blueprint.device_plugin.chart_version)]
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
                "GS801",
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
            "GS802",
            path,
            f"Kubernetes {version} is older than gpustack supports (1.{OLDEST_MINOR} to 1.{NEWEST_MINOR})",
            "upgrade the cluster, or target 1.25 or newer",
        )
    elif minor > NEWEST_MINOR:
        yield ctx.warning(
            "GS802",
            path,
            f"Kubernetes {version} is newer than gpustack knows; manifests are checked against 1.{NEWEST_MINOR}",
            None,
        )
    if minor < ADMISSION_POLICY_MINOR:
        yield ctx.warning(
            "GS803",
            path,
            f"Kubernetes {version} has no ValidatingAdmissionPolicy (GA in 1.30): tenant isolation rests on taints "
            "and tolerations alone, which any pod can copy",
            "upgrade to 1.30 or newer to have gpustack enforce each tenant's pools at admission",
        )


RULES = (check_chart_pinned, check_kubernetes_version)

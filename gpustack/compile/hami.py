"""HAMi for pools with `sharing.strategy: hami`: one pinned Helm release (scheduler, webhook, device plugin).

HAMi (Project-HAMi, created at 4Paradigm, a CNCF project) shares a GPU between pods with limits enforced inside the
container by its CUDA interception library (HAMi-core), not by the hardware. What the values make sure of:
- HAMi's device plugin runs only on the HAMi pools' nodes (its node selector is `gpu=on` plus gpustack's own
  HAMi label, which nodes.py puts on those nodes only), never beside the NVIDIA device plugin: both advertise
  `nvidia.com/gpu`, and device_plugin.py keeps the NVIDIA plugin off these pools.
- Split count and memory/core scaling come from the pools (HAMi takes them once for the cluster: GS409).
- `forceOverwriteDefaultScheduler: false`: by default HAMi's webhook moves every pod that requests
  `nvidia.com/gpu` to hami-scheduler, including pods bound for the NVIDIA-plugin pools, where HAMi's scheduler finds
  no HAMi devices and leaves them Pending. gpustack's workloads on HAMi pools name the scheduler themselves.
"""

from __future__ import annotations

from gpustack.compile.device_plugin import build_tolerations
from gpustack.context import Context
from gpustack.model import HamiSharing, NodePool, SharingStrategy
from gpustack.names import HAMI_NODE_LABELS
from gpustack.plan import Artifact, FamilyOutput, HelmRelease, Object
from gpustack.quantity import json_number

RELEASE_NAME = "hami"
CHART_NAME = "hami"
VALUES_FILE = "hami/values.yaml"
NOTES_FILE = "hami/README.md"


def render_notes(ctx: Context) -> str:
    """What HAMi isolates and what it does not, next to its values: the trade-off a reviewer must see."""
    pools = ", ".join(f"`{pool.name}`" for pool in hami_pools(ctx))
    tenants = sorted({t for pool in hami_pools(ctx) for t in ctx.tenants_by_pool.get(pool.name, [])})
    return (
        "# HAMi: memory-isolated GPU sharing\n\n"
        f"Pools {pools} share each GPU between pods with HAMi (Project-HAMi, a CNCF project). Pods ask for\n"
        "`nvidia.com/gpumem` (MiB) and `nvidia.com/gpucores` (percent) and are scheduled by HAMi's scheduler.\n\n"
        "**The isolation is software, not hardware.** HAMi enforces memory and compute limits inside each\n"
        "container, in its CUDA interception library (HAMi-core). A process that calls the GPU driver or NVML\n"
        "directly, or loads its own CUDA runtime, escapes the limits and can use the whole GPU, and all pods on a\n"
        "GPU share one fault domain. Share a HAMi pool only between workloads that trust each other; between\n"
        "teams, MIG is the hard boundary (`gpustack validate` warns with GS703 when tenants share a HAMi pool).\n\n"
        f"Tenants on these pools: {', '.join(tenants) if tenants else 'none'}.\n\n"
        f"Install HAMi with `{VALUES_FILE}` (see the Helm command in the top-level README). HAMi's device plugin\n"
        "runs only on these pools' nodes; the NVIDIA device plugin never runs there (both advertise\n"
        "`nvidia.com/gpu`).\n"
    )


def hami_pools(ctx: Context) -> list[NodePool]:
    return [pool for pool in ctx.blueprint.pools if pool.sharing.strategy is SharingStrategy.HAMI]


def build_values(ctx: Context) -> Object:
    pools = hami_pools(ctx)
    # GS409 makes every HAMi pool agree; the first one speaks for all.
    sharing = next((p.sharing.hami for p in pools if p.sharing.hami is not None), HamiSharing())
    return {
        "schedulerName": ctx.blueprint.hami.scheduler_name,
        "scheduler": {"forceOverwriteDefaultScheduler": False},
        "devicePlugin": {
            "deviceSplitCount": sharing.split_count,
            # 1.0 is written 1, as the chart's own values.yaml writes it.
            "deviceMemoryScaling": json_number(sharing.memory_scaling),
            "deviceCoreScaling": json_number(sharing.core_scaling),
            "nvidiaNodeSelector": dict(HAMI_NODE_LABELS),
            # The chart's default (nvidia.com/gpu) and the HAMi pools' taints, or the plugin never starts there.
            "tolerations": build_tolerations(pools),
        },
    }


def compile_hami(ctx: Context) -> FamilyOutput:
    if not hami_pools(ctx):
        return FamilyOutput()
    settings = ctx.blueprint.hami
    release = HelmRelease(
        name=RELEASE_NAME,
        chart=CHART_NAME,
        repository=settings.repository,
        version=settings.chart_version,
        namespace=settings.namespace,
        values=build_values(ctx),
        values_file=VALUES_FILE,
        # With the chart's defaults (scheduler.patch.enabled, no cert-manager), a pre-install hook job creates the
        # webhook's certificate secret, which the scheduler pod mounts, and a post-install one patches its CA into
        # the MutatingWebhookConfiguration.
        needs_hooks=True,
    )
    notes = Artifact(NOTES_FILE, render_notes(ctx), "what HAMi's software isolation does and does not stop")
    return FamilyOutput(releases=[release], artifacts=[notes])

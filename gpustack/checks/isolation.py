"""Taints that keep the right pods off the right nodes, and sharing that isolates less than it seems (GS701-GS705)."""

from __future__ import annotations

from collections.abc import Iterator

from gpustack.codes import GPU_TAINT_ON_DEDICATED_POOL, HAMI_POOL_SHARED, NO_EXECUTE_TAINT, SHARED_TAINT, SOFT_ISOLATION
from gpustack.context import Context
from gpustack.diagnostic import Diagnostic, JsonPath
from gpustack.model import NodePool, SharingStrategy, Taint
from gpustack.taints import taint_text


def own_taints(pool: NodePool) -> list[Taint]:
    """The blueprint's taints: what isolates a pool is its own; a cloud's (Taint.by_cloud: GKE's nvidia.com/gpu, which
    ExtendedResourceToleration lets every GPU pod through, AKS's spot taint, the same on every spot pool) is not."""
    return [taint for taint in pool.taints if not taint.by_cloud]


def check_gpu_taint_on_dedicated_pool(ctx: Context) -> Iterator[Diagnostic]:
    for pool in ctx.blueprint.pools:
        users = ctx.tenants_by_pool.get(pool.name, [])
        if len(users) != 1:
            continue
        for taint in own_taints(pool):
            if taint.key == "nvidia.com/gpu":
                yield ctx.warning(
                    GPU_TAINT_ON_DEDICATED_POOL,
                    (*taint.path, "key"),
                    f"pool '{pool.name}' is dedicated to tenant '{users[0]}' but is tainted with key nvidia.com/gpu: "
                    "clusters with the ExtendedResourceToleration admission plugin add that toleration to every pod "
                    "that requests nvidia.com/gpu, so any tenant's GPU pod tolerates it",
                    f"use a key of your own, e.g. gpustack.io/pool={pool.name}",
                )


def check_no_execute(ctx: Context) -> Iterator[Diagnostic]:
    for pool in ctx.blueprint.pools:
        for taint in pool.taints:
            if taint.effect == "NoExecute":
                yield ctx.warning(
                    NO_EXECUTE_TAINT,
                    (*taint.path, "effect"),
                    f"pool '{pool.name}' has a NoExecute taint ({taint.key}): applying it evicts every running pod "
                    "on its nodes that does not tolerate it, including DaemonSets without a matching toleration",
                    "use NoSchedule unless you mean to drain the nodes",
                )


def check_hami_pool_shared_by_tenants(ctx: Context) -> Iterator[Diagnostic]:
    for pool in ctx.blueprint.pools:
        users = ctx.tenants_by_pool.get(pool.name, [])
        if pool.sharing.strategy is not SharingStrategy.HAMI or len(users) < 2:
            continue
        yield ctx.warning(
            HAMI_POOL_SHARED,
            (*pool.sharing.path, "strategy"),
            f"pool '{pool.name}' shares its GPUs between tenants {', '.join(repr(u) for u in users)} through HAMi, "
            "whose memory and compute limits are enforced inside each container by a CUDA library (HAMi-core), not "
            "by the GPU: a process that calls the CUDA driver API or NVML directly, or sets CUDA_DISABLE_CONTROL, "
            "is not limited and can take the memory or compute of another tenant's pod on the same GPU",
            "use HAMi to share GPUs within one tenant; give each tenant its own HAMi pool, or use MIG where "
            "tenants must share a GPU with hardware isolation",
        )


def check_taints_shared_across_tenants(ctx: Context) -> Iterator[Diagnostic]:
    first: dict[tuple[str, str | None, str], tuple[str, JsonPath]] = {}
    for pool in ctx.blueprint.pools:
        for taint in own_taints(pool):
            key = (taint.key, taint.value, taint.effect)
            if key not in first:
                first[key] = (pool.name, taint.path)
                continue
            other, other_path = first[key]
            tenants = set(ctx.tenants_by_pool.get(pool.name, [])) ^ set(ctx.tenants_by_pool.get(other, []))
            if tenants:
                yield ctx.warning(
                    SHARED_TAINT,
                    (*taint.path, "key"),
                    f"pools '{other}' and '{pool.name}' share the taint {taint_text(taint)} but not their "
                    f"tenants ({', '.join(sorted(tenants))} may use only one of them): a pod that tolerates it and "
                    "selects no pool can land on either",
                    f"give each pool a taint of its own, e.g. gpustack.io/pool={pool.name}",
                    related=[other_path],
                )


def check_soft_isolation(ctx: Context) -> Iterator[Diagnostic]:
    """A granted pool that only PreferNoSchedule (or nothing) keeps other pods off is open to every namespace.

    Only where tenants share the cluster: with one tenant there is no other tenant's pod to keep off.
    """
    if len(ctx.blueprint.tenants) < 2:
        return
    for pool in ctx.blueprint.pools:
        users = ctx.tenants_by_pool.get(pool.name, [])
        if not users or any(taint.effect in ("NoSchedule", "NoExecute") for taint in own_taints(pool)):
            continue
        soft = [taint for taint in own_taints(pool) if taint.effect == "PreferNoSchedule"]
        where = (*soft[0].path, "effect") if soft else pool.path
        what = "only a PreferNoSchedule taint, which the scheduler may ignore" if soft else "no taint"
        yield ctx.warning(
            SOFT_ISOLATION,
            where,
            f"pool '{pool.name}' is granted to {', '.join(repr(u) for u in users)} but has {what}: any pod that asks "
            "for the resource its GPUs advertise can land there (gpustack's quotas and admission policies refuse "
            "that resource to other tenants, but not to pods whose resource name other pools share)",
            f"taint the pool with effect NoSchedule, e.g. {{key: gpustack.io/pool, value: {pool.name}, "
            "effect: NoSchedule}",
        )


RULES = (
    check_soft_isolation,
    check_gpu_taint_on_dedicated_pool,
    check_no_execute,
    check_hami_pool_shared_by_tenants,
    check_taints_shared_across_tenants,
)

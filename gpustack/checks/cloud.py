"""Cloud pools against hardware facts: the machine type carries the pool's GPUs (GS307), and a selector given
with a cloud block selects the nodes that provider pool makes (GS308)."""

from __future__ import annotations

from collections.abc import Iterator

from gpustack.cloud import machine_named, machines, matching_machines
from gpustack.codes import CLOUD_SELECTOR_ELSEWHERE, MACHINE_TYPE_MISMATCH
from gpustack.context import Context
from gpustack.diagnostic import Diagnostic
from gpustack.model import NodePool
from gpustack.names import CLOUD_POOL_LABELS, POOL_LABEL
from gpustack.selection import describe_selection, selects


def _listed(names: list[str], shown: int = 6) -> str:
    more = f" (and {len(names) - shown} more)" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def _hint(ctx: Context, pool: NodePool, provider: str) -> str:
    found = [m.name for m in matching_machines(provider, ctx.catalog, pool)]
    if found:
        return f"machine types with {pool.gpus_per_node} x {pool.gpu.model if pool.gpu else ''}: {_listed(found)}"
    model = ctx.models.get(pool.name)
    counts = sorted({m.count for m in machines(provider) if model is not None and m.gpu == model.key})
    if counts:
        return (
            f"{provider} offers {model.key if model else ''} only {' or '.join(map(str, counts))} per machine: "
            "set gpu.count to one of those"
        )
    return f"{provider} has no machine type with this GPU in gpustack's table; pick another gpu.model or provider"


def check_cloud_machines(ctx: Context) -> Iterator[Diagnostic]:
    for pool in ctx.blueprint.pools:
        cloud = pool.cloud
        if cloud is None or (pool.gpu is not None and ctx.models[pool.name] is None):
            continue  # GS301 already says the GPU model is unknown
        provider = cloud.provider
        if cloud.machine_type is None:
            if pool.gpu is None:
                yield ctx.error(
                    MACHINE_TYPE_MISMATCH,
                    (*cloud.path, "provider"),
                    f"cloud pool '{pool.name}' has no gpu and no machineType; expected a machineType",
                    "a CPU-only cloud pool names its machine type (gpustack only picks GPU machines)",
                    key=True,
                )
            elif not matching_machines(provider, ctx.catalog, pool):
                yield ctx.error(
                    MACHINE_TYPE_MISMATCH,
                    (*pool.gpu.path, "count"),
                    f"no {provider} machine type has {pool.gpu.count} x {pool.gpu.model} (pool '{pool.name}')",
                    _hint(ctx, pool, provider),
                )
            continue
        if pool.gpu is None:
            continue  # a CPU machine: the table lists only GPU machines
        machine = machine_named(provider, cloud.machine_type)
        model = ctx.models[pool.name]
        if machine is None:
            yield ctx.error(
                MACHINE_TYPE_MISMATCH,
                (*cloud.path, "machineType"),
                f"'{cloud.machine_type}' is not a {provider} GPU machine type gpustack knows (pool '{pool.name}')",
                _hint(ctx, pool, provider) + "; or leave machineType out and gpustack picks the smallest",
            )
        elif model is not None and (machine.gpu != model.key or machine.count != pool.gpu.count):
            yield ctx.error(
                MACHINE_TYPE_MISMATCH,
                (*cloud.path, "machineType"),
                f"{cloud.machine_type} has {machine.count} x {machine.gpu}, but pool '{pool.name}' says "
                f"{pool.gpu.count} x {model.key}",
                _hint(ctx, pool, provider),
            )


def check_cloud_selectors(ctx: Context) -> Iterator[Diagnostic]:
    for pool in ctx.blueprint.pools:
        if pool.cloud is None or pool.selector is None:
            continue
        # The labels every node of the provider's pool carries: its node-pool label, and what gpustack sets on it.
        labels = {CLOUD_POOL_LABELS[pool.cloud.provider]: pool.name, POOL_LABEL: pool.name, **dict(pool.labels)}
        if not selects(pool, labels):
            yield ctx.error(
                CLOUD_SELECTOR_ELSEWHERE,
                pool.selector.path,
                f"the selector of cloud pool '{pool.name}' ({describe_selection(pool)}) does not select the nodes "
                f"of the {pool.cloud.provider} pool gpustack makes for it",
                f"drop the selector (gpustack selects {CLOUD_POOL_LABELS[pool.cloud.provider]}={pool.name}), or "
                "select on that label or on the pool's labels",
            )


RULES = (check_cloud_machines, check_cloud_selectors)

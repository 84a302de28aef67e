"""Hardware truth: the GPU model exists and its MIG layouts are ones the silicon can make (GS301-GS305)."""

from __future__ import annotations

from collections.abc import Iterator

from gpustack.codes import (
    MIG_GROUPS_UNEVEN,
    MIG_LAYOUT_AUTO,
    MIG_LAYOUT_IMPOSSIBLE,
    MIG_SINGLE_MIXED,
    MIG_UNSUPPORTED,
    SHARING_ON_CPU_POOL,
    UNKNOWN_MODEL,
)
from gpustack.context import Context
from gpustack.diagnostic import Diagnostic
from gpustack.mig import check_layout, layout_text, nearest_valid_layouts
from gpustack.model import MigStrategy, NodePool, SharingStrategy


def _some(items: Iterator[int] | list[int], shown: int = 10) -> str:
    values = list(items)
    more = f" (and {len(values) - shown} more)" if len(values) > shown else ""
    return ", ".join(map(str, values[:shown])) + more


def check_models(ctx: Context) -> Iterator[Diagnostic]:
    for pool in ctx.blueprint.pools:
        if pool.gpu is None:
            if pool.sharing.strategy is not SharingStrategy.NONE:
                yield ctx.error(
                    SHARING_ON_CPU_POOL,
                    (*pool.sharing.path, "strategy"),
                    f"pool '{pool.name}' has no gpu but shares GPUs ({pool.sharing.strategy}); expected strategy none",
                    "give the pool its gpu (model and count), or drop sharing: a CPU-only pool has nothing to share",
                )
            continue
        if ctx.models[pool.name] is None:
            suggestions = ctx.catalog.suggest(pool.gpu.model)
            hint = f"did you mean {' or '.join(repr(s) for s in suggestions)}?" if suggestions else ""
            yield ctx.error(
                UNKNOWN_MODEL,
                (*pool.gpu.path, "model"),
                f"unknown GPU model '{pool.gpu.model}' in pool '{pool.name}'",
                (hint + " " if hint else "") + "use a catalog key or the nvidia.com/gpu.product label your nodes carry "
                "(`gpustack models` lists them)",
            )


def _either(names: list[str]) -> str:
    return ", ".join(names[:-1]) + f" or {names[-1]}" if len(names) > 1 else "".join(names)


def check_mig_layouts(ctx: Context) -> Iterator[Diagnostic]:
    for pool in ctx.blueprint.pools:
        model = ctx.models[pool.name]
        mig = pool.sharing.mig
        if model is not None and pool.sharing.strategy is SharingStrategy.AUTO:
            yield ctx.warning(
                MIG_LAYOUT_AUTO,
                (*pool.sharing.path, "strategy"),
                f"pool '{pool.name}' leaves its sharing to gpustack recommend (strategy: auto): compile writes no "
                "sharing nobody chose",
                "run `gpustack recommend BLUEPRINT --write`, review the sharing it writes over auto, then compile",
            )
            continue
        if model is None or mig is None:
            continue
        if model.mig is None:
            yield ctx.error(
                MIG_UNSUPPORTED,
                mig.path,
                f"pool '{pool.name}' partitions {model.key} with MIG, but {model.key} does not support MIG",
                f"MIG needs one of {_either(ctx.catalog.mig_capable())}; share this GPU with time-slicing or MPS "
                "instead",
                key=True,
            )
            continue
        if mig.auto:
            yield ctx.warning(
                MIG_LAYOUT_AUTO,
                mig.groups[0].path,
                f"pool '{pool.name}' leaves its MIG layout to gpustack recommend (layout: auto): compile writes no "
                "layout nobody chose",
                "run `gpustack recommend BLUEPRINT --write`, review the layouts it writes over auto, then compile",
            )
            continue
        if not mig.cut_groups:
            yield ctx.error(
                MIG_LAYOUT_IMPOSSIBLE,
                (*mig.path, "groups"),
                f"pool '{pool.name}' uses MIG but every group leaves its GPUs whole: no GPU is MIG-enabled, so "
                "there is no MIG instance to advertise" + (" or time-slice" if mig.time_slicing is not None else ""),
                "give at least one group a layout, or use sharing.strategy: none for whole GPUs",
                key=True,
            )
        for group in mig.cut_groups:
            layout = group.instances
            result = check_layout(model.mig, layout)
            if result.valid:
                continue
            nearest = nearest_valid_layouts(model.mig, layout)
            hint = "valid layouts close to this one: " + "; ".join(layout_text(n) for n in nearest) if nearest else None
            yield ctx.error(
                MIG_LAYOUT_IMPOSSIBLE,
                group.path,
                f"MIG layout {layout_text(layout)} cannot be made on {model.key}: " + "; ".join(result.problems),
                hint,
            )
        yield from _check_groups(ctx, pool)


def _check_groups(ctx: Context, pool: NodePool) -> Iterator[Diagnostic]:
    mig = pool.sharing.mig
    assert mig is not None and pool.gpu is not None  # check_mig_layouts calls this only for a known GPU model
    if len(mig.groups) == 1 and mig.groups[0].devices is None:
        return
    owner: dict[int, int] = {}
    for index, group in enumerate(mig.groups):
        # One diagnostic per group and kind, at the first offending index: a list of 100000 indexes is one mistake.
        absent: list[tuple[int, int]] = []
        repeated: list[tuple[int, int]] = []
        for position, device in enumerate(group.devices or ()):
            if device >= pool.gpu.count:
                absent.append((position, device))
            elif device in owner:
                repeated.append((position, device))
            owner.setdefault(device, index)
        if absent:
            position, device = absent[0]
            yield ctx.error(
                MIG_GROUPS_UNEVEN,
                (*mig.path, "groups", index, "devices", position),
                f"GPU index{'es' if len(absent) > 1 else ''} {_some(d for _, d in absent)} "
                f"{'do' if len(absent) > 1 else 'does'} not exist: nodes of pool '{pool.name}' have "
                f"{pool.gpu.count} GPUs (0..{pool.gpu.count - 1})",
                "list GPU indexes below gpu.count",
            )
        if repeated:
            position, device = repeated[0]
            yield ctx.error(
                MIG_GROUPS_UNEVEN,
                (*mig.path, "groups", index, "devices", position),
                f"GPU {device} is in MIG groups {owner[device]} and {index} of pool '{pool.name}'"
                + (
                    f" (and {len(repeated) - 1} more GPU(s) of group {index} are in earlier groups)"
                    if len(repeated) > 1
                    else ""
                ),
                "each GPU gets exactly one layout",
            )
    missing = [d for d in range(pool.gpu.count) if d not in owner]
    if missing:
        yield ctx.error(
            MIG_GROUPS_UNEVEN,
            (*mig.path, "groups"),
            f"GPU{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))} of pool '{pool.name}' "
            f"{'are' if len(missing) > 1 else 'is'} in no MIG group",
            "every GPU of the node needs a layout: add them to a group",
        )


def check_single_strategy(ctx: Context) -> Iterator[Diagnostic]:
    for pool in ctx.blueprint.pools:
        mig = pool.sharing.mig
        if pool.sharing.strategy is not SharingStrategy.MIG or mig is None or mig.strategy is not MigStrategy.SINGLE:
            continue
        for index, group in enumerate(mig.groups):
            if group.whole:
                yield ctx.error(
                    MIG_SINGLE_MIXED,
                    (*mig.path, "groups", index, "whole"),
                    f"pool '{pool.name}' uses the single MIG strategy but leaves GPUs "
                    f"{', '.join(map(str, group.devices or ()))} whole: the device plugin refuses a node whose GPUs "
                    "are not all MIG-enabled ('all devices on the node must be configured with the same migEnabled "
                    "value') and GFD labels it -MIG-INVALID",
                    "use strategy: mixed, which advertises the whole GPUs as nvidia.com/gpu and the MIG instances as "
                    "nvidia.com/mig-<profile> on the same node",
                    key=True,
                )
                break
        if mig.time_slicing is not None:
            yield ctx.error(
                MIG_SINGLE_MIXED,
                (*mig.path, "timeSlicing"),
                f"pool '{pool.name}' time-slices MIG instances under the single MIG strategy, which gpustack does not "
                "write: the device plugin would replicate them as nvidia.com/gpu (GFD product "
                "<model>-MIG-<profile>-SHARED), indistinguishable by name from whole GPUs on other pools",
                "use strategy: mixed, which time-slices each profile as nvidia.com/mig-<profile> "
                "(or nvidia.com/mig-<profile>.shared with renameByDefault)",
                key=True,
            )
        profiles = {p for group in mig.groups for p in group.instances}
        if len(profiles) > 1:
            yield ctx.error(
                MIG_SINGLE_MIXED,
                (*mig.path, "strategy"),
                f"pool '{pool.name}' uses the single MIG strategy with several profiles "
                f"({', '.join(sorted(profiles))})",
                "single needs one profile on every GPU (the plugin reports 'more than one MIG device type present "
                "on node' and GFD labels the node -MIG-INVALID); use strategy: mixed",
            )


RULES = (check_models, check_mig_layouts, check_single_strategy)

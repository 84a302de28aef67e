"""Sharing rules the device plugins enforce at run time, caught before apply (GS401-GS407, GS409; GS024, GS025:
one device-plugin or MIG config name, one config; GS425, GS426: time-slicing counts per MIG profile)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from gpustack.codes import (
    DEVICE_PLUGIN_CONFIG_NAME_SHARED,
    GFD_LABEL,
    HAMI_SETTINGS_DIFFER,
    MEMORY_OVERSUBSCRIBED,
    MIG_CONFIG_NAME_SHARED,
    MIG_TIME_SLICING_AUTO_LAYOUT,
    MIG_TIME_SLICING_UNKNOWN_PROFILE,
    MPS_TOO_MANY_CLIENTS,
    MPS_WITH_MIG,
    MPS_WITHOUT_GFD,
    OWNED_LABEL,
    TOO_FEW_REPLICAS,
)
from gpustack.context import Context
from gpustack.diagnostic import Diagnostic
from gpustack.model import (
    WHOLE_GPUS,
    Allocation,
    HamiSharing,
    MigSharing,
    MigStrategy,
    NodePool,
    Replication,
    SharingStrategy,
)
from gpustack.names import HAMI_NODE_LABELS, MIG_DISABLED_CONFIG, OWNED_NODE_LABELS
from gpustack.quantity import format_gib

OWNED_LABELS = OWNED_NODE_LABELS
# Labels GPU Feature Discovery writes on every GPU node, overwriting a value set by hand on its next pass
# (../shared research gfd-labels.md; k8s-device-plugin internal/lm). Not nvidia.com/gpu.deploy.* and
# gpu.workload.config: the GPU Operator reads those from the user.
GFD_LABELS = frozenset(
    f"nvidia.com/{name}"
    for name in (
        *("gpu.product", "gpu.memory", "gpu.count", "gpu.family", "gpu.replicas", "gpu.machine"),
        *("gpu.sharing-strategy", "gpu.mode", "gpu.clique", "mig.capable", "mig.strategy", "mps.capable"),
        "gfd.timestamp",
    )
)
GFD_LABEL_PREFIXES = ("nvidia.com/gpu.compute.", "nvidia.com/cuda.", "nvidia.com/mig-", "nvidia.com/vgpu.")
# Labels the kubelet and Kubernetes set on every node (L7). topology.kubernetes.io/zone and region (and the legacy
# failure-domain.beta ones) come from the cloud provider: zonal volumes bind and pods spread by them.
KUBELET_LABELS = ("kubernetes.io/hostname", "kubernetes.io/os", "kubernetes.io/arch")
KUBELET_LABEL_PREFIXES = (
    "node-role.kubernetes.io/",
    "node.kubernetes.io/",
    "beta.kubernetes.io/",
    "topology.kubernetes.io/",
    "failure-domain.beta.kubernetes.io/",
)
# HAMi's settings and their names in the blueprint; HAMi's chart takes one value of each for the whole cluster.
HAMI_SETTINGS = (("split_count", "splitCount"), ("memory_scaling", "memoryScaling"), ("core_scaling", "coreScaling"))


def check_mps_with_mig(ctx: Context) -> Iterator[Diagnostic]:
    for pool in ctx.blueprint.pools:
        if pool.sharing.strategy is not SharingStrategy.MPS:
            continue
        if pool.sharing.mig is not None:
            yield ctx.error(
                MPS_WITH_MIG,
                pool.sharing.mig.path,
                f"pool '{pool.name}' combines MPS with MIG, which the NVIDIA device plugin refuses "
                "('sharing using MPS is not supported for MIG devices')",
                "choose one: MIG for hard isolation, or MPS on whole GPUs; remove the mig block",
                key=True,
            )


def check_replicas(ctx: Context) -> Iterator[Diagnostic]:
    for pool in ctx.blueprint.pools:
        replication = pool.sharing.replication
        model = ctx.models[pool.name]
        kind = "time-slicing" if pool.sharing.strategy is SharingStrategy.TIME_SLICING else "MPS"
        mig = pool.sharing.mig
        if pool.sharing.strategy is SharingStrategy.MIG and mig is not None and mig.time_slicing is not None:
            replication, kind = mig.time_slicing, "MIG time-slicing"
        if replication is None:
            continue
        path = (*replication.path, "replicas")
        if replication.per_profile:
            yield from _too_few_per_profile(ctx, pool, replication)
        elif replication.replicas < 2:
            yield ctx.error(
                TOO_FEW_REPLICAS,
                path,
                f"{kind} in pool '{pool.name}' has {replication.replicas} replica; the device plugin requires at "
                "least 2 ('number of replicas must be >= 2') and fails to start",
                "use replicas >= 2, or drop mig.timeSlicing so each pod gets a MIG instance of its own"
                if kind.startswith("MIG")
                else "use replicas >= 2, or sharing.strategy: none for whole GPUs",
            )
        if pool.sharing.strategy is SharingStrategy.MPS and model is not None:
            cap = model.mps_max_clients
            if replication.replicas > cap:
                yield ctx.error(
                    MPS_TOO_MANY_CLIENTS,
                    path,
                    f"MPS in pool '{pool.name}' asks for {replication.replicas} replicas; {model.key} "
                    f"(compute capability {model.compute_capability}) allows at most {cap} MPS clients per GPU",
                    f"use replicas <= {cap}",
                )


def _too_few_per_profile(ctx: Context, pool: NodePool, replication: Replication) -> Iterator[Diagnostic]:
    for profile, count in replication.per_profile:
        if count >= 2:
            continue
        what = "the GPUs it leaves whole" if profile == WHOLE_GPUS else f"its {profile} MIG instances"
        yield ctx.error(
            TOO_FEW_REPLICAS,
            (*replication.path, "replicas", profile),
            f"MIG time-slicing in pool '{pool.name}' gives {what} {count} replica; the device plugin requires at "
            "least 2 ('number of replicas must be >= 2') and fails to start",
            f"use replicas >= 2, or remove '{profile}' from the mapping so "
            + ("those GPUs stay whole" if profile == WHOLE_GPUS else "each pod gets an instance of its own"),
        )


def check_mig_time_slicing_profiles(ctx: Context) -> Iterator[Diagnostic]:
    """Each count of mig.timeSlicing.replicas names a profile the layouts make, or `whole` beside whole GPUs."""
    for pool in ctx.blueprint.pools:
        mig = pool.sharing.mig
        sliced = mig.time_slicing if mig is not None else None
        if pool.sharing.strategy is not SharingStrategy.MIG or mig is None or sliced is None:
            continue
        # Under single (GS304) or on a DRA pool (GS420) mig.timeSlicing is refused whole: one error, not one a count.
        if not sliced.per_profile or mig.strategy is MigStrategy.SINGLE or pool.allocation is Allocation.DRA:
            continue
        if mig.auto:
            yield ctx.error(
                MIG_TIME_SLICING_AUTO_LAYOUT,
                (*sliced.path, "replicas"),
                f"pool '{pool.name}' gives time-slicing counts per MIG profile, but its layout is left to gpustack "
                "recommend (layout: auto): no layout says yet which profiles the pool makes",
                "give one count (replicas: 2) until `gpustack recommend --write` has chosen the layouts, then a "
                "count per profile",
                key=True,
            )
            continue
        yield from _unmade_profiles(ctx, pool.name, mig, sliced)


def _unmade_profiles(ctx: Context, pool: str, mig: MigSharing, sliced: Replication) -> Iterator[Diagnostic]:
    made = list(dict.fromkeys(profile for group in mig.cut_groups for profile in group.instances))
    offered = ", ".join(made) + (f"; groups leave GPUs {WHOLE_GPUS}" if mig.whole_groups else "")
    for profile, _ in sliced.per_profile:
        where = (*sliced.path, "replicas", profile)
        if profile == WHOLE_GPUS and not mig.whole_groups:
            yield ctx.error(
                MIG_TIME_SLICING_UNKNOWN_PROFILE,
                where,
                f"pool '{pool}' time-slices the GPUs it leaves '{WHOLE_GPUS}', but no group of its layout leaves "
                "GPUs whole: every GPU is MIG-enabled, so the device plugin has no nvidia.com/gpu to replicate",
                f"remove '{WHOLE_GPUS}', or leave some GPUs whole (a group with whole: true)",
                key=True,
            )
        elif profile != WHOLE_GPUS and profile not in made:
            yield ctx.error(
                MIG_TIME_SLICING_UNKNOWN_PROFILE,
                where,
                f"pool '{pool}' time-slices MIG profile '{profile}', which its layout does not make: the device "
                "plugin ignores a resource the node does not advertise, so the count shares nothing",
                f"the layout makes {offered}" if made else "give the pool a layout first",
                key=True,
            )


def check_memory_oversubscription(ctx: Context) -> Iterator[Diagnostic]:
    for fact in ctx.oversubscriptions:
        workload, replicas = fact.workload, fact.replicas
        if fact.profile is not None:
            yield ctx.warning(
                MEMORY_OVERSUBSCRIBED,
                (*workload.gpu.path, "memory"),
                f"workload '{workload.name}' needs {format_gib(fact.need)} of GPU memory; pool '{fact.pool.name}' "
                f"time-slices each {fact.profile} MIG instance {replicas} ways, so {replicas} such pods can land on "
                f"one instance and ask for {format_gib(fact.total)} of its {format_gib(fact.gpu_memory)}",
                "time-slicing does not isolate memory within a MIG instance: the pods that come last fail with "
                "out-of-memory. Lower mig.timeSlicing.replicas, or drop mig.timeSlicing so each pod gets its instance",
            )
            continue
        whole = fact.pool.sharing.strategy is SharingStrategy.MIG  # a GPU a mixed MIG pool leaves whole
        yield ctx.warning(
            MEMORY_OVERSUBSCRIBED,
            (*workload.gpu.path, "memory"),
            f"workload '{workload.name}' needs {format_gib(fact.need)} of GPU memory; pool '{fact.pool.name}' "
            f"time-slices each {'whole ' if whole else ''}{fact.model.key} {replicas} ways, so {replicas} such pods "
            f"can land on one GPU and ask for {format_gib(fact.total)} of its {fact.model.memory_gib} GiB",
            "time-slicing does not isolate memory: the pods that come last fail with out-of-memory. Lower "
            + (
                f"mig.timeSlicing.replicas.{WHOLE_GPUS}, or remove it so the whole GPUs are not shared"
                if whole
                else "timeSlicing.replicas, or use MIG or HAMi for memory isolation"
            ),
        )


def check_mps_needs_gfd(ctx: Context) -> Iterator[Diagnostic]:
    if ctx.blueprint.device_plugin.gfd:
        return
    for pool in ctx.blueprint.pools:
        if pool.sharing.strategy is SharingStrategy.MPS:
            yield ctx.error(
                MPS_WITHOUT_GFD,
                (*pool.sharing.path, "strategy"),
                f"pool '{pool.name}' uses MPS, but GPU Feature Discovery is off (devicePlugin.gfd: false)",
                "the MPS control daemon only runs on nodes GFD labels nvidia.com/mps.capable=true: set gfd: true",
            )


def check_owned_labels(ctx: Context) -> Iterator[Diagnostic]:
    for pool in ctx.blueprint.pools:
        owned = set(OWNED_LABELS)
        if pool.sharing.strategy is SharingStrategy.HAMI:
            owned |= set(HAMI_NODE_LABELS)  # gpu=on: what HAMi's device plugin selects its nodes by
        for key, _ in pool.labels:
            if key in owned:
                yield ctx.error(
                    OWNED_LABEL,
                    (*pool.path, "labels", key),
                    f"pool '{pool.name}' sets label '{key}', which gpustack derives from the pool's sharing",
                    "remove it: gpustack writes this label from sharing (and a hand-set MIG config beside MPS "
                    "would break the device plugin)",
                    key=True,
                )
            elif key in KUBELET_LABELS or key.startswith(KUBELET_LABEL_PREFIXES):
                yield ctx.error(
                    OWNED_LABEL,
                    (*pool.path, "labels", key),
                    f"pool '{pool.name}' sets label '{key}', which the kubelet (or Kubernetes, or the cloud provider) "
                    "sets on every node: overwriting it breaks what relies on it (local and zonal volumes, "
                    "anti-affinity, topology spreading) and would let the "
                    "admission policies read another node's name as one of this pool's",
                    "remove it: gpustack already tells pools apart by gpustack.io/pool and the pool's node names",
                    key=True,
                )


def check_gfd_labels(ctx: Context) -> Iterator[Diagnostic]:
    if not ctx.blueprint.device_plugin.gfd:
        return  # without GFD, hand-set product labels are how nodes get them
    for pool in ctx.blueprint.pools:
        for key, _ in pool.labels:
            if key in GFD_LABELS or key.startswith(GFD_LABEL_PREFIXES):
                yield ctx.warning(
                    GFD_LABEL,
                    (*pool.path, "labels", key),
                    f"pool '{pool.name}' sets label '{key}', which GPU Feature Discovery writes from the "
                    "hardware and overwrites on its next pass",
                    "remove it: GFD labels the node itself; to select this pool's nodes use gpustack.io/pool, "
                    "which gpustack writes",
                    key=True,
                )


def check_hami_settings_agree(ctx: Context) -> Iterator[Diagnostic]:
    first: tuple[str, HamiSharing] | None = None
    for pool in ctx.blueprint.pools:
        if pool.sharing.strategy is not SharingStrategy.HAMI:
            continue
        hami = pool.sharing.hami or HamiSharing()
        if first is None:
            first = (pool.name, hami)
            continue
        for attribute, name in HAMI_SETTINGS:
            mine, theirs = getattr(hami, attribute), getattr(first[1], attribute)
            if mine != theirs:
                yield ctx.error(
                    HAMI_SETTINGS_DIFFER,
                    (*pool.sharing.path, "hami", name) if pool.sharing.hami is not None else pool.sharing.path,
                    f"HAMi pools '{first[0]}' and '{pool.name}' differ in {name} ({theirs} and {mine}): gpustack "
                    "installs one HAMi release, whose device plugin takes one value for every HAMi node",
                    f"give every HAMi pool the same {name}",
                )


def _settings(value: Any) -> Any:
    """A pool's sharing or flags as plain data without its source paths: what the plugin's config is built from."""
    data = dataclasses.asdict(value) if dataclasses.is_dataclass(value) and not isinstance(value, type) else value
    if isinstance(data, dict):
        return {k: _settings(v) for k, v in data.items() if k != "path"}
    if isinstance(data, (list, tuple)):
        return [_settings(v) for v in data]
    return data


def check_config_names_agree(ctx: Context) -> Iterator[Diagnostic]:
    first: dict[str, NodePool] = {}
    for pool in ctx.blueprint.pools:
        if pool.config_name is None:
            continue
        other = first.setdefault(pool.config_name, pool)
        if other is pool:
            continue
        if (_settings(pool.sharing), _settings(pool.flags)) != (_settings(other.sharing), _settings(other.flags)):
            yield ctx.error(
                DEVICE_PLUGIN_CONFIG_NAME_SHARED,
                (*pool.path, "devicePlugin", "configName"),
                f"pools '{other.name}' and '{pool.name}' both name device-plugin config '{pool.config_name}' but "
                "differ in sharing or devicePlugin.flags: one name selects one config",
                "give the pools different configNames, or the same sharing and flags",
            )


def check_mig_config_names_agree(ctx: Context) -> Iterator[Diagnostic]:
    first: dict[str, NodePool] = {}
    for pool in ctx.blueprint.pools:
        mig = pool.sharing.mig
        if mig is None or mig.config_name is None:
            continue
        where = (*mig.path, "configName")
        if mig.config_name == MIG_DISABLED_CONFIG:
            yield ctx.error(
                MIG_CONFIG_NAME_SHARED,
                where,
                f"pool '{pool.name}' names MIG config '{MIG_DISABLED_CONFIG}', the config of GPUs without MIG",
                "give the pool's MIG config another name",
            )
            continue
        other = first.setdefault(mig.config_name, pool)
        theirs = other.sharing.mig
        if other is not pool and theirs is not None and _settings(mig.groups) != _settings(theirs.groups):
            yield ctx.error(
                MIG_CONFIG_NAME_SHARED,
                where,
                f"pools '{other.name}' and '{pool.name}' both name MIG config '{mig.config_name}' but differ in "
                "layout: one name selects one mig-parted config",
                "give the pools different configNames, or the same layout",
            )


RULES = (
    check_config_names_agree,
    check_mig_config_names_agree,
    check_mps_with_mig,
    check_replicas,
    check_mig_time_slicing_profiles,
    check_memory_oversubscription,
    check_mps_needs_gfd,
    check_owned_labels,
    check_gfd_labels,
    check_hami_settings_agree,
)

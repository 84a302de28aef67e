"""The NVIDIA device plugin as one Helm release: a named config per distinct pool setup, placed on gpustack's pools.

Each node picks its config through the `nvidia.com/device-plugin.config` label (nodes.py writes it),
so pools that share an effective config share one key. Config files are built as data and checked
against the upstream rules in tests, because the plugin parses them non-strictly: a misspelt key is
silently ignored rather than rejected.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpustack.context import Context
from gpustack.mig import resource_name as mig_resource_name
from gpustack.model import (
    Allocation,
    DevicePluginFlags,
    MigSharing,
    MigStrategy,
    NodePool,
    Replication,
    SharingStrategy,
    Stack,
)
from gpustack.names import MAX_LABEL_VALUE, POOL_LABEL
from gpustack.offers import GPU
from gpustack.plan import FamilyOutput, HelmRelease, Object
from gpustack.selection import node_selector_term
from gpustack.taints import daemonset_tolerations
from gpustack.yamlout import dump_yaml

CHART_NAME = "nvidia-device-plugin"
VALUES_FILE = "device-plugin/values.yaml"
CONFIG_VERSION = "v1"
# The chart's `mps.root` default, which it also exports as MPS_ROOT; gpustack leaves mps.root alone.
MPS_ROOT = "/run/nvidia/mps"
# The config a node without the label falls back to: whole GPUs with the cluster-wide flags.
DEFAULT_CONFIG_KEY = "whole-gpu"
MIG_NONE = "none"
# A config key is both a ConfigMap key and a label value, so it must satisfy the stricter of the two.
MAX_KEY_LENGTH = MAX_LABEL_VALUE
KEY_PATTERN = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
# Replacing `tolerations` replaces the chart's list, so its two defaults are repeated here.
CHART_TOLERATIONS: tuple[Object, ...] = (
    {"key": "CriticalAddonsOnly", "operator": "Exists"},
    {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
)


@dataclass(frozen=True)
class NamedConfig:
    """One device-plugin config file and the pools whose nodes select it."""

    key: str
    config: Object
    pools: tuple[str, ...]


def served_pools(ctx: Context) -> list[NodePool]:
    """Pools the NVIDIA plugin runs on: every pool but HAMi's, whose own device plugin owns the GPUs there."""
    # HAMi pools run HAMi's plugin and DRA pools the DRA driver: a second plugin there would hand out the same GPUs.
    return [
        pool
        for pool in ctx.blueprint.pools
        if pool.gpu is not None  # CPU-only pools: no plugin
        and pool.sharing.strategy is not SharingStrategy.HAMI
        and pool.allocation is Allocation.DEVICE_PLUGIN
    ]


def build_config(flags: DevicePluginFlags, pool: NodePool | None) -> Object:
    """The config file for a pool (None: the cluster default, whole GPUs), cluster flags merged with its overrides."""
    sharing = pool.sharing if pool is not None else None
    strategy = sharing.strategy if sharing is not None else SharingStrategy.NONE
    effective = flags.merged(pool.flags) if pool is not None else flags
    mig_strategy = MIG_NONE
    if strategy is SharingStrategy.MIG and sharing is not None and sharing.mig is not None:
        mig_strategy = sharing.mig.strategy.value
    mps = strategy is SharingStrategy.MPS
    config: Object = {"version": CONFIG_VERSION, "flags": _flags(effective, mig_strategy, mps=mps)}
    replication = sharing.replication if sharing is not None else None
    if strategy in (SharingStrategy.TIME_SLICING, SharingStrategy.MPS) and replication is not None:
        config["sharing"] = {"mps" if mps else "timeSlicing": _replicated(replication)}
    if strategy is SharingStrategy.MIG and sharing is not None and sharing.mig is not None:
        sliced = sharing.mig.time_slicing
        if sliced is not None:
            config["sharing"] = {"timeSlicing": _replicated_mig(sliced, sharing.mig)}
    return config


def mig_resources(mig: MigSharing) -> tuple[str, ...]:
    """The mixed strategy's resource per profile the layouts make, in the order the blueprint first names them.

    Only these are time-sliced by one count: the plugin replicates only names it advertises, and whole GPUs stay
    whole.
    """
    return tuple(mig_resource_name(profile) for profile in _profiles(mig))


def _profiles(mig: MigSharing) -> tuple[str, ...]:
    return tuple(dict.fromkeys(profile for group in mig.cut_groups for profile in group.instances))


def mig_replicated(mig: MigSharing) -> tuple[tuple[str, int], ...]:
    """(resource, replicas) the plugin config time-slices on a mixed MIG pool, in the order NVIDIA's time-slicing
    page writes them: nvidia.com/gpu for the GPUs left whole first, then each profile as the layouts first name it.

    One count: every profile the layouts make. A count per profile: the profiles named (the checks hold each to the
    layouts, GS425) and the whole GPUs where `whole` is named and a group leaves GPUs whole.
    """
    sliced = mig.time_slicing
    if sliced is None:
        return ()
    if not sliced.per_profile:
        return tuple((name, sliced.replicas) for name in mig_resources(mig))
    out: list[tuple[str, int]] = []
    if mig.whole_groups and sliced.shares(None):
        out.append((GPU, sliced.replicas_for(None)))
    out += [(mig_resource_name(p), sliced.replicas_for(p)) for p in _profiles(mig) if sliced.shares(p)]
    return tuple(out)


def _flags(flags: DevicePluginFlags, mig_strategy: str, *, mps: bool) -> Object:
    # migStrategy is always written: a config without it would inherit whatever the environment says.
    out: Object = {"migStrategy": mig_strategy}
    if flags.fail_on_init_error is not None:
        out["failOnInitError"] = flags.fail_on_init_error
    if flags.nvidia_driver_root is not None:
        out["nvidiaDriverRoot"] = flags.nvidia_driver_root
    if mps:
        # The plugin refuses MPS without it ("using MPS requires --mps-root to be specified").
        out["mpsRoot"] = MPS_ROOT
    plugin: Object = {}
    if flags.pass_device_specs is not None:
        plugin["passDeviceSpecs"] = flags.pass_device_specs
    if flags.device_list_strategy is not None:
        strategies = list(flags.device_list_strategy)
        plugin["deviceListStrategy"] = strategies[0] if len(strategies) == 1 else strategies
    if flags.device_id_strategy is not None:
        plugin["deviceIDStrategy"] = flags.device_id_strategy
    if plugin:
        out["plugin"] = plugin
    return out


def _replicated(replication: Replication) -> Object:
    return _sharing_block(replication, ((GPU, replication.replicas),))


def _replicated_mig(replication: Replication, mig: MigSharing) -> Object:
    return _sharing_block(replication, mig_replicated(mig))


def _sharing_block(replication: Replication, resources: tuple[tuple[str, int], ...]) -> Object:
    # `rename` and `devices` are left out: the plugin discards both at start-up (only renameByDefault works).
    return {
        "renameByDefault": replication.rename_by_default,
        "failRequestsGreaterThanOne": replication.fail_requests_greater_than_one,
        "resources": [{"name": name, "replicas": replicas} for name, replicas in resources],
    }


def describe_setup(pool: NodePool) -> str:
    """The name a pool's setup reads as, before any disambiguation."""
    sharing = pool.sharing
    renamed = "-renamed" if sharing.replication is not None and sharing.replication.rename_by_default else ""
    if sharing.strategy is SharingStrategy.TIME_SLICING and sharing.replication is not None:
        return f"time-slicing-{sharing.replication.replicas}{renamed}"
    if sharing.strategy is SharingStrategy.MPS and sharing.replication is not None:
        return f"mps-{sharing.replication.replicas}{renamed}"
    if sharing.strategy is SharingStrategy.MIG and sharing.mig is not None:
        base = "mig-single" if sharing.mig.strategy is MigStrategy.SINGLE else "mig-mixed"
        sliced = sharing.mig.time_slicing
        if sliced is None:
            return base
        counts = "per-profile" if sliced.per_profile else str(sliced.replicas)
        return f"{base}-time-slicing-{counts}" + ("-renamed" if sliced.rename_by_default else "")
    return DEFAULT_CONFIG_KEY


def name_configs(ctx: Context) -> list[NamedConfig]:
    """Every config the plugin gets, keyed; the default (whole GPUs, cluster flags) always comes first.

    Pools with equal configs share a key. A setup whose readable key is already taken by a different
    config gets the name of its first pool appended (cut to fit), then a counter if even that collides:
    deterministic, and unchanged by pools added after it in the blueprint.
    """
    flags = ctx.blueprint.device_plugin.flags
    configs: list[tuple[str, Object, list[str]]] = [(DEFAULT_CONFIG_KEY, build_config(flags, None), [])]
    # A pool's configName (the cluster's own, kept by import) is its key; the check in checks/sharing.py makes
    # pools of one name share one config. Named keys are taken first, so no derived key takes one.
    named = {pool.config_name for pool in served_pools(ctx) if pool.config_name is not None}
    for pool in served_pools(ctx):
        config = build_config(flags, pool)
        if pool.config_name is not None:
            mine = next((entry for entry in configs if entry[0] == pool.config_name), None)
            if mine is not None and mine[1] == config:
                mine[2].append(pool.name)
            elif mine is None:
                configs.append((pool.config_name, config, [pool.name]))
            else:  # whole-gpu named for a config that is not the default's: the check refuses it; keep them apart
                taken = {key for key, _, _ in configs}
                configs.append((_free_key(pool.config_name, pool.name, taken), config, [pool.name]))
            continue
        same = next((entry for entry in configs if entry[1] == config), None)
        if same is not None:
            same[2].append(pool.name)
            continue
        taken = {key for key, _, _ in configs} | named
        configs.append((_free_key(describe_setup(pool), pool.name, taken), config, [pool.name]))
    return [NamedConfig(key, config, tuple(pools)) for key, config, pools in configs]


def _free_key(readable: str, pool: str, taken: set[str]) -> str:
    if readable not in taken:
        return readable
    candidate = _fit(f"{readable}-{pool}")
    counter = 2
    while candidate in taken:
        suffix = f"-{counter}"
        candidate = _fit(f"{readable}-{pool}", len(suffix)) + suffix
        counter += 1
    return candidate


def _fit(key: str, reserve: int = 0) -> str:
    # Cutting can leave a '-' at the end, which a label value may not have.
    return key[: MAX_KEY_LENGTH - reserve].rstrip("-_.")


def assign_config_keys(ctx: Context) -> dict[str, str]:
    """Pool name -> the config key its nodes are labelled with (served pools only); computed once per context."""
    return ctx.derive("device-plugin-config-keys", _assign_config_keys)


def _assign_config_keys(ctx: Context) -> dict[str, str]:
    return {pool: named.key for named in name_configs(ctx) for pool in named.pools}


def device_plugin_config_key(ctx: Context, pool: NodePool) -> str:
    """The `nvidia.com/device-plugin.config` value for a pool's nodes; KeyError for a HAMi pool."""
    return assign_config_keys(ctx)[pool.name]


def build_affinity(pools: list[NodePool]) -> Object:
    """Required affinity to the pools' nodes: gpustack's pool label for static pools, each selector pool's selector.

    Replaces the chart's default, which matches only nodes that NFD or GFD labelled: the plugin
    must run on exactly the pools that use it, and never beside HAMi's plugin.
    """
    static = [pool.name for pool in pools if pool.selector is None]
    terms: list[Object] = []
    if static:
        terms.append({"matchExpressions": [{"key": POOL_LABEL, "operator": "In", "values": static}]})
    terms += [node_selector_term(pool) for pool in pools if pool.selector is not None]
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}


def build_tolerations(pools: list[NodePool]) -> list[Object]:
    """The chart's tolerations plus one per (key, effect) among the pools' taints they do not already cover.

    Derived from the taints themselves, so a toleration can never be keyed differently from its taint. `Exists`
    tolerates every value of the key, which is what a DaemonSet pinned to these pools by affinity needs, and keeps to
    fields the chart's own values use. A pool tainted nvidia.com/gpu:NoSchedule (every GKE GPU pool) is covered by the
    chart's own toleration, not listed twice.
    """
    return daemonset_tolerations(CHART_TOLERATIONS, (taint for pool in pools for taint in pool.taints))


def build_values(ctx: Context) -> Object:
    pools = served_pools(ctx)
    configs = name_configs(ctx)
    # The top-level flag values (migStrategy, failOnInitError, deviceListStrategy, ...) stay unset on
    # purpose: the chart turns them into environment variables, and the plugin lets the environment
    # beat the config file, so a top-level migStrategy would override every per-node config's
    # flags.migStrategy and break pools whose MIG strategy differs (§0 item 9 of the research).
    return {
        "config": {
            "map": {named.key: dump_yaml(named.config) for named in sorted(configs, key=lambda n: n.key)},
            "default": DEFAULT_CONFIG_KEY,
        },
        "affinity": build_affinity(pools),
        "tolerations": build_tolerations(pools),
        "gfd": {"enabled": ctx.blueprint.device_plugin.gfd},
    }


def compile_device_plugin(ctx: Context) -> FamilyOutput:
    # With the GPU Operator its own plugin runs on every GPU node: a second one would advertise the GPUs twice.
    if ctx.blueprint.stack is not Stack.DEVICE_PLUGIN or not served_pools(ctx):
        return FamilyOutput()
    plugin = ctx.blueprint.device_plugin
    release = HelmRelease(
        name=plugin.release_name,
        chart=CHART_NAME,
        repository=plugin.repository,
        version=plugin.chart_version,
        namespace=plugin.namespace,
        values=build_values(ctx),
        values_file=VALUES_FILE,
    )
    return FamilyOutput(releases=[release])

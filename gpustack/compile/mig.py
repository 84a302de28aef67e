"""The mig-parted config the GPU Operator's MIG manager applies: one named layout per MIG pool, plus all-disabled.

Nodes select a config with the `nvidia.com/mig.config` label (nodes.py writes it). A custom ConfigMap
replaces the operator's configs entirely (no auto-generated or default entries survive), so
`all-disabled` is always included for the MIG-capable nodes that must stay whole.
"""

from __future__ import annotations

import re

from gpustack.context import Context
from gpustack.model import MigGroup, NodePool, SharingStrategy, Stack
from gpustack.names import MANAGED_BY, MIG_CONFIG_LABEL, MIG_DISABLED_CONFIG, mig_config_name
from gpustack.plan import Artifact, FamilyOutput, Manifest, Object, Prerequisite
from gpustack.yamlout import dump_yaml

FAMILY = "mig"
CONFIG_FILE = "mig/mig-parted-config.yaml"
README_FILE = "mig/README.md"
# The MIG manager reads this key of the ConfigMap named by the operator's migManager.config.name.
CONFIG_KEY = "config.yaml"
SPEC_VERSION = "v1"
_PROFILE_SIZE = re.compile(r"^(?:(?P<c>\d+)c\.)?(?P<g>\d+)g\.(?P<gb>\d+)gb")


def uses_mig(pool: NodePool) -> bool:
    return pool.sharing.strategy is SharingStrategy.MIG and pool.sharing.mig is not None


def mig_config_label(ctx: Context, pool: NodePool) -> str | None:
    """The `nvidia.com/mig.config` value for a pool's nodes; None where no MIG manager acts (not MIG-capable, or
    the standalone device plugin with no MIG pool: then nothing runs a MIG manager)."""
    if uses_mig(pool):
        return _config_name(pool)
    model = ctx.models.get(pool.name)
    if model is None or model.mig is None:
        return None
    if ctx.blueprint.stack is Stack.GPU_OPERATOR or any(uses_mig(p) for p in ctx.blueprint.pools):
        return MIG_DISABLED_CONFIG
    return None


def _profile_order(profile: str) -> tuple[int, int, int, str]:
    # Largest first (GPU slices, then compute slices, then memory): readable, and the order the MIG guide
    # asks for when instances are created one by one (3g before the 1g that could block it).
    match = _PROFILE_SIZE.match(profile)
    if match is None:
        return (0, 0, 0, profile)
    g = int(match["g"])
    c = int(match["c"]) if match["c"] else g
    return (-g, -c, -int(match["gb"]), profile)


def order_mig_devices(group: MigGroup) -> dict[str, int]:
    return {profile: group.instances[profile] for profile in sorted(group.instances, key=_profile_order)}


def _entry(group: MigGroup) -> Object:
    devices: object = "all" if group.devices is None else sorted(group.devices)
    if group.whole:
        # mig-parted rejects mig-devices beside mig-enabled: false; these GPUs stay whole (nvidia.com/gpu).
        return {"devices": devices, "mig-enabled": False}
    return {"devices": devices, "mig-enabled": True, "mig-devices": order_mig_devices(group)}


def _config_name(pool: NodePool) -> str:
    """The mig-parted config a MIG pool's nodes select: its configName (the cluster's own, kept by import; pools of
    one name share one layout, GS025), else gpustack-<pool>."""
    mig = pool.sharing.mig
    return mig.config_name if mig is not None and mig.config_name is not None else mig_config_name(pool.name)


def build_mig_parted_config(ctx: Context) -> Object:
    configs: Object = {MIG_DISABLED_CONFIG: [{"devices": "all", "mig-enabled": False}]}
    for pool in ctx.blueprint.pools:
        if uses_mig(pool):
            assert pool.sharing.mig is not None
            configs[_config_name(pool)] = [_entry(group) for group in pool.sharing.mig.groups]
    return {"version": SPEC_VERSION, "mig-configs": configs}


def needs_mig_manager(ctx: Context) -> bool:
    return any(mig_config_label(ctx, pool) is not None for pool in ctx.blueprint.pools)


def build_config_map(ctx: Context) -> Object:
    manager = ctx.blueprint.mig_manager
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": manager.config_map, "namespace": manager.namespace, "labels": dict(MANAGED_BY)},
        "data": {CONFIG_KEY: dump_yaml(build_mig_parted_config(ctx))},
    }


def render_readme(ctx: Context) -> str:
    manager = ctx.blueprint.mig_manager
    pools = [pool for pool in ctx.blueprint.pools if mig_config_label(ctx, pool) is not None]
    rows = "\n".join(f"| `{pool.name}` | `{mig_config_label(ctx, pool)}` |" for pool in pools)
    if ctx.blueprint.stack is Stack.GPU_OPERATOR:
        namespace = ctx.blueprint.gpu_operator.namespace
        where = f"""The layouts are in the GPU Operator's values (`gpu-operator/values.yaml`, `migManager.config`):
its chart creates the ConfigMap `{manager.config_map}` (key `{CONFIG_KEY}`) in namespace `{namespace}`
and points the MIG manager at it. The operator's DaemonSets tolerate every pool's taints (`daemonsets.tolerations`)."""
    else:
        gfd = (
            "gfd:\n  enabled: false                 # the device-plugin chart already runs GPU Feature Discovery\n"
            if ctx.blueprint.device_plugin.gfd
            else ""
        )
        tolerations = "".join(
            f"  - {{key: {key}, operator: Exists, effect: {effect}}}\n"
            for key, effect in dict.fromkeys((t.key, t.effect) for pool in ctx.blueprint.pools for t in pool.taints)
        )
        where = f"""With `stack: device-plugin` gpustack does not install the GPU Operator: this needs one that already
runs in namespace `{manager.namespace}` (a prerequisite; `kubectl apply -k` fails without the namespace).
`mig-parted-config.yaml` is a ConfigMap `{manager.config_map}` in that namespace holding a mig-parted config
under the key `{CONFIG_KEY}`.
The MIG manager reads it only when it is pointed at it. Run the GPU Operator with these Helm values (or switch the
blueprint to `stack: gpu-operator`, which installs the operator with all of this):

```yaml
migManager:
  enabled: true
  config:
    name: {manager.config_map}   # without it the MIG manager generates its own configs and ignores this one
    default: all-disabled
mig:
  strategy: ""                   # the default `single` is injected as MIG_STRATEGY and beats per-node configs
devicePlugin:
  enabled: false                 # gpustack installs the standalone nvidia-device-plugin chart
daemonsets:
  tolerations:                   # the MIG manager must run on the tainted pools
  - {{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}}
{tolerations}{gfd}```"""
    return f"""# MIG layouts for blueprint '{ctx.blueprint.name}'

Generated by gpustack. Edit the blueprint, not this file.

{where}

A custom ConfigMap replaces the operator's configs entirely, so it carries `all-disabled` itself.
Each node selects its layout with the `{MIG_CONFIG_LABEL}` label, which `nodes/` sets:

| pool | `{MIG_CONFIG_LABEL}` |
|---|---|
{rows}

Notes:

- The MIG manager acts when a node's label changes. Editing the layouts alone re-partitions nothing:
  after changing a pool's layout, relabel its nodes (or restart the MIG manager pod on them).
- Progress shows in the `nvidia.com/mig.config.state` node label: `pending`, `rebooting`, `success` or `failed`.
- Re-partitioning needs idle GPUs. The MIG manager pauses the operator's own GPU pods, not a standalone
  device plugin or your workloads (GPU Operator issue #1704): drain a node's GPU workloads before relabelling
  it. Some clouds also need `migManager.env: [{{name: WITH_REBOOT, value: "true"}}]`.
"""


def compile_mig(ctx: Context) -> FamilyOutput:
    if not needs_mig_manager(ctx):
        return FamilyOutput()
    readme = Artifact(README_FILE, render_readme(ctx), "how the GPU Operator's MIG manager gets gpustack's layouts")
    if ctx.blueprint.stack is Stack.GPU_OPERATOR:
        return FamilyOutput(artifacts=[readme])  # the layouts travel in the operator's values (gpu_operator.py)
    manager = ctx.blueprint.mig_manager
    return FamilyOutput(
        objects=[Manifest(FAMILY, CONFIG_FILE, build_config_map(ctx))],
        artifacts=[readme],
        prerequisites=[
            Prerequisite(manager.namespace, "the GPU Operator's MIG manager (stack: device-plugin with MIG)")
        ],
    )

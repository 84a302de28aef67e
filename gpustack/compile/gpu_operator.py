"""NVIDIA's GPU Operator as one Helm release (stack: gpu-operator), with gpustack's per-pool configs in its values.

The operator runs the driver, container toolkit, device plugin, GPU Feature Discovery, MIG manager and DCGM
exporter as DaemonSets on every GPU node. What the values make sure of:
- the device plugin reads gpustack's per-pool configs (`devicePlugin.config`): each node picks one with the
  `nvidia.com/device-plugin.config` label, exactly as with the standalone chart (device_plugin.py builds them);
- the MIG manager reads gpustack's mig-parted config (`migManager.config`), which the chart creates as a
  ConfigMap in the operator's namespace; nodes pick a layout with `nvidia.com/mig.config`;
- every operand, and NFD's worker that finds the GPU nodes, tolerates every GPU pool's taints (a CPU-only pool
  gets no operand and no device-plugin config): `daemonsets.tolerations`
  and `node-feature-discovery.worker.tolerations` replace the chart's lists, so their defaults are repeated;
- `mig.strategy` never contradicts a pool's config: the operator exports it as MIG_STRATEGY, which the plugin
  lets beat the config file. One strategy for all MIG pools is written as is; pools that differ get "" (the
  chart then sets no MIG_STRATEGY and each node's config decides);
- driver, toolkit and NFD are installed only where the cluster lacks them: driver and toolkit as the blueprint
  says, else as the cloud pools' node images decide (gpustack.cloud.operator_parts: off on EKS/Karpenter NVIDIA
  AMIs and AKS GPU images, where AKS's toolkit also names the operands' runtime class, `nvidia-container-runtime`);
- on GKE, NVIDIA's GKE page (https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/google-gke.html):
  with Google's driver the operator finds it, and installs the toolkit, under /home/kubernetes/bin/nvidia (the
  writable, persistent place on GKE images) with CDI on; a ResourceQuota in the operator's namespace admits its
  system-node-critical pods (GKE allows that priority class only where such a quota exists); the MIG manager may
  reboot the VM (WITH_REBOOT) to turn MIG mode on; and from GKE 1.33 the toolkit reads containerd's config file
  (RUNTIME_CONFIG_SOURCE=file, the page's known issue);
- every taint a cloud puts on a GPU pool's nodes by itself is tolerated too: build puts them among the pool's
  taints (gpustack.taints.cloud_taints).

Every key written here exists in the chart's own values.yaml (v26.7.0): the chart ignores a misspelt key.
"""

from __future__ import annotations

from gpustack.cloud import GKE_DRIVER_DIR, blueprint_operator_parts, gpu_cloud_pools
from gpustack.compile.device_plugin import DEFAULT_CONFIG_KEY, name_configs
from gpustack.compile.mig import build_mig_parted_config, needs_mig_manager, uses_mig
from gpustack.context import Context
from gpustack.model import NodePool, Stack
from gpustack.names import MANAGED_BY, MIG_DISABLED_CONFIG
from gpustack.plan import FamilyOutput, HelmRelease, Manifest, Object
from gpustack.taints import daemonset_tolerations
from gpustack.yamlout import dump_yaml

FAMILY = "gpu-operator"
CHART_NAME = "gpu-operator"
VALUES_FILE = "gpu-operator/values.yaml"
NAMESPACE_FILE = "gpu-operator/namespace.yaml"
GKE_QUOTA_FILE = "gpu-operator/gke-critical-pods-quota.yaml"
# NVIDIA's GKE page, manifests/input/google-gke-gpu-operator-quota.yaml: the quota that lets the operator's
# system-node-critical and system-cluster-critical pods run outside kube-system on GKE.
GKE_QUOTA_NAME = "gpu-operator-quota"
GKE_QUOTA_PODS = 100
GKE_CRITICAL_CLASSES = ("system-node-critical", "system-cluster-critical")
GKE_RUNTIME_CONFIG_MINOR = 33  # 1.33 on: GKE versions whose containerd config the toolkit must read from the file
DEVICE_PLUGIN_CONFIG_MAP = "gpustack-device-plugin-config"
MIG_CONFIG_KEY = "config.yaml"  # the key the MIG manager reads
# The operator's DaemonSets mount host paths and run privileged: Pod Security must allow it in their namespace.
POD_SECURITY = {"pod-security.kubernetes.io/enforce": "privileged"}
# The chart's defaults for the lists gpustack replaces (values.yaml v26.7.0).
OPERAND_TOLERATIONS: tuple[Object, ...] = ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},)
NFD_WORKER_TOLERATIONS: tuple[Object, ...] = (
    {"key": "node-role.kubernetes.io/control-plane", "operator": "Equal", "value": "", "effect": "NoSchedule"},
    {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
)


def uses_gpu_operator(ctx: Context) -> bool:
    return ctx.blueprint.stack is Stack.GPU_OPERATOR


def pool_tolerations(defaults: tuple[Object, ...], pools: tuple[NodePool, ...]) -> list[Object]:
    """`defaults` plus one `Exists` toleration per (key, effect) among the pools' taints they do not already cover,
    derived from the taints themselves so they can never drift apart; a DaemonSet must run on every value of the key."""
    return daemonset_tolerations(defaults, (taint for pool in pools for taint in pool.taints))


def mig_strategy(ctx: Context) -> str:
    """The cluster-wide `mig.strategy`: the MIG pools' one strategy, "none" without MIG pools, "" where they differ."""
    strategies = {
        pool.sharing.mig.strategy.value for pool in ctx.blueprint.pools if pool.sharing.mig and uses_mig(pool)
    }
    if not strategies:
        return "none"
    return strategies.pop() if len(strategies) == 1 else ""


def build_values(ctx: Context) -> Object:
    operator = ctx.blueprint.gpu_operator
    # The operands and NFD's GPU detection run on GPU nodes only: a CPU-only pool's taints are nothing to them.
    pools = tuple(pool for pool in ctx.blueprint.pools if pool.gpu is not None)
    configs = sorted(name_configs(ctx), key=lambda named: named.key)
    parts = blueprint_operator_parts(ctx.blueprint)
    gke = on_gke(ctx)
    values: Object = {
        "nfd": {"enabled": operator.nfd},
        "daemonsets": {"tolerations": pool_tolerations(OPERAND_TOLERATIONS, pools)},
        "mig": {"strategy": mig_strategy(ctx)},
        "driver": {"enabled": parts.driver},
        "toolkit": {"enabled": parts.toolkit},
        "devicePlugin": {
            "enabled": True,
            "config": {
                "create": True,
                "name": DEVICE_PLUGIN_CONFIG_MAP,
                "default": DEFAULT_CONFIG_KEY,
                "data": {named.key: dump_yaml(named.config) for named in configs},
            },
        },
        "gfd": {"enabled": ctx.blueprint.device_plugin.gfd},
    }
    if parts.runtime_class is not None:
        values["operator"] = {"runtimeClass": parts.runtime_class}
    if parts.gke_google_driver:
        values["hostPaths"] = {"driverInstallDir": GKE_DRIVER_DIR}
        values["cdi"] = {"enabled": True}  # v26.7.0 has no cdi.default: CDI injects devices whenever it is on
    if gke and parts.toolkit:
        toolkit: Object = values["toolkit"]
        if parts.gke_google_driver:
            toolkit["installDir"] = GKE_DRIVER_DIR
        if ctx.blueprint.kubernetes_minor >= GKE_RUNTIME_CONFIG_MINOR:
            toolkit["env"] = [{"name": "RUNTIME_CONFIG_SOURCE", "value": "file"}]
    if needs_mig_manager(ctx):
        values["migManager"] = {
            "enabled": True,
            "config": {
                "default": MIG_DISABLED_CONFIG,
                "create": True,
                "name": ctx.blueprint.mig_manager.config_map,
                "data": {MIG_CONFIG_KEY: dump_yaml(build_mig_parted_config(ctx))},
            },
        }
        if gke:
            # GKE VMs cannot reset a GPU into MIG mode: the MIG manager reboots the node (NVIDIA's GKE page).
            values["migManager"]["env"] = [{"name": "WITH_REBOOT", "value": "true"}]
    if operator.nfd:
        # NFD's worker labels the GPU nodes the operator deploys to: on a tainted pool it must run too.
        values["node-feature-discovery"] = {"worker": {"tolerations": pool_tolerations(NFD_WORKER_TOLERATIONS, pools)}}
    return values


def on_gke(ctx: Context) -> bool:
    return any(pool.cloud is not None and pool.cloud.provider == "gke" for pool in gpu_cloud_pools(ctx.blueprint.pools))


def build_gke_quota(ctx: Context) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {
            "name": GKE_QUOTA_NAME,
            "namespace": ctx.blueprint.gpu_operator.namespace,
            "labels": dict(MANAGED_BY),
        },
        "spec": {
            "hard": {"pods": str(GKE_QUOTA_PODS)},
            "scopeSelector": {
                "matchExpressions": [
                    {"operator": "In", "scopeName": "PriorityClass", "values": list(GKE_CRITICAL_CLASSES)}
                ]
            },
        },
    }


def build_namespace(ctx: Context) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": ctx.blueprint.gpu_operator.namespace, "labels": {**MANAGED_BY, **POD_SECURITY}},
    }


def compile_gpu_operator(ctx: Context) -> FamilyOutput:
    if not uses_gpu_operator(ctx):
        return FamilyOutput()
    operator = ctx.blueprint.gpu_operator
    release = HelmRelease(
        name=operator.release_name,
        chart=CHART_NAME,
        repository=operator.repository,
        version=operator.chart_version,
        namespace=operator.namespace,
        values=build_values(ctx),
        values_file=VALUES_FILE,
        # The chart upgrades its CRDs in a pre-upgrade hook Job (operator.upgradeCRD), which a helm/v4 Chart skips.
        needs_hooks=True,
        skip_openapi_validation=True,
    )
    objects = [Manifest(FAMILY, NAMESPACE_FILE, build_namespace(ctx))]
    if on_gke(ctx):
        objects.append(Manifest(FAMILY, GKE_QUOTA_FILE, build_gke_quota(ctx)))
    return FamilyOutput(objects=objects, releases=[release])

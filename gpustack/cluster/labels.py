"""What the labels and taints on a cluster's nodes say: which are the system's, which node has GPUs.

Shared by `gpustack import` (what to copy into a pool) and `gpustack drift` (what counts as drift): a label
or taint that Kubernetes, a cloud, an autoscaler, NFD/GFD or gpustack itself writes is never a pool's own.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources

import yaml

from gpustack.catalog import Catalog, GpuModel
from gpustack.cluster.snapshot import SnapshotNode, SnapshotTaint
from gpustack.names import (
    CLOUD_POOL_LABELS,
    GFD_PRODUCT_LABEL,
    HAMI_DEVICE_PLUGIN,
    HAMI_DEVICE_PLUGIN_LABEL,
    HAMI_NODE_LABELS,
    POOL_LABEL,
)

COUNT = "nvidia.com/gpu.count"
FAMILY = "nvidia.com/gpu.family"
MEMORY = "nvidia.com/gpu.memory"
REPLICAS = "nvidia.com/gpu.replicas"
SHARING_STRATEGY = "nvidia.com/gpu.sharing-strategy"
MIG_STRATEGY = "nvidia.com/mig.strategy"
GPU_RESOURCE = "nvidia.com/gpu"
# Where a node's pool of origin is recorded, most specific first: gpustack's own pool label, then each provider's
# node-pool label (names.CLOUD_POOL_LABELS, which compile selects cloud pools by), then AKS's older bare label.
POOL_ORIGIN_LABELS = (POOL_LABEL, *CLOUD_POOL_LABELS.values(), "agentpool")
# The labels a provider puts on the nodes it makes: what a selector pool selects by.
PROVIDER_POOL_LABELS = POOL_ORIGIN_LABELS[1:]
# Label keys that clouds, Kubernetes, NFD/GFD or gpustack itself write: never copied into a pool's labels.
_SYSTEM_DOMAINS = ("kubernetes.io", "k8s.io", "nvidia.com", "gpustack.io", "cloud.google.com", "amazonaws.com")
_SYSTEM_DOMAINS_EXACT = ("karpenter.sh", "karpenter.k8s.aws", "kubernetes.azure.com", "alpha.eksctl.io")
_SYSTEM_KEYS = frozenset({"agentpool", "storageprofile", "storagetier", *HAMI_NODE_LABELS})
# Taints Kubernetes, clouds and autoscalers add and remove by themselves.
_SYSTEM_TAINT_DOMAINS = ("node.kubernetes.io", "node.cloudprovider.kubernetes.io", "node-role.kubernetes.io")
_SYSTEM_TAINT_KEYS = frozenset({"ToBeDeletedByClusterAutoscaler", "DeletionCandidateOfClusterAutoscaler"})


def is_system_label(key: str) -> bool:
    if key in _SYSTEM_KEYS:
        return True
    domain = key.split("/", 1)[0] if "/" in key else ""
    return domain in _SYSTEM_DOMAINS_EXACT or any(domain == d or domain.endswith("." + d) for d in _SYSTEM_DOMAINS)


def is_system_taint(taint: SnapshotTaint) -> bool:
    domain = taint.key.split("/", 1)[0] if "/" in taint.key else ""
    return taint.key in _SYSTEM_TAINT_KEYS or domain in _SYSTEM_TAINT_DOMAINS


def user_taints(node: SnapshotNode) -> tuple[SnapshotTaint, ...]:
    return tuple(t for t in node.taints if not is_system_taint(t))


def is_gpu_node(node: SnapshotNode) -> bool:
    labels = dict(node.labels)
    return (
        GFD_PRODUCT_LABEL in labels
        or any(name.startswith("nvidia.com/") for name, _ in node.allocatable)
        or (labels.get(HAMI_DEVICE_PLUGIN_LABEL) == HAMI_DEVICE_PLUGIN)
    )


@dataclass(frozen=True)
class LegacyNames:
    """gpustack/data/gfd-legacy.yaml: names older drivers and GFD wrote, and today's."""

    mig_profiles: Mapping[tuple[str, str], str]  # (MIG geometry, profile an older driver named) -> today's name
    families: Mapping[str, tuple[str, ...]]  # a gpu.family older GFD wrote -> the families it stands for today


@functools.cache
def load_legacy() -> LegacyNames:
    text = resources.files("gpustack").joinpath("data/gfd-legacy.yaml").read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    profiles = {(str(e["geometry"]), str(e["legacy"])): str(e["current"]) for e in data["mig_profiles"]}
    families = {str(e["legacy"]): tuple(str(f) for f in e["current"]) for e in data["families"]}
    return LegacyNames(profiles, families)


def current_profile(model: GpuModel | None, profile: str) -> str:
    """Today's name of a MIG profile a node's labels name (3g.21gb on a 450-series A100-40GB is 3g.20gb)."""
    if model is None or model.mig is None:
        return profile
    return load_legacy().mig_profiles.get((model.mig.name, profile), profile)


def model_by_family(catalog: Catalog, node: SnapshotNode) -> GpuModel | None:
    """The one catalog model a node's gpu.family and gpu.memory (MiB) labels fit, for a node without gpu.product
    (NFD drops a product name over 63 characters); None where they fit none or several."""
    family, memory = node.label(FAMILY), node.label(MEMORY)
    if family is None or memory is None or not memory.isdigit():
        return None
    families = {family, *load_legacy().families.get(family, ())}
    fits = [m for m in catalog.models.values() if m.family in families and int(memory) in m.memory_mib]
    return fits[0] if len(fits) == 1 else None

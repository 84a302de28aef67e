"""Taints and tolerations: how a taint is written, which toleration gpustack derives for it, and whether a toleration
tolerates a taint (Kubernetes' core/v1 ToleratesTaint), each in one place.

The blueprint's taints (`gpustack.model.Taint`) and the simulator's (read from compiled Node patches) both fit
`TaintLike`, so compile, checks, review and simulate cannot disagree on what a toleration lets through.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

# Taints a cloud puts on a node pool's nodes by itself: not in the node-pool arguments gpustack writes, yet on every
# node, so build adds them to the pool's taints (`Taint.by_cloud`): the GPU stack's DaemonSets and the pool's
# workloads tolerate them, and simulate's nodes carry them. (provider, pool kind) -> (key, value, effect).
# GKE taints a GPU node pool nvidia.com/gpu=present:NoSchedule when the cluster has non-GPU pools, and adds the
#   toleration only to pods that request nvidia.com/gpu (https://cloud.google.com/kubernetes-engine/docs/how-to/gpus).
# AKS taints a spot pool kubernetes.azure.com/scalesetpriority=spot:NoSchedule
#   (https://learn.microsoft.com/en-us/azure/aks/spot-node-pool).
# GKE taints every Arm node kubernetes.io/arch=arm64:NoSchedule, and adds the toleration only to pods that select
#   arm64 (https://cloud.google.com/kubernetes-engine/docs/how-to/prepare-arm-workloads-for-deployment).
# EKS managed node groups and Karpenter keep none on a running node (Karpenter's karpenter.sh/unregistered goes at
#   registration: https://karpenter.sh/docs/concepts/nodepools/).
CLOUD_TAINTS: dict[tuple[str, str], tuple[str, str, str]] = {
    ("gke", "gpu"): ("nvidia.com/gpu", "present", "NoSchedule"),
    ("aks", "spot"): ("kubernetes.azure.com/scalesetpriority", "spot", "NoSchedule"),
    ("gke", "arm64"): ("kubernetes.io/arch", "arm64", "NoSchedule"),
}
# GKE's Arm machine series (T2A, C4A, N4A, A4X: https://cloud.google.com/compute/docs/instances/arm-on-compute), and
# the GPUs that come only on an Arm host (Grace: GB200, GB300), for a pool that names no machine type. Read where the
# blueprint is built, before the machine table is (tests/test_cloud_machines.py checks the table against both).
GKE_ARM_SERIES = ("t2a-", "c4a-", "n4a-", "a4x-")
GRACE_GPUS = ("gb200", "gb300")


def gke_arm(machine_type: str | None, gpu_model: str | None) -> bool:
    """Whether a GKE pool's nodes are Arm hosts: by its machine type's series, else by a GPU only Grace hosts carry."""
    if machine_type is not None:
        return machine_type.startswith(GKE_ARM_SERIES)
    return gpu_model is not None and any(name in gpu_model.lower() for name in GRACE_GPUS)


def cloud_taints(provider: str, gpu: bool, spot: bool, arm: bool = False) -> list[tuple[str, str, str]]:
    """(key, value, effect) of each taint the provider puts on such a pool's nodes by itself."""
    kinds = [kind for kind, applies in (("gpu", gpu), ("spot", spot), ("arm64", arm)) if applies]
    return [CLOUD_TAINTS[(provider, kind)] for kind in kinds if (provider, kind) in CLOUD_TAINTS]


class TaintLike(Protocol):
    @property
    def key(self) -> str: ...

    @property
    def value(self) -> str | None: ...

    @property
    def effect(self) -> str: ...


def taint_text(taint: TaintLike) -> str:
    """kubectl's notation, which users already read and `kubectl taint` takes: key=value:Effect, or key:Effect."""
    if taint.value is not None:
        return f"{taint.key}={taint.value}:{taint.effect}"
    return f"{taint.key}:{taint.effect}"


def taint_object(taint: TaintLike) -> dict[str, Any]:
    """The core/v1 Taint (a Node's spec.taints item, a Kueue flavor's nodeTaints item)."""
    out: dict[str, Any] = {"key": taint.key}
    if taint.value is not None:
        out["value"] = taint.value
    out["effect"] = taint.effect
    return out


@dataclass(frozen=True)
class Toleration:
    key: str | None  # None or empty: every key (with Exists)
    operator: str  # Equal | Exists
    value: str | None
    effect: str | None  # None or empty: every effect

    def tolerates(self, taint: TaintLike) -> bool:
        """core/v1 ToleratesTaint: an empty effect or key matches any; Exists ignores the value."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return self.operator == "Equal" and (self.value or "") == (taint.value or "")

    def as_object(self) -> dict[str, Any]:
        """The core/v1 Toleration, fields in the order kubectl shows them."""
        out: dict[str, Any] = {}
        if self.key is not None:
            out["key"] = self.key
        out["operator"] = self.operator
        if self.value is not None:
            out["value"] = self.value
        if self.effect is not None:
            out["effect"] = self.effect
        return out


def toleration_for(taint: TaintLike) -> Toleration:
    """What gpustack gives a pod of the taint's pool: exactly this taint, its value too where it has one."""
    if taint.value is None:
        return Toleration(taint.key, "Exists", None, taint.effect)
    return Toleration(taint.key, "Equal", taint.value, taint.effect)


def daemonset_tolerations(defaults: Iterable[Mapping[str, Any]], taints: Iterable[TaintLike]) -> list[dict[str, Any]]:
    """A chart's default tolerations (a values list that replaces the chart's, so they are repeated), then one `Exists`
    toleration per (key, effect) of the taints that none before it already tolerates: a DaemonSet must run on every
    value of the key, and a taint the chart's own list covers (GKE's nvidia.com/gpu=present:NoSchedule) is listed once.
    """
    out = [dict(toleration) for toleration in defaults]
    held = [read_toleration(toleration) for toleration in out]
    for taint in taints:
        if any(toleration is not None and toleration.tolerates(taint) for toleration in held):
            continue
        added = Toleration(taint.key, "Exists", None, taint.effect)
        out.append(added.as_object())
        held.append(added)
    return out


def read_toleration(raw: Mapping[str, Any]) -> Toleration | None:
    """A toleration as a manifest writes it; None where a field is not a string (the API server refuses those, so
    it tolerates nothing)."""
    fields = {name: raw.get(name) for name in ("key", "operator", "value", "effect")}
    if any(value is not None and not isinstance(value, str) for value in fields.values()):
        return None
    return Toleration(fields["key"], fields["operator"] or "Equal", fields["value"], fields["effect"])

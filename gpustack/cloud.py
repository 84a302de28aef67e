"""Cloud GPU machine types as facts: which GPU model, and how many, each provider's machine type carries.

Loaded from `gpustack/data/cloud-machines.yaml` (each provider's rows cite their source). A cloud pool's machine is
the machine type it names, or, when it names none, the smallest (fewest vCPUs) that has the pool's GPU model and
count. Karpenter on AWS launches EC2 instance types, so it reads the EKS rows.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources

import yaml

from gpustack.catalog import Catalog
from gpustack.model import Blueprint, NodePool, Stack

PROVIDERS = ("gke", "eks", "aks", "karpenter")
_TABLE_OF = {"gke": "gke", "eks": "eks", "aks": "aks", "karpenter": "eks"}


@dataclass(frozen=True)
class Machine:
    name: str
    gpu: str  # a catalog key
    count: int
    vcpus: int
    accelerator: str | None  # the provider's own accelerator name, where its API wants one


@functools.cache
def machine_table() -> dict[str, tuple[Machine, ...]]:
    """Provider -> its GPU machine types, in the table's order."""
    text = resources.files("gpustack").joinpath("data/cloud-machines.yaml").read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    return {
        provider: tuple(
            Machine(name, row["gpu"], row["count"], row["vcpus"], row.get("accelerator"))
            for name, row in body["machines"].items()
        )
        for provider, body in data["providers"].items()
    }


def machines(provider: str) -> tuple[Machine, ...]:
    return machine_table()[_TABLE_OF[provider]]


def machine_named(provider: str, name: str) -> Machine | None:
    return next((m for m in machines(provider) if m.name == name), None)


def matching_machines(provider: str, catalog: Catalog, pool: NodePool) -> list[Machine]:
    """The provider's machine types with exactly the pool's GPU model and count, smallest first."""
    if pool.gpu is None:
        return []
    model = catalog.resolve(pool.gpu.model)
    if model is None:
        return []
    found = [m for m in machines(provider) if m.gpu == model.key and m.count == pool.gpu.count]
    return sorted(found, key=lambda m: (m.vcpus, m.name))


def pool_machine(pool: NodePool, catalog: Catalog) -> Machine | None:
    """The machine type a cloud pool runs on: the one it names, else the smallest that matches its GPUs.

    None for a pool without a cloud block, or one whose machine is unknown or matches nothing (GS307 says so).
    """
    cloud = pool.cloud
    if cloud is None:
        return None
    if cloud.machine_type is not None:
        return machine_named(cloud.provider, cloud.machine_type)
    found = matching_machines(cloud.provider, catalog, pool)
    return found[0] if found else None


def machine_type(pool: NodePool, catalog: Catalog) -> str | None:
    """The machine type name to provision: as written (also for CPU-only pools, which the table does not list)."""
    if pool.cloud is None:
        return None
    if pool.cloud.machine_type is not None:
        return pool.cloud.machine_type
    machine = pool_machine(pool, catalog)
    return None if machine is None else machine.name


# --- Who installs the NVIDIA driver and container toolkit, per cloud and node image ---------------------------------
#
# GKE (https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/google-gke.html): the operator's driver
# runs only on Ubuntu (UBUNTU_CONTAINERD); on Container-Optimized OS Google's driver installer puts the driver in
# /home/kubernetes/bin/nvidia and the operator's driver is off. The operator's toolkit is installed on both.
# EKS and Karpenter (https://docs.aws.amazon.com/eks/latest/userguide/ml-eks-optimized-ami.html): the AL2023 and
# Bottlerocket NVIDIA AMIs carry the driver and the container toolkit.
# AKS (https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/microsoft-aks.html): AKS's GPU images
# carry both, so the operator's are off and its operands use the nvidia-container-runtime runtime class; or the
# agent pool skips AKS's driver (gpuProfile.driver None, https://learn.microsoft.com/en-us/azure/aks/gpu-cluster)
# and the operator installs both.
GKE_COS = "COS_CONTAINERD"
GKE_UBUNTU = "UBUNTU_CONTAINERD"
EKS_DEFAULT_IMAGE = "AL2023_x86_64_NVIDIA"
GKE_DRIVER_DIR = "/home/kubernetes/bin/nvidia"  # where Google's installer puts the driver (NVIDIA's GKE page)
AKS_RUNTIME_CLASS = "nvidia-container-runtime"  # NVIDIA's AKS page: operator.runtimeClass with AKS's toolkit
RECIPE_SOURCES = {
    "gke": "https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/google-gke.html",
    "eks": "https://docs.aws.amazon.com/eks/latest/userguide/ml-eks-optimized-ami.html",
    "karpenter": "https://docs.aws.amazon.com/eks/latest/userguide/ml-eks-optimized-ami.html",
    "aks": "https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/microsoft-aks.html",
}


@dataclass(frozen=True)
class NodeImage:
    """What a GPU cloud pool's node image brings: the NVIDIA driver, the container toolkit."""

    image: str | None  # the image type to ask for (GKE, EKS); None where the provider picks (AKS, Karpenter)
    has_driver: bool
    has_toolkit: bool


def gke_image(pool: NodePool, operator_driver: bool | None) -> str:
    """The GKE image: as written, else Ubuntu when the operator's driver is asked for, else COS (Google's driver)."""
    assert pool.cloud is not None
    if pool.cloud.image_type is not None:
        return pool.cloud.image_type
    return GKE_UBUNTU if operator_driver else GKE_COS


def node_image(pool: NodePool, operator_driver: bool | None) -> NodeImage:
    """The GPU cloud pool's image, given the blueprint's `gpuOperator.driver` as written (None: left out)."""
    cloud = pool.cloud
    assert cloud is not None
    if cloud.provider == "gke":
        image = gke_image(pool, operator_driver)
        # Google's driver on COS always; on Ubuntu only when the blueprint turns the operator's driver off.
        return NodeImage(image, image == GKE_COS or operator_driver is False, False)
    if cloud.provider == "eks":
        return NodeImage(cloud.image_type or EKS_DEFAULT_IMAGE, True, True)
    if cloud.provider == "karpenter":
        return NodeImage(None, True, True)
    # AKS installs its driver unless the blueprint asks for the operator's (then gpuProfile.driver: None).
    aks_driver = operator_driver is not True
    return NodeImage(None, aks_driver, aks_driver)


def written_driver(blueprint: Blueprint) -> bool | None:
    """`gpuOperator.driver` as the blueprint writes it; False without the operator (the image must bring one)."""
    return False if blueprint.stack is Stack.DEVICE_PLUGIN else blueprint.gpu_operator.driver


def blueprint_node_image(blueprint: Blueprint, pool: NodePool) -> NodeImage:
    return node_image(pool, written_driver(blueprint))


def blueprint_operator_parts(blueprint: Blueprint) -> OperatorParts:
    return operator_parts(blueprint.pools, written_driver(blueprint), blueprint.gpu_operator.toolkit)


@dataclass(frozen=True)
class OperatorParts:
    """What the GPU Operator installs, with the cloud pools' images taken into account."""

    driver: bool
    toolkit: bool
    runtime_class: str | None  # operator.runtimeClass where the image's toolkit names its runtime otherwise
    gke_google_driver: bool  # a GKE pool runs Google's driver: the operator looks for it in GKE_DRIVER_DIR


def gpu_cloud_pools(pools: tuple[NodePool, ...]) -> tuple[NodePool, ...]:
    return tuple(pool for pool in pools if pool.cloud is not None and pool.gpu is not None)


def operator_parts(pools: tuple[NodePool, ...], driver: bool | None, toolkit: bool | None) -> OperatorParts:
    """The operator's driver and toolkit: as written, else off where every GPU cloud pool's image has them."""
    images = [(pool, node_image(pool, driver)) for pool in gpu_cloud_pools(pools)]
    if driver is None:
        driver = not images or not all(image.has_driver for _, image in images)
    if toolkit is None:
        toolkit = not images or not all(image.has_toolkit for _, image in images)
    aks_image_toolkit = any(
        pool.cloud is not None and pool.cloud.provider == "aks" and image.has_toolkit for pool, image in images
    )
    return OperatorParts(
        driver=driver,
        toolkit=toolkit,
        runtime_class=AKS_RUNTIME_CLASS if aks_image_toolkit and not toolkit else None,
        gke_google_driver=any(
            pool.cloud is not None and pool.cloud.provider == "gke" and image.has_driver for pool, image in images
        ),
    )


# --- GKE node counts ------------------------------------------------------------------------------------------------
# GKE counts a node pool per zone: node_count, initial_node_count and autoscaling.min/max_node_count apply to each of
# the pool's zones (https://cloud.google.com/kubernetes-engine/docs/concepts/cluster-autoscaler: "minimum and
# maximum size for each zone"); total_min_node_count/total_max_node_count bound the whole pool, with location_policy
# (https://registry.terraform.io/providers/hashicorp/google/latest/docs/resources/container_node_pool#autoscaling).
# A blueprint's count, minNodes and maxNodes are the pool's total: autoscaled pools use the totals; a fixed count
# is divided over the named zones, which must divide it exactly (GS309).


def gke_zone_split(pool: NodePool) -> int | None:
    """Nodes per zone for a fixed-size GKE pool: count / zones; count itself where the zones are the cluster's
    (GS309 warns); None where the named zones cannot share count evenly (GS309's error)."""
    assert pool.cloud is not None and pool.count is not None
    zones = len(pool.cloud.zones)
    if zones == 0:
        return pool.count
    return None if pool.count % zones else pool.count // zones


def gke_initial_per_zone(pool: NodePool) -> int | None:
    """initial_node_count (per zone) for an autoscaled GKE pool: the fewest per zone that reach minNodes in total
    without passing maxNodes; None where minNodes > 0 and the zones are not named (their number is the cluster's:
    gke_zone_sizing then writes minNodes per zone, and GS309 warns)."""
    assert pool.cloud is not None
    low, high = pool.min_nodes or 0, pool.max_nodes or 0
    zones = len(pool.cloud.zones)
    if low == 0:
        return 0
    if zones == 0:
        return None
    per_zone = -(-low // zones)  # ceil
    return per_zone if per_zone * zones <= high else low // zones


def gke_zone_sizing(pool: NodePool) -> dict[str, object]:
    """The GKE NodePool's sizing inputs (Pulumi names) that give the blueprint's totals."""
    cloud = pool.cloud
    assert cloud is not None
    if pool.count is not None:
        return {"node_count": gke_zone_split(pool)}
    # Spot capacity is taken where it is (ANY); on-demand nodes are spread evenly (BALANCED, GKE's default).
    initial = gke_initial_per_zone(pool)
    return {
        "initial_node_count": pool.min_nodes or 0 if initial is None else initial,
        "autoscaling": {
            "total_min_node_count": pool.min_nodes or 0,
            "total_max_node_count": pool.max_nodes or 0,
            "location_policy": "ANY" if cloud.spot else "BALANCED",
        },
    }

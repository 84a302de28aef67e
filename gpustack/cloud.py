"""Cloud GPU machine types as facts: which GPU model, and how many, each provider's machine type carries, with its
vCPUs and memory; what a node of it leaves to pods; and each cloud's recipe for the driver, the toolkit and its
node counts.

Loaded from `gpustack/data/cloud-machines.yaml` (each provider's rows cite their source). A cloud pool's machine is
the machine type it names, or, when it names none, the smallest (fewest vCPUs) that has the pool's GPU model and
count. GKE's N1 machine types take T4 or V100 GPUs attached in several counts: each (machine, GPU, count) they allow
is a row. Karpenter on AWS launches EC2 instance types, so it reads the EKS rows. A machine type the table does not
list is accepted when the pool states its node's resources (`nodeResources`): gpustack trusts them (GS315 warns).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from decimal import Decimal
from importlib import resources

import yaml

from gpustack.catalog import Catalog, load_catalog
from gpustack.model import Blueprint, NodePool, NodeResources, Stack

PROVIDERS = ("gke", "eks", "aks", "karpenter")
AMD64, ARM64 = "amd64", "arm64"
_TABLE_OF = {"gke": "gke", "eks": "eks", "aks": "aks", "karpenter": "eks"}


@dataclass(frozen=True)
class Machine:
    name: str
    gpu: str  # a catalog key
    count: int
    vcpus: int
    accelerator: str | None  # the provider's own accelerator name, where its API wants one
    memory_gib: int = 0
    attached: bool = False  # a general-purpose machine type the GPUs are attached to (GKE N1)
    arch: str = "amd64"  # the host's CPU architecture: arm64 for Grace (GB200)


@functools.cache
def machine_table() -> dict[str, tuple[Machine, ...]]:
    """Provider -> its GPU machine types, in the table's order (attached-GPU variants after the fixed ones)."""
    text = resources.files("gpustack").joinpath("data/cloud-machines.yaml").read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    table: dict[str, tuple[Machine, ...]] = {}
    for provider, body in data["providers"].items():
        rows = [
            Machine(
                name,
                row["gpu"],
                row["count"],
                row["vcpus"],
                row.get("accelerator"),
                row["memory_gib"],
                arch=row.get("arch", AMD64),
            )
            for name, row in body["machines"].items()
        ]
        names = body.get("accelerators", {})
        for name, row in body.get("attached", {}).items():
            for gpu, counts in row["gpus"].items():
                rows += [
                    Machine(name, gpu, count, row["vcpus"], names[gpu], row["memory_gib"], attached=True)
                    for count in counts
                ]
        table[provider] = tuple(rows)
    return table


def machines(provider: str) -> tuple[Machine, ...]:
    return machine_table()[_TABLE_OF[provider]]


def machines_named(provider: str, name: str) -> list[Machine]:
    """Every row of the machine type: one, or one per GPU model and count it takes (GKE N1)."""
    return [m for m in machines(provider) if m.name == name]


def machine_named(provider: str, name: str) -> Machine | None:
    found = machines_named(provider, name)
    return found[0] if found else None


def matching_machines(provider: str, catalog: Catalog, pool: NodePool) -> list[Machine]:
    """The provider's machine types with exactly the pool's GPU model and count, smallest first."""
    if pool.gpu is None:
        return []
    model = catalog.resolve(pool.gpu.model)
    if model is None:
        return []
    found = [m for m in machines(provider) if m.gpu == model.key and m.count == pool.gpu.count]
    return sorted(found, key=lambda m: (m.vcpus, m.memory_gib, m.name))


def pool_machine(pool: NodePool, catalog: Catalog) -> Machine | None:
    """The machine type a cloud pool runs on: the one it names (the row with the pool's GPUs where it takes several),
    else the smallest that matches its GPUs.

    None for a pool without a cloud block, or one whose machine is not in the table or matches nothing (GS307 says
    so, or GS315 accepts it on the pool's stated nodeResources).
    """
    cloud = pool.cloud
    if cloud is None:
        return None
    found = matching_machines(cloud.provider, catalog, pool)
    if cloud.machine_type is not None:
        named = [m for m in found if m.name == cloud.machine_type]
        return named[0] if named else machine_named(cloud.provider, cloud.machine_type)
    return found[0] if found else None


def pool_arch(pool: NodePool, catalog: Catalog | None = None) -> str:
    """The CPU architecture of a cloud pool's nodes: its named machine type's; without one, arm64 where every machine
    type with the pool's GPUs is an Arm host (GB200 comes only with Grace CPUs); amd64 otherwise, and for a machine
    type the table does not list."""
    cloud = pool.cloud
    if cloud is None:
        return AMD64
    if cloud.machine_type is not None:
        named = machines_named(cloud.provider, cloud.machine_type)
        return named[0].arch if named else AMD64
    found = matching_machines(cloud.provider, catalog if catalog is not None else load_catalog(), pool)
    return ARM64 if found and all(m.arch == ARM64 for m in found) else AMD64


def pool_accelerator(pool: NodePool, catalog: Catalog) -> str | None:
    """GKE's accelerator type for the pool's GPUs: the table's, else the catalog's GKE name (an unlisted machine)."""
    machine = pool_machine(pool, catalog)
    if machine is not None and machine.accelerator is not None:
        return machine.accelerator
    model = None if pool.gpu is None else catalog.resolve(pool.gpu.model)
    return None if model is None else model.gke_accelerator


def machine_type(pool: NodePool, catalog: Catalog) -> str | None:
    """The machine type name to provision: as written (also for CPU-only pools, which the table does not list)."""
    if pool.cloud is None:
        return None
    if pool.cloud.machine_type is not None:
        return pool.cloud.machine_type
    machine = pool_machine(pool, catalog)
    return None if machine is None else machine.name


# --- What a node leaves to pods ------------------------------------------------------------------------------------
# A node's allocatable is its capacity less the kubelet's and the system's reserve and the hard eviction threshold.
# CPU, the same formula on all three clouds: 6% of the first core, 1% of the second, 0.5% of the next two, 0.25% of
#   every core above four (GKE https://cloud.google.com/kubernetes-engine/docs/concepts/plan-node-sizes, AKS
#   https://learn.microsoft.com/en-us/azure/aks/node-resource-reservations, EKS's AL2023 nodeadm
#   https://github.com/awslabs/amazon-eks-ami, templates/al2023/runtime kubelet config).
# Memory:
#   GKE: 25% of the first 4 GiB, 20% of the next 4, 10% of the next 8, 6% of the next 112, 2% above 128 GiB, plus
#        a 100 MiB eviction threshold (the GKE page above);
#   AKS (1.29 on): 20 MiB per pod the node may run plus 50 MiB, at most 25% of the memory, plus 100 MiB eviction
#        (the AKS page above);
#   EKS and Karpenter (AL2023): 11 MiB per pod plus 255 MiB, plus 100 MiB eviction (the EKS AMI's formula).
#   Pods per node: the pool's maxPods, else 110 (the kubelet's default; EKS and AKS raise it with some CNIs, which
#   only lowers the real allocatable, so gpustack's figure may be a little high there).
EVICTION_MIB = 100
DEFAULT_MAX_PODS = 110
_GKE_MEMORY_STEPS = ((4, Decimal("0.25")), (4, Decimal("0.20")), (8, Decimal("0.10")), (112, Decimal("0.06")))
_CPU_STEPS = ((1, Decimal("0.06")), (1, Decimal("0.01")), (2, Decimal("0.005")))


def _cpu_reserve(vcpus: int) -> Decimal:
    left, reserved = Decimal(vcpus), Decimal(0)
    for cores, share in _CPU_STEPS:
        step: Decimal = min(left, Decimal(cores))
        reserved += step * share
        left -= step
    return reserved + left * Decimal("0.0025")


def _memory_reserve_mib(provider: str, memory_gib: int, max_pods: int) -> Decimal:
    total_mib = Decimal(memory_gib) * 1024
    if provider == "gke":
        left, reserved = Decimal(memory_gib), Decimal(0)
        for gib, share in _GKE_MEMORY_STEPS:
            step: Decimal = min(left, Decimal(gib))
            reserved += step * share
            left -= step
        return (reserved + left * Decimal("0.02")) * 1024 + EVICTION_MIB
    if provider == "aks":
        aks: Decimal = min(Decimal(20 * max_pods + 50), total_mib / 4)
        return aks + EVICTION_MIB
    return Decimal(11 * max_pods + 255) + EVICTION_MIB  # eks, karpenter


def machine_allocatable(provider: str, machine: Machine, max_pods: int | None) -> NodeResources:
    """What a node of the machine type leaves to pods, as Kubernetes quantities (millicores, MiB)."""
    cpu = (Decimal(machine.vcpus) - _cpu_reserve(machine.vcpus)) * 1000
    memory = Decimal(machine.memory_gib) * 1024 - _memory_reserve_mib(
        provider, machine.memory_gib, max_pods or DEFAULT_MAX_PODS
    )
    return NodeResources(f"{int(cpu)}m", f"{int(memory)}Mi")


def node_resources(pool: NodePool, catalog: Catalog) -> NodeResources | None:
    """A pool's node resources: as the blueprint states them, else its cloud machine's allocatable."""
    if pool.node_resources is not None or pool.cloud is None:
        return pool.node_resources
    machine = pool_machine(pool, catalog)
    if machine is None or not machine.memory_gib:
        return None
    return machine_allocatable(pool.cloud.provider, machine, pool.max_pods)


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
EKS_DEFAULT_IMAGES = {AMD64: EKS_DEFAULT_IMAGE, ARM64: "AL2023_ARM_64_NVIDIA"}  # by the machine's architecture
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
        return NodeImage(cloud.image_type or EKS_DEFAULT_IMAGES[pool_arch(pool)], True, True)
    if cloud.provider == "karpenter":
        return NodeImage(None, True, True)
    # AKS installs its driver unless the blueprint asks for the operator's (then gpuProfile.driver: None).
    aks_driver = operator_driver is not True
    return NodeImage(None, aks_driver, aks_driver)


def image_arch(image: str) -> str:
    """The CPU architecture an EKS AMI type is built for (AL2023_ARM_64_NVIDIA, BOTTLEROCKET_ARM_64_NVIDIA: arm64)."""
    return ARM64 if "_ARM_64" in image else AMD64


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
    """The operator's driver and toolkit: as written, else off where every GPU pool is a cloud pool whose image has
    them (a GPU pool of nodes gpustack does not provision keeps the operator's, as without cloud pools)."""
    images = [(pool, node_image(pool, driver)) for pool in gpu_cloud_pools(pools)]
    # Only cloud pools' images are known: another GPU pool's nodes may have no driver of their own.
    known = bool(images) and all(pool.cloud is not None for pool in pools if pool.gpu is not None)
    if driver is None:
        driver = not known or not all(image.has_driver for _, image in images)
    if toolkit is None:
        toolkit = not known or not all(image.has_toolkit for _, image in images)
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

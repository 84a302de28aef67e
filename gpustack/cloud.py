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
from gpustack.model import NodePool

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

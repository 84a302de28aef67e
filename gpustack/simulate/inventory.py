"""The nodes a blueprint describes, as the scheduler would see them after the stack is applied.

Each node carries what it advertises after sharing (from `gpustack.offers`, the one place resource
names are derived), the labels GPU Feature Discovery would put on it (product names change under
time-slicing, MPS and MIG: nvidia-device-plugin.md section 3), and the labels and taints of the
compiled Node patches, so a pod's selectors are judged against what nodes would really carry.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gpustack.catalog import GpuModel
from gpustack.cloud import node_resources
from gpustack.context import Context
from gpustack.dra import is_dra
from gpustack.model import MigStrategy, NodePool, NodeResources, SharingStrategy
from gpustack.names import GFD_PRODUCT_LABEL, POOL_LABEL
from gpustack.offers import Offer
from gpustack.quantity import parse_quantity
from gpustack.simulate.claims import node_devices
from gpustack.simulate.pods import CPU, MEMORY, PODS, Taint, amount

HOSTNAME = "kubernetes.io/hostname"
MAX_PODS = 110  # the kubelet's default maxPods
# Resources a pool may leave unstated: then no pod is refused for them (gpustack cannot know the machine). A
# blueprint never states a node's disk, so ephemeral-storage is judged only on a live cluster's nodes.
UNSTATED = frozenset({CPU, MEMORY, "ephemeral-storage"})


@dataclass(frozen=True)
class Node:
    name: str
    pool: str | None
    labels: Mapping[str, str] = field(hash=False)
    taints: tuple[Taint, ...]
    allocatable: Mapping[str, int] = field(hash=False)
    unschedulable: bool = False
    scale_up: bool = False  # an autoscaled pool's node beyond its minNodes: there only after a scale-up
    # DRA extended resources (simulate/extended.py): a name the node does not advertise -> the claim resource of the
    # DeviceClass whose extendedResourceName it is, whose devices serve it.
    served: Mapping[str, str] = field(default_factory=dict, hash=False)

    def serving(self, resource: str) -> str:
        """What a request for `resource` takes on this node: itself, or devices of the DeviceClass that maps it."""
        return resource if resource in self.allocatable else self.served.get(resource, resource)

    def capacity(self, resource: str) -> int | None:
        """Allocatable units of `resource`; None when the blueprint does not state it (cpu, memory)."""
        if resource in self.allocatable:
            return self.allocatable[resource]
        return None if resource in UNSTATED else 0

    @property
    def profile(self) -> tuple[Any, ...]:
        """Everything but the name: nodes with equal profiles filter and score alike for most pods."""
        labels = tuple(sorted((k, v) for k, v in self.labels.items() if k != HOSTNAME))
        return (self.pool, labels, self.taints, tuple(sorted(self.allocatable.items())), self.unschedulable)


def gfd_labels(pool: NodePool, model: GpuModel, offers: tuple[Offer, ...]) -> dict[str, str]:
    """The nvidia.com/* labels GFD (and the GPU Operator's gpu.present) would write on a node of the pool."""
    product = model.product_label
    strategy = pool.sharing.strategy
    major, _, minor = model.compute_capability.partition(".")
    labels = {
        "nvidia.com/gpu.present": "true",
        GFD_PRODUCT_LABEL: product,
        "nvidia.com/gpu.count": str(pool.gpus_per_node),
        # memory_mib lists the values drivers have been seen to write; the first is the catalog's usual one.
        "nvidia.com/gpu.memory": str(model.memory_mib[0]),
        "nvidia.com/gpu.family": model.family,
        "nvidia.com/gpu.compute.major": major,
        "nvidia.com/gpu.compute.minor": minor or "0",
        "nvidia.com/gpu.replicas": "1",
        "nvidia.com/gpu.sharing-strategy": "none",
        "nvidia.com/mig.capable": "true" if model.mig is not None else "false",
    }
    replication = pool.sharing.replication
    if strategy in (SharingStrategy.TIME_SLICING, SharingStrategy.MPS) and replication is not None:
        if replication.replicas > 1:
            labels["nvidia.com/gpu.replicas"] = str(replication.replicas)
            labels["nvidia.com/gpu.sharing-strategy"] = str(strategy)
            if not replication.rename_by_default:
                labels[GFD_PRODUCT_LABEL] = product + "-SHARED"
        if strategy is SharingStrategy.MPS:
            labels["nvidia.com/mps.capable"] = "true"
    mig = pool.sharing.mig
    if strategy is SharingStrategy.MIG and mig is not None:
        labels["nvidia.com/mig.strategy"] = str(mig.strategy)
        if mig.strategy is MigStrategy.SINGLE:
            profiles = [o.profile for o in offers if o.profile is not None]
            suffix = profiles[0].replace("+", ".") if len(profiles) == 1 else "INVALID"
            labels[GFD_PRODUCT_LABEL] = f"{product}-MIG-{suffix}"
            labels["nvidia.com/gpu.count"] = str(sum(o.per_node for o in offers))
            del labels["nvidia.com/gpu.memory"]  # the slice's MB, which the catalog does not record exactly
        else:
            # MIG-enabled parents advertise no whole GPUs (replicas 0); GPUs a group leaves whole are labelled as
            # full GPUs, which override the parents' labels (GFD newGPULabelers): one unshared GPU each.
            whole = next((offer for offer in offers if offer.profile is None), None)
            labels["nvidia.com/gpu.replicas"] = "0" if whole is None else str(whole.shared_by)
            if whole is not None and whole.shared_by > 1:
                # Whole GPUs time-sliced beside the instances (mig.timeSlicing names whole): labelled as time-sliced
                # full GPUs are, -SHARED unless renamed.
                labels["nvidia.com/gpu.sharing-strategy"] = str(SharingStrategy.TIME_SLICING)
                if not whole.resource.endswith(".shared"):
                    labels[GFD_PRODUCT_LABEL] = product + "-SHARED"
            for offer in offers:
                if offer.profile is None:
                    continue
                name = offer.profile.replace("+", ".")
                shared = offer.shared_by > 1
                # Time-sliced and not renamed: GFD marks the product -SHARED, as for time-sliced whole GPUs.
                renamed = offer.resource.endswith(".shared")
                suffix = "-SHARED" if shared and not renamed else ""
                labels[f"nvidia.com/mig-{name}.product"] = f"{product}-MIG-{name}{suffix}"
                labels[f"nvidia.com/mig-{name}.count"] = str(offer.per_node // offer.shared_by)
                labels[f"nvidia.com/mig-{name}.replicas"] = str(offer.shared_by)
                if shared:
                    labels[f"nvidia.com/mig-{name}.sharing-strategy"] = str(SharingStrategy.TIME_SLICING)
    return labels


def allocatable(pool: NodePool, offers: tuple[Offer, ...], resources: NodeResources | None = None) -> dict[str, int]:
    """A node's allocatable: its GPU units, pods, and CPU and memory (`resources`: the pool's stated ones, or its
    cloud machine's allocatable, gpustack.cloud.node_resources)."""
    out = {offer.resource: offer.per_node for offer in offers}
    out[PODS] = pool.max_pods if pool.max_pods is not None else MAX_PODS
    resources = resources if resources is not None else pool.node_resources
    if resources is not None and resources.cpu is not None:
        out[CPU] = amount(CPU, resources.cpu)
    if resources is not None and resources.memory is not None:
        out[MEMORY] = int(parse_quantity(resources.memory))
    return out


def build_inventory(context: Context, node_objects: Iterable[Mapping[str, Any]] = ()) -> tuple[Node, ...]:
    """Every node of every pool, in blueprint order; compiled Node patches supply labels and taints."""
    labels_of: dict[str, dict[str, str]] = {}
    taints_of: dict[str, tuple[Taint, ...]] = {}
    for obj in node_objects:  # compile may split a node into a label patch and a taint patch
        name = str(obj["metadata"]["name"])
        labels_of.setdefault(name, {}).update(
            {str(k): str(v) for k, v in (obj["metadata"].get("labels") or {}).items()}
        )
        if "taints" in (obj.get("spec") or {}):
            taints_of[name] = tuple(_taint(t) for t in obj["spec"]["taints"] or ())
    gfd = context.blueprint.device_plugin.gfd
    nodes = []
    for pool in context.blueprint.pools:
        model = context.models.get(pool.name)
        offers = context.offers.get(pool.name, ())
        base = gfd_labels(pool, model, offers) if gfd and model is not None else {}
        own = {POOL_LABEL: pool.name, **dict(pool.labels)}
        pool_taints = tuple(Taint(t.key, t.value, t.effect) for t in pool.taints)
        # A DRA pool's GPUs are devices in ResourceSlices, not extended resources of the node.
        resources = node_resources(pool, context.catalog)
        capacity = (
            {**allocatable(pool, (), resources), **node_devices(context, pool)}
            if is_dra(pool)
            else allocatable(pool, offers, resources)
        )
        if pool.selector is not None:
            # A selector pool's nodes are the provider's to create: as many as it may hold, named after the pool,
            # carrying what the selector matches and what nodes/<pool>.node-pool.yaml tells the provider to set.
            labels = {**base, **own, **selector_labels(pool)}
            for index in range(1, pool.node_count + 1):
                name = f"{pool.name}-{index}"
                labels_here = {HOSTNAME: name, **labels}
                extra = index > pool.guaranteed_nodes
                nodes.append(Node(name, pool.name, labels_here, pool_taints, dict(capacity), scale_up=extra))
            continue
        for name in pool.nodes:
            # Without compiled patches (a plan of other families only), the blueprint's own labels and taints.
            labels = {HOSTNAME: name, **base, **labels_of.get(name, own)}
            taints = taints_of.get(name, pool_taints if name not in labels_of else ())
            cordoned = name in pool.cordoned
            nodes.append(Node(name, pool.name, labels, taints, dict(capacity), unschedulable=cordoned))
    return tuple(nodes)


def selector_labels(pool: NodePool) -> dict[str, str]:
    """Labels that satisfy a selector pool's selector: its exact values, the first allowed `In` value, and a
    placeholder value for `Exists`."""
    labels: dict[str, str] = {}
    assert pool.selector is not None
    for requirement in pool.selector.requirements():
        if requirement.operator == "In":
            labels[requirement.key] = requirement.values[0]
        elif requirement.operator == "Exists":
            labels[requirement.key] = "present"
    return labels


def _taint(raw: Mapping[str, Any]) -> Taint:
    value = raw.get("value")
    return Taint(str(raw["key"]), None if value is None else str(value), str(raw["effect"]))

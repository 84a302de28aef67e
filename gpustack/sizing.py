"""CPU and host memory for a GPU pod that does not say: derived from the GPUs it gets, never a silent constant.

The rule (docs/blueprint-format.md, "Workload resources"), first that applies:
1. the workload's `resources`;
2. its share of the node (the node's CPU and memory x its GPU units / the node's units x 0.9): the pool's
   `nodeResources`, or for a cloud pool its machine's allocatable (vCPUs and memory less the kubelet's and system
   reserve, each cloud's published formula: gpustack.cloud.machine_allocatable);
3. from the GPUs: host memory equal to the GPU memory the pod gets (a model's weights pass through host memory
   on their way to the GPU: less, and the pod is OOM-killed while loading), at least 8Gi; 4 CPUs per GPU unit,
   at least 2.

Requests equal limits (Guaranteed QoS, which the CPU and Topology Managers need), so the amounts are written on
the pod and named in an annotation saying where they came from. A workload that sets less memory than its GPUs
hold is warned about (GS608).
"""

from __future__ import annotations

import math
from decimal import ROUND_FLOOR, Decimal

from gpustack.cloud import node_resources
from gpustack.context import Context
from gpustack.model import NodePool, Workload
from gpustack.needs import Requests
from gpustack.offers import HAMI_MEMORY, offer_for
from gpustack.quantity import GIB, MIB, parse_quantity

# Share of a node's allocatable CPU/memory handed out with its GPUs: the rest is left to DaemonSets (device
# plugin, GFD, DCGM exporter, CNI), so a pod taking all of a node's GPUs still fits on it.
NODE_SHARE = Decimal("0.9")
CPU_PER_GPU_UNIT = 4
MIN_CPU = 2
MIN_MEMORY_GIB = 8


def gpu_memory_gib(ctx: Context, pool: NodePool, requests: Requests) -> Decimal | None:
    """The GPU memory one pod gets, in GiB; None where the pool's units say nothing about memory."""
    amounts = requests.as_dict()
    if HAMI_MEMORY in amounts:  # HAMi: MiB per GPU, on each of the pod's GPUs
        gpus = amounts.get(requests.gpu_resource, 1) if requests.gpu_resource != HAMI_MEMORY else 1
        return Decimal(amounts[HAMI_MEMORY]) * MIB / GIB * gpus
    offer = offer_for(ctx.offers.get(pool.name, ()), requests.gpu_resource)
    if offer is None or offer.memory_gib is None:
        return None
    return offer.memory_gib * amounts[requests.gpu_resource]


def size_pod(ctx: Context, workload: Workload, pool: NodePool, requests: Requests) -> tuple[str, str, str]:
    """(cpu, memory, where they came from) for one pod of the workload."""
    cpu, memory = workload.cpu, workload.memory
    sources = ["resources"] if cpu is not None and memory is not None else []
    offer = offer_for(ctx.offers.get(pool.name, ()), requests.gpu_resource)
    node = node_resources(pool, ctx.catalog)
    if offer is not None and offer.per_node > 0 and node is not None and (cpu is None or memory is None):
        share = Decimal(requests.items[0][1]) / Decimal(offer.per_node) * NODE_SHARE
        if offer.gpus is not None and pool.gpus_per_node:
            # Units cut from some of the node's GPUs (a MIG group, the GPUs left whole): their share of those GPUs.
            share = share * offer.gpus / pool.gpus_per_node
        if cpu is None and node.cpu is not None:
            cpu = str(max(int((parse_quantity(node.cpu) * share).to_integral_value(rounding=ROUND_FLOOR)), 1))
        if memory is None and node.memory is not None:
            gib = (parse_quantity(node.memory) * share / GIB).to_integral_value(rounding=ROUND_FLOOR)
            memory = f"{max(int(gib), 1)}Gi"
        sources.append("node share")
    if cpu is None or memory is None:
        units = requests.items[0][1] if requests.gpu_resource != HAMI_MEMORY else 1
        if cpu is None:
            cpu = str(max(CPU_PER_GPU_UNIT * units, MIN_CPU))
        if memory is None:
            held = gpu_memory_gib(ctx, pool, requests) or Decimal(0)
            memory = f"{max(math.ceil(held), MIN_MEMORY_GIB)}Gi"
        sources.append("GPU memory")
    return cpu, memory, " and ".join(dict.fromkeys(sources))

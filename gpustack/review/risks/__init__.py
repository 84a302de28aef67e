"""Risk flags: one function per way a blueprint change can hurt what is already running.

Each rule reads both versions and returns the risks it finds, naming the nodes and workloads they touch.
"Running" means what the old version put on the cluster: its workloads' pods, on its pools' nodes.
Apply order matters to several of them: gpustack's manifests patch Nodes before workloads roll.
"""

from __future__ import annotations

from collections.abc import Callable

from gpustack.review.risk import Risk
from gpustack.review.risks.allocation import allocation_switched
from gpustack.review.risks.cloud import cloud_pool_replaced
from gpustack.review.risks.gpus import (
    device_plugin_chart,
    gpu_stack,
    isolation_weakened,
    mig_repartition,
    resource_renamed,
    unit_memory_shrinks,
)
from gpustack.review.risks.node_class import node_class_changed
from gpustack.review.risks.nodes import node_moved, noexecute_taint
from gpustack.review.risks.objects import base_absent, object_escapes_tenant
from gpustack.review.risks.queues import kai_queue_stranded
from gpustack.review.risks.tenants import quota_below_need, quota_closed, tenant_access_lost
from gpustack.review.risks.workloads import workload_stranded
from gpustack.review.snapshot import Snapshot

Rule = Callable[[Snapshot, Snapshot], list[Risk]]


RULES: tuple[Rule, ...] = (
    mig_repartition,
    noexecute_taint,
    resource_renamed,
    workload_stranded,
    quota_below_need,
    kai_queue_stranded,
    quota_closed,
    node_moved,
    device_plugin_chart,
    gpu_stack,
    tenant_access_lost,
    isolation_weakened,
    unit_memory_shrinks,
    allocation_switched,
    object_escapes_tenant,
    base_absent,
    cloud_pool_replaced,
    node_class_changed,
)


def assess_risks(before: Snapshot, after: Snapshot) -> tuple[Risk, ...]:
    found = [risk for rule in RULES for risk in rule(before, after)]
    return tuple(sorted(found, key=Risk.sort_key))

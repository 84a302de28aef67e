"""Volcano for tenants with `scheduler: volcano`: a Queue per tenant, and the scheduler configuration that gangs.

- The Queue is named after the tenant. Its `capability` is the tenant's quota summed per resource name: Volcano has
  no flavors, so like a ResourceQuota it cannot tell two pools with the same resource name apart (GS506). A name its
  pools advertise and its quota does not grant is capped at 0, as in its ResourceQuota (N4). `weight`
  is the tenant's share under the proportion plugin; `reclaimable` lets other queues take back what it over-uses.
- The tenant's VolcanoJobs name the queue (workloads.py); its other pods carry the queue annotation.
- `volcano/volcano-scheduler.conf` is a whole scheduler configuration, not a patch: Volcano does not merge a custom
  configuration with its default, so everything gang scheduling and queues rely on is spelled out.
- Volcano itself is one pinned Helm release (chart `volcano`, `spec.volcano.chartVersion`), whose values carry that
  configuration as `custom.scheduler_config_override` (the chart writes it whole into the scheduler's ConfigMap),
  so the configuration is applied with Volcano, by `helm` or by Pulumi, and the Queue/Job CRDs exist before the
  queues and jobs.
"""

from __future__ import annotations

from typing import Any

from gpustack.context import Context
from gpustack.model import (
    DEFAULT_VOLCANO_CHART_VERSION,
    DEFAULT_VOLCANO_QUEUE_WEIGHT,
    VOLCANO_CHART_REPOSITORY,
    Tenant,
    WorkloadKind,
)
from gpustack.names import MANAGED_BY, TENANT_LABEL
from gpustack.offers import full_resource_name
from gpustack.plan import Artifact, FamilyOutput, HelmRelease, Manifest, Object
from gpustack.schedulers import closed_resources, queue_name, volcano_tenants
from gpustack.yamlout import dump_yaml

FAMILY = "volcano"
QUEUES_FILE = "volcano/queues.yaml"
CONFIG_FILE = "volcano/volcano-scheduler.conf"
VALUES_FILE = "volcano/values.yaml"
RELEASE_NAME = "volcano"
CHART_NAME = "volcano"
# The Volcano release the configuration and the Queue/Job CRDs were checked against (v1.15.1, 2026-07-30).
VOLCANO_VERSION = DEFAULT_VOLCANO_CHART_VERSION
# binpack arguments (pkg/scheduler/plugins/binpack): the plugin's weight among the node-order plugins, and the
# GPU resources' weight against cpu and memory (1 each), so a node is judged full by its GPUs first.
BINPACK_WEIGHT = 10
BINPACK_GPU_WEIGHT = 5


def compile_volcano(ctx: Context) -> FamilyOutput:
    tenants = volcano_tenants(ctx)
    jobs = any(w.kind is WorkloadKind.VOLCANO_JOB for w in ctx.blueprint.workloads)
    if not tenants and not jobs:
        return FamilyOutput()
    objects = [Manifest(FAMILY, QUEUES_FILE, queue(ctx, tenant)) for tenant in tenants]
    settings = ctx.blueprint.volcano
    binpack = ", GPU binpack" if settings.binpack else ""
    text = render_scheduler_config(ctx)
    config = Artifact(
        CONFIG_FILE,
        text,
        f"Volcano scheduler configuration (gang scheduling, queues{binpack}), for reading: the same text is "
        f"`custom.scheduler_config_override` in {VALUES_FILE}, installed with Volcano",
    )
    release = HelmRelease(
        name=RELEASE_NAME,
        chart=CHART_NAME,
        repository=VOLCANO_CHART_REPOSITORY,
        version=settings.chart_version,
        namespace=settings.namespace,
        values={"custom": {"scheduler_config_override": text}},
        values_file=VALUES_FILE,
        # The chart's pre-install/pre-upgrade hook job `volcano-admission-init` creates the admission webhook's
        # certificate secret; without it the admission pods never start and the webhooks refuse Queues and Jobs.
        needs_hooks=True,
    )
    return FamilyOutput(objects=objects, releases=[release], artifacts=[config])


def capability(ctx: Context, tenant: Tenant) -> dict[str, str]:
    """The tenant's quota as one ceiling per resource name; pools with the same name add up, as in its ResourceQuota,
    and what its pools advertise but its quota does not grant is 0."""
    totals: dict[str, int] = dict.fromkeys(closed_resources(ctx, tenant), 0)
    for _pool, items in tenant.quota:
        for short, amount in items:
            name = full_resource_name(short)
            totals[name] = totals.get(name, 0) + amount
    return {name: str(amount) for name, amount in sorted(totals.items())}


def queue(ctx: Context, tenant: Tenant) -> Object:
    settings = tenant.volcano
    spec: dict[str, Any] = {
        "weight": settings.weight if settings is not None else DEFAULT_VOLCANO_QUEUE_WEIGHT,
        "reclaimable": settings.reclaimable if settings is not None else True,
    }
    ceiling = capability(ctx, tenant)
    if ceiling:
        spec["capability"] = ceiling
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": queue_name(tenant), "labels": {**MANAGED_BY, TENANT_LABEL: tenant.name}},
        "spec": spec,
    }


def gpu_resources(ctx: Context) -> list[str]:
    """Resources advertised by the pools of Volcano tenants (every pool when only VolcanoJobs ask for Volcano)."""
    tenants = volcano_tenants(ctx)
    pools = {p for t in tenants for p in t.pools} if tenants else set(ctx.pools)
    return sorted({offer.resource for pool in pools for offer in ctx.offers.get(pool, ())})


def scheduler_config(ctx: Context) -> dict[str, Any]:
    node_order: list[dict[str, Any]] = [
        {"name": "overcommit"},
        {"name": "drf", "enablePreemptable": False},
        {"name": "predicates"},
        # proportion: queues share the cluster by weight, capped by capability; reclaim gives back over-use.
        {"name": "proportion"},
        {"name": "nodeorder"},
    ]
    if ctx.blueprint.volcano.binpack:
        resources = gpu_resources(ctx)
        arguments: dict[str, Any] = {"binpack.weight": BINPACK_WEIGHT, "binpack.cpu": 1, "binpack.memory": 1}
        if resources:
            arguments["binpack.resources"] = ",".join(resources)
            arguments.update({f"binpack.resources.{name}": BINPACK_GPU_WEIGHT for name in resources})
        node_order.append({"name": "binpack", "arguments": arguments})
    return {
        # preempt: a higher-priority job of a queue may evict lower ones; reclaim: a queue under its share takes
        # back what reclaimable queues over-use. enqueue admits a gang only when all of minAvailable can fit.
        "actions": "enqueue, allocate, preempt, reclaim, backfill",
        "tiers": [
            {
                "plugins": [
                    {"name": "priority"},
                    # gang: no pod of a job starts until minAvailable of them can (all workers, for gpustack's jobs).
                    {"name": "gang", "enablePreemptable": False},
                    {"name": "conformance"},
                ]
            },
            {"plugins": node_order},
        ],
    }


def render_scheduler_config(ctx: Context) -> str:
    header = (
        f"# Generated by gpustack from blueprint '{ctx.blueprint.name}': the whole Volcano scheduler configuration\n"
        "# (Volcano does not merge it with its default). Edit the blueprint, not this file.\n"
    )
    return header + dump_yaml(scheduler_config(ctx))

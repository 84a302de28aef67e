"""NVIDIA KAI Scheduler for tenants with `scheduler: kai`: a SchedulingShard per pool, and in each, a parent Queue per
tenant granted the pool and a leaf Queue per namespace.

- A shard per pool (KAI's `docs/operator/scheduling-shards.md`): KAI's `global.nodePoolLabelKey` is gpustack's pool
  label, so the shard named after a pool runs a KAI scheduler that sees only that pool's nodes, the Queues labelled
  with the pool and the PodGroups labelled with it (KAI's pod grouper copies the workload object's labels, and every
  workload gpustack writes carries its pool's). A Queue's `gpu` is one number for every GPU resource; in a shard that
  number is the tenant's GPUs of that pool alone: the per-model limit KAI's one number lacks (KAI issue #1087). What
  has no pool label (KAI's default queues, namespaces without a tenant) stays in the chart's `default` shard, which
  sees only nodes outside every pool.
- KAI's Queue (scheduling.run.ai/v2) is cluster-scoped and hierarchical; only leaves take jobs. In each pool's shard a
  tenant's parent `<tenant>.<pool>` holds its quota on the pool; each of its namespaces gets a leaf
  `<tenant>.<pool>.<namespace>` under it, and its workloads on the pool name that leaf with the
  `kai.scheduler/queue` label (workloads.py).
- Units are KAI's (docs/queues, and the CRD's field descriptions): `gpu` in GPU units, where a whole GPU counts 1
  and a MIG device the number before `g` in its profile (mig-3g.40gb: 3); `cpu` in millicores and `memory` in MB
  (10^6 bytes); `-1` is unlimited. gpustack's quotas are on GPUs only, so cpu and memory are `-1` (guaranteed and
  uncapped, as without KAI): a quota of 0 there would make every job over its quota, and preemptible, for the
  cpu it asks for.
- `gpu.quota` (guaranteed) is the tenant's quota on the pool in units; `gpu.limit` (the hard cap) is the same, or
  `-1` when the tenant holds the pool whole (`quota: {<pool>: unlimited}`: its ResourceQuota has no ceiling there
  either; a pool with no quota entry is closed, 0, GS610). Within a pool, KAI's one `gpu` number still does not cap
  each MIG profile, so the per-name ResourceQuota in each namespace stays the hard per-profile limit (docs/kai.md).
- A tenant in a cohort (`kai.cohort`, Kueue's words): in each pool's shard its parent goes under a Queue
  `<cohort>.<pool>`, whose quota and limit are its tenants' quotas there summed, so what they lend each other stays
  among them (KAI's fair share divides a parent's resources among its children only); the tenant's own limit is its
  quota plus its borrowingLimit on the pool in units, or `-1` without one (the cohort's Queue still caps it). KAI
  lends all of a queue's unused quota and takes it back by reclaiming, so `lendingLimit` is refused before compile
  (GS515).
- A tenant with several namespaces: each leaf may use up to the tenant's limit on the pool (the parent caps their
  sum) and is guaranteed an even part of its quota (the remainder to the first namespaces, in blueprint order).
- KAI itself is one pinned Helm release (chart `kai-scheduler`, OCI), installed with `--wait` before the Queues and
  shards, so their CRDs exist. Its values write out the node-pool label key, the queues the chart makes for
  workloads that name none (`default-parent-queue`, `default-queue`: nothing guaranteed, no cap; in the default
  shard) and the queue label key the admission policy (kai_rules.py) reads, so all say what the cluster runs.
"""

from __future__ import annotations

from typing import Any

from gpustack.context import Context
from gpustack.model import Tenant
from gpustack.names import MANAGED_BY, POOL_LABEL, TENANT_LABEL
from gpustack.plan import FamilyOutput, HelmRelease, Manifest, Object
from gpustack.schedulers import (
    KAI_NODE_POOL_LABEL,
    KAI_QUEUE_LABEL,
    KAI_UNLIMITED,
    kai_cohort_queue,
    kai_gpu_quota,
    kai_leaf_queue,
    kai_parent_queue,
    kai_pools,
    kai_shard_pools,
    kai_tenants,
)

FAMILY = "kai"
QUEUES_FILE = "kai/queues.yaml"
SHARDS_FILE = "kai/shards.yaml"
VALUES_FILE = "kai/values.yaml"
RELEASE_NAME = "kai-scheduler"
CHART_NAME = "kai-scheduler"
# KAI Scheduler v0.17.0, the release whose CRDs (Queue v2, PodGroup, SchedulingShard) the compiled objects are checked
# against; the chart is published only as an OCI artifact, its versions with a leading v.
CHART_VERSION = "v0.17.0"
CHART_REPOSITORY = "oci://ghcr.io/kai-scheduler/kai-scheduler"
NAMESPACE = "kai-scheduler"
QUEUE_API_VERSION = "scheduling.run.ai/v2"
SHARD_API_VERSION = "kai.scheduler/v1"
UNLIMITED = KAI_UNLIMITED
OVER_QUOTA_WEIGHT = 1
DEFAULT_PARENT_QUEUE = "default-parent-queue"
DEFAULT_QUEUE = "default-queue"


def compile_kai(ctx: Context) -> FamilyOutput:
    tenants = kai_tenants(ctx)
    if not tenants:
        return FamilyOutput()
    shards = [Manifest(FAMILY, SHARDS_FILE, scheduling_shard(pool)) for pool in kai_shard_pools(ctx)]
    queues = [*cohort_queues(ctx, tenants), *(obj for tenant in tenants for obj in tenant_queues(tenant))]
    objects = [*shards, *(Manifest(FAMILY, QUEUES_FILE, obj) for obj in queues)]
    release = HelmRelease(
        name=RELEASE_NAME,
        chart=CHART_NAME,
        repository=CHART_REPOSITORY,
        version=CHART_VERSION,
        namespace=NAMESPACE,
        values=chart_values(),
        values_file=VALUES_FILE,
        # The chart's pre-install hook upgrades the CRDs and its post-install hook writes the kai-config Config the
        # operator builds the scheduler from: without them nothing schedules.
        needs_hooks=True,
    )
    return FamilyOutput(objects=objects, releases=[release])


def chart_values() -> Object:
    """The node-pool label the shards partition by, the chart's own default queues written out (what a workload naming
    no queue gets), and the queue label."""
    open_resource = {"quota": 0, "limit": UNLIMITED, "overQuotaWeight": OVER_QUOTA_WEIGHT}
    resources = {name: dict(open_resource) for name in ("cpu", "gpu", "memory")}
    return {
        # gpuSharing stays off (the chart's default, written out): KAI's fractions are refused (kai_rules.py).
        "global": {"nodePoolLabelKey": KAI_NODE_POOL_LABEL, "gpuSharing": False},
        "defaultQueue": {
            "createDefaultQueue": True,
            "parentName": DEFAULT_PARENT_QUEUE,
            "childName": DEFAULT_QUEUE,
            "parentResources": resources,
            "childResources": {name: dict(value) for name, value in resources.items()},
        },
        "podgrouper": {"queueLabelKey": KAI_QUEUE_LABEL},
    }


def scheduling_shard(pool: str) -> Object:
    """The pool's shard: a KAI scheduler of its own for the nodes, Queues and PodGroups labelled with the pool."""
    return {
        "apiVersion": SHARD_API_VERSION,
        "kind": "SchedulingShard",
        "metadata": {"name": pool, "labels": {**MANAGED_BY, POOL_LABEL: pool}},
        "spec": {"partitionLabelValue": pool},
    }


def _resources(gpu_quota: int, gpu_limit: int) -> dict[str, Any]:
    unlimited = {"quota": UNLIMITED, "limit": UNLIMITED, "overQuotaWeight": OVER_QUOTA_WEIGHT}
    return {
        "cpu": dict(unlimited),
        "gpu": {"quota": gpu_quota, "limit": gpu_limit, "overQuotaWeight": OVER_QUOTA_WEIGHT},
        "memory": dict(unlimited),
    }


def leaf_quotas(quota: int, count: int) -> list[int]:
    """An even part of the tenant's quota per namespace; the remainder to the first ones."""
    share, rest = divmod(quota, count)
    return [share + (1 if index < rest else 0) for index in range(count)]


def _queue(name: str, pool: str, tenant: Tenant | None, resources: dict[str, Any], parent: str | None = None) -> Object:
    # The pool label puts the Queue in the pool's shard (KAI_NODE_POOL_LABEL); the tenant label says whose it is.
    labels = {**MANAGED_BY, KAI_NODE_POOL_LABEL: pool}
    if tenant is not None:
        labels[TENANT_LABEL] = tenant.name
    owner = f"gpustack tenant {tenant.name}" if tenant else f"gpustack cohort {name.rsplit('.', 1)[0]}"
    spec: dict[str, Any] = {"displayName": f"{owner} on pool {pool}"}
    if parent is not None:
        spec["parentQueue"] = parent
    spec["resources"] = resources
    return {
        "apiVersion": QUEUE_API_VERSION,
        "kind": "Queue",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
    }


def cohort_queues(ctx: Context, tenants: list[Tenant]) -> list[Object]:
    """A Queue per cohort and pool, above its tenants' parents in the pool's shard: guaranteed their quotas' sum
    there and capped at it (or uncapped where one of them holds the pool whole), so borrowing stays in the cohort."""
    members: dict[tuple[str, str], list[Tenant]] = {}
    for tenant in tenants:
        for pool in kai_pools(tenant):
            cohort = kai_cohort_queue(tenant, pool)
            if cohort is not None:
                members.setdefault((cohort, pool), []).append(tenant)
    order = {pool: index for index, pool in enumerate(kai_shard_pools(ctx))}
    queues = []
    for (name, pool), group in sorted(members.items(), key=lambda item: (item[0][0], order[item[0][1]])):
        quota = sum(kai_gpu_quota(t, pool)[0] for t in group)
        whole = any(t.unlimited_on(pool) for t in group)
        queues.append(_queue(name, pool, None, _resources(quota, UNLIMITED if whole else quota)))
    return queues


def tenant_queues(tenant: Tenant) -> list[Object]:
    """In each of the tenant's pools: its parent Queue, then a leaf per namespace."""
    queues = []
    for pool in kai_pools(tenant):
        quota, limit = kai_gpu_quota(tenant, pool)
        parent = kai_parent_queue(tenant, pool)
        queues.append(_queue(parent, pool, tenant, _resources(quota, limit), kai_cohort_queue(tenant, pool)))
        shares = leaf_quotas(quota, len(tenant.namespaces))
        for namespace, share in zip(tenant.namespaces, shares, strict=True):
            leaf = kai_leaf_queue(tenant, namespace, pool)
            queues.append(_queue(leaf, pool, tenant, _resources(share, limit), parent))
    return queues

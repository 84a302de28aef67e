"""NVIDIA KAI Scheduler for tenants with `scheduler: kai`: a parent Queue per tenant, a leaf Queue per namespace.

- KAI's Queue (scheduling.run.ai/v2) is cluster-scoped and hierarchical; only leaves take jobs. The parent, named
  after the tenant, holds the tenant's quota; each of its namespaces gets a leaf `<tenant>.<namespace>` under it, and
  its workloads name that leaf with the `kai.scheduler/queue` label (workloads.py).
- Units are KAI's (docs/queues, and the CRD's field descriptions): `gpu` in GPU units, where a whole GPU counts 1
  and a MIG device the number before `g` in its profile (mig-3g.40gb: 3); `cpu` in millicores and `memory` in MB
  (10^6 bytes); `-1` is unlimited. gpustack's quotas are on GPUs only, so cpu and memory are `-1` (guaranteed and
  uncapped, as without KAI): a quota of 0 there would make every job over its quota, and preemptible, for the
  cpu it asks for.
- `gpu.quota` (guaranteed) is the tenant's quota in units; `gpu.limit` (the hard cap) is the same, or `-1` when the
  tenant holds a pool whole (`quota: {<pool>: unlimited}`: its ResourceQuota has no ceiling there either; a pool
  with no quota entry is closed, 0, GS610). KAI's `gpu` is
  one number for every GPU resource: it caps neither a pool nor a MIG profile, so the per-name ResourceQuota in
  each namespace stays the hard per-model limit (docs/kai.md).
- A tenant in a cohort (`kai.cohort`, Kueue's words): its parent goes under a Queue named after the cohort, whose
  quota and limit are its tenants' quotas summed, so what they lend each other stays among them (KAI's fair share
  divides a parent's resources among its children only); the tenant's own limit is its quota plus its
  borrowingLimit in units, or `-1` without one (the cohort's Queue still caps it). KAI lends all of a queue's unused
  quota and takes it back by reclaiming, so `lendingLimit` is refused before compile (GS515).
- A tenant with several namespaces: each leaf may use up to the tenant's limit (the parent caps their sum) and
  is guaranteed an even part of its quota (the remainder to the first namespaces, in blueprint order).
- KAI itself is one pinned Helm release (chart `kai-scheduler`, OCI), installed with `--wait` before the Queues, so
  their CRDs exist. Its values write out the queues the chart makes for workloads that name none
  (`default-parent-queue`, `default-queue`: nothing guaranteed, no cap) and the queue label key the admission
  policy (kai_rules.py) reads, so both say what the cluster runs.
"""

from __future__ import annotations

from typing import Any

from gpustack.context import Context
from gpustack.model import Tenant
from gpustack.names import MANAGED_BY, TENANT_LABEL
from gpustack.plan import FamilyOutput, HelmRelease, Manifest, Object
from gpustack.schedulers import (
    KAI_QUEUE_LABEL,
    KAI_UNLIMITED,
    kai_cohort_queue,
    kai_gpu_quota,
    kai_leaf_queue,
    kai_parent_queue,
    kai_tenants,
)

FAMILY = "kai"
QUEUES_FILE = "kai/queues.yaml"
VALUES_FILE = "kai/values.yaml"
RELEASE_NAME = "kai-scheduler"
CHART_NAME = "kai-scheduler"
# KAI Scheduler v0.17.0, the release whose CRDs (Queue v2, PodGroup) the compiled objects are checked against; the
# chart is published only as an OCI artifact, its versions with a leading v.
CHART_VERSION = "v0.17.0"
CHART_REPOSITORY = "oci://ghcr.io/kai-scheduler/kai-scheduler"
NAMESPACE = "kai-scheduler"
QUEUE_API_VERSION = "scheduling.run.ai/v2"
UNLIMITED = KAI_UNLIMITED
OVER_QUOTA_WEIGHT = 1
DEFAULT_PARENT_QUEUE = "default-parent-queue"
DEFAULT_QUEUE = "default-queue"


def compile_kai(ctx: Context) -> FamilyOutput:
    tenants = kai_tenants(ctx)
    if not tenants:
        return FamilyOutput()
    queues = [*cohort_queues(tenants), *(obj for tenant in tenants for obj in tenant_queues(tenant))]
    objects = [Manifest(FAMILY, QUEUES_FILE, obj) for obj in queues]
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
    """The chart's own default queues, written out (what a workload naming no queue gets), and the queue label."""
    open_resource = {"quota": 0, "limit": UNLIMITED, "overQuotaWeight": OVER_QUOTA_WEIGHT}
    resources = {name: dict(open_resource) for name in ("cpu", "gpu", "memory")}
    return {
        "defaultQueue": {
            "createDefaultQueue": True,
            "parentName": DEFAULT_PARENT_QUEUE,
            "childName": DEFAULT_QUEUE,
            "parentResources": resources,
            "childResources": {name: dict(value) for name, value in resources.items()},
        },
        "podgrouper": {"queueLabelKey": KAI_QUEUE_LABEL},
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


def _queue(name: str, tenant: Tenant | None, resources: dict[str, Any], parent: str | None = None) -> Object:
    labels = dict(MANAGED_BY)
    if tenant is not None:
        labels[TENANT_LABEL] = tenant.name
    spec: dict[str, Any] = {"displayName": f"gpustack tenant {tenant.name}" if tenant else f"gpustack cohort {name}"}
    if parent is not None:
        spec["parentQueue"] = parent
    spec["resources"] = resources
    return {
        "apiVersion": QUEUE_API_VERSION,
        "kind": "Queue",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
    }


def cohort_queues(tenants: list[Tenant]) -> list[Object]:
    """A Queue per cohort, above its tenants' parents: guaranteed their quotas' sum and capped at it (or uncapped
    where one of them holds a pool whole), so borrowing happens inside the cohort only."""
    members: dict[str, list[Tenant]] = {}
    for tenant in tenants:
        cohort = kai_cohort_queue(tenant)
        if cohort is not None:
            members.setdefault(cohort, []).append(tenant)
    queues = []
    for name, group in sorted(members.items()):
        quota = sum(kai_gpu_quota(t)[0] for t in group)
        whole = any(t.unlimited_on(pool) for t in group for pool in t.pools)
        queues.append(_queue(name, None, _resources(quota, UNLIMITED if whole else quota)))
    return queues


def tenant_queues(tenant: Tenant) -> list[Object]:
    quota, limit = kai_gpu_quota(tenant)
    parent = kai_parent_queue(tenant)
    queues = [_queue(parent, tenant, _resources(quota, limit), kai_cohort_queue(tenant))]
    for namespace, share in zip(tenant.namespaces, leaf_quotas(quota, len(tenant.namespaces)), strict=True):
        queues.append(_queue(kai_leaf_queue(tenant, namespace), tenant, _resources(share, limit), parent))
    return queues

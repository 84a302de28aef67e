"""Kueue for tenants with `scheduler: kueue`: a ResourceFlavor per pool they use, a ClusterQueue per tenant and a
LocalQueue per tenant namespace.

Why each piece looks the way it does:
- One ResourceFlavor per pool, matched by gpustack's pool label: Kueue charges quota per (flavor, resource), so two
  pools that advertise the same `nvidia.com/gpu` (an A100 and an H100 pool) get separate amounts. This is the
  per-GPU-model quota a ResourceQuota cannot express (GS506). The flavor lists the pool's taints and the matching
  tolerations, which Kueue injects into the pods it admits to that flavor.
- One resource group per ClusterQueue, covering cpu, memory and every resource the tenant's pools advertise:
  Kueue refuses a workload that requests a resource its ClusterQueue does not cover ("resource ... unavailable in
  ClusterQueue"), and the tenant's LimitRange gives every container cpu/memory requests and `nvidia.com/...: "0"`
  defaults for all its pools' resources. A flavor may sit in only one group and must list every resource of it, so
  one group, with 0 for what a pool does not advertise, is the shape that covers them all.
- Nominal quota is the blueprint's quota for the pool. A resource the pool's quota does not name gets 0, as if the
  blueprint wrote it (N4: a tenant granted a mixed pool's MIG slices gets none of its whole GPUs), and so does every
  resource of a pool it has no quota entry for (closed, GS610); a pool whose quota is `unlimited` is granted whole,
  every resource at the pool's capacity. cpu and memory get the pool's
  allocatable (nodeResources x nodes): gpustack limits GPUs, and Kueue must not hold a job back for CPU the nodes
  have (GS508 requires nodeResources on these pools, since there is no other sound amount).
- `namespaceSelector` on the tenant's namespaces BY NAME (`kubernetes.io/metadata.name`, which the API server
  sets and nobody can change), as the admission policies bind them: only the tenant's namespaces may use its
  ClusterQueue, and relabelling a namespace `gpustack.io/tenant` neither joins nor leaves it.
- The LocalQueue is named `default` so Kueue's LocalQueueDefaulting also queues workloads without the label, and
  the ClusterQueue holds one total across all the tenant's namespaces (what GS507 warns a ResourceQuota cannot).
"""

from __future__ import annotations

from typing import Any

from gpustack.context import Context
from gpustack.model import (
    DEFAULT_KUEUE_CHART_VERSION,
    KUEUE_CHART_REPOSITORY,
    KUEUE_V1BETA1,
    NodePool,
    SharingStrategy,
    Tenant,
    amounts_for,
)
from gpustack.names import KUEUE_LOCAL_QUEUE, MANAGED_BY, POOL_LABEL, TENANT_LABEL
from gpustack.offers import full_resource_name
from gpustack.plan import Artifact, FamilyOutput, HelmRelease, Manifest, Object
from gpustack.schedulers import CPU, MAX_FLAVOR_TAINTS, MEMORY, kueue_tenants, nominal_quota
from gpustack.taints import taint_object
from gpustack.workloads import tolerations

FAMILY = "kueue"
# Set by the API server on every namespace and immutable; the admission policies bind tenants by it too.
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
FLAVORS_FILE = "kueue/resource-flavors.yaml"
README_FILE = "kueue/README.md"
VALUES_FILE = "kueue/values.yaml"
RELEASE_NAME = "kueue"
CHART_NAME = "kueue"
# The Kueue release the objects were checked against (its CRDs, CEL rules included). Its chart is published only as
# an OCI artifact: the release's repository is the OCI registry path, and helm and Pulumi take the full reference.
KUEUE_VERSION = DEFAULT_KUEUE_CHART_VERSION
KUEUE_CHART = f"{KUEUE_CHART_REPOSITORY}/{CHART_NAME}"


def queued_pools(ctx: Context, tenant: Tenant) -> list[NodePool]:
    """The tenant's pools that become flavors, in the tenant's order (Kueue tries flavors in that order)."""
    return [ctx.pools[name] for name in tenant.pools if name in ctx.pools and ctx.offers.get(name)]


def cluster_queue_name(tenant: Tenant) -> str:
    return tenant.name


def flavor_name(pool: NodePool) -> str:
    return pool.name


def compile_kueue(ctx: Context) -> FamilyOutput:
    output = FamilyOutput()
    tenants = kueue_tenants(ctx)
    api_version = ctx.blueprint.kueue.api_version
    pools: dict[str, NodePool] = {}
    for tenant in tenants:
        for pool in queued_pools(ctx, tenant):
            pools.setdefault(pool.name, pool)
    output.objects += [Manifest(FAMILY, FLAVORS_FILE, resource_flavor(pool, api_version)) for pool in pools.values()]
    for tenant in tenants:
        queue = cluster_queue(ctx, tenant, api_version)
        if queue is None:
            continue
        file = f"kueue/{tenant.name}.yaml"
        output.objects.append(Manifest(FAMILY, file, queue))
        output.objects += [Manifest(FAMILY, file, local_queue(tenant, ns, api_version)) for ns in tenant.namespaces]
    if tenants:
        settings = ctx.blueprint.kueue
        output.releases.append(
            HelmRelease(
                name=RELEASE_NAME,
                chart=CHART_NAME,
                repository=KUEUE_CHART_REPOSITORY,
                version=settings.chart_version,
                namespace=settings.namespace,
                # The chart's defaults: the configuration (integrations, LocalQueueDefaulting) the README describes.
                values={},
                values_file=VALUES_FILE,
                # No hooks needed: the controller makes its own webhook certificate (internal cert management);
                # the chart's only hooks are the opt-in autoKueue ones.
            )
        )
        output.artifacts.append(Artifact(README_FILE, render_readme(ctx), "Kueue's queues, and how Kueue is installed"))
    return output


def render_readme(ctx: Context) -> str:
    settings = ctx.blueprint.kueue
    rows = "\n".join(
        f"| `{t.name}` | `{cluster_queue_name(t)}` | {', '.join(f'`{p}`' for p in t.pools)} | "
        f"{f'`{t.cohort.name}`' if t.cohort is not None else '-'} | {', '.join(f'`{n}`' for n in t.namespaces)} |"
        for t in kueue_tenants(ctx)
    )
    hami = any(
        pool.sharing.strategy is SharingStrategy.HAMI for t in kueue_tenants(ctx) for pool in queued_pools(ctx, t)
    )
    hami_note = (
        "- Kueue charges HAMi's `nvidia.com/gpumem` and `nvidia.com/gpucores` per container, while HAMi applies them\n"
        "  per GPU: a pod asking for 2 GPUs is charged half of the memory it gets (Kueue's resource transformations\n"
        "  can multiply them by `nvidia.com/gpu`).\n"
        if hami
        else ""
    )
    return f"""# Kueue queues for blueprint '{ctx.blueprint.name}'

Generated by gpustack. Edit the blueprint, not this file.

Kueue is installed as a Helm release of this output (its values: `{VALUES_FILE}`), before these objects are
applied, by the `helm upgrade --install` in the top-level README or by `pulumi up` (Kueue v0.15 and newer serve
`kueue.x-k8s.io/v1beta2`; the objects were checked against the CRDs of v{KUEUE_VERSION}):

```sh
helm upgrade --install {RELEASE_NAME} {KUEUE_CHART} --version {settings.chart_version} \\
  --namespace {settings.namespace} --create-namespace -f {VALUES_FILE}
```

| tenant | ClusterQueue | flavors (pools, in order of preference) | cohort | namespaces with a LocalQueue `default` |
|---|---|---|---|---|
{rows}

Notes:

- Quota is per pool: each pool is a ResourceFlavor, so an A100 pool and an H100 pool keep separate amounts even
  though both advertise `nvidia.com/gpu`. A resource the tenant's quota on a pool does not name has a nominal
  quota of 0, as if the blueprint wrote it (in a cohort the tenant may still borrow it, up to its borrowingLimit);
  a pool the tenant's quota has no entry for is closed (0 of every resource), and a pool whose quota is
  `unlimited` is limited only by what the pool has.
- The ClusterQueue is the limit. Each tenant namespace also keeps a ResourceQuota, as a ceiling only: per resource
  the nominal quota plus what the tenant may borrow from its cohort (its borrowingLimit, or the whole pool where
  the cohort sets none), so the API server never refuses a pod Kueue admitted on borrowed quota.
- cpu and memory are covered with the pools' allocatable (nodeResources x nodes): Kueue admits nothing whose
  resources its ClusterQueue does not cover, and gpustack limits GPUs, not the CPU that comes with them.
- gpustack's workload templates carry `kueue.x-k8s.io/queue-name: default`. Workloads without the label are
  queued too where Kueue's LocalQueueDefaulting is on (the default since v0.12), for the kinds Kueue's
  `integrations.frameworks` manage (Jobs, JobSets, LeaderWorkerSets, Deployments, StatefulSets and Pods among
  them in its default configuration; Kueue admits a JobSet as one workload, a LeaderWorkerSet group as one).
{hami_note}"""


def resource_flavor(pool: NodePool, api_version: str) -> Object:
    # A selector pool's exact labels are the ones its provider sets: Kueue's nodeSelector then holds from a node's
    # first moment; nodeLabels is a plain map, so expressions fall back to gpustack's pool label.
    labels = dict(pool.selector.match_labels) if pool.selector is not None else {}
    spec: dict[str, Any] = {"nodeLabels": labels or {POOL_LABEL: pool.name}}
    if pool.taints:
        # Both, as the pattern asks: nodeTaints say what the nodes carry; tolerations are what Kueue injects
        # into admitted pods (and, listed together, make Kueue skip the taint check at admission).
        spec["nodeTaints"] = [taint_object(t) for t in pool.taints][:MAX_FLAVOR_TAINTS]
        spec["tolerations"] = tolerations(pool)[:MAX_FLAVOR_TAINTS]
    return {
        "apiVersion": api_version,
        "kind": "ResourceFlavor",
        "metadata": {"name": flavor_name(pool), "labels": {**MANAGED_BY, POOL_LABEL: pool.name}},
        "spec": spec,
    }


def covered_resources(ctx: Context, tenant: Tenant) -> list[str]:
    """cpu, memory, then every resource the tenant's pools advertise, sorted."""
    names = {offer.resource for pool in queued_pools(ctx, tenant) for offer in ctx.offers[pool.name]}
    return [CPU, MEMORY, *sorted(names)]


def _limits(amounts: tuple[tuple[str, tuple[tuple[str, int], ...]], ...], pool: str) -> dict[str, int]:
    return {full_resource_name(short): amount for short, amount in amounts_for(amounts, pool).items()}


def cluster_queue(ctx: Context, tenant: Tenant, api_version: str) -> Object | None:
    covered = covered_resources(ctx, tenant)
    cohort = tenant.cohort
    flavors = []
    for pool in queued_pools(ctx, tenant):
        borrowing = _limits(cohort.borrowing_limit, pool.name) if cohort is not None else {}
        lending = _limits(cohort.lending_limit, pool.name) if cohort is not None else {}
        resources = []
        for resource in covered:
            entry: dict[str, Any] = {"name": resource, "nominalQuota": nominal_quota(ctx, tenant, pool, resource)}
            if resource in borrowing:
                entry["borrowingLimit"] = borrowing[resource]
            if resource in lending:
                entry["lendingLimit"] = lending[resource]
            resources.append(entry)
        flavors.append({"name": flavor_name(pool), "resources": resources})
    if not flavors:
        return None
    names = {"key": NAMESPACE_NAME_LABEL, "operator": "In", "values": sorted(set(tenant.namespaces))}
    spec: dict[str, Any] = {"namespaceSelector": {"matchExpressions": [names]}}
    if cohort is not None:
        # v1beta2 renamed the field: `cohort` in v1beta1 is `cohortName` in v1beta2.
        spec["cohort" if api_version == KUEUE_V1BETA1 else "cohortName"] = cohort.name
        # Nominal quota is the tenant's own: a workload that fits in it may evict what others borrowed, or quota
        # lent out would come back only when the borrower's (possibly days-long) GPU jobs end.
        spec["preemption"] = {"reclaimWithinCohort": "Any"}
    spec["resourceGroups"] = [{"coveredResources": covered, "flavors": flavors}]
    return {
        "apiVersion": api_version,
        "kind": "ClusterQueue",
        "metadata": {"name": cluster_queue_name(tenant), "labels": {**MANAGED_BY, TENANT_LABEL: tenant.name}},
        "spec": spec,
    }


def local_queue(tenant: Tenant, namespace: str, api_version: str) -> Object:
    return {
        "apiVersion": api_version,
        "kind": "LocalQueue",
        "metadata": {
            "name": KUEUE_LOCAL_QUEUE,
            "namespace": namespace,
            "labels": {**MANAGED_BY, TENANT_LABEL: tenant.name},
        },
        "spec": {"clusterQueue": cluster_queue_name(tenant)},
    }

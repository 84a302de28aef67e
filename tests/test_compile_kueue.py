"""The Kueue family: flavors per pool, a ClusterQueue per tenant that admits every pod the tenant can make, LocalQueues.

Kueue admits a workload only if its ClusterQueue covers every resource the pods request (zero amounts included on
older Kueue), only if a flavor's node labels agree with the pods' required node affinity, and only within nominal
quota (plus borrowing). These tests replay those rules over the compiled objects, and check the objects against
Kueue's own CRDs, CEL rules included.
"""

from __future__ import annotations

import functools
from decimal import Decimal
from typing import Any

import manifest_schemas
import pytest
from builders import blueprint, context, sourceless

from gpustack.checks import run_checks
from gpustack.codes import QUOTA_PER_NAMESPACE
from gpustack.compile import compile_blueprint
from gpustack.compile.kueue import KUEUE_CHART, KUEUE_VERSION, compile_kueue
from gpustack.deploy import group_of
from gpustack.model import Blueprint
from gpustack.names import KUEUE_QUEUE_LABEL, POOL_LABEL, TENANT_LABEL
from gpustack.plan import Object, Plan
from gpustack.quantity import parse_quantity
from gpustack.workloads import tolerations

VERSIONS = ("1.31", manifest_schemas.newest_version())
A100: dict[str, Any] = {
    "name": "a100",
    "gpu": {"model": "A100-SXM4-80GB", "count": 8},
    "nodes": ["a1", "a2"],
    "nodeResources": {"cpu": "96", "memory": "1Ti"},
    "taints": [{"key": "gpustack.io/pool", "value": "a100", "effect": "NoSchedule"}],
}
H100: dict[str, Any] = {
    "name": "h100",
    "gpu": {"model": "H100-SXM5-80GB", "count": 8},
    "nodes": ["h1", "h2"],
    "nodeResources": {"cpu": "190.25", "memory": "2000Gi"},
    "taints": [
        {"key": "gpustack.io/pool", "value": "h100", "effect": "NoSchedule"},
        {"key": "example.com/maintenance", "effect": "PreferNoSchedule"},
    ],
}
MIG: dict[str, Any] = {
    "name": "a100-mig",
    "gpu": {"model": "A100-SXM4-80GB", "count": 8},
    "nodes": ["m1"],
    "nodeResources": {"cpu": "96", "memory": "1Ti"},
    "sharing": {"strategy": "mig", "mig": {"strategy": "mixed", "layout": {"3g.40gb": 1, "1g.10gb": 4}}},
}
HAMI: dict[str, Any] = {
    "name": "l4-vgpu",
    "gpu": {"model": "L4", "count": 4},
    "nodes": ["v1"],
    "nodeResources": {"cpu": "32", "memory": "128Gi"},
    "sharing": {"strategy": "hami", "hami": {"splitCount": 4}},
}
TENANTS: list[dict[str, Any]] = [
    {
        "name": "team-a",
        "namespaces": ["team-a", "team-a-dev"],
        "pools": ["a100", "h100", "a100-mig", "l4-vgpu"],
        "scheduler": "kueue",
        "quota": {"a100": {"gpu": 8}, "h100": {"gpu": 0}, "a100-mig": {"mig-1g.10gb": 2}, "l4-vgpu": "unlimited"},
        "kueue": {"cohort": {"name": "gpu-org", "borrowingLimit": {"h100": {"gpu": 4}}}},
    },
    {
        "name": "team-b",
        "namespaces": ["team-b"],
        "pools": ["h100", "a100"],
        "priority": "high",
        "scheduler": "kueue",
        "quota": {"h100": {"gpu": 16}, "a100": {"gpu": 8}},
        "kueue": {"cohort": {"name": "gpu-org", "lendingLimit": {"h100": {"gpu": 4}}}},
    },
    {"name": "solo", "namespaces": ["solo"], "pools": ["a100"], "scheduler": "kueue", "quota": {"a100": {"gpu": 2}}},
    {"name": "plain", "namespaces": ["plain", "plain-dev"], "pools": ["a100"], "quota": {"a100": {"gpu": 4}}},
]
WORKLOADS: list[dict[str, Any]] = [
    {
        "name": "finetune",
        "tenant": "team-a",
        "namespace": "team-a-dev",
        "pool": "a100",
        "kind": "Job",
        "replicas": 2,
        "image": "train:1",
        "gpu": {"count": 4},
    },
    {
        "name": "slice",
        "tenant": "team-a",
        "pool": "a100-mig",
        "kind": "Deployment",
        "image": "s:1",
        "gpu": {"profile": "1g.10gb"},
    },
    {
        "name": "vgpu",
        "tenant": "team-a",
        "pool": "l4-vgpu",
        "kind": "Deployment",
        "image": "v:1",
        "gpu": {"memory": "8Gi", "cores": 25},
    },
    {"name": "chat", "tenant": "team-b", "pool": "h100", "kind": "StatefulSet", "image": "c:1", "gpu": {"count": 8}},
    {"name": "batch", "tenant": "plain", "pool": "a100", "kind": "Job", "image": "b:1", "gpu": {"count": 1}},
]


def sample(api_version: str | None = None) -> Blueprint:
    spec: dict[str, Any] = {"tenants": TENANTS, "workloads": WORKLOADS}
    if api_version is not None:
        spec["kueue"] = {"apiVersion": api_version}
    return blueprint(A100, H100, MIG, HAMI, **spec)


@functools.cache
def plan(api_version: str | None = None) -> Plan:
    return compile_blueprint(sourceless(sample(api_version)))


def kueue_objects(api_version: str | None = None) -> list[Object]:
    return [m.obj for m in plan(api_version).objects if m.family == "kueue"]


def of_kind(kind: str, api_version: str | None = None) -> dict[str, Object]:
    return {
        f"{o['metadata'].get('namespace', '')}/{o['metadata']['name']}".lstrip("/"): o
        for o in kueue_objects(api_version)
        if o["kind"] == kind
    }


def cluster_queue(name: str, api_version: str | None = None) -> Object:
    return of_kind("ClusterQueue", api_version)[name]


def group(queue: Object) -> dict[str, Any]:
    [only] = queue["spec"]["resourceGroups"]
    return only


def quota(queue: Object, flavor: str) -> dict[str, dict[str, Any]]:
    [entry] = [f for f in group(queue)["flavors"] if f["name"] == flavor]
    return {r["name"]: r for r in entry["resources"]}


# --- objects ---------------------------------------------------------------------------------------------------------


def test_what_is_generated_and_where() -> None:
    files = {(m.kind, m.name, m.namespace): m.file for m in plan().objects if m.family == "kueue"}
    assert files == {
        **{
            ("ResourceFlavor", pool, None): "kueue/resource-flavors.yaml"
            for pool in ("a100", "h100", "a100-mig", "l4-vgpu")
        },
        ("ClusterQueue", "team-a", None): "kueue/team-a.yaml",
        ("ClusterQueue", "team-b", None): "kueue/team-b.yaml",
        ("ClusterQueue", "solo", None): "kueue/solo.yaml",
        ("LocalQueue", "default", "team-a"): "kueue/team-a.yaml",
        ("LocalQueue", "default", "team-a-dev"): "kueue/team-a.yaml",
        ("LocalQueue", "default", "team-b"): "kueue/team-b.yaml",
        ("LocalQueue", "default", "solo"): "kueue/solo.yaml",
    }
    assert all(o["apiVersion"] == "kueue.x-k8s.io/v1beta2" for o in kueue_objects())


def test_nothing_without_a_kueue_tenant() -> None:
    bp = blueprint(A100, tenants=[TENANTS[3]])
    assert compile_kueue(context(bp)).objects == []


def test_a_flavor_per_pool_with_its_label_taints_and_tolerations() -> None:
    bp = sample()
    for name, flavor in of_kind("ResourceFlavor").items():
        pool = bp.pool(name)
        assert pool is not None
        assert flavor["spec"]["nodeLabels"] == {POOL_LABEL: name}
        taints = [
            {k: v for k, v in (("key", t.key), ("value", t.value), ("effect", t.effect)) if v is not None}
            for t in pool.taints
        ]
        assert flavor["spec"].get("nodeTaints", []) == taints
        # What Kueue injects into admitted pods: exactly what gpustack's own templates tolerate for the pool.
        assert flavor["spec"].get("tolerations", []) == tolerations(pool)


def test_cluster_queue_is_for_the_tenants_namespaces_only() -> None:
    """Selected by name (the label the API server sets and nobody can change), as the admission policies bind them:
    a namespace relabelled with the tenant's label does not get the tenant's queue, nor does one stripped of it lose it.
    """
    name_label = "kubernetes.io/metadata.name"
    namespaces = {
        m.name: {**m.obj["metadata"]["labels"], name_label: m.name} for m in plan().objects if m.kind == "Namespace"
    }
    for name, queue in of_kind("ClusterQueue").items():
        tenant = sample().tenant(name)
        assert tenant is not None
        selector = queue["spec"]["namespaceSelector"]
        assert selector == {
            "matchExpressions": [{"key": name_label, "operator": "In", "values": sorted(tenant.namespaces)}]
        }
        (expression,) = selector["matchExpressions"]
        forged = {"intruder": {TENANT_LABEL: name, name_label: "intruder"}}
        stripped = {ns: {k: v for k, v in labels.items() if k != TENANT_LABEL} for ns, labels in namespaces.items()}
        for candidates in (namespaces, forged, stripped):
            selected = {
                ns for ns, labels in candidates.items() if labels.get(expression["key"]) in expression["values"]
            }
            assert selected == set(tenant.namespaces) & set(candidates)


def test_covered_resources_are_cpu_memory_and_exactly_what_the_pools_advertise() -> None:
    ctx = context(sample())
    for name, queue in of_kind("ClusterQueue").items():
        tenant = sample().tenant(name)
        assert tenant is not None
        advertised = {o.resource for pool in tenant.pools for o in ctx.offers[pool]}
        covered = group(queue)["coveredResources"]
        assert covered[:2] == ["cpu", "memory"] and set(covered[2:]) == advertised
        # Kueue's CEL: every flavor lists every covered resource, in the same order.
        assert all([r["name"] for r in f["resources"]] == covered for f in group(queue)["flavors"])
        assert [f["name"] for f in group(queue)["flavors"]] == list(tenant.pools)  # preference order


def test_nominal_quota_per_pool_is_per_gpu_model() -> None:
    # a100 and h100 both advertise nvidia.com/gpu: a ResourceQuota sums them, the ClusterQueue keeps them apart.
    team_b = cluster_queue("team-b")
    assert quota(team_b, "h100")["nvidia.com/gpu"]["nominalQuota"] == 16
    assert quota(team_b, "a100")["nvidia.com/gpu"]["nominalQuota"] == 8
    team_a = cluster_queue("team-a")
    assert quota(team_a, "h100")["nvidia.com/gpu"]["nominalQuota"] == 0
    assert quota(team_a, "a100-mig")["nvidia.com/mig-1g.10gb"]["nominalQuota"] == 2
    # Not named in the pool's quota: not granted, 0 as if written (N4; before, the whole pool: 8).
    assert quota(team_a, "a100-mig")["nvidia.com/mig-3g.40gb"]["nominalQuota"] == 0
    # Not advertised by the pool: 0, so no workload is ever charged to the wrong flavor.
    assert quota(team_a, "a100")["nvidia.com/mig-1g.10gb"]["nominalQuota"] == 0
    assert quota(team_a, "a100-mig")["nvidia.com/gpu"]["nominalQuota"] == 0


def test_cpu_and_memory_quota_is_the_pools_allocatable() -> None:
    team_a = cluster_queue("team-a")
    assert quota(team_a, "a100")["cpu"]["nominalQuota"] == 192
    assert quota(team_a, "a100")["memory"]["nominalQuota"] == "2Ti"
    assert quota(team_a, "h100")["cpu"]["nominalQuota"] == "380500m"  # 2 x 190.25 cores
    assert quota(team_a, "h100")["memory"]["nominalQuota"] == "4000Gi"


def test_hami_pool_is_covered_with_gpumem_and_gpucores() -> None:
    entry = quota(cluster_queue("team-a"), "l4-vgpu")
    assert entry["nvidia.com/gpu"]["nominalQuota"] == 16  # 4 GPUs x splitCount 4
    assert entry["nvidia.com/gpumem"]["nominalQuota"] == 4 * 24 * 1024
    assert entry["nvidia.com/gpucores"]["nominalQuota"] == 400


def test_cohort_borrowing_and_lending() -> None:
    team_a, team_b, solo = cluster_queue("team-a"), cluster_queue("team-b"), cluster_queue("solo")
    assert team_a["spec"]["cohortName"] == team_b["spec"]["cohortName"] == "gpu-org"
    assert quota(team_a, "h100")["nvidia.com/gpu"]["borrowingLimit"] == 4
    assert "borrowingLimit" not in quota(team_a, "a100")["nvidia.com/gpu"]
    assert quota(team_b, "h100")["nvidia.com/gpu"]["lendingLimit"] == 4
    assert team_a["spec"]["preemption"] == {"reclaimWithinCohort": "Any"}  # lent quota comes back
    assert "cohortName" not in solo["spec"] and "preemption" not in solo["spec"]


def test_v1beta1_names_the_cohort_field_cohort() -> None:
    queue = cluster_queue("team-a", "kueue.x-k8s.io/v1beta1")
    assert queue["apiVersion"] == "kueue.x-k8s.io/v1beta1"
    assert queue["spec"]["cohort"] == "gpu-org" and "cohortName" not in queue["spec"]
    assert all(o["apiVersion"] == "kueue.x-k8s.io/v1beta1" for o in kueue_objects("kueue.x-k8s.io/v1beta1"))


def test_a_local_queue_named_default_in_every_tenant_namespace() -> None:
    for key, local in of_kind("LocalQueue").items():
        namespace, name = key.split("/")
        assert name == "default"  # Kueue's LocalQueueDefaulting sends unlabelled workloads here
        tenant = next(t for t in sample().tenants if namespace in t.namespaces)
        assert local["spec"] == {"clusterQueue": tenant.name}


# --- what Kueue would do with the compiled workloads ----------------------------------------------------------------


def workload_objects(tenant: str) -> list[Object]:
    return [
        m.obj
        for m in plan().objects
        if m.family == "workloads" and m.kind != "Service" and m.obj["metadata"]["labels"][TENANT_LABEL] == tenant
    ]


def test_kueue_tenants_workloads_name_their_local_queue() -> None:
    for tenant in ("team-a", "team-b"):
        for obj in workload_objects(tenant):
            assert obj["metadata"]["labels"][KUEUE_QUEUE_LABEL] == "default", obj["metadata"]["name"]
            assert KUEUE_QUEUE_LABEL not in obj["spec"]["template"]["metadata"]["labels"]  # Kueue manages the pods
    assert all(KUEUE_QUEUE_LABEL not in o["metadata"]["labels"] for o in workload_objects("plain"))


def limit_range_defaults(namespace: str) -> dict[str, str]:
    [limit_range] = [m.obj for m in plan().objects if m.kind == "LimitRange" and m.namespace == namespace]
    [item] = limit_range["spec"]["limits"]
    return {**item.get("defaultRequest", {}), **item.get("default", {})}


def effective_requests(container: dict[str, Any], namespace: str) -> dict[str, Decimal]:
    """A container's requests after LimitRange defaulting, as Kueue computes them for a workload."""
    requests = dict(limit_range_defaults(namespace))
    requests.update(container["resources"].get("requests", {}))
    return {name: parse_quantity(value) for name, value in requests.items()}


def admitting_flavor(queue: Object, pod: dict[str, Any]) -> str:
    """The flavor Kueue would assign: nodeLabels must agree with the pod's required node affinity."""
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    flavors = of_kind("ResourceFlavor")
    for entry in group(queue)["flavors"]:
        labels = flavors[entry["name"]]["spec"]["nodeLabels"]
        if any(all(labels.get(e["key"]) in e["values"] for e in term["matchExpressions"]) for term in terms):
            return str(entry["name"])
    raise AssertionError("no flavor of the ClusterQueue matches the pod's node affinity")


@pytest.mark.parametrize("tenant", ["team-a", "team-b"])
def test_every_pod_is_admissible_to_its_pools_flavor(tenant: str) -> None:
    queue = cluster_queue(tenant)
    covered = set(group(queue)["coveredResources"])
    for obj in workload_objects(tenant):
        pod = obj["spec"]["template"]["spec"]
        flavor = admitting_flavor(queue, pod)
        assert flavor == obj["metadata"]["labels"][POOL_LABEL]
        available = quota(queue, flavor)
        for container in pod["containers"]:
            requests = effective_requests(container, obj["metadata"]["namespace"])
            # "resource X unavailable in ClusterQueue": LimitRange's zero defaults included.
            assert set(requests) <= covered, set(requests) - covered
            for name, amount in requests.items():
                entry = available[name]
                ceiling = parse_quantity(entry["nominalQuota"]) + parse_quantity(entry.get("borrowingLimit", 0))
                assert amount <= ceiling, (obj["metadata"]["name"], name)


def test_a_tenant_with_two_namespaces_on_kueue_gets_no_gs507() -> None:
    codes = {(d.code, d.path[:3]) for d in run_checks(sourceless(sample()))}
    assert (QUOTA_PER_NAMESPACE, ("spec", "tenants", 3)) in codes  # 'plain': a ResourceQuota per namespace
    assert (QUOTA_PER_NAMESPACE, ("spec", "tenants", 0)) not in codes  # 'team-a': one ClusterQueue for both namespaces
    assert plan().diagnostics == ()  # compile reports nothing the checks did not


def test_kueue_objects_apply_with_the_custom_resources() -> None:
    assert {group_of(m) for m in plan().objects if m.family == "kueue"} == {"custom-resources"}


# --- upstream CRDs ---------------------------------------------------------------------------------------------------


@pytest.mark.conformance
@pytest.mark.parametrize("api_version", ["kueue.x-k8s.io/v1beta2", "kueue.x-k8s.io/v1beta1"])
def test_every_kueue_object_passes_kueues_crds_and_cel_rules(api_version: str) -> None:
    manifest_schemas.skip_without_crds()
    for obj in kueue_objects(api_version):
        for version in VERSIONS:
            assert manifest_schemas.validate_any(obj, version) == [], obj["metadata"]["name"]


@pytest.mark.conformance
def test_the_cel_rules_are_really_evaluated() -> None:
    manifest_schemas.skip_without_crds()
    queue = cluster_queue("team-a")
    without_cohort = {
        **queue,
        "spec": {k: v for k, v in queue["spec"].items() if k not in ("cohortName", "preemption")},
    }
    assert any(
        "borrowingLimit must be nil when cohort is empty" in e
        for e in manifest_schemas.validate_any(without_cohort, "1.31")
    )
    spec = group(queue)
    short = {**spec, "flavors": [{**spec["flavors"][0], "resources": spec["flavors"][0]["resources"][:-1]}]}
    broken = {**queue, "spec": {**queue["spec"], "resourceGroups": [short]}}
    assert any("same number of resources" in e for e in manifest_schemas.validate_any(broken, "1.31"))


@pytest.mark.parametrize("version", VERSIONS)
def test_the_workloads_stay_valid_core_objects(version: str) -> None:
    for tenant in ("team-a", "team-b"):
        for obj in workload_objects(tenant):
            assert manifest_schemas.validate_any(obj, version) == []


def test_readme_says_how_to_install_the_pinned_kueue() -> None:
    [readme] = [a for a in plan().artifacts if a.path == "kueue/README.md"]
    assert f"--version {KUEUE_VERSION}" in readme.text and KUEUE_CHART in readme.text
    for tenant in ("team-a", "team-b", "solo"):
        assert f"| `{tenant}` | `{tenant}` |" in readme.text
    assert "HAMi" in readme.text  # team-a queues on a HAMi pool: Kueue counts gpumem per container

"""NVIDIA KAI Scheduler as a tenant's scheduler (issue 30): Queues from quotas, KAI's release, workloads, checks.

blueprints/kai.yaml: tenant `training` (12 whole H100s, two namespaces) and tenant `serving` (4 H100s, 4 mig-3g.40gb
and 14 mig-1g.10gb on an A100 MIG pool). KAI counts a whole GPU as 1 unit and a MIG device as the number before `g`
in its profile (KAI docs/queues/README.md), so serving's queue holds 4 + 12 + 14 = 30 units.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import manifest_schemas
import pytest
from conftest import BLUEPRINTS

from gpustack.capacity import capacity_data, format_text, measure_capacity
from gpustack.codes import KAI_QUEUE_NAME, KAI_UNCOUNTED_SHARING, SYSTEM_NAMESPACE
from gpustack.compile import compile_blueprint
from gpustack.compile.kai import CHART_REPOSITORY, CHART_VERSION, leaf_quotas
from gpustack.context import Context
from gpustack.plan import Object, Plan
from gpustack.schedulers import KAI_QUEUE_LABEL, KAI_SCHEDULER, kai_gpu_units
from gpustack.validation import validate_path, validate_text

KAI = BLUEPRINTS / "kai.yaml"


@functools.cache
def context() -> Context:
    result = validate_path(KAI)
    assert result.ok and result.context is not None, [d.message for d in result.diagnostics]
    return result.context


@functools.cache
def plan() -> Plan:
    return compile_blueprint(context())


def objects(kind: str, api_prefix: str = "") -> list[Object]:
    return [m.obj for m in plan().objects if m.obj["kind"] == kind and str(m.obj["apiVersion"]).startswith(api_prefix)]


def queues() -> dict[str, Object]:
    return {q["metadata"]["name"]: q for q in objects("Queue", "scheduling.run.ai/")}


def test_a_parent_queue_per_tenant_and_a_leaf_per_namespace() -> None:
    found = queues()
    assert sorted(found) == ["serving", "serving.serving", "training", "training.training", "training.training-dev"]
    assert "parentQueue" not in found["serving"]["spec"] and "parentQueue" not in found["training"]["spec"]
    assert found["serving.serving"]["spec"]["parentQueue"] == "serving"
    assert found["training.training"]["spec"]["parentQueue"] == "training"
    assert found["training.training-dev"]["spec"]["parentQueue"] == "training"


def test_queue_figures_are_the_tenants_quotas_in_kai_units() -> None:
    found = queues()
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    # 12 whole H100s; 4 H100s + 4 x mig-3g (3 units each) + 14 x mig-1g (1 unit each) = 30
    assert found["training"]["spec"]["resources"]["gpu"] == {"quota": 12, "limit": 12, "overQuotaWeight": 1}
    assert found["serving"]["spec"]["resources"]["gpu"] == {"quota": 30, "limit": 30, "overQuotaWeight": 1}
    # each leaf may use up to the tenant's limit; the guarantee is shared evenly
    assert found["training.training"]["spec"]["resources"]["gpu"] == {"quota": 6, "limit": 12, "overQuotaWeight": 1}
    assert found["training.training-dev"]["spec"]["resources"]["gpu"] == {"quota": 6, "limit": 12, "overQuotaWeight": 1}
    assert found["serving.serving"]["spec"]["resources"]["gpu"] == {"quota": 30, "limit": 30, "overQuotaWeight": 1}
    for queue in found.values():  # gpustack quotas GPUs only: cpu (millicores) and memory (MB) stay open
        assert queue["spec"]["resources"]["cpu"] == unlimited
        assert queue["spec"]["resources"]["memory"] == unlimited


@pytest.mark.parametrize(
    ("resource", "units"),
    [
        ("nvidia.com/gpu", 1),
        ("nvidia.com/mig-1g.10gb", 1),
        ("nvidia.com/mig-3g.40gb", 3),
        ("nvidia.com/mig-7g.80gb", 7),
        ("nvidia.com/mig-1g.10gb+me", 1),
        ("nvidia.com/mig-1c.3g.40gb", 3),
        ("nvidia.com/gpu.shared", None),
        ("nvidia.com/mig-1g.10gb.shared", None),
        ("nvidia.com/gpumem", None),
    ],
)
def test_kai_gpu_units(resource: str, units: int | None) -> None:
    assert kai_gpu_units(resource) == units


def test_leaf_quotas_split_evenly_remainder_first() -> None:
    assert leaf_quotas(30, 2) == [15, 15]
    assert leaf_quotas(7, 3) == [3, 2, 2]
    assert sum(leaf_quotas(13, 4)) == 13


def test_kai_queue_does_not_cap_mig_per_profile_the_resource_quota_does() -> None:
    """KAI's one `gpu` number would admit 30 mig-1g.10gb in serving's queue; the ResourceQuota holds it to 14."""
    serving_gpu = queues()["serving"]["spec"]["resources"]["gpu"]["limit"]
    assert serving_gpu >= 30 * kai_gpu_units("nvidia.com/mig-1g.10gb")  # type: ignore[operator]
    hard = {q["metadata"]["namespace"]: q["spec"]["hard"] for q in objects("ResourceQuota")}
    assert hard["serving"]["requests.nvidia.com/mig-1g.10gb"] == "14"
    assert hard["serving"]["requests.nvidia.com/mig-3g.40gb"] == "4"


def test_kai_release_is_pinned_and_waits_for_hooks() -> None:
    releases = {r.name: r for r in plan().releases}
    release = releases["kai-scheduler"]
    assert (release.chart, release.version, release.repository) == ("kai-scheduler", CHART_VERSION, CHART_REPOSITORY)
    assert release.oci and release.needs_hooks and release.namespace == "kai-scheduler"
    default = release.values["defaultQueue"]
    assert (default["parentName"], default["childName"]) == ("default-parent-queue", "default-queue")
    assert release.values["podgrouper"]["queueLabelKey"] == KAI_QUEUE_LABEL


def test_no_kai_objects_without_kai_tenants() -> None:
    result = validate_path(BLUEPRINTS / "kueue.yaml")
    assert result.context is not None
    compiled = compile_blueprint(result.context)
    assert not [m for m in compiled.objects if str(m.obj["apiVersion"]).startswith("scheduling.run.ai")]
    assert "kai-scheduler" not in {r.name for r in compiled.releases}


def _pod_templates(obj: Object) -> list[dict[str, Any]]:
    spec = obj["spec"]
    if obj["kind"] == "JobSet":
        return [r["template"]["spec"]["template"] for r in spec["replicatedJobs"]]
    if obj["kind"] == "LeaderWorkerSet":
        lws = spec["leaderWorkerTemplate"]
        return [t for t in (lws.get("leaderTemplate"), lws["workerTemplate"]) if t is not None]
    return [spec["template"]]


def test_every_pod_template_of_a_kai_tenant_names_kai_and_its_leaf() -> None:
    workloads = [m.obj for m in plan().objects if m.family == "workloads" and m.obj["kind"] != "Service"]
    assert {w["kind"] for w in workloads} == {"Deployment", "JobSet"}
    for workload in workloads:
        namespace = workload["metadata"]["namespace"]
        tenant = workload["metadata"]["labels"]["gpustack.io/tenant"]
        for template in _pod_templates(workload):
            assert template["spec"]["schedulerName"] == KAI_SCHEDULER
            assert template["metadata"]["labels"][KAI_QUEUE_LABEL] == f"{tenant}.{namespace}"


def test_every_compiled_object_is_valid_against_its_schema_or_crd() -> None:
    errors = [error for m in plan().objects for error in manifest_schemas.validate_any(m.obj, "1.33")]
    assert errors == []
    # the KAI Queues went to the upstream CRD, strictly: an unknown field is refused
    queue = dict(queues()["training"])
    broken = {**queue, "spec": {**queue["spec"], "weight": 3}}
    assert manifest_schemas.validate_any(broken, "1.33") != []


# --- checks ---------------------------------------------------------------------------------------------------------


def _diagnostics(text: str) -> list[tuple[str, int]]:
    result = validate_text(text, "kai.yaml")
    return [(d.code, d.span.start.line if d.span else 0) for d in result.diagnostics if d.severity == "error"]


def _source() -> str:
    return Path(KAI).read_text(encoding="utf-8")


def test_tenant_named_like_kais_default_queue_is_refused() -> None:
    text = (
        _source()
        .replace("- name: training\n", "- name: default-queue\n")
        .replace("tenant: training\n", "tenant: default-queue\n")
    )
    found = _diagnostics(text)
    line = text.splitlines().index("    - name: default-queue") + 1
    assert (KAI_QUEUE_NAME, line) in found


def test_leaf_queue_too_long_for_a_label_is_refused() -> None:
    long = "n" * 58  # training.<58> = 67 characters
    text = _source().replace("namespaces: [training, training-dev]", f"namespaces: [training, {long}]")
    assert KAI_QUEUE_NAME in [code for code, _ in _diagnostics(text)]


def test_kai_tenant_on_a_renamed_time_sliced_pool_is_refused_at_its_sharing() -> None:
    text = _source().replace(
        "      taints:\n        - {key: gpustack.io/pool, value: h100, effect: NoSchedule}\n",
        "      taints:\n        - {key: gpustack.io/pool, value: h100, effect: NoSchedule}\n"
        "      sharing:\n        strategy: time-slicing\n"
        "        timeSlicing: {replicas: 2, renameByDefault: true}\n",
    )
    text = text.replace("h100: {gpu: 12}", "h100: {gpu.shared: 12}").replace("h100: {gpu: 4}", "h100: {gpu.shared: 4}")
    line = text.splitlines().index("        strategy: time-slicing") + 1
    found = _diagnostics(text)
    assert (KAI_UNCOUNTED_SHARING, line) in found


def test_kai_tenant_on_time_slicing_without_rename_compiles() -> None:
    """Each replica is an nvidia.com/gpu, which KAI's queue counts as one unit: no refusal."""
    text = _source().replace(
        "      taints:\n        - {key: gpustack.io/pool, value: h100, effect: NoSchedule}\n",
        "      taints:\n        - {key: gpustack.io/pool, value: h100, effect: NoSchedule}\n"
        "      sharing:\n        strategy: time-slicing\n        timeSlicing: {replicas: 2}\n",
    )
    assert KAI_UNCOUNTED_SHARING not in [code for code, _ in _diagnostics(text)]


def test_one_total_across_a_kai_tenants_namespaces_needs_no_per_namespace_warning() -> None:
    """GS507 stays for a KAI tenant whose quota names several resources: the queue caps units, not each name."""
    assert "GS507" not in [d.code for d in validate_path(KAI).diagnostics]
    text = _source().replace("namespaces: [serving]", "namespaces: [serving, serving-canary]")
    assert "GS507" in [d.code for d in validate_text(text, "kai.yaml").diagnostics]


def test_capacity_shows_each_kai_tenants_queue_beside_its_quota() -> None:
    data = capacity_data(measure_capacity(context()), "kai.yaml")
    queues_by_tenant = {t["name"]: t.get("kaiQueue") for t in data["tenants"]}
    assert queues_by_tenant == {
        "training": {"name": "training", "gpuQuota": 12, "gpuLimit": 12},
        "serving": {"name": "serving", "gpuQuota": 30, "gpuLimit": 30},
    }
    text = format_text(data)
    assert "serving (scheduler kai; KAI queue serving: 30 GPU units guaranteed, limit 30" in text
    result = validate_path(BLUEPRINTS / "kueue.yaml")
    assert result.context is not None
    assert all("kaiQueue" not in t for t in capacity_data(measure_capacity(result.context), "k")["tenants"])


@pytest.mark.parametrize("namespace", ["kai-scheduler", "kai-resource-reservation", "kai-scale-adjust"])
def test_a_tenant_may_not_claim_a_namespace_of_kais_own_pods(namespace: str) -> None:
    """KAI's scheduler, binder and GPU-reservation pods run there: a tenant owning it would put its quota and
    admission policy on them (or be handed their GPUs)."""
    text = _source().replace("namespaces: [serving]", f"namespaces: [serving, {namespace}]")
    line = next(i for i, row in enumerate(text.splitlines(), 1) if f"namespaces: [serving, {namespace}]" in row)
    assert (SYSTEM_NAMESPACE, line) in _diagnostics(text)
    assert namespace in context().system_namespaces  # admission policies leave KAI's own pods alone

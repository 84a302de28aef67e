"""NVIDIA KAI Scheduler as a tenant's scheduler (issue 30): Queues from quotas, KAI's release, workloads, checks.

blueprints/kai.yaml: tenant `training` (12 whole H100s, two namespaces) and tenant `serving` (4 H100s, 4 mig-3g.40gb
and 14 mig-1g.10gb on an A100 MIG pool). Each pool is a KAI SchedulingShard (KAI's node-pool label key is gpustack's
pool label), and each tenant has a Queue tree in each of its pools' shards. KAI counts a whole GPU as 1 unit and a
MIG device as the number before `g` in its profile (KAI docs/queues/README.md), so serving's queue in the A100 shard
holds 4 x 3 + 14 = 26 units, and its queue in the H100 shard 4: a limit per GPU model, which one Queue cannot give.
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


def test_a_parent_queue_per_tenant_and_pool_and_a_leaf_per_namespace() -> None:
    found = queues()
    assert sorted(found) == [
        "serving.a100-mig",
        "serving.a100-mig.serving",
        "serving.h100",
        "serving.h100.serving",
        "training.h100",
        "training.h100.training",
        "training.h100.training-dev",
    ]
    for name, queue in found.items():
        tenant, pool, *namespace = name.split(".")
        assert queue["metadata"]["labels"]["gpustack.io/pool"] == pool  # the Queue is in its pool's shard
        assert queue["metadata"]["labels"]["gpustack.io/tenant"] == tenant
        assert queue["spec"].get("parentQueue") == (f"{tenant}.{pool}" if namespace else None)


def test_a_scheduling_shard_per_pool_partitions_by_gpustacks_pool_label() -> None:
    """KAI's docs/operator/scheduling-shards.md: a shard's scheduler considers only nodes, Queues and PodGroups whose
    `<nodePoolLabelKey>` is its `partitionLabelValue`. The key is gpustack's pool label, which every pool's nodes and
    every workload object carry (KAI's pod grouper copies the top owner's labels to the PodGroup)."""
    shards = {o["metadata"]["name"]: o for o in objects("SchedulingShard", "kai.scheduler/")}
    assert sorted(shards) == ["a100-mig", "h100"]
    assert {name: s["spec"] for name, s in shards.items()} == {
        "a100-mig": {"partitionLabelValue": "a100-mig"},
        "h100": {"partitionLabelValue": "h100"},
    }
    release = {r.name: r for r in plan().releases}["kai-scheduler"]
    assert release.values["global"] == {"nodePoolLabelKey": "gpustack.io/pool", "gpuSharing": False}
    for pool in plan().pools:  # what label-nodes.sh (or a selector pool's provider) puts on every node of the pool
        assert pool.labels["gpustack.io/pool"] == pool.pool
    for workload in [m.obj for m in plan().objects if m.family == "workloads" and m.obj["kind"] != "Service"]:
        assert workload["metadata"]["labels"]["gpustack.io/pool"] in shards  # the PodGroup's shard


def test_queue_figures_are_the_tenants_quotas_per_pool_in_kai_units() -> None:
    found = queues()
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    # 12 whole H100s; serving: 4 H100s in the H100 shard, 4 x mig-3g (3 units each) + 14 x mig-1g = 26 in the A100's
    assert found["training.h100"]["spec"]["resources"]["gpu"] == {"quota": 12, "limit": 12, "overQuotaWeight": 1}
    assert found["serving.h100"]["spec"]["resources"]["gpu"] == {"quota": 4, "limit": 4, "overQuotaWeight": 1}
    assert found["serving.a100-mig"]["spec"]["resources"]["gpu"] == {"quota": 26, "limit": 26, "overQuotaWeight": 1}
    # each leaf may use up to the tenant's limit on the pool; the guarantee is shared evenly
    for leaf in ("training.h100.training", "training.h100.training-dev"):
        assert found[leaf]["spec"]["resources"]["gpu"] == {"quota": 6, "limit": 12, "overQuotaWeight": 1}
    assert found["serving.h100.serving"]["spec"]["resources"]["gpu"] == {"quota": 4, "limit": 4, "overQuotaWeight": 1}
    for queue in found.values():  # gpustack quotas GPUs only: cpu (millicores) and memory (MB) stay open
        assert queue["spec"]["resources"]["cpu"] == unlimited
        assert queue["spec"]["resources"]["memory"] == unlimited


def test_the_h100_shard_holds_serving_to_its_4_h100s_whatever_its_a100_quota() -> None:
    """KAI issue #1087: one Queue's `gpu` number counts every GPU alike, so serving's 30 units would have let it take
    30 H100s (its ResourceQuota on nvidia.com/gpu says 4, but that name is the H100 pool's and any other whole-GPU
    pool's alike). In the H100 shard its Queue holds 4: the per-model limit."""
    assert queues()["serving.h100"]["spec"]["resources"]["gpu"]["limit"] == 4
    hard = {q["metadata"]["namespace"]: q["spec"]["hard"] for q in objects("ResourceQuota")}
    assert hard["serving"]["requests.nvidia.com/gpu"] == "4"


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
    """KAI's one `gpu` number would admit 26 mig-1g.10gb in serving's A100 queue; the ResourceQuota holds it to 14."""
    serving_gpu = queues()["serving.a100-mig"]["spec"]["resources"]["gpu"]["limit"]
    assert serving_gpu >= 26 * kai_gpu_units("nvidia.com/mig-1g.10gb")  # type: ignore[operator]
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
            pool = workload["metadata"]["labels"]["gpustack.io/pool"]
            assert template["spec"]["schedulerName"] == KAI_SCHEDULER
            assert template["metadata"]["labels"][KAI_QUEUE_LABEL] == f"{tenant}.{pool}.{namespace}"


def test_every_compiled_object_is_valid_against_its_schema_or_crd() -> None:
    errors = [error for m in plan().objects for error in manifest_schemas.validate_any(m.obj, "1.33")]
    assert errors == []
    # the KAI Queues and SchedulingShards went to the upstream CRDs, strictly: an unknown field is refused
    queue = dict(queues()["training.h100"])
    broken = {**queue, "spec": {**queue["spec"], "weight": 3}}
    assert manifest_schemas.validate_any(broken, "1.33") != []
    (shard, *_) = objects("SchedulingShard", "kai.scheduler/")
    assert manifest_schemas.validate_any({**shard, "spec": {"partitionLabel": "h100"}}, "1.33") != []


# --- checks ---------------------------------------------------------------------------------------------------------


def _diagnostics(text: str) -> list[tuple[str, int]]:
    result = validate_text(text, "kai.yaml")
    return [(d.code, d.span.start.line if d.span else 0) for d in result.diagnostics if d.severity == "error"]


def _source() -> str:
    return Path(KAI).read_text(encoding="utf-8")


def test_a_pool_named_like_kais_default_shard_is_refused() -> None:
    text = _source().replace("- name: h100\n", "- name: default\n").replace("pools: [h100]", "pools: [default]")
    text = text.replace("[h100, a100-mig]", "[default, a100-mig]").replace("h100: {gpu", "default: {gpu")
    text = text.replace("pool: h100\n", "pool: default\n").replace("value: h100,", "value: default,")
    line = text.splitlines().index("    - name: default") + 1
    assert (KAI_QUEUE_NAME, line) in _diagnostics(text)


def test_a_tenant_named_like_kais_default_queue_no_longer_clashes() -> None:
    """Its Queues are `default-queue.<pool>` and `default-queue.<pool>.<namespace>`, never the chart's queue."""
    text = (
        _source()
        .replace("- name: training\n", "- name: default-queue\n")
        .replace("tenant: training\n", "tenant: default-queue\n")
    )
    assert KAI_QUEUE_NAME not in [code for code, _ in _diagnostics(text)]


def test_leaf_queue_too_long_for_a_label_is_refused() -> None:
    long = "n" * 50  # training.h100.<50> = 64 characters
    text = _source().replace("namespaces: [training, training-dev]", f"namespaces: [training, {long}]")
    line = next(i for i, row in enumerate(text.splitlines(), 1) if long in row)
    assert (KAI_QUEUE_NAME, line) in _diagnostics(text)
    fits = _source().replace("namespaces: [training, training-dev]", f"namespaces: [training, {long[:-1]}]")
    assert KAI_QUEUE_NAME not in [code for code, _ in _diagnostics(fits)]


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


def test_capacity_shows_each_kai_tenants_queues_per_pool_beside_its_quota() -> None:
    data = capacity_data(measure_capacity(context()), "kai.yaml")
    parents = {
        t["name"]: {q["pool"]: (q["name"], q["gpuQuota"], q["gpuLimit"]) for q in t["kaiQueues"] if not q["leaf"]}
        for t in data["tenants"]
    }
    assert parents == {
        "training": {"h100": ("training.h100", 12, 12)},
        "serving": {"h100": ("serving.h100", 4, 4), "a100-mig": ("serving.a100-mig", 26, 26)},
    }
    text = format_text(data)
    assert "KAI queue serving.a100-mig (shard a100-mig): 26 GPU units guaranteed, limit 26" in text
    assert "KAI leaf queue training.h100.training-dev: 6 GPU units guaranteed, limit 12" in text
    result = validate_path(BLUEPRINTS / "kueue.yaml")
    assert result.context is not None
    assert all("kaiQueues" not in t for t in capacity_data(measure_capacity(result.context), "k")["tenants"])


@pytest.mark.parametrize("namespace", ["kai-scheduler", "kai-resource-reservation", "kai-scale-adjust"])
def test_a_tenant_may_not_claim_a_namespace_of_kais_own_pods(namespace: str) -> None:
    """KAI's scheduler, binder and GPU-reservation pods run there: a tenant owning it would put its quota and
    admission policy on them (or be handed their GPUs)."""
    text = _source().replace("namespaces: [serving]", f"namespaces: [serving, {namespace}]")
    line = next(i for i, row in enumerate(text.splitlines(), 1) if f"namespaces: [serving, {namespace}]" in row)
    assert (SYSTEM_NAMESPACE, line) in _diagnostics(text)
    assert namespace in context().system_namespaces  # admission policies leave KAI's own pods alone

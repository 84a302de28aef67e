"""The Volcano family: a Queue per Volcano tenant, jobs in it with gang scheduling, and the scheduler configuration."""

from __future__ import annotations

import functools
import json
from typing import Any

import manifest_schemas
import pytest
import yaml
from builders import blueprint, context, sourceless

from gpustack.codes import VOLCANO_RESERVED_QUEUE
from gpustack.compile import compile_blueprint
from gpustack.compile.volcano import CONFIG_FILE, VOLCANO_VERSION, compile_volcano
from gpustack.deploy import group_of
from gpustack.model import Blueprint
from gpustack.names import VOLCANO_QUEUE_ANNOTATION, WORKLOAD_LABEL
from gpustack.plan import Object, Plan
from gpustack.validation import validate_text

VERSIONS = ("1.31", manifest_schemas.newest_version())
H100: dict[str, Any] = {
    "name": "h100",
    "gpu": {"model": "H100-SXM5-80GB", "count": 8},
    "nodes": ["h1", "h2", "h3"],
    "taints": [{"key": "gpustack.io/pool", "value": "h100", "effect": "NoSchedule"}],
}
L4: dict[str, Any] = {
    "name": "l4",
    "gpu": {"model": "L4", "count": 4},
    "nodes": ["l1"],
    "sharing": {"strategy": "time-slicing", "timeSlicing": {"replicas": 2, "renameByDefault": True}},
}
TENANTS: list[dict[str, Any]] = [
    {
        "name": "llm",
        "namespaces": ["llm"],
        "pools": ["h100", "l4"],
        "scheduler": "volcano",
        "quota": {"h100": {"gpu": 16}, "l4": {"gpu.shared": 4}},
        "volcano": {"weight": 3, "reclaimable": False},
    },
    {
        "name": "vision",
        "namespaces": ["vision"],
        "pools": ["h100"],
        "scheduler": "volcano",
        "quota": {"h100": "unlimited"},
    },
    {"name": "web", "namespaces": ["web"], "pools": ["l4"], "quota": {"l4": "unlimited"}},
]
WORKLOADS: list[dict[str, Any]] = [
    {
        "name": "pretrain",
        "tenant": "llm",
        "pool": "h100",
        "kind": "VolcanoJob",
        "workers": 3,
        "image": "t:1",
        "gpu": {"count": 8},
    },
    {"name": "eval", "tenant": "llm", "pool": "l4", "kind": "Job", "replicas": 2, "image": "e:1", "gpu": {"count": 1}},
    {
        "name": "detect",
        "tenant": "vision",
        "pool": "h100",
        "kind": "VolcanoJob",
        "workers": 2,
        "image": "d:1",
        "gpu": {"count": 4},
    },
    {"name": "site", "tenant": "web", "pool": "l4", "kind": "Deployment", "image": "w:1", "gpu": {"count": 1}},
]


def sample(*, binpack: bool | None = None) -> Blueprint:
    spec: dict[str, Any] = {"tenants": TENANTS, "workloads": WORKLOADS}
    if binpack is not None:
        spec["volcano"] = {"binpack": binpack}
    return blueprint(H100, L4, **spec)


@functools.cache
def plan(binpack: bool | None = None) -> Plan:
    return compile_blueprint(sourceless(sample(binpack=binpack)))


def queues() -> dict[str, Object]:
    return {m.name: m.obj for m in plan().objects if m.kind == "Queue"}


def workload(name: str) -> Object:
    return next(
        m.obj
        for m in plan().objects
        if m.family == "workloads" and m.kind != "Service" and m.obj["metadata"]["labels"][WORKLOAD_LABEL] == name
    )


def config(binpack: bool | None = None) -> dict[str, Any]:
    [artifact] = [a for a in plan(binpack).artifacts if a.path == CONFIG_FILE]
    parsed: dict[str, Any] = yaml.safe_load(artifact.text)
    return parsed


def plugins(conf: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["name"]: p for tier in conf["tiers"] for p in tier["plugins"]}


# --- queues ----------------------------------------------------------------------------------------------------------


def test_a_queue_per_volcano_tenant_and_nothing_for_the_others() -> None:
    assert set(queues()) == {"llm", "vision"}
    assert {m.file for m in plan().objects if m.kind == "Queue"} == {"volcano/queues.yaml"}
    assert all(group_of(m) == "custom-resources" for m in plan().objects if m.kind == "Queue")


def test_queue_capability_weight_and_reclaimable() -> None:
    llm, vision = queues()["llm"]["spec"], queues()["vision"]["spec"]
    assert llm == {
        "weight": 3,
        "reclaimable": False,
        "capability": {"nvidia.com/gpu": "16", "nvidia.com/gpu.shared": "4"},
    }
    assert vision == {"weight": 1, "reclaimable": True}  # Volcano's defaults, written out; unlimited, no ceiling


def test_nothing_without_volcano() -> None:
    bp = blueprint(L4, tenants=[TENANTS[2]], workloads=[WORKLOADS[3]])
    output = compile_volcano(context(bp))
    assert output.objects == [] and output.artifacts == []


# --- jobs and pods ---------------------------------------------------------------------------------------------------


def test_volcano_jobs_gang_all_workers_in_their_tenants_queue() -> None:
    for name, queue, workers in (("pretrain", "llm", 3), ("detect", "vision", 2)):
        spec = workload(name)["spec"]
        assert spec["schedulerName"] == "volcano" and spec["queue"] == queue
        assert spec["minAvailable"] == workers == sum(task["replicas"] for task in spec["tasks"])
        assert [(t["name"], t["replicas"]) for t in spec["tasks"]] == [("master", 1), ("worker", workers - 1)]
        assert queue in queues()


def test_volcano_jobs_rendezvous_through_the_pytorch_and_svc_plugins() -> None:
    spec = workload("pretrain")["spec"]
    # Volcano's pytorch plugin names rank 0's task and the port; svc gives the headless Service and hostnames
    # MASTER_ADDR resolves through.
    assert spec["plugins"] == {"env": [], "pytorch": ["--master=master", "--worker=worker", "--port=23456"], "svc": []}
    master = spec["tasks"][0]
    assert master["policies"] == [{"event": "TaskCompleted", "action": "CompleteJob"}]


def test_a_volcano_tenants_other_pods_go_to_its_queue() -> None:
    template = workload("eval")["spec"]["template"]
    assert template["spec"]["schedulerName"] == "volcano"
    assert template["metadata"]["annotations"][VOLCANO_QUEUE_ANNOTATION] == "llm"
    site = workload("site")["spec"]["template"]
    assert "schedulerName" not in site["spec"] and VOLCANO_QUEUE_ANNOTATION not in site["metadata"].get(
        "annotations", {}
    )


@pytest.mark.parametrize("version", VERSIONS)
def test_core_objects_stay_valid(version: str) -> None:
    for name in ("eval", "site"):
        assert manifest_schemas.validate_any(workload(name), version) == []


# --- scheduler configuration -----------------------------------------------------------------------------------------


def test_scheduler_config_enables_gang_queues_and_reclaim() -> None:
    conf = config()
    actions = [a.strip() for a in conf["actions"].split(",")]
    assert actions[:2] == ["enqueue", "allocate"] and {"preempt", "reclaim", "backfill"} <= set(actions)
    first = [p["name"] for p in conf["tiers"][0]["plugins"]]
    assert first == ["priority", "gang", "conformance"]
    assert {"predicates", "proportion", "nodeorder", "drf"} <= set(plugins(conf))
    assert "binpack" not in plugins(conf)  # not asked for
    assert [a.path for a in plan().artifacts if a.path.startswith("volcano/")] == [CONFIG_FILE]


def test_binpack_weighs_the_gpu_resources_of_volcano_pools() -> None:
    binpack = plugins(config(binpack=True))["binpack"]["arguments"]
    assert binpack["binpack.resources"] == "nvidia.com/gpu,nvidia.com/gpu.shared"
    assert binpack["binpack.resources.nvidia.com/gpu"] > binpack["binpack.cpu"]
    assert binpack["binpack.resources.nvidia.com/gpu.shared"] > binpack["binpack.memory"]
    assert binpack["binpack.weight"] > 0


def test_the_config_is_installed_with_the_pinned_volcano_release() -> None:
    [artifact] = [a for a in plan().artifacts if a.path == CONFIG_FILE]
    assert artifact.text.startswith("# Generated by gpustack")
    assert "custom.scheduler_config_override" in artifact.description
    [release] = [r for r in plan().releases if r.name == "volcano"]
    assert (release.chart, release.version, release.namespace) == ("volcano", VOLCANO_VERSION, "volcano-system")
    assert release.repository == "https://volcano-sh.github.io/helm-charts" and not release.oci
    # The chart writes custom.scheduler_config_override whole into the scheduler's ConfigMap.
    assert release.values == {"custom": {"scheduler_config_override": artifact.text}}


def test_reserved_queue_names_are_refused() -> None:
    tenants = [
        {"name": "root", "namespaces": ["r"], "pools": ["h100"], "scheduler": "volcano", "quota": {"h100": "unlimited"}}
    ]
    spec = {"kubernetes": {"version": "1.31"}, "nodePools": [H100], "tenants": tenants}
    data = {"apiVersion": "gpustack.io/v1alpha1", "kind": "ClusterBlueprint", "metadata": {"name": "t"}, "spec": spec}
    assert [d.code for d in validate_text(json.dumps(data), "t.json").diagnostics] == [VOLCANO_RESERVED_QUEUE]


# --- upstream CRDs ---------------------------------------------------------------------------------------------------


@pytest.mark.conformance
def test_queues_and_jobs_pass_volcanos_crds() -> None:
    manifest_schemas.skip_without_crds()
    objects = [
        m.obj for m in plan().objects if m.family == "volcano" or m.obj["apiVersion"].startswith("batch.volcano.sh")
    ]
    assert {o["kind"] for o in objects} == {"Queue", "Job"}
    for obj in objects:
        assert manifest_schemas.validate_any(obj, manifest_schemas.newest_version()) == [], obj["metadata"]["name"]


@pytest.mark.conformance
def test_a_broken_queue_would_be_caught() -> None:
    manifest_schemas.skip_without_crds()
    queue = queues()["llm"]
    broken = {**queue, "spec": {**queue["spec"], "weight": 0}}
    assert any("weight" in e for e in manifest_schemas.crd_errors(broken, "scheduling.volcano.sh_queues.yaml"))

"""The HAMi family: a pinned release whose device plugin runs on exactly the HAMi pools, and workloads that use it."""

from __future__ import annotations

import functools
import json
from typing import Any

import manifest_schemas
import pytest
from builders import blueprint, context, sourceless
from conftest import CASES

from gpustack.codes import (
    HAMI_POOL_SHARED,
    HAMI_SETTINGS_DIFFER,
    NEED_UNMET,
    OWNED_LABEL,
    SOFT_ISOLATION,
    UNPINNED_CHART,
    VOLCANO_JOB_ON_HAMI,
)
from gpustack.compile import compile_blueprint
from gpustack.compile.hami import compile_hami
from gpustack.diagnostic import Diagnostic
from gpustack.model import Blueprint
from gpustack.names import POOL_LABEL, WORKLOAD_LABEL
from gpustack.plan import HelmRelease, Object, Plan
from gpustack.validation import validate_path, validate_text

VERSIONS = ("1.31", manifest_schemas.newest_version())
L4_VGPU: dict[str, Any] = {
    "name": "l4-vgpu",
    "gpu": {"model": "L4", "count": 4},
    "nodes": ["v1", "v2"],
    "taints": [{"key": "gpustack.io/pool", "value": "l4-vgpu", "effect": "NoSchedule"}],
    "sharing": {"strategy": "hami", "hami": {"splitCount": 4, "memoryScaling": 1.5, "coreScaling": 1.0}},
}
T4_VGPU: dict[str, Any] = {
    "name": "t4-vgpu",
    "gpu": {"model": "T4", "count": 2},
    "nodes": ["t1"],
    "sharing": {"strategy": "hami", "hami": {"splitCount": 4, "memoryScaling": 1.5}},
}
H100: dict[str, Any] = {
    "name": "h100",
    "gpu": {"model": "H100-SXM5-80GB", "count": 8},
    "nodes": ["h1"],
    "labels": {"gpu": "on"},  # a stray gpu=on must not start HAMi's plugin beside NVIDIA's
}
TENANTS: list[dict[str, Any]] = [
    {
        "name": "apps",
        "namespaces": ["apps"],
        "pools": ["l4-vgpu", "h100"],
        "scheduler": "volcano",
        "quota": {"l4-vgpu": "unlimited", "h100": "unlimited"},
    },
    {"name": "lab", "namespaces": ["lab"], "pools": ["t4-vgpu"], "quota": {"t4-vgpu": "unlimited"}},
]
WORKLOADS: list[dict[str, Any]] = [
    {
        "name": "embed",
        "tenant": "apps",
        "pool": "l4-vgpu",
        "kind": "Deployment",
        "image": "e:1",
        "gpu": {"memory": "10Gi", "cores": 30},
    },
    {"name": "whole", "tenant": "apps", "pool": "l4-vgpu", "kind": "Job", "image": "w:1", "gpu": {"count": 1}},
    {
        "name": "notebook",
        "tenant": "lab",
        "pool": "t4-vgpu",
        "kind": "StatefulSet",
        "image": "n:1",
        "gpu": {"memory": "4Gi"},
    },
    {"name": "big", "tenant": "apps", "pool": "h100", "kind": "Job", "image": "b:1", "gpu": {"count": 8}},
]


def sample(**spec: Any) -> Blueprint:
    return blueprint(L4_VGPU, T4_VGPU, H100, tenants=TENANTS, workloads=WORKLOADS, **spec)


@functools.cache
def plan() -> Plan:
    return compile_blueprint(sourceless(sample()))


def release(p: Plan | None = None) -> HelmRelease:
    [hami] = [r for r in (p or plan()).releases if r.name == "hami"]
    return hami


def workload(name: str) -> Object:
    return next(
        m.obj
        for m in plan().objects
        if m.family == "workloads" and m.kind != "Service" and m.obj["metadata"]["labels"][WORKLOAD_LABEL] == name
    )


def node_labels() -> dict[str, dict[str, str]]:
    return {m.name: m.obj["metadata"]["labels"] for m in plan().objects if m.family == "nodes"}


# --- the release -----------------------------------------------------------------------------------------------------


def test_release_is_pinned_with_defaults_and_overrides() -> None:
    hami = release()
    assert (hami.chart, hami.version, hami.repository, hami.namespace) == (
        "hami",
        "2.10.0",
        "https://project-hami.github.io/HAMi",
        "kube-system",
    )
    assert hami.values_file == "hami/values.yaml"
    custom = release(compile_blueprint(sourceless(sample(hami={"chartVersion": "2.9.1", "namespace": "hami-system"}))))
    assert (custom.version, custom.namespace) == ("2.9.1", "hami-system")


def test_values_carry_the_pools_sharing_settings() -> None:
    plugin = release().values["devicePlugin"]
    assert (plugin["deviceSplitCount"], plugin["deviceMemoryScaling"], plugin["deviceCoreScaling"]) == (4, 1.5, 1)
    assert release().values["schedulerName"] == "hami-scheduler"
    # Only pods that name HAMi's scheduler are HAMi's: otherwise its webhook moves every nvidia.com/gpu pod
    # (the h100 job too) to a scheduler that knows no devices on NVIDIA-plugin nodes.
    assert release().values["scheduler"] == {"forceOverwriteDefaultScheduler": False}


def test_no_release_without_a_hami_pool() -> None:
    assert compile_hami(context(blueprint(H100))).releases == []


def selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return selector.items() <= labels.items()


def nvidia_plugin_runs_on(labels: dict[str, str]) -> bool:
    [nvidia] = [r for r in plan().releases if r.name == "nvidia-device-plugin"]
    terms = nvidia.values["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    return any(all(labels.get(e["key"]) in e["values"] for e in term["matchExpressions"]) for term in terms)


def test_hamis_device_plugin_runs_on_exactly_the_hami_pools_and_never_beside_nvidias() -> None:
    selector = release().values["devicePlugin"]["nvidiaNodeSelector"]
    assert selector["gpu"] == "on"  # HAMi's documented node label
    hami_nodes = {node for node, labels in node_labels().items() if selects(selector, labels)}
    assert hami_nodes == {"v1", "v2", "t1"}
    nvidia_nodes = {node for node, labels in node_labels().items() if nvidia_plugin_runs_on(labels)}
    assert nvidia_nodes == {"h1"}  # labelled gpu=on by hand, and still only NVIDIA's plugin runs there


def test_device_plugin_tolerates_the_hami_pools_taints() -> None:
    tolerations = release().values["devicePlugin"]["tolerations"]
    assert {"key": "gpustack.io/pool", "operator": "Exists", "effect": "NoSchedule"} in tolerations
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in tolerations  # the chart's own


# --- workloads -------------------------------------------------------------------------------------------------------


def test_workloads_on_hami_pools_use_hamis_scheduler_whatever_the_tenants() -> None:
    for name in ("embed", "whole", "notebook"):
        assert workload(name)["spec"]["template"]["spec"]["schedulerName"] == "hami-scheduler", name
    # The h100 pool is not HAMi's: its job follows its tenant (Volcano).
    assert workload("big")["spec"]["template"]["spec"]["schedulerName"] == "volcano"


def test_scheduler_name_follows_the_blueprint() -> None:
    p = compile_blueprint(sourceless(sample(hami={"schedulerName": "vgpu-scheduler"})))
    assert release(p).values["schedulerName"] == "vgpu-scheduler"
    job = next(m.obj for m in p.objects if m.kind == "Deployment")
    assert job["spec"]["template"]["spec"]["schedulerName"] == "vgpu-scheduler"


def resources(name: str) -> dict[str, Any]:
    [container] = workload(name)["spec"]["template"]["spec"]["containers"]
    return dict(container["resources"])


def test_hami_requests_gpu_memory_and_cores() -> None:
    embed = resources("embed")
    assert embed["requests"] == embed["limits"]
    assert {k: v for k, v in embed["limits"].items() if k.startswith("nvidia.com/")} == {
        "nvidia.com/gpu": "1",
        "nvidia.com/gpumem": str(10 * 1024),
        "nvidia.com/gpucores": "30",
    }
    assert {k for k in resources("whole")["limits"] if k.startswith("nvidia.com/")} == {"nvidia.com/gpu"}


def test_hami_pool_nodes_carry_no_nvidia_plugin_config() -> None:
    for node in ("v1", "v2", "t1"):
        assert "nvidia.com/device-plugin.config" not in node_labels()[node]
        assert node_labels()[node][POOL_LABEL] in ("l4-vgpu", "t4-vgpu")


@pytest.mark.parametrize("version", VERSIONS)
def test_every_core_object_stays_valid(version: str) -> None:
    for m in plan().objects:
        if not m.obj["apiVersion"].split("/")[0].endswith(manifest_schemas.CRD_GROUP_SUFFIXES):
            assert manifest_schemas.validate_any(m.obj, version) == [], m.key


# --- what the validator knows about HAMi ----------------------------------------------------------------------------


def diagnostics(**changes: Any) -> list[Diagnostic]:
    """What `gpustack validate` says about the sample with some of its spec replaced."""
    spec: dict[str, Any] = {"kubernetes": {"version": "1.31"}, "tenants": TENANTS, "workloads": WORKLOADS, **changes}
    spec["nodePools"] = spec.pop("pools", [L4_VGPU, T4_VGPU, H100])
    data = {"apiVersion": "gpustack.io/v1alpha1", "kind": "ClusterBlueprint", "metadata": {"name": "t"}, "spec": spec}
    found = validate_text(json.dumps(data), "test.json").diagnostics
    return [d for d in found if d.code != SOFT_ISOLATION]  # the sample's untainted pools: GS705 has cases of its own


def codes(**changes: Any) -> list[str]:
    return [d.code for d in diagnostics(**changes)]


def test_the_sample_is_clean() -> None:
    assert codes() == []


def test_hami_pools_must_agree_on_settings() -> None:
    t4 = {**T4_VGPU, "sharing": {"strategy": "hami", "hami": {"splitCount": 10, "memoryScaling": 1.5}}}
    assert codes(pools=[L4_VGPU, t4, H100]) == [HAMI_SETTINGS_DIFFER]


def test_a_hami_pool_shared_by_tenants_warns_that_isolation_is_bypassable() -> None:
    shared = {"pools": ["t4-vgpu", "l4-vgpu"], "quota": {"t4-vgpu": "unlimited", "l4-vgpu": "unlimited"}}
    [diagnostic] = diagnostics(tenants=[TENANTS[0], {**TENANTS[1], **shared}])
    assert diagnostic.code == HAMI_POOL_SHARED and diagnostic.severity.value == "warning"
    assert "CUDA driver API" in diagnostic.message and "MIG" in (diagnostic.hint or "")


def test_gpu_cores_needs_a_hami_pool() -> None:
    [diagnostic] = diagnostics(workloads=[*WORKLOADS[:3], {**WORKLOADS[3], "gpu": {"count": 1, "cores": 50}}])
    assert diagnostic.code == NEED_UNMET and diagnostic.path[-1] == "cores"


def test_a_volcano_job_cannot_run_on_a_hami_pool() -> None:
    workloads = [
        {
            "name": "gang",
            "tenant": "apps",
            "pool": "l4-vgpu",
            "kind": "VolcanoJob",
            "workers": 2,
            "image": "g:1",
            "gpu": {"count": 1},
        }
    ]
    assert codes(workloads=workloads) == [VOLCANO_JOB_ON_HAMI]


def test_an_unpinned_hami_chart_is_refused() -> None:
    assert codes(hami={"chartVersion": "latest"}) == [UNPINNED_CHART]


def test_a_pool_may_not_set_hamis_node_labels() -> None:
    l4 = {**L4_VGPU, "labels": {"gpu": "off"}}
    assert codes(pools=[l4, T4_VGPU, H100]) == [OWNED_LABEL]


def test_a_memory_need_no_mig_slice_fits_still_points_at_hami() -> None:
    # The seed's question: 24 GiB on 20 GB slices. One of the ways out is a HAMi pool.
    result = validate_path(CASES / "invalid" / "memory-need-fits-no-slice.yaml")
    [diagnostic] = [d for d in result.diagnostics if d.code == NEED_UNMET]
    assert "HAMi pool (sharing.strategy: hami)" in (diagnostic.hint or "")


def test_compile_says_hami_isolation_is_bypassable() -> None:
    from conftest import BLUEPRINTS

    from gpustack.compile import compile_blueprint
    from gpustack.validation import validate_path

    result = validate_path(BLUEPRINTS / "hami.yaml")
    assert result.blueprint is not None
    notes = {a.path: a.text for a in compile_blueprint(sourceless(result.blueprint)).artifacts}["hami/README.md"]
    assert "software, not hardware" in notes and "escapes the limits" in notes
    assert "`l40s-vgpu`" in notes and HAMI_POOL_SHARED in notes

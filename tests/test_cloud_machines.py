"""Cloud machines (issue 26, items 4 and 5): pods sized from what the pool's machine leaves to pods, refused when
they ask more, simulate on the machine's allocatable; the machine table's new rows (GKE N1 with attached T4/V100,
NC6s_v3, p5en, p6-b200, g6e, g4dn, a3-edgegpu, a4, g4) and a machine type it does not list, accepted on the pool's
stated nodeResources."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest
from builders import blueprint, sourceless

from gpustack.catalog import load_catalog
from gpustack.cloud import machine_allocatable, machine_named, machine_table, node_resources
from gpustack.codes import MACHINE_TYPE_MISMATCH, MACHINE_TYPE_UNLISTED, POD_EXCEEDS_MACHINE
from gpustack.compile import compile_blueprint
from gpustack.compile.cloud import node_pool_specs
from gpustack.quantity import parse_quantity
from gpustack.simulate import run_simulation
from gpustack.simulate.inventory import build_inventory
from gpustack.validation import validate_text


def pool(provider: str, model: str, gpus: int = 1, machine: str | None = None, **more: Any) -> dict[str, Any]:
    cloud: dict[str, Any] = {"provider": provider, **more.pop("cloud", {})}
    if machine is not None:
        cloud["machineType"] = machine
    if provider == "gke":
        cloud.setdefault("zones", ["us-central1-a"])
    return {"name": "gpus", "gpu": {"model": model, "count": gpus}, "cloud": cloud, "count": 1, **more}


def serving(**more: Any) -> dict[str, Any]:
    workload = {"name": "svc", "tenant": "t", "pool": "gpus", "kind": "Deployment", "image": "x:1", "gpu": {"count": 1}}
    return {
        "workloads": [{**workload, **more}],
        "tenants": [{"name": "t", "namespaces": ["t"], "pools": ["gpus"], "quota": {"gpus": "unlimited"}}],
    }


def diagnostics(*pools: dict[str, Any], **spec: Any) -> list[tuple[str, str, str, str]]:
    data = {
        "apiVersion": "gpustack.io/v1alpha1",
        "kind": "ClusterBlueprint",
        "metadata": {"name": "t"},
        "spec": {"kubernetes": {"version": "1.31"}, "stack": "device-plugin", **spec, "nodePools": list(pools)},
    }
    result = validate_text(json.dumps(data), "t.json")
    return [(d.code, ".".join(map(str, d.path)), d.severity.value, d.hint or "") for d in result.diagnostics]


def pod_resources(*pools: dict[str, Any], **spec: Any) -> dict[str, str]:
    plan = compile_blueprint(sourceless(blueprint(*pools, **spec)))
    [deployment] = [m.obj for m in plan.objects if m.obj["kind"] == "Deployment"]
    return dict(deployment["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"])


# --- What a node leaves to pods ----------------------------------------------------------------------------------


def test_allocatable_follows_each_clouds_reserve_formula() -> None:
    # 4 vCPUs: 6% + 1% + 2 x 0.5% = 80m reserved on every cloud.
    t4 = machine_named("aks", "Standard_NC4as_T4_v3")
    assert t4 is not None
    assert machine_allocatable("aks", t4, None).cpu == "3920m"
    # AKS: 20 MiB x 110 pods + 50 MiB (under 25% of 28 GiB) + 100 MiB eviction.
    assert machine_allocatable("aks", t4, None).memory == f"{28 * 1024 - 2350}Mi"
    # EKS: 11 MiB x 110 pods + 255 MiB + 100 MiB eviction.
    g6 = machine_named("eks", "g6.xlarge")
    assert g6 is not None and machine_allocatable("eks", g6, None).memory == f"{16 * 1024 - 1565}Mi"
    # GKE: 25% of 4 GiB + 20% of 4 + 10% of 8 = 2.6 GiB, + 100 MiB eviction.
    g2 = machine_named("gke", "g2-standard-4")
    assert g2 is not None
    assert machine_allocatable("gke", g2, None).memory == f"{int(16 * 1024 - Decimal('2.6') * 1024 - 100)}Mi"
    assert machine_allocatable("eks", g6, 29).memory == f"{16 * 1024 - (11 * 29 + 255 + 100)}Mi"  # maxPods counts


def test_a_t4_on_nc4as_t4_v3_gets_a_cpu_request_that_fits() -> None:
    t4 = pool("aks", "T4", 1, "Standard_NC4as_T4_v3")
    requests = pod_resources(t4, **serving())
    allocatable = node_resources(blueprint(t4).pools[0], load_catalog())
    assert allocatable is not None and allocatable.cpu is not None and allocatable.memory is not None
    assert parse_quantity(requests["cpu"]) <= parse_quantity(allocatable.cpu)  # was 4 CPUs on a 4-vCPU VM
    assert parse_quantity(requests["memory"]) <= parse_quantity(allocatable.memory)


def test_an_l4_on_g6_xlarge_asks_less_memory_than_the_node_has() -> None:
    requests = pod_resources(pool("eks", "L4", 1, "g6.xlarge"), **serving())
    assert parse_quantity(requests["memory"]) < 16 * 1024**3  # was 24Gi (the GPU's memory) on a 16 GiB VM


def test_a_workload_asking_more_than_the_machine_is_refused_at_the_line() -> None:
    t4 = pool("aks", "T4", 1, "Standard_NC4as_T4_v3")
    found = diagnostics(t4, **serving(resources={"cpu": "4", "memory": "16Gi"}))
    [(code, path, severity, hint)] = found
    assert (code, path, severity) == (POD_EXCEEDS_MACHINE, "spec.workloads.0.resources.cpu", "error")
    assert "3920m" in hint
    assert not diagnostics(t4, **serving(resources={"cpu": "3", "memory": "16Gi"}))
    [(code, path, _, _)] = diagnostics(t4, **serving(resources={"cpu": "2", "memory": "30Gi"}))
    assert (code, path) == (POD_EXCEEDS_MACHINE, "spec.workloads.0.resources.memory")


def test_simulate_uses_the_machines_allocatable() -> None:
    bp = blueprint(pool("aks", "T4", 1, "Standard_NC4as_T4_v3"))
    [node] = build_inventory(sourceless(bp))
    assert node.allocatable["cpu"] == 3920 and node.allocatable["memory"] == (28 * 1024 - 2350) * 1024**2
    more = serving(replicas=1)
    plan = compile_blueprint(sourceless(blueprint(pool("aks", "T4", 1, "Standard_NC4as_T4_v3"), **more)))
    simulation = run_simulation(
        sourceless(blueprint(pool("aks", "T4", 1, "Standard_NC4as_T4_v3"), **more)), [m.obj for m in plan.objects]
    )
    assert len(simulation.outcome.placed) == 1 and not simulation.outcome.pending


# --- The table --------------------------------------------------------------------------------------------------


def test_every_row_has_vcpus_and_memory() -> None:
    for provider, rows in machine_table().items():
        for row in rows:
            assert row.vcpus > 0 and row.memory_gib >= row.vcpus, (provider, row.name)


@pytest.mark.parametrize(
    ("provider", "model", "gpus", "machine"),
    [
        ("gke", "T4", 1, "n1-standard-4"),  # NVIDIA's own GKE example
        ("gke", "T4", 4, "n1-standard-16"),
        ("gke", "V100-SXM2-16GB", 2, "n1-standard-16"),
        ("gke", "H100-SXM5-80GB", 8, "a3-edgegpu-8g"),
        ("gke", "B200", 8, "a4-highgpu-8g"),
        ("gke", "RTX-PRO-6000-Blackwell-Server", 1, "g4-standard-48"),
        ("aks", "V100-PCIE-16GB", 1, "Standard_NC6s_v3"),
        ("aks", "H200", 8, "Standard_ND96isr_H200_v5"),
        ("eks", "H200", 8, "p5en.48xlarge"),
        ("eks", "B200", 8, "p6-b200.48xlarge"),
        ("eks", "L40S", 1, "g6e.2xlarge"),
        ("eks", "T4", 1, "g4dn.2xlarge"),
        ("karpenter", "T4", 8, "g4dn.metal"),
        ("gke", "GB200", 4, "a4x-highgpu-4g"),  # Grace Arm hosts on every cloud (tests/test_cloud_arm.py)
        ("eks", "GB200", 4, "p6e-gb200.36xlarge"),
        ("aks", "GB200", 4, "Standard_ND128isr_NDR_GB200_v6"),
    ],
)
def test_machines_people_use_are_accepted(provider: str, model: str, gpus: int, machine: str) -> None:
    p = pool(provider, model, gpus, machine)
    if provider == "karpenter":
        p = {k: v for k, v in p.items() if k != "count"} | {"minNodes": 0, "maxNodes": 1}
    assert not diagnostics(p)


def test_gke_attaches_the_gpus_to_an_n1_machine() -> None:
    [spec] = node_pool_specs(sourceless(blueprint(pool("gke", "T4", 2, "n1-standard-8"))))
    [accelerator] = spec.args["node_config"]["guest_accelerators"]
    assert spec.args["node_config"]["machine_type"] == "n1-standard-8"
    assert (accelerator["type"], accelerator["count"]) == ("nvidia-tesla-t4", 2)
    # Left out: the smallest machine that takes one T4.
    [spec] = node_pool_specs(sourceless(blueprint(pool("gke", "T4", 1))))
    assert spec.args["node_config"]["machine_type"] == "n1-standard-4"


def test_an_n1_machine_beyond_the_gpus_vcpu_limit_is_refused() -> None:
    # One V100 takes at most 12 vCPUs: n1-standard-16 needs two.
    [(code, path, _, hint)] = diagnostics(pool("gke", "V100-SXM2-16GB", 1, "n1-standard-16"))
    assert (code, path) == (MACHINE_TYPE_MISMATCH, "spec.nodePools.0.cloud.machineType")
    assert "n1-standard-4" in hint


def test_an_unlisted_machine_type_with_stated_resources_is_accepted_with_a_warning() -> None:
    unlisted = pool("gke", "L4", 1, "g2-custom-6-24576", nodeResources={"cpu": "5", "memory": "20Gi"})
    [(code, path, severity, _)] = diagnostics(unlisted)
    assert (code, path, severity) == (MACHINE_TYPE_UNLISTED, "spec.nodePools.0.cloud.machineType", "warning")
    [spec] = node_pool_specs(sourceless(blueprint(unlisted)))
    [accelerator] = spec.args["node_config"]["guest_accelerators"]
    assert (accelerator["type"], accelerator["count"]) == ("nvidia-l4", 1)  # the catalog's GKE name


def test_an_unlisted_machine_type_without_resources_is_refused_with_a_hint_that_works() -> None:
    [(code, _, _, hint)] = diagnostics(pool("eks", "B200", 4, "p6-b200.24xlarge"))
    assert code == MACHINE_TYPE_MISMATCH and "nodeResources" in hint
    # No machine type has 4 x B200: leaving machineType out would not help, so the hint does not say it.
    assert "leave machineType out" not in hint
    [(code, _, _, hint)] = diagnostics(pool("eks", "L4", 1, "g6.3xlarge"))
    assert "leave machineType out" in hint and "g6.xlarge" in hint


def test_capacity_states_what_a_cloud_node_leaves_to_pods() -> None:
    from gpustack.capacity import capacity_data, format_text, measure_capacity

    data = capacity_data(measure_capacity(sourceless(blueprint(pool("aks", "T4", 1, "Standard_NC4as_T4_v3")))), "t")
    [gpus] = data["pools"]
    assert gpus["nodeAllocatable"] == {
        "cpu": "3920m",
        "memory": f"{28 * 1024 - 2350}Mi",
        "machineType": "Standard_NC4as_T4_v3",
    }
    assert "each node leaves 3920m CPU" in format_text(data)

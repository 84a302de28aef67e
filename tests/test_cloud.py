"""Cloud pools: machine types checked against hardware facts, the provider's node-pool spec per provider, and the
files `gpustack compile` writes for them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from builders import blueprint, context, sourceless

from gpustack.catalog import load_catalog
from gpustack.cloud import machine_table, pool_machine
from gpustack.codes import CLOUD_SELECTOR_ELSEWHERE, COMBINATION, MACHINE_TYPE_MISMATCH
from gpustack.compile import compile_blueprint
from gpustack.compile.cloud import node_pool_specs
from gpustack.outputs import render_files
from gpustack.review.risks.cloud import replacing_changes
from gpustack.validation import validate_text

KARPENTER_SCHEMA = Path(__file__).parent / "schemas" / "karpenter-nodepool-v1.schema.json"


def pool(provider: str, model: str, count: int, machine: str | None = None, **more: Any) -> dict[str, Any]:
    cloud: dict[str, Any] = {"provider": provider, **more.pop("cloud", {})}
    if machine is not None:
        cloud["machineType"] = machine
    return {
        "name": more.pop("name", "gpus"),
        "gpu": {"model": model, "count": count},
        "cloud": cloud,
        "minNodes": 0,
        "maxNodes": 4,
        **more,
    }


def diagnostics(*pools: dict[str, Any]) -> list[tuple[str, str, str]]:
    data = {
        "apiVersion": "gpustack.io/v1alpha1",
        "kind": "ClusterBlueprint",
        "metadata": {"name": "t"},
        "spec": {"kubernetes": {"version": "1.31"}, "stack": "device-plugin", "nodePools": list(pools)},
    }
    result = validate_text(json.dumps(data), "t.json")
    return [(d.code, ".".join(map(str, d.path)), d.hint or "") for d in result.diagnostics]


def test_every_machine_names_a_gpu_model_of_the_catalog() -> None:
    catalog = load_catalog()
    for provider, machines in machine_table().items():
        for machine in machines:
            assert catalog.resolve(machine.gpu) is not None, (provider, machine.name)
            assert catalog.resolve(machine.gpu).key == machine.gpu  # keys, not labels, so matching is exact


@pytest.mark.parametrize(
    ("provider", "model", "count", "machine"),
    [
        ("gke", "A100-SXM4-80GB", 8, "a2-ultragpu-8g"),
        ("gke", "H100-SXM5-80GB", 8, "a3-highgpu-8g"),
        ("gke", "L4", 2, "g2-standard-24"),
        ("eks", "A100-SXM4-40GB", 8, "p4d.24xlarge"),
        ("eks", "H100-SXM5-80GB", 8, "p5.48xlarge"),
        ("eks", "A10G", 1, "g5.2xlarge"),
        ("aks", "A100-SXM4-40GB", 8, "Standard_ND96asr_v4"),
        ("aks", "A100-SXM4-80GB", 8, "Standard_ND96amsr_A100_v4"),
        ("aks", "H100-SXM5-80GB", 8, "Standard_ND96isr_H100_v5"),
        ("karpenter", "L4", 8, "g6.48xlarge"),
    ],
)
def test_a_machine_type_with_the_pools_gpus_is_accepted(provider: str, model: str, count: int, machine: str) -> None:
    assert diagnostics(pool(provider, model, count, machine)) == []


@pytest.mark.parametrize(
    ("provider", "model", "count", "machine", "hint"),
    [
        ("gke", "A100-SXM4-40GB", 8, "a2-ultragpu-8g", "a2-highgpu-8g"),
        ("eks", "A100-SXM4-80GB", 8, "p4d.24xlarge", "p4de.24xlarge"),
        ("eks", "H100-SXM5-80GB", 4, "p5.48xlarge", "only 8 per machine"),
        ("aks", "A100-SXM4-80GB", 8, "Standard_ND96asr_v4", "Standard_ND96amsr_A100_v4"),
        ("karpenter", "L4", 4, "g5.12xlarge", "g6.12xlarge, g6.24xlarge"),
    ],
)
def test_a_machine_type_with_other_gpus_is_refused_at_its_line_with_the_matching_ones(
    provider: str, model: str, count: int, machine: str, hint: str
) -> None:
    [(code, path, found_hint)] = diagnostics(pool(provider, model, count, machine))
    assert (code, path) == (MACHINE_TYPE_MISMATCH, "spec.nodePools.0.cloud.machineType")
    assert hint in found_hint


def test_an_unknown_machine_type_is_refused_with_the_ones_that_fit() -> None:
    [(code, path, hint)] = diagnostics(pool("gke", "L4", 1, "g2-standard-5"))
    assert (code, path) == (MACHINE_TYPE_MISMATCH, "spec.nodePools.0.cloud.machineType")
    assert "g2-standard-4, g2-standard-8" in hint


def test_gpus_no_machine_type_has_are_refused_at_the_count() -> None:
    [(code, path, hint)] = diagnostics(pool("aks", "A100-SXM4-40GB", 2))
    assert (code, path) == (MACHINE_TYPE_MISMATCH, "spec.nodePools.0.gpu.count")
    assert "only 8 per machine" in hint


def test_a_cpu_only_cloud_pool_names_its_machine() -> None:
    cpu = {"name": "cpu", "cloud": {"provider": "eks"}, "count": 1}
    assert [c for c, _, _ in diagnostics(cpu)] == [MACHINE_TYPE_MISMATCH]
    assert diagnostics({**cpu, "cloud": {"provider": "eks", "machineType": "m7i.large"}}) == []


@pytest.mark.parametrize(
    ("provider", "model", "count", "smallest"),
    [
        ("gke", "L4", 1, "g2-standard-4"),
        ("eks", "L4", 1, "g6.xlarge"),
        ("aks", "T4", 1, "Standard_NC4as_T4_v3"),
        ("gke", "A100-SXM4-80GB", 8, "a2-ultragpu-8g"),
    ],
)
def test_without_a_machine_type_the_smallest_that_matches_is_picked(
    provider: str, model: str, count: int, smallest: str
) -> None:
    bp = blueprint(pool(provider, model, count))
    assert pool_machine(bp.pools[0], load_catalog()).name == smallest


@pytest.mark.parametrize(
    ("provider", "label"),
    [
        ("gke", "cloud.google.com/gke-nodepool"),
        ("eks", "eks.amazonaws.com/nodegroup"),
        ("aks", "kubernetes.azure.com/agentpool"),
        ("karpenter", "karpenter.sh/nodepool"),
    ],
)
def test_a_cloud_pool_selects_its_providers_node_pool_label(provider: str, label: str) -> None:
    model, count = ("T4", 1) if provider == "aks" else ("L4", 1)
    bp = blueprint(pool(provider, model, count))
    requirement = bp.pools[0].selector.requirements()[0]
    assert (requirement.key, requirement.operator, requirement.values) == (label, "In", ("gpus",))


def test_a_selector_that_misses_the_providers_pool_is_refused_but_one_on_its_labels_is_taken() -> None:
    elsewhere = pool("gke", "L4", 1, selector={"matchLabels": {"cloud.google.com/gke-nodepool": "other"}})
    assert [c for c, _, _ in diagnostics(elsewhere)] == [CLOUD_SELECTOR_ELSEWHERE]
    own = pool("gke", "L4", 1, labels={"team": "a"}, selector={"matchLabels": {"team": "a"}})
    assert diagnostics(own) == []


def test_a_cloud_pool_is_sized_like_a_selector_pool() -> None:
    unsized = pool("gke", "L4", 1)
    del unsized["minNodes"], unsized["maxNodes"]
    assert {c for c, _, _ in diagnostics(unsized)} == {COMBINATION}  # count, or minNodes and maxNodes


TAINT = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]


def spec_of(*pools: dict[str, Any], **spec: Any) -> Any:
    [found] = node_pool_specs(context(blueprint(*pools, **spec)))
    return found


def test_gke_node_pool_carries_accelerators_labels_taints_autoscaling_and_partitions() -> None:
    mig = {"strategy": "mig", "mig": {"strategy": "single", "layout": {"1g.10gb": 7}}}
    spec = spec_of(pool("gke", "A100-SXM4-80GB", 8, taints=TAINT, sharing=mig, cloud={"zones": ["us-c1-a"]}))
    assert spec.resource == "gcp.container.NodePool"
    args = spec.args
    # The blueprint's figures are the pool's total: GKE's total counts, not the per-zone ones.
    assert args["autoscaling"] == {"total_min_node_count": 0, "total_max_node_count": 4, "location_policy": "BALANCED"}
    assert args["node_locations"] == ["us-c1-a"] and config_image(args) == "COS_CONTAINERD"
    config = args["node_config"]
    assert config["machine_type"] == "a2-ultragpu-8g"
    [accelerator] = config["guest_accelerators"]
    assert accelerator["type"] == "nvidia-a100-80gb" and accelerator["count"] == 8
    assert accelerator["gpu_partition_size"] == "1g.10gb"
    assert accelerator["gpu_driver_installation_config"] == {"gpu_driver_version": "LATEST"}
    assert config["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}]
    # gpustack's device plugin serves the pool (its config label), GKE's own plugin is switched off.
    assert config["labels"]["gpustack.io/pool"] == "gpus"
    assert config["labels"]["nvidia.com/device-plugin.config"]
    assert config["labels"]["gke-no-default-nvidia-gpu-device-plugin"] == "true"
    assert "gpu_sharing_config" not in accelerator


def config_image(args: dict[str, Any]) -> str:
    return str(args["node_config"]["image_type"])


def test_gke_leaves_the_driver_to_the_gpu_operator_when_it_installs_one() -> None:
    # The operator's driver asked for: Ubuntu (the only GKE image it runs on), GKE installs none.
    spec = spec_of(pool("gke", "L4", 1), stack="gpu-operator", gpuOperator={"driver": True})
    [accelerator] = spec.args["node_config"]["guest_accelerators"]
    assert accelerator["gpu_driver_installation_config"] == {"gpu_driver_version": "INSTALLATION_DISABLED"}
    assert config_image(spec.args) == "UBUNTU_CONTAINERD"


def test_eks_node_group_uses_the_nvidia_ami_and_fixed_sizes() -> None:
    spec = spec_of(_fixed(pool("eks", "H100-SXM5-80GB", 8, taints=TAINT, cloud={"spot": True}), 2))
    args = spec.args
    assert spec.resource == "aws.eks.NodeGroup"
    assert args["instance_types"] == ["p5.48xlarge"] and args["ami_type"] == "AL2023_x86_64_NVIDIA"
    assert args["capacity_type"] == "SPOT"
    assert args["scaling_config"] == {"desired_size": 2, "min_size": 2, "max_size": 2}
    assert args["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}]
    assert args["labels"]["gpustack.io/pool"] == "gpus"


def _fixed(data: dict[str, Any], count: int) -> dict[str, Any]:
    out = {k: v for k, v in data.items() if k not in ("minNodes", "maxNodes")}
    return {**out, "count": count}


def test_aks_agent_pool_gets_the_mig_instance_profile_labels_and_taints() -> None:
    mig = {"strategy": "mig", "mig": {"strategy": "single", "layout": {"3g.40gb": 2}}}
    spec = spec_of(pool("aks", "A100-SXM4-80GB", 8, taints=TAINT, sharing=mig, name="amig"))
    args = spec.args
    assert spec.resource == "azure-native.containerservice.AgentPool"
    assert args["vm_size"] == "Standard_ND96amsr_A100_v4" and args["gpu_instance_profile"] == "MIG3g"
    assert args["enable_auto_scaling"] is True and (args["min_count"], args["max_count"]) == (0, 4)
    assert args["node_taints"] == ["nvidia.com/gpu=present:NoSchedule"]
    assert args["node_labels"]["gpustack.io/pool"] == "amig"


def test_karpenter_node_pool_is_a_valid_v1_nodepool_with_requirements_and_limits() -> None:
    spec = spec_of(pool("karpenter", "A10G", 4, taints=TAINT, cloud={"zones": ["us-east-1a"]}))
    manifest = spec.args
    jsonschema.validate(manifest, json.loads(KARPENTER_SCHEMA.read_text()))
    requirements = {r["key"]: r["values"] for r in manifest["spec"]["template"]["spec"]["requirements"]}
    # Any instance with 4 x A10G, by Karpenter's GPU labels, for Karpenter to choose from.
    assert requirements["karpenter.k8s.aws/instance-gpu-name"] == ["a10g"]
    assert requirements["karpenter.k8s.aws/instance-gpu-count"] == ["4"]
    assert requirements["karpenter.k8s.aws/instance-gpu-manufacturer"] == ["nvidia"]
    assert requirements["karpenter.sh/capacity-type"] == ["on-demand"]
    assert requirements["topology.kubernetes.io/zone"] == ["us-east-1a"]
    assert manifest["spec"]["limits"] == {"nvidia.com/gpu": "16"}
    assert manifest["spec"]["template"]["spec"]["taints"] == TAINT
    assert manifest["spec"]["template"]["metadata"]["labels"]["gpustack.io/pool"] == "gpus"


def test_the_karpenter_schema_refuses_what_karpenter_would() -> None:
    manifest = spec_of(pool("karpenter", "A10G", 4)).args
    broken = json.loads(json.dumps(manifest))
    broken["spec"]["template"]["spec"]["requirements"][0]["operator"] = "Equals"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, json.loads(KARPENTER_SCHEMA.read_text()))


def test_compile_writes_each_cloud_pool_in_its_providers_shape_and_lists_it() -> None:
    bp = blueprint(
        pool("gke", "L4", 1, name="g"),
        pool("eks", "L4", 1, name="e"),
        pool("aks", "T4", 1, name="a"),
        pool("karpenter", "L4", 1, name="k"),
    )
    files = render_files(compile_blueprint(sourceless(bp)))
    gke = yaml.safe_load(files["cloud/g.gke.yaml"])["google_container_node_pool"]
    assert gke["node_config"]["machine_type"] == "g2-standard-4"
    eks = yaml.safe_load(files["cloud/e.eks.yaml"])["managedNodeGroups"][0]
    assert (eks["name"], eks["instanceTypes"], eks["amiFamily"]) == ("e", ["g6.xlarge"], "AmazonLinux2023")
    aks = yaml.safe_load(files["cloud/a.aks.yaml"])
    assert aks["name"] == "a" and aks["properties"]["vmSize"] == "Standard_NC4as_T4_v3"
    assert "nodeLabels" in aks["properties"] and "minCount" in aks["properties"]
    assert yaml.safe_load(files["cloud/k.karpenter.yaml"])["kind"] == "NodePool"
    for name in ("cloud/g.gke.yaml", "cloud/k.karpenter.yaml"):
        assert name in files["README.md"]
        assert name not in files["kustomization.yaml"]  # provisioning is the user's call, never `kubectl apply -k`


def test_replacing_changes_name_the_fields_that_recreate_the_node_pool() -> None:
    old = spec_of(pool("gke", "L4", 1, "g2-standard-4")).args
    new = spec_of(pool("gke", "L4", 1, "g2-standard-8")).args
    assert replacing_changes(old, new, "gke") == ["node_config.machine_type"]
    bigger = spec_of(pool("gke", "L4", 1, "g2-standard-4", maxNodes=9)).args
    assert replacing_changes(old, bigger, "gke") == []  # autoscaling changes in place


def test_simulate_reports_pods_that_fit_only_after_an_autoscaled_pool_grows() -> None:
    from gpustack.simulate import run_simulation
    from gpustack.simulate.report import format_text, report_data

    workload = {
        "name": "svc",
        "tenant": "t",
        "pool": "gpus",
        "kind": "Deployment",
        "image": "x:1",
        "replicas": 3,
        "gpu": {"count": 1},
    }
    more = {
        "workloads": [workload],
        "tenants": [{"name": "t", "namespaces": ["t"], "pools": ["gpus"], "quota": {"gpus": "unlimited"}}],
    }
    bp = blueprint(pool("gke", "L4", 1, minNodes=1, maxNodes=3), **more)
    objects = [m.obj for m in compile_blueprint(sourceless(bp)).objects]
    simulation = run_simulation(sourceless(bp), objects)
    assert len(simulation.outcome.placed) == 3 and not simulation.outcome.pending  # at the most: all fit
    assert len(simulation.after_scale_up) == 2  # the one node always there holds one
    data = report_data(simulation, "bp.yaml")
    assert data["summary"]["afterScaleUp"] == 2 and data["workloads"][0]["afterScaleUp"] == 2
    assert "3/3 placed, 2 only after scale-up" in format_text(data)
    fixed = blueprint(_fixed(pool("gke", "L4", 1), 3), **more)
    assert (
        run_simulation(sourceless(fixed), [m.obj for m in compile_blueprint(sourceless(fixed)).objects]).after_scale_up
        == ()
    )


def test_capacity_states_an_autoscaled_pools_gpus_at_min_and_at_max() -> None:
    from gpustack.capacity import measure_capacity

    bp = blueprint(pool("eks", "A10G", 4, minNodes=1, maxNodes=3))
    [found] = measure_capacity(context(bp)).pools
    assert found.selection.endswith("1 to 3 nodes (counted at the most; 4 GPU(s) at minNodes, 12 at maxNodes)")
    assert found.physical_gpus == 12

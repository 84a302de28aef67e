"""`pulumi up` provisions the cloud pools: under `pulumi.runtime.set_mocks`, the Karpenter NodePool through
pulumi-kubernetes, and the GKE, EKS and AKS node pools through the real provider SDKs (pulumi-gcp, -aws and
-azure-native, in the test extra). What is asserted is what the engine receives: the SDK's wire names (`nodeConfig`,
`autoscaling.totalMaxNodeCount`, `scalingConfig`, AKS `vmSize`), not gpustack's Python argument names; that every
nested key is a field of the SDK's input types is tests/test_cloud_sdk_inputs.py's walk."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pulumi
import pytest
from pulumi_gcp.container import Cluster
from test_deploy import Harness, start_harness

from gpustack.deploy import CloudCluster, GpuCluster, GpuClusterArgs, MissingCloudCluster, MissingCloudPackage

TYPES = {
    "gke": "gcp:container/nodePool:NodePool",
    "eks": "aws:eks/nodeGroup:NodeGroup",
    "aks": "azure-native:containerservice:AgentPool",
}
KARPENTER = "kubernetes:karpenter.sh/v1:NodePool"


@pytest.fixture
def harness(monkeypatch: pytest.MonkeyPatch) -> Iterator[Harness]:
    yield from start_harness(monkeypatch)


def write(tmp_path: Path, *pools: dict[str, Any]) -> Path:
    path = tmp_path / "bp.yaml"
    data = {
        "apiVersion": "gpustack.io/v1alpha1",
        "kind": "ClusterBlueprint",
        "metadata": {"name": "clouds"},
        "spec": {"kubernetes": {"version": "1.31"}, "stack": "device-plugin", "nodePools": list(pools)},
    }
    path.write_text(json.dumps(data))
    return path


def cloud_pool(name: str, provider: str, model: str, count: int) -> dict[str, Any]:
    return {
        "name": name,
        "gpu": {"model": model, "count": count},
        "cloud": {"provider": provider},
        "minNodes": 1,
        "maxNodes": 3,
        "taints": [{"key": "gpu", "effect": "NoSchedule"}],
    }


def test_each_cloud_pool_registers_its_providers_node_pool_after_the_cluster(harness: Harness, tmp_path: Path) -> None:
    blueprint = write(
        tmp_path,
        cloud_pool("g", "gke", "L4", 1),
        cloud_pool("e", "eks", "A10G", 1),
        cloud_pool("a", "aks", "T4", 1),
    )

    def program() -> None:
        made = Cluster("the-cluster", location="us-central1")
        target = CloudCluster(
            cluster="c1",
            location="us-central1",
            node_role_arn="arn:role",
            subnet_ids=["s1"],
            resource_group_name="rg",
            depends_on=[made],
        )
        GpuCluster("gs", GpuClusterArgs(blueprint, cloud=target))

    harness.run(program)
    cluster_urn = harness.named("the-cluster").urn
    gke, eks, aks = (harness.named(f"gs-node-pool-{name}") for name in "gea")
    assert (gke.type, eks.type, aks.type) == (TYPES["gke"], TYPES["eks"], TYPES["aks"])
    for registration in (gke, eks, aks):
        assert cluster_urn in registration.dependencies
        assert registration.parent.endswith("GpuCluster::gs")
    assert gke.inputs["cluster"] == "c1" and gke.inputs["location"] == "us-central1"
    config = gke.inputs["nodeConfig"]
    assert config["machineType"] == "g2-standard-4"
    assert config["guestAccelerators"] == [
        {"type": "nvidia-l4", "count": 1, "gpuDriverInstallationConfig": {"gpuDriverVersion": "LATEST"}}
    ]
    assert config["taints"] == [{"key": "gpu", "value": "", "effect": "NO_SCHEDULE"}]
    # The pool's totals (GKE's per-zone minNodeCount/maxNodeCount would multiply them by the zones).
    assert gke.inputs["autoscaling"] == {"totalMinNodeCount": 1, "totalMaxNodeCount": 3, "locationPolicy": "BALANCED"}
    assert "node_config" not in gke.inputs and "autoscaling" in gke.inputs  # wire names only
    assert eks.inputs["clusterName"] == "c1" and eks.inputs["subnetIds"] == ["s1"]
    assert eks.inputs["nodeRoleArn"] == "arn:role"
    assert eks.inputs["instanceTypes"] == ["g5.xlarge"] and eks.inputs["amiType"] == "AL2023_x86_64_NVIDIA"
    assert eks.inputs["scalingConfig"] == {"desiredSize": 1, "minSize": 1, "maxSize": 3}
    assert eks.inputs["taints"] == [{"key": "gpu", "effect": "NO_SCHEDULE"}]
    assert aks.inputs["resourceName"] == "c1" and aks.inputs["resourceGroupName"] == "rg"
    assert aks.inputs["agentPoolName"] == "a"
    assert aks.inputs["vmSize"] == "Standard_NC4as_T4_v3" and aks.inputs["nodeTaints"] == ["gpu:NoSchedule"]
    assert aks.inputs["nodeLabels"]["gpustack.io/pool"] == "a"
    assert (aks.inputs["enableAutoScaling"], aks.inputs["minCount"], aks.inputs["maxCount"]) == (True, 1, 3)


def test_a_karpenter_pool_registers_a_nodepool_object_with_the_kubernetes_provider(
    harness: Harness, tmp_path: Path
) -> None:
    blueprint = write(tmp_path, cloud_pool("k", "karpenter", "L4", 8))
    harness.run(lambda: GpuCluster("gs", GpuClusterArgs(blueprint)))
    [nodepool] = harness.of_type(KARPENTER)
    assert nodepool.name == "gs-node-pool-k"
    spec = nodepool.inputs["spec"]
    assert spec["limits"] == {"nvidia.com/gpu": "24"}
    # By GPU (Karpenter's instance-gpu-* labels): any instance with 8 x L4.
    requirements = {r["key"]: r["values"] for r in spec["template"]["spec"]["requirements"]}
    assert requirements["karpenter.k8s.aws/instance-gpu-name"] == ["l4"]
    assert requirements["karpenter.k8s.aws/instance-gpu-count"] == ["8"]
    assert spec["template"]["metadata"]["labels"]["gpustack.io/pool"] == "k"
    # The EC2NodeClass it launches through is read (a missing one fails `pulumi up` naming it), and waited for.
    [read] = [r for r in harness.monitor.reads if r.type == "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"]
    assert read.id == "default" and read.name == "gs-node-pool-k-node-class"
    assert any(urn.endswith("::gs-node-pool-k-node-class") for urn in nodepool.dependencies)
    # The NodePool selects what the device plugin's affinity requires: karpenter.sh/nodepool=k.
    plugin = harness.of_type("kubernetes:helm.sh/v4:Chart")
    assert plugin, "the device plugin chart is registered too"


def test_a_missing_provider_package_is_named_with_its_extra(
    harness: Harness, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pulumi_gcp.container", None)  # an import of it fails, as where it is missing
    blueprint = write(tmp_path, cloud_pool("g", "gke", "L4", 1))
    with pytest.raises(MissingCloudPackage, match=r"pip install 'gpustack\[gke\]'"):
        harness.run(lambda: GpuCluster("gs", GpuClusterArgs(blueprint)))
    assert harness.registrations() == []  # stopped before the component, not halfway through it


STACKS = Path(__file__).resolve().parents[1] / "stacks"


@pytest.mark.parametrize("provider", ["gke", "eks", "aks", "karpenter"])
def test_each_providers_stack_provisions_its_blueprints_pools_with_its_config(harness: Harness, provider: str) -> None:
    import runpy

    import yaml

    from gpustack.validation import validate_path

    config = yaml.safe_load((STACKS / f"Pulumi.{provider}.yaml").read_text(encoding="utf-8"))["config"]
    pulumi.runtime.set_all_config({k: json.dumps(v) if isinstance(v, dict) else str(v) for k, v in config.items()})
    harness.run(lambda: runpy.run_path(str(STACKS / "__main__.py"), run_name="__main__"))
    blueprint = validate_path(STACKS / config["gpustack:blueprint"]).blueprint
    assert blueprint is not None
    made = harness.of_type(KARPENTER if provider == "karpenter" else TYPES[provider])
    assert sorted(r.name for r in made) == sorted(f"gpustack-node-pool-{p.name}" for p in blueprint.pools)
    cloud = config.get("gpustack:cloud", {})
    for registration in made:
        key = {"gke": "cluster", "eks": "clusterName", "aks": "resourceName"}.get(provider)
        if key is not None:
            assert registration.inputs[key] == cloud["cluster"]


@pytest.mark.parametrize(
    ("provider", "given", "missing"),
    [
        ("gke", {}, "cluster"),
        ("eks", {"cluster": "c1", "subnet_ids": ["s1"]}, "node_role_arn"),
        ("aks", {"cluster": "c1"}, "resource_group_name"),
    ],
)
def test_a_cloud_pool_without_the_cluster_inputs_its_sdk_requires_stops_before_registering(
    harness: Harness, tmp_path: Path, provider: str, given: dict[str, Any], missing: str
) -> None:
    """The real SDKs raise a TypeError ("Missing required property 'cluster'") in the middle of the component; gpustack
    says which CloudCluster field the pool needs before anything is registered."""
    model = {"gke": "L4", "eks": "A10G", "aks": "T4"}[provider]
    blueprint = write(tmp_path, cloud_pool("p", provider, model, 1))
    with pytest.raises(MissingCloudCluster, match=rf"pool 'p' is a {provider} pool .* gives no {missing}"):
        harness.run(lambda: GpuCluster("gs", GpuClusterArgs(blueprint, cloud=CloudCluster(**given))))
    assert harness.registrations() == []

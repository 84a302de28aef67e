"""blueprints/cloud/*.yaml compiled and registered with the real provider SDKs under Pulumi mocks: per cloud, the node
pool the engine receives (wire names) and the GPU Operator's values, field by field, against NVIDIA's page for that
cloud and the cloud's own documentation of each field.

Pages:
- GKE: https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/google-gke.html ("Using the Google Driver
  Installer": the gke-no-default-nvidia-gpu-device-plugin=true node label; helm --set
  hostPaths.driverInstallDir=/home/kubernetes/bin/nvidia, toolkit.installDir=/home/kubernetes/bin/nvidia,
  cdi.enabled=true, driver.enabled=false; migManager.env WITH_REBOOT=true for MIG; the gpu-operator-quota
  ResourceQuota, pods 100, PriorityClass In system-node-critical/system-cluster-critical) and GKE's NodePool API
  (https://cloud.google.com/kubernetes-engine/docs/reference/rest/v1/projects.locations.clusters.nodePools:
  autoscaling.totalMinNodeCount/totalMaxNodeCount bound the whole pool, minNodeCount/maxNodeCount each zone;
  locationPolicy BALANCED or ANY; accelerators[].gpuDriverInstallationConfig.gpuDriverVersion and gpuPartitionSize).
- AKS: https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/microsoft-aks.html (AKS images carry the
  driver and the toolkit: driver.enabled=false, toolkit.enabled=false, operator.runtimeClass=nvidia-container-runtime;
  or a pool that skips AKS's driver and the operator installed plainly) and
  https://learn.microsoft.com/en-us/azure/aks/gpu-cluster (`az aks nodepool add --gpu-driver none`, the agent pool's
  gpuProfile.driver None), https://learn.microsoft.com/en-us/azure/aks/gpu-multi-instance (gpuInstanceProfile MIG3g).
- EKS: https://docs.aws.amazon.com/eks/latest/userguide/ml-eks-optimized-ami.html (the AL2023 NVIDIA AMI carries the
  driver and the container toolkit) and the EKS CreateNodegroup API
  (https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateNodegroup.html: amiType AL2023_x86_64_NVIDIA,
  capacityType ON_DEMAND|SPOT, diskSize, scalingConfig, taints with NO_SCHEDULE).

Where gpustack departs from NVIDIA's GKE page, the test says so: the page turns GKE's driver install off
(gpu-driver-version=disabled) and applies Google's installer DaemonSet by hand; gpustack asks GKE to install Google's
driver (gpuDriverVersion LATEST), the same driver in the same directory without the manual step. The page's
cdi.default=true is left out: the v26.7.0 ClusterPolicy CRD marks it deprecated (CDI is the default mechanism once
cdi.enabled is true; /work/shared/conformance/crds/nvidia.com_clusterpolicies.yaml).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import BLUEPRINTS
from test_cloud_sdk_inputs import SDK_ARGS, TARGET, registration_mismatches
from test_deploy import Harness, start_harness

from gpustack.deploy import CloudCluster, GpuCluster, GpuClusterArgs

OPERATOR_RELEASE = "kubernetes:helm.sh/v3:Release"
CONFIG_GROUP = "kubernetes:yaml/v2:ConfigGroup"


@pytest.fixture
def harness(monkeypatch: pytest.MonkeyPatch) -> Iterator[Harness]:
    yield from start_harness(monkeypatch)


def apply(harness: Harness, path: Path) -> tuple[dict[str, dict[str, Any]], dict[str, Any], list[dict[str, Any]]]:
    """(node pools by pool name as the engine receives them, the GPU Operator's values, every object applied)."""
    harness.run(lambda: GpuCluster("gs", GpuClusterArgs(path, cloud=CloudCluster(**TARGET))))
    pools = [r for r in harness.registrations() if r.type in SDK_ARGS]
    assert [problem for pool in pools for problem in registration_mismatches(pool)] == []
    (operator,) = [r for r in harness.of_type(OPERATOR_RELEASE) if r.inputs["chart"].endswith("gpu-operator")]
    objects = [obj for group in harness.of_type(CONFIG_GROUP) for obj in group.inputs["objs"]]
    return {r.name.removeprefix("gs-node-pool-"): r.inputs for r in pools}, operator.inputs["values"], objects


def test_gke_pools_and_operator_follow_nvidias_gke_page_with_the_google_driver(harness: Harness) -> None:
    pools, values, objects = apply(harness, BLUEPRINTS / "cloud" / "gke.yaml")
    l4, a100 = pools["l4"], pools["a100-mig"]
    assert l4 == {
        "cluster": "c1",
        "location": "us-central1",
        "name": "l4",
        "nodeLocations": ["us-central1-a", "us-central1-b"],
        # maxNodes 8 over two zones: the pool's total (totalMaxNodeCount), not 8 per zone (16 nodes).
        "initialNodeCount": 0,
        "autoscaling": {"totalMinNodeCount": 0, "totalMaxNodeCount": 8, "locationPolicy": "ANY"},  # spot: ANY
        "nodeConfig": {
            "machineType": "g2-standard-4",
            "imageType": "COS_CONTAINERD",  # Container-Optimized OS: Google's driver (NVIDIA's page, table)
            "spot": True,
            "labels": {
                "gke-no-default-nvidia-gpu-device-plugin": "true",  # NVIDIA's page: GKE's plugin off
                "gpustack.io/pool": "l4",
                "nvidia.com/device-plugin.config": "whole-gpu",
            },
            # The blueprint's taint, in GKE's effect spelling (NodeTaint.effect: NO_SCHEDULE).
            "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}],
            "guestAccelerators": [
                {"type": "nvidia-l4", "count": 1, "gpuDriverInstallationConfig": {"gpuDriverVersion": "LATEST"}}
            ],
        },
    }
    # One profile on every GPU: GKE partitions at boot (gpuPartitionSize), the MIG manager finds that layout.
    assert a100["nodeConfig"]["guestAccelerators"] == [
        {
            "type": "nvidia-a100-80gb",
            "count": 8,
            "gpuDriverInstallationConfig": {"gpuDriverVersion": "LATEST"},
            "gpuPartitionSize": "3g.40gb",
        }
    ]
    assert a100["autoscaling"] == {"totalMinNodeCount": 1, "totalMaxNodeCount": 2, "locationPolicy": "BALANCED"}
    # NVIDIA's GKE page, helm --set line by line.
    assert values["hostPaths"] == {"driverInstallDir": "/home/kubernetes/bin/nvidia"}
    assert values["toolkit"]["enabled"] is True and values["toolkit"]["installDir"] == "/home/kubernetes/bin/nvidia"
    assert values["cdi"] == {"enabled": True}
    assert values["driver"] == {"enabled": False}
    assert values["migManager"]["env"] == [{"name": "WITH_REBOOT", "value": "true"}]  # MIG on GKE reboots the VM
    assert "env" not in values["toolkit"]  # RUNTIME_CONFIG_SOURCE=file is for GKE 1.33+; this blueprint is 1.31
    # The page's gpu-operator-quota: the operator's system-node-critical pods are admitted in its namespace.
    (quota,) = [o for o in objects if o["kind"] == "ResourceQuota" and o["metadata"]["namespace"] == "gpu-operator"]
    assert quota["spec"] == {
        "hard": {"pods": "100"},
        "scopeSelector": {
            "matchExpressions": [
                {
                    "operator": "In",
                    "scopeName": "PriorityClass",
                    "values": ["system-node-critical", "system-cluster-critical"],
                }
            ]
        },
    }


def test_aks_pool_and_operator_follow_nvidias_aks_page_with_aks_driver_and_toolkit(harness: Harness) -> None:
    pools, values, _ = apply(harness, BLUEPRINTS / "cloud" / "aks.yaml")
    assert pools["a100mig"] == {
        "resourceName": "c1",
        "resourceGroupName": "rg",
        "agentPoolName": "a100mig",
        "vmSize": "Standard_ND96amsr_A100_v4",
        "mode": "User",
        "osType": "Linux",
        "availabilityZones": ["1"],
        "count": 1,
        "enableAutoScaling": True,
        "minCount": 1,
        "maxCount": 2,
        "scaleSetPriority": "Regular",
        "gpuInstanceProfile": "MIG3g",  # AKS's multi-instance page: the profile is set when the pool is made
        "nodeLabels": {
            "gpustack.io/pool": "a100mig",
            "nvidia.com/device-plugin.config": "mig-single",
            "nvidia.com/mig.config": "gpustack-a100mig",
        },
        "nodeTaints": ["nvidia.com/gpu=present:NoSchedule"],
    }
    assert "gpuProfile" not in pools["a100mig"]  # AKS installs its driver: the operator's is off
    # NVIDIA's AKS page, "Installing the Operator": both off, the image's runtime class named.
    assert values["driver"] == {"enabled": False}
    assert values["toolkit"] == {"enabled": False}
    assert values["operator"] == {"runtimeClass": "nvidia-container-runtime"}


def test_aks_pool_that_skips_aks_driver_gets_the_operators_driver_and_toolkit(harness: Harness, tmp_path: Path) -> None:
    """NVIDIA's AKS page's other way: a pool without AKS's driver (`--gpu-driver none`: gpuProfile.driver None), and
    the operator installed with nothing special: its driver and toolkit on, no runtime class."""
    text = (BLUEPRINTS / "cloud" / "aks.yaml").read_text(encoding="utf-8")
    path = tmp_path / "aks.yaml"
    path.write_text(text.replace("spec:\n", "spec:\n  gpuOperator: {driver: true}\n", 1))
    pools, values, _ = apply(harness, path)
    assert pools["a100mig"]["gpuProfile"] == {"driver": "None"}
    assert values["driver"]["enabled"] is True and values["toolkit"]["enabled"] is True
    assert "operator" not in values or "runtimeClass" not in values["operator"]


def test_eks_node_group_and_operator_follow_the_eks_nvidia_ami(harness: Harness) -> None:
    pools, values, _ = apply(harness, BLUEPRINTS / "cloud" / "eks.yaml")
    assert pools["h100"] == {
        "clusterName": "c1",
        "nodeRoleArn": "arn:aws:iam::1:role/nodes",
        "subnetIds": ["subnet-1"],
        "nodeGroupName": "h100",
        "instanceTypes": ["p5.48xlarge"],
        "amiType": "AL2023_x86_64_NVIDIA",  # driver and container toolkit preinstalled (the EKS AMI page)
        "capacityType": "ON_DEMAND",
        "diskSize": 500,
        "labels": {
            "gpustack.io/pool": "h100",
            "nvidia.com/device-plugin.config": "whole-gpu",
            "nvidia.com/mig.config": "all-disabled",
        },
        "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}],
        "scalingConfig": {"desiredSize": 0, "minSize": 0, "maxSize": 2},
    }
    assert values["driver"] == {"enabled": False} and values["toolkit"] == {"enabled": False}


def test_a_kueue_tenant_on_a_cloud_pool_gets_cpu_and_memory_from_the_machine(tmp_path: Path) -> None:
    """Kueue's ClusterQueue must cover cpu and memory; on a cloud pool whose machine gpustack knows, they are the
    machine's allocatable (vCPUs and memory less GKE's published reserve) times the pool's nodes, without the
    nodeResources GS508 asked for before."""
    from gpustack.compile import compile_blueprint
    from gpustack.validation import validate_path

    text = json.dumps(
        {
            "apiVersion": "gpustack.io/v1alpha1",
            "kind": "ClusterBlueprint",
            "metadata": {"name": "kueue-cloud"},
            "spec": {
                "kubernetes": {"version": "1.31"},
                "stack": "device-plugin",
                "nodePools": [
                    {
                        "name": "l4",
                        "gpu": {"model": "L4", "count": 1},
                        "cloud": {"provider": "gke", "machineType": "g2-standard-8", "zones": ["us-central1-a"]},
                        "count": 2,
                    }
                ],
                "tenants": [
                    {
                        "name": "team",
                        "namespaces": ["team"],
                        "pools": ["l4"],
                        "scheduler": "kueue",
                        "quota": {"l4": {"gpu": 2}},
                    }
                ],
            },
        }
    )
    path = tmp_path / "bp.yaml"
    path.write_text(text)
    validation = validate_path(path)
    assert [d.code for d in validation.diagnostics if d.severity.name.lower() == "error"] == []
    assert validation.context is not None
    plan = compile_blueprint(validation.context)
    [queue] = [m.obj for m in plan.objects if m.obj["kind"] == "ClusterQueue"]
    [flavor] = queue["spec"]["resourceGroups"][0]["flavors"]
    quota = {r["name"]: r["nominalQuota"] for r in flavor["resources"]}
    # g2-standard-8: 8 vCPUs, 32 GiB. CPU reserve 6% + 1% + 2 x 0.5% + 4 x 0.25% = 90m, so 7910m a node; memory
    # 25% of 4 GiB + 20% of 4 + 10% of 8 + 6% of 16 = 3.56 GiB, plus 100 MiB eviction: 29,022 Mi a node (rounded down).
    assert quota["cpu"] == "15820m"
    assert quota["memory"] == "58044Mi"
    assert quota["nvidia.com/gpu"] == 2

"""Per cloud, the GPU stack NVIDIA's page for that cloud documents (issue 26): who installs the driver and the
container toolkit, the operator values each page asks for, the taints each cloud puts on its nodes by itself, and
GKE's per-zone counts turned into the blueprint's totals.

Pages: https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/google-gke.html (GKE),
https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/microsoft-aks.html (AKS),
https://docs.aws.amazon.com/eks/latest/userguide/ml-eks-optimized-ami.html (EKS and Karpenter NVIDIA AMIs),
https://learn.microsoft.com/en-us/azure/aks/spot-node-pool (AKS's spot taint).
"""

from __future__ import annotations

import json
from typing import Any

from builders import blueprint, sourceless

from gpustack.codes import BOTTLEROCKET_DEVICE_PLUGIN, CLOUD_DRIVER_CONFLICT, GKE_ZONE_COUNT
from gpustack.compile import compile_blueprint
from gpustack.compile.cloud import node_pool_specs
from gpustack.compile.gpu_operator import build_values
from gpustack.simulate import run_simulation
from gpustack.validation import validate_text

OPERATOR = {"stack": "gpu-operator"}
MIG = {"strategy": "mig", "mig": {"strategy": "single", "layout": {"3g.40gb": 2}}}


def pool(provider: str, model: str = "L4", gpus: int = 1, **more: Any) -> dict[str, Any]:
    cloud = {"provider": provider, **more.pop("cloud", {})}
    return {"name": more.pop("name", "gpus"), "gpu": {"model": model, "count": gpus}, "cloud": cloud, **more}


def gke(**more: Any) -> dict[str, Any]:
    more.setdefault("minNodes", 0)
    more.setdefault("maxNodes", 4)
    cloud = {"zones": ["us-central1-a"], **more.pop("cloud", {})}
    return pool("gke", cloud=cloud, **more)


def diagnostics(*pools: dict[str, Any], **spec: Any) -> list[tuple[str, str, str]]:
    data = {
        "apiVersion": "gpustack.io/v1alpha1",
        "kind": "ClusterBlueprint",
        "metadata": {"name": "t"},
        "spec": {"kubernetes": {"version": "1.31"}, **spec, "nodePools": list(pools)},
    }
    result = validate_text(json.dumps(data), "t.json")
    return [(d.code, ".".join(map(str, d.path)), d.hint or "") for d in result.diagnostics]


def args_of(*pools: dict[str, Any], **spec: Any) -> dict[str, Any]:
    [spec_] = node_pool_specs(sourceless(blueprint(*pools, **spec)))
    return dict(spec_.args)


def values_of(*pools: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return build_values(sourceless(blueprint(*pools, **OPERATOR, **spec)))


# --- GKE -------------------------------------------------------------------------------------------------------------


def test_gke_default_is_googles_driver_on_cos_with_the_operator_values_nvidias_page_gives() -> None:
    args = args_of(gke(), **OPERATOR)
    assert args["node_config"]["image_type"] == "COS_CONTAINERD"
    [accelerator] = args["node_config"]["guest_accelerators"]
    assert accelerator["gpu_driver_installation_config"] == {"gpu_driver_version": "LATEST"}
    values = values_of(gke())
    # helm install ... --set hostPaths.driverInstallDir=/home/kubernetes/bin/nvidia
    #   --set toolkit.installDir=/home/kubernetes/bin/nvidia --set cdi.enabled=true --set driver.enabled=false
    assert values["driver"] == {"enabled": False}
    assert values["hostPaths"] == {"driverInstallDir": "/home/kubernetes/bin/nvidia"}
    assert values["toolkit"]["enabled"] is True and values["toolkit"]["installDir"] == "/home/kubernetes/bin/nvidia"
    assert values["cdi"] == {"enabled": True}
    assert "env" not in values["toolkit"]  # 1.31: the 1.33 containerd note does not apply


def test_gke_gets_the_quota_that_admits_the_operators_critical_pods() -> None:
    plan = compile_blueprint(sourceless(blueprint(gke(), **OPERATOR)))
    [quota] = [m.obj for m in plan.objects if m.obj["kind"] == "ResourceQuota" and m.family == "gpu-operator"]
    assert quota["metadata"]["namespace"] == "gpu-operator"
    assert quota["spec"]["hard"] == {"pods": "100"}
    [expression] = quota["spec"]["scopeSelector"]["matchExpressions"]
    assert expression == {
        "operator": "In",
        "scopeName": "PriorityClass",
        "values": ["system-node-critical", "system-cluster-critical"],
    }
    eks = compile_blueprint(sourceless(blueprint(pool("eks", "H100-SXM5-80GB", 8, minNodes=0, maxNodes=1), **OPERATOR)))
    assert not [m for m in eks.objects if m.obj["kind"] == "ResourceQuota" and m.family == "gpu-operator"]


def test_gke_from_1_33_the_toolkit_reads_containerds_config_file() -> None:
    values = values_of(gke(), kubernetes={"version": "1.33"})
    assert values["toolkit"]["env"] == [{"name": "RUNTIME_CONFIG_SOURCE", "value": "file"}]


def test_gke_mig_pools_let_the_mig_manager_reboot() -> None:
    values = values_of(gke(model="A100-SXM4-80GB", gpus=8, sharing=MIG))
    assert values["migManager"]["env"] == [{"name": "WITH_REBOOT", "value": "true"}]
    eks_mig = pool("eks", "A100-SXM4-80GB", 8, minNodes=0, maxNodes=1, sharing=MIG)
    assert "env" not in values_of(eks_mig)["migManager"]


def test_gke_operator_driver_means_ubuntu_and_no_google_driver() -> None:
    args = args_of(gke(), **OPERATOR, gpuOperator={"driver": True})
    assert args["node_config"]["image_type"] == "UBUNTU_CONTAINERD"
    [accelerator] = args["node_config"]["guest_accelerators"]
    assert accelerator["gpu_driver_installation_config"] == {"gpu_driver_version": "INSTALLATION_DISABLED"}
    values = values_of(gke(), gpuOperator={"driver": True})
    assert values["driver"] == {"enabled": True} and "hostPaths" not in values and "cdi" not in values


def test_gke_ubuntu_with_googles_driver_is_accepted() -> None:
    ubuntu = gke(cloud={"imageType": "UBUNTU_CONTAINERD"})
    assert not diagnostics(ubuntu, **OPERATOR, gpuOperator={"driver": False})
    [accelerator] = args_of(ubuntu, **OPERATOR, gpuOperator={"driver": False})["node_config"]["guest_accelerators"]
    assert accelerator["gpu_driver_installation_config"] == {"gpu_driver_version": "LATEST"}


def test_gke_cos_with_the_operators_driver_is_refused_at_the_image() -> None:
    found = diagnostics(gke(cloud={"imageType": "COS_CONTAINERD"}), **OPERATOR, gpuOperator={"driver": True})
    [(code, path, hint)] = found
    assert code == CLOUD_DRIVER_CONFLICT and path == "spec.nodePools.0.cloud.imageType"
    assert "UBUNTU_CONTAINERD" in hint and "gpuOperator.driver: false" in hint


def test_gke_without_the_operators_toolkit_is_refused() -> None:
    [(code, path, hint)] = diagnostics(gke(), **OPERATOR, gpuOperator={"toolkit": False})
    assert code == CLOUD_DRIVER_CONFLICT and path == "spec.gpuOperator.toolkit" and "toolkit: true" in hint


def test_an_image_type_is_only_for_gke_and_eks() -> None:
    assert diagnostics(pool("aks", "T4", 1, count=1, cloud={"imageType": "COS_CONTAINERD"}))[0][0].startswith("GS1")
    assert diagnostics(gke(cloud={"imageType": "AL2023_x86_64_NVIDIA"}))[0][0].startswith("GS1")


# --- EKS and Karpenter -------------------------------------------------------------------------------------------


def test_eks_and_karpenter_nvidia_amis_turn_the_operators_driver_and_toolkit_off() -> None:
    for provider in ("eks", "karpenter"):
        values = values_of(pool(provider, "H100-SXM5-80GB", 8, minNodes=0, maxNodes=1))
        assert values["driver"] == {"enabled": False} and values["toolkit"] == {"enabled": False}, provider
        assert "operator" not in values and "hostPaths" not in values


def test_eks_refuses_a_bottlerocket_nvidia_ami_whose_own_device_plugin_would_be_a_second_one() -> None:
    """Bottlerocket's NVIDIA variants bundle the NVIDIA device plugin (the EKS accelerated-AMI page; eksctl skips its
    plugin there), and gpustack's stack runs one on the pool: refused at the image, with AL2023's NVIDIA AMI as the
    hint (the driver and toolkit, no plugin). Both stacks: the chart's plugin and the operator's."""
    for stack in ({}, OPERATOR):
        bottlerocket = pool("eks", "L4", 1, minNodes=0, maxNodes=1, cloud={"imageType": "BOTTLEROCKET_x86_64_NVIDIA"})
        [(code, path, hint)] = diagnostics(bottlerocket, **stack)
        assert (code, path) == (BOTTLEROCKET_DEVICE_PLUGIN, "spec.nodePools.0.cloud.imageType")
        assert hint.startswith("imageType: AL2023_x86_64_NVIDIA")
    al2023 = pool("eks", "L4", 1, minNodes=0, maxNodes=1, cloud={"imageType": "AL2023_x86_64_NVIDIA"})
    assert diagnostics(al2023) == []


def test_eks_with_the_operators_toolkit_is_refused_at_the_setting() -> None:
    eks = pool("eks", "L4", 1, minNodes=0, maxNodes=1)
    [(code, path, hint)] = diagnostics(eks, **OPERATOR, gpuOperator={"toolkit": True})
    assert (
        code == CLOUD_DRIVER_CONFLICT
        and path == "spec.gpuOperator.toolkit"
        and hint.startswith("gpuOperator.toolkit: false")
    )


def test_two_clouds_with_different_recipes_are_refused_at_the_pool() -> None:
    ubuntu = gke(name="g", cloud={"imageType": "UBUNTU_CONTAINERD"})
    eks = pool("eks", "L4", 1, name="e", minNodes=0, maxNodes=1)
    found = {(code, path) for code, path, _ in diagnostics(ubuntu, eks, **OPERATOR)}
    assert (CLOUD_DRIVER_CONFLICT, "spec.nodePools.1.cloud.provider") in found


# --- AKS ---------------------------------------------------------------------------------------------------------


def test_aks_images_keep_their_driver_and_toolkit_and_name_the_runtime_class() -> None:
    aks = pool("aks", "T4", 1, count=1)
    values = values_of(aks)
    # helm install ... --set driver.enabled=false --set toolkit.enabled=false
    #   --set operator.runtimeClass=nvidia-container-runtime
    assert values["driver"] == {"enabled": False} and values["toolkit"] == {"enabled": False}
    assert values["operator"] == {"runtimeClass": "nvidia-container-runtime"}
    assert "gpu_profile" not in args_of(aks, **OPERATOR)


def test_aks_skips_its_driver_when_the_operator_installs_one() -> None:
    aks = pool("aks", "T4", 1, count=1)
    assert args_of(aks, **OPERATOR, gpuOperator={"driver": True})["gpu_profile"] == {"driver": "None"}
    values = values_of(aks, gpuOperator={"driver": True})
    assert values["driver"] == {"enabled": True} and values["toolkit"] == {"enabled": True}
    assert "operator" not in values


def test_an_aks_spot_pool_tolerates_its_taint_and_advertises_gpus_in_simulate() -> None:
    aks = pool("aks", "T4", 1, name="spot", count=2, cloud={"spot": True})
    workload = {"name": "svc", "tenant": "t", "pool": "spot", "kind": "Deployment", "image": "x:1", "replicas": 2}
    more = {
        "workloads": [{**workload, "gpu": {"count": 1}}],
        "tenants": [{"name": "t", "namespaces": ["t"], "pools": ["spot"], "quota": {"spot": "unlimited"}}],
    }
    bp = blueprint(aks, **OPERATOR, **more)
    spot = {"key": "kubernetes.azure.com/scalesetpriority", "operator": "Exists", "effect": "NoSchedule"}
    assert spot in build_values(sourceless(bp))["daemonsets"]["tolerations"]
    # AKS adds the taint itself: gpustack does not ask for it in the agent pool's arguments.
    assert "node_taints" not in args_of(aks)
    plan = compile_blueprint(sourceless(bp))
    simulation = run_simulation(sourceless(bp), [m.obj for m in plan.objects])
    assert len(simulation.outcome.placed) == 2 and not simulation.outcome.pending


def test_a_gke_gpu_pool_carries_gkes_taint_in_simulate_and_the_device_plugin_tolerates_it() -> None:
    from gpustack.compile.device_plugin import build_tolerations

    bp = blueprint(gke())
    [gpus] = bp.pools
    assert [(t.key, t.value, t.effect, t.by_cloud) for t in gpus.taints] == [
        ("nvidia.com/gpu", "present", "NoSchedule", True)
    ]
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in build_tolerations([gpus])
    # Written by the blueprint too: one taint, gpustack's own, still asked of GKE.
    written = gke(taints=[{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}])
    assert [t.by_cloud for t in blueprint(written).pools[0].taints] == [False]
    assert args_of(written)["node_config"]["taints"] == [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}
    ]
    assert "taints" not in args_of(gke())["node_config"]


# --- GKE counts --------------------------------------------------------------------------------------------------


def test_a_two_zone_gke_pool_with_max_nodes_8_reaches_8_nodes_not_16() -> None:
    args = args_of(gke(maxNodes=8, minNodes=2, cloud={"zones": ["us-central1-a", "us-central1-b"]}))
    assert args["autoscaling"] == {"total_min_node_count": 2, "total_max_node_count": 8, "location_policy": "BALANCED"}
    assert args["initial_node_count"] == 1  # per zone: 2 in all
    spot = args_of(gke(minNodes=1, maxNodes=1, cloud={"zones": ["us-central1-a", "us-central1-b"], "spot": True}))
    assert spot["autoscaling"]["location_policy"] == "ANY" and spot["initial_node_count"] == 0


def test_a_fixed_gke_count_is_divided_over_its_zones() -> None:
    two = gke(cloud={"zones": ["us-central1-a", "us-central1-b"]})
    fixed = {k: v for k, v in two.items() if k not in ("minNodes", "maxNodes")}
    assert args_of({**fixed, "count": 4})["node_count"] == 2
    [(code, path, _)] = diagnostics({**fixed, "count": 3})
    assert (code, path) == (GKE_ZONE_COUNT, "spec.nodePools.0.count")


def test_a_gke_pool_without_zones_is_warned_that_gke_multiplies_its_count() -> None:
    no_zones = pool("gke", count=2)
    [(code, path, _)] = diagnostics(no_zones)
    assert (code, path) == (GKE_ZONE_COUNT, "spec.nodePools.0.count")
    assert not diagnostics(pool("gke", minNodes=0, maxNodes=3))  # totals only: nothing per zone to multiply


def test_every_gke_key_exists_in_the_upstream_chart() -> None:
    from test_gpu_operator import upstream_keys, written_keys

    values = values_of(gke(model="A100-SXM4-80GB", gpus=8, sharing=MIG), kubernetes={"version": "1.33"})
    # env is a list of {name, value} in the chart (empty by default): its items are data, like the config maps.
    written = {key for key in written_keys(values) if not key.startswith(("toolkit.env.", "migManager.env."))}
    assert {"hostPaths.driverInstallDir", "toolkit.installDir", "cdi.enabled", "toolkit.env"} <= written
    assert not written - upstream_keys()
    aks = values_of(pool("aks", "T4", 1, count=1))
    assert "operator.runtimeClass" in written_keys(aks) and not written_keys(aks) - upstream_keys()


def test_the_node_pool_file_does_not_ask_the_provider_for_the_clouds_own_taints() -> None:
    from gpustack.outputs import render_files

    aks = pool("aks", "T4", 1, name="spot", count=1, cloud={"spot": True})
    text = render_files(compile_blueprint(sourceless(blueprint(aks))))["nodes/spot.node-pool.yaml"]
    assert "scalesetpriority" not in text


def test_the_clouds_own_taints_are_no_isolation_and_no_isolation_problem() -> None:
    # Two GKE pools, each dedicated to one tenant by a taint of its own: GKE's nvidia.com/gpu taint on both is
    # neither GS701 (a dedicated pool tainted nvidia.com/gpu) nor GS704 (a taint shared across tenants).
    def dedicated(name: str) -> dict[str, Any]:
        taint = [{"key": "gpustack.io/pool", "value": name, "effect": "NoSchedule"}]
        return gke(name=name, taints=taint)

    tenants = [
        {"name": "a", "namespaces": ["a"], "pools": ["p1"], "quota": {"p1": "unlimited"}},
        {"name": "b", "namespaces": ["b"], "pools": ["p2"], "quota": {"p2": "unlimited"}},
    ]
    assert not diagnostics(dedicated("p1"), dedicated("p2"), tenants=tenants)
    # Without a taint of their own they are open to the other tenant's pods (GKE's taint does not close them).
    found = diagnostics(gke(name="p1"), gke(name="p2"), tenants=tenants)
    assert [(code, path) for code, path, _ in found] == [("GS705", "spec.nodePools.0"), ("GS705", "spec.nodePools.1")]


def test_a_gpu_pool_of_other_nodes_keeps_the_operators_driver_and_the_cloud_pool_is_told() -> None:
    # Nodes gpustack does not provision may have no driver: the operator's stays on, as without cloud pools, and
    # the EKS pool whose AMI has one is refused at its provider line, the setting being cluster-wide.
    static = {"name": "onprem", "gpu": {"model": "L4", "count": 1}, "nodes": ["n1"]}
    eks = pool("eks", "L4", 1, name="e", minNodes=0, maxNodes=1)
    found = diagnostics(static, eks, **OPERATOR)
    assert {(code, path) for code, path, _ in found} == {(CLOUD_DRIVER_CONFLICT, "spec.nodePools.1.cloud.provider")}
    assert all("cluster-wide" in hint for _, _, hint in found)
    assert not diagnostics(static, eks, **OPERATOR, gpuOperator={"driver": False, "toolkit": False})

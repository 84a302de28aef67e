"""GB200 where the clouds offer it (issue 26 item 5): GKE's a4x-highgpu-4g, EC2's p6e-gb200.36xlarge and Azure's
Standard_ND128isr_NDR_GB200_v6, each with Grace (Arm) CPUs. What an Arm host changes is followed per cloud: EKS gets
its ARM NVIDIA AMI (an x86 AMI written for it is refused, GS319), GKE taints Arm nodes kubernetes.io/arch=arm64 by
itself (the GPU stack and the pool's pods tolerate it, simulate's nodes carry it), and a Karpenter NodePool asks for
arm64 instances."""

from __future__ import annotations

from typing import Any

from builders import blueprint, sourceless
from manifest_schemas import crd_errors

from gpustack.catalog import load_catalog
from gpustack.cloud import ARM64, machine_table
from gpustack.codes import IMAGE_ARCH_MISMATCH
from gpustack.compile import compile_blueprint
from gpustack.compile.cloud import node_pool_specs
from gpustack.compile.gpu_operator import build_values
from gpustack.simulate import run_simulation
from gpustack.taints import GKE_ARM_SERIES, gke_arm
from gpustack.validation import validate_text
from gpustack.yamlout import dump_yaml

ARM_TAINT = {"key": "kubernetes.io/arch", "operator": "Exists", "effect": "NoSchedule"}


def gb200(provider: str, **cloud: Any) -> dict[str, Any]:
    return {
        "name": "gb",
        "gpu": {"model": "GB200", "count": 4},
        "cloud": {"provider": provider, **cloud},
        "minNodes": 0,
        "maxNodes": 2,
    }


def serving() -> dict[str, Any]:
    workload = {"name": "w", "tenant": "t", "pool": "gb", "kind": "Deployment", "image": "x:1", "gpu": {"count": 4}}
    return {
        "workloads": [{**workload, "replicas": 2}],
        "tenants": [{"name": "t", "namespaces": ["t"], "pools": ["gb"], "quota": {"gb": "unlimited"}}],
    }


def args(pool: dict[str, Any]) -> dict[str, Any]:
    [spec] = node_pool_specs(sourceless(blueprint(pool)))
    return dict(spec.args)


def test_every_gb200_machine_is_an_arm_host_and_the_build_time_rules_agree_with_the_table() -> None:
    """Build decides GKE's Arm taint before the machine table is read (taints.gke_arm): the table must agree."""
    catalog = load_catalog()
    for provider, rows in machine_table().items():
        for row in rows:
            grace = catalog.resolve(row.gpu) is catalog.resolve("GB200")
            assert (row.arch == ARM64) == grace, (provider, row.name)
            if provider == "gke":
                assert gke_arm(row.name, None) == (row.arch == ARM64), row.name
                assert row.arch != ARM64 or gke_arm(None, row.gpu)
    assert "a4x-" in GKE_ARM_SERIES


def test_eks_gives_an_arm_host_the_arm_nvidia_ami_and_refuses_an_x86_one() -> None:
    assert args(gb200("eks"))["ami_type"] == "AL2023_ARM_64_NVIDIA"
    assert args(gb200("eks", imageType="AL2023_ARM_64_NVIDIA"))["ami_type"] == "AL2023_ARM_64_NVIDIA"
    result = validate_text(dump_yaml(_document(gb200("eks", imageType="AL2023_x86_64_NVIDIA"))), "bp.yaml")
    [found] = result.diagnostics
    assert (found.code, found.path[-1], found.severity.value) == (IMAGE_ARCH_MISMATCH, "imageType", "error")
    assert found.hint == "imageType: AL2023_ARM_64_NVIDIA, or leave it out"
    # And the other way round: an ARM AMI on an x86 GPU machine.
    x86 = {**gb200("eks", imageType="AL2023_ARM_64_NVIDIA"), "gpu": {"model": "L4", "count": 1}}
    assert [d.code for d in validate_text(dump_yaml(_document(x86)), "bp.yaml").diagnostics] == [IMAGE_ARCH_MISMATCH]


def test_gke_taints_its_arm_nodes_and_the_gpu_stack_and_the_pools_pods_tolerate_it() -> None:
    bp = blueprint(gb200("gke"), stack="gpu-operator", **serving())
    [pool] = bp.pools
    assert [(t.key, t.value, t.by_cloud) for t in pool.taints if t.key == "kubernetes.io/arch"] == [
        ("kubernetes.io/arch", "arm64", True)
    ]
    assert ARM_TAINT in build_values(sourceless(bp))["daemonsets"]["tolerations"]
    assert "taints" not in args(gb200("gke"))["node_config"]  # GKE sets it: not asked of the provider
    assert args(gb200("gke"))["node_config"]["guest_accelerators"][0]["type"] == "nvidia-gb200"
    plan = compile_blueprint(sourceless(bp))
    simulation = run_simulation(sourceless(bp), [m.obj for m in plan.objects])
    assert len(simulation.outcome.placed) == 2 and not simulation.outcome.pending
    # An x86 GKE machine gets no Arm taint.
    l4 = blueprint({**gb200("gke"), "gpu": {"model": "L4", "count": 1}})
    assert all(t.key != "kubernetes.io/arch" for t in l4.pools[0].taints)


def test_a_karpenter_pool_of_arm_hosts_asks_for_arm64_instances() -> None:
    manifest = args(gb200("karpenter"))
    requirements = {r["key"]: r["values"] for r in manifest["spec"]["template"]["spec"]["requirements"]}
    assert requirements["kubernetes.io/arch"] == ["arm64"]
    assert requirements["karpenter.k8s.aws/instance-gpu-name"] == ["gb200"]
    assert [e for e in crd_errors(manifest, "karpenter.sh_nodepools.yaml") if "CEL rule not evaluated" not in e] == []
    l4 = args({**gb200("karpenter"), "gpu": {"model": "L4", "count": 1}})
    assert all(r["key"] != "kubernetes.io/arch" for r in l4["spec"]["template"]["spec"]["requirements"])


def test_aks_picks_the_gb200_vm_size_and_sizes_pods_from_its_allocatable() -> None:
    assert args(gb200("aks"))["vm_size"] == "Standard_ND128isr_NDR_GB200_v6"
    bp = blueprint(gb200("aks"), **serving())
    plan = compile_blueprint(sourceless(bp))
    simulation = run_simulation(sourceless(bp), [m.obj for m in plan.objects])
    assert len(simulation.outcome.placed) == 2 and not simulation.outcome.pending


def _document(pool: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "gpustack.io/v1alpha1",
        "kind": "ClusterBlueprint",
        "metadata": {"name": "t"},
        "spec": {"kubernetes": {"version": "1.33"}, "nodePools": [pool]},
    }

"""Karpenter and EKS pools (issue 26, item 6): spot with on-demand fallback, GPU nodes that Karpenter neither expires
nor replaces for drift under running jobs, requirements by GPU name and count, every NodePool valid against
Karpenter's own CRD; a disk setting EKS or Karpenter would drop is refused."""

from __future__ import annotations

import json
from typing import Any

from builders import blueprint, sourceless
from manifest_schemas import CRD_DIR, crd_errors

from gpustack.compile.cloud import node_pool_specs
from gpustack.validation import validate_text

NODEPOOL_CRD = "karpenter.sh_nodepools.yaml"


def karpenter(model: str = "L4", gpus: int = 1, **cloud: Any) -> dict[str, Any]:
    return {
        "name": "gpus",
        "gpu": {"model": model, "count": gpus},
        "cloud": {"provider": "karpenter", **cloud},
        "minNodes": 0,
        "maxNodes": 2,
    }


def nodepool(*pools: dict[str, Any]) -> dict[str, Any]:
    [spec] = node_pool_specs(sourceless(blueprint(*pools)))
    return dict(spec.args)


def requirements(manifest: dict[str, Any]) -> dict[str, list[str]]:
    return {r["key"]: r["values"] for r in manifest["spec"]["template"]["spec"]["requirements"]}


def test_spot_falls_back_to_on_demand() -> None:
    assert requirements(nodepool(karpenter(spot=True)))["karpenter.sh/capacity-type"] == ["spot", "on-demand"]
    assert requirements(nodepool(karpenter()))["karpenter.sh/capacity-type"] == ["on-demand"]


def test_gpu_nodes_are_not_expired_nor_replaced_for_drift_under_running_jobs() -> None:
    manifest = nodepool(karpenter())
    assert manifest["spec"]["template"]["spec"]["expireAfter"] == "Never"  # Karpenter's default is 720h
    disruption = manifest["spec"]["disruption"]
    assert disruption["consolidationPolicy"] == "WhenEmpty"
    assert {"nodes": "0", "reasons": ["Drifted"]} in disruption["budgets"]
    cpu = {"name": "cpu", "cloud": {"provider": "karpenter", "machineType": "m5.2xlarge"}, "minNodes": 0, "maxNodes": 2}
    plain = nodepool(cpu)
    assert "expireAfter" not in plain["spec"]["template"]["spec"] and "budgets" not in plain["spec"]["disruption"]


def test_requirements_select_by_gpu_name_and_count() -> None:
    found = requirements(nodepool(karpenter("L40S", 4)))
    assert found["karpenter.k8s.aws/instance-gpu-name"] == ["l40s"]
    assert found["karpenter.k8s.aws/instance-gpu-count"] == ["4"]
    assert "node.kubernetes.io/instance-type" not in found
    # "a100" names both A100 40GB and 80GB instances: the exact instance types instead.
    a100 = requirements(nodepool(karpenter("A100-SXM4-80GB", 8)))
    assert a100["node.kubernetes.io/instance-type"] == ["p4de.24xlarge"]
    assert "karpenter.k8s.aws/instance-gpu-name" not in a100
    named = requirements(nodepool(karpenter("L4", 1, machineType="g6.2xlarge")))
    assert named["node.kubernetes.io/instance-type"] == ["g6.2xlarge"]


def test_every_nodepool_is_valid_against_karpenters_crd() -> None:
    for pool in (
        karpenter(spot=True, zones=["us-east-1a"]),
        karpenter("A100-SXM4-80GB", 8),
        karpenter("L4", 1, machineType="g6.2xlarge", nodeClass="gpu"),
    ):
        manifest = nodepool(pool)
        # cel-python has no `find`: the restricted-domain rules are reported "not evaluated"; they are checked below.
        errors = [e for e in crd_errors(manifest, NODEPOOL_CRD) if "CEL rule not evaluated" not in e]
        assert errors == [], pool
        allowed = CRD_DIR.joinpath(NODEPOOL_CRD).read_text()
        for key in requirements(manifest):
            if key.startswith("karpenter.k8s.aws/"):
                assert f'"{key}"' in allowed, key  # in the rule's list of well-known labels a requirement may use
            assert not key.startswith("karpenter.sh/") or key == "karpenter.sh/capacity-type"


def test_an_eks_disk_type_is_refused_at_the_line() -> None:
    data = {
        "apiVersion": "gpustack.io/v1alpha1",
        "kind": "ClusterBlueprint",
        "metadata": {"name": "t"},
        "spec": {
            "kubernetes": {"version": "1.31"},
            "nodePools": [
                {
                    "name": "gpus",
                    "gpu": {"model": "L4", "count": 1},
                    "cloud": {"provider": "eks", "diskType": "gp3"},
                    "minNodes": 0,
                    "maxNodes": 1,
                }
            ],
        },
    }
    result = validate_text(json.dumps(data), "t.json")
    assert [".".join(map(str, d.path)) for d in result.diagnostics] == ["spec.nodePools.0.cloud.diskType"]
    assert "launch template" in (result.diagnostics[0].message + (result.diagnostics[0].hint or ""))


def test_a_karpenter_disk_setting_is_refused_where_it_is_written() -> None:
    """The NodePool cannot carry it and gpustack does not write the EC2NodeClass: refused, never dropped."""
    data = {
        "apiVersion": "gpustack.io/v1alpha1",
        "kind": "ClusterBlueprint",
        "metadata": {"name": "t"},
        "spec": {"kubernetes": {"version": "1.31"}, "nodePools": [karpenter(diskGb=200, nodeClass="gpu")]},
    }
    result = validate_text(json.dumps(data), "t.json")
    [found] = result.diagnostics
    assert (found.code, found.severity.value) == ("GS316", "error") and not result.ok
    assert found.path == ("spec", "nodePools", 0, "cloud", "diskGb") and "EC2NodeClass 'gpu'" in (found.hint or "")

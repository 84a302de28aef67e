"""The files `gpustack compile` writes under cloud/ (issue 26, item 7): one dialect each, titled with it."""

from __future__ import annotations

from typing import Any

import yaml
from builders import blueprint, sourceless

from gpustack.compile import compile_blueprint
from gpustack.outputs import render_files

TAINT = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]


def files(*pools: dict[str, Any]) -> dict[str, str]:
    return render_files(compile_blueprint(sourceless(blueprint(*pools))))


def cloud_pool(name: str, provider: str, model: str, **cloud: Any) -> dict[str, Any]:
    if provider == "gke":
        cloud.setdefault("zones", ["us-central1-a"])
    return {
        "name": name,
        "gpu": {"model": model, "count": 1},
        "cloud": {"provider": provider, **cloud},
        "minNodes": 0,
        "maxNodes": 2,
        "taints": TAINT,
    }


def test_the_gke_file_is_terraform_through_and_through() -> None:
    text = files(cloud_pool("g", "gke", "L4"))["cloud/g.gke.yaml"]
    assert "Terraform google_container_node_pool" in text.splitlines()[0]
    config = yaml.safe_load(text)["google_container_node_pool"]["node_config"]
    # Terraform's nested blocks are singular; the effect is the API's enum, as Terraform takes it.
    assert config["taint"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}]
    assert config["guest_accelerator"][0]["type"] == "nvidia-l4"
    assert "taints" not in config and "guest_accelerators" not in config


def test_the_eksctl_file_spells_taints_and_ami_family_as_eksctl_does() -> None:
    # (A Bottlerocket NVIDIA AMI is refused on a GPU pool, GS318: its own device plugin would be a second one.)
    written = files(cloud_pool("e", "eks", "L4"))
    text = written["cloud/e.eks.yaml"]
    assert "eksctl" in text.splitlines()[0]
    [group] = yaml.safe_load(text)["managedNodeGroups"]
    assert group["taints"] == TAINT  # NoSchedule, not the EKS API's NO_SCHEDULE
    assert group["amiFamily"] == "AmazonLinux2023"

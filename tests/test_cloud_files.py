"""The files `gpustack compile` writes under cloud/ (issue 26, item 7): one dialect each, titled with it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
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
    # eksctl installs its own NVIDIA device plugin for a GPU node group unless told not to (its GPU support page):
    # the file says how to create it without one.
    assert "--install-nvidia-plugin=false" in text.splitlines()[2]


def _karpenter_block(readme: str) -> str:
    """The README's shell block that checks each Karpenter pool's EC2NodeClass before applying its NodePool."""
    start = readme.index("kubectl get ec2nodeclasses.karpenter.k8s.aws")
    return readme[start : readme.index("```", start)]


def _run_block(block: str, tmp_path: Path, node_classes: set[str]) -> tuple[int, list[str]]:
    """Runs the block with a stand-in kubectl that knows `node_classes` and records every call."""
    log = tmp_path / "calls"
    stub = tmp_path / "kubectl"
    known = " ".join(sorted(node_classes))
    stub.write_text(
        "#!/bin/sh\n"
        f'printf "%s\\n" "$*" >> {log}\n'
        'if [ "$1" = get ]; then\n'
        f'  for known in {known}; do [ "$3" = "$known" ] && exit 0; done\n'
        "  exit 1\n"
        "fi\n"
    )
    stub.chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(["sh", "-e", "-c", block], env=env, cwd=tmp_path, check=False)
    return done.returncode, log.read_text().splitlines() if log.exists() else []


def test_the_readme_applies_a_karpenter_node_pool_only_once_its_ec2_node_class_exists(tmp_path: Path) -> None:
    pool = cloud_pool("k", "karpenter", "L4", machineType="g6.xlarge", nodeClass="gpu-al2023")
    readme = files(pool)["README.md"]
    block = _karpenter_block(readme)
    code, calls = _run_block(block, tmp_path, set())
    assert code != 0 and calls == ["get ec2nodeclasses.karpenter.k8s.aws gpu-al2023"]  # nothing applied
    (tmp_path / "calls").unlink()
    code, calls = _run_block(block, tmp_path, {"gpu-al2023"})
    assert code == 0
    assert calls[-1] == "apply --server-side --field-manager=gpustack -f cloud/k.karpenter.yaml"


def test_pools_of_other_clouds_get_no_karpenter_step() -> None:
    assert "ec2nodeclasses" not in files(cloud_pool("g", "gke", "L4"))["README.md"]

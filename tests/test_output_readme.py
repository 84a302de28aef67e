"""The README compile writes: what to have before applying, and how to see that it worked."""

from __future__ import annotations

from pathlib import Path

from builders import sourceless
from conftest import BLUEPRINTS, CASES, REPO

from gpustack.compile import compile_blueprint
from gpustack.outputs import render_files
from gpustack.validation import validate_path


def readme(name: str, folder: Path = BLUEPRINTS) -> str:
    result = validate_path(folder / f"{name}.yaml")
    assert result.blueprint is not None
    return render_files(compile_blueprint(sourceless(result.blueprint)))["README.md"]


def section(text: str, title: str) -> str:
    return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_prerequisites_come_before_apply_and_name_the_nodes() -> None:
    text = readme("seed-article")
    assert text.index("## Prerequisites") < text.index("## Apply") < text.index("## Verify")
    needs = section(text, "Prerequisites")
    assert "kubectl get nodes gpu-dev-01 gpu-node-01" in needs and "Helm 3" in needs
    # stack: gpu-operator installs the driver, the toolkit and the MIG manager: none of them is a prerequisite.
    assert "NVIDIA Container Toolkit" not in needs and "MIG manager" not in needs
    assert "1.30 or newer" in needs, "its admission policies need ValidatingAdmissionPolicy"


def test_the_standalone_plugin_needs_the_driver_and_an_existing_mig_manager() -> None:
    needs = section(readme("stack-device-plugin-mig", CASES / "invalid"), "Prerequisites")
    assert "NVIDIA Container Toolkit" in needs and "MIG manager" in needs


def test_verify_checks_each_release_the_pool_labels_and_mig_state() -> None:
    verify = section(readme("seed-article"), "Verify")
    assert "kubectl get pods -n gpu-operator" in verify and "kubectl get pods -n volcano-system" in verify
    assert "-L gpustack.io/pool" in verify and ".status.allocatable" in verify
    assert "nvidia.com/mig.config.state" in verify


def test_a_blueprint_without_mig_is_not_told_about_the_mig_manager() -> None:
    text = readme("quickstart")
    assert "MIG manager" not in section(text, "Prerequisites")
    assert "mig.config.state" not in section(text, "Verify")


def test_the_troubleshooting_page_covers_what_the_readme_promises() -> None:
    page = (REPO / "docs" / "troubleshooting.md").read_text(encoding="utf-8")
    promised = section(readme("seed-article"), "Verify")
    assert "docs/troubleshooting.md" in promised
    for title in ("My pod is Pending", "No GPUs on the node", "MIG config not applied"):
        assert f"\n## {title}\n" in page
        assert f'"{title}"'.lower() in promised.lower()

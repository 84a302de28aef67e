"""The real `stacks/__main__.py`, run under Pulumi mocks with the shipped stack config."""

from __future__ import annotations

import runpy
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml
from conftest import REPO
from test_deploy import NODE_PATCH, Harness, start_harness

from gpustack.deploy import TYPE
from gpustack.validation import validate_path

STACKS = REPO / "stacks"
PROGRAM = STACKS / "__main__.py"


@pytest.fixture
def harness(monkeypatch: pytest.MonkeyPatch) -> Iterator[Harness]:
    yield from start_harness(monkeypatch)


def demo_config() -> dict[str, str]:
    config = yaml.safe_load((STACKS / "Pulumi.demo.yaml").read_text(encoding="utf-8"))["config"]
    return {key: str(value) for key, value in config.items()}


def run_stack(harness: Harness, config: dict[str, str]) -> dict[str, Any]:
    """Run the program as `pulumi up` would (as __main__, config set first) and return its exports."""
    pulumi.runtime.set_all_config(config)
    harness.run(lambda: runpy.run_path(str(PROGRAM), run_name="__main__"))
    outputs = pulumi.runtime.get_root_resource().outputs  # type: ignore[union-attr]
    exports: dict[str, Any] = {}

    def resolve() -> pulumi.Output[None]:
        return pulumi.Output.from_input(outputs).apply(exports.update)

    harness.run(resolve)
    return exports


def test_the_demo_stack_applies_its_blueprint_from_any_working_directory(
    harness: Harness, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the blueprint path is relative to the stack, not the working directory
    exports = run_stack(harness, demo_config())
    (component,) = harness.of_type(TYPE)
    assert component.name == "gpustack"
    blueprint = validate_path(STACKS / demo_config()["gpustack:blueprint"]).blueprint
    assert blueprint is not None
    assert exports["blueprint"] == blueprint.name
    assert [p["name"] for p in exports["pools"]] == [p.name for p in blueprint.pools]
    assert all(r["total"] == r["perNode"] * r["nodes"] for p in exports["pools"] for r in p["resources"])
    assert [t["name"] for t in exports["tenants"]] == [t.name for t in blueprint.tenants]
    assert all(set(t["quotas"]) == set(t["namespaces"]) for t in exports["tenants"])
    assert sorted(exports["nodes"]) == sorted(n for p in blueprint.pools for n in p.nodes)
    assert set(exports) == {"blueprint", "pools", "tenants", "releases", "nodes", "objects"}
    assert not any("taints" in p.inputs.get("spec", {}) for p in harness.of_type(NODE_PATCH))


def test_stack_options_come_from_config(harness: Harness) -> None:
    run_stack(harness, {**demo_config(), "gpustack:ownNodeTaints": "true", "gpustack:retainNodeLabels": "false"})
    patches = harness.of_type(NODE_PATCH)
    assert patches and all(p.inputs["spec"]["taints"] for p in patches)
    assert not any(p.retain_on_delete for p in patches)


def test_the_blueprint_is_required(harness: Harness) -> None:
    with pytest.raises(pulumi.ConfigMissingError):
        run_stack(harness, {})


def test_project_files_work_when_the_readme_is_followed() -> None:
    project = yaml.safe_load((STACKS / "Pulumi.yaml").read_text(encoding="utf-8"))
    # Named gpustack, so `gpustack:blueprint` is project config and the schema below applies to it.
    assert project["name"] == "gpustack"
    assert project["runtime"]["name"] == "python"
    # The README's `python3 -m venv .venv` at the repository root, relative to this directory.
    assert (STACKS / project["runtime"]["options"]["virtualenv"]).resolve() == REPO / ".venv"
    assert "default" not in project["config"]["blueprint"]  # required: pulumi up fails early without it
    assert (STACKS / demo_config()["gpustack:blueprint"]).is_file()
    # `pulumi install` runs pip in this directory: `-e ..[pulumi]` is the repository with the pulumi extra.
    (requirement,) = [line for line in (STACKS / "requirements.txt").read_text().splitlines() if line[:1] not in "#"]
    path, _, extra = requirement.removeprefix("-e ").partition("[")
    assert (STACKS / path).resolve() == REPO and extra == "pulumi]"
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert {"pulumi", "pulumi-kubernetes"} <= {dep.split(">")[0].split("=")[0] for dep in extras["pulumi"]}

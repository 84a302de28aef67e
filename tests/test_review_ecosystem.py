"""The files other repositories use: the pre-commit hook and the example pull-request review workflow."""

from __future__ import annotations

import re
import shutil
import subprocess
from typing import Any

import pytest
import yaml
from conftest import BLUEPRINTS, REPO

from gpustack.cli import COMMANDS
from gpustack.review.report import COMMENT_MARKER

HOOKS = REPO / ".pre-commit-hooks.yaml"
WORKFLOW = REPO / "examples" / "github-actions" / "blueprint-review.yml"


def hooks() -> list[dict[str, Any]]:
    data = yaml.safe_load(HOOKS.read_text(encoding="utf-8"))
    assert isinstance(data, list)
    return data


def test_the_validate_hook_runs_gpustack_validate() -> None:
    (hook,) = hooks()
    assert hook["id"] == "gpustack-validate"
    assert {"id", "name", "entry", "language"} <= set(hook)
    program, command = hook["entry"].split()
    assert program == "gpustack" and command in COMMANDS
    assert hook["language"] == "python", "pre-commit installs this repository with pip and runs its entry point"


@pytest.mark.parametrize(
    ("path", "matches"),
    [
        ("blueprints/prod.yaml", True),
        ("infra/blueprints/staging.yml", True),
        ("blueprints/eu/prod.yaml", True),
        (".github/workflows/ci.yml", False),
        ("manifests/prod/kustomization.yaml", False),
        ("blueprints/README.md", False),
    ],
)
def test_the_hook_picks_blueprints_only(path: str, matches: bool) -> None:
    (hook,) = hooks()
    assert bool(re.search(hook["files"], path)) is matches


def test_the_hook_manifest_passes_pre_commits_own_schema() -> None:
    clientlib = pytest.importorskip("pre_commit.clientlib", reason="pre-commit is not installed")
    manifest = clientlib.load_manifest(str(HOOKS))
    assert [hook["id"] for hook in manifest] == ["gpustack-validate"]


def test_the_hook_entry_validates_the_examples() -> None:
    from click.testing import CliRunner

    from gpustack.cli import group

    result = CliRunner().invoke(group, ["validate", *map(str, sorted(BLUEPRINTS.glob("*.yaml")))])
    assert result.exit_code == 0


def workflow() -> dict[Any, Any]:
    data = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def steps() -> list[dict[str, Any]]:
    (job,) = workflow()["jobs"].values()
    return list(job["steps"])


def test_the_workflow_runs_on_pull_requests_with_rights_to_comment() -> None:
    data = workflow()
    on = data.get("on", data.get(True))  # YAML 1.1 reads the key `on` as true
    assert "pull_request" in on
    assert data["permissions"] == {"contents": "read", "pull-requests": "write", "security-events": "write"}


def test_the_workflow_validates_checks_compiled_output_and_reviews() -> None:
    runs = "\n".join(step.get("run", "") for step in steps())
    assert "gpustack validate blueprints/*.yaml" in runs
    assert re.search(r"gpustack compile \S+ --check -d ", runs)
    assert 'gpustack diff --base "$BASE" --output markdown' in runs
    assert "--fail-on high" in runs
    checkout = next(step for step in steps() if step.get("uses", "").startswith("actions/checkout"))
    assert checkout["with"]["fetch-depth"] == 0, "--base needs the base branch's history"


def test_the_workflow_finds_its_comment_by_the_marker_the_review_writes() -> None:
    script = next(step for step in steps() if step.get("uses", "").startswith("actions/github-script"))["with"][
        "script"
    ]
    assert f'"{COMMENT_MARKER}"' in script
    assert "updateComment" in script and "createComment" in script


def test_the_workflow_shell_steps_are_valid_bash() -> None:
    if shutil.which("bash") is None:
        pytest.skip("bash is not installed")
    for step in steps():
        if "run" in step:
            checked = subprocess.run(["bash", "-n"], input=step["run"], capture_output=True, text=True, check=False)
            assert checked.returncode == 0, (step.get("name"), checked.stderr)


def test_the_workflow_does_not_install_the_unrelated_pypi_package() -> None:
    install = next(step for step in steps() if step.get("name") == "Install gpustack")
    assert install["run"] == 'python -m pip install "$GPUSTACK"'
    assert workflow()["env"]["GPUSTACK"].startswith("gpustack @ git+")


def test_the_workflow_uploads_sarif_before_failing_on_validation() -> None:
    names = [step.get("name", "") for step in steps()]
    produce = next(i for i, step in enumerate(steps()) if "--output sarif" in step.get("run", ""))
    upload = next(
        i for i, step in enumerate(steps()) if step.get("uses", "").startswith("github/codeql-action/upload-sarif")
    )
    validate = names.index("Validate")
    assert produce < upload < validate, "annotations must reach the pull request even when validation fails"
    assert steps()[upload]["if"] == "always()"
    sarif_file = steps()[upload]["with"]["sarif_file"]
    assert f"> {sarif_file}" in steps()[produce]["run"]

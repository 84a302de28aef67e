"""Workload templates stay inside the blueprint's folder (security review H2), on disk and at a git revision.

A template ends up applied in a tenant's namespace and quoted in review comments: a path out of the folder would
copy any file the user can read (another team's Secret) into both. Each way out (an absolute path, '..', a symlinked
file or folder) is refused with a GS605 at the workload's `template:` line, and the file's text is never shown.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from conftest import CASES

from gpustack.cli import group
from gpustack.codes import TEMPLATE_UNREADABLE

SECRET = "hunter2-payments-prod"
STOLEN = f"""apiVersion: v1
kind: Secret
metadata: {{name: payments-db, namespace: payments}}
stringData: {{password: {SECRET}}}
"""
TEMPLATE_LINE = "25:17"  # the `template:` value in tests/cases/invalid/template-missing.yaml
BLUEPRINT = (CASES / "invalid" / "template-missing.yaml").read_text(encoding="utf-8")


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(group, [str(a) for a in args])


@pytest.fixture
def layout(tmp_path: Path) -> Path:
    """tmp/other-team/db-secret.yaml beside tmp/bp/, the blueprint's folder, with a harmless template in it."""
    (tmp_path / "other-team").mkdir()
    (tmp_path / "other-team" / "db-secret.yaml").write_text(STOLEN, encoding="utf-8")
    (tmp_path / "bp" / "templates").mkdir(parents=True)
    (tmp_path / "bp" / "templates" / "ok.yaml.j2").write_text("{{ manifest | toyaml }}\n", encoding="utf-8")
    return tmp_path


def blueprint_naming(folder: Path, template: str, name: str = "bp.yaml") -> Path:
    path = folder / name
    path.write_text(BLUEPRINT.replace("templates/does-not-exist.yaml.j2", template), encoding="utf-8")
    return path


def assert_refused(blueprint: Path, tmp_path: Path, reason: str) -> None:
    result = run("validate", blueprint)
    assert result.exit_code == 1
    assert f"{blueprint}:{TEMPLATE_LINE}: error[GS605]" in result.stdout
    assert reason in result.stdout and "inside the blueprint's folder" in result.stdout  # the hint
    compiled = run("compile", blueprint, "-o", tmp_path / "out")
    assert compiled.exit_code == 1 and not (tmp_path / "out").exists()
    streamed = run("compile", blueprint, "-o", "-")
    assert streamed.exit_code == 1
    for output in (result.stdout, compiled.stdout + compiled.stderr, streamed.stdout + streamed.stderr):
        assert SECRET not in output and "payments-db" not in output


def test_an_absolute_template_path_is_refused(layout: Path) -> None:
    secret = layout / "other-team" / "db-secret.yaml"
    assert_refused(blueprint_naming(layout / "bp", str(secret)), layout, "an absolute path")


@pytest.mark.parametrize("template", ["../other-team/db-secret.yaml", "templates/../../other-team/db-secret.yaml"])
def test_a_template_path_going_up_is_refused(layout: Path, template: str) -> None:
    assert_refused(blueprint_naming(layout / "bp", template), layout, "goes up with '..'")


def test_a_path_going_up_is_refused_even_when_it_comes_back(layout: Path) -> None:
    # bp/../bp/templates/ok.yaml.j2 is inside, but a path spelled with '..' is refused before it is resolved.
    assert_refused(blueprint_naming(layout / "bp", "../bp/templates/ok.yaml.j2"), layout, "goes up with '..'")


def test_a_symlinked_template_leading_out_is_refused(layout: Path) -> None:
    os.symlink(layout / "other-team" / "db-secret.yaml", layout / "bp" / "templates" / "x.yaml.j2")
    assert_refused(blueprint_naming(layout / "bp", "templates/x.yaml.j2"), layout, "a symlink leads out")


def test_a_symlinked_folder_leading_out_is_refused(layout: Path) -> None:
    os.symlink(layout / "other-team", layout / "bp" / "shared")
    assert_refused(blueprint_naming(layout / "bp", "shared/db-secret.yaml"), layout, "a symlink leads out")


def test_templates_inside_the_folder_are_read_symlinks_within_it_too(layout: Path) -> None:
    os.symlink("ok.yaml.j2", layout / "bp" / "templates" / "alias.yaml.j2")
    for template in ("templates/ok.yaml.j2", "./templates/ok.yaml.j2", "templates/alias.yaml.j2"):
        result = run("validate", blueprint_naming(layout / "bp", template))
        assert result.exit_code == 0, result.stdout


def test_the_review_never_shows_a_file_from_outside(layout: Path) -> None:
    before = blueprint_naming(layout / "bp", "templates/ok.yaml.j2", "before.yaml")
    after = blueprint_naming(layout / "bp", "../other-team/db-secret.yaml", "after.yaml")
    result = run("diff", "--output", "markdown", before, after)
    assert result.exit_code == 2
    assert TEMPLATE_UNREADABLE in result.stderr
    assert SECRET not in result.stdout + result.stderr


# At a git revision (`gpustack diff --base REV`): the same door, the same refusals.


def git(repo: Path, *args: str) -> None:
    identity = ["-c", "user.name=gpustack-test", "-c", "user.email=test@example.com"]
    identity += ["-c", "commit.gpgsign=false", "-c", "core.hooksPath=/dev/null"]
    subprocess.run(["git", "-C", str(repo), *identity, *args], capture_output=True, text=True, check=True)


def committed(layout: Path, template: str) -> Path:
    """A repository whose last commit holds the blueprint naming `template`; the working copy names a safe one."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    git(layout, "init", "-q")
    blueprint = blueprint_naming(layout / "bp", template)
    git(layout, "add", ".")
    git(layout, "commit", "-q", "-m", "blueprint")
    blueprint_naming(layout / "bp", "templates/ok.yaml.j2")
    return blueprint


@pytest.mark.parametrize(
    ("template", "reason"),
    [("../other-team/db-secret.yaml", "goes up with '..'"), ("/etc/hostname", "an absolute path")],
)
def test_a_revision_refuses_templates_out_of_the_folder(layout: Path, template: str, reason: str) -> None:
    blueprint = committed(layout, template)
    result = run("diff", "--base", "HEAD", blueprint)
    assert result.exit_code == 2
    assert f"HEAD:bp/bp.yaml:{TEMPLATE_LINE}: error[GS605]" in result.stderr and reason in result.stderr
    assert SECRET not in result.stdout + result.stderr


def test_a_revision_refuses_a_committed_symlink(layout: Path) -> None:
    os.symlink(layout / "other-team" / "db-secret.yaml", layout / "bp" / "templates" / "x.yaml.j2")
    blueprint = committed(layout, "templates/x.yaml.j2")
    result = run("diff", "--base", "HEAD", blueprint)
    assert result.exit_code == 2
    assert f"HEAD:bp/bp.yaml:{TEMPLATE_LINE}: error[GS605]" in result.stderr and "a symlink" in result.stderr
    assert SECRET not in result.stdout + result.stderr

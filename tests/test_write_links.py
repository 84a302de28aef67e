"""`compile -d LINK` and `--check` never follow a link out of the repository holding it (L1, N13); GS605 names no
absolute path.

Built from security-review-3/n13-check-symlink-walk: a committed `manifests/prod -> /usr` made `compile --check` list
122,297 file names of /usr into the CI log (11.7 s), and `compile -d` write outside the working tree.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import BLUEPRINTS

from gpustack.cli import group
from gpustack.codes import OUTPUT_UNSAFE, TEMPLATE_UNREADABLE
from gpustack.write import UNEXPECTED_LISTED

QUICKSTART = str(BLUEPRINTS / "quickstart.yaml")


def run(*args: str | Path) -> tuple[int, str]:
    result = CliRunner().invoke(group, [str(a) for a in args])
    return result.exit_code, result.output


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The working folder a CI job runs in, with a repository (its `.git`) below it."""
    folder = tmp_path / "work"
    (folder / "repo" / ".git").mkdir(parents=True)
    (folder / "repo" / "manifests").mkdir()
    monkeypatch.chdir(folder)
    return folder


def refused_link(code: int, output: str) -> None:
    assert code == 1
    assert f"error[{OUTPUT_UNSAFE}]" in output and "goes through the symlink" in output
    assert "unexpected:" not in output


# --- the review's reproduction, and its variants ------------------------------------------------------------------


def test_n13_check_through_a_link_to_usr_lists_nothing(work: Path) -> None:
    (work / "repo" / "manifests" / "prod").symlink_to("/usr")
    started = time.monotonic()
    code, output = run("compile", QUICKSTART, "-d", "repo/manifests/prod", "--check")
    refused_link(code, output)
    assert "repo/manifests/prod" in output and "leads out of the git repository" in output
    assert len(output) < 2000 and time.monotonic() - started < 10  # was 122,297 lines in 11.7 s


def test_n13_the_same_link_without_a_repository_is_judged_by_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "repo" / "manifests").mkdir(parents=True)  # the repro itself: no .git anywhere
    (tmp_path / "repo" / "manifests" / "prod").symlink_to("/usr")
    monkeypatch.chdir(tmp_path)
    code, output = run("compile", QUICKSTART, "-d", "repo/manifests/prod", "--check")
    refused_link(code, output)
    assert "leads out of the working folder" in output


def test_compile_through_a_link_to_an_empty_folder_outside_writes_nothing(work: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (work / "repo" / "manifests" / "prod").symlink_to(outside)
    for command in (
        ["compile", QUICKSTART, "-d", "repo/manifests/prod"],
        ["compile", QUICKSTART, "-d", "repo/manifests/prod", "--check"],
    ):
        refused_link(*run(*command))
    assert list(outside.iterdir()) == []
    code, output = run("compile", QUICKSTART, "-d", "repo/manifests/prod", "--output", "json")
    assert code == 1 and json.loads(output)["written"] is False


def test_a_link_higher_up_the_path_counts_too(work: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (work / "repo" / "deploy").symlink_to(outside)
    refused_link(*run("compile", QUICKSTART, "-d", "repo/deploy/prod"))
    refused_link(*run("compile", QUICKSTART, "-d", str(work / "repo" / "deploy" / "prod")))  # an absolute spelling
    assert list(outside.iterdir()) == []


def test_a_dangling_link_is_refused_for_writing_and_checking(work: Path) -> None:
    (work / "repo" / "manifests" / "prod").symlink_to("prod-v2")  # not made yet
    for extra in ([], ["--check"]):
        code, output = run("compile", QUICKSTART, "-d", "repo/manifests/prod", *extra)
        assert code == 1 and "is a symlink to nothing" in output
    assert not (work / "repo" / "manifests" / "prod-v2").exists()


def test_a_link_inside_the_repository_still_works(work: Path) -> None:
    (work / "repo" / "manifests" / "prod-v2").mkdir()
    (work / "repo" / "manifests" / "prod").symlink_to("prod-v2")
    assert run("compile", QUICKSTART, "-d", "repo/manifests/prod")[0] == 0
    assert (work / "repo" / "manifests" / "prod-v2" / "kustomization.yaml").is_file()
    assert (work / "repo" / "manifests" / "prod").is_symlink()
    code, output = run("compile", QUICKSTART, "-d", "repo/manifests/prod", "--check")
    assert (code, output.strip().splitlines()[-1]) == (0, "repo/manifests/prod is up to date")


def test_a_link_that_belongs_to_no_repository_and_no_working_folder_is_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A machine's own links (/var/run -> /run, a home folder on another disk) are nobody's commit.
    (tmp_path / "disk" / "out").mkdir(parents=True)
    (tmp_path / "mnt").symlink_to(tmp_path / "disk")
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    assert run("compile", QUICKSTART, "-d", tmp_path / "mnt" / "out")[0] == 0
    assert (tmp_path / "disk" / "out" / "kustomization.yaml").is_file()


# --- --check of a real folder that holds what gpustack did not write ----------------------------------------------


def test_check_names_a_foreign_folder_once_without_walking_it(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run("compile", QUICKSTART, "-d", out)[0] == 0
    (out / "vendor" / "deep").mkdir(parents=True)
    for i in range(3000):
        (out / "vendor" / "deep" / f"f{i}.txt").write_text("x")
    (out / "nodes" / "mine").mkdir()  # a folder gpustack does write holds one it does not
    code, output = run("compile", QUICKSTART, "-d", out, "--check")
    assert code == 1
    assert "unexpected: vendor (a folder gpustack did not write; not read)" in output
    assert "unexpected: nodes/mine (a folder gpustack did not write; not read)" in output
    assert "f1.txt" not in output


def test_check_lists_at_most_fifty_foreign_entries_then_counts(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run("compile", QUICKSTART, "-d", out)[0] == 0
    for i in range(UNEXPECTED_LISTED + 25):
        (out / f"extra-{i:03}.txt").write_text("x")
    code, output = run("compile", QUICKSTART, "-d", out, "--check")
    assert code == 1
    listed = [line for line in output.splitlines() if line.startswith("unexpected: extra-")]
    assert len(listed) == UNEXPECTED_LISTED
    assert "unexpected: 25 more entries gpustack did not write, not listed (extra-050.txt, ...)" in output
    report = json.loads(run("compile", QUICKSTART, "-d", out, "--check", "--output", "json")[1])
    assert len(report["stale"]) == UNEXPECTED_LISTED + 1


def test_exactly_fifty_foreign_entries_are_all_listed(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run("compile", QUICKSTART, "-d", out)[0] == 0
    for i in range(UNEXPECTED_LISTED):
        (out / f"extra-{i:03}.txt").write_text("x")
    output = run("compile", QUICKSTART, "-d", out, "--check")[1]
    assert len([line for line in output.splitlines() if line.startswith("unexpected: extra-")]) == UNEXPECTED_LISTED
    assert "more entries" not in output


# --- GS605 names no absolute path ----------------------------------------------------------------------------------


def blueprint_with_template(folder: Path, template: str) -> Path:
    text = (BLUEPRINTS / "quickstart.yaml").read_text(encoding="utf-8")
    text = text.replace("      kind: Deployment\n", f"      kind: Deployment\n      template: {template}\n", 1)
    assert f"template: {template}" in text
    path = folder / "bp.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("case", ["link-out", "folder-link-out", "missing", "a-folder", "not-utf8"])
def test_gs605_never_prints_an_absolute_path(tmp_path: Path, case: str) -> None:
    secret = tmp_path / "other-team" / "secret.yaml"
    secret.parent.mkdir()
    secret.write_text("kind: Secret\n")
    bp = tmp_path / "bp"
    (bp / "templates").mkdir(parents=True)
    template = "templates/chat.yaml.j2"
    if case == "link-out":
        (bp / template).symlink_to(secret)
    elif case == "folder-link-out":
        (bp / "shared").symlink_to(secret.parent)
        template = "shared/secret.yaml"
    elif case == "a-folder":
        (bp / template).mkdir()
    elif case == "not-utf8":
        (bp / template).write_bytes(b"\xff\xfe kind")
    path = blueprint_with_template(bp, template)
    for output in ("text", "json", "sarif"):
        code, shown = run("validate", "--output", output, path)
        assert code == 1 and TEMPLATE_UNREADABLE in shown, shown
        messages = [line for line in shown.splitlines() if "cannot read template" in line]
        assert messages
        for line in messages:
            message = line.split("cannot read template", 1)[1]
            assert str(tmp_path) not in message and os.sep + "tmp" not in message, message

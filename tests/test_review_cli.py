"""`gpustack diff` and `gpustack graph` as CI meets them: exit codes, --fail-on, --base against a real git repo."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from conftest import CASES

from gpustack.cli import group
from gpustack.codes import FILE_UNREADABLE, MIG_LAYOUT_IMPOSSIBLE

REVIEW_CASES = CASES / "review"
MIG = REVIEW_CASES / "mig-layout"
TENANTS = REVIEW_CASES / "tenant-quota"


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(group, [str(a) for a in args])


def edited(tmp_path: Path, source: Path, name: str, *replacements: tuple[str, str]) -> Path:
    text = source.read_text(encoding="utf-8")
    for old, new in replacements:
        assert old in text, old
        text = text.replace(old, new)
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# Exit codes


def test_exit_0_without_change_1_with_changes() -> None:
    assert run("diff", REVIEW_CASES / "no-op" / "before.yaml", REVIEW_CASES / "no-op" / "after.yaml").exit_code == 0
    assert run("diff", MIG / "before.yaml", MIG / "after.yaml").exit_code == 1


@pytest.mark.parametrize("side", ["old", "new"])
def test_exit_2_and_diagnostics_for_an_invalid_blueprint_on_either_side(tmp_path: Path, side: str) -> None:
    broken = edited(tmp_path, MIG / "after.yaml", "broken.yaml", ('layout: {"3g.40gb": 2}', 'layout: {"3g.40gb": 3}'))
    files = (broken, MIG / "after.yaml") if side == "old" else (MIG / "before.yaml", broken)
    result = run("diff", *files)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert f"{broken}:23:" in result.stderr and "error[GS303]" in result.stderr
    assert "nothing to review" in result.stderr
    report = json.loads(run("diff", "--output", "json", *files).stdout)
    assert report["valid"] is False and report["files"][0]["diagnostics"][0]["code"] == MIG_LAYOUT_IMPOSSIBLE


def test_exit_2_for_a_missing_file() -> None:
    result = run("diff", MIG / "before.yaml", MIG / "no-such.yaml")
    assert result.exit_code == 2 and FILE_UNREADABLE in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["diff", str(MIG / "after.yaml")],
        ["diff", str(MIG / "before.yaml"), str(MIG / "after.yaml"), str(MIG / "after.yaml")],
        ["diff", "--base", "HEAD", str(MIG / "before.yaml"), str(MIG / "after.yaml")],
        ["diff", "--fail-on", "severe", str(MIG / "before.yaml"), str(MIG / "after.yaml")],
        ["diff", "--output", "html", str(MIG / "before.yaml"), str(MIG / "after.yaml")],
    ],
)
def test_exit_2_for_usage_errors(args: list[str]) -> None:
    result = run(*args)
    assert result.exit_code == 2 and "Usage:" in result.stderr


# --fail-on


def test_fail_on_counts_only_risks_at_or_above_the_level(tmp_path: Path) -> None:
    # A quota cut below need is the only risk here: medium.
    medium = edited(tmp_path, TENANTS / "before.yaml", "medium.yaml", ("{mig-1g.10gb: 28}", "{mig-1g.10gb: 5}"))
    before = TENANTS / "before.yaml"
    assert [r["severity"] for r in json.loads(run("diff", "-O", "json", before, medium).stdout)["risks"]] == ["medium"]
    assert run("diff", "--fail-on", "high", before, medium).exit_code == 0
    assert run("diff", "--fail-on", "medium", before, medium).exit_code == 1
    assert run("diff", "--fail-on", "low", before, medium).exit_code == 1
    assert run("diff", "--fail-on", "high", MIG / "before.yaml", MIG / "after.yaml").exit_code == 1


def test_fail_on_lets_a_riskless_change_pass(tmp_path: Path) -> None:
    riskless = edited(tmp_path, MIG / "before.yaml", "scaled.yaml", ("replicas: 7", "replicas: 6"))
    assert run("diff", MIG / "before.yaml", riskless).exit_code == 1
    assert run("diff", "--fail-on", "low", MIG / "before.yaml", riskless).exit_code == 0


# --base REV


def git(repo: Path, *args: str) -> str:
    identity = ["-c", "user.name=gpustack-test", "-c", "user.email=test@example.com"]
    identity += ["-c", "commit.gpgsign=false", "-c", "core.hooksPath=/dev/null"]
    done = subprocess.run(["git", "-C", str(repo), *identity, *args], capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    root = tmp_path / "repo"
    (root / "clusters").mkdir(parents=True)
    git(root, "init", "-q")
    (root / "README").write_text("first commit without the blueprint\n")
    git(root, "add", "README")
    git(root, "commit", "-q", "-m", "start")
    git(root, "tag", "start")
    shutil.copy(MIG / "before.yaml", root / "clusters" / "prod.yaml")
    git(root, "add", "clusters/prod.yaml")
    git(root, "commit", "-q", "-m", "blueprint")
    git(root, "tag", "v1")
    return root


def test_base_compares_the_working_tree_with_a_revision(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blueprint = repo / "clusters" / "prod.yaml"
    monkeypatch.chdir(repo.parent)  # git runs in the blueprint's repository, wherever diff is called from
    assert run("diff", "--base", "HEAD", blueprint).exit_code == 0
    shutil.copy(MIG / "after.yaml", blueprint)
    result = run("diff", "--base", "v1", "--output", "json", blueprint)
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["before"]["file"] == "v1:clusters/prod.yaml"
    assert {r["code"] for r in data["risks"]} == {"mig-repartition"}
    sha = git(repo, "rev-parse", "HEAD")
    assert run("diff", "--base", sha, "--output", "json", blueprint).stdout == result.stdout.replace("v1:", f"{sha}:")


def test_base_from_inside_the_repository_with_a_relative_path(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(repo / "clusters")
    assert run("diff", "--base", "HEAD", "prod.yaml").exit_code == 0


def test_base_file_absent_at_the_revision_means_everything_is_added(repo: Path) -> None:
    result = run("diff", "--base", "start", "--output", "json", repo / "clusters" / "prod.yaml")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["before"] == {"file": "start:clusters/prod.yaml (absent)", "blueprint": None}
    assert {(c["kind"], c["status"]) for c in data["changes"]} == {
        ("cluster", "added"),
        ("pool", "added"),
        ("tenant", "added"),
        ("workload", "added"),
    }
    assert {o["status"] for o in data["objects"]} == {"added"}
    # Nothing to compare is itself a high risk, so `--fail-on high` cannot be passed by a file the base lacks (M5).
    assert [(r["code"], r["severity"]) for r in data["risks"]] == [("base-absent", "high")]
    failed = run("diff", "--base", "start", "--fail-on", "high", repo / "clusters" / "prod.yaml")
    assert failed.exit_code == 1


def test_a_renamed_blueprint_is_reviewed_against_its_old_name(repo: Path) -> None:
    blueprint = repo / "clusters" / "prod.yaml"
    shutil.copy(MIG / "after.yaml", blueprint)  # a MIG re-partition: a high risk
    git(repo, "mv", "clusters/prod.yaml", "clusters/prod-v2.yaml")
    result = run("diff", "--base", "v1", "--output", "json", "--fail-on", "high", repo / "clusters" / "prod-v2.yaml")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["before"]["file"] == "v1:clusters/prod.yaml (renamed to clusters/prod-v2.yaml)"
    assert "mig-repartition" in {r["code"] for r in data["risks"]}


def test_a_blob_over_the_size_cap_is_refused_before_it_is_read(repo: Path) -> None:
    blueprint = repo / "clusters" / "prod.yaml"
    original = blueprint.read_text()
    blueprint.write_text(original + "#" * (9 * 1024 * 1024) + "\n")
    git(repo, "commit", "-q", "-am", "padded")
    blueprint.write_text(original)
    result = run("diff", "--base", "HEAD", blueprint)
    assert result.exit_code == 2 and "error[GS002]" in result.output and "over the 8388608-byte cap" in result.output


def test_base_with_standard_input_is_a_usage_error() -> None:
    result = run("diff", "--base", "HEAD", "-")
    assert result.exit_code == 2 and "not - (standard input)" in result.output


@pytest.mark.parametrize(
    ("revision", "message"),
    [("no-such-branch", "unknown revision 'no-such-branch'"), ("--output=json", "'--output=json' is not a revision")],
)
def test_base_bad_revision_is_a_clear_error(repo: Path, revision: str, message: str) -> None:
    result = run("diff", f"--base={revision}", repo / "clusters" / "prod.yaml")
    assert result.exit_code == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_base_outside_a_repository_is_a_clear_error(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    lonely = tmp_path / "lonely"
    lonely.mkdir()
    shutil.copy(MIG / "before.yaml", lonely / "prod.yaml")
    result = run("diff", "--base", "HEAD", "--output", "json", lonely / "prod.yaml")
    assert result.exit_code == 2
    assert "is not inside a git repository" in json.loads(result.stdout)["error"]


def test_base_invalid_old_version_exits_2_naming_the_revision(repo: Path) -> None:
    blueprint = repo / "clusters" / "prod.yaml"
    blueprint.write_text(blueprint.read_text().replace('{"3g.40gb": 2}', '{"3g.40gb": 3}'))
    git(repo, "commit", "-q", "-am", "break it")
    shutil.copy(MIG / "before.yaml", blueprint)
    result = run("diff", "--base", "HEAD", blueprint)
    assert result.exit_code == 2
    assert "HEAD:clusters/prod.yaml:23:" in result.stderr and MIG_LAYOUT_IMPOSSIBLE in result.stderr


TEMPLATE_WORKLOAD = """    - name: batch
      tenant: payments
      pool: l4
      kind: Job
      image: payments/batch:1
      gpu: {count: 1}
      template: templates/batch.yaml.j2
"""


def test_base_reads_workload_templates_at_the_revision(repo: Path) -> None:
    blueprint = repo / "clusters" / "prod.yaml"
    blueprint.write_text(blueprint.read_text() + TEMPLATE_WORKLOAD)
    (repo / "clusters" / "templates").mkdir()
    template = repo / "clusters" / "templates" / "batch.yaml.j2"
    template.write_text("{{ manifest | toyaml }}\n")
    git(repo, "add", "clusters/prod.yaml")
    git(repo, "commit", "-q", "-m", "templated job, template forgotten")
    result = run("diff", "--base", "HEAD", blueprint)
    assert result.exit_code == 2, "the template is not committed at HEAD"
    assert "cannot read template 'templates/batch.yaml.j2' of workload 'batch': not in HEAD" in result.stderr
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "templated job")
    assert run("diff", "--base", "HEAD", blueprint).exit_code == 0
    template.write_text("# reviewed\n{{ manifest | toyaml }}\n")
    data = json.loads(run("diff", "--base", "HEAD", "-O", "json", blueprint).stdout)
    fields = [f["field"] for c in data["changes"] for f in c["fields"]]
    assert fields == ["template (contents)"]


# gpustack graph


def test_graph_prints_mermaid_markdown_and_json() -> None:
    text = run("graph", MIG / "before.yaml")
    assert text.exit_code == 0 and text.stdout.startswith("flowchart LR\n")
    markdown = run("graph", "--output", "markdown", MIG / "before.yaml").stdout
    assert markdown == f"```mermaid\n{text.stdout}```\n"
    data = json.loads(run("graph", "-O", "json", MIG / "before.yaml").stdout)
    assert data["mermaid"] == text.stdout
    assert {n["id"] for n in data["nodes"]} == {
        "tenant_payments",
        "workload_fraud_scorer",
        "workload_ranker",
        "pool_h100_mig",
        "pool_l4",
    }


def test_graph_of_an_invalid_blueprint_exits_1(tmp_path: Path) -> None:
    broken = edited(tmp_path, MIG / "after.yaml", "broken.yaml", ('layout: {"3g.40gb": 2}', 'layout: {"3g.40gb": 3}'))
    result = run("graph", broken)
    assert result.exit_code == 1 and MIG_LAYOUT_IMPOSSIBLE in result.stderr

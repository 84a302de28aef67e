"""The output writer owns only what it wrote (security review H1, M8, M9, L1, L8, L9, L10)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import BLUEPRINTS

from gpustack import write
from gpustack.cli import group
from gpustack.write import MANIFEST

QUICKSTART = str(BLUEPRINTS / "quickstart.yaml")


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(group, list(args))
    return result.exit_code, result.output


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_output_lists_what_gpustack_wrote(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run("compile", QUICKSTART, "-o", str(out))[0] == 0
    listed = [line for line in (out / MANIFEST).read_text().splitlines() if not line.startswith("#")]
    assert sorted({*listed, MANIFEST}) == sorted(snapshot(out))


def test_a_git_repository_root_is_never_replaced(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    assert run("compile", QUICKSTART, "-o", str(repo))[0] == 0
    (repo / ".git").mkdir()
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    before = snapshot(repo)
    code, output = run("compile", QUICKSTART, "-o", str(repo))
    assert code == 1 and "error[GS901]" in output and "root of a git repository" in output
    assert snapshot(repo) == before


def test_files_gpustack_did_not_write_are_never_deleted(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run("compile", QUICKSTART, "-o", str(out))[0] == 0
    (out / "NOTES.md").write_text("notes")
    (out / "overlays").mkdir()
    (out / "overlays" / "p.yaml").write_text("p")
    before = snapshot(out)
    code, output = run("compile", QUICKSTART, "-o", str(out))
    assert code == 1 and "holds files gpustack did not write: NOTES.md, overlays" in output
    assert snapshot(out) == before
    # Once they are moved out, the folder is gpustack's again.
    (out / "NOTES.md").unlink()
    shutil.rmtree(out / "overlays")
    assert run("compile", QUICKSTART, "-o", str(out))[0] == 0


def test_a_folder_holding_the_blueprint_is_never_replaced(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run("compile", QUICKSTART, "-o", str(out))[0] == 0
    shutil.copy(QUICKSTART, out / "bp.yaml")
    before = snapshot(out)
    code, output = run("compile", str(out / "bp.yaml"), "-o", str(out))
    assert code == 1 and "an input of this compile" in output
    assert snapshot(out) == before


def test_an_output_of_an_older_gpustack_without_a_manifest_is_replaced_only_if_it_holds_nothing_else(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    assert run("compile", QUICKSTART, "-o", str(out))[0] == 0
    (out / MANIFEST).unlink()
    (out / "bp.yaml").write_text("kept")
    code, output = run("compile", QUICKSTART, "-o", str(out))
    assert code == 1 and "bp.yaml" in output and (out / "bp.yaml").read_text() == "kept"
    (out / "bp.yaml").unlink()
    assert run("compile", QUICKSTART, "-o", str(out))[0] == 0


def test_a_folder_swapped_by_another_run_between_two_reads_is_judged_again_under_the_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check before the lock reads a folder's manifest, then lists it: a concurrent run's swap between the two reads
    shows one run's manifest beside the other's files. That reading must not refuse; the check under the lock decides.
    (Under load, 7 of 300 concurrent compiles into one folder were refused so.)"""
    out = tmp_path / "out"
    assert run("compile", QUICKSTART, "-d", str(out))[0] == 0
    real = write._foreign
    calls: list[int] = []

    def mid_swap(target: Path, owned: set[str]) -> list[str]:
        calls.append(1)
        return ["tenants/ml.yaml"] if len(calls) == 1 else real(target, owned)  # only the first, lock-free, reading

    monkeypatch.setattr(write, "_foreign", mid_swap)
    assert run("compile", QUICKSTART, "-d", str(out))[0] == 0
    assert len(calls) == 2
    (out / "mine.txt").write_text("kept")  # a real stranger is still refused, under the lock too
    code, output = run("compile", QUICKSTART, "-d", str(out))
    assert code == 1 and "mine.txt" in output and (out / "mine.txt").read_text() == "kept"


def test_concurrent_compiles_into_one_folder_all_succeed(tmp_path: Path) -> None:
    out = tmp_path / "out"
    blueprints = [QUICKSTART, str(BLUEPRINTS / "seed-article.yaml")]
    command = [sys.executable, "-m", "gpustack", "compile"]
    runs = [
        subprocess.Popen([*command, blueprints[i % 2], "-o", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for i in range(6)
    ]
    results = [(process.wait(timeout=120), process.communicate()[1]) for process in runs]
    assert [code for code, _ in results] == [0] * 6, results
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no staging folder left
    listed = {line for line in (out / MANIFEST).read_text().splitlines() if not line.startswith("#")}
    assert {*listed, MANIFEST} == set(snapshot(out))  # one run's output, whole


def test_a_symlinked_output_writes_the_real_folder_and_keeps_the_link(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to("real")
    assert run("compile", QUICKSTART, "-o", str(tmp_path / "link"))[0] == 0
    assert run("compile", QUICKSTART, "-o", str(tmp_path / "link"))[0] == 0
    assert (tmp_path / "link").is_symlink() and os.readlink(tmp_path / "link") == "real"
    assert (tmp_path / "real" / "kustomization.yaml").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "real"]
    assert run("compile", QUICKSTART, "-o", str(tmp_path / "link"), "--check")[0] == 0


def test_check_never_follows_a_symlink_inside_the_output(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run("compile", QUICKSTART, "-o", str(out))[0] == 0
    secret = tmp_path / "credentials"
    secret.write_text("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI\n")
    (out / "README.md").unlink()
    (out / "README.md").symlink_to(secret)
    code, output = run("compile", QUICKSTART, "-o", str(out), "--check")
    assert code == 1 and "unexpected: README.md (a symlink; not read)" in output
    assert "AWS_SECRET" not in output


def test_check_of_an_unreadable_folder_is_an_error_not_missing_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    assert run("compile", QUICKSTART, "-o", str(out))[0] == 0

    def denied(top: str, onerror: object = None, **_: object) -> object:
        error = PermissionError(13, "Permission denied", top)
        if callable(onerror):
            onerror(error)
        return iter(())

    monkeypatch.setattr(os, "walk", denied)
    code, output = run("compile", QUICKSTART, "-o", str(out), "--check")
    assert code == 1 and "error[GS901]" in output and "cannot be read: Permission denied" in output
    assert "missing:" not in output
    code, output = run("compile", QUICKSTART, "-o", str(out))
    assert code == 1 and "cannot be read" in output and "internal error" not in output


def test_the_output_is_readable_as_the_umask_says(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        assert run("compile", QUICKSTART, "-o", str(tmp_path / "out"))[0] == 0
        assert run("capacity", QUICKSTART, "--chart", str(tmp_path / "c.svg"))[0] == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "out").stat().st_mode) == 0o755
    assert stat.S_IMODE((tmp_path / "c.svg").stat().st_mode) == 0o644


def test_leftover_clean_up_leaves_user_folders_alone_and_does_not_glob(tmp_path: Path) -> None:
    for name in (".out.old-2024-01", ".out.new-settings", ".config.old-keep", ".vscode.new-settings"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "notes.txt").write_text(name)
    assert run("compile", QUICKSTART, "-o", str(tmp_path / "out"))[0] == 0
    assert run("compile", QUICKSTART, "-o", str(tmp_path / "*"))[0] == 0
    for name in (".out.old-2024-01", ".out.new-settings", ".config.old-keep", ".vscode.new-settings"):
        assert (tmp_path / name / "notes.txt").read_text() == name


def test_the_current_folder_as_output_is_refused_clearly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for target in (".", ""):
        code, output = run("compile", QUICKSTART, "-o", target)
        assert code == 1 and "is (or contains) the current folder" in output and "-d NAME" in output
    assert list(tmp_path.iterdir()) == []

"""The flags a user types: --output/-o FORMAT everywhere, --out-dir/-d DIR on compile, the old spellings warned."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import BLUEPRINTS, CASES

from gpustack.cli import group
from gpustack.codes import UNKNOWN_MODEL
from gpustack.write import MANIFEST

# A document whose keys changed gets the next version (docs/json-output.md): simulate's pending pods name shared
# messages since v1alpha2.
API_VERSION = {"simulate": "gpustack.io/v1alpha2"}

QUICKSTART = str(BLUEPRINTS / "quickstart.yaml")
SEED = str(BLUEPRINTS / "seed-article.yaml")


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(group, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("validate", QUICKSTART),
        ("compile", QUICKSTART),
        ("simulate", QUICKSTART),
        ("capacity", QUICKSTART),
        ("graph", QUICKSTART),
        ("diff", QUICKSTART, SEED),
        ("models", "T4"),
    ],
)
def test_every_reporting_command_takes_dash_o_for_its_format(args: tuple[str, ...]) -> None:
    code, out, err = run(*args, "-o", "json")
    assert code in (0, 1), err
    assert json.loads(out)["apiVersion"] == API_VERSION.get(args[0], "gpustack.io/v1alpha1")
    assert "deprecated" not in err
    assert (code, out) == run(*args, "--output", "json")[:2]


@pytest.mark.parametrize("command", ["validate", "simulate", "capacity", "graph"])
def test_the_old_format_flag_still_works_with_a_warning(command: str) -> None:
    code, out, err = run(command, QUICKSTART, "-O", "json")
    assert json.loads(out)["apiVersion"] == API_VERSION.get(command, "gpustack.io/v1alpha1")
    assert "-O json is deprecated" in err and "--output/-o json" in err
    assert (code, out) == run(command, QUICKSTART, "-o", "json")[:2]


def test_compile_writes_to_out_dir_without_warnings(tmp_path: Path) -> None:
    code, out, err = run("compile", QUICKSTART, "-d", str(tmp_path / "out"))
    assert code == 0 and err == ""
    assert out.startswith(f"wrote 13 files to {tmp_path / 'out'}")
    assert (tmp_path / "out" / "kustomization.yaml").is_file()


def test_compile_dash_o_dir_still_writes_with_a_deprecation_warning(tmp_path: Path) -> None:
    out_dir = tmp_path / "out"
    code, _, err = run("compile", QUICKSTART, "-o", str(out_dir))
    assert code == 0
    assert f"-o {out_dir} for the output directory is deprecated" in err and "--out-dir/-d" in err
    assert (out_dir / "kustomization.yaml").is_file()
    code, _, err = run("compile", QUICKSTART, "--out", str(out_dir), "--check")
    assert code == 0 and "--out" in err and "deprecated" in err


def test_compile_dash_o_json_is_the_format_not_a_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = run("compile", QUICKSTART, "-o", "json")
    assert code == 0, err
    report = json.loads(out)
    assert report["kind"] == "CompileReport" and report["written"] is False and report["outDir"] is None
    assert list(tmp_path.iterdir()) == [], "a dry run writes nothing, and no directory named json"


@pytest.mark.parametrize("folder", ["json", "sarif", "text/", "yaml", "markdown"])
def test_an_output_directory_named_like_a_format_is_refused_with_a_hint(
    folder: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = run("compile", QUICKSTART, "-d", folder)
    name = folder.rstrip("/")
    assert code == 2
    assert f"use --output {name}" in err and f"give ./{name}" in err
    assert list(tmp_path.iterdir()) == []
    assert run("compile", QUICKSTART, "-d", f"./{name}")[0] == 0, "./json is unmistakably a folder"


def test_compile_json_describes_what_was_written(tmp_path: Path) -> None:
    out_dir = tmp_path / "out"
    code, out, _ = run("compile", SEED, "-d", str(out_dir), "--output", "json")
    assert code == 0
    report = json.loads(out)
    assert report["written"] is True and report["outDir"] == str(out_dir)
    on_disk = sorted(str(p.relative_to(out_dir)) for p in out_dir.rglob("*") if p.is_file())
    # every file of the output, besides the writer's own record of what it wrote
    assert sorted(f["path"] for f in report["files"]) == [p for p in on_disk if p != MANIFEST]
    for entry in report["files"]:
        assert entry["bytes"] == (out_dir / entry["path"]).stat().st_size
    assert sum(report["objectsByKind"].values()) == report["objectCount"] > 0
    assert report["objectsByKind"]["Namespace"] >= 1
    assert {r["chart"] for r in report["helmReleases"]} >= {"gpu-operator"}
    assert all(r["valuesFile"] in on_disk for r in report["helmReleases"])


def test_compile_json_of_an_invalid_blueprint_says_why_and_writes_nothing(tmp_path: Path) -> None:
    code, out, _ = run(
        "compile", str(CASES / "invalid" / "unknown-model.yaml"), "-d", str(tmp_path / "o"), "-o", "json"
    )
    assert code == 1
    report = json.loads(out)
    assert report["kind"] == "CompileReport" and report["valid"] is False and report["written"] is False
    assert [d["code"] for d in report["diagnostics"]] == [UNKNOWN_MODEL]
    assert not (tmp_path / "o").exists()


def test_compile_output_yaml_streams_like_dash_d_dash() -> None:
    assert run("compile", SEED, "-o", "yaml")[:2] == run("compile", SEED, "-d", "-")[:2]
    assert run("compile", SEED, "-o", "yaml", "-d", "out")[0] == 2


def test_compile_needs_a_directory_unless_it_prints() -> None:
    code, _, err = run("compile", QUICKSTART)
    assert code == 2 and "--out-dir" in err


def test_a_format_a_command_does_not_print_is_a_usage_error() -> None:
    code, _, err = run("capacity", QUICKSTART, "-o", "sarif")
    assert code == 2 and "sarif" in err


def test_compile_check_json_lists_what_is_stale(tmp_path: Path) -> None:
    out_dir = tmp_path / "out"
    assert run("compile", QUICKSTART, "-d", str(out_dir))[0] == 0
    code, out, _ = run("compile", QUICKSTART, "-d", str(out_dir), "--check", "-o", "json")
    assert code == 0 and json.loads(out)["stale"] == [] and json.loads(out)["written"] is False
    (out_dir / "stray.yaml").write_text("x: 1\n")
    code, out, _ = run("compile", QUICKSTART, "-d", str(out_dir), "--check", "-o", "json")
    assert code == 1 and json.loads(out)["stale"] == ["unexpected: stray.yaml"]

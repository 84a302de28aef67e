"""A fleet file's diagnostics and its safety: the fleet schema's wording at file:line:col, an overlay's mistakes at
the overlay's line with the base's beside them, names as DNS-1123 labels, paths confined to the fleet's folder, and
gpustack's safe writer (a folder holding what gpustack did not write is never replaced)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import BLUEPRINTS, CASES

from gpustack.cli import group
from gpustack.codes import (
    FLEET_CLUSTER_NAME,
    FLEET_CLUSTER_SOURCE,
    FLEET_FILE_UNREADABLE,
    FLEET_OVERLAY_OWNED,
    UNKNOWN_FIELD,
)
from gpustack.diagnostic import Position, Span
from gpustack.fleet.reading import read_fleet
from gpustack.fleet.resolve import resolve_cluster

FLEET_CASES = CASES / "fleet"
FLEET_HEAD = """apiVersion: gpustack.io/v1alpha1
kind: Fleet
metadata: {name: t}
spec:
  base: base.yaml
  delivery: {engine: flux, source: {url: "https://git.example.com/fleet.git"}}
  clusters:
"""


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(group, list(args))
    return result.exit_code, result.stdout, result.stderr


def resolved(fleet: str, cluster: str):
    read = read_fleet(fleet)
    assert read.ok and read.fleet is not None and read.document is not None, read.diagnostics
    entry = read.fleet.cluster(cluster)
    assert entry is not None
    return resolve_cluster(read.fleet, read.document, entry)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A fleet folder with the cases' base, to write fleet files into."""
    shutil.copy(FLEET_CASES / "base.yaml", tmp_path / "base.yaml")
    return tmp_path


def fleet_with(folder: Path, clusters: str) -> str:
    (folder / "fleet.yaml").write_text(FLEET_HEAD + clusters)
    return str(folder / "fleet.yaml")


def test_an_overlay_file_s_mistake_is_at_its_line_and_the_base_line_it_touches() -> None:
    fleet = str(FLEET_CASES / "overlay-invalid.yaml")
    (typo,) = resolved(fleet, "typo").validation.diagnostics
    overlay, base = str(FLEET_CASES / "overlays" / "typo.yaml"), str(FLEET_CASES / "base.yaml")
    assert typo.code == UNKNOWN_FIELD and typo.message.startswith("cluster 'typo': unknown field 'nodez'")
    assert typo.span is not None and (typo.span.file, typo.span.start) == (overlay, Position(5, 7))
    assert [(s.file, s.start.line) for s in typo.related] == [(base, 14)]  # the pool `- name: l4` in the base


def test_an_inline_overlay_s_mistake_is_at_the_fleet_file_s_line() -> None:
    fleet = str(FLEET_CASES / "overlay-invalid.yaml")
    errors = [d for d in resolved(fleet, "inline").validation.diagnostics if d.severity == "error"]
    (error,) = errors
    assert error.message.startswith("cluster 'inline': workload 'chat' asks for 5 nvidia.com/gpu per pod")
    assert error.span == Span(fleet, Position(16, 54), Position(16, 55))
    assert [(s.file, s.start.line) for s in error.related] == [(str(FLEET_CASES / "base.yaml"), 33)]


def test_a_warning_an_overlay_causes_is_at_the_overlay_and_cluster_named() -> None:
    fleet = str(FLEET_CASES / "overlay-invalid.yaml")
    (warning,) = resolved(fleet, "lab").validation.diagnostics
    assert warning.message.startswith("cluster 'lab': tenant 'ml' may use 9 nvidia.com/gpu in pool 'l4'")
    assert warning.span is not None and warning.span.file == str(FLEET_CASES / "overlays" / "too-much-quota.yaml")
    assert warning.span.start.line == 6


def test_the_cli_stops_on_an_invalid_cluster_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    code, _, stderr = run("fleet", "compile", str(FLEET_CASES / "overlay-invalid.yaml"), "-d", str(out))
    assert code == 1
    assert (
        f"{FLEET_CASES / 'overlays' / 'typo.yaml'}:5:7: error[GS101]: cluster 'typo': unknown field 'nodez'" in stderr
    )
    assert f"note: see {FLEET_CASES / 'base.yaml'}:14:7" in stderr
    assert "nothing written" in stderr
    assert not out.exists()  # the valid clusters ('ok') are not written either


@pytest.mark.parametrize(
    ("case", "code", "where"),
    [
        ("unreadable", FLEET_FILE_UNREADABLE, (9, 28)),
        ("duplicate", FLEET_CLUSTER_NAME, (10, 14)),
        ("reserved", FLEET_CLUSTER_NAME, (9, 14)),
        ("both", FLEET_CLUSTER_SOURCE, (9, 7)),
        ("owned", FLEET_OVERLAY_OWNED, (11, 20)),
    ],
)
def test_fleet_codes_at_their_line(case: str, code: str, where: tuple[int, int], tmp_path: Path) -> None:
    fleet = str(FLEET_CASES / f"{case}.yaml")
    status, _, stderr = run("fleet", "compile", fleet, "-d", str(tmp_path / "out"))
    assert status == 1
    assert f"{fleet}:{where[0]}:{where[1]}: error[{code}]" in stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "name", ["Train-EU", "train_eu", "-train", "a" * 64, "../up", "train.eu", "train-eu\n", "\uff54rain"]
)
def test_a_cluster_name_must_be_a_dns_label(folder: Path, name: str) -> None:
    fleet = fleet_with(
        folder, f"    - name: {name!r}\n".replace("'", '"') if "\n" in name else f"    - name: '{name}'\n"
    )
    read = read_fleet(fleet)
    assert not read.ok
    assert [d.code for d in read.diagnostics] == ["GS105"]  # bad format, at the name
    assert read.diagnostics[0].path == ("spec", "clusters", 0, "name")


@pytest.mark.parametrize("path", ["/etc/passwd", "../base.yaml", "clusters/../../x.yaml", "a/..", ".."])
def test_a_path_that_leaves_the_folder_by_its_spelling_is_refused(folder: Path, path: str) -> None:
    read = read_fleet(fleet_with(folder, f"    - {{name: lab, overlay: '{path}'}}\n"))
    if read.ok:  # a spelling the schema lets through is refused when read
        assert read.fleet is not None and read.document is not None
        (problem,) = resolve_cluster(read.fleet, read.document, read.fleet.clusters[0]).validation.diagnostics
        assert problem.code == FLEET_FILE_UNREADABLE
    else:
        assert read.diagnostics[0].path == ("spec", "clusters", 0, "overlay")


def test_a_symlink_out_of_the_folder_is_refused(folder: Path, tmp_path: Path) -> None:
    secret = tmp_path.parent / f"{tmp_path.name}-secret.yaml"
    secret.write_text("spec:\n  kubernetes: {version: '1.31'}\n")
    fleet_folder = folder / "fleet"
    fleet_folder.mkdir()
    shutil.move(folder / "base.yaml", fleet_folder / "base.yaml")
    os.symlink(secret, fleet_folder / "overlay.yaml")
    (fleet_folder / "fleet.yaml").write_text(FLEET_HEAD + "    - {name: lab, overlay: overlay.yaml}\n")
    result = resolved(str(fleet_folder / "fleet.yaml"), "lab")
    (problem,) = result.validation.diagnostics
    assert problem.code == FLEET_FILE_UNREADABLE
    assert "a symlink leads out of the fleet file's folder" in problem.message
    assert str(secret) not in problem.message
    # A base through a symlink out is refused the same way.
    os.symlink(secret, fleet_folder / "base-link.yaml")
    text = (fleet_folder / "fleet.yaml").read_text().replace("base: base.yaml", "base: base-link.yaml")
    (fleet_folder / "fleet.yaml").write_text(text)
    (problem,) = resolved(str(fleet_folder / "fleet.yaml"), "lab").validation.diagnostics
    assert problem.code == FLEET_FILE_UNREADABLE and problem.path == ("spec", "base")


def test_a_blueprint_given_as_the_fleet_is_worded_not_a_traceback() -> None:
    code, _, stderr = run("fleet", "compile", str(FLEET_CASES / "base.yaml"), "-d", "unused")
    assert code == 1
    assert "error[GS104]: invalid value 'ClusterBlueprint' for kind: expected 'Fleet'" in stderr
    assert "missing required field 'delivery' in spec" in stderr
    assert "Traceback" not in stderr


def test_an_overlay_that_is_not_a_mapping(folder: Path) -> None:
    (folder / "list.yaml").write_text("- spec\n")
    result = resolved(fleet_with(folder, "    - {name: lab, overlay: list.yaml}\n"), "lab")
    (problem,) = result.validation.diagnostics
    assert problem.code == FLEET_CLUSTER_SOURCE and "its overlay is not a mapping" in problem.message


def test_null_in_an_overlay_removes_the_base_s_value(folder: Path) -> None:
    overlay = "    - name: lab\n      overlay:\n        spec:\n          workloads: null\n"
    result = resolved(fleet_with(folder, overlay), "lab")
    assert result.ok and "workloads" not in result.data["spec"]


def test_a_cluster_folder_holding_user_files_is_never_replaced(tmp_path: Path) -> None:
    shutil.copytree(BLUEPRINTS / "fleet", tmp_path / "fleet")
    fleet = str(tmp_path / "fleet" / "fleet.yaml")
    out = tmp_path / "out"
    (out / "train-us").mkdir(parents=True)
    (out / "train-us" / "notes.md").write_text("mine\n")
    code, _, stderr = run("fleet", "compile", fleet, "-d", str(out))
    assert code == 1
    assert "error[GS901]" in stderr and "train-us: is not empty and was not written by gpustack" in stderr
    assert (out / "train-us" / "notes.md").read_text() == "mine\n"
    assert sorted(p.name for p in out.iterdir()) == ["train-us"]  # no other cluster, no delivery folder written


def test_a_cluster_folder_holding_the_fleet_s_own_files_is_refused(tmp_path: Path) -> None:
    """-d pointed at the fleet's folder with a cluster named like its overlays' folder would delete the overlays."""
    shutil.copytree(BLUEPRINTS / "fleet", tmp_path / "fleet")
    fleet = tmp_path / "fleet" / "fleet.yaml"
    fleet.write_text(fleet.read_text().replace("name: train-us", "name: clusters"))
    code, _, stderr = run("fleet", "compile", str(fleet), "-d", str(tmp_path / "fleet"))
    assert code == 1 and "error[GS901]" in stderr
    assert (tmp_path / "fleet" / "clusters" / "train-us.yaml").is_file()


def test_a_delivery_folder_holding_user_files_is_never_replaced(tmp_path: Path) -> None:
    shutil.copytree(BLUEPRINTS / "fleet", tmp_path / "fleet")
    out = tmp_path / "out"
    (out / "delivery").mkdir(parents=True)
    (out / "delivery" / "app-of-apps.yaml").write_text("mine\n")
    code, _, stderr = run("fleet", "compile", str(tmp_path / "fleet" / "fleet.yaml"), "-d", str(out))
    assert code == 1 and "delivery: is not empty and was not written by gpustack" in stderr
    assert (out / "delivery" / "app-of-apps.yaml").read_text() == "mine\n"
    assert sorted(p.name for p in out.iterdir()) == ["delivery"]  # refused before any cluster was written


def test_a_base_warning_is_shown_once_naming_every_cluster(folder: Path, tmp_path: Path) -> None:
    base = folder / "base.yaml"
    base.write_text(base.read_text().replace("l4: {gpu: 8}", "l4: {gpu: 9}"))
    clusters = "".join(f"    - {{name: c{i}, overlay: {{spec: {{}}}}}}\n" for i in range(7))
    code, _, stderr = run("fleet", "compile", fleet_with(folder, clusters), "-d", str(tmp_path / "out"))
    assert code == 0
    assert stderr.count("warning[GS501]") == 1
    assert "warning[GS501]: clusters 'c0', 'c1', 'c2', 'c3', 'c4' and 2 more: tenant 'ml' may use 9" in stderr


def test_a_fleet_edited_while_compiling_is_reported_not_a_traceback(folder: Path, tmp_path: Path) -> None:
    from gpustack.fleet.compiling import _cluster_task

    fleet = fleet_with(folder, "    - {name: lab}\n")
    outcome = _cluster_task((fleet, "gone", str(tmp_path / "out"), False, False))  # the cluster left the file meanwhile
    assert not outcome.ok and outcome.files is None
    assert "changed while it was compiled (cluster 'gone')" in outcome.diagnostics[-1].message


def test_a_fleet_edited_while_compiling_is_in_the_json_report_too(folder: Path, tmp_path: Path) -> None:
    from gpustack.fleet.compiling import _cluster_task, fleet_compile_data

    fleet = fleet_with(folder, "    - {name: lab}\n")
    outcome = _cluster_task((fleet, "gone", str(tmp_path / "out"), False, True))
    assert outcome.report is not None and outcome.report["valid"] is False
    data = fleet_compile_data(
        fleet, None, str(tmp_path / "out"), check=False, written=False, outcomes=[outcome], problems=[]
    )
    assert (data["valid"], data["errorCount"]) == (False, 1)

"""`gpustack fleet compile --output json`: a FleetCompileReport whose every cluster is the CompileReport `gpustack
compile --output json` gives its resolved blueprint, the files hashed as written, --check's stale folders, and a
report (never a traceback, nothing written) for every way the fleet can fail (issue 31)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import BLUEPRINTS, CASES

from gpustack.cli import group

EXAMPLE = BLUEPRINTS / "fleet"
CLUSTERS = ["train-eu", "train-us", "staging-eu"]
# What a fleet's cluster entry says beyond the CompileReport, or says of its own folder (DIR/NAME, not -d DIR).
FLEET_ONLY = {"name", "labels", "outDir", "written", "file"}


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(group, list(args))
    return result.exit_code, result.stdout, result.stderr


def report(*args: str) -> tuple[int, dict[str, Any]]:
    code, stdout, stderr = run("fleet", "compile", *args, "--output", "json")
    assert stderr == "" or "Traceback" not in stderr, stderr
    data = json.loads(stdout)
    assert (data["apiVersion"], data["kind"]) == ("gpustack.io/v1alpha1", "FleetCompileReport")
    return code, data


@pytest.fixture
def fleet(tmp_path: Path) -> Path:
    shutil.copytree(EXAMPLE, tmp_path / "fleet")
    return tmp_path / "fleet" / "fleet.yaml"


def hashed(folder: Path, entries: list[dict[str, Any]]) -> None:
    """Each listed file is on disk with the bytes and hash the report gives."""
    for entry in entries:
        data = (folder / entry["path"]).read_bytes()
        assert (entry["bytes"], entry["sha256"]) == (len(data), hashlib.sha256(data).hexdigest()), entry["path"]


def test_each_cluster_is_the_compile_report_of_its_resolved_blueprint(fleet: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    code, data = report(str(fleet), "-d", str(out))
    assert code == 0
    assert (data["valid"], data["written"], data["check"], data["errorCount"]) == (True, True, False, 0)
    assert (data["name"], data["outDir"], data["orphans"], data["files"]) == ("gpu-fleet", str(out), [], [])
    assert [c["name"] for c in data["clusters"]] == CLUSTERS
    for cluster in data["clusters"]:
        name = cluster["name"]
        assert (cluster["outDir"], cluster["written"]) == (str(out / name), True)
        code, resolved, _ = run("fleet", "resolve", str(fleet), name)
        blueprint = fleet.parent / f"resolved-{name}.yaml"
        blueprint.write_text(resolved)
        code, single, stderr = run("compile", str(blueprint), "--output", "json")
        assert code == 0, stderr
        alone = json.loads(single)
        assert {k: v for k, v in cluster.items() if k not in FLEET_ONLY} == {
            k: v for k, v in alone.items() if k not in FLEET_ONLY | {"apiVersion", "kind"}
        }, name
        hashed(out / name, cluster["files"])
        on_disk = {p.relative_to(out / name).as_posix() for p in (out / name).rglob("*") if p.is_file()}
        assert on_disk == {f["path"] for f in cluster["files"]} | {".gpustack-manifest"}
    assert data["clusters"][2]["labels"] == {"region": "europe-west4", "environment": "staging", "cloud": "gcp"}
    delivery = data["delivery"]
    assert (delivery["engine"], delivery["outDir"], delivery["written"]) == ("argocd", str(out / "delivery"), True)
    assert [f["path"] for f in delivery["files"]] == ["applicationset.yaml", "kustomization.yaml"]
    hashed(out / "delivery", delivery["files"])


def test_the_report_is_the_same_bytes_serial_or_parallel(fleet: Path, tmp_path: Path) -> None:
    texts = []
    for jobs in ("1", "3"):
        out = tmp_path / f"out-{jobs}"
        code, stdout, _ = run("fleet", "compile", str(fleet), "-d", str(out), "--jobs", jobs, "-o", "json")
        assert code == 0
        texts.append(stdout.replace(str(out), "DIR"))
    assert texts[0] == texts[1]


def test_check_names_each_stale_folder_and_exits_1(fleet: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run("fleet", "compile", str(fleet), "-d", str(out))[0] == 0
    code, data = report(str(fleet), "-d", str(out), "--check")
    assert (code, data["stale"], data["written"]) == (0, [], False)
    assert all(c["stale"] == [] and c["written"] is False for c in data["clusters"])
    overlay = fleet.parent / "clusters" / "train-eu.yaml"
    overlay.write_text(overlay.read_text().replace("maxNodes: 8", "maxNodes: 9"))
    fleet.write_text(fleet.read_text().replace("ref: main", "ref: release"))
    code, data = report(str(fleet), "-d", str(out), "--check")
    assert (code, data["stale"]) == (1, ["train-eu", "delivery"])
    train_eu = data["clusters"][0]
    assert train_eu["stale"] and all(line.startswith("changed: ") for line in train_eu["stale"])
    assert [line.splitlines()[0] for line in data["delivery"]["stale"]] == ["changed: applicationset.yaml"]
    assert (out / "train-eu" / "cloud").is_dir()  # --check wrote nothing


def test_a_folder_left_by_a_removed_cluster_fails_check(fleet: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run("fleet", "compile", str(fleet), "-d", str(out))[0] == 0
    text = fleet.read_text()
    fleet.write_text(text[: text.index("    - name: staging-eu")])
    code, data = report(str(fleet), "-d", str(out), "--check")
    # its folder is named, never deleted; the ApplicationSet no longer delivers it
    assert (code, data["orphans"], data["stale"]) == (1, ["staging-eu"], ["delivery"])
    assert (out / "staging-eu" / "kustomization.yaml").is_file()


def test_an_invalid_cluster_is_reported_at_its_overlays_line_and_nothing_is_written(tmp_path: Path) -> None:
    out = tmp_path / "out"
    code, data = report(str(CASES / "fleet" / "overlay-invalid.yaml"), "-d", str(out))
    assert code == 1 and not out.exists()
    assert (data["valid"], data["written"], data["errorCount"]) == (False, False, 2)
    found = {c["name"]: c for c in data["clusters"]}
    typo = found["typo"]
    assert (typo["valid"], typo["written"], "files" not in typo) == (False, False, True)
    (diagnostic,) = typo["diagnostics"]
    assert diagnostic["code"] == "GS101" and diagnostic["file"].endswith("overlays/typo.yaml")
    assert diagnostic["range"]["start"] == {"line": 5, "column": 7}
    assert found["ok"]["valid"] and found["ok"]["written"] is False  # compiled, but a fleet is written whole or not


@pytest.mark.parametrize(
    "text",
    [
        "kind: Fleet\n",
        "apiVersion: gpustack.io/v1alpha1\nkind: ClusterBlueprint\nmetadata: {name: x}\nspec: {}\n",
        "a: [unclosed\n",
        "\x00\x01binary",
        "- just\n- a list\n",
    ],
    ids=["fields-missing", "a-blueprint", "syntax", "binary", "a-list"],
)
def test_an_unreadable_fleet_is_a_report_with_its_diagnostics(tmp_path: Path, text: str) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text(text)
    code, data = report(str(path), "-d", str(tmp_path / "out"))
    assert code == 1 and not (tmp_path / "out").exists()
    assert (data["valid"], data["written"], data["clusters"], data["delivery"]) == (False, False, [], None)
    (found,) = data["files"]
    assert found["file"] == str(path) and found["errorCount"] >= 1 and found["diagnostics"][0]["code"].startswith("GS")


def test_a_folder_the_writer_refuses_is_a_diagnostic_and_nothing_is_written(fleet: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "train-us").mkdir(parents=True)
    (out / "train-us" / "notes.md").write_text("mine\n")
    code, data = report(str(fleet), "-d", str(out))
    assert code == 1 and (data["valid"], data["written"]) == (False, False)
    assert [d["code"] for f in data["files"] for d in f["diagnostics"]] == ["GS901"]
    assert sorted(p.name for p in out.iterdir()) == ["train-us"]

"""`gpustack fleet diff --base REV` (a base change reaches every cluster built from it; an overlay's only its own;
GPUs per model over the fleet) and `gpustack fleet drift` (one snapshot per cluster, exit 1 on any drift)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from cluster_from import snapshot_data
from conftest import BLUEPRINTS

from gpustack.cli import group
from gpustack.fleet.reading import read_fleet
from gpustack.fleet.resolve import resolve_cluster
from gpustack.yamlout import dump_yaml

CLUSTERS = ("train-eu", "train-us", "staging-eu")


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(group, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def git(repo: Path, *args: str) -> str:
    identity = ["-c", "user.name=gpustack-test", "-c", "user.email=test@example.com"]
    identity += ["-c", "commit.gpgsign=false", "-c", "core.hooksPath=/dev/null"]
    done = subprocess.run(["git", "-C", str(repo), *identity, *args], capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository holding blueprints/fleet, committed and tagged v1."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    root = tmp_path / "repo"
    shutil.copytree(BLUEPRINTS / "fleet", root / "fleet")
    git(root, "init", "-q")
    git(root, "add", "fleet")
    git(root, "commit", "-q", "-m", "fleet")
    git(root, "tag", "v1")
    return root


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


def test_a_base_change_reaches_every_cluster(repo: Path) -> None:
    edit(repo / "fleet" / "base.yaml", "timeSlicing: {replicas: 4}", "timeSlicing: {replicas: 2}")
    fleet = str(repo / "fleet" / "fleet.yaml")
    code, text, stderr = run("fleet", "diff", "--base", "v1", fleet)
    assert code == 1, stderr
    assert text.startswith(f"fleet {fleet} against v1: 3 of 3 cluster(s) change (train-eu, train-us, staging-eu)\n")
    assert "the base changed: it reaches 3 cluster(s) (train-eu, train-us, staging-eu); 3 of them change" in text
    for cluster in CLUSTERS:
        assert f"== cluster {cluster}\ngpustack review: v1: cluster {cluster} -> cluster {cluster}" in text
    assert text.count("replicas: 4 -> 2") == 3
    code, markdown, _ = run("fleet", "diff", "--base", "v1", fleet, "--output", "markdown")
    assert code == 1
    assert "| train-eu | changed |" in markdown and "| staging-eu | changed |" in markdown
    assert all(f"<details><summary>cluster {c}</summary>" in markdown for c in CLUSTERS)
    assert "| L4 | 18 | 18 | +0 |" in markdown  # time-slicing changes no physical GPU


def test_an_overlay_change_reaches_its_cluster_only_and_the_fleet_s_gpus_move(repo: Path) -> None:
    edit(repo / "fleet" / "clusters" / "train-eu.yaml", "maxNodes: 8", "maxNodes: 10")
    code, text, _ = run("fleet", "diff", "--base", "v1", str(repo / "fleet" / "fleet.yaml"))
    assert code == 1
    assert "1 of 3 cluster(s) change (train-eu)" in text
    assert "the base is unchanged" in text
    assert "== cluster train-us: no change" in text and "== cluster staging-eu: no change" in text
    assert "  H100-SXM5-80GB: 104 -> 120 (+16)" in text  # two more nodes of 8 H100s
    code, document, _ = run("fleet", "diff", "--base", "v1", str(repo / "fleet" / "fleet.yaml"), "-o", "json")
    data = json.loads(document)
    assert data["kind"] == "FleetReview" and data["changed"] is True and data["baseChanged"] is False
    assert [c["name"] for c in data["clusters"] if c["changed"]] == ["train-eu"]
    assert {"model": "H100-SXM5-80GB", "before": 104, "after": 120} in data["gpus"]


def test_no_change_exits_0(repo: Path) -> None:
    code, text, _ = run("fleet", "diff", "--base", "v1", str(repo / "fleet" / "fleet.yaml"))
    assert code == 0 and "0 of 3 cluster(s) change" in text


def test_a_cluster_added_since_the_revision_is_all_added(repo: Path) -> None:
    fleet = repo / "fleet" / "fleet.yaml"
    fleet.write_text(
        fleet.read_text() + "    - name: infer-us\n      labels: {region: us-east1}\n      overlay: {spec: {}}\n"
    )
    code, text, _ = run("fleet", "diff", "--base", "v1", str(fleet))
    assert code == 1 and "1 of 4 cluster(s) change (infer-us)" in text
    assert "v1: cluster infer-us (absent) -> cluster infer-us" in text


def test_an_invalid_side_exits_2_at_its_line(repo: Path) -> None:
    overlay = repo / "fleet" / "clusters" / "train-us.yaml"
    edit(overlay, "      cloud: {zones: [us-central1-a]}\n", "      clod: {zones: [us-central1-a]}\n")
    code, _, stderr = run("fleet", "diff", "--base", "v1", str(repo / "fleet" / "fleet.yaml"))
    assert code == 2
    assert f"{overlay}:6:7: error[GS101]: cluster 'train-us': unknown field 'clod'" in stderr
    # The old side is read from git: its diagnostics name the revision.
    git(repo, "commit", "-q", "-am", "typo")
    edit(overlay, "      clod:", "      cloud:")
    code, _, stderr = run("fleet", "diff", "--base", "HEAD", str(repo / "fleet" / "fleet.yaml"))
    assert code == 2 and "HEAD:fleet/clusters/train-us.yaml:6:7: error[GS101]" in stderr


def test_an_overlay_link_at_the_revision_is_refused(repo: Path) -> None:
    overlay = repo / "fleet" / "clusters" / "train-eu.yaml"
    overlay.unlink()
    overlay.symlink_to("/etc/hostname")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "link")
    code, _, stderr = run("fleet", "diff", "--base", "HEAD", str(repo / "fleet" / "fleet.yaml"))
    assert code == 2
    assert "error[GS030]: cluster 'train-eu': cannot read 'clusters/train-eu.yaml' at HEAD: a symlink in HEAD" in stderr


def test_an_unknown_revision_exits_2(repo: Path) -> None:
    code, _, stderr = run("fleet", "diff", "--base", "nope", str(repo / "fleet" / "fleet.yaml"))
    assert code == 2 and "unknown revision 'nope'" in stderr


# --- drift -----------------------------------------------------------------------------------------------------------


@pytest.fixture
def snapshots(tmp_path: Path) -> Path:
    """Each cluster of the example fleet as it would be once applied: one snapshot per cluster, named by it."""
    folder = tmp_path / "snapshots"
    folder.mkdir()
    read = read_fleet(str(BLUEPRINTS / "fleet" / "fleet.yaml"))
    assert read.fleet is not None and read.document is not None
    for cluster in read.fleet.clusters:
        blueprint = resolve_cluster(read.fleet, read.document, cluster).validation.blueprint
        assert blueprint is not None
        (folder / f"{cluster.name}.yaml").write_text(dump_yaml(snapshot_data(blueprint)))
    return folder


FLEET = str(BLUEPRINTS / "fleet" / "fleet.yaml")


def test_drift_in_sync_exits_0(snapshots: Path) -> None:
    code, text, _ = run("fleet", "drift", FLEET, str(snapshots))
    assert code == 0 and text.startswith("fleet: 3 of 3 cluster(s) in sync\n")


def test_one_drifted_cluster_exits_1_and_is_named(snapshots: Path) -> None:
    path = snapshots / "train-us.yaml"
    data = yaml.safe_load(path.read_text())
    node = next(item for item in data["items"] if item["kind"] == "Node")
    node["spec"]["taints"] = []
    path.write_text(dump_yaml(data))
    code, text, _ = run("fleet", "drift", FLEET, str(snapshots))
    assert code == 1
    assert text.startswith("fleet: 2 of 3 cluster(s) in sync; drifted or not compared: train-us\n")
    assert "== cluster train-us: drifted" in text and "== cluster train-eu: in sync" in text
    code, document, _ = run("fleet", "drift", FLEET, str(snapshots), "-o", "json")
    data = json.loads(document)
    assert data["kind"] == "FleetDriftReport" and data["inSync"] is False
    assert [c["state"] for c in data["clusters"]] == ["in sync", "drifted", "in sync"]
    code, markdown, _ = run("fleet", "drift", FLEET, str(snapshots), "-o", "markdown")
    assert code == 1 and "| train-us | drifted |" in markdown and "#### train-us" in markdown


def test_a_missing_snapshot_is_gs033_and_exit_1(snapshots: Path) -> None:
    (snapshots / "staging-eu.yaml").unlink()
    code, text, stderr = run("fleet", "drift", FLEET, str(snapshots))
    assert code == 1
    assert "error[GS033]: no snapshot for cluster 'staging-eu'" in stderr
    assert "== cluster staging-eu: not compared" in text

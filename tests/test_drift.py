"""`gpustack drift`: a blueprint against the cluster it describes, after someone changed the cluster by hand."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from builders import planned
from click.testing import CliRunner
from cluster_from import snapshot_data

from gpustack.cli import group
from gpustack.cluster.drift import compare, format_markdown, format_text, report_data
from gpustack.cluster.snapshot import parse_snapshot
from gpustack.validation import validate_path
from gpustack.yamlout import dump_yaml

BLUEPRINT = Path(__file__).parent.parent / "blueprints" / "multi-tenant.yaml"


@pytest.fixture
def blueprint():
    result = validate_path(BLUEPRINT)
    assert result.blueprint is not None
    return result.blueprint


def _node(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(i for i in data["items"] if i["kind"] == "Node" and i["metadata"]["name"] == name)


def _drifted(blueprint) -> dict[str, Any]:
    """The applied cluster, then: a node gone, a label edited, a hand-made taint, MIG mid-change, a GPU lost,
    another product in a pool, and a GPU node nobody put in a pool."""
    data = snapshot_data(blueprint)
    data["items"] = [i for i in data["items"] if i["metadata"]["name"] != "a100-c"]
    _node(data, "l4-a")["metadata"]["labels"]["nvidia.com/device-plugin.config"] = "l4-ts8"
    _node(data, "l4-b")["spec"]["taints"].append({"key": "maintenance", "effect": "NoSchedule"})
    _node(data, "l4-b")["spec"]["taints"].append({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"})
    h100 = _node(data, "h100-b")
    h100["metadata"]["labels"]["nvidia.com/mig.config.state"] = "failed"
    h100["status"]["allocatable"]["nvidia.com/mig-1g.10gb"] = "21"
    _node(data, "a100-a")["metadata"]["labels"]["nvidia.com/gpu.product"] = "NVIDIA-A100-SXM4-80GB"
    data["items"].append(
        {
            "kind": "Node",
            "metadata": {"name": "l4-c", "labels": {"nvidia.com/gpu.product": "NVIDIA-L4"}},
            "status": {"allocatable": {"nvidia.com/gpu": "4"}},
        }
    )
    return data


def test_applied_cluster_is_in_sync(blueprint) -> None:
    drift = compare(*planned(blueprint), parse_snapshot(dump_yaml(snapshot_data(blueprint)), "cluster.yaml"), "bp.yaml")
    assert drift.in_sync
    assert format_text(drift) == "cluster.yaml matches bp.yaml: 3 pool(s) in sync\n"


def test_every_kind_of_drift_node_by_node(blueprint) -> None:
    drift = compare(*planned(blueprint), parse_snapshot(dump_yaml(_drifted(blueprint)), "cluster.yaml"), "bp.yaml")
    assert format_text(drift) == (
        "drift between bp.yaml and cluster.yaml: 7 difference(s) on 6 node(s)\n"
        "\n"
        "pool h100-mig (2 node(s)): 2 difference(s)\n"
        "  h100-b: allocatable nvidia.com/mig-1g.10gb: expected 28, found 21\n"
        "  h100-b: MIG nvidia.com/mig.config.state: expected 'success' for config 'gpustack-h100-mig', found 'failed'\n"
        "\n"
        "pool a100-40-training (3 node(s)): 2 difference(s)\n"
        "  a100-a: GPU nvidia.com/gpu.product: expected A100-SXM4-40GB, found NVIDIA-A100-SXM4-80GB (A100-SXM4-80GB)\n"
        "  a100-c: missing from the cluster\n"
        "\n"
        "pool l4-shared (2 node(s)): 2 difference(s)\n"
        "  l4-a: label nvidia.com/device-plugin.config: expected 'time-slicing-4', found 'l4-ts8'\n"
        "  l4-b: taint maintenance:NoSchedule: not in the blueprint\n"
        "\n"
        "nodes in no pool:\n"
        "  l4-c: a GPU node (NVIDIA-L4) in no pool of the blueprint\n"
    )


def test_markdown_and_json(blueprint) -> None:
    drift = compare(*planned(blueprint), parse_snapshot(dump_yaml(_drifted(blueprint)), "cluster.yaml"), "bp.yaml")
    markdown = format_markdown(drift).splitlines()
    assert markdown[0] == "### Cluster drift: 7 difference(s) on 6 node(s)"
    assert "| l4-shared | l4-b | taint | taint maintenance:NoSchedule: not in the blueprint |" in markdown
    assert "| — | l4-c | extra-node | a GPU node (NVIDIA-L4) in no pool of the blueprint |" in markdown
    data = report_data(drift)
    assert (data["apiVersion"], data["kind"], data["inSync"]) == ("gpustack.io/v1alpha1", "DriftReport", False)
    assert data["pools"][0]["differences"][1] == {
        "node": "h100-b",
        "kind": "mig-state",
        "key": "nvidia.com/mig.config.state",
        "expected": "success",
        "actual": "failed",
        "message": "MIG nvidia.com/mig.config.state: expected 'success' for config 'gpustack-h100-mig', found 'failed'",
    }


def test_cli_exit_codes(blueprint, tmp_path: Path) -> None:
    clean, drifted = tmp_path / "clean.yaml", tmp_path / "drifted.json"
    clean.write_text(dump_yaml(snapshot_data(blueprint)))
    drifted.write_text(json.dumps(_drifted(blueprint)))  # kubectl -o json reads the same
    runner = CliRunner()
    ok = runner.invoke(group, ["drift", str(BLUEPRINT), str(clean)])
    assert (ok.exit_code, ok.stdout) == (0, f"{clean} matches {BLUEPRINT}: 3 pool(s) in sync\n")
    bad = runner.invoke(group, ["drift", str(BLUEPRINT), str(drifted), "--output", "json"])
    assert bad.exit_code == 1
    assert json.loads(bad.stdout)["kind"] == "DriftReport"
    broken = tmp_path / "broken.yaml"
    broken.write_text("kind: List\nitems:\n- kind: Node\n  metadata: {name: n1}\n  status: {allocatable: 3}\n")
    invalid = runner.invoke(group, ["drift", str(BLUEPRINT), str(broken)])
    assert invalid.exit_code == 1
    assert f"{broken}:5:25: error[GS020]: the allocatable map is a number; expected a mapping" in invalid.stderr


def test_cordons_and_pod_limits(blueprint, tmp_path: Path) -> None:
    """A cordon the blueprint does not list is drift, as is a listed one that is gone or another pod limit."""
    text = BLUEPRINT.read_text().replace(
        "      nodes: [a100-a, a100-b, a100-c]\n", "      nodes: [a100-a, a100-b, a100-c]\n      cordoned: [a100-a]\n"
    )
    text = text.replace("      nodes: [l4-a, l4-b]\n", "      nodes: [l4-a, l4-b]\n      maxPods: 50\n")
    edited = tmp_path / "multi-tenant.yaml"
    edited.write_text(text)
    shutil.copytree(BLUEPRINT.parent / "templates", tmp_path / "templates")  # templates must stay inside its folder
    result = validate_path(edited)
    assert result.ok and result.blueprint is not None
    data = snapshot_data(blueprint)
    _node(data, "a100-b").setdefault("spec", {})["unschedulable"] = True
    _node(data, "l4-a")["status"]["allocatable"]["pods"] = "50"
    drift = compare(*planned(result.blueprint), parse_snapshot(dump_yaml(data), "cluster.yaml"), "bp.yaml")
    assert [(d.node, d.kind, d.message) for d in drift.differences] == [
        ("a100-a", "cordon", "cordoned in the blueprint, not in the cluster"),
        ("a100-b", "cordon", "cordoned in the cluster, not in the blueprint"),
        ("l4-b", "resource", "allocatable pods: expected 50 (maxPods), found 110"),
    ]


def _selector_blueprint(name: str):
    result = validate_path(BLUEPRINT.parent / name)
    assert result.blueprint is not None
    return result.blueprint


@pytest.mark.parametrize("name", ["kueue.yaml", "volcano.yaml"])
def test_selector_pools_are_matched_by_their_selector(name: str) -> None:
    """Nodes a provider made have names gpustack never saw: the selector says which pool they are."""
    blueprint = _selector_blueprint(name)
    data = snapshot_data(blueprint)
    drift = compare(*planned(blueprint), parse_snapshot(dump_yaml(data), "cluster.yaml"), "bp.yaml")
    assert drift.in_sync, format_text(drift)
    assert all(pool.nodes for pool in drift.pools)


def test_selector_pool_drift_is_per_node_and_in_size() -> None:
    """kueue's a100 pool is GKE node pool a100-pool with 2 nodes: a third node, and one that lost gpustack's
    label, show as what they are, not as nodes missing from the cluster."""
    blueprint = _selector_blueprint("kueue.yaml")
    data = snapshot_data(blueprint)
    extra = json.loads(json.dumps(_node(data, "a100-1")))
    extra["metadata"]["name"] = "gke-a100-pool-x"
    data["items"].append(extra)
    del _node(data, "a100-2")["metadata"]["labels"]["nvidia.com/device-plugin.config"]
    drift = compare(*planned(blueprint), parse_snapshot(dump_yaml(data), "cluster.yaml"), "bp.yaml")
    (a100, h100) = drift.pools
    assert a100.nodes == ("a100-1", "a100-2", "gke-a100-pool-x") and not h100.differences
    assert [(d.node, d.kind, d.message) for d in a100.differences] == [
        ("", "node-count", "3 node(s) match cloud.google.com/gke-nodepool=a100-pool: expected 2"),
        ("a100-2", "label", "label nvidia.com/device-plugin.config: expected 'whole-gpu', found none"),
    ]
    assert drift.extra_nodes == ()
    assert "  pool: 3 node(s) match cloud.google.com/gke-nodepool=a100-pool: expected 2" in format_text(drift)

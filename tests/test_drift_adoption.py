"""Issue 27: `gpustack drift` tells drift from adoption.

What gpustack would only add to make a cluster its own (its labels on a node that carries none of them, a quota of
its name where the namespace's quotas already enforce the same, a policy binding not there yet) is listed, exit 0.
A value that differs, a label of gpustack's gone from a node that has the others, a tenant quota gone or changed, a
policy binding switched to Warn: drift, exit 1, naming the node or object.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from builders import planned
from click.testing import CliRunner
from cluster_from import snapshot_data

from gpustack.cli import group
from gpustack.cluster.drift import compare, format_text, report_data
from gpustack.cluster.snapshot import parse_snapshot
from gpustack.names import DEVICE_PLUGIN_CONFIG_LABEL, POOL_LABEL
from gpustack.validation import validate_path
from gpustack.yamlout import dump_yaml

BLUEPRINT = Path(__file__).parent.parent / "blueprints" / "multi-tenant.yaml"


@pytest.fixture
def blueprint():
    result = validate_path(BLUEPRINT)
    assert result.blueprint is not None
    return result.blueprint


def _drift(blueprint, data: dict[str, Any]):
    return compare(*planned(blueprint), parse_snapshot(dump_yaml(data), "cluster.yaml"), "bp.yaml")


def _items(data: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [item for item in data["items"] if item["kind"] == kind]


def _not_yet_adopted(data: dict[str, Any]) -> dict[str, Any]:
    """The cluster before gpustack: the same nodes, GFD's labels, without any label gpustack writes."""
    for node in _items(data, "Node"):
        labels = node["metadata"]["labels"]
        for key in [
            k
            for k in labels
            if k.startswith("gpustack.io/") or k.endswith(("/device-plugin.config", "/mig.config", "/mig.config.state"))
        ]:
            del labels[key]
    return data


def test_a_cluster_not_yet_adopted_is_in_sync_with_adoption_steps(blueprint, tmp_path: Path) -> None:
    data = _not_yet_adopted(snapshot_data(blueprint))
    drift = _drift(blueprint, data)
    assert drift.in_sync, [d.message for d in drift.differences]
    steps = {(d.node, d.message) for d in drift.adoption}
    assert ("l4-a", f"label {POOL_LABEL}=l4-shared added") in steps
    assert ("l4-a", f"label {DEVICE_PLUGIN_CONFIG_LABEL}=time-slicing-4 added") in steps
    text = format_text(drift)
    assert text.startswith("cluster.yaml matches bp.yaml: 3 pool(s) in sync\n\nadoption: ")
    snapshot = tmp_path / "cluster.yaml"
    snapshot.write_text(dump_yaml(data))
    run = CliRunner().invoke(group, ["drift", str(BLUEPRINT), str(snapshot), "--output", "json"])
    assert run.exit_code == 0, run.output
    report = json.loads(run.stdout)
    assert report["inSync"] is True and report["pools"][0]["adoption"]


def test_a_changed_config_label_is_drift_naming_the_node(blueprint) -> None:
    data = _not_yet_adopted(snapshot_data(blueprint))
    node = next(n for n in _items(data, "Node") if n["metadata"]["name"] == "l4-b")
    node["metadata"]["labels"][DEVICE_PLUGIN_CONFIG_LABEL] = "Tesla-T4"  # the cluster's own config name
    drift = _drift(blueprint, data)
    assert [(d.node, d.message) for d in drift.differences] == [
        ("l4-b", f"label {DEVICE_PLUGIN_CONFIG_LABEL}: expected 'time-slicing-4', found 'Tesla-T4'")
    ]


def test_a_label_of_gpustack_gone_from_its_node_is_drift_not_adoption(blueprint) -> None:
    data = snapshot_data(blueprint)
    node = next(n for n in _items(data, "Node") if n["metadata"]["name"] == "l4-a")
    del node["metadata"]["labels"][DEVICE_PLUGIN_CONFIG_LABEL]  # the node keeps gpustack.io/pool: gpustack's node
    drift = _drift(blueprint, data)
    assert [(d.node, d.key) for d in drift.differences] == [("l4-a", DEVICE_PLUGIN_CONFIG_LABEL)]
    assert drift.adoption == ()


def test_a_removed_tenant_quota_is_drift_naming_it(blueprint) -> None:
    data = snapshot_data(blueprint)
    quota = _items(data, "ResourceQuota")[0]
    name = f"{quota['metadata']['namespace']}/{quota['metadata']['name']}"
    data["items"].remove(quota)
    drift = _drift(blueprint, data)
    assert not drift.in_sync
    assert [d.message for d in drift.objects] == [f"ResourceQuota {name}: missing (the namespace has no quota)"]
    assert report_data(drift)["objects"][0]["key"] == name


def test_a_changed_quota_is_drift_and_one_of_another_name_enforcing_the_same_is_adoption(blueprint) -> None:
    data = snapshot_data(blueprint)
    quota = _items(data, "ResourceQuota")[0]
    resource, amount = next((k, v) for k, v in quota["spec"]["hard"].items() if str(v) != "0")
    quota["metadata"]["name"] = "team-gpus"  # the cluster's own name, the same limits
    drift = _drift(blueprint, data)
    assert drift.in_sync, [d.message for d in drift.differences]
    assert any(d.kind == "quota" and "beside team-gpus" in d.message for d in drift.adoption)
    quota["spec"]["hard"][resource] = str(int(amount) + 1)
    drift = _drift(blueprint, data)
    namespace = quota["metadata"]["namespace"]
    assert [d.message for d in drift.objects] == [
        f"ResourceQuota {namespace}/gpustack-gpu-quota: {resource} expected {amount}, found {int(amount) + 1}"
    ]


def test_a_policy_binding_switched_to_warn_is_drift(blueprint) -> None:
    data = snapshot_data(blueprint)
    binding = _items(data, "ValidatingAdmissionPolicyBinding")[0]
    binding["spec"]["validationActions"] = ["Warn"]
    drift = _drift(blueprint, data)
    name = binding["metadata"]["name"]
    assert [d.message for d in drift.objects] == [
        f"ValidatingAdmissionPolicyBinding {name}: validationActions expected Deny, found Warn"
    ]


def test_kinds_the_snapshot_lacks_are_said_not_compared(blueprint) -> None:
    data = snapshot_data(blueprint)
    data["items"] = _items(data, "Node") + _items(data, "ConfigMap")
    drift = _drift(blueprint, data)
    assert drift.in_sync and drift.not_compared == ("ResourceQuota", "ValidatingAdmissionPolicyBinding")
    assert format_text(drift).endswith(
        "not compared (not in the snapshot): ResourceQuota, ValidatingAdmissionPolicyBinding\n"
    )

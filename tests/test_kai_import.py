"""Import and drift read scheduler Queues from a snapshot (issue 30 item 6, issue 27 item 7).

Import: a tenant whose namespaces each have KAI leaf Queues `<parent>.<namespace>` under parents `<tenant>.<pool>`
(labelled with the pool: gpustack's shard per pool) or `<tenant>` is a `scheduler: kai` tenant named after them (the
cluster's queue names kept); one with a Volcano Queue of its name is a Volcano tenant, with that Queue's weight and
reclaimable. KAI's own namespaces hold no tenant. Drift: a KAI Queue gpustack makes that is gone, or whose pool label,
parent, quota, limit or over-quota weight changed, is drift naming the Queue.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from cluster_from import snapshot_data
from conftest import BLUEPRINTS

from gpustack.cli import group
from gpustack.cluster.drift import compare
from gpustack.cluster.importer import import_snapshot
from gpustack.cluster.snapshot import parse_snapshot
from gpustack.codes import SNAPSHOT_MALFORMED
from gpustack.compile import compile_blueprint
from gpustack.diagnostic import DiagnosticError
from gpustack.validation import validate_path, validate_text
from gpustack.yamlout import dump_yaml


def _cluster(name: str = "kai.yaml") -> dict[str, Any]:
    """The snapshot of the applied cluster of a blueprint: nodes, namespaces, quotas, bindings and Queues."""
    original = validate_path(BLUEPRINTS / name).blueprint
    assert original is not None
    return snapshot_data(original, f"v{original.kubernetes_version}.0")


def _queue(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(i for i in data["items"] if i["kind"] == "Queue" and i["metadata"]["name"] == name)


def _imported(data: dict[str, Any]) -> tuple[dict[str, Any], str]:
    result = import_snapshot(parse_snapshot(dump_yaml(data), "cluster.yaml"), "imported")
    check = validate_text(result.text, "imported.yaml")
    assert check.ok, [d.message for d in check.diagnostics]
    return {t["name"]: t for t in result.data["spec"].get("tenants", [])}, result.text


def _drift(blueprint_text: str, data: dict[str, Any]) -> tuple[list[str], tuple[str, ...]]:
    check = validate_text(blueprint_text, "kai.yaml")
    assert check.ok and check.context is not None
    drift = compare(check.context, compile_blueprint(check.context), parse_snapshot(dump_yaml(data), "c.yaml"), "b")
    return [d.message for d in drift.differences], drift.not_compared


def test_import_infers_kai_from_the_leaf_queues_and_the_round_trip_has_no_drift() -> None:
    data = _cluster()
    tenants, text = _imported(data)
    assert tenants["training"]["scheduler"] == "kai" and tenants["serving"]["scheduler"] == "kai"
    assert tenants["training"]["namespaces"] == ["training", "training-dev"]
    messages, not_compared = _drift(text, data)
    assert messages == [] and not_compared == ()
    # what the imported blueprint compiles is the cluster's Queues, name for name
    check = validate_text(text, "imported.yaml")
    assert check.context is not None
    compiled = {m.name for m in compile_blueprint(check.context).objects if m.kind == "Queue"}
    assert compiled == {i["metadata"]["name"] for i in data["items"] if i["kind"] == "Queue"}


def test_import_keeps_the_clusters_queue_names_over_the_tenant_label() -> None:
    """Namespaces labelled tenant `ml` whose KAI leaves hang under `training`: the tenant is `training`, as KAI
    schedules them, so applying the imported blueprint renames no Queue."""
    data = _cluster()
    for item in data["items"]:
        if item["kind"] == "Namespace" and item["metadata"]["name"].startswith("training"):
            item["metadata"]["labels"]["gpustack.io/tenant"] = "ml"
    tenants, text = _imported(data)
    assert "ml" not in tenants and tenants["training"]["scheduler"] == "kai"
    assert "grouped by their KAI leaf Queues' parent" in text
    assert _drift(text, data)[0] == []


def test_without_a_leaf_queue_in_every_namespace_the_tenant_is_not_kais() -> None:
    data = _cluster()
    data["items"].remove(_queue(data, "training.h100.training-dev"))
    tenants, text = _imported(data)
    assert "scheduler" not in tenants["training"] and tenants["serving"]["scheduler"] == "kai"
    assert "some of its namespaces have KAI leaf Queues, not all" in text


def test_without_queues_in_the_snapshot_nothing_is_kais_and_drift_says_queues_were_not_compared() -> None:
    data = _cluster()
    data["items"] = [i for i in data["items"] if i["kind"] != "Queue"]
    tenants, _ = _imported(data)
    assert all("scheduler" not in t for t in tenants.values())
    messages, not_compared = _drift((BLUEPRINTS / "kai.yaml").read_text(), data)
    assert messages == [] and not_compared == ("Queue (scheduling.run.ai)",)


def test_drift_names_a_deleted_queue() -> None:
    data = _cluster()
    data["items"].remove(_queue(data, "training.h100.training-dev"))
    data["items"].append({"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": "x"}})
    messages, _ = _drift((BLUEPRINTS / "kai.yaml").read_text(), data)
    (message,) = messages
    assert message.startswith("KAI Queue training.h100.training-dev: missing (its tenant's pods would name a queue")


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (("gpu", "limit", 20), "KAI Queue serving.a100-mig: gpu.limit expected 26, found 20"),
        (("gpu", "quota", 24.0), "KAI Queue serving.a100-mig: gpu.quota expected 26, found 24"),
        (("cpu", "quota", 0), "KAI Queue serving.a100-mig: cpu.quota expected -1, found 0"),
        (
            ("gpu", "overQuotaWeight", None),
            "KAI Queue serving.a100-mig: gpu.overQuotaWeight expected 1, found not set",
        ),
    ],
)
def test_drift_names_a_changed_queue_figure(edit: tuple[str, str, Any], expected: str) -> None:
    data = _cluster()
    resource, field, value = edit
    figures = _queue(data, "serving.a100-mig")["spec"]["resources"][resource]
    if value is None:
        del figures[field]
    else:
        figures[field] = value
    assert _drift((BLUEPRINTS / "kai.yaml").read_text(), data)[0] == [expected]


def test_drift_names_a_changed_parent_and_exits_1(tmp_path: Path) -> None:
    data = _cluster()
    _queue(data, "training.h100.training")["spec"]["parentQueue"] = "serving.h100"
    snapshot = tmp_path / "cluster.yaml"
    snapshot.write_text(dump_yaml(data))
    run = CliRunner().invoke(group, ["drift", str(BLUEPRINTS / "kai.yaml"), str(snapshot)])
    assert run.exit_code == 1, run.output
    assert "KAI Queue training.h100.training: parentQueue expected training.h100, found serving.h100" in run.stdout


def test_drift_names_a_queue_moved_out_of_its_pools_shard() -> None:
    data = _cluster()
    del _queue(data, "serving.h100")["metadata"]["labels"]["gpustack.io/pool"]
    _queue(data, "serving.a100-mig.serving")["metadata"]["labels"]["gpustack.io/pool"] = "h100"
    messages = _drift((BLUEPRINTS / "kai.yaml").read_text(), data)[0]
    assert sorted(messages) == [
        "KAI Queue serving.a100-mig.serving: label gpustack.io/pool expected a100-mig, found h100 (it puts the Queue "
        "in that pool's KAI shard; elsewhere the shard's jobs do not find it)",
        "KAI Queue serving.h100: label gpustack.io/pool expected h100, found none (it puts the Queue in that pool's "
        "KAI shard; elsewhere the shard's jobs do not find it)",
    ]


def test_import_reads_a_single_tree_per_tenant_too() -> None:
    """A hand-made cluster with one Queue tree per tenant (`<tenant>` above `<tenant>.<namespace>`): its tenants are
    KAI's too, and drift then names each Queue gpustack would make per pool."""
    data = _cluster()
    data["items"] = [i for i in data["items"] if i["kind"] != "Queue"]
    for name, parent in (("training", None), ("training.training", "training"), ("training.training-dev", "training")):
        spec = {"parentQueue": parent} if parent else {}
        data["items"].append(
            {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": name}, "spec": spec}
        )
    tenants, _ = _imported(data)
    assert tenants["training"]["scheduler"] == "kai" and "scheduler" not in tenants["serving"]


def test_a_kai_cohort_is_noted_as_not_imported() -> None:
    text = (
        (BLUEPRINTS / "kai.yaml")
        .read_text()
        .replace(
            "      scheduler: kai\n      quota:\n        h100: {gpu: 12}",
            "      scheduler: kai\n      kai: {cohort: {name: org}}\n      quota:\n        h100: {gpu: 12}",
        )
    )
    check = validate_text(text, "kai.yaml")
    assert check.ok and check.blueprint is not None
    data = snapshot_data(check.blueprint, "v1.33.0")
    assert _queue(data, "training.h100")["spec"]["parentQueue"] == "org.h100"
    tenants, imported = _imported(data)
    assert tenants["training"]["scheduler"] == "kai"
    assert "KAI queue(s) of training sit under org.h100; the cohort and its borrowing are not imported" in imported
    # the one drift it leaves is said, naming the Queue
    assert "KAI Queue training.h100: parentQueue expected none, found org.h100" in _drift(imported, data)[0]


def test_import_infers_volcano_with_its_queues_weight_and_reclaimable() -> None:
    data = _cluster("volcano.yaml")
    tenants, _ = _imported(data)
    assert tenants["llm"]["scheduler"] == "volcano"
    assert tenants["llm"]["volcano"] == {"weight": 3, "reclaimable": False}
    assert tenants["vision"]["scheduler"] == "volcano" and "volcano" not in tenants["vision"]


def test_volcanos_own_queue_names_no_tenant() -> None:
    data = _cluster("volcano.yaml")
    for item in data["items"]:
        if item["kind"] == "Namespace" and item["metadata"]["name"] == "vision":
            item["metadata"]["labels"]["gpustack.io/tenant"] = "default"
    _queue(data, "vision")["metadata"]["name"] = "default"
    tenants, _ = _imported(data)
    assert "scheduler" not in tenants["default"]


def test_kais_own_namespaces_hold_no_tenant() -> None:
    data = _cluster()
    for namespace in ("kai-scheduler", "kai-resource-reservation", "kai-scale-adjust"):
        data["items"].append(
            {
                "apiVersion": "v1",
                "kind": "ResourceQuota",
                "metadata": {"name": "reserve", "namespace": namespace},
                "spec": {"hard": {"requests.nvidia.com/gpu": "2"}},
            }
        )
    tenants, _ = _imported(data)
    assert sorted(tenants) == ["serving", "training"]


def test_a_malformed_kai_queue_is_reported_at_its_line() -> None:
    data = _cluster()
    _queue(data, "serving.h100")["spec"]["resources"]["gpu"]["quota"] = "lots"
    text = dump_yaml(data)
    with pytest.raises(DiagnosticError) as raised:
        parse_snapshot(text, "cluster.yaml")
    (found,) = raised.value.diagnostics
    assert found.code == SNAPSHOT_MALFORMED and "gpu quota is 'lots'" in found.message
    assert found.span is not None and text.splitlines()[found.span.start.line - 1].strip() == "quota: lots"

"""Field-by-field changes, capacity before and after, and the object-level manifest diff."""

from __future__ import annotations

from decimal import Decimal

from conftest import CASES

from gpustack.mig import index_ranges
from gpustack.plan import Artifact, HelmRelease, Manifest, Plan
from gpustack.review.capacity import Pair, capacity_deltas
from gpustack.review.changes import FieldChange, Kind, Status, blueprint_changes, field_changes
from gpustack.review.formatting import change, show, summary, table
from gpustack.review.manifests import manifest_changes, unified_diff
from gpustack.review.snapshot import Snapshot, empty_snapshot
from gpustack.validation import validate_path

REVIEW_CASES = CASES / "review"


def side(case: str, name: str) -> Snapshot:
    result = validate_path(REVIEW_CASES / case / f"{name}.yaml")
    assert result.blueprint is not None
    return Snapshot(name, result.context)


# changes


def test_fields_compare_with_defaults_applied_so_spelling_out_a_default_is_no_change() -> None:
    assert blueprint_changes(side("no-op", "before"), side("no-op", "after")) == ()


def test_changes_are_grouped_by_kind_and_name_with_every_changed_field() -> None:
    changes = blueprint_changes(side("tenant-quota", "before"), side("tenant-quota", "after"))
    assert [(c.kind, c.name, c.status) for c in changes] == [
        (Kind.TENANT, "analytics", Status.ADDED),
        (Kind.TENANT, "payments", Status.CHANGED),
        (Kind.TENANT, "research", Status.REMOVED),
        (Kind.TENANT, "vision", Status.CHANGED),
        (Kind.WORKLOAD, "finetune", Status.REMOVED),
        (Kind.WORKLOAD, "notebooks", Status.ADDED),
    ]
    vision = changes[3]
    assert vision.fields == (
        FieldChange("pools", ["h100-mig", "l4-shared"], ["l4-shared"]),
        FieldChange("priority", "normal", "high"),
        FieldChange("quota.h100-mig.mig-1g.10gb", 14, None),
    )
    assert vision.fields[0].removed_items == ["h100-mig"] and vision.fields[0].added_items == []


def test_cluster_settings_and_pool_internals_use_blueprint_names() -> None:
    changes = blueprint_changes(side("nodes-taints-chart", "before"), side("nodes-taints-chart", "after"))
    fields = {(c.kind, c.name): [f.field for f in c.fields] for c in changes}
    assert fields[Kind.CLUSTER, "training"] == ["devicePlugin.chartVersion"]
    assert fields[Kind.POOL, "a100-serve"] == ["nodes", "taints"]
    taints = changes[1].fields[1]
    assert taints.added_items == ["dedicated=serving:NoExecute"]


def test_everything_is_added_when_the_old_version_is_absent() -> None:
    changes = blueprint_changes(empty_snapshot("absent"), side("mig-layout", "after"))
    assert {c.status for c in changes} == {Status.ADDED}
    assert (Kind.CLUSTER, "inference") in {(c.kind, c.name) for c in changes}


def test_field_changes_keep_the_new_order_then_removed_fields() -> None:
    assert field_changes({"a": 1, "b": 2, "gone": 3}, {"b": 3, "a": 1, "new": 4}) == (
        FieldChange("b", 2, 3),
        FieldChange("new", None, 4),
        FieldChange("gone", 3, None),
    )


# capacity


def test_pool_capacity_counts_physical_gpus_and_units_per_resource() -> None:
    capacity = capacity_deltas(side("mig-layout", "before"), side("mig-layout", "after"))
    mig = capacity.pools[0]
    assert mig.pool == "h100-mig" and mig.changed
    assert mig.gpus == Pair(16, 16) and mig.nodes == Pair(2, 2) and mig.sharing == Pair("mig mixed", "mig mixed")
    small, large = mig.resources
    assert small.resource == "nvidia.com/mig-1g.10gb"
    assert (small.units.before.total, small.units.after.total) == (56, 84)
    assert small.units.after.memory_gb == Decimal(10) and small.units.after.isolation == "hardware"
    assert (large.units.before.per_node, large.units.after.per_node) == (8, 4)
    assert not capacity.pools[1].changed


def test_tenant_capacity_sets_quota_against_need_and_supply() -> None:
    capacity = capacity_deltas(side("mig-layout", "before"), side("mig-layout", "after"))
    (payments,) = capacity.tenants
    rows = {(r.pool, r.resource): r for r in payments.resources}
    small = rows["h100-mig", "nvidia.com/mig-1g.10gb"]
    assert small.quota == Pair(28, 42) and small.need == Pair(7, 12) and small.supply == Pair(56, 84)
    whole = rows["l4", "nvidia.com/gpu"]
    assert whole.quota == Pair(None, None) and whole.need == Pair(0, 0) and whole.access == Pair(True, True)


def test_a_removed_tenant_has_no_access_after() -> None:
    capacity = capacity_deltas(side("tenant-quota", "before"), side("tenant-quota", "after"))
    research = next(t for t in capacity.tenants if t.tenant == "research")
    assert research.pools == Pair(("a100",), None)
    assert [(r.access, r.need) for r in research.resources] == [(Pair(True, None), Pair(8, None))]


# manifests


def plan(*objects: dict[str, object], values: dict[str, object] | None = None, script: str = "") -> Plan:
    manifests = tuple(Manifest("test", "test.yaml", obj) for obj in objects)
    releases = ()
    if values is not None:
        releases = (HelmRelease("plugin", "nvidia-device-plugin", "https://x", "0.20.0", "nvidia", values, "v.yaml"),)
    artifacts = (Artifact("nodes/label.sh", script, "labels"),) if script else ()
    return Plan("test", manifests, releases, artifacts)


def config_map(name: str, data: dict[str, str]) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "ns"}, "data": data}


def test_objects_are_matched_by_identity_and_diffed() -> None:
    before = plan(config_map("a", {"k": "1"}), config_map("gone", {}), values={"x": 1}, script="echo 1\n")
    after = plan(config_map("a", {"k": "2"}), config_map("new", {}), values={"x": 1}, script="echo 2\n")
    changes = manifest_changes(before, after)
    assert [(c.status, c.title) for c in changes] == [
        (Status.CHANGED, "ConfigMap ns/a"),
        (Status.ADDED, "ConfigMap ns/new"),
        (Status.CHANGED, "File nodes/label.sh"),
        (Status.REMOVED, "ConfigMap ns/gone"),
    ]
    assert changes[0].diff.splitlines() == [
        "--- a/v1/ConfigMap/ns/a",
        "+++ b/v1/ConfigMap/ns/a",
        "@@ -4,4 +4,4 @@",
        "   name: a",
        "   namespace: ns",
        " data:",
        '-  k: "1"',
        '+  k: "2"',
    ]
    assert changes[1].diff.startswith("--- a/v1/ConfigMap/ns/new\n+++ b/v1/ConfigMap/ns/new\n@@ -0,0 +1,")
    assert all(line.startswith(("---", "+++", "@@", "-")) for line in changes[3].diff.splitlines())


def test_helm_values_changes_are_objects_too() -> None:
    changes = manifest_changes(plan(values={"x": 1}), plan(values={"x": 2}))
    assert [(c.kind, c.key, c.file) for c in changes] == [("HelmRelease", "helm/nvidia/plugin", "v.yaml")]
    assert "-  x: 1\n+  x: 2\n" in changes[0].diff


def test_a_sharing_change_shows_the_nodes_device_plugin_config_label_changing() -> None:
    before, after = side("sharing-mode", "before"), side("sharing-mode", "after")
    nodes = [c for c in manifest_changes(before.plan, after.plan) if c.kind == "Node"]
    assert [(c.name, c.file, c.status) for c in nodes] == [
        ("l4-a", "nodes/nodes.yaml", Status.CHANGED),
        ("l4-b", "nodes/nodes.yaml", Status.CHANGED),
    ]
    for c in nodes:
        assert "-    nvidia.com/device-plugin.config: whole-gpu\n" in c.diff
        assert "+    nvidia.com/device-plugin.config: time-slicing-4-renamed\n" in c.diff


def test_a_node_patched_by_two_families_shows_both_its_label_and_its_taint_changes() -> None:
    before, after = side("nodes-taints-chart", "before"), side("nodes-taints-chart", "after")
    moved = [c for c in manifest_changes(before.plan, after.plan) if c.kind == "Node" and c.name == "a100-c"]
    assert [(c.key, c.file, c.status) for c in moved] == [
        ("v1/Node//a100-c#nodes", "nodes/nodes.yaml", Status.CHANGED),
        ("v1/Node//a100-c#node-taints", "nodes/taints.yaml", Status.ADDED),
    ]
    assert "-    gpustack.io/pool: a100-train\n+    gpustack.io/pool: a100-serve\n" in moved[0].diff
    assert "+  - key: dedicated\n" in moved[1].diff


def test_objects_are_keyed_per_family_only_where_several_families_write_one() -> None:
    objects = [config_map("a", {"k": "1"}), config_map("a", {"k": "2"})]
    split = Plan("test", (Manifest("one", "1.yaml", objects[0]), Manifest("two", "2.yaml", objects[1])), (), ())
    changes = manifest_changes(plan(config_map("a", {"k": "1"})), split)
    assert [(c.key, c.status) for c in changes] == [
        ("v1/ConfigMap/ns/a#one", Status.ADDED),
        ("v1/ConfigMap/ns/a#two", Status.ADDED),
        ("v1/ConfigMap/ns/a#test", Status.REMOVED),
    ]
    assert manifest_changes(plan(objects[0]), plan(objects[1]))[0].key == "v1/ConfigMap/ns/a"


def test_unified_diff_marks_a_missing_final_newline() -> None:
    assert unified_diff("k", "a", "b").endswith("-a\n\\ No newline at end of file\n+b\n\\ No newline at end of file\n")


# formatting


def test_values_read_like_yaml_flow_style() -> None:
    assert show({"1g.10gb": 7, "on": True}) == "{1g.10gb: 7, on: true}"
    assert show(["a", 1.5]) == "[a, 1.5]"
    assert show(None, "—") == "—"
    assert change({"before": 1, "after": 1}) == "1"
    assert change({"before": None, "after": 2}, "—", "→") == "— → 2"


def test_gpu_index_ranges() -> None:
    assert index_ranges([0, 1, 2, 3, 6, 8, 9]) == "0-3, 6, 8-9"
    assert index_ranges([]) == ""


def test_text_tables_pad_columns() -> None:
    assert table(["a", "long"], [["xyz", "1"]], 1) == " a    long\n xyz  1"


def test_summary_counts_in_words() -> None:
    counts = {
        "clusterSettings": 0,
        "pools": {"added": 1, "removed": 0, "changed": 2},
        "tenants": {"added": 0, "removed": 0, "changed": 0},
        "workloads": {"added": 0, "removed": 1, "changed": 0},
        "risks": {"high": 1, "medium": 0, "low": 0},
        "objects": {"added": 0, "removed": 0, "changed": 3},
    }
    assert (
        summary(counts) == "1 pool added, 2 pools changed, 1 workload removed; 1 risk (1 high); 3 objects (3 changed)"
    )

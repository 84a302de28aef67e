"""Issue 27: import a real cluster without surprises.

Every GPU node lands in a pool whatever its driver generation (names older drivers and GFD wrote are read as
today's, gpustack/data/gfd-legacy.yaml), the imported blueprint always validates, and drift of the imported
blueprint against the snapshot it came from is empty: what it lists are adoption steps only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from cluster_from import snapshot_data, snapshot_text
from conftest import shipped_examples

from gpustack.catalog import load_catalog
from gpustack.cli import group
from gpustack.cluster.drift import compare
from gpustack.cluster.importer import import_snapshot
from gpustack.cluster.labels import load_legacy
from gpustack.cluster.snapshot import parse_snapshot
from gpustack.compile import compile_blueprint
from gpustack.validation import validate_path, validate_text
from gpustack.yamlout import dump_yaml

BLUEPRINTS = Path(__file__).parent.parent / "blueprints"


def _node(name: str, labels: dict[str, str], allocatable: dict[str, str], kubelet: str = "v1.31.4") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {
            "allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110", **allocatable},
            "nodeInfo": {"kubeletVersion": kubelet},
        },
    }


# NVIDIA's "MIG Support in Kubernetes" (driver 450.80.02, GFD v0.2.0, mixed strategy): the GFD labels of one
# A100-SXM4-40GB split 3g/2g/1g, and the device plugin's resources for the same instances.
A100_450_MIXED = {
    "nvidia.com/cuda.driver.major": "450",
    "nvidia.com/gpu.count": "1",
    "nvidia.com/gpu.family": "ampere",
    "nvidia.com/gpu.memory": "40537",
    "nvidia.com/gpu.product": "A100-SXM4-40GB",
    "nvidia.com/mig-1g.5gb.count": "1",
    "nvidia.com/mig-2g.10gb.count": "1",
    "nvidia.com/mig-3g.21gb.count": "1",
    "nvidia.com/mig-3g.21gb.memory": "20096",
    "nvidia.com/mig.strategy": "mixed",
}
A100_450_RESOURCES = {"nvidia.com/mig-1g.5gb": "1", "nvidia.com/mig-2g.10gb": "1", "nvidia.com/mig-3g.20gb": "1"}


def _generations() -> dict[str, Any]:
    """A node for every product label every driver generation wrote for every GPU in the catalog, plus the
    published label sets of older GFD: 450-series MIG names, single-strategy product suffixes, -SHARED without a
    sharing-strategy label, and a node NFD left without gpu.product (family and memory only)."""
    items = []
    for model in load_catalog().models.values():
        for index, product in enumerate(model.product_labels):
            labels = {
                "nvidia.com/gpu.product": product,
                "nvidia.com/gpu.count": "1",
                "nvidia.com/gpu.family": model.family,
                "nvidia.com/gpu.memory": str(model.memory_mib[0]),
            }
            items.append(_node(f"{model.key.lower()}-{index}", labels, {"nvidia.com/gpu": "1"}))
    items.append(_node("a100-r450-mixed", A100_450_MIXED, A100_450_RESOURCES))
    single = {"nvidia.com/gpu.product": "A100-SXM4-40GB-MIG-1g.5gb", "nvidia.com/gpu.count": "7"}
    items.append(_node("a100-r450-single", {**single, "nvidia.com/mig.strategy": "single"}, {"nvidia.com/gpu": "7"}))
    shared = {"nvidia.com/gpu.product": "Tesla-T4-SHARED", "nvidia.com/gpu.count": "1", "nvidia.com/gpu.replicas": "4"}
    items.append(_node("t4-gfd-0-6", shared, {"nvidia.com/gpu": "4"}))
    # GFD before v0.17.1 labelled Ada GPUs family ampere (k8s-device-plugin#943); here no product label either.
    l4 = {"nvidia.com/gpu.family": "ampere", "nvidia.com/gpu.memory": "23034", "nvidia.com/gpu.count": "1"}
    items.append(_node("l4-old-gfd", l4, {"nvidia.com/gpu": "1"}))
    items.append(_node("cpu-1", {"kubernetes.io/os": "linux"}, {}))
    return {"apiVersion": "v1", "kind": "List", "items": items}


def _pool_of(data: dict[str, Any], node: str) -> dict[str, Any]:
    (pool,) = [p for p in data["spec"]["nodePools"] if node in p.get("nodes", ())]
    return pool


def test_every_generation_lands_in_a_pool_and_drift_is_only_adoption(tmp_path: Path) -> None:
    text = dump_yaml(_generations())
    result = import_snapshot(parse_snapshot(text, "cluster.yaml"), "generations")
    assert result.diagnostics == ()
    check = validate_text(result.text, "imported.yaml")
    assert check.ok, [d.message for d in check.diagnostics]
    placed = {n for pool in result.data["spec"]["nodePools"] for n in pool.get("nodes", ())}
    gpu_nodes = {i["metadata"]["name"] for i in _generations()["items"] if i["metadata"]["name"] != "cpu-1"}
    assert placed == gpu_nodes
    assert all("gpu" in pool for pool in result.data["spec"]["nodePools"])  # every one understood
    # The 450-series A100's 3g.21gb is today's 3g.20gb: a layout that validates and compiles to the same resources.
    mixed = _pool_of(result.data, "a100-r450-mixed")
    assert mixed["gpu"] == {"model": "A100-SXM4-40GB", "count": 1}
    assert mixed["sharing"]["mig"] == {"strategy": "mixed", "layout": {"1g.5gb": 1, "2g.10gb": 1, "3g.20gb": 1}}
    assert _pool_of(result.data, "a100-r450-single")["sharing"]["mig"] == {
        "strategy": "single",
        "layout": {"1g.5gb": 7},
    }
    assert _pool_of(result.data, "l4-old-gfd")["gpu"] == {"model": "L4", "count": 1}
    # A pre-R470 name and today's name of one GPU are one pool.
    assert _pool_of(result.data, "a100-sxm4-40gb-0") is _pool_of(result.data, "a100-sxm4-40gb-1")
    blueprint, snapshot = tmp_path / "imported.yaml", tmp_path / "cluster.yaml"
    blueprint.write_text(result.text)
    snapshot.write_text(text)
    run = CliRunner().invoke(group, ["drift", str(blueprint), str(snapshot)])
    assert run.exit_code == 0, run.output
    assert "pool(s) in sync" in run.stdout and "adoption:" in run.stdout
    assert "label gpustack.io/pool=" in run.stdout


def test_a_legacy_mig_name_is_written_once_as_data_with_its_source() -> None:
    legacy = load_legacy()
    assert legacy.mig_profiles[("A100-40GB", "3g.21gb")] == "3g.20gb"
    geometry = load_catalog().geometries["A100-40GB"]
    assert geometry.profile("3g.20gb") is not None and geometry.profile("3g.21gb") is None  # today's name only
    text = (Path(__file__).parent.parent / "gpustack" / "data" / "gfd-legacy.yaml").read_text()
    assert text.count("source:") == len(legacy.mig_profiles) + len(legacy.families)


def test_a_node_not_understood_gets_a_pool_of_its_own_and_the_rest_still_imports() -> None:
    """One node no catalog knows, one whose MIG layout reads as nothing valid: the cluster still imports, every
    node in a pool, the blueprint validates."""
    broken = {**A100_450_MIXED, "nvidia.com/mig-7g.40gb.count": "3"}  # 3 full-GPU instances on 1 GPU: impossible
    items = [
        _node("a100-ok", A100_450_MIXED, A100_450_RESOURCES),
        _node("a100-odd", broken, A100_450_RESOURCES),
        _node("q-1", {"nvidia.com/gpu.product": "NVIDIA-Quantum-Q9000", "nvidia.com/gpu.count": "1"}, {}),
    ]
    snapshot = parse_snapshot(dump_yaml({"apiVersion": "v1", "kind": "List", "items": items}), "c.yaml")
    result = import_snapshot(snapshot, "odd")
    check = validate_text(result.text, "imported.yaml")
    assert check.ok, [d.message for d in check.diagnostics]
    placed = sorted(n for pool in result.data["spec"]["nodePools"] for n in pool["nodes"])
    assert placed == ["a100-odd", "a100-ok", "q-1"]
    odd = _pool_of(result.data, "a100-odd")
    assert "sharing" not in odd and odd["gpu"]["model"] == "A100-SXM4-40GB"
    lines = result.text.splitlines()
    assert any(
        line.startswith("  # guessed: sharing: the sharing the labels imply was not understood") for line in lines
    )
    assert any("# guessed: gpu: not understood (GPU product 'NVIDIA-Quantum-Q9000'" in line for line in lines)


@pytest.mark.parametrize("example", shipped_examples(), ids=lambda p: p.name)
def test_round_trip_compile_snapshot_import_drift_is_in_sync(example: Path) -> None:
    """blueprint -> the applied cluster's snapshot -> import -> drift of the imported blueprint: no drift."""
    original = validate_path(example)
    assert original.blueprint is not None
    kubelet = f"v{original.blueprint.kubernetes_version}.0"
    snapshot = parse_snapshot(snapshot_text(original.blueprint, kubelet), "cluster.yaml")
    result = import_snapshot(snapshot, "round-trip")
    check = validate_text(result.text, "imported.yaml")
    assert check.ok and check.context is not None, [d.message for d in check.diagnostics]
    drift = compare(check.context, compile_blueprint(check.context), snapshot, "imported.yaml")
    assert [d.message for d in drift.differences] == []


def test_import_keeps_the_operators_namespace_the_pool_names_and_taints_already_there() -> None:
    """OpenShift's operator runs in nvidia-gpu-operator: the imported blueprint says so, and compiles its release
    there; a node's gpustack.io/pool label names its pool, its own taints stay."""
    node = _node("t4-a", {"nvidia.com/gpu.product": "Tesla-T4", "nvidia.com/gpu.count": "1"}, {"nvidia.com/gpu": "1"})
    node["metadata"]["labels"]["gpustack.io/pool"] = "inference-t4"
    node["spec"] = {"taints": [{"key": "team", "value": "ml", "effect": "NoSchedule"}]}
    policy = {
        "apiVersion": "nvidia.com/v1",
        "kind": "ClusterPolicy",
        "metadata": {"name": "gpu-cluster-policy"},
        "spec": {},
        "status": {"namespace": "nvidia-gpu-operator", "state": "ready"},
    }
    text = dump_yaml({"apiVersion": "v1", "kind": "List", "items": [node, policy]})
    result = import_snapshot(parse_snapshot(text, "c.yaml"), "openshift")
    assert result.data["spec"]["gpuOperator"] == {"namespace": "nvidia-gpu-operator"}
    (pool,) = result.data["spec"]["nodePools"]
    assert pool["name"] == "inference-t4"
    assert pool["taints"] == [{"key": "team", "value": "ml", "effect": "NoSchedule"}]
    check = validate_text(result.text, "imported.yaml")
    assert check.ok and check.context is not None, [d.message for d in check.diagnostics]
    plan = compile_blueprint(check.context)
    assert {r.namespace for r in plan.releases if r.name == "gpu-operator"} == {"nvidia-gpu-operator"}


def test_a_quota_split_never_gives_a_tenant_another_tenants_pool() -> None:
    """payments' requests.nvidia.com/gpu could be the A100s' or the L4s'; research's pods run on the A100s, its only
    pool, and payments has no pods: the quota goes to the L4s, as the blueprint it came from says."""
    original = validate_path(BLUEPRINTS / "multi-tenant.yaml").blueprint
    assert original is not None
    data = snapshot_data(original)
    node = next(p for p in original.pools if p.name == "a100-40-training").nodes[0]
    limits = {"limits": {"nvidia.com/gpu": "1"}}
    pod = {
        "kind": "Pod",
        "metadata": {"name": "trainer", "namespace": "research"},
        "spec": {"nodeName": node, "containers": [{"name": "c", "resources": limits}]},
        "status": {"phase": "Running"},
    }
    data["items"].append(pod)
    result = import_snapshot(parse_snapshot(dump_yaml(data), "cluster.yaml"), "split")
    payments = next(t for t in result.data["spec"]["tenants"] if t["name"] == "payments")
    assert payments["pools"] == ["h100-mig", "l4-shared"]
    assert payments["quota"]["l4-shared"] == {"gpu": 8}


@pytest.mark.parametrize("name", ["kueue.yaml", "multi-tenant.yaml"])
def test_a_tenants_scheduler_is_what_the_cluster_shows(name: str) -> None:
    """A Kueue LocalQueue in a tenant's namespace says Kueue queues its pods: scheduler kueue, as compiled."""
    original = validate_path(BLUEPRINTS / name).blueprint
    assert original is not None
    result = import_snapshot(parse_snapshot(snapshot_text(original), "cluster.yaml"), "queued")
    imported = {t["name"]: t.get("scheduler", "default") for t in result.data["spec"]["tenants"]}
    assert imported == {t.name: str(t.scheduler) for t in original.tenants if t.name in imported}
    assert "kueue" in imported.values()  # the old import wrote every tenant without a scheduler: the default


def test_a_clusters_own_device_plugin_config_name_is_kept(tmp_path: Path) -> None:
    """T4 nodes whose config is called Tesla-T4 stay Tesla-T4: applying the imported blueprint relabels no node
    (no device plugin restart), and drift against the same snapshot is empty."""
    labels = {
        "nvidia.com/gpu.product": "Tesla-T4-SHARED",
        "nvidia.com/gpu.count": "1",
        "nvidia.com/gpu.replicas": "8",
        "nvidia.com/gpu.sharing-strategy": "time-slicing",
        "nvidia.com/device-plugin.config": "Tesla-T4",
    }
    nodes = [_node(f"t4-{i}", labels, {"nvidia.com/gpu": "8"}) for i in (1, 2)]
    config = "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 8\n"
    plugin = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "nvidia-device-plugin-configs", "namespace": "nvidia-device-plugin"},
        "data": {"Tesla-T4": config},
    }
    text = dump_yaml({"apiVersion": "v1", "kind": "List", "items": [*nodes, plugin]})
    result = import_snapshot(parse_snapshot(text, "c.yaml"), "t4")
    (pool,) = result.data["spec"]["nodePools"]
    assert pool["devicePlugin"] == {"configName": "Tesla-T4"}
    check = validate_text(result.text, "imported.yaml")
    assert check.ok and check.context is not None, [d.message for d in check.diagnostics]
    plan = compile_blueprint(check.context)
    labelled = {m.name: m.obj["metadata"]["labels"]["nvidia.com/device-plugin.config"] for m in plan.by_family("nodes")}
    assert labelled == {"t4-1": "Tesla-T4", "t4-2": "Tesla-T4"}
    blueprint, snapshot = tmp_path / "t4.yaml", tmp_path / "c.yaml"
    blueprint.write_text(result.text)
    snapshot.write_text(text)
    run = CliRunner().invoke(group, ["drift", str(blueprint), str(snapshot)])
    assert run.exit_code == 0, run.output
    assert "nvidia.com/device-plugin.config" not in run.stdout  # neither drift nor an adoption step


def test_a_clusters_own_mig_config_name_is_kept(tmp_path: Path) -> None:
    """H100 nodes the GPU Operator's MIG manager partitioned with NVIDIA's all-1g.10gb keep that config name: the
    manager has nothing to redo, and drift against the same snapshot is empty."""
    labels = {
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        "nvidia.com/gpu.count": "8",
        "nvidia.com/mig.strategy": "mixed",
        "nvidia.com/mig.config": "all-1g.10gb",
        "nvidia.com/mig.config.state": "success",
        "nvidia.com/mig-1g.10gb.count": "56",
    }
    nodes = [_node(f"h100-{i}", labels, {"nvidia.com/mig-1g.10gb": "56"}) for i in (1, 2)]
    text = dump_yaml({"apiVersion": "v1", "kind": "List", "items": nodes})
    result = import_snapshot(parse_snapshot(text, "c.yaml"), "h100")
    (pool,) = result.data["spec"]["nodePools"]
    assert pool["sharing"]["mig"]["configName"] == "all-1g.10gb"
    check = validate_text(result.text, "imported.yaml")
    assert check.ok and check.context is not None, [d.message for d in check.diagnostics]
    plan = compile_blueprint(check.context)
    labelled = {m.name: m.obj["metadata"]["labels"]["nvidia.com/mig.config"] for m in plan.by_family("nodes")}
    assert labelled == {"h100-1": "all-1g.10gb", "h100-2": "all-1g.10gb"}
    blueprint, snapshot = tmp_path / "h100.yaml", tmp_path / "c.yaml"
    blueprint.write_text(result.text)
    snapshot.write_text(text)
    run = CliRunner().invoke(group, ["drift", str(blueprint), str(snapshot)])
    assert run.exit_code == 0, run.output
    assert "nvidia.com/mig.config" not in run.stdout


def _unlimited_tenants() -> Any:
    """The recommend example as written by `recommend --write`, its two tenants on their pool `unlimited`: labs's
    namespace keeps a quota of 0 on the A100's MIG names, research's none at all (the A100 also advertises whole
    GPUs, the name the H100 advertises, so nothing can be closed without closing its own pool)."""
    text = (Path(__file__).parent / "golden" / "recommended" / "recommend.yaml").read_text()
    text = text.replace("a100: {mig-3g.40gb: 2, mig-4g.40gb: 2, gpu: 3}", "a100: unlimited")
    text = text.replace("h100: {gpu: 36}", "h100: unlimited")
    check = validate_text(text, "recommend.yaml")
    assert check.ok and check.blueprint is not None, [d.message for d in check.diagnostics]
    return check.blueprint


def _tenant(result: Any, name: str) -> dict[str, Any] | None:
    return next((t for t in result.data["spec"]["tenants"] if t["name"] == name), None)


def test_a_tenant_whose_every_pool_is_unlimited_is_imported_not_dropped() -> None:
    """labs holds the H100s whole (its quota closes every other name): imported `unlimited` there, drift empty.
    research has no GPU quota and no pod: nothing shows its pools, and the import says so instead of dropping it
    without a word."""
    original = _unlimited_tenants()
    snapshot = parse_snapshot(snapshot_text(original, f"v{original.kubernetes_version}.0"), "cluster.yaml")
    result = import_snapshot(snapshot, "unlimited")
    labs = _tenant(result, "labs")
    assert labs is not None and labs["pools"] == ["h100"] and labs["quota"] == {"h100": "unlimited"}
    assert _tenant(result, "research") is None
    assert [n for s, k, n in result.notes if k == "ignored"] == [
        "namespace research: a tenant's (a GPU quota or the gpustack.io/tenant label), but no quota grants it a GPU "
        "and no GPU pod runs there, so which pools it holds cannot be told; add the tenant by hand"
    ]
    assert "# ignored: namespace research: a tenant's (a GPU quota or the gpustack.io/tenant label)" in result.text
    check = validate_text(result.text, "imported.yaml")
    assert check.ok and check.context is not None, [d.message for d in check.diagnostics]
    drift = compare(check.context, compile_blueprint(check.context), snapshot, "imported.yaml")
    assert [d.message for d in drift.differences] == []


def test_a_tenant_without_gpu_quota_takes_unlimited_the_pools_its_gpu_pods_run_on() -> None:
    original = _unlimited_tenants()
    data = snapshot_data(original, f"v{original.kubernetes_version}.0")
    node = next(
        item["metadata"]["name"]
        for item in data["items"]
        if item["kind"] == "Node" and item["metadata"]["labels"].get("gpustack.io/pool") == "a100"
    )
    pod = {
        "kind": "Pod",
        "metadata": {"name": "trainer", "namespace": "research"},
        "spec": {"nodeName": node, "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
        "status": {"phase": "Running"},
    }
    data["items"].append(pod)
    result = import_snapshot(parse_snapshot(dump_yaml(data), "cluster.yaml"), "unlimited")
    research = _tenant(result, "research")
    assert research is not None and research["quota"] == {"a100": "unlimited"}
    assert (
        "tenants",
        "research",
        "pools: a100 unlimited, since its GPU pods run there and no quota limits "
        "nvidia.com/gpu, nvidia.com/mig-1g.10gb, nvidia.com/mig-1g.20gb, nvidia.com/mig-3g.40gb, "
        "nvidia.com/mig-4g.40gb",
    ) in result.notes
    assert "namespace research" not in result.text

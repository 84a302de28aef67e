"""Time-slicing per MIG profile, and whole GPUs time-sliced beside MIG on a mixed pool (issue #32 item 3).

NVIDIA's GPU Operator page "Time-Slicing GPUs in Kubernetes"
(https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/gpu-sharing.html, section "Applying Multiple
Node-Specific Configurations") gives each profile of an A100 40GB its own replica count (2, 2, 3, 7) and time-slices
the node's whole GPUs (nvidia.com/gpu, 8) in the same config. Its ConfigMap is below as NVIDIA writes it
(NVIDIA/cloud-native-docs gpu-operator/manifests/input/time-slicing-config-fine.yaml); the blueprint
tests/cases/timeslicing-mig/nvidia-time-slicing-config-fine.yaml says the same in gpustack's words, and each test
compiles, measures, simulates or imports it and compares with NVIDIA's config, field by field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from builders import blueprint, context
from cluster_from import snapshot_data
from conftest import CASES
from upstream_rules import device_plugin_config_errors

from gpustack.capacity import measure_capacity
from gpustack.cluster.importer import import_snapshot
from gpustack.cluster.snapshot import parse_snapshot
from gpustack.compile import compile_blueprint
from gpustack.compile.device_plugin import build_config
from gpustack.context import Context
from gpustack.graph import blueprint_graph
from gpustack.offers import Isolation
from gpustack.review.fields import pool_fields
from gpustack.review.risks.scheduling import naming
from gpustack.simulate.inventory import build_inventory, gfd_labels
from gpustack.validation import validate_path, validate_text
from gpustack.yamlout import dump_yaml

RECIPE = CASES / "timeslicing-mig" / "nvidia-time-slicing-config-fine.yaml"
NVIDIA_PAGE = "https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/gpu-sharing.html"
# NVIDIA's ConfigMap, byte for byte (its data is what the device plugin reads, one config per node label value).
NVIDIA_CONFIG_MAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: time-slicing-config-fine
data:
  a100-40gb: |-
    version: v1
    flags:
      migStrategy: mixed
    sharing:
      timeSlicing:
        resources:
        - name: nvidia.com/gpu
          replicas: 8
        - name: nvidia.com/mig-1g.5gb
          replicas: 2
        - name: nvidia.com/mig-2g.10gb
          replicas: 2
        - name: nvidia.com/mig-3g.20gb
          replicas: 3
        - name: nvidia.com/mig-7g.40gb
          replicas: 7
  tesla-t4: |-
    version: v1
    flags:
      migStrategy: none
    sharing:
      timeSlicing:
        resources:
        - name: nvidia.com/gpu
          replicas: 4
"""
# What the device plugin assumes for the fields NVIDIA's config leaves out (api/config/v1: renameByDefault false,
# failRequestsGreaterThanOne unset = false for time-slicing); gpustack writes them out.
PLUGIN_DEFAULTS = {"renameByDefault": False, "failRequestsGreaterThanOne": False}


def nvidia_configs() -> dict[str, Any]:
    data = yaml.safe_load(NVIDIA_CONFIG_MAP)["data"]
    return {key: yaml.safe_load(text) for key, text in data.items()}


def recipe_context() -> Context:
    result = validate_path(RECIPE)
    assert result.ok and result.context is not None, [d.message for d in result.diagnostics]
    return result.context


def compiled_configs(ctx: Context) -> tuple[dict[str, Any], dict[str, str]]:
    """The device plugin configs the GPU Operator gets (key -> parsed config) and each node's config label."""
    plan = compile_blueprint(ctx)
    (operator,) = [r for r in plan.releases if r.name == "gpu-operator"]
    data = operator.values["devicePlugin"]["config"]["data"]
    labels = {
        m.obj["metadata"]["name"]: m.obj["metadata"]["labels"]["nvidia.com/device-plugin.config"]
        for m in plan.by_family("nodes")
    }
    return {key: yaml.safe_load(text) for key, text in data.items()}, labels


def mixed_pool(sliced: dict[str, Any], *, whole: bool = True, name: str = "a100") -> dict[str, Any]:
    groups: list[dict[str, Any]] = [
        {"devices": [0, 1], "layout": {"1g.5gb": 7}},
        {"devices": [2, 3], "layout": {"3g.20gb": 2}},
    ]
    groups.append(
        {"devices": [4, 5, 6, 7], "whole": True} if whole else {"devices": [4, 5, 6, 7], "layout": {"7g.40gb": 1}}
    )
    return {
        "name": name,
        "gpu": {"model": "A100-SXM4-40GB", "count": 8},
        "nodes": [f"{name}-1", f"{name}-2"],
        "sharing": {"strategy": "mig", "mig": {"strategy": "mixed", "groups": groups, "timeSlicing": sliced}},
    }


# The recipe, compared with NVIDIA's page


def test_the_recipe_quotes_nvidia_page() -> None:
    assert NVIDIA_PAGE in RECIPE.read_text()


def test_nvidia_per_profile_example_compiles_to_nvidia_config_field_by_field() -> None:
    configs, labels = compiled_configs(recipe_context())
    nvidia = nvidia_configs()
    # The nodes select NVIDIA's own config names, and every one of them is in the compiled ConfigMap.
    assert labels == {"dgx-a100-01": "a100-40gb", "t4-01": "tesla-t4"}
    for key, theirs in nvidia.items():
        ours = configs[key]
        assert device_plugin_config_errors(ours) == [], key
        assert ours["version"] == theirs["version"]
        assert ours["flags"] == theirs["flags"]
        assert set(ours["sharing"]) == set(theirs["sharing"]) == {"timeSlicing"}
        block, their_block = ours["sharing"]["timeSlicing"], theirs["sharing"]["timeSlicing"]
        # Same resources, same counts, in NVIDIA's order: nvidia.com/gpu first, then the profiles small to large.
        assert block["resources"] == their_block["resources"], key
        for field, default in PLUGIN_DEFAULTS.items():
            assert block.get(field, default) == their_block.get(field, default), (key, field)
        assert set(block) - set(their_block) <= set(PLUGIN_DEFAULTS)


def test_nvidia_per_profile_example_capacity_is_each_profiles_slices_times_its_replicas() -> None:
    capacity = {p.name: p for p in measure_capacity(recipe_context()).pools}
    units = {u.resource: u for u in capacity["a100-40gb"].units}
    # GPUs 0-1: 1g.5gb x7, 2-3: 2g.10gb x3, 4-5: 3g.20gb x2, 6: 7g.40gb x1, 7 whole; one node.
    assert {name: (u.total, u.shared_by) for name, u in units.items()} == {
        "nvidia.com/gpu": (1 * 8, 8),
        "nvidia.com/mig-1g.5gb": (2 * 7 * 2, 2),
        "nvidia.com/mig-2g.10gb": (2 * 3 * 2, 2),
        "nvidia.com/mig-3g.20gb": (2 * 2 * 3, 3),
        "nvidia.com/mig-7g.40gb": (1 * 1 * 7, 7),
    }
    assert all(u.isolation == Isolation.NONE for u in units.values())
    setting = capacity["a100-40gb"].sharing_setting
    assert setting == "mig mixed, time-sliced whole x8, 1g.5gb x2, 2g.10gb x2, 3g.20gb x3, 7g.40gb x7"


def test_nvidia_per_profile_example_simulated_node_has_gfd_labels_and_allocatable_per_profile() -> None:
    ctx = recipe_context()
    plan = compile_blueprint(ctx)
    nodes = {n.name: n for n in build_inventory(ctx, [m.obj for m in plan.by_family("nodes")])}
    node = nodes["dgx-a100-01"]
    assert {k: v for k, v in node.allocatable.items() if k.startswith("nvidia.com/")} == {
        "nvidia.com/gpu": 8,
        "nvidia.com/mig-1g.5gb": 28,
        "nvidia.com/mig-2g.10gb": 12,
        "nvidia.com/mig-3g.20gb": 12,
        "nvidia.com/mig-7g.40gb": 7,
    }
    labels = node.labels
    # The whole GPU is time-sliced: GFD labels it as a time-sliced full GPU, product -SHARED (renameByDefault false).
    assert labels["nvidia.com/gpu.replicas"] == "8"
    assert labels["nvidia.com/gpu.sharing-strategy"] == "time-slicing"
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-40GB-SHARED"
    for profile, replicas, count in (("1g.5gb", 2, 14), ("2g.10gb", 2, 6), ("3g.20gb", 3, 4), ("7g.40gb", 7, 1)):
        assert labels[f"nvidia.com/mig-{profile}.replicas"] == str(replicas)
        assert labels[f"nvidia.com/mig-{profile}.count"] == str(count)
        assert labels[f"nvidia.com/mig-{profile}.product"] == f"NVIDIA-A100-SXM4-40GB-MIG-{profile}-SHARED"
        assert labels[f"nvidia.com/mig-{profile}.sharing-strategy"] == "time-slicing"
    t4 = nodes["t4-01"]
    assert t4.allocatable["nvidia.com/gpu"] == 16 and t4.labels["nvidia.com/gpu.replicas"] == "4"


def test_nvidia_config_map_imports_as_the_per_profile_blueprint_and_compiles_back_to_itself() -> None:
    ctx = recipe_context()
    data = snapshot_data(ctx.blueprint, "v1.33.0")
    # The cluster runs NVIDIA's ConfigMap itself, where gpustack's would be (the ClusterPolicy names the same name).
    (config_map,) = [i for i in data["items"] if i["metadata"].get("name") == "gpustack-device-plugin-config"]
    config_map["data"] = yaml.safe_load(NVIDIA_CONFIG_MAP)["data"]
    imported = import_snapshot(parse_snapshot(dump_yaml(data), "cluster.yaml"), "imported")
    pools = {p["gpu"]["model"]: p for p in imported.data["spec"]["nodePools"]}
    sliced = pools["A100-SXM4-40GB"]["sharing"]["mig"]["timeSlicing"]
    assert sliced == {
        "replicas": {"whole": 8, "1g.5gb": 2, "2g.10gb": 2, "3g.20gb": 3, "7g.40gb": 7},
        "renameByDefault": False,
        "failRequestsGreaterThanOne": False,
    }
    again = validate_text(imported.text, "imported.yaml")
    assert again.ok and again.context is not None, [d.message for d in again.diagnostics]
    configs, _ = compiled_configs(again.context)
    nvidia = nvidia_configs()
    assert (
        configs["a100-40gb"]["sharing"]["timeSlicing"]["resources"]
        == (nvidia["a100-40gb"]["sharing"]["timeSlicing"]["resources"])
    )


def test_nvidia_config_for_profiles_a_node_does_not_make_imports_only_what_it_advertises() -> None:
    # NVIDIA's config names every A100 40GB profile; a node cut into 1g.5gb and 3g.20gb only advertises those.
    bp = blueprint(mixed_pool({"replicas": {"1g.5gb": 2, "3g.20gb": 3}}), stack="gpu-operator")
    data = snapshot_data(bp, "v1.33.0")
    (config_map,) = [i for i in data["items"] if i["metadata"].get("name") == "gpustack-device-plugin-config"]
    key = next(i["metadata"]["labels"]["nvidia.com/device-plugin.config"] for i in data["items"] if i["kind"] == "Node")
    config_map["data"] = {key: yaml.safe_load(NVIDIA_CONFIG_MAP)["data"]["a100-40gb"]}
    imported = import_snapshot(parse_snapshot(dump_yaml(data), "cluster.yaml"), "imported")
    (pool,) = imported.data["spec"]["nodePools"]
    assert pool["sharing"]["mig"]["timeSlicing"]["replicas"] == {"whole": 8, "1g.5gb": 2, "3g.20gb": 3}
    assert "also time-slices nvidia.com/mig-2g.10gb, nvidia.com/mig-7g.40gb" in imported.text
    assert validate_text(imported.text, "imported.yaml").ok


def test_per_profile_replicas_import_from_gfd_labels_without_the_plugin_config() -> None:
    bp = blueprint(mixed_pool({"replicas": {"whole": 4, "3g.20gb": 3}}), stack="gpu-operator")
    ctx = context(bp)
    pool = bp.pool("a100")
    model = ctx.models["a100"]
    assert pool is not None and model is not None
    data = snapshot_data(bp, "v1.33.0")
    data["items"] = [i for i in data["items"] if i["metadata"].get("name") != "gpustack-device-plugin-config"]
    for item in data["items"]:
        if item["kind"] == "Node":  # what GFD writes for this setup, per profile
            item["metadata"]["labels"].update(gfd_labels(pool, model, ctx.offers["a100"]))
    imported = import_snapshot(parse_snapshot(dump_yaml(data), "cluster.yaml"), "imported")
    (imported_pool,) = imported.data["spec"]["nodePools"]
    assert imported_pool["sharing"]["mig"]["timeSlicing"]["replicas"] == {"whole": 4, "3g.20gb": 3}


# The blueprint words: one count as before, or a count per profile and for whole GPUs


def test_one_count_still_time_slices_every_profile_and_leaves_whole_gpus_whole() -> None:
    ctx = context(blueprint(mixed_pool({"replicas": 3})))
    pool = ctx.blueprint.pool("a100")
    config = build_config(ctx.blueprint.device_plugin.flags, pool)
    assert config["sharing"]["timeSlicing"]["resources"] == [
        {"name": "nvidia.com/mig-1g.5gb", "replicas": 3},
        {"name": "nvidia.com/mig-3g.20gb", "replicas": 3},
    ]
    offers = {o.resource: o for o in ctx.offers["a100"]}
    assert (offers["nvidia.com/gpu"].per_node, offers["nvidia.com/gpu"].isolation) == (4, Isolation.EXCLUSIVE)


def test_a_profile_left_out_of_the_mapping_is_not_shared() -> None:
    ctx = context(blueprint(mixed_pool({"replicas": {"1g.5gb": 4}})))
    config = build_config(ctx.blueprint.device_plugin.flags, ctx.blueprint.pool("a100"))
    assert config["sharing"]["timeSlicing"]["resources"] == [{"name": "nvidia.com/mig-1g.5gb", "replicas": 4}]
    offers = {o.resource: o for o in ctx.offers["a100"]}
    assert (offers["nvidia.com/mig-1g.5gb"].per_node, offers["nvidia.com/mig-1g.5gb"].shared_by) == (56, 4)
    assert (offers["nvidia.com/mig-3g.20gb"].per_node, offers["nvidia.com/mig-3g.20gb"].isolation) == (
        4,
        Isolation.HARDWARE,
    )
    assert offers["nvidia.com/gpu"].isolation == Isolation.EXCLUSIVE


def test_renamed_whole_gpus_are_advertised_as_gpu_shared_without_the_shared_product() -> None:
    ctx = context(blueprint(mixed_pool({"replicas": {"whole": 2}, "renameByDefault": True})))
    offers = {o.resource: o for o in ctx.offers["a100"]}
    assert offers["nvidia.com/gpu.shared"].per_node == 8 and "nvidia.com/gpu" not in offers
    pool, model = ctx.blueprint.pool("a100"), ctx.models["a100"]
    assert pool is not None and model is not None
    labels = gfd_labels(pool, model, ctx.offers["a100"])
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-40GB"
    assert labels["nvidia.com/gpu.replicas"] == "2"
    config = build_config(ctx.blueprint.device_plugin.flags, ctx.blueprint.pool("a100"))
    assert config["sharing"]["timeSlicing"] == {
        "renameByDefault": True,
        "failRequestsGreaterThanOne": True,
        "resources": [{"name": "nvidia.com/gpu", "replicas": 2}],
    }


def test_pools_with_different_counts_per_profile_get_different_configs() -> None:
    first = mixed_pool({"replicas": {"1g.5gb": 2, "3g.20gb": 3}}, name="first")
    second = mixed_pool({"replicas": {"1g.5gb": 3, "3g.20gb": 2}}, name="second")
    same = mixed_pool({"replicas": {"1g.5gb": 2, "3g.20gb": 3}}, name="same")
    ctx = context(blueprint(first, second, same))
    plan = compile_blueprint(ctx)
    keys = {
        m.obj["metadata"]["labels"]["gpustack.io/pool"]: m.obj["metadata"]["labels"]["nvidia.com/device-plugin.config"]
        for m in plan.by_family("nodes")
    }
    assert keys["first"] == keys["same"] == "mig-mixed-time-slicing-per-profile"
    assert keys["second"] != keys["first"]


def test_review_and_graph_show_each_count() -> None:
    ctx = context(blueprint(mixed_pool({"replicas": {"whole": 8, "1g.5gb": 2}})))
    pool = ctx.blueprint.pool("a100")
    assert pool is not None
    assert pool_fields(pool)["sharing.mig.timeSlicing.replicas"] == {"whole": 8, "1g.5gb": 2}
    graph = blueprint_graph(ctx.blueprint, ctx)
    (node,) = [n for n in graph.nodes if n.kind == "pool"]
    assert any("(time-sliced whole x8, 1g.5gb x2)" in line for line in node.lines)
    # Which names renameByDefault turns to .shared depends on the profiles named: a change there is a rename risk.
    other = context(blueprint(mixed_pool({"replicas": {"1g.5gb": 2}}))).blueprint.pool("a100")
    assert other is not None and naming(pool) != naming(other)


# Diagnostics


def validate_pool(pool: dict[str, Any], **spec: Any) -> list[tuple[str, str, str]]:
    data = {
        "apiVersion": "gpustack.io/v1alpha1",
        "kind": "ClusterBlueprint",
        "metadata": {"name": "test"},
        "spec": {"kubernetes": {"version": "1.31"}, **spec, "nodePools": [pool]},
    }
    result = validate_text(dump_yaml(data), "bp.yaml")
    return [(d.code, ".".join(map(str, d.path)), d.message) for d in result.diagnostics]


def test_a_profile_the_layout_does_not_make_is_refused_at_its_key() -> None:
    found = validate_pool(mixed_pool({"replicas": {"1g.5gb": 2, "2g.10gb": 3}}))
    assert [(code, path) for code, path, _ in found] == [
        ("GS425", "spec.nodePools.0.sharing.mig.timeSlicing.replicas.2g.10gb")
    ]
    assert "'2g.10gb', which its layout does not make" in found[0][2]


def test_whole_gpus_named_where_no_group_leaves_any_is_refused() -> None:
    found = validate_pool(mixed_pool({"replicas": {"whole": 4, "1g.5gb": 2}}, whole=False))
    assert [(code, path) for code, path, _ in found] == [
        ("GS425", "spec.nodePools.0.sharing.mig.timeSlicing.replicas.whole")
    ]


@pytest.mark.parametrize("key", ["whole", "3g.20gb"])
def test_a_count_below_two_is_refused_at_its_entry(key: str) -> None:
    found = validate_pool(mixed_pool({"replicas": {"1g.5gb": 2, key: 1}}))
    assert [(code, path) for code, path, _ in found] == [
        ("GS402", f"spec.nodePools.0.sharing.mig.timeSlicing.replicas.{key}")
    ]


def test_counts_per_profile_on_an_auto_layout_are_refused() -> None:
    pool = mixed_pool({"replicas": {"1g.5gb": 2}})
    pool["sharing"]["mig"] = {"strategy": "mixed", "layout": "auto", "timeSlicing": {"replicas": {"1g.5gb": 2}}}
    codes = sorted(code for code, _, _ in validate_pool(pool))
    assert codes == ["GS310", "GS426"]


def test_counts_per_profile_under_the_single_strategy_are_one_error() -> None:
    pool = mixed_pool({"replicas": {"7g.40gb": 2, "1g.5gb": 3}})
    pool["sharing"]["mig"] = {"strategy": "single", "layout": {"1g.5gb": 7}, "timeSlicing": {"replicas": {"9g.1gb": 2}}}
    assert [code for code, _, _ in validate_pool(pool)] == ["GS304"]


def test_the_schema_refuses_a_key_that_is_neither_a_profile_nor_whole() -> None:
    found = validate_pool(mixed_pool({"replicas": {"gpu": 8}}))
    assert found and all(code.startswith("GS1") for code, _, _ in found)


def test_whole_gpus_time_sliced_beside_mig_oversubscribe_memory_and_refuse_requests_above_one() -> None:
    pool = mixed_pool({"replicas": {"whole": 4}})
    tenant = {"name": "ml", "namespaces": ["ml"], "pools": ["a100"], "quota": {"a100": {"gpu": 32}}}
    big: dict[str, Any] = {"name": "big", "tenant": "ml", "pool": "a100", "kind": "Deployment"}
    big["image"] = "vllm/vllm-openai:v0.6.3"
    two: dict[str, Any] = {**big, "name": "two"}
    big["gpu"] = {"count": 1, "memory": "36Gi"}
    two["gpu"] = {"count": 2}
    found = validate_pool(pool, tenants=[tenant], workloads=[big, two])
    by_code = {code: message for code, _, message in found}
    assert "GS404" in by_code and "time-slices each whole A100-SXM4-40GB 4 ways" in by_code["GS404"]
    assert "GS603" in by_code and "2 shared GPUs" in by_code["GS603"]


def test_recipe_file_path_is_under_tests() -> None:
    assert Path(RECIPE).is_file() and RECIPE.is_relative_to(CASES)

"""Pools that leave some GPUs whole beside MIG instances, and MIG instances time-sliced between pods.

Each layer is asserted against what NVIDIA's components do with it: mig-parted's per-device entries (one with
mig-enabled: false), the device plugin's `sharing.timeSlicing` on `nvidia.com/mig-<profile>` under the mixed strategy,
GPU Feature Discovery's labels, the DRA driver's devices, and the scheduler's view in simulate.
"""

from __future__ import annotations

import dataclasses
from decimal import Decimal
from typing import Any

import yaml
from builders import blueprint, context, sourceless
from cluster_from import snapshot_data
from conftest import BLUEPRINTS
from upstream_rules import device_plugin_config_errors, mig_parted_config_errors

from gpustack.capacity import measure_capacity
from gpustack.cluster.importer import import_snapshot
from gpustack.cluster.snapshot import parse_snapshot
from gpustack.compile import compile_blueprint
from gpustack.compile.device_plugin import build_config, device_plugin_config_key
from gpustack.compile.gpu_operator import build_values
from gpustack.compile.mig import build_mig_parted_config
from gpustack.compile.nodes import node_labels
from gpustack.dra import pool_classes
from gpustack.offers import Isolation
from gpustack.simulate.inventory import gfd_labels
from gpustack.sizing import size_pod
from gpustack.validation import validate_path, validate_text
from gpustack.workloads import compile_workloads
from gpustack.yamlout import dump_yaml

WHOLE_AND_CUT = [
    {"devices": [0, 1, 2, 3], "whole": True},
    {"devices": [4, 5], "layout": {"3g.40gb": 2}},
    {"devices": [6, 7], "layout": {"1g.10gb": 7}},
]


def mig_pool(name: str = "h100", *, groups: list[dict] | None = None, **mig: Any) -> dict:
    block: dict[str, Any] = {"strategy": "mixed", **mig}
    if groups is not None:
        block["groups"] = groups
    elif "layout" not in block:
        block["groups"] = WHOLE_AND_CUT
    return {
        "name": name,
        "gpu": {"model": "H100-SXM5-80GB", "count": 8},
        "nodes": [f"{name}-a", f"{name}-b"],
        "taints": [{"key": "gpustack.io/pool", "value": name, "effect": "NoSchedule"}],
        "sharing": {"strategy": "mig", "mig": block},
    }


def offers_of(pool: dict, **spec: Any) -> dict[str, Any]:
    ctx = context(blueprint(pool, **spec))
    return {offer.resource: offer for offer in ctx.offers[pool["name"]]}


def workload(name: str, gpu: dict, pool: str = "h100", **extra: Any) -> dict:
    return {"name": name, "tenant": "ml", "pool": pool, "kind": "Deployment", "image": "x:1", "gpu": gpu, **extra}


def tenant(*pools: str, quota: dict | None = None) -> dict:
    return {"name": "ml", "namespaces": ["ml"], "pools": list(pools), **({"quota": quota} if quota else {})}


# what the pool offers


def test_whole_gpus_and_mig_instances_are_advertised_on_the_same_node() -> None:
    offers = offers_of(mig_pool())
    assert list(offers) == ["nvidia.com/gpu", "nvidia.com/mig-3g.40gb", "nvidia.com/mig-1g.10gb"]
    whole = offers["nvidia.com/gpu"]
    assert (whole.per_node, whole.memory_gib, whole.isolation, whole.profile) == (
        4,
        Decimal(80),
        Isolation.EXCLUSIVE,
        None,
    )
    assert offers["nvidia.com/mig-3g.40gb"].per_node == 2 * 2
    assert offers["nvidia.com/mig-1g.10gb"].per_node == 2 * 7


def test_time_sliced_instances_are_advertised_replicas_times_under_their_own_or_shared_name() -> None:
    plain = offers_of(mig_pool(layout={"3g.40gb": 2}, timeSlicing={"replicas": 3}))
    unit = plain["nvidia.com/mig-3g.40gb"]
    assert (unit.per_node, unit.shared_by, unit.isolation, unit.profile) == (8 * 2 * 3, 3, Isolation.NONE, "3g.40gb")
    assert unit.memory_gib == Decimal(40), "the pods on one instance share its memory"
    renamed = offers_of(mig_pool(layout={"3g.40gb": 2}, timeSlicing={"replicas": 3, "renameByDefault": True}))
    assert list(renamed) == ["nvidia.com/mig-3g.40gb.shared"]


def test_whole_gpus_stay_whole_when_the_instances_are_time_sliced() -> None:
    offers = offers_of(mig_pool(timeSlicing={"replicas": 2}))
    assert offers["nvidia.com/gpu"].shared_by == 1 and offers["nvidia.com/gpu"].per_node == 4
    assert offers["nvidia.com/mig-1g.10gb"].per_node == 2 * 7 * 2


# the mig-parted config


def test_mig_parted_gets_one_entry_per_group_and_mig_enabled_false_for_the_whole_gpus() -> None:
    config = build_mig_parted_config(context(blueprint(mig_pool(), stack="gpu-operator")))
    assert config["mig-configs"]["gpustack-h100"] == [
        {"devices": [0, 1, 2, 3], "mig-enabled": False},
        {"devices": [4, 5], "mig-enabled": True, "mig-devices": {"3g.40gb": 2}},
        {"devices": [6, 7], "mig-enabled": True, "mig-devices": {"1g.10gb": 7}},
    ]
    assert mig_parted_config_errors(config) == []


def test_time_slicing_does_not_touch_the_mig_layout() -> None:
    cut = build_mig_parted_config(context(blueprint(mig_pool(), stack="gpu-operator")))
    sliced = build_mig_parted_config(context(blueprint(mig_pool(timeSlicing={"replicas": 4}), stack="gpu-operator")))
    assert cut == sliced


# the device plugin config


def test_device_plugin_config_time_slices_each_profile_in_the_upstream_format() -> None:
    pool = mig_pool(timeSlicing={"replicas": 2})
    ctx = context(blueprint(pool))
    config = build_config(ctx.blueprint.device_plugin.flags, ctx.blueprint.pools[0])
    # k8s-device-plugin's README "mig-mixed-ts" example: migStrategy mixed, one resource per MIG profile.
    assert config == {
        "version": "v1",
        "flags": {"migStrategy": "mixed"},
        "sharing": {
            "timeSlicing": {
                "renameByDefault": False,
                "failRequestsGreaterThanOne": True,
                "resources": [
                    {"name": "nvidia.com/mig-3g.40gb", "replicas": 2},
                    {"name": "nvidia.com/mig-1g.10gb", "replicas": 2},
                ],
            }
        },
    }
    assert device_plugin_config_errors(config) == []
    # The plugin replicates only names it advertises (others are silently ignored): every name is a MIG offer.
    advertised = {o.resource for o in ctx.offers["h100"] if o.profile is not None}
    assert {r["name"] for r in config["sharing"]["timeSlicing"]["resources"]} == advertised


def test_whole_and_mig_gpus_need_only_the_mixed_strategy_and_no_sharing_block() -> None:
    ctx = context(blueprint(mig_pool()))
    config = build_config(ctx.blueprint.device_plugin.flags, ctx.blueprint.pools[0])
    assert config == {"version": "v1", "flags": {"migStrategy": "mixed"}}


def test_operator_values_carry_both_configs_and_label_each_pool_with_its_own() -> None:
    bp = blueprint(
        mig_pool("h100"),
        mig_pool("a100", layout={"1g.10gb": 7}, timeSlicing={"replicas": 4, "renameByDefault": True}),
        stack="gpu-operator",
    )
    ctx = context(bp)
    values = build_values(ctx)
    assert values["mig"] == {"strategy": "mixed"}
    data = values["devicePlugin"]["config"]["data"]
    assert device_plugin_config_key(ctx, bp.pools[0]) == "mig-mixed"
    assert device_plugin_config_key(ctx, bp.pools[1]) == "mig-mixed-time-slicing-4-renamed"
    sliced = yaml.safe_load(data["mig-mixed-time-slicing-4-renamed"])
    assert sliced["sharing"]["timeSlicing"]["renameByDefault"] is True
    assert sliced["sharing"]["timeSlicing"]["resources"] == [{"name": "nvidia.com/mig-1g.10gb", "replicas": 4}]
    assert all(device_plugin_config_errors(yaml.safe_load(text)) == [] for text in data.values())
    labels = node_labels(ctx, bp.pools[1])
    assert labels["nvidia.com/device-plugin.config"] == "mig-mixed-time-slicing-4-renamed"
    assert labels["nvidia.com/mig.config"] == "gpustack-a100"


# workloads, quotas and capacity


def test_workloads_get_whole_gpus_or_slices_by_what_they_ask() -> None:
    bp = blueprint(
        mig_pool(),
        tenants=[tenant("h100")],
        workloads=[
            workload("trainer", {"count": 2}),
            workload("big", {"memory": "60Gi"}),  # more than any slice: a whole GPU
            workload("mid", {"memory": "30Gi"}),
            workload("small", {"profile": "1g.10gb"}),
        ],
    )
    requests = {name: r.as_dict() for name, r in context(bp).requests.items()}
    assert requests == {
        "trainer": {"nvidia.com/gpu": 2},
        "big": {"nvidia.com/gpu": 1},
        "mid": {"nvidia.com/mig-3g.40gb": 1},
        "small": {"nvidia.com/mig-1g.10gb": 1},
    }
    plan = compile_blueprint(sourceless(bp))
    limits = {
        m.obj["metadata"]["name"]: m.obj["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
        for m in plan.by_family("workloads")
    }
    assert limits["trainer"]["nvidia.com/gpu"] == "2"
    assert limits["small"]["nvidia.com/mig-1g.10gb"] == "1"


def test_quota_in_whole_gpus_and_instances_of_one_pool() -> None:
    bp = blueprint(
        mig_pool(timeSlicing={"replicas": 2, "renameByDefault": True}),
        tenants=[tenant("h100", quota={"h100": {"gpu": 8, "mig-3g.40gb.shared": 8, "mig-1g.10gb.shared": 0}})],
    )
    (quota,) = (
        m.obj for m in compile_blueprint(sourceless(bp)).by_family("tenants") if m.obj["kind"] == "ResourceQuota"
    )
    assert quota["spec"]["hard"] == {
        "requests.nvidia.com/gpu": "8",
        "requests.nvidia.com/mig-1g.10gb.shared": "0",
        "requests.nvidia.com/mig-3g.40gb.shared": "8",
    }


def test_capacity_counts_each_replica_of_an_instance_with_its_share_of_compute() -> None:
    bp = blueprint(mig_pool(layout={"1g.10gb": 7}, timeSlicing={"replicas": 4}))
    (pool,) = measure_capacity(context(bp)).pools
    (unit,) = pool.units
    assert (unit.resource, unit.total, unit.shared_by) == ("nvidia.com/mig-1g.10gb", 2 * 8 * 7 * 4, 4)
    assert unit.compute == Decimal(1) / 7 / 4


# GPU Feature Discovery and DRA


def test_gfd_labels_a_node_with_whole_gpus_and_time_sliced_instances() -> None:
    ctx = context(blueprint(mig_pool(timeSlicing={"replicas": 2})))
    pool = ctx.blueprint.pools[0]
    model = ctx.models["h100"]
    assert model is not None
    labels = gfd_labels(pool, model, ctx.offers["h100"])
    # Full GPUs override the MIG-enabled parents' labels (GFD newGPULabelers): unshared, every GPU counted.
    assert labels["nvidia.com/gpu.replicas"] == "1"
    assert labels["nvidia.com/gpu.count"] == "8"
    assert labels["nvidia.com/mig.strategy"] == "mixed"
    assert labels["nvidia.com/mig-1g.10gb.count"] == "14"
    assert labels["nvidia.com/mig-1g.10gb.replicas"] == "2"
    assert labels["nvidia.com/mig-1g.10gb.sharing-strategy"] == "time-slicing"
    assert labels["nvidia.com/mig-1g.10gb.product"] == f"{model.product_label}-MIG-1g.10gb-SHARED"
    renamed = context(blueprint(mig_pool(timeSlicing={"replicas": 2, "renameByDefault": True})))
    renamed_labels = gfd_labels(renamed.blueprint.pools[0], model, renamed.offers["h100"])
    assert renamed_labels["nvidia.com/mig-1g.10gb.product"] == f"{model.product_label}-MIG-1g.10gb"


def test_a_dra_pool_may_leave_gpus_whole_beside_its_mig_devices() -> None:
    pool = {**mig_pool(), "allocation": "dra"}
    ctx = context(blueprint(pool, kubernetes={"version": "1.34"}, stack="gpu-operator"))
    classes = {c.name: c for c in pool_classes(ctx, "h100")}
    assert sorted(classes) == ["gpu.h100.gpustack.io", "mig-1g.10gb.h100.gpustack.io", "mig-3g.40gb.h100.gpustack.io"]
    # The driver publishes a MIG-enabled GPU only as its MIG devices, a MIG-disabled one as type gpu.
    assert "type == 'gpu'" in classes["gpu.h100.gpustack.io"].expression
    assert "type == 'mig'" in classes["mig-3g.40gb.h100.gpustack.io"].expression


# import


def test_import_reads_whole_groups_and_time_slicing_back_from_the_cluster() -> None:
    original = validate_path(BLUEPRINTS / "mig-mixed.yaml")
    assert original.blueprint is not None
    data = snapshot_data(original.blueprint, "v1.33.0")
    # Without the device plugin's ConfigMap, time-slicing is read from GFD's labels and the allocatable names.
    data["items"] = [i for i in data["items"] if i["metadata"].get("name") != "gpustack-device-plugin-config"]
    result = import_snapshot(parse_snapshot(dump_yaml(data), "cluster.yaml"), "round-trip")
    pools = {p["gpu"]["model"]: p for p in result.data["spec"]["nodePools"]}
    mixed = pools["H100-SXM5-80GB"]["sharing"]["mig"]
    assert mixed["groups"][0] == {"devices": [0, 1, 2, 3], "whole": True}
    assert "timeSlicing" not in mixed
    sliced = pools["A100-SXM4-80GB"]["sharing"]["mig"]
    assert sliced["timeSlicing"] == {"replicas": 4, "renameByDefault": True}
    assert "mig.timeSlicing: from GFD's nvidia.com/mig-*.replicas labels" in result.text
    assert validate_text(result.text, "imported.yaml").ok


def test_pods_without_resources_share_the_node_by_the_gpus_their_units_are_cut_from() -> None:
    pool = {**mig_pool(), "nodeResources": {"cpu": "192", "memory": "2000Gi"}}
    units = {"trainer": {"count": 1}, "chat": {"profile": "3g.40gb"}, "small": {"profile": "1g.10gb"}}
    bp = blueprint(pool, tenants=[tenant("h100")], workloads=[workload(name, gpu) for name, gpu in units.items()])
    ctx = context(bp)
    cpus = {w.name: size_pod(ctx, w, bp.pools[0], ctx.requests[w.name])[0] for w in bp.workloads}
    # 1 of 4 whole GPUs is 1/8 of the node; 1 of the 4 3g.40gb (on 2 GPUs) 1/16; 1 of 14 1g.10gb (on 2 GPUs) 1/56.
    assert cpus == {"trainer": "21", "chat": "10", "small": "3"}
    offers = ctx.offers["h100"]
    # The units' GPUs add up to the node's: all its units together get 90% of it, as on a node of whole GPUs.
    assert sum(Decimal(o.gpus or 0) for o in offers) == 8


def test_a_template_may_move_a_pod_between_the_units_the_pool_offers_but_not_to_one_it_does_not() -> None:
    pool = mig_pool(timeSlicing={"replicas": 2, "renameByDefault": True})
    bp = blueprint(pool, tenants=[tenant("h100")], workloads=[workload("app", {"count": 1})])
    app = bp.workloads[0]

    def rendered_with(resource: str) -> list[str]:
        text = (
            "{%- set c = manifest.spec.template.spec.containers[0] -%}\n"
            f"{{%- set _ = c.resources.limits.pop('nvidia.com/gpu') and c.resources.requests.pop('nvidia.com/gpu') "
            f"and c.resources.limits.update({{'{resource}': '1'}}) "
            f"or c.resources.requests.update({{'{resource}': '1'}}) -%}}\n"
            "{{ manifest | toyaml }}\n"
        )
        templated = dataclasses.replace(
            bp,
            workloads=(dataclasses.replace(app, template="t.yaml.j2"),),
            templates=(("t.yaml.j2", text),),
        )
        return [d.message for d in compile_workloads(context(templated)).diagnostics]

    assert rendered_with("nvidia.com/mig-1g.10gb.shared") == []
    [message] = rendered_with("nvidia.com/mig-1g.10gb")
    assert "asks for nvidia.com/mig-1g.10gb, which pool 'h100' does not advertise" in message
    assert "nvidia.com/gpu, nvidia.com/mig-1g.10gb.shared, nvidia.com/mig-3g.40gb.shared" in message

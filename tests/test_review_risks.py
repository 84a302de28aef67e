"""Every risk flag fires when the change does what it warns about, and stays silent when it does not."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
import yaml
from builders import sourceless

from gpustack.plan import Manifest
from gpustack.review.risk import Level, Risk
from gpustack.review.risks import RULES, assess_risks
from gpustack.review.risks.objects import base_absent
from gpustack.review.snapshot import Snapshot, empty_snapshot
from gpustack.validation import validate_text

BASE = yaml.safe_load(
    """
apiVersion: gpustack.io/v1alpha1
kind: ClusterBlueprint
metadata: {name: risks}
spec:
  kubernetes: {version: "1.33"}
  nodePools:
    - name: mig
      gpu: {model: NVIDIA-H100-80GB-HBM3, count: 8}
      nodes: [h-a, h-b]
      sharing:
        strategy: mig
        mig:
          strategy: mixed
          groups:
            - {devices: [0, 1, 2, 3], layout: {"1g.10gb": 7}}
            - {devices: [4, 5, 6, 7], layout: {"3g.40gb": 2}}
    - name: l4
      gpu: {model: L4, count: 4}
      nodes: [l-a, l-b]
      taints: [{key: gpustack.io/pool, value: l4, effect: NoSchedule}]
    - name: a100
      gpu: {model: A100-SXM4-40GB, count: 8}
      nodes: [a-a]
    - name: spare
      gpu: {model: A100-SXM4-40GB, count: 8}
      nodes: [s-a]
  tenants:
    - name: team
      namespaces: [team]
      pools: [mig, l4, a100]
      quota: {mig: {mig-1g.10gb: 14}, l4: {gpu: 8}, a100: unlimited}
    - {name: other, namespaces: [other], pools: [l4], quota: {l4: unlimited}}
  workloads:
    - {name: small, tenant: team, pool: mig, kind: Deployment, replicas: 4, image: x, gpu: {profile: 1g.10gb}}
    - {name: large, tenant: team, pool: mig, kind: Deployment, replicas: 1, image: x, gpu: {memory: 30Gi}}
    - {name: web, tenant: team, pool: l4, kind: Deployment, replicas: 2, image: x, gpu: {count: 1}}
    - {name: batch, tenant: team, pool: a100, kind: Job, replicas: 1, image: x, gpu: {count: 8}}
"""
)

Edit = Callable[[dict[str, Any]], None]


def snapshot(data: dict[str, Any], label: str) -> Snapshot:
    result = validate_text(yaml.safe_dump(data, sort_keys=False), label)
    errors = [d.message for d in result.diagnostics if d.severity == "error"]
    assert result.blueprint is not None and result.ok, errors
    return Snapshot(label, result.context)


def pool(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(p for p in data["spec"]["nodePools"] if p["name"] == name)


def tenant(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(t for t in data["spec"]["tenants"] if t["name"] == name)


def workload(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(w for w in data["spec"]["workloads"] if w["name"] == name)


def risks_after(*edits: Edit, code: str | None = None) -> list[Risk]:
    after = copy.deepcopy(BASE)
    for edit in edits:
        edit(after)
    found = assess_risks(snapshot(BASE, "before.yaml"), snapshot(after, "after.yaml"))
    return [r for r in found if code is None or r.code == code]


def only(risks: list[Risk]) -> Risk:
    assert len(risks) == 1, [r.title for r in risks]
    return risks[0]


def test_no_change_no_risk() -> None:
    assert risks_after() == []


def test_every_rule_is_tested_here() -> None:
    tested = {name.removeprefix("test_").split("__")[0] for name in globals() if name.startswith("test_")}
    assert {rule.__name__ for rule in RULES} <= tested


# mig-repartition


def set_layout(group: int, layout: dict[str, int]) -> Edit:
    return lambda d: pool(d, "mig")["sharing"]["mig"]["groups"][group].__setitem__("layout", layout)


def test_mig_repartition__fires_on_a_new_layout_and_names_the_gpus_nodes_and_pods_on_them() -> None:
    risk = only(risks_after(set_layout(0, {"1g.10gb": 3, "2g.20gb": 2}), code="mig-repartition"))
    assert risk.severity is Level.HIGH
    assert risk.nodes == ("h-a", "h-b")
    assert risk.details == (
        "h-a: GPUs 0-3: {1g.10gb: 7} -> {1g.10gb: 3, 2g.20gb: 2}",
        "h-b: GPUs 0-3: {1g.10gb: 7} -> {1g.10gb: 3, 2g.20gb: 2}",
    )
    assert risk.workloads == ("small",), "only pods on 1g.10gb slices sit on GPUs 0-3"
    assert "drained" in risk.message and "killed" in risk.message


def test_mig_repartition__fires_when_mig_is_turned_on_and_says_gpus_reset() -> None:
    def enable(d: dict[str, Any]) -> None:
        pool(d, "spare")["sharing"] = {"strategy": "mig", "mig": {"strategy": "mixed", "layout": {"3g.20gb": 2}}}

    risk = only(risks_after(enable, code="mig-repartition"))
    assert risk.nodes == ("s-a",)
    assert risk.details == ("s-a: GPUs 0-7: MIG off -> {3g.20gb: 2}",)
    assert "GPU reset" in risk.message


def test_mig_repartition__fires_for_a_node_moved_into_a_mig_pool_with_another_layout() -> None:
    def move(d: dict[str, Any]) -> None:
        pool(d, "spare")["nodes"] = ["s-a", "a-b"]
        pool(d, "a100")["nodes"] = ["a-a"]

    before = copy.deepcopy(BASE)
    pool(before, "a100")["nodes"] = ["a-a", "a-b"]
    pool(before, "spare")["sharing"] = {"strategy": "mig", "mig": {"strategy": "mixed", "layout": {"3g.20gb": 2}}}
    after = copy.deepcopy(before)
    move(after)
    found = assess_risks(snapshot(before, "b"), snapshot(after, "a"))
    risk = only([r for r in found if r.code == "mig-repartition"])
    assert risk.nodes == ("a-b",) and risk.workloads == ("batch",)


def test_mig_repartition__silent_for_reordered_layouts_new_nodes_and_other_pools() -> None:
    def reorder(d: dict[str, Any]) -> None:
        groups = pool(d, "mig")["sharing"]["mig"]["groups"]
        groups.reverse()

    def add_node(d: dict[str, Any]) -> None:
        pool(d, "mig")["nodes"].append("h-c")

    assert risks_after(reorder, code="mig-repartition") == []
    assert risks_after(add_node, code="mig-repartition") == []
    assert risks_after(lambda d: workload(d, "small").__setitem__("replicas", 5), code="mig-repartition") == []


def test_mig_repartition__fires_when_a_group_is_left_whole_and_says_mig_mode_changes() -> None:
    def whole(d: dict[str, Any]) -> None:
        pool(d, "mig")["sharing"]["mig"]["groups"][0] = {"devices": [0, 1, 2, 3], "whole": True}
        tenant(d, "team")["quota"]["mig"] = {"gpu": 8}
        workload(d, "small")["gpu"] = {"count": 1}

    risk = only(risks_after(whole, code="mig-repartition"))
    assert risk.details == ("h-a: GPUs 0-3: {1g.10gb: 7} -> MIG off", "h-b: GPUs 0-3: {1g.10gb: 7} -> MIG off")
    assert "MIG mode changes" in risk.message
    assert risk.workloads == ("small",), "only pods on the 1g.10gb slices sat on GPUs 0-3"


def slice_mig(rename: bool) -> Edit:
    def edit(d: dict[str, Any]) -> None:
        pool(d, "mig")["sharing"]["mig"]["timeSlicing"] = {"replicas": 2, "renameByDefault": rename}
        if rename:
            tenant(d, "team")["quota"]["mig"] = {"mig-1g.10gb.shared": 28}

    return edit


def test_mig_repartition__silent_when_only_the_instances_get_time_sliced() -> None:
    assert risks_after(slice_mig(rename=True), code="mig-repartition") == []


# noexecute-taint


def add_taint(pool_name: str, effect: str, value: str = "yes") -> Edit:
    taint = {"key": "drain", "value": value, "effect": effect}
    return lambda d: pool(d, pool_name).setdefault("taints", []).append(taint)


def test_noexecute_taint__fires_with_the_nodes_and_the_pods_it_evicts() -> None:
    risk = only(risks_after(add_taint("l4", "NoExecute"), code="noexecute-taint"))
    assert risk.severity is Level.HIGH
    assert risk.nodes == ("l-a", "l-b")
    assert risk.workloads == ("web",)
    assert "drain=yes:NoExecute" in risk.title


def test_noexecute_taint__fires_for_a_node_newly_put_under_an_existing_noexecute_taint() -> None:
    before = copy.deepcopy(BASE)
    add_taint("l4", "NoExecute")(before)
    after = copy.deepcopy(before)
    pool(after, "l4")["nodes"].append("l-c")
    risk = only([r for r in assess_risks(snapshot(before, "b"), snapshot(after, "a")) if r.code == "noexecute-taint"])
    assert risk.nodes == ("l-c",)
    assert "new to the blueprint" in risk.message


def test_noexecute_taint__silent_for_noschedule_and_for_a_taint_already_there() -> None:
    assert risks_after(add_taint("l4", "NoSchedule"), code="noexecute-taint") == []
    before = copy.deepcopy(BASE)
    add_taint("l4", "NoExecute")(before)
    found = assess_risks(snapshot(before, "b"), snapshot(copy.deepcopy(before), "a"))
    assert found == ()


# resource-renamed


def share_l4(rename: bool) -> Edit:
    def edit(d: dict[str, Any]) -> None:
        replication = {"replicas": 4, "renameByDefault": rename}
        pool(d, "l4")["sharing"] = {"strategy": "time-slicing", "timeSlicing": replication}
        if rename:
            tenant(d, "team")["quota"]["l4"] = {"gpu.shared": 8}

    return edit


def test_resource_renamed__fires_high_and_names_the_stranded_workloads() -> None:
    risk = only(risks_after(share_l4(rename=True), code="resource-renamed"))
    assert risk.severity is Level.HIGH
    assert risk.workloads == ("web",)
    assert risk.nodes == ("l-a", "l-b")
    assert "nvidia.com/gpu" in risk.title and "nvidia.com/gpu.shared" in risk.message


def test_resource_renamed__medium_when_no_workload_asks_for_the_old_name() -> None:
    def share_spare(d: dict[str, Any]) -> None:
        pool(d, "spare")["sharing"] = {"strategy": "mps", "mps": {"replicas": 4, "renameByDefault": True}}

    risk = only(risks_after(share_spare, code="resource-renamed"))
    assert risk.severity is Level.MEDIUM and risk.workloads == ()


def test_resource_renamed__silent_when_the_name_stays() -> None:
    assert risks_after(share_l4(rename=False), code="resource-renamed") == []
    assert risks_after(set_layout(0, {"1g.10gb": 3, "2g.20gb": 2}), code="resource-renamed") == []


def test_resource_renamed__fires_when_time_sliced_mig_instances_are_renamed() -> None:
    risk = only(risks_after(slice_mig(rename=True), code="resource-renamed"))
    assert risk.severity is Level.HIGH
    assert risk.workloads == ("large", "small")
    assert "nvidia.com/mig-1g.10gb.shared" in risk.message
    assert "mig mixed time-sliced with renameByDefault" in risk.title
    assert risks_after(slice_mig(rename=False), code="resource-renamed") == []


# workload-stranded


def test_workload_stranded__fires_when_its_resolved_profile_leaves_the_layout() -> None:
    risk = only(risks_after(set_layout(1, {"4g.40gb": 1}), code="workload-stranded"))
    assert risk.severity is Level.HIGH
    assert risk.workloads == ("large",)
    assert "nvidia.com/mig-3g.40gb" in risk.title
    assert "nvidia.com/mig-4g.40gb" in risk.message


def test_workload_stranded__fires_when_its_pool_is_removed() -> None:
    def drop_a100(d: dict[str, Any]) -> None:
        d["spec"]["nodePools"] = [p for p in d["spec"]["nodePools"] if p["name"] != "a100"]
        tenant(d, "team")["pools"] = ["mig", "l4", "spare"]
        tenant(d, "team")["quota"]["spare"] = tenant(d, "team")["quota"].pop("a100")
        workload(d, "batch")["pool"] = "spare"

    risk = only(risks_after(drop_a100, code="workload-stranded"))
    assert risk.severity is Level.MEDIUM
    assert risk.workloads == ("batch",) and risk.pools == ("a100", "spare")


def test_workload_stranded__fires_for_a_job_under_a_new_noschedule_taint() -> None:
    risk = only(risks_after(add_taint("a100", "NoSchedule"), code="workload-stranded"))
    assert risk.workloads == ("batch",) and risk.nodes == ("a-a",)
    assert "cannot be changed in place" in risk.message


def test_workload_stranded__silent_for_deployments_removed_workloads_and_kept_profiles() -> None:
    assert risks_after(add_taint("l4", "NoSchedule"), code="workload-stranded") == []

    def drop_batch_and_pool(d: dict[str, Any]) -> None:
        d["spec"]["nodePools"] = [p for p in d["spec"]["nodePools"] if p["name"] != "a100"]
        tenant(d, "team")["pools"] = ["mig", "l4"]
        del tenant(d, "team")["quota"]["a100"]
        d["spec"]["workloads"] = [w for w in d["spec"]["workloads"] if w["name"] != "batch"]

    assert risks_after(drop_batch_and_pool, code="workload-stranded") == []
    assert risks_after(set_layout(0, {"1g.10gb": 3, "2g.20gb": 2}), code="workload-stranded") == []


# quota-below-need


def set_quota(pool_name: str, resource: str, amount: int) -> Edit:
    def edit(d: dict[str, Any]) -> None:
        quota = tenant(d, "team")["quota"]
        entry = quota.get(pool_name)  # `unlimited` (a string) becomes amounts
        quota[pool_name] = {**(entry if isinstance(entry, dict) else {}), resource: amount}

    return edit


def test_quota_below_need__fires_for_a_cut_below_the_templates() -> None:
    risk = only(risks_after(set_quota("mig", "mig-1g.10gb", 3), code="quota-below-need"))
    assert risk.severity is Level.MEDIUM
    assert risk.tenants == ("team",) and risk.workloads == ("small",)
    assert "from 14 to 3" in risk.message and "request 4" in risk.message


def test_quota_below_need__fires_for_a_new_quota_where_there_was_no_limit() -> None:
    risk = only(risks_after(set_quota("a100", "gpu", 4), code="quota-below-need"))
    assert "from no limit to 4" in risk.message and risk.workloads == ("batch",)


def test_quota_below_need__silent_for_a_cut_that_still_fits_and_for_a_raise() -> None:
    assert risks_after(set_quota("mig", "mig-1g.10gb", 4), code="quota-below-need") == []
    assert risks_after(set_quota("mig", "mig-1g.10gb", 20), code="quota-below-need") == []


# quota-closed


def close_a100(d: dict[str, Any]) -> None:
    del tenant(d, "team")["quota"]["a100"]  # no entry: closed (GS610)


def test_quota_closed__fires_when_an_unlimited_pool_loses_its_entry_and_names_what_it_refuses() -> None:
    risk = only(risks_after(close_a100, code="quota-closed"))
    assert risk.severity is Level.HIGH and risk.pools == ("a100",) and risk.workloads == ("batch",)
    assert "from unlimited to closed (0)" in risk.title and "request 8 nvidia.com/gpu" in risk.message
    empty = only(risks_after(lambda d: tenant(d, "team")["quota"].__setitem__("a100", {}), code="quota-closed"))
    assert empty.pools == ("a100",)


def test_quota_closed__silent_for_amounts_or_a_pool_that_was_closed_already() -> None:
    assert risks_after(set_quota("a100", "gpu", 8), code="quota-closed") == []  # amounts: quota-below-need's part
    before_closed = copy.deepcopy(BASE)
    close_a100(before_closed)
    found = assess_risks(snapshot(before_closed, "before.yaml"), snapshot(before_closed, "after.yaml"))
    assert [r for r in found if r.code == "quota-closed"] == []


# node-moved


def move_a100_node(d: dict[str, Any]) -> None:
    pool(d, "a100")["nodes"] = ["a-b"]
    pool(d, "spare")["nodes"] = ["s-a", "a-a"]


def test_node_moved__fires_with_both_pools_and_the_old_pools_workloads() -> None:
    risk = only(risks_after(move_a100_node, code="node-moved"))
    assert risk.severity is Level.MEDIUM
    assert risk.nodes == ("a-a",) and risk.pools == ("a100", "spare") and risk.workloads == ("batch",)


def test_node_moved__silent_when_nodes_are_only_added_or_removed() -> None:
    assert risks_after(lambda d: pool(d, "spare")["nodes"].append("s-b"), code="node-moved") == []
    assert risks_after(lambda d: pool(d, "l4").__setitem__("nodes", ["l-a"]), code="node-moved") == []


# device-plugin-chart


def standalone(data: dict[str, Any]) -> None:
    data["spec"]["stack"] = "device-plugin"


def risks_between(before_edit: Edit, *edits: Edit, code: str | None = None) -> list[Risk]:
    before = copy.deepcopy(BASE)
    before_edit(before)
    after = copy.deepcopy(before)
    for edit in edits:
        edit(after)
    found = assess_risks(snapshot(before, "before.yaml"), snapshot(after, "after.yaml"))
    return [r for r in found if code is None or r.code == code]


def test_device_plugin_chart__fires_on_a_version_or_repository_change() -> None:
    risk = only(risks_between(standalone, lambda d: d["spec"].__setitem__("devicePlugin", {"chartVersion": "0.17.0"})))
    assert risk.code == "device-plugin-chart" and risk.severity is Level.MEDIUM
    assert "downgraded from 0.20.0 to 0.17.0" in risk.title
    assert risk.nodes == ("a-a", "h-a", "h-b", "l-a", "l-b", "s-a")
    mirror = {"repository": "https://charts.example.com/nvidia"}
    risk = only(risks_between(standalone, lambda d: d["spec"].__setitem__("devicePlugin", mirror)))
    assert "https://charts.example.com/nvidia" in risk.title


def test_device_plugin_chart__silent_for_other_settings_a_first_install_and_the_operator_stack() -> None:
    assert risks_between(standalone, lambda d: d["spec"].__setitem__("devicePlugin", {"namespace": "gpu"})) == []
    first = assess_risks(empty_snapshot("new"), snapshot(BASE, "a"))
    assert [r for r in first if r.code == "device-plugin-chart"] == []
    # With the GPU Operator the standalone chart is not installed: its version is not a change to the cluster.
    assert risks_after(lambda d: d["spec"].__setitem__("devicePlugin", {"chartVersion": "0.17.0"})) == []


# gpu-stack


def test_gpu_stack__a_switch_is_high_and_names_the_release_to_remove() -> None:
    risk = only(risks_between(standalone, lambda d: d["spec"].__setitem__("stack", "gpu-operator")))
    assert risk.code == "gpu-stack" and risk.severity is Level.HIGH
    assert "helm uninstall nvidia-device-plugin -n nvidia-device-plugin" in risk.advice
    assert risk.nodes == ("a-a", "h-a", "h-b", "l-a", "l-b", "s-a")


def test_gpu_stack__the_release_to_remove_is_the_one_the_blueprint_names() -> None:
    """An imported cluster keeps its release name (devicePlugin.releaseName): that is the release to uninstall."""

    def nvdp(data: dict[str, Any]) -> None:
        standalone(data)
        data["spec"]["devicePlugin"] = {"releaseName": "nvdp", "namespace": "kube-system"}

    risk = only(risks_between(nvdp, lambda d: d["spec"].__setitem__("stack", "gpu-operator")))
    assert "helm uninstall nvdp -n kube-system" in risk.advice


def test_gpu_stack__an_operator_upgrade_or_driver_change_is_medium() -> None:
    upgrade = only(risks_after(lambda d: d["spec"].__setitem__("gpuOperator", {"chartVersion": "v26.7.1"})))
    assert upgrade.code == "gpu-operator-chart" and upgrade.severity is Level.MEDIUM
    assert "v26.7.0 -> v26.7.1" in upgrade.title
    driver = only(risks_after(lambda d: d["spec"].__setitem__("gpuOperator", {"driver": False})))
    assert "driver or toolkit" in driver.title
    assert risks_after(lambda d: d["spec"].__setitem__("gpuOperator", {"nfd": False})) == []


# tenant-access-lost


def test_tenant_access_lost__fires_when_a_pool_is_revoked() -> None:
    risk = only(
        risks_after(
            lambda d: tenant(d, "other").update(pools=["a100"], quota={"a100": "unlimited"}), code="tenant-access-lost"
        )
    )
    assert risk.severity is Level.MEDIUM and risk.tenants == ("other",) and risk.pools == ("l4",)
    assert risk.nodes == ("l-a", "l-b")


def test_tenant_access_lost__high_when_the_tenant_and_its_namespaces_go() -> None:
    def drop_other(d: dict[str, Any]) -> None:
        d["spec"]["tenants"] = [t for t in d["spec"]["tenants"] if t["name"] != "other"]

    risk = only(risks_after(drop_other, code="tenant-access-lost"))
    assert risk.severity is Level.HIGH and "'other'" in risk.message and "pruning" in risk.message
    assert risk.nodes == ("l-a", "l-b")


def test_tenant_access_lost__silent_when_access_grows() -> None:
    assert risks_after(lambda d: tenant(d, "other")["pools"].append("a100"), code="tenant-access-lost") == []


# isolation-weakened


def test_isolation_weakened__fires_medium_for_a_pool_tenants_share() -> None:
    risk = only(risks_after(share_l4(rename=False), code="isolation-weakened"))
    assert risk.severity is Level.MEDIUM and risk.tenants == ("other", "team")
    assert "exclusive to none" in risk.title


def test_isolation_weakened__low_for_a_pool_no_tenant_shares() -> None:
    def share_spare(d: dict[str, Any]) -> None:
        pool(d, "spare")["sharing"] = {"strategy": "time-slicing", "timeSlicing": {"replicas": 2}}

    assert only(risks_after(share_spare, code="isolation-weakened")).severity is Level.LOW


def test_isolation_weakened__silent_when_isolation_grows() -> None:
    before = copy.deepcopy(BASE)
    share_l4(rename=False)(before)
    found = assess_risks(snapshot(before, "b"), snapshot(BASE, "a"))
    assert [r for r in found if r.code == "isolation-weakened"] == []


def test_isolation_weakened__fires_when_mig_instances_are_time_sliced() -> None:
    risk = only(risks_after(slice_mig(rename=False), code="isolation-weakened"))
    assert risk.title == "Pool 'mig' isolation drops from hardware to none"


# unit-memory-shrinks


def mps_l4(replicas: int) -> Edit:
    return lambda d: pool(d, "l4").__setitem__("sharing", {"strategy": "mps", "mps": {"replicas": replicas}})


def test_unit_memory_shrinks__fires_for_time_slicing_to_mps_with_the_pool_sizes_and_running_workloads() -> None:
    before = copy.deepcopy(BASE)
    share_l4(rename=False)(before)
    after = copy.deepcopy(before)
    mps_l4(4)(after)
    found = assess_risks(snapshot(before, "b"), snapshot(after, "a"))
    risk = only([r for r in found if r.code == "unit-memory-shrinks"])
    assert risk.severity is Level.MEDIUM and risk.pools == ("l4",) and risk.nodes == ("l-a", "l-b")
    assert "from 24 GiB to 6 GiB" in risk.title and "time-slicing -> mps" in risk.title
    assert risk.workloads == ("web",) and "Running there: 'web'." in risk.message
    assert risk.details == ("web: no memory need stated; could use up to 24 GiB",)


def test_unit_memory_shrinks__names_the_workloads_whose_memory_need_no_longer_fits() -> None:
    def needs_memory(d: dict[str, Any]) -> None:
        workload(d, "web")["gpu"] = {"memory": "10Gi"}
        d["spec"]["workloads"].append(
            {
                "name": "lean",
                "tenant": "other",
                "pool": "l4",
                "kind": "Deployment",
                "replicas": 1,
                "image": "x",
                "gpu": {"memory": "4Gi"},
            }
        )

    before = copy.deepcopy(BASE)
    needs_memory(before)
    after = copy.deepcopy(before)
    mps_l4(4)(after)
    workload(after, "web")["gpu"] = {"count": 1}  # 10Gi no longer fits an MPS unit, so the new version asks for one
    found = assess_risks(snapshot(before, "b"), snapshot(after, "a"))
    risk = only([r for r in found if r.code == "unit-memory-shrinks"])
    assert risk.workloads == ("lean", "web")
    assert "Needing more than 6 GiB per unit: 'web'." in risk.message
    assert risk.details == (
        "lean: needs 4 GiB per unit; could use up to 24 GiB",
        "web: needs 10 GiB per unit, more than 6 GiB",
    )


def test_unit_memory_shrinks__silent_when_memory_per_unit_stays_or_grows() -> None:
    assert risks_after(share_l4(rename=False), code="unit-memory-shrinks") == [], "time-slices keep the whole memory"
    assert risks_after(set_layout(0, {"1g.10gb": 3, "2g.20gb": 2}), code="unit-memory-shrinks") == [], "MIG: own rule"
    before = copy.deepcopy(BASE)
    mps_l4(4)(before)
    after = copy.deepcopy(BASE)
    mps_l4(2)(after)
    found = assess_risks(snapshot(before, "b"), snapshot(after, "a"))
    assert [r for r in found if r.code == "unit-memory-shrinks"] == []


@pytest.mark.parametrize("rule", [r for r in RULES if r.__name__ != "base_absent"], ids=lambda r: r.__name__)
def test_rules_accept_an_absent_old_version(rule: Callable[[Snapshot, Snapshot], list[Risk]]) -> None:
    assert rule(empty_snapshot("absent"), snapshot(BASE, "a")) == []


# allocation-switched


def on_134(data: dict[str, Any]) -> None:
    data["spec"]["kubernetes"]["version"] = "1.34"  # DRA's resource.k8s.io/v1


def to_dra(name: str) -> Edit:
    return lambda d: pool(d, name).__setitem__("allocation", "dra")


def test_allocation_switched__fires_high_both_ways_with_the_pools_nodes_and_workloads() -> None:
    risk = only(risks_after(on_134, to_dra("a100"), code="allocation-switched"))
    assert risk.severity is Level.HIGH
    assert (risk.pools, risk.nodes, risk.workloads) == (("a100",), ("a-a",), ("batch",))
    assert "from device-plugin to dra" in risk.title
    before = copy.deepcopy(BASE)
    on_134(before)
    to_dra("a100")(before)
    after = copy.deepcopy(BASE)
    on_134(after)
    back = [r for r in assess_risks(snapshot(before, "b"), snapshot(after, "a")) if r.code == "allocation-switched"]
    assert "from dra to device-plugin" in only(back).title


def test_allocation_switched__silent_when_the_allocation_stays() -> None:
    before = copy.deepcopy(BASE)
    on_134(before)
    to_dra("a100")(before)
    after = copy.deepcopy(before)
    after["spec"]["kubernetes"]["version"] = "1.36"
    found = assess_risks(snapshot(before, "b"), snapshot(after, "a"))
    assert [r for r in found if r.code == "allocation-switched"] == []
    assert risks_after(on_134, code="allocation-switched") == []


def test_base_absent__is_high_when_there_is_nothing_to_compare() -> None:
    [risk] = base_absent(empty_snapshot("main:bp.yaml (absent)"), snapshot(BASE, "a"))
    assert risk.severity is Level.HIGH and "main:bp.yaml (absent)" in risk.title
    assert base_absent(snapshot(BASE, "a"), snapshot(BASE, "b")) == []


# object-outside-tenant


def _with_workload_objects(snap: Snapshot, *objects: dict[str, Any]) -> Snapshot:
    plan = snap.plan
    extra = tuple(Manifest("workloads", "workloads/team/web.yaml", obj) for obj in objects)
    snap.__dict__["plan"] = dataclasses.replace(plan, objects=plan.objects + extra)  # what a hostile template adds
    return snap


def test_object_escapes_tenant__flags_new_cluster_scoped_and_foreign_namespace_objects_high() -> None:
    labels = {"gpustack.io/tenant": "team"}
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "team-admin", "labels": labels},
    }
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "kube-system", "labels": labels}}
    own = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "team", "labels": labels}}
    after = _with_workload_objects(snapshot(BASE, "after.yaml"), binding, pod, own)
    found = [r for r in assess_risks(snapshot(BASE, "before.yaml"), after) if r.code == "object-outside-tenant"]
    assert [r.title for r in found] == [
        "New ClusterRoleBinding 'team-admin' cluster-scoped (no namespace), outside its tenant's namespaces",
        "New Pod 'p' in namespace 'kube-system', outside its tenant's namespaces",
    ]
    assert all(r.severity is Level.HIGH and r.tenants == ("team",) for r in found)
    # Already there on the base side: not new, not flagged again.
    before = _with_workload_objects(snapshot(BASE, "before.yaml"), binding, pod)
    assert [r for r in assess_risks(before, after) if r.code == "object-outside-tenant"] == []


# cloud-pool-replaced


def test_cloud_pool_replaced__fires_on_a_machine_type_change_with_the_pods_it_evicts_not_on_a_resize() -> None:
    from builders import blueprint
    from test_cloud import pool

    from gpustack.review.risks import assess_risks
    from gpustack.review.snapshot import Snapshot

    workload = {"name": "svc", "tenant": "t", "pool": "gpus", "kind": "Deployment", "image": "x:1", "gpu": {"count": 1}}
    more = {"workloads": [workload], "tenants": [{"name": "t", "namespaces": ["t"], "pools": ["gpus"]}]}
    old = blueprint(pool("gke", "L4", 1, "g2-standard-4"), **more)
    new = blueprint(pool("gke", "L4", 1, "g2-standard-8"), **more)
    [risk] = [
        r
        for r in assess_risks(Snapshot("old", sourceless(old)), Snapshot("new", sourceless(new)))
        if r.code == "cloud-pool-replaced"
    ]
    assert str(risk.severity) == "high" and risk.pools == ("gpus",) and risk.workloads == ("svc",)
    assert "node_config.machine_type" in risk.title and "evicted" in risk.message
    resized = blueprint(pool("gke", "L4", 1, "g2-standard-4", maxNodes=8), **more)
    assert not [
        r
        for r in assess_risks(Snapshot("old", sourceless(old)), Snapshot("new", sourceless(resized)))
        if r.code.startswith("cloud")
    ]


# karpenter-node-class-changed


def test_node_class_changed__fires_when_a_karpenter_pool_names_another_ec2nodeclass_not_on_a_resize() -> None:
    from builders import blueprint
    from test_cloud import pool

    workload = {"name": "svc", "tenant": "t", "pool": "gpus", "kind": "Deployment", "image": "x:1", "gpu": {"count": 1}}
    more = {"workloads": [workload], "tenants": [{"name": "t", "namespaces": ["t"], "pools": ["gpus"]}]}
    old = blueprint(pool("karpenter", "H100-SXM5-80GB", 8, cloud={"nodeClass": "gpu"}), **more)
    new = blueprint(pool("karpenter", "H100-SXM5-80GB", 8, cloud={"nodeClass": "admin-node-role"}), **more)
    [risk] = [
        r
        for r in assess_risks(Snapshot("old", sourceless(old)), Snapshot("new", sourceless(new)))
        if r.code == "karpenter-node-class-changed"
    ]
    assert str(risk.severity) == "high" and risk.pools == ("gpus",) and risk.workloads == ("svc",)
    assert risk.details == ("nodeClass gpu -> admin-node-role",) and "IAM role" in risk.message
    resized = blueprint(pool("karpenter", "H100-SXM5-80GB", 8, cloud={"nodeClass": "gpu"}, maxNodes=8), **more)
    assert not assess_risks(Snapshot("old", sourceless(old)), Snapshot("new", sourceless(resized)))


# kai-queue-stranded: its cases (KAI tenants, Queues read from both Plans) are in tests/test_kai_review.py


def test_kai_queue_stranded__a_limit_cut_below_running_jobs_names_the_tenant_queue_and_jobs() -> None:
    from test_kai_review import CUT_TRAINING, risks

    parent, leaf = risks(CUT_TRAINING)
    assert parent.severity is Level.MEDIUM and parent.tenants == ("training",) and parent.workloads == ("pretrain",)
    assert "'training.h100'" in parent.title and "'training.h100.training'" in leaf.title

"""spec.stack: the GPU Operator as gpustack installs it, and the standalone device plugin beside it.

What a platform team would notice: values the operator chart really reads, operands that run on tainted pools,
never two device plugins on a node, and an output that applies on a fresh cluster.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from builders import blueprint, context, sourceless
from conftest import CASES, shared_path, shipped_examples

from gpustack.codes import COMBINATION, MIG_WITHOUT_OPERATOR
from gpustack.compile import compile_blueprint
from gpustack.compile.gpu_operator import build_values
from gpustack.compile.nodes import OPERATOR_DEVICE_PLUGIN_LABEL, node_labels
from gpustack.outputs import render_files
from gpustack.plan import Plan
from gpustack.validation import validate_path, validate_text

EXAMPLES = shipped_examples()
H100_MIG = {
    "name": "h100-mig",
    "gpu": {"model": "H100-SXM5-80GB", "count": 8},
    "nodes": ["h1"],
    "taints": [
        {"key": "gpustack.io/pool", "value": "h100-mig", "effect": "NoSchedule"},
        {"key": "example.com/reserved", "effect": "NoExecute"},
    ],
    "sharing": {"strategy": "mig", "mig": {"strategy": "single", "layout": {"3g.40gb": 2}}},
}
A100_MIXED = {
    "name": "a100-mixed",
    "gpu": {"model": "A100-SXM4-80GB", "count": 8},
    "nodes": ["a1"],
    "taints": [{"key": "dedicated", "value": "research", "effect": "NoSchedule"}],
    "sharing": {"strategy": "mig", "mig": {"strategy": "mixed", "layout": {"3g.40gb": 1, "1g.10gb": 4}}},
}
L4 = {"name": "l4", "gpu": {"model": "L4", "count": 4}, "nodes": ["l1"]}
HAMI = {
    "name": "shared",
    "gpu": {"model": "L40S", "count": 4},
    "nodes": ["s1"],
    "sharing": {"strategy": "hami"},
}


def compiled(path: Path) -> Plan:
    result = validate_path(path)
    assert result.blueprint is not None, [d.message for d in result.diagnostics]
    return compile_blueprint(sourceless(result.blueprint))


def key_paths(values: Any, prefix: str = "") -> set[str]:
    """Every mapping key path in `values` (a list's items share their list's path)."""
    if isinstance(values, dict):
        paths = set()
        for key, value in values.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            paths |= {path} | key_paths(value, path)
        return paths
    if isinstance(values, list):
        return set().union(*(key_paths(item, prefix) for item in values)) if values else set()
    return set()


# Keys whose values are free-form maps in the chart (config names, taints, label keys): their children are data.
FREE_FORM = ("devicePlugin.config.data", "migManager.config.data")


def upstream_keys() -> set[str]:
    text = shared_path("conformance", "gpu-operator-values-v26.7.0.yaml").read_text()
    return key_paths(yaml.safe_load(text))


def written_keys(values: dict[str, Any]) -> set[str]:
    return {k for k in key_paths(values) if not any(k.startswith(f"{free}.") for free in FREE_FORM)}


def tolerates(tolerations: list[dict[str, Any]], key: str, value: str | None, effect: str) -> bool:
    """Kubernetes' toleration matching (core/v1 Toleration.ToleratesTaint)."""
    for toleration in tolerations:
        if toleration.get("effect") not in (None, "", effect):
            continue
        if toleration.get("key") not in (None, "", key):
            continue
        if toleration.get("operator", "Equal") == "Exists" or toleration.get("value") == value:
            return True
    return False


@pytest.mark.parametrize(
    "pools", [(H100_MIG, A100_MIXED, L4), (L4,), (HAMI, L4)], ids=["mig-pools", "whole-gpus", "hami-beside"]
)
def test_every_key_gpustack_writes_exists_in_the_upstream_chart(pools: tuple[dict, ...]) -> None:
    # The chart ignores a misspelt key without a word: every key path written must be one values.yaml has.
    bp = blueprint(*pools, stack="gpu-operator", gpuOperator={"driver": False, "toolkit": False, "nfd": True})
    values = build_values(context(bp))
    missing = written_keys(values) - upstream_keys()
    assert not missing, f"not in gpu-operator v26.7.0 values.yaml: {sorted(missing)}"


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_examples_write_only_upstream_operator_keys(example: Path) -> None:
    plan = compiled(example)
    for release in plan.releases:
        if release.chart == "gpu-operator":
            assert written_keys(release.values) <= upstream_keys()


def test_the_mig_manager_and_nfd_tolerate_every_mig_pool_taint() -> None:
    bp = blueprint(H100_MIG, A100_MIXED, L4, stack="gpu-operator")
    values = build_values(context(bp))
    operands = values["daemonsets"]["tolerations"]
    nfd = values["node-feature-discovery"]["worker"]["tolerations"]
    for pool in bp.pools:
        for taint in pool.taints:
            assert tolerates(operands, taint.key, taint.value, taint.effect), (pool.name, taint)
            assert tolerates(nfd, taint.key, taint.value, taint.effect), (pool.name, taint)
    # The chart's own defaults survive the replacement of its lists.
    assert tolerates(operands, "nvidia.com/gpu", "present", "NoSchedule")
    assert tolerates(nfd, "node-role.kubernetes.io/control-plane", "", "NoSchedule")


def test_mig_layouts_and_plugin_configs_travel_in_the_operator_values() -> None:
    ctx = context(blueprint(H100_MIG, L4, stack="gpu-operator"))
    plan = compile_blueprint(sourceless(ctx.blueprint))
    values = next(r for r in plan.releases if r.name == "gpu-operator").values
    mig = yaml.safe_load(values["migManager"]["config"]["data"]["config.yaml"])
    assert mig["mig-configs"]["gpustack-h100-mig"] == [
        {"devices": "all", "mig-enabled": True, "mig-devices": {"3g.40gb": 2}}
    ]
    assert values["migManager"]["config"]["default"] == "all-disabled" and values["migManager"]["config"]["create"]
    config = values["devicePlugin"]["config"]
    h100_key = node_labels(ctx, ctx.pools["h100-mig"])["nvidia.com/device-plugin.config"]
    assert yaml.safe_load(config["data"][h100_key])["flags"]["migStrategy"] == "single"
    assert config["default"] in config["data"]
    # The chart creates both ConfigMaps in its own namespace: gpustack emits no ConfigMap of its own there.
    assert not [m for m in plan.objects if m.kind == "ConfigMap"]
    assert values["mig"] == {"strategy": "single"}


def test_mig_strategy_never_contradicts_a_pool() -> None:
    # MIG_STRATEGY beats each node's config: one strategy is written as is, differing ones leave it to the nodes.
    assert build_values(context(blueprint(L4, stack="gpu-operator")))["mig"] == {"strategy": "none"}
    assert build_values(context(blueprint(A100_MIXED, stack="gpu-operator")))["mig"] == {"strategy": "mixed"}
    assert build_values(context(blueprint(H100_MIG, A100_MIXED, stack="gpu-operator")))["mig"] == {"strategy": ""}


def test_driver_toolkit_and_nfd_follow_what_the_cluster_already_runs() -> None:
    installed = build_values(context(blueprint(L4, stack="gpu-operator")))
    assert (installed["driver"], installed["toolkit"], installed["nfd"]) == (
        {"enabled": True},
        {"enabled": True},
        {"enabled": True},
    )
    present = build_values(
        context(blueprint(L4, stack="gpu-operator", gpuOperator={"driver": False, "toolkit": False, "nfd": False}))
    )
    assert (present["driver"], present["toolkit"], present["nfd"]) == (
        {"enabled": False},
        {"enabled": False},
        {"enabled": False},
    )
    assert "node-feature-discovery" not in present  # no NFD of the operator's to tolerate anything


def test_a_new_blueprint_gets_the_gpu_operator() -> None:
    plan = compiled(CASES / "schema" / "valid" / "minimal.yaml")
    assert [r.name for r in plan.releases] == ["gpu-operator"]
    namespace = plan.find("Namespace", "gpu-operator")
    assert namespace is not None
    assert namespace.obj["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"


def test_never_two_device_plugins_on_one_node() -> None:
    operator = context(blueprint(HAMI, L4, stack="gpu-operator"))
    plan = compile_blueprint(sourceless(operator.blueprint))
    assert {r.name for r in plan.releases} == {"gpu-operator", "hami"}  # no standalone plugin beside the operator's
    # The operator deploys its plugin wherever this label is not "false"; HAMi's plugin owns the HAMi pool.
    assert node_labels(operator, operator.pools["shared"])[OPERATOR_DEVICE_PLUGIN_LABEL] == "false"
    assert OPERATOR_DEVICE_PLUGIN_LABEL not in node_labels(operator, operator.pools["l4"])
    standalone = compile_blueprint(sourceless(blueprint(HAMI, L4, stack="device-plugin")))
    assert {r.name for r in standalone.releases} == {"nvidia-device-plugin", "hami"}


def test_standalone_plugin_with_mig_names_the_operator_as_a_prerequisite() -> None:
    result = validate_path(CASES / "invalid" / "stack-device-plugin-mig.yaml")
    assert [d.code for d in result.diagnostics] == [MIG_WITHOUT_OPERATOR]
    assert result.blueprint is not None
    plan = compile_blueprint(sourceless(result.blueprint))
    (configmap,) = [m for m in plan.objects if m.kind == "ConfigMap"]
    assert [p.namespace for p in plan.prerequisites] == [configmap.namespace] == ["gpu-operator"]
    readme = render_files(plan)["README.md"]
    assert "Prerequisites" in readme and "`gpu-operator`: the GPU Operator's MIG manager" in readme


def test_standalone_plugin_without_mig_pools_emits_nothing_for_a_mig_manager() -> None:
    # An A100 pool of whole GPUs: nothing runs a MIG manager, so no ConfigMap into a namespace nobody created.
    a100 = {"name": "a100", "gpu": {"model": "A100-SXM4-80GB", "count": 8}, "nodes": ["a1"]}
    ctx = context(blueprint(a100, stack="device-plugin"))
    plan = compile_blueprint(sourceless(ctx.blueprint))
    assert not plan.prerequisites and not plan.by_family("mig")
    assert "nvidia.com/mig.config" not in node_labels(ctx, ctx.pools["a100"])


def applied_objects(plan: Plan) -> list[dict[str, Any]]:
    """What `kubectl apply -k` would send: the kustomization's resources, each a file the output holds."""
    files = render_files(plan)
    kustomization = yaml.safe_load(files["kustomization.yaml"])
    assert set(kustomization) == {"apiVersion", "kind", "resources"}  # nothing kustomize would transform
    objects = []
    for resource in kustomization["resources"]:
        assert resource in files, f"kustomization lists {resource}, which the output lacks"
        objects += [doc for doc in yaml.safe_load_all(files[resource]) if doc is not None]
    return objects


CLUSTER_SCOPED = {
    "Namespace",
    "PriorityClass",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
    "ResourceFlavor",
    "ClusterQueue",
    "Queue",
    "SchedulingShard",
    "DeviceClass",
}
EXISTING = {"default", "kube-system", "kube-public", "kube-node-lease"}


@pytest.mark.parametrize(
    "path",
    [*EXAMPLES, CASES / "invalid" / "stack-device-plugin-mig.yaml"],
    ids=lambda p: p.stem,
)
def test_every_namespaced_object_lives_where_the_output_creates_or_names_a_namespace(path: Path) -> None:
    plan = compiled(path)
    objects = applied_objects(plan)
    created = {o["metadata"]["name"] for o in objects if o["kind"] == "Namespace"}
    named = {p.namespace for p in plan.prerequisites}
    for obj in objects:
        assert obj["kind"] != "Node", "a Node in the kustomization would be created if it does not exist"
        if obj["kind"] in CLUSTER_SCOPED:
            assert "namespace" not in obj["metadata"]
            continue
        namespace = obj["metadata"]["namespace"]
        assert namespace in created | named | EXISTING, f"{obj['kind']} {obj['metadata']['name']} in {namespace}"
    # Helm releases go to namespaces `--create-namespace` (and Pulumi's stage 0) make.
    assert all(r.namespace for r in plan.releases)


def test_gpu_operator_settings_with_the_standalone_stack_are_refused_where_written() -> None:
    text = (CASES / "schema" / "valid" / "minimal.yaml").read_text()
    edited = text.replace("spec:\n", "spec:\n  stack: device-plugin\n  gpuOperator: {driver: false}\n", 1)
    diagnostics = validate_text(edited, "edited.yaml").diagnostics
    assert [(d.code, d.json_path) for d in diagnostics] == [(COMBINATION, "$.spec.gpuOperator")]
    assert diagnostics[0].span is not None and diagnostics[0].span.start.line == 8  # the gpuOperator line

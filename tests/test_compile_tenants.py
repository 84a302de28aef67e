"""The tenants family: namespaces, GPU quotas, limit ranges and priority classes, valid for real Kubernetes."""

from __future__ import annotations

import functools
import json
from typing import Any

import manifest_schemas
import pytest

from gpustack.build import build_blueprint
from gpustack.catalog import load_catalog
from gpustack.checks import run_checks
from gpustack.codes import QUOTA_PER_NAMESPACE
from gpustack.compile.tenants import LIMIT_RANGE_NAME, QUOTA_NAME, compile_tenants
from gpustack.context import Context, unplaced
from gpustack.diagnostic import Position, Severity, Span
from gpustack.model import PRIORITY_VALUES, Blueprint
from gpustack.names import MANAGED_BY, TENANT_LABEL
from gpustack.offers import full_resource_name
from gpustack.plan import FamilyOutput, Manifest
from gpustack.validation import validate_text
from gpustack.yamlout import dump_all

VERSIONS = ("1.30", "1.31", manifest_schemas.newest_version())

POOLS: list[dict[str, Any]] = [
    {
        "name": "a100-mig",
        "gpu": {"model": "A100-SXM4-80GB", "count": 8},
        "nodes": ["a1", "a2"],
        "sharing": {"strategy": "mig", "mig": {"strategy": "mixed", "layout": {"3g.40gb": 2}}},
    },
    {
        "name": "l4-shared",
        "gpu": {"model": "L4", "count": 4},
        "nodes": ["l1"],
        "sharing": {"strategy": "time-slicing", "timeSlicing": {"replicas": 4, "renameByDefault": True}},
    },
    {"name": "h100", "gpu": {"model": "H100-SXM5-80GB", "count": 8}, "nodes": ["h1", "h2"]},
    {"name": "l4-small", "gpu": {"model": "L4", "count": 2}, "nodes": ["l2"]},
    {"name": "hami", "gpu": {"model": "L4", "count": 4}, "nodes": ["v1"], "sharing": {"strategy": "hami"}},
]
TENANTS: list[dict[str, Any]] = [
    {
        "name": "search",
        "namespaces": ["search-prod", "search-dev"],
        "pools": ["a100-mig", "l4-shared"],
        "priority": "high",
        "quota": {"a100-mig": {"mig-3g.40gb": 4}, "l4-shared": {"gpu.shared": 8}},
    },
    {
        # Two pools advertise nvidia.com/gpu: one namespace quota holds their sum.
        "name": "research",
        "namespaces": ["research"],
        "pools": ["h100", "l4-small"],
        "quota": {"h100": {"gpu": 16}, "l4-small": {"gpu": 2}},
    },
    {
        "name": "sandbox",
        "namespaces": ["sandbox"],
        "pools": ["l4-small", "hami"],
        "priority": "low",
        "quota": {"l4-small": "unlimited", "hami": "unlimited"},
    },
]


def blueprint(tenants: list[dict[str, Any]], pools: list[dict[str, Any]] = POOLS) -> Blueprint:
    data = {
        "apiVersion": "gpustack.io/v1alpha1",
        "kind": "ClusterBlueprint",
        "metadata": {"name": "tenants"},
        "spec": {"kubernetes": {"version": "1.31"}, "nodePools": pools, "tenants": tenants},
    }
    result = validate_text(json.dumps(data), "test.json")
    assert result.ok, [d.message for d in result.diagnostics]
    return build_blueprint(data)


@functools.cache
def sample() -> Blueprint:
    return blueprint(TENANTS)


def compiled(bp: Blueprint | None = None) -> FamilyOutput:
    return compile_tenants(Context(bp or sample(), load_catalog(), unplaced))


def find(output: FamilyOutput, kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
    matches = [m.obj for m in output.objects if m.kind == kind and m.name == name and m.namespace == namespace]
    assert len(matches) == 1, f"{kind}/{namespace}/{name}: {len(matches)} matches"
    return matches[0]


def test_every_object_is_valid_for_real_kubernetes_strict_schemas() -> None:
    objects = compiled().objects
    assert objects
    for version in VERSIONS:
        errors = [e for m in objects for e in manifest_schemas.validate_any(m.obj, version)]
        assert errors == [], version


def test_a_namespace_per_tenant_namespace_labelled_with_its_tenant() -> None:
    output = compiled()
    for tenant in TENANTS:
        for namespace in tenant["namespaces"]:
            labels = find(output, "Namespace", namespace)["metadata"]["labels"]
            assert labels[TENANT_LABEL] == tenant["name"]
            assert labels.items() >= MANAGED_BY.items()


def test_every_object_carries_gpustack_labels_and_lands_in_its_file() -> None:
    for manifest in compiled().objects:
        assert manifest.obj["metadata"]["labels"].items() >= MANAGED_BY.items()
        if manifest.kind == "PriorityClass":
            assert (manifest.family, manifest.file) == ("cluster", "cluster/priority-classes.yaml")
        else:
            tenant = manifest.obj["metadata"]["labels"][TENANT_LABEL]
            assert (manifest.family, manifest.file) == ("tenants", f"tenants/{tenant}.yaml")


def test_quota_uses_requests_on_the_exact_resource_names_the_pools_advertise() -> None:
    bp = sample()
    ctx = Context(bp, load_catalog(), unplaced)
    output = compile_tenants(ctx)
    hard = find(output, "ResourceQuota", QUOTA_NAME, "search-prod")["spec"]["hard"]
    # its own pools' resources, and a hard zero on what only other pools advertise (H3)
    assert hard == {
        "requests.nvidia.com/gpu": "0",
        "requests.nvidia.com/gpu.shared": "8",
        "requests.nvidia.com/gpucores": "0",
        "requests.nvidia.com/gpumem": "0",
        "requests.nvidia.com/mig-3g.40gb": "4",
    }
    everything = {o.resource for offers in ctx.offers.values() for o in offers}
    for manifest in output.objects:
        if manifest.kind != "ResourceQuota":
            continue
        tenant = next(t for t in bp.tenants if t.name == manifest.obj["metadata"]["labels"][TENANT_LABEL])
        advertised = {o.resource for pool in tenant.pools for o in ctx.offers[pool]}
        closed = {f"requests.{name}" for name in everything - advertised}
        assert closed <= set(manifest.obj["spec"]["hard"])
        for key, amount in manifest.obj["spec"]["hard"].items():
            # limits.<extended> is accepted by the apiserver and never enforced: only requests. may appear
            assert key.startswith("requests.") and not key.startswith("limits.")
            assert key.removeprefix("requests.") in advertised or (key in closed and amount == "0")


def test_pools_sharing_a_resource_name_get_the_sum() -> None:
    hard = find(compiled(), "ResourceQuota", QUOTA_NAME, "research")["spec"]["hard"]
    assert {k: v for k, v in hard.items() if v != "0"} == {"requests.nvidia.com/gpu": "18"}


def test_a_tenant_holding_its_pools_whole_gets_only_zeros_on_other_pools_resources() -> None:
    hard = find(compiled(), "ResourceQuota", QUOTA_NAME, "sandbox")["spec"]["hard"]
    assert hard == {"requests.nvidia.com/gpu.shared": "0", "requests.nvidia.com/mig-3g.40gb": "0"}
    every = ["h100", "hami", "a100-mig", "l4-small", "l4-shared"]
    alone = blueprint([{"name": "v", "namespaces": ["v"], "pools": every, "quota": dict.fromkeys(every, "unlimited")}])
    assert not [m for m in compiled(alone).objects if m.kind == "ResourceQuota"]


def test_short_quota_names_map_to_full_resource_names() -> None:
    assert full_resource_name("gpu") == "nvidia.com/gpu"
    assert full_resource_name("mig-3g.40gb") == "nvidia.com/mig-3g.40gb"


def test_each_namespace_gets_the_tenants_quota_with_a_warning_when_there_are_several() -> None:
    located: list[tuple[Any, ...]] = []

    def locate(path: tuple[Any, ...], key: bool) -> Span:
        located.append(path)
        return Span("bp.yaml", Position(7, 5))

    bp = sample()
    output = compile_tenants(Context(bp, load_catalog(), locate))
    prod = find(output, "ResourceQuota", QUOTA_NAME, "search-prod")["spec"]
    dev = find(output, "ResourceQuota", QUOTA_NAME, "search-dev")["spec"]
    assert prod == dev
    assert output.diagnostics == []  # the rule is a check (GS507), so `validate --strict` sees it too
    [warning] = [d for d in run_checks(Context(bp, load_catalog(), locate)) if d.code == QUOTA_PER_NAMESPACE]
    search = next(t for t in bp.tenants if t.name == "search")
    assert warning.code == QUOTA_PER_NAMESPACE
    assert warning.severity is Severity.WARNING
    assert warning.path == (*search.path, "namespaces")
    assert warning.span == Span("bp.yaml", Position(7, 5))
    assert (*search.path, "namespaces") in located
    assert "2 x quota" in warning.message and "requests.nvidia.com/mig-3g.40gb up to 8" in warning.message
    assert warning.hint is not None and "ClusterQueue" in warning.hint


def test_no_warning_for_a_single_namespace_or_no_quota() -> None:
    tenants = [
        {"name": "one", "namespaces": ["one"], "pools": ["h100"], "quota": {"h100": {"gpu": 8}}},
        {"name": "many", "namespaces": ["many-a", "many-b"], "pools": ["h100"]},
    ]
    bp = blueprint(tenants)
    assert compiled(bp).diagnostics == []
    assert [d for d in run_checks(Context(bp, load_catalog(), unplaced)) if d.code == QUOTA_PER_NAMESPACE] == []


def test_a_priority_class_per_level_in_use_with_its_value() -> None:
    classes = {m.name: m.obj for m in compiled().objects if m.kind == "PriorityClass"}
    assert set(classes) == {"gpustack-high", "gpustack-normal", "gpustack-low"}
    for level in ("high", "normal", "low"):
        obj = classes[f"gpustack-{level}"]
        assert obj["value"] == PRIORITY_VALUES[level]
        assert obj["globalDefault"] is False
        assert obj["description"]


def test_limit_range_caps_gpus_per_container_at_the_most_one_node_offers() -> None:
    output = compiled()
    [item] = find(output, "LimitRange", LIMIT_RANGE_NAME, "search-prod")["spec"]["limits"]
    assert item["type"] == "Container"
    # 8 A100s x 2 slices of 3g.40gb; 4 L4s x 4 time-slicing replicas
    assert item["max"] == {"nvidia.com/gpu.shared": "16", "nvidia.com/mig-3g.40gb": "16"}
    [item] = find(output, "LimitRange", LIMIT_RANGE_NAME, "research")["spec"]["limits"]
    # the larger of 8-GPU and 2-GPU nodes; other pools' resources at 0 (HAMi's names are left to HAMi)
    assert item["max"] == {"nvidia.com/gpu": "8", "nvidia.com/gpu.shared": "0", "nvidia.com/mig-3g.40gb": "0"}


def test_limit_range_defaults_gpus_to_zero_so_cpu_pods_are_not_given_the_max() -> None:
    # LimitRanger defaults a missing `default` to `max`, and refuses containers without a limit on a `max`
    # resource: without an explicit 0 every CPU-only container in the namespace would get 8 GPUs.
    [item] = find(compiled(), "LimitRange", LIMIT_RANGE_NAME, "research")["spec"]["limits"]
    assert item["default"] == {"nvidia.com/gpu": "0", "nvidia.com/gpu.shared": "0", "nvidia.com/mig-3g.40gb": "0"}
    assert all(item["defaultRequest"][name] == "0" for name in item["default"])
    assert set(item["max"]) == set(item["default"])


def test_limit_range_gives_containers_without_requests_cpu_and_memory() -> None:
    for manifest in compiled().objects:
        if manifest.kind == "LimitRange":
            [item] = manifest.obj["spec"]["limits"]
            assert {"cpu", "memory"} <= set(item["defaultRequest"])
            assert "cpu" not in item.get("default", {})  # requests only: no CPU limit imposed on anyone


def test_limit_range_leaves_hami_resources_to_hami() -> None:
    [item] = find(compiled(), "LimitRange", LIMIT_RANGE_NAME, "sandbox")["spec"]["limits"]
    # the l4-small pool's 2 GPUs; the HAMi pool's gpu/gpumem/gpucores mean something else to HAMi
    assert item["max"] == {"nvidia.com/gpu": "2", "nvidia.com/gpu.shared": "0", "nvidia.com/mig-3g.40gb": "0"}
    hami_only = blueprint([{"name": "v", "namespaces": ["v"], "pools": ["hami"]}])
    [item] = find(compiled(hami_only), "LimitRange", LIMIT_RANGE_NAME, "v")["spec"]["limits"]
    # nothing of HAMi's names; only the other pools' own resources, closed at 0
    assert item["max"] == item["default"] == {"nvidia.com/gpu.shared": "0", "nvidia.com/mig-3g.40gb": "0"}


def test_no_tenants_no_objects() -> None:
    output = compiled(blueprint([]))
    assert output.objects == [] and output.diagnostics == []


def _text(objects: list[Manifest]) -> str:
    return dump_all(m.obj for m in objects)


def test_deterministic() -> None:
    first = compiled(blueprint(TENANTS))
    second = compiled(blueprint(TENANTS))
    assert [(m.family, m.file, m.obj) for m in first.objects] == [(m.family, m.file, m.obj) for m in second.objects]
    assert _text(first.objects) == _text(second.objects)
    assert [d.message for d in first.diagnostics] == [d.message for d in second.diagnostics]


@pytest.mark.parametrize("version", VERSIONS)
def test_a_broken_quota_would_be_caught(version: str) -> None:
    quota = find(compiled(), "ResourceQuota", QUOTA_NAME, "research")
    broken = {**quota, "spec": {"hardd": quota["spec"]["hard"]}}
    assert manifest_schemas.validate_any(broken, version)

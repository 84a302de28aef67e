"""The MIG family: a mig-parted config mig-parted will parse, holding only layouts the GPUs can make."""

from __future__ import annotations

import functools
from typing import Any

import pytest
import yaml
from builders import blueprint, context
from conftest import CONFORMANCE, missing_reference
from upstream_rules import mig_parted_config_errors, mig_profile_error

from gpustack.compile.mig import build_config_map, compile_mig, mig_config_label
from gpustack.mig import check_layout
from gpustack.model import Blueprint
from gpustack.plan import FamilyOutput

DEFAULT_MIG_PARTED = CONFORMANCE / "default-mig-parted-config.yaml"


def pool(name: str, model: str, *, count: int = 8, sharing: dict | None = None) -> dict:
    data: dict[str, Any] = {"name": name, "gpu": {"model": model, "count": count}, "nodes": [f"{name}-node"]}
    if sharing is not None:
        data["sharing"] = sharing
    return data


def mig(strategy: str, layout: dict[str, int] | None = None, groups: list[dict] | None = None) -> dict:
    block: dict[str, Any] = {"strategy": strategy}
    if groups is not None:
        block["groups"] = groups
    else:
        block["layout"] = layout
    return {"strategy": "mig", "mig": block}


@functools.cache
def mixed() -> Blueprint:
    return blueprint(
        pool("a100", "A100-SXM4-80GB", sharing=mig("mixed", {"1g.10gb": 2, "3g.40gb": 1, "2g.20gb": 1, "4g.40gb": 0})),
        pool(
            "h100",
            "H100-SXM5-80GB",
            count=4,
            sharing=mig(
                "mixed",
                groups=[
                    {"devices": [2, 3], "layout": {"1g.10gb": 7}},
                    {"devices": [1, 0], "layout": {"7g.80gb": 1}},
                ],
            ),
        ),
        pool("a30", "A30", count=2, sharing=mig("single", {"1g.6gb": 4})),
        pool("whole-a100", "A100-SXM4-40GB"),
        pool("l4", "L4"),
        migManager={"namespace": "gpu-ops", "configMap": "my-mig-config"},
    )


def parsed(output: FamilyOutput) -> dict:
    (manifest,) = output.objects
    return yaml.safe_load(manifest.obj["data"]["config.yaml"])


def test_configmap_lands_where_the_mig_manager_reads_it() -> None:
    (manifest,) = compile_mig(context(mixed())).objects
    assert manifest.family == "mig"
    assert manifest.obj["apiVersion"] == "v1"
    assert manifest.obj["kind"] == "ConfigMap"
    assert manifest.obj["metadata"]["name"] == "my-mig-config"
    assert manifest.obj["metadata"]["namespace"] == "gpu-ops"
    assert list(manifest.obj["data"]) == ["config.yaml"]
    assert list(manifest.obj) == ["apiVersion", "kind", "metadata", "data"]


def test_one_named_config_per_mig_pool_plus_all_disabled() -> None:
    configs = parsed(compile_mig(context(mixed())))["mig-configs"]
    assert list(configs) == ["all-disabled", "gpustack-a100", "gpustack-h100", "gpustack-a30"]
    assert configs["all-disabled"] == [{"devices": "all", "mig-enabled": False}]
    assert configs["gpustack-a100"] == [
        {"devices": "all", "mig-enabled": True, "mig-devices": {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2}}
    ]
    assert configs["gpustack-h100"] == [
        {"devices": [2, 3], "mig-enabled": True, "mig-devices": {"1g.10gb": 7}},
        {"devices": [0, 1], "mig-enabled": True, "mig-devices": {"7g.80gb": 1}},
    ]


def test_mig_devices_are_largest_first_without_zero_counts() -> None:
    devices = parsed(compile_mig(context(mixed())))["mig-configs"]["gpustack-a100"][0]["mig-devices"]
    assert list(devices) == ["3g.40gb", "2g.20gb", "1g.10gb"]


def test_config_passes_the_mig_parted_rules() -> None:
    assert mig_parted_config_errors(parsed(compile_mig(context(mixed())))) == []


def test_every_layout_can_be_made_on_the_pools_gpu() -> None:
    bp = mixed()
    ctx = context(bp)
    configs = parsed(compile_mig(ctx))["mig-configs"]
    checked = 0
    for bp_pool in bp.pools:
        label = mig_config_label(ctx, bp_pool)
        if label is None or label == "all-disabled":
            continue
        model = ctx.models[bp_pool.name]
        assert model is not None and model.mig is not None
        for entry in configs[label]:
            result = check_layout(model.mig, entry["mig-devices"])
            assert result.valid, (bp_pool.name, entry, result.problems)
            checked += 1
    assert checked == 4


def test_labels_select_pool_configs_or_all_disabled() -> None:
    ctx = context(mixed())
    labels = {p.name: mig_config_label(ctx, p) for p in mixed().pools}
    assert labels == {
        "a100": "gpustack-a100",
        "h100": "gpustack-h100",
        "a30": "gpustack-a30",
        "whole-a100": "all-disabled",
        "l4": None,
    }
    configs = parsed(compile_mig(ctx))["mig-configs"]
    assert all(label in configs for label in labels.values() if label is not None)


def test_mig_capable_gpus_alone_get_all_disabled_where_a_mig_manager_runs() -> None:
    # The GPU Operator's MIG manager runs on every MIG-capable node: it must keep them whole.
    ctx = context(blueprint(pool("whole", "H100-SXM5-80GB"), stack="gpu-operator"))
    assert mig_config_label(ctx, ctx.pools["whole"]) == "all-disabled"
    assert yaml.safe_load(build_config_map(ctx)["data"]["config.yaml"]) == {
        "version": "v1",
        "mig-configs": {"all-disabled": [{"devices": "all", "mig-enabled": False}]},
    }
    # The standalone plugin with no MIG pool: no MIG manager runs, so nothing is written for one.
    assert compile_mig(context(blueprint(pool("whole", "H100-SXM5-80GB")))) == FamilyOutput()


def test_nothing_without_mig_capable_gpus() -> None:
    assert compile_mig(context(blueprint(pool("l4", "L4"), pool("t4", "T4")))) == FamilyOutput()


def test_readme_says_how_to_point_the_operator_at_the_config() -> None:
    (artifact,) = compile_mig(context(mixed())).artifacts
    assert artifact.path == "mig/README.md"
    assert "migManager:" in artifact.text
    assert "name: my-mig-config" in artifact.text
    assert "config.yaml" in artifact.text
    assert "| `a100` | `gpustack-a100` |" in artifact.text


def test_compiling_twice_gives_equal_output() -> None:
    assert compile_mig(context(mixed())) == compile_mig(context(mixed()))


def test_mig_parted_rules_reject_what_mig_parted_rejects() -> None:
    entry = {"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": 7}}
    good = {"version": "v1", "mig-configs": {"x": [entry]}}
    assert mig_parted_config_errors(good) == []
    assert mig_parted_config_errors({"mig-configs": {"x": [entry]}}) == ["unable to parse with missing 'version' field"]
    assert mig_parted_config_errors({**good, "version": "v2"}) == ["unknown version: v2"]
    assert mig_parted_config_errors({**good, "extra": 1}) == ["unexpected field: extra"]
    assert mig_parted_config_errors({"version": "v1", "mig-configs": {"x": []}}) == [
        "at least one entry in 'x' is required"
    ]

    def entry_errors(**changes: Any) -> list[str]:
        return mig_parted_config_errors({"version": "v1", "mig-configs": {"x": [{**entry, **changes}]}})

    assert entry_errors(devices="some") == ["invalid string input for 'devices': some"]
    assert entry_errors(devices=[0, 1]) == []
    assert entry_errors(**{"mig-enabled": False}) == ["MIG devices included when 'mig-enabled' is false"]
    assert entry_errors(**{"mig-devices": {"1g.10gb": 0}}) == [
        "error validating values in 'mig-devices' field: all counts for all MigProfiles are 0"
    ]
    assert entry_errors(**{"mig-devices": {"3g.40": 1}}) == [
        "error validating values in 'mig-devices' field: invalid format for '3g.40': "
        "cannot parse fields of '3g.40': missing 'gb' from '%dgb'"
    ]
    assert entry_errors(**{"mig-devices": {}}) == []  # all-enabled: MIG on, no instances
    assert entry_errors(colour="blue") == ["unexpected field: colour"]
    no_devices = {"version": "v1", "mig-configs": {"x": [{"devices": "all", "mig-enabled": True}]}}
    assert mig_parted_config_errors(no_devices) == ["missing required field 'mig-devices' when 'mig-enabled' is true"]


@pytest.mark.parametrize(
    "profile", ["1g.10gb", "1c.2g.20gb", "1g.10gb+me", "1g.24gb+me.all", "2g.48gb+gfx", "1g.24gb-me"]
)
def test_profile_syntax_accepts_go_nvlib_names(profile: str) -> None:
    assert mig_profile_error(profile) is None


@pytest.mark.parametrize(
    ("profile", "error"),
    [
        ("", "profile is the empty string"),
        ("1g", "cannot parse fields of '1g': parsed wrong number of fields, expected 2 or 3"),
        ("xg.10gb", "cannot parse fields of 'xg.10gb': malformed number in '%dg'"),
        ("1g.10gb+me-x", "profile '1g.10gb+me-x' contains both '+/-' attributes"),
        ("1g.10gb+", "cannot parse attributes of '1g.10gb+': empty attribute in list"),
        ("1g.10gb+.me", "cannot parse attributes of '1g.10gb+.me': attribute begins/ends with a dot"),
    ],
)
def test_profile_syntax_rejects_malformed_names(profile: str, error: str) -> None:
    assert mig_profile_error(profile) == error


@pytest.mark.conformance
def test_rules_accept_the_gpu_operators_own_config() -> None:
    if not DEFAULT_MIG_PARTED.exists():
        pytest.skip(
            missing_reference(
                "The GPU Operator's default MIG configuration (default-mig-parted-config.yaml)",
                "gpustack's MIG rules against NVIDIA's own layouts",
            )
        )
    config_map = yaml.safe_load(DEFAULT_MIG_PARTED.read_text(encoding="utf-8"))
    config = yaml.safe_load(config_map["data"]["config.yaml"])
    assert len(config["mig-configs"]) > 50
    assert mig_parted_config_errors(config) == []

"""The device-plugin family: one Helm release whose per-pool configs the plugin will accept."""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import yaml
from builders import blueprint, context
from conftest import missing_reference
from upstream_rules import device_plugin_config_errors

from gpustack.compile.device_plugin import (
    DEFAULT_CONFIG_KEY,
    KEY_PATTERN,
    MAX_KEY_LENGTH,
    assign_config_keys,
    compile_device_plugin,
    device_plugin_config_key,
)
from gpustack.model import Blueprint
from gpustack.names import POOL_LABEL
from gpustack.plan import HelmRelease

REPO = Path(__file__).resolve().parents[1]
CONFORMANCE = REPO.parent / "shared" / "conformance"
CHART_VALUES = CONFORMANCE / "device-plugin-values.yaml"
# Label-value syntax (blueprint-format.md `label-value`); a config key is also a ConfigMap key, a looser syntax.
LABEL_VALUE = KEY_PATTERN
CONFIGMAP_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")


def pool(name: str, model: str = "L4", *, count: int = 1, nodes: list[str] | None = None, **extra: Any) -> dict:
    return {"name": name, "gpu": {"model": model, "count": count}, "nodes": nodes or [f"{name}-node"], **extra}


def time_slicing(replicas: int, **extra: Any) -> dict:
    return {"strategy": "time-slicing", "timeSlicing": {"replicas": replicas, **extra}}


def mps(replicas: int) -> dict:
    return {"strategy": "mps", "mps": {"replicas": replicas}}


def mig(strategy: str, layout: dict[str, int]) -> dict:
    return {"strategy": "mig", "mig": {"strategy": strategy, "layout": layout}}


HAMI = {"strategy": "hami", "hami": {"splitCount": 4}}


def release(bp: Blueprint) -> HelmRelease:
    (only,) = compile_device_plugin(context(bp)).releases
    return only


def configs(bp: Blueprint) -> dict[str, dict]:
    """Config key -> the parsed config file, as the plugin reads it."""
    return {key: yaml.safe_load(text) for key, text in release(bp).values["config"]["map"].items()}


@functools.cache
def mixed() -> Blueprint:
    """One pool of every kind; the time-sliced pools share a setup, the HAMi pool is not the plugin's."""
    return blueprint(
        pool("whole", taints=[{"key": "gpu-pool", "value": "whole", "effect": "NoSchedule"}]),
        pool(
            "dev-a", sharing=time_slicing(4), taints=[{"key": "gpu-pool", "value": "dev", "effect": "PreferNoSchedule"}]
        ),
        pool("dev-b", sharing=time_slicing(4), taints=[{"key": "dedicated", "effect": "NoExecute"}]),
        pool("shared", sharing=time_slicing(4, renameByDefault=True)),
        pool("inference", "L40S", sharing=mps(8)),
        pool("a100-mixed", "A100-SXM4-80GB", sharing=mig("mixed", {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2})),
        pool("a100-single", "A100-SXM4-80GB", sharing=mig("single", {"1g.10gb": 7})),
        pool("hami", sharing=HAMI, taints=[{"key": "hami-only", "value": "yes", "effect": "NoSchedule"}]),
        devicePlugin={"flags": {"failOnInitError": True, "deviceListStrategy": "envvar", "deviceIDStrategy": "uuid"}},
    )


def test_release_identity_comes_from_the_blueprint() -> None:
    bp = blueprint(pool("a"), devicePlugin={"chartVersion": "0.19.3", "namespace": "gpu-plugins"})
    out = release(bp)
    assert (out.name, out.chart, out.version, out.namespace) == (
        "nvidia-device-plugin",
        "nvidia-device-plugin",
        "0.19.3",
        "gpu-plugins",
    )
    assert out.repository == "https://nvidia.github.io/k8s-device-plugin"
    assert out.values_file == "device-plugin/values.yaml"


def test_pools_with_the_same_setup_share_one_config() -> None:
    keys = assign_config_keys(context(mixed()))
    assert keys["dev-a"] == keys["dev-b"] == "time-slicing-4"
    assert set(configs(mixed())) == {
        "whole-gpu",
        "time-slicing-4",
        "time-slicing-4-renamed",
        "mps-8",
        "mig-mixed",
        "mig-single",
    }


def test_assign_config_keys_read_as_the_setup() -> None:
    assert assign_config_keys(context(mixed())) == {
        "whole": "whole-gpu",
        "dev-a": "time-slicing-4",
        "dev-b": "time-slicing-4",
        "shared": "time-slicing-4-renamed",
        "inference": "mps-8",
        "a100-mixed": "mig-mixed",
        "a100-single": "mig-single",
    }


def test_different_setups_with_one_readable_name_get_the_pool_name() -> None:
    bp = blueprint(
        pool("plain", sharing=time_slicing(4)),
        pool("indexed", sharing=time_slicing(4), devicePlugin={"flags": {"deviceIDStrategy": "index"}}),
        pool("whole-indexed", devicePlugin={"flags": {"deviceIDStrategy": "index"}}),
    )
    keys = assign_config_keys(context(bp))
    assert keys == {
        "plain": "time-slicing-4",
        "indexed": "time-slicing-4-indexed",
        "whole-indexed": "whole-gpu-whole-indexed",
    }
    parsed = configs(bp)
    assert parsed["time-slicing-4-indexed"]["flags"]["plugin"]["deviceIDStrategy"] == "index"
    assert "plugin" not in parsed["time-slicing-4"]["flags"]
    # The plain whole-GPU default is still there for unlabelled nodes.
    assert parsed[DEFAULT_CONFIG_KEY] == {"version": "v1", "flags": {"migStrategy": "none"}}


def test_keys_stay_valid_label_values_when_pool_names_are_long() -> None:
    long_a = "a" * 62 + "b"
    long_b = "a" * 62 + "c"
    bp = blueprint(
        pool("base", sharing=time_slicing(4)),
        pool(long_a, sharing=time_slicing(4), nodes=["n1"], devicePlugin={"flags": {"deviceIDStrategy": "index"}}),
        pool(long_b, sharing=time_slicing(4), nodes=["n2"], devicePlugin={"flags": {"passDeviceSpecs": True}}),
        pool("c" * 63, sharing=time_slicing(4, failRequestsGreaterThanOne=False), nodes=["n3"]),
    )
    keys = assign_config_keys(context(bp))
    assert len(set(keys.values())) == 4, keys
    for key in keys.values():
        assert len(key) <= MAX_KEY_LENGTH
        assert LABEL_VALUE.match(key), key


def test_every_key_is_a_valid_label_value_and_configmap_key() -> None:
    for key in configs(mixed()):
        assert len(key) <= MAX_KEY_LENGTH
        assert LABEL_VALUE.match(key), key
        assert CONFIGMAP_KEY.match(key), key


def test_default_config_exists_in_the_map() -> None:
    bp = blueprint(pool("dev", sharing=time_slicing(2)), pool("mps", "L40S", sharing=mps(4)))
    values = release(bp).values
    assert values["config"]["default"] == DEFAULT_CONFIG_KEY
    assert DEFAULT_CONFIG_KEY in values["config"]["map"]
    assert configs(bp)[DEFAULT_CONFIG_KEY] == {"version": "v1", "flags": {"migStrategy": "none"}}


def test_configs_are_yaml_strings_the_chart_can_embed() -> None:
    for text in release(mixed()).values["config"]["map"].values():
        assert isinstance(text, str)
        assert yaml.safe_load(text)["version"] == "v1"


def test_every_config_passes_the_upstream_rules() -> None:
    for key, config in configs(mixed()).items():
        assert device_plugin_config_errors(config) == [], key


def test_upstream_rules_reject_broken_configs_with_upstream_messages() -> None:
    def errors(config: dict) -> list[str]:
        return device_plugin_config_errors(config)

    good = {"version": "v1", "flags": {"migStrategy": "none"}}
    assert errors(good) == []
    assert errors({**good, "version": "v2"}) == ["unknown version: v2"]
    assert errors({"version": "v1", "flags": {"migStrategy": "both"}}) == ["unknown MIG strategy: both"]
    assert errors({"version": "v1", "flags": {"plugin": {"deviceIDStrategy": "serial"}}}) == [
        "invalid --device-id-strategy option: serial"
    ]
    assert errors({"version": "v1", "flags": {"plugin": {"deviceListStrategy": ["envvar", "cdi"]}}}) == [
        "invalid --device-list-strategy option: invalid strategy: cdi"
    ]
    one = {"version": "v1", "sharing": {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 1}]}}}
    assert errors(one) == ["number of replicas must be >= 2"]
    assert errors({"version": "v1", "sharing": {"timeSlicing": {"resources": []}}}) == ["no resources specified"]
    assert errors({"version": "v1", "sharing": {"timeSlicing": {"resources": [{"replicas": 2}]}}}) == [
        "no resource name specified"
    ]
    assert errors({"version": "v1", "sharing": {"timeSlicing": {"resources": [{"name": "gpu"}]}}}) == [
        "no replicas specified"
    ]
    mps_block = {"resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}
    assert errors({"version": "v1", "flags": {"migStrategy": "none"}, "sharing": {"mps": mps_block}}) == [
        "using MPS requires --mps-root to be specified"
    ]
    mixed = {"migStrategy": "mixed", "mpsRoot": "/run/nvidia/mps"}
    assert errors({"version": "v1", "flags": mixed, "sharing": {"mps": mps_block}}) == [
        "using --mig-strategy=mixed is not supported with MPS"
    ]
    single = {"migStrategy": "single", "mpsRoot": "/run/nvidia/mps"}
    assert errors({"version": "v1", "flags": single, "sharing": {"mps": mps_block}}) == [
        "sharing using MPS is not supported for MIG devices"
    ]
    # gpustack's own strictness: the plugin would silently drop a misspelt key.
    assert errors({"version": "v1", "flags": {"migstrategy": "mixed"}}) == [
        "gpustack: unknown field 'flags.migstrategy' (the device plugin would silently ignore it)"
    ]


def test_flags_merge_cluster_defaults_with_pool_overrides() -> None:
    bp = blueprint(
        pool("cdi", devicePlugin={"flags": {"deviceListStrategy": ["cdi-cri", "envvar"], "deviceIDStrategy": "index"}}),
        devicePlugin={"flags": {"failOnInitError": False, "nvidiaDriverRoot": "/run/nvidia/driver"}},
    )
    config = configs(bp)[device_plugin_config_key(context(bp), bp.pools[0])]
    assert config["flags"] == {
        "migStrategy": "none",
        "failOnInitError": False,
        "nvidiaDriverRoot": "/run/nvidia/driver",
        "plugin": {"deviceListStrategy": ["cdi-cri", "envvar"], "deviceIDStrategy": "index"},
    }
    assert device_plugin_config_errors(config) == []


def test_sharing_blocks_follow_the_pool() -> None:
    parsed = configs(mixed())
    assert parsed["time-slicing-4"]["sharing"] == {
        "timeSlicing": {
            "renameByDefault": False,
            "failRequestsGreaterThanOne": True,
            "resources": [{"name": "nvidia.com/gpu", "replicas": 4}],
        }
    }
    assert parsed["time-slicing-4-renamed"]["sharing"]["timeSlicing"]["renameByDefault"] is True
    assert parsed["mps-8"]["flags"]["mpsRoot"] == "/run/nvidia/mps"
    assert parsed["mps-8"]["flags"]["migStrategy"] == "none"
    assert parsed["mps-8"]["sharing"]["mps"]["resources"] == [{"name": "nvidia.com/gpu", "replicas": 8}]
    assert parsed["mig-mixed"]["flags"]["migStrategy"] == "mixed"
    assert parsed["mig-single"]["flags"]["migStrategy"] == "single"
    assert "sharing" not in parsed["mig-mixed"]


def test_top_level_flag_values_are_left_unset() -> None:
    # Set at the top level they become environment variables that beat every per-node config.
    values = release(mixed()).values
    for key in (
        "migStrategy",
        "failOnInitError",
        "deviceListStrategy",
        "deviceIDStrategy",
        "nvidiaDriverRoot",
        "compatWithCPUManager",
    ):
        assert key not in values


def test_affinity_selects_the_pools_the_plugin_serves_and_never_hami() -> None:
    terms = release(mixed()).values["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"] == [
        {
            "matchExpressions": [
                {
                    "key": POOL_LABEL,
                    "operator": "In",
                    "values": ["whole", "dev-a", "dev-b", "shared", "inference", "a100-mixed", "a100-single"],
                }
            ]
        }
    ]


def test_no_release_when_every_pool_runs_hami() -> None:
    assert compile_device_plugin(context(blueprint(pool("a", sharing=HAMI), pool("b", sharing=HAMI)))).releases == []


def _tolerates(toleration: dict, taint: dict) -> bool:
    """Kubernetes' Toleration.ToleratesTaint."""
    if toleration.get("effect") and toleration["effect"] != taint["effect"]:
        return False
    if toleration.get("key") and toleration["key"] != taint["key"]:
        return False
    operator = toleration.get("operator", "Equal")
    if operator == "Exists":
        return True
    return operator == "Equal" and toleration.get("value", "") == taint.get("value", "")


def test_tolerations_cover_every_taint_of_the_served_pools() -> None:
    tolerations = release(mixed()).values["tolerations"]
    for bp_pool in mixed().pools:
        if bp_pool.name == "hami":
            continue
        for taint in bp_pool.taints:
            as_object = {"key": taint.key, "value": taint.value or "", "effect": taint.effect}
            assert any(_tolerates(t, as_object) for t in tolerations), (bp_pool.name, as_object)


def test_tolerations_keep_the_chart_defaults_and_add_one_per_taint_key_and_effect() -> None:
    assert release(mixed()).values["tolerations"] == [
        {"key": "CriticalAddonsOnly", "operator": "Exists"},
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "gpu-pool", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "gpu-pool", "operator": "Exists", "effect": "PreferNoSchedule"},
        {"key": "dedicated", "operator": "Exists", "effect": "NoExecute"},
    ]


def test_a_taint_the_charts_own_tolerations_cover_is_not_listed_twice() -> None:
    """GKE taints every GPU node pool nvidia.com/gpu=present:NoSchedule; the chart's list already tolerates it (and
    CriticalAddonsOnly of any effect), so the values list each once (issue 32: the toleration was listed twice)."""
    bp = blueprint(
        pool(
            "gke-l4",
            taints=[
                {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
                {"key": "CriticalAddonsOnly", "effect": "NoExecute"},
                {"key": "gpu-pool", "value": "l4", "effect": "NoSchedule"},
            ],
        )
    )
    assert release(bp).values["tolerations"] == [
        {"key": "CriticalAddonsOnly", "operator": "Exists"},
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "gpu-pool", "operator": "Exists", "effect": "NoSchedule"},
    ]


class _Taint(NamedTuple):
    key: str
    value: str | None
    effect: str


def _toleration_lists(value: Any, path: str = "") -> list[tuple[str, list[dict]]]:
    if isinstance(value, dict):
        found = [
            (f"{path}.{key}", item) for key, item in value.items() if key == "tolerations" and isinstance(item, list)
        ]
        return found + [hit for key, item in value.items() for hit in _toleration_lists(item, f"{path}.{key}")]
    if isinstance(value, list):
        return [hit for index, item in enumerate(value) for hit in _toleration_lists(item, f"{path}[{index}]")]
    return []


@pytest.mark.parametrize(
    "path",
    sorted([*REPO.glob("blueprints/*.yaml"), *REPO.glob("blueprints/cloud/*.yaml")]),
    ids=lambda path: path.relative_to(REPO).as_posix(),
)
@pytest.mark.parametrize("stack", ["as written", "device-plugin"])
def test_no_chart_values_list_a_toleration_an_earlier_one_covers(path: Path, stack: str) -> None:
    """Every example (and each on the standalone device plugin): no toleration in any chart's values is tolerated
    by one listed before it, so none is written twice."""
    from gpustack.compile import compile_blueprint
    from gpustack.taints import read_toleration
    from gpustack.validation import validate_text

    text = path.read_text(encoding="utf-8")
    if stack == "device-plugin":
        if "\n  gpuOperator:" in text or "\n  stack:" in text:
            pytest.skip("the example chooses its stack")
        text = text.replace("\nspec:\n", "\nspec:\n  stack: device-plugin\n", 1)
    result = validate_text(text, str(path))
    if result.context is None or not result.ok:
        pytest.skip("not valid as a standalone blueprint")
    for chart in compile_blueprint(result.context).releases:
        for where, tolerations in _toleration_lists(chart.values):
            for index, raw in enumerate(tolerations):
                if not raw.get("key") or raw.get("operator") != "Exists":
                    continue
                taint = _Taint(raw["key"], None, raw.get("effect") or "NoSchedule")
                earlier = [read_toleration(t) for t in tolerations[:index]]
                assert not any(t is not None and t.tolerates(taint) for t in earlier), (chart.name, where, raw)


def test_gfd_follows_the_blueprint() -> None:
    assert release(blueprint(pool("a"))).values["gfd"] == {"enabled": True}
    assert release(blueprint(pool("a"), devicePlugin={"gfd": False})).values["gfd"] == {"enabled": False}


def _shape(value: Any) -> Any:
    """The chart values as a shape: mappings of keys, lists merged over their items, leaves as None."""
    if isinstance(value, dict):
        return {key: _shape(item) for key, item in value.items()}
    if isinstance(value, list):
        merged: dict[str, Any] = {}
        for item in value:
            if isinstance(item, dict):
                merged.update(_shape(item))
        return [merged] if merged else []
    return None


def _unknown_paths(ours: Any, chart: Any, path: str) -> list[str]:
    if path == "config.map":
        return []  # config names are free-form keys
    if isinstance(ours, dict):
        if chart == {}:
            return []  # an empty mapping in the chart (nodeSelector: {}) is passed through as written
        if not isinstance(chart, dict):
            return [f"{path} (the chart has no mapping here)"]
        problems = []
        for key, value in ours.items():
            child = f"{path}.{key}" if path else key
            if key not in chart:
                problems.append(child)
            else:
                problems += _unknown_paths(value, chart[key], child)
        return problems
    if isinstance(ours, list):
        if not isinstance(chart, list):
            return [f"{path} (the chart has no list here)"]
        item_shape = chart[0] if chart else {}
        return [p for i, item in enumerate(ours) for p in _unknown_paths(item, item_shape, f"{path}[{i}]")]
    return []


@pytest.mark.conformance
def test_every_value_path_exists_in_the_chart_values() -> None:
    if not CHART_VALUES.exists():
        pytest.skip(
            missing_reference(
                "The NVIDIA device plugin chart's own values.yaml", "that every Helm value gpustack writes exists"
            )
        )
    chart = _shape(yaml.safe_load(CHART_VALUES.read_text(encoding="utf-8")))
    assert _unknown_paths(release(mixed()).values, chart, "") == []
    # The check itself notices a key the chart does not have.
    assert _unknown_paths({"gfd": {"enable": True}}, chart, "") == ["gfd.enable"]


def test_compiling_twice_gives_equal_output() -> None:
    assert compile_device_plugin(context(mixed())) == compile_device_plugin(context(mixed()))


_DUMP_ALL_FAMILIES = """
import sys, yaml
from gpustack.build import build_blueprint
from gpustack.catalog import load_catalog
from gpustack.compile import device_plugin, mig, nodes, topology
from gpustack.context import Context, unplaced
ctx = Context(build_blueprint(yaml.safe_load(sys.stdin.read())), load_catalog(), unplaced)
for family in (device_plugin.compile_device_plugin, mig.compile_mig, nodes.compile_nodes, topology.compile_topology):
    print(repr(family(ctx)))
"""


def test_output_does_not_depend_on_hash_randomisation() -> None:
    path = REPO / "blueprints" / "seed-article.yaml"
    if not path.exists():
        pytest.skip("the example blueprint blueprints/seed-article.yaml was removed from this checkout")
    outputs = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", _DUMP_ALL_FAMILIES],
            input=path.read_text(encoding="utf-8"),
            capture_output=True,
            text=True,
            env=env,
            cwd=REPO,
            check=True,
        )
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1]
    assert "gpu-operator" in outputs[0]

"""Issue 27 item 2: import preserves what is there, so applying the imported blueprint's output to the cluster it came
from changes no config a running pod depends on.

A cluster running NVIDIA's standalone device plugin chart stays on it (stack: device-plugin; installing the GPU
Operator beside it would be a second plugin for the same GPUs); each device-plugin config the nodes select compiles
back to the config the cluster holds, flags included (a dropped passDeviceSpecs or nvidiaDriverRoot costs running
pods their GPUs); a config an admin wrote in a shape the plugin would not read is a note, never a traceback.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from gpustack.cluster.importer import import_snapshot
from gpustack.cluster.snapshot import parse_snapshot
from gpustack.compile import compile_blueprint
from gpustack.validation import validate_text
from gpustack.yamlout import dump_yaml

T4_CONFIG = {
    "version": "v1",
    "flags": {
        "migStrategy": "none",
        "failOnInitError": False,
        "nvidiaDriverRoot": "/run/nvidia/driver",
        "plugin": {"passDeviceSpecs": True, "deviceListStrategy": ["volume-mounts", "cdi-cri"]},
    },
    "sharing": {
        "timeSlicing": {
            "renameByDefault": False,
            "failRequestsGreaterThanOne": True,
            "resources": [{"name": "nvidia.com/gpu", "replicas": 4}],
        }
    },
}
A10_CONFIG = {
    "version": "v1",
    "flags": {"migStrategy": "none", "plugin": {"deviceIDStrategy": "index"}},
    "sharing": {
        "timeSlicing": {
            "renameByDefault": True,
            "failRequestsGreaterThanOne": False,
            "resources": [{"name": "nvidia.com/gpu", "replicas": 2}],
        }
    },
}


def _node(name: str, product: str, config: str, replicas: int, resource: str) -> dict[str, Any]:
    labels = {
        "nvidia.com/gpu.product": product,
        "nvidia.com/gpu.count": "1",
        "nvidia.com/gpu.replicas": str(replicas),
        "nvidia.com/gpu.sharing-strategy": "time-slicing",
        "nvidia.com/device-plugin.config": config,
    }
    allocatable = {resource: str(replicas), "cpu": "8", "memory": "32Gi", "pods": "110"}
    status = {"allocatable": allocatable, "nodeInfo": {"kubeletVersion": "v1.31.2"}}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}, "status": status}


def _cluster(configs: dict[str, Any], *extra: dict[str, Any], namespace: str = "nvidia-device-plugin") -> str:
    nodes = [
        _node("t4-1", "Tesla-T4-SHARED", "Tesla-T4", 4, "nvidia.com/gpu"),
        _node("a10-1", "NVIDIA-A10", "A10", 2, "nvidia.com/gpu.shared"),
    ]
    texts = {key: value if isinstance(value, str) else dump_yaml(value) for key, value in configs.items()}
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "nvidia-device-plugin-configs", "namespace": namespace},
        "data": texts,
    }
    return dump_yaml({"apiVersion": "v1", "kind": "List", "items": [*nodes, config_map, *extra]})


def _imported(text: str) -> tuple[dict[str, Any], str]:
    result = import_snapshot(parse_snapshot(text, "cluster.yaml"), "kept")
    check = validate_text(result.text, "imported.yaml")
    assert check.ok, [d.message for d in check.diagnostics]
    return result.data, result.text


def _compiled_configs(text: str) -> dict[str, Any]:
    check = validate_text(text, "imported.yaml")
    assert check.context is not None
    (release,) = [r for r in compile_blueprint(check.context).releases if r.name == "nvidia-device-plugin"]
    return {key: yaml.safe_load(value) for key, value in release.values["config"]["map"].items()}


def test_the_standalone_plugins_configs_compile_back_to_what_the_cluster_holds() -> None:
    data, text = _imported(_cluster({"Tesla-T4": T4_CONFIG, "A10": A10_CONFIG}))
    assert data["spec"]["stack"] == "device-plugin"
    assert "# guessed: stack: device-plugin: the device plugin's configs are in ConfigMap" in text
    compiled = _compiled_configs(text)
    assert compiled["Tesla-T4"] == T4_CONFIG
    assert compiled["A10"] == A10_CONFIG


def test_flags_every_configured_pool_shares_are_written_once_for_the_cluster() -> None:
    shared = {"failOnInitError": False, "plugin": {"passDeviceSpecs": True}}
    configs = {
        key: {**config, "flags": {"migStrategy": "none", **shared}}
        for key, config in (("Tesla-T4", T4_CONFIG), ("A10", A10_CONFIG))
    }
    data, text = _imported(_cluster(configs))
    assert data["spec"]["devicePlugin"] == {"flags": {"failOnInitError": False, "passDeviceSpecs": True}}
    assert all("flags" not in pool.get("devicePlugin", {}) for pool in data["spec"]["nodePools"])
    compiled = _compiled_configs(text)
    assert compiled["Tesla-T4"] == configs["Tesla-T4"] and compiled["A10"] == configs["A10"]


def test_a_cluster_policy_means_the_operator_runs_the_plugin() -> None:
    """Configs where the standalone chart keeps them, but a ClusterPolicy too: the operator's plugin serves the nodes,
    and a standalone plugin beside it would advertise the same GPUs twice."""
    policy = {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "cluster-policy"}}
    data, text = _imported(_cluster({"Tesla-T4": T4_CONFIG}, policy))
    assert "stack" not in data["spec"] and "stack: device-plugin" not in text


REPLICAS = ("sharing", "timeSlicing", "resources", 0, "replicas")
PLUGIN = ("flags", "plugin")
UNREAD: list[tuple[tuple[Any, ...], Any, str]] = [
    (REPLICAS, "lots", "timeSlicing: the device plugin config 'Tesla-T4' gives replicas 'lots', not a count"),
    (REPLICAS, [1], "gives replicas [1], not a count"),
    (REPLICAS, 2.5, "gives replicas 2.5, not a count"),
    (REPLICAS, True, "gives replicas True, not a count"),
    ((*PLUGIN, "passDeviceSpecs"), "yes", "devicePlugin.flags.passDeviceSpecs: the device plugin config 'Tesla-T4'"),
    (("flags", "nvidiaDriverRoot"), "run/nvidia", "devicePlugin.flags.nvidiaDriverRoot: the device plugin config"),
    ((*PLUGIN, "deviceListStrategy"), ["envvar", "envvar"], "devicePlugin.flags.deviceListStrategy: the device"),
    ((*PLUGIN, "deviceIDStrategy"), "serial", "devicePlugin.flags.deviceIDStrategy: the device plugin config"),
]


@pytest.mark.parametrize(("path", "value", "note"), UNREAD, ids=[f"{p[-1]}={v!r}" for p, v, _ in UNREAD])
def test_a_config_value_the_plugin_would_not_read_is_a_note_never_a_traceback(
    path: tuple[Any, ...], value: Any, note: str
) -> None:
    config = copy.deepcopy(T4_CONFIG)
    target: Any = config
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    data, imported = _imported(_cluster({"Tesla-T4": config}))
    assert note in imported
    (t4,) = [pool for pool in data["spec"]["nodePools"] if pool["nodes"] == ["t4-1"]]
    assert t4["gpu"] == {"model": "T4", "count": 1}


def test_an_unreadable_mig_parted_count_is_not_guessed_at() -> None:
    """mig-devices {1g.10gb: lots}: the layout is read from the node's MIG counts instead, and the note says the
    config could not be read (not that it is missing)."""
    labels = {
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        "nvidia.com/gpu.count": "8",
        "nvidia.com/mig.strategy": "mixed",
        "nvidia.com/mig.config": "custom",
        "nvidia.com/mig-1g.10gb.count": "56",
    }
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "h100-1", "labels": labels},
        "status": {"allocatable": {"nvidia.com/mig-1g.10gb": "56"}},
    }
    parted = (
        "version: v1\nmig-configs:\n  custom:\n  - {devices: all, mig-enabled: true, mig-devices: {1g.10gb: lots}}\n"
    )
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "default-mig-parted-config", "namespace": "gpu-operator"},
        "data": {"config.yaml": parted},
    }
    data, text = _imported(dump_yaml({"apiVersion": "v1", "kind": "List", "items": [node, config_map]}))
    (pool,) = data["spec"]["nodePools"]
    assert pool["sharing"]["mig"]["layout"] == {"1g.10gb": 7}
    assert "the mig-parted config 'custom' could not be read" in text


def _released(config_map_name: str, release: str) -> str:
    """The standalone plugin installed as another release: its ConfigMap is named after it, and Helm's annotation
    says which release made it."""
    text = _cluster({"Tesla-T4": T4_CONFIG})
    data = yaml.safe_load(text)
    (config_map,) = [item for item in data["items"] if item["kind"] == "ConfigMap"]
    config_map["metadata"]["name"] = config_map_name
    config_map["metadata"]["annotations"] = {"meta.helm.sh/release-name": release}
    return dump_yaml(data)


def test_the_standalone_plugins_release_name_is_kept() -> None:
    """`helm install nvdp nvidia/nvidia-device-plugin`: the chart's ConfigMap is nvdp-nvidia-device-plugin-configs.
    Compiled as `nvidia-device-plugin`, Helm would install a second plugin beside nvdp's."""
    data, text = _imported(_released("nvdp-nvidia-device-plugin-configs", "nvdp"))
    assert data["spec"]["stack"] == "device-plugin" and data["spec"]["devicePlugin"]["releaseName"] == "nvdp"
    check = validate_text(text, "imported.yaml")
    assert check.context is not None
    releases = compile_blueprint(check.context).releases
    assert [(r.name, r.chart, r.namespace) for r in releases] == [
        ("nvdp", "nvidia-device-plugin", "nvidia-device-plugin")
    ]


def test_the_operators_release_name_is_kept_from_its_cluster_policy() -> None:
    policy = {
        "apiVersion": "nvidia.com/v1",
        "kind": "ClusterPolicy",
        "metadata": {"name": "cluster-policy", "annotations": {"meta.helm.sh/release-name": "nvidia-gpu-operator"}},
        "status": {"namespace": "nvidia-gpu-operator", "state": "ready"},
    }
    data, text = _imported(_cluster({"Tesla-T4": T4_CONFIG}, policy))
    assert data["spec"]["gpuOperator"] == {"namespace": "nvidia-gpu-operator", "releaseName": "nvidia-gpu-operator"}
    check = validate_text(text, "imported.yaml")
    assert check.context is not None
    (release,) = [r for r in compile_blueprint(check.context).releases if r.chart == "gpu-operator"]
    assert (release.name, release.namespace) == ("nvidia-gpu-operator", "nvidia-gpu-operator")


@pytest.mark.parametrize("release", ["Bad Name", "x" * 54, "-lead", "a..b"])
def test_a_release_name_no_helm_release_can_have_is_noted_and_the_default_kept(release: str) -> None:
    data, text = _imported(_released("nvidia-device-plugin-configs", release))
    assert "releaseName" not in data["spec"].get("devicePlugin", {})
    assert "which no Helm release can be called; ignored" in text

"""The topology family: KubeletConfiguration fragments for pools that ask for NUMA alignment."""

from __future__ import annotations

from typing import Any

import yaml
from builders import blueprint

from gpustack.catalog import load_catalog
from gpustack.compile.topology import compile_topology
from gpustack.context import Context, unplaced
from gpustack.model import Blueprint

# KubeletConfiguration (kubelet.config.k8s.io/v1beta1) fields this family may write.
KUBELET_FIELDS = {"apiVersion", "kind", "topologyManagerPolicy", "topologyManagerScope", "cpuManagerPolicy"}


def pool(name: str, nodes: list[str], topology: dict | None = None) -> dict:
    data: dict[str, Any] = {"name": name, "gpu": {"model": "H100-SXM5-80GB", "count": 8}, "nodes": nodes}
    if topology is not None:
        data["topology"] = topology
    return data


def artifacts(bp: Blueprint) -> dict[str, str]:
    return {a.path: a.text for a in compile_topology(Context(bp, load_catalog(), unplaced)).artifacts}


SAMPLE = blueprint(
    pool("training", ["gpu-3", "gpu-4"], {"policy": "single-numa-node", "scope": "pod"}),
    pool("inference", ["gpu-1"], {"policy": "best-effort"}),
    pool("plain", ["gpu-9"]),
)


def test_one_fragment_per_pool_with_topology() -> None:
    assert list(artifacts(SAMPLE)) == [
        "topology/training.kubelet-config.yaml",
        "topology/inference.kubelet-config.yaml",
    ]


def test_strict_policy_pins_cpus_too() -> None:
    config = yaml.safe_load(artifacts(SAMPLE)["topology/training.kubelet-config.yaml"])
    assert config == {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "topologyManagerPolicy": "single-numa-node",
        "topologyManagerScope": "pod",
        "cpuManagerPolicy": "static",
    }
    assert set(config) <= KUBELET_FIELDS


def test_best_effort_aligns_without_the_static_cpu_manager() -> None:
    config = yaml.safe_load(artifacts(SAMPLE)["topology/inference.kubelet-config.yaml"])
    assert config == {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "topologyManagerPolicy": "best-effort",
        "topologyManagerScope": "container",
    }


def test_comment_names_the_nodes_and_what_the_policy_needs() -> None:
    text = artifacts(SAMPLE)["topology/training.kubelet-config.yaml"]
    comment = "\n".join(line for line in text.splitlines() if line.startswith("#"))
    assert text.startswith("# ")
    for needed in (
        "gpu-3",
        "gpu-4",
        "restart the kubelet",
        "Guaranteed",
        "requests == limits",
        "reservedSystemCPUs",
        "cpu_manager_state",
    ):
        assert needed in comment, needed
    best_effort = artifacts(SAMPLE)["topology/inference.kubelet-config.yaml"]
    assert "cpuManagerPolicy" not in best_effort


def test_nothing_without_topology() -> None:
    assert artifacts(blueprint(pool("plain", ["gpu-9"]))) == {}


def test_compiling_twice_gives_equal_output() -> None:
    assert artifacts(SAMPLE) == artifacts(SAMPLE)

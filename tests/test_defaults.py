"""Every default lives once, in the schema's `default`: build reads each one from there and writes none itself."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import gpustack.defaults as d
from gpustack.build import build_blueprint

Read = Callable[[Any], Any]  # a path into the built Blueprint; the optional records are there in `sparse()`
POOLS = {"plain": 0, "sliced": 1, "hami": 2, "cloudy": 3, "mig-sliced": 4}

# Every default in the schema, a value that differs from it, and where build puts it.
CHANGED: dict[tuple[str, str], tuple[Any, Read]] = {
    (d.DEVICE_PLUGIN, "chartVersion"): ("9.9.9", lambda b: b.device_plugin.chart_version),
    (d.DEVICE_PLUGIN, "repository"): ("https://example.com/charts", lambda b: b.device_plugin.repository),
    (d.DEVICE_PLUGIN, "namespace"): ("dp", lambda b: b.device_plugin.namespace),
    (d.DEVICE_PLUGIN, "releaseName"): ("nvdp", lambda b: b.device_plugin.release_name),
    (d.DEVICE_PLUGIN, "gfd"): (False, lambda b: b.device_plugin.gfd),
    (d.SPEC, "stack"): ("device-plugin", lambda b: str(b.stack)),
    (d.GPU_OPERATOR, "chartVersion"): ("v9.9.9", lambda b: b.gpu_operator.chart_version),
    (d.GPU_OPERATOR, "repository"): ("https://example.com/nvidia", lambda b: b.gpu_operator.repository),
    (d.GPU_OPERATOR, "namespace"): ("nv", lambda b: b.gpu_operator.namespace),
    (d.GPU_OPERATOR, "releaseName"): ("nvidia-gpu-operator", lambda b: b.gpu_operator.release_name),
    (d.GPU_OPERATOR, "nfd"): (False, lambda b: b.gpu_operator.nfd),
    (d.DRA, "chartVersion"): ("9.9.9", lambda b: b.dra.chart_version),
    (d.DRA, "namespace"): ("dra", lambda b: b.dra.namespace),
    (d.DRA, "nvidiaDriverRoot"): ("/run/nvidia/driver", lambda b: b.dra.nvidia_driver_root),
    (d.NODE_POOL, "allocation"): ("dra", lambda b: str(b.pools[0].allocation)),
    (d.MIG_MANAGER, "namespace"): ("mig", lambda b: b.mig_manager.namespace),
    (d.MIG_MANAGER, "configMap"): ("parted", lambda b: b.mig_manager.config_map),
    (d.HAMI_RELEASE, "chartVersion"): ("9.9.9", lambda b: b.hami.chart_version),
    (d.HAMI_RELEASE, "repository"): ("https://example.com/hami", lambda b: b.hami.repository),
    (d.HAMI_RELEASE, "namespace"): ("hami", lambda b: b.hami.namespace),
    (d.HAMI_RELEASE, "schedulerName"): ("other-scheduler", lambda b: b.hami.scheduler_name),
    (d.KUEUE, "apiVersion"): ("kueue.x-k8s.io/v1beta1", lambda b: b.kueue.api_version),
    (d.KUEUE, "chartVersion"): ("9.9.9", lambda b: b.kueue.chart_version),
    (d.KUEUE, "namespace"): ("kq", lambda b: b.kueue.namespace),
    (d.VOLCANO, "binpack"): (True, lambda b: b.volcano.binpack),
    (d.VOLCANO, "chartVersion"): ("9.9.9", lambda b: b.volcano.chart_version),
    (d.VOLCANO, "namespace"): ("vc", lambda b: b.volcano.namespace),
    (d.NODE_POOL, "sharing"): (
        {"strategy": "time-slicing", "timeSlicing": {"replicas": 3}},
        lambda b: (str(b.pools[0].sharing.strategy), b.pools[0].sharing.replication.replicas),
    ),
    (d.CLOUD, "spot"): (True, lambda b: b.pools[3].cloud.spot),
    (d.CLOUD, "nodeClass"): ("gpu", lambda b: b.pools[3].cloud.node_class),
    (d.TOPOLOGY, "scope"): ("pod", lambda b: b.pools[0].topology.scope),
    (d.REPLICATED_SHARING, "renameByDefault"): (True, lambda b: b.pools[1].sharing.replication.rename_by_default),
    (d.REPLICATED_SHARING, "failRequestsGreaterThanOne"): (
        False,
        lambda b: b.pools[1].sharing.replication.fail_requests_greater_than_one,
    ),
    (d.HAMI_SHARING, "splitCount"): (4, lambda b: b.pools[2].sharing.hami.split_count),
    (d.HAMI_SHARING, "memoryScaling"): (1.5, lambda b: b.pools[2].sharing.hami.memory_scaling),
    (d.HAMI_SHARING, "coreScaling"): (2.0, lambda b: b.pools[2].sharing.hami.core_scaling),
    (d.TENANT, "priority"): ("high", lambda b: b.tenants[0].priority),
    (d.TENANT, "scheduler"): ("volcano", lambda b: str(b.tenants[0].scheduler)),
    (d.TENANT_VOLCANO, "weight"): (7, lambda b: b.tenants[0].volcano.weight),
    (d.TENANT_VOLCANO, "reclaimable"): (False, lambda b: b.tenants[0].volcano.reclaimable),
    (d.WORKLOAD, "replicas"): (3, lambda b: b.workloads[0].replicas),
    (d.WORKLOAD_GPU, "count"): (2, lambda b: b.workloads[0].gpu.count),
    (d.WORKLOAD_GPU, "shareable"): (True, lambda b: b.workloads[0].gpu.shareable),
    (d.WORKLOAD_CLAIM, "share"): ("pods", lambda b: str(b.workloads[0].gpu.claim.share)),
    (d.MIG_TIME_SLICING, "renameByDefault"): (True, lambda b: b.pools[4].sharing.mig.time_slicing.rename_by_default),
    (d.MIG_TIME_SLICING, "failRequestsGreaterThanOne"): (
        False,
        lambda b: b.pools[4].sharing.mig.time_slicing.fail_requests_greater_than_one,
    ),
    (d.SERVE, "path"): ("/ready", lambda b: b.workloads[0].serve.path),
    (d.SERVE, "startupSeconds"): (60, lambda b: b.workloads[0].serve.startup_seconds),
}
# List defaults: an absent list is an empty one (read from the schema like the rest, checked by the recording test).
EMPTY_LISTS = {(d.SPEC, "tenants"), (d.SPEC, "workloads")}
EXPECTED_CHANGES = {
    (d.NODE_POOL, "sharing"): ("time-slicing", 3),
}


def _schema_defaults(node: Any, pointer: str = "#") -> Iterator[tuple[str, str]]:
    """(object pointer, property) for every property the schema gives a default."""
    if isinstance(node, dict):
        for name, sub in node.get("properties", {}).items():
            if isinstance(sub, dict) and "default" in sub:
                yield pointer, name
        for key, sub in node.items():
            yield from _schema_defaults(sub, f"{pointer}/{key}")
    elif isinstance(node, list):
        for index, sub in enumerate(node):
            yield from _schema_defaults(sub, f"{pointer}/{index}")


def sparse() -> dict[str, Any]:
    """A blueprint that leaves out everything it may, so build must fill in every default."""
    return {
        "apiVersion": "gpustack.io/v1alpha1",
        "kind": "ClusterBlueprint",
        "metadata": {"name": "sparse"},
        "spec": {
            "kubernetes": {"version": "1.31"},
            "nodePools": [
                {
                    "name": "plain",
                    "gpu": {"model": "A100-SXM4-80GB", "count": 8},
                    "nodes": ["a"],
                    "topology": {"policy": "x"},
                },
                {
                    "name": "sliced",
                    "gpu": {"model": "T4", "count": 1},
                    "nodes": ["t"],
                    "sharing": {"strategy": "time-slicing", "timeSlicing": {"replicas": 2}},
                },
                {"name": "hami", "gpu": {"model": "L4", "count": 1}, "nodes": ["h"], "sharing": {"strategy": "hami"}},
                {"name": "cloudy", "gpu": {"model": "L4", "count": 1}, "count": 1, "cloud": {"provider": "gke"}},
                {
                    "name": "mig-sliced",
                    "gpu": {"model": "A100-SXM4-40GB", "count": 1},
                    "nodes": ["m"],
                    "sharing": {
                        "strategy": "mig",
                        "mig": {
                            "strategy": "mixed",
                            "layout": {"1g.5gb": 7},
                            "timeSlicing": {"replicas": {"1g.5gb": 2}},
                        },
                    },
                },
            ],
            "tenants": [{"name": "team", "namespaces": ["team"], "pools": ["plain"], "volcano": {}}],
            "workloads": [
                {
                    "name": "web",
                    "tenant": "team",
                    "pool": "plain",
                    "kind": "Deployment",
                    "image": "x:1",
                    "gpu": {"claim": {}},
                    "serve": {"port": 8000},
                }
            ],
        },
    }


def test_the_table_covers_every_default_in_the_schema() -> None:
    assert set(_schema_defaults(d._schema())) == set(CHANGED) | EMPTY_LISTS


def test_build_reads_every_default_from_the_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    read: set[tuple[str, str]] = set()
    original = d.schema_default

    def recording(where: str, name: str) -> Any:
        read.add((where, name))
        return original(where, name)

    monkeypatch.setattr(d, "schema_default", recording)
    build_blueprint(sparse())
    data = sparse()
    del data["spec"]["tenants"], data["spec"]["workloads"]
    assert build_blueprint(data).tenants == () and build_blueprint(data).workloads == ()
    assert read == set(CHANGED) | EMPTY_LISTS


def test_changing_a_default_in_the_schema_changes_what_build_applies(monkeypatch: pytest.MonkeyPatch) -> None:
    schema = copy.deepcopy(d._schema())
    for (where, name), (value, _) in CHANGED.items():
        node = schema
        for part in where.removeprefix("#/").split("/"):
            node = node[part]
        assert node["properties"][name]["default"] != value, (where, name)
        node["properties"][name]["default"] = value
    monkeypatch.setattr(d, "_schema", lambda: schema)
    built = build_blueprint(sparse())
    for key, (value, where_built) in CHANGED.items():
        assert where_built(built) == EXPECTED_CHANGES.get(key, value), key


def test_the_unchanged_schema_gives_the_documented_defaults() -> None:
    built = build_blueprint(sparse())
    assert built.device_plugin.chart_version == "0.20.0" and built.device_plugin.gfd is True
    assert str(built.pools[0].sharing.strategy) == "none" and built.pools[0].topology is not None
    assert built.pools[0].topology.scope == "container"
    assert (built.workloads[0].replicas, built.workloads[0].gpu.count) == (1, 1)

"""Test support: the cluster snapshot a blueprint would leave behind once applied and GFD has run.

Node labels and taints come from the compiled Plan (what gpustack writes); the GFD labels and allocatable
resources are what GPU Feature Discovery and the device plugin write for that setup (see
../shared/reference/research/nvidia-device-plugin.md §3), so import and drift can be tested against them.
A selector pool's nodes are the ones its provider made: they carry the selector's labels and the labels and
taints of `nodes/<pool>.node-pool.yaml`. The ConfigMaps are the ones the charts create from their values: the
standalone device plugin's in its namespace, or (stack: gpu-operator) the operator's device-plugin and MIG
manager ConfigMaps in the operator's namespace, named by `devicePlugin.config.name` / `migManager.config.name`.
"""

from __future__ import annotations

import copy
from typing import Any

from builders import sourceless

from gpustack.catalog import load_catalog
from gpustack.compile import compile_blueprint
from gpustack.compile.nodes import node_labels, node_taints
from gpustack.context import Context, unplaced
from gpustack.model import Blueprint, MigStrategy, NodePool, SharingStrategy
from gpustack.offers import pool_offers
from gpustack.simulate.inventory import selector_labels
from gpustack.yamlout import dump_yaml


def gfd_labels(bp: Blueprint, pool_name: str) -> dict[str, str]:
    pool = bp.pool(pool_name)
    assert pool is not None
    model = load_catalog().resolve(pool.gpu.model)
    assert model is not None
    labels = {"nvidia.com/gpu.product": model.product_label, "nvidia.com/gpu.count": str(pool.gpu.count)}
    sharing = pool.sharing
    if sharing.replication is not None:
        labels["nvidia.com/gpu.replicas"] = str(sharing.replication.replicas)
        labels["nvidia.com/gpu.sharing-strategy"] = str(sharing.strategy)
        if not sharing.replication.rename_by_default:
            labels["nvidia.com/gpu.product"] += "-SHARED"
    if sharing.strategy is SharingStrategy.MIG and sharing.mig is not None:
        labels["nvidia.com/mig.strategy"] = str(sharing.mig.strategy)
        labels["nvidia.com/mig.config.state"] = "success"
        totals: dict[str, int] = {}
        for group in sharing.mig.groups:
            devices = len(group.devices) if group.devices is not None else pool.gpu.count
            for profile, count in group.instances.items():
                totals[profile] = totals.get(profile, 0) + count * devices
        if sharing.mig.strategy is MigStrategy.SINGLE:
            ((profile, total),) = totals.items()
            labels["nvidia.com/gpu.product"] += f"-MIG-{profile}"
            labels["nvidia.com/gpu.count"] = str(total)
        else:
            labels.update({f"nvidia.com/mig-{p}.count": str(n) for p, n in totals.items()})
            sliced = sharing.mig.time_slicing
            if sliced is not None:  # GFD labels each time-sliced profile with its replicas
                labels.update({f"nvidia.com/mig-{p}.replicas": str(sliced.replicas) for p in totals})
    return labels


def _nodes(bp: Blueprint) -> list[tuple[NodePool, str, dict[str, str], list[Any]]]:
    """(pool, node, labels gpustack's output puts there, taints) for every node the blueprint implies."""
    plan = compile_blueprint(sourceless(bp))
    taints = {m.obj["metadata"]["name"]: m.obj["spec"]["taints"] for m in plan.by_family("node-taints")}
    out = []
    for manifest in plan.by_family("nodes"):
        name = manifest.obj["metadata"]["name"]
        pool = next(p for p in bp.pools if name in p.nodes)
        out.append((pool, name, manifest.obj["metadata"]["labels"], taints.get(name, [])))
    ctx = Context(bp, load_catalog(), unplaced)
    for pool in bp.pools:
        if pool.selector is None:
            continue
        # An autoscaled pool at its most (what quotas plan for); the provider names nodes after the pool.
        labels = {**selector_labels(pool), **node_labels(ctx, pool)}
        for index in range(1, pool.node_count + 1):
            out.append((pool, f"{pool.name}-{index}", labels, node_taints(pool)))
    return out


def snapshot_data(bp: Blueprint, version: str = "v1.31.4") -> dict[str, Any]:
    """A `v1 List` of the blueprint's nodes, labelled and tainted as compiled, plus the plugin and MIG ConfigMaps."""
    plan = compile_blueprint(sourceless(bp))
    items: list[dict[str, Any]] = []
    for pool, name, labels, taints in _nodes(bp):
        model = load_catalog().resolve(pool.gpu.model) if pool.gpu is not None else None
        allocatable = {"cpu": "32", "memory": "256Gi", "pods": "110"}
        for offer in pool_offers(pool, model) if pool.allocation == "device-plugin" else ():
            allocatable[offer.resource] = str(offer.per_node)  # a DRA node's GPUs are in ResourceSlices instead
        gfd = gfd_labels(bp, pool.name) if pool.gpu is not None else {}
        node: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {**labels, **gfd}},
            "status": {"allocatable": allocatable, "nodeInfo": {"kubeletVersion": version}},
        }
        if taints:
            node["spec"] = {"taints": taints}
        items.append(node)
    for release in plan.releases:
        if release.name == "nvidia-device-plugin":
            items.append(
                _config_map("nvidia-device-plugin-configs", release.namespace, release.values["config"]["map"])
            )
        if release.name == "gpu-operator":
            # The operator's chart creates these from its values (config.create: true).
            for component in ("devicePlugin", "migManager"):
                config = release.values.get(component, {}).get("config")
                if config is not None and config.get("create"):
                    items.append(_config_map(config["name"], release.namespace, config["data"]))
    for manifest in plan.objects:
        if manifest.kind == "ConfigMap" and manifest.family == "mig":
            items.append(_config_map(manifest.name, manifest.namespace or "gpu-operator", manifest.obj["data"]))
        if manifest.kind in ("Namespace", "ResourceQuota", "ValidatingAdmissionPolicyBinding", "LocalQueue", "Queue"):
            items.append(manifest.obj)
    # Each item its own copy, for tests to edit: compiled objects share parts (a pool's nodes share one taint list),
    # and deepcopy of the whole would keep them shared.
    return {"apiVersion": "v1", "kind": "List", "items": [copy.deepcopy(item) for item in items]}


def _config_map(name: str, namespace: str, data: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": data,
    }


def snapshot_text(bp: Blueprint, version: str = "v1.31.4") -> str:
    return dump_yaml(snapshot_data(bp, version))

"""Node labels and taints: what ties a node to its pool, its device-plugin config and its MIG layout.

A static pool (`nodes:`) names existing nodes; a selector pool (`selector:`) is whatever nodes its provider
(a cloud node pool, Karpenter) creates, so gpustack cannot label them: the provider must, at node creation.

- `nodes/label-nodes.sh`: plain `kubectl label`/`kubectl taint` calls for the static pools, one taint at a time,
  which add or update gpustack's labels and taints and leave everyone else's alone. `kubectl label` fails on a
  node that does not exist: a misspelt or not-yet-created node is reported, never created.
- `nodes/<pool>.node-pool.yaml` for each selector pool: exactly the labels and taints its provider's node pool
  must carry (GKE `node_config.labels`/`taints`, EKS NodeGroup `labels`/`taints`, AKS `nodeLabels`/`nodeTaints`,
  Karpenter NodePool `spec.template`), so every new node starts with its device-plugin config and MIG layout.
- `nodes/nodes.yaml` and `nodes/taints.yaml`: the static pools' labels and taints as Node objects, for review and
  for Pulumi (which checks each node exists before patching it). NOT in the kustomization: applying a Node that
  does not exist creates an empty one, and `spec.taints` is an atomic list that would take over every other
  manager's taints.

Each pool's labels, taints and MIG config are derived once per Context (`pool_nodes`) and handed to the Plan as
`PoolNodes`, which deploy, rollout, drift and review read instead of calling into this module.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from types import MappingProxyType

from gpustack.compile import resource_slices
from gpustack.compile.device_plugin import device_plugin_config_key
from gpustack.compile.mig import mig_config_label
from gpustack.context import Context
from gpustack.dra import is_dra
from gpustack.model import Allocation, NodePool, SharingStrategy, Stack
from gpustack.names import (
    DEVICE_PLUGIN_CONFIG_LABEL,
    HAMI_NODE_LABELS,
    MIG_CONFIG_LABEL,
    OPERATOR_DEVICE_PLUGIN_LABEL,
    POOL_LABEL,
)
from gpustack.plan import (
    NODE_TAINTS_FAMILY,
    NODES_FAMILY,
    Artifact,
    FamilyOutput,
    Manifest,
    NodeTaint,
    Object,
    PoolNodes,
)
from gpustack.selection import describe_selection
from gpustack.taints import taint_object, taint_text
from gpustack.yamlout import dump_yaml

FAMILY = NODES_FAMILY
TAINTS_FAMILY = NODE_TAINTS_FAMILY  # kept out of the kustomization: see the module docstring
NODES_FILE = "nodes/nodes.yaml"
TAINTS_FILE = "nodes/taints.yaml"
SCRIPT_FILE = "nodes/label-nodes.sh"
VERIFY_FILE = "verify-nodes.sh"


def node_pool_file(pool: NodePool) -> str:
    return f"nodes/{pool.name}.node-pool.yaml"


def node_labels(ctx: Context, pool: NodePool) -> Mapping[str, str]:
    """Every label gpustack sets on a pool's nodes: its own keys first, then the pool's labels.

    Read-only: derived once per context and shared by every Node patch of the pool (and the Plan's `PoolNodes`).
    """
    return pool_nodes(ctx)[pool.name].labels


def pool_nodes(ctx: Context) -> dict[str, PoolNodes]:
    """Pool name -> what gpustack sets on its nodes, derived once per context, in blueprint order."""
    return ctx.derive("nodes.pools", _pool_nodes)


def _pool_nodes(ctx: Context) -> dict[str, PoolNodes]:
    shared = _shared_labels(ctx)
    return {
        pool.name: PoolNodes(
            pool=pool.name,
            nodes=pool.nodes if pool.selector is None else (),
            selector=describe_selection(pool) if pool.selector is not None else None,
            # A view of the dict the pool's Node patches share: nothing changes it through the Plan.
            labels=MappingProxyType(shared[pool.name]),
            taints=tuple(NodeTaint(t.key, t.value, t.effect) for t in pool.taints),
            mig_config=mig_config_label(ctx, pool),
        )
        for pool in ctx.blueprint.pools
    }


def _shared_labels(ctx: Context) -> dict[str, dict[str, str]]:
    """Pool name -> the one labels dict its Node patches share (plain data, as every plan object is: marshal and
    the YAML writer take it as it is); only this module holds it as a dict."""
    return ctx.derive("nodes.labels", lambda ctx: {pool.name: _labels(ctx, pool) for pool in ctx.blueprint.pools})


def _labels(ctx: Context, pool: NodePool) -> dict[str, str]:
    """A pool label may not reuse a key gpustack owns (validation rejects it); should one slip through,
    gpustack's value wins, since the device plugin and MIG manager act on it."""
    labels = {POOL_LABEL: pool.name}
    if pool.sharing.strategy is SharingStrategy.HAMI:
        # What HAMi's device plugin selects its nodes by (hami.py); the NVIDIA plugin stays off these nodes.
        labels.update(HAMI_NODE_LABELS)
        if ctx.blueprint.stack is Stack.GPU_OPERATOR:
            labels[OPERATOR_DEVICE_PLUGIN_LABEL] = "false"  # HAMi's plugin owns these GPUs: never two plugins
    elif pool.gpu is not None and pool.allocation is Allocation.DRA:
        if ctx.blueprint.stack is Stack.GPU_OPERATOR:
            labels[OPERATOR_DEVICE_PLUGIN_LABEL] = "false"  # the DRA driver owns these GPUs: never a plugin too
    elif pool.gpu is not None:  # a CPU-only pool has no device plugin to configure
        labels[DEVICE_PLUGIN_CONFIG_LABEL] = device_plugin_config_key(ctx, pool)
    mig = mig_config_label(ctx, pool)
    if mig is not None:
        labels[MIG_CONFIG_LABEL] = mig
    for key, value in pool.labels:
        labels.setdefault(key, value)
    return labels


def node_taints(pool: NodePool) -> list[Object]:
    """The pool's taints as core/v1 Taint objects, in blueprint order."""
    return [taint_object(taint) for taint in pool.taints]


def build_node_patch(node: str, labels: dict[str, str]) -> Object:
    """The labels gpustack sets on one node (node_labels), as a server-side-apply patch.

    `labels` is a pool's one mapping, shared by its nodes' patches: written out in full, never changed.
    """
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node, "labels": labels}}


def build_taint_patch(node: str, spec: Object) -> Object:
    """The pool's taints on one node, as a patch that owns the node's whole taint list.

    `spec` is `{"taints": node_taints(pool)}`, one per pool, shared by its nodes' patches: never changed.
    """
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}, "spec": spec}


def _command(words: list[str]) -> str:
    return " ".join(shlex.quote(word) for word in words)


def render_label_script(ctx: Context) -> str:
    """A POSIX sh script that labels and taints every node as nodes.yaml does; safe to rerun."""
    lines = [
        "#!/bin/sh",
        f"# Generated by gpustack from blueprint '{ctx.blueprint.name}': node labels and taints. Edit the blueprint,"
        " not this file.",
        "# The labels of nodes.yaml and the taints of taints.yaml, one taint at a time: other taints stay.",
        "# --overwrite makes a rerun update values in place; labels and taints removed from the blueprint stay",
        "# on the nodes until removed by hand (kubectl label node NODE KEY-, kubectl taint node NODE KEY:EFFECT-).",
        "set -eu",
    ]
    for pool in ctx.blueprint.pools:
        lines += ["", f"# pool {pool.name}"]
        if pool.selector is not None:
            lines.append(f"# selected by {describe_selection(pool)}: its provider sets the labels and taints of")
            lines.append(f"# {node_pool_file(pool)} on each new node")
            continue
        # The same words for every node of the pool, quoted once: a pool may have thousands of nodes.
        labels = _command([f"{key}={value}" for key, value in node_labels(ctx, pool).items()])
        taints = _command([taint_text(taint) for taint in pool.taints])
        for node in pool.nodes:
            quoted = shlex.quote(node)
            lines.append(f"kubectl label node {quoted} {labels} --overwrite")
            if taints:
                lines.append(f"kubectl taint node {quoted} {taints} --overwrite")
    return "\n".join(lines) + "\n"


def _column(resource: str) -> str:
    # custom-columns takes a JSONPath-like field; dots inside a resource name are escaped.
    return ".status.allocatable." + resource.replace(".", "\\.")


def render_verify_script(ctx: Context) -> str:
    """`kubectl get nodes` per pool with the resources the pool promises as columns, and the expected amounts.

    The last step of an apply: a node whose column shows <none> or a smaller number has no device plugin, the wrong
    config label or an unfinished MIG layout, and its pods would stay Pending.
    """
    lines = [
        "#!/bin/sh",
        f"# Generated by gpustack from blueprint '{ctx.blueprint.name}': check that each node advertises what its pool",
        "# promises. Run after the charts are ready and the nodes are labelled. Edit the blueprint, not this file.",
        "set -eu",
    ]
    dra_pools = [pool for pool in ctx.blueprint.pools if is_dra(pool)]
    checks_slices = resource_slices.has_dra_pools(ctx, dra_pools)
    if checks_slices:  # DRA pools are checked by their ResourceSlices: the driver never sets allocatable
        lines += resource_slices.preamble()
    for pool in ctx.blueprint.pools:
        offers = ctx.offers.get(pool.name, ())
        if not offers:
            continue
        if is_dra(pool):
            lines += resource_slices.pool_check(ctx, pool)
            continue
        expected = ", ".join(f"{offer.resource}={offer.per_node}" for offer in offers)
        columns = ",".join(
            [
                "NAME:.metadata.name",
                *(f"{offer.resource.rpartition('/')[2].upper()}:{_column(offer.resource)}" for offer in offers),
            ]
        )
        lines += [
            "",
            f"echo 'pool {pool.name}: every node should show {expected}'",
            _command(["kubectl", "get", "nodes", "-l", describe_selection(pool), "-o", f"custom-columns={columns}"]),
        ]
    if checks_slices:
        lines += resource_slices.epilogue()
    return "\n".join(lines) + "\n"


def render_node_pool(ctx: Context, pool: NodePool) -> str:
    """What a selector pool's provider must put on every node it creates, as data to copy into its node pool."""
    # The taints a cloud adds by itself (Taint.by_cloud: AKS spot, GKE GPU pools) are its own to set.
    asked = [taint for taint in pool.taints if not taint.by_cloud]
    fragment: Object = {
        "pool": pool.name,
        "selector": describe_selection(pool),
        "labels": dict(node_labels(ctx, pool)),
        "taints": [taint_object(taint) for taint in asked],
    }
    if asked:
        # The same taints as AKS nodeTaints, eksctl and `kubectl taint` write them.
        fragment["taintsAsText"] = [taint_text(taint) for taint in asked]
    return (
        f"# Generated by gpustack from blueprint '{ctx.blueprint.name}': the labels and taints node pool "
        f"'{pool.name}' must carry.\n"
        "# Set them where the provider sets node labels and taints, so every node starts with them: GKE\n"
        "# node_config.labels / taints, EKS NodeGroup labels / taints, AKS nodeLabels / nodeTaints, Karpenter\n"
        "# NodePool spec.template.metadata.labels / spec.template.spec.taints. Not applied by kustomize.\n"
        + dump_yaml(fragment)
    )


def compile_nodes(ctx: Context) -> FamilyOutput:
    static = [pool for pool in ctx.blueprint.pools if pool.selector is None]
    shared = _shared_labels(ctx)
    # A pool's nodes share one labels mapping (read-only in the Plan's PoolNodes) and one taints spec, as plan
    # objects may (the writer writes shared parts out in full): 10,000 nodes held 15 MB of copies.
    objects: list[Manifest] = []
    for pool in static:
        labels = shared[pool.name]
        objects += (Manifest(FAMILY, NODES_FILE, build_node_patch(node, labels)) for node in pool.nodes)
    for pool in static:
        if pool.taints:
            spec = {"taints": node_taints(pool)}
            objects += (Manifest(TAINTS_FAMILY, TAINTS_FILE, build_taint_patch(node, spec)) for node in pool.nodes)
    artifacts = [
        Artifact(
            node_pool_file(pool),
            render_node_pool(ctx, pool),
            f"the labels and taints node pool `{pool.name}` must carry (set by its provider)",
        )
        for pool in ctx.blueprint.pools
        if pool.selector is not None
    ]
    if static:
        artifacts.append(
            Artifact(
                SCRIPT_FILE,
                render_label_script(ctx),
                "kubectl commands that label and taint the nodes, one taint at a time (never create a node)",
            )
        )
    artifacts.append(
        Artifact(VERIFY_FILE, render_verify_script(ctx), "checks that every node advertises what its pool promises")
    )
    return FamilyOutput(objects=objects, artifacts=artifacts, pools=list(pool_nodes(ctx).values()))

"""Pools, tenants and workloads as a Mermaid flowchart, optionally with a change's parts marked.

Mermaid because GitHub and GitLab render it inline in markdown, so the picture lands in the pull request
itself. Marks use classDef colours and also say "added"/"removed"/"changed" in the label, so the picture
reads the same without colour.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import TypeVar

from gpustack.context import Context
from gpustack.mig import index_ranges
from gpustack.model import Blueprint, NodePool, SharingStrategy, Tenant, Workload
from gpustack.selection import describe_selection
from gpustack.taints import taint_text

MAX_NODES_SHOWN = 3  # a pool of 200 nodes must not make a 200-name box


class Mark(StrEnum):
    ADDED = "added"
    REMOVED = "removed"
    CHANGED = "changed"


STYLES: dict[Mark, str] = {
    Mark.ADDED: "fill:#dafbe1,stroke:#1a7f37,stroke-width:2px",
    Mark.REMOVED: "fill:#ffebe9,stroke:#cf222e,stroke-width:2px,stroke-dasharray:5 5",
    Mark.CHANGED: "fill:#fff8c5,stroke:#9a6700,stroke-width:2px",
}
LINK_STYLES: dict[Mark, str] = {
    Mark.ADDED: "stroke:#1a7f37,stroke-width:2px",
    Mark.REMOVED: "stroke:#cf222e,stroke-width:2px,stroke-dasharray:5 5",
    Mark.CHANGED: "stroke:#9a6700,stroke-width:2px",
}
ARROWS: dict[Mark | None, str] = {None: "-->", Mark.ADDED: "==>", Mark.REMOVED: "-.->", Mark.CHANGED: "-->"}
SHAPES: dict[str, tuple[str, str]] = {"tenant": ('(["', '"])'), "workload": ('("', '")'), "pool": ('["', '"]')}
# Left to right: pools, the tenants they grant quota to, the workloads tenants run. Every edge points rightwards
# (pool -> tenant -> workload, pool -> workload), so Mermaid ranks the columns in this order.
GROUPS: tuple[tuple[str, str], ...] = (("pool", "Node pools"), ("tenant", "Tenants"), ("workload", "Workloads"))
COLUMNS = {kind: index for index, (kind, _) in enumerate(GROUPS)}


@dataclass(frozen=True)
class GraphNode:
    kind: str  # pool, tenant or workload
    name: str
    lines: tuple[str, ...]  # label lines, plain text
    mark: Mark | None = None

    @property
    def id(self) -> str:
        # Names are DNS labels: '-' -> '_' is one-to-one, and the prefix keeps ids off Mermaid's keywords.
        return f"{self.kind}_{self.name.replace('-', '_')}"


@dataclass(frozen=True)
class GraphEdge:
    source: str  # node ids
    target: str
    label: str | None
    mark: Mark | None = None


@dataclass(frozen=True)
class Graph:
    nodes: tuple[GraphNode, ...]
    edges: tuple[GraphEdge, ...]


def _sharing_line(pool: NodePool) -> str:
    sharing = pool.sharing
    if sharing.strategy is SharingStrategy.MIG and sharing.mig is not None:
        layouts = " | ".join(
            ("" if group.devices is None else f"GPUs {index_ranges(group.devices)}: ")
            + ("whole" if group.whole else ", ".join(f"{p} x{n}" for p, n in group.instances.items()))
            for group in sharing.mig.groups
        )
        sliced = sharing.mig.time_slicing
        renamed = ", renamed" if sliced is not None and sliced.rename_by_default else ""
        return f"MIG {sharing.mig.strategy}: {layouts}" + (
            f" (time-sliced {sliced.counts_text}{renamed})" if sliced is not None else ""
        )
    if sharing.replication is not None:
        renamed = ", renamed" if sharing.replication.rename_by_default else ""
        return f"{sharing.strategy} x{sharing.replication.replicas}{renamed}"
    if sharing.hami is not None:
        return f"hami, split {sharing.hami.split_count}"
    return "whole GPUs"


def _nodes_line(pool: NodePool) -> str:
    if pool.selector is not None:
        size = str(pool.count) if pool.count is not None else f"{pool.min_nodes}-{pool.max_nodes}"
        return f"{size} nodes: {describe_selection(pool)}"
    shown = ", ".join(pool.nodes[:MAX_NODES_SHOWN])
    more = pool.node_count - MAX_NODES_SHOWN
    suffix = f" +{more} more" if more > 0 else ""
    noun = "node" if pool.node_count == 1 else "nodes"
    return f"{pool.node_count} {noun}: {shown}{suffix}"


def _pool_node(pool: NodePool) -> GraphNode:
    gpu = f"{pool.gpu.count} x {pool.gpu.model} per node" if pool.gpu is not None else "CPU only"
    lines = [pool.name, gpu, _nodes_line(pool), _sharing_line(pool)]
    if pool.taints:  # what keeps other pods off (and NoExecute: what evicts them) belongs in the picture
        lines.append("taints: " + ", ".join(taint_text(t) for t in pool.taints))
    return GraphNode("pool", pool.name, tuple(lines))


def _tenant_node(tenant: Tenant) -> GraphNode:
    return GraphNode("tenant", tenant.name, (tenant.name, f"priority {tenant.priority}"))


def _need_text(workload: Workload) -> str:
    need = workload.gpu
    if need.profile is not None:
        return f"{need.count} x {need.profile}"
    if need.memory is not None:
        return f"{need.count} x {need.memory} GPU memory"
    return f"{need.count} GPU" if need.count == 1 else f"{need.count} GPUs"


def _workload_node(workload: Workload) -> GraphNode:
    pods = f"{workload.pods} worker(s)" if workload.workers is not None else f"{workload.pods} pod(s)"
    return GraphNode("workload", workload.name, (workload.name, f"{workload.kind}, {pods}", _need_text(workload)))


def _quota_text(tenant: Tenant, pool: str) -> str | None:
    quota = tenant.quota_for(pool)
    return "quota " + ", ".join(f"{r}: {n}" for r, n in quota.items()) if quota else None


def _request_text(context: Context | None, workload: Workload) -> str | None:
    requests = None if context is None else context.requests.get(workload.name)
    if requests is None:
        return None
    return ", ".join(f"{amount} {resource.removeprefix('nvidia.com/')}" for resource, amount in requests.items)


def blueprint_graph(blueprint: Blueprint, context: Context | None = None) -> Graph:
    """The blueprint's pools, tenants and workloads in columns, each column ordered to cross fewer edges;
    with a context, pool -> workload edges name what each pod requests."""
    pools = list(blueprint.pools)
    pool_at = _positions(pools)
    tenants = _by_barycentre(blueprint.tenants, lambda t: [pool_at(p) for p in t.pools])
    tenant_at = _positions(tenants)
    workloads = sorted(
        blueprint.workloads,
        key=lambda w: (tenant_at(w.tenant), pool_at(w.pool)),  # sorted() is stable: ties keep file order
    )
    nodes = [_pool_node(p) for p in pools] + [_tenant_node(t) for t in tenants]
    nodes += [_workload_node(w) for w in workloads]
    ids = {(n.kind, n.name): n.id for n in nodes}
    edges: list[GraphEdge] = []
    for tenant in tenants:
        for pool in sorted(tenant.pools, key=pool_at):
            if ("pool", pool) in ids:
                edges.append(GraphEdge(ids["pool", pool], ids["tenant", tenant.name], _quota_text(tenant, pool)))
    for workload in workloads:
        if ("tenant", workload.tenant) in ids:
            edges.append(GraphEdge(ids["tenant", workload.tenant], ids["workload", workload.name], None))
        if ("pool", workload.pool) in ids:
            label = _request_text(context, workload)
            edges.append(GraphEdge(ids["pool", workload.pool], ids["workload", workload.name], label))
    return Graph(tuple(nodes), tuple(edges))


T = TypeVar("T", NodePool, Tenant)


def _positions(items: Sequence[NodePool | Tenant]) -> Callable[[str], int]:
    """Name -> its position among `items` (the first, if named twice); names not there go last."""
    found: dict[str, int] = {}
    for position, item in enumerate(items):
        found.setdefault(item.name, position)
    return lambda name: found.get(name, len(items))


def _by_barycentre(items: Iterable[T], neighbours: Callable[[T], list[int]]) -> list[T]:
    """Each item at the mean position of what it links to in the column before: the classic crossing reducer."""

    def centre(item: T) -> float:
        positions = neighbours(item)
        return sum(positions) / len(positions) if positions else math.inf

    return sorted(items, key=centre)  # stable: ties keep the blueprint's order


def crossings(graph: Graph) -> int:
    """How many pairs of edges between the same two columns cross, with nodes drawn in graph order."""
    position = {n.id: index for index, n in enumerate(graph.nodes)}
    column = {n.id: COLUMNS[n.kind] for n in graph.nodes}
    count = 0
    for index, a in enumerate(graph.edges):
        for b in graph.edges[index + 1 :]:
            same_columns = (column[a.source], column[a.target]) == (column[b.source], column[b.target])
            if (
                same_columns
                and (position[a.source] - position[b.source]) * (position[a.target] - position[b.target]) < 0
            ):
                count += 1
    return count


def compare_graphs(before: Graph | None, after: Graph, changed: Iterable[tuple[str, str]]) -> Graph:
    """One graph of both versions: what only the old one has is kept and marked removed.

    `changed` names the (kind, name) entities whose fields changed; edges are compared by ends and label.
    """
    old_nodes = {(n.kind, n.name): n for n in (before.nodes if before is not None else ())}
    new_nodes = {(n.kind, n.name): n for n in after.nodes}
    changed_set = set(changed)
    nodes: list[GraphNode] = []
    for key, node in new_nodes.items():
        mark = Mark.ADDED if key not in old_nodes else (Mark.CHANGED if key in changed_set else None)
        nodes.append(replace(node, mark=mark))
    nodes += [replace(n, mark=Mark.REMOVED) for key, n in old_nodes.items() if key not in new_nodes]
    old_edges = {(e.source, e.target): e for e in (before.edges if before is not None else ())}
    new_edges = {(e.source, e.target): e for e in after.edges}
    edges: list[GraphEdge] = []
    for key, edge in new_edges.items():
        previous = old_edges.get(key)
        mark = Mark.ADDED if previous is None else (Mark.CHANGED if previous.label != edge.label else None)
        edges.append(replace(edge, mark=mark))
    edges += [replace(e, mark=Mark.REMOVED) for key, e in old_edges.items() if key not in new_edges]
    return Graph(_grouped(nodes), tuple(edges))


def _grouped(nodes: list[GraphNode]) -> tuple[GraphNode, ...]:
    """Removed nodes sit with their kind, so the columns stay pools | tenants | workloads."""
    order = {kind: index for index, (kind, _) in enumerate(GROUPS)}
    return tuple(sorted(nodes, key=lambda n: order[n.kind]))


def escape(text: str) -> str:
    """Plain text for a quoted Mermaid label: '#' first, since the other escapes are written with it."""
    for raw, code in (("#", "#35;"), ('"', "#quot;"), ("<", "#lt;"), (">", "#gt;")):
        text = text.replace(raw, code)
    return text


def _label(node: GraphNode) -> str:
    lines = [f"<b>{escape(node.lines[0])}</b>", *(escape(line) for line in node.lines[1:])]
    if node.mark is not None:
        lines.append(f"<i>{node.mark}</i>")
    return "<br/>".join(lines)


def render_mermaid(graph: Graph, direction: str = "LR") -> str:
    out = [f"flowchart {direction}"]
    for kind, title in GROUPS:
        members = [n for n in graph.nodes if n.kind == kind]
        if not members:
            continue
        out.append(f'  subgraph {kind}s["{title}"]')
        for node in members:
            opening, closing = SHAPES[kind]
            out.append(f"    {node.id}{opening}{_label(node)}{closing}")
        out.append("  end")
    for edge in graph.edges:
        label = f'|"{escape(edge.label)}"|' if edge.label else ""
        out.append(f"  {edge.source} {ARROWS[edge.mark]}{label} {edge.target}")
    out.extend(_styles(graph))
    return "\n".join(out) + "\n"


def _styles(graph: Graph) -> list[str]:
    out: list[str] = []
    node_marks = _by_mark((n.mark, n.id) for n in graph.nodes)
    edge_marks = _by_mark((e.mark, str(index)) for index, e in enumerate(graph.edges))
    for mark in Mark:
        if mark in node_marks:
            out.append(f"  classDef {mark} {STYLES[mark]}")
            out.append(f"  class {','.join(node_marks[mark])} {mark}")
        if mark in edge_marks:
            # linkStyle counts edges in the order they are written, which is graph.edges' order.
            out.append(f"  linkStyle {','.join(edge_marks[mark])} {LINK_STYLES[mark]}")
    return out


def _by_mark(pairs: Iterable[tuple[Mark | None, str]]) -> Mapping[Mark, list[str]]:
    grouped: dict[Mark, list[str]] = {}
    for mark, value in pairs:
        if mark is not None:
            grouped.setdefault(mark, []).append(value)
    return grouped

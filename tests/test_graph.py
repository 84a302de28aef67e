"""`gpustack graph`: the Mermaid picture of pools, tenants and workloads, with a change's parts marked.

The Mermaid sources are also parsed by Mermaid itself (the npm package GitHub renders with), when Node.js and
the packages are installed: `npm install --no-save --prefix DIR mermaid@11.17.2 jsdom@29.1.1`, with DIR
given as GPUSTACK_MERMAID_DIR or being .ci/node in the repository. jsdom gives DOMPurify, which mermaid uses
on labels, the window it needs outside a browser.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import CASES, REPO, shipped_examples

from gpustack.catalog import load_catalog
from gpustack.context import Context, unplaced
from gpustack.graph import (
    MAX_NODES_SHOWN,
    Graph,
    GraphEdge,
    GraphNode,
    Mark,
    blueprint_graph,
    compare_graphs,
    escape,
    render_mermaid,
)
from gpustack.validation import validate_path

MIG = CASES / "review" / "mig-layout"


def graph_of(path: Path) -> Graph:
    result = validate_path(path)
    assert result.blueprint is not None
    return blueprint_graph(result.blueprint, Context(result.blueprint, load_catalog(), unplaced))


def test_nodes_are_pools_then_tenants_then_workloads_with_what_matters_in_the_label() -> None:
    graph = graph_of(MIG / "before.yaml")
    assert [(n.kind, n.name) for n in graph.nodes] == [
        ("pool", "h100-mig"),
        ("pool", "l4"),
        ("tenant", "payments"),
        ("workload", "fraud-scorer"),
        ("workload", "ranker"),
    ]
    pool = graph.nodes[0]
    assert pool.id == "pool_h100_mig"
    assert pool.lines == (
        "h100-mig",
        "8 x NVIDIA-H100-80GB-HBM3 per node",
        "2 nodes: h100-a, h100-b",
        "MIG mixed: GPUs 0-3: 1g.10gb x7 | GPUs 4-7: 3g.40gb x2",
        "taints: gpustack.io/pool=h100-mig:NoSchedule",
    )
    assert graph.nodes[4].lines == ("ranker", "StatefulSet, 2 pod(s)", "1 x 30Gi GPU memory")


def test_edges_carry_quotas_and_per_pod_requests() -> None:
    edges = {(e.source, e.target): e.label for e in graph_of(MIG / "before.yaml").edges}
    assert edges == {
        ("pool_h100_mig", "tenant_payments"): "quota mig-1g.10gb: 28, mig-3g.40gb: 4",
        ("pool_l4", "tenant_payments"): None,
        ("tenant_payments", "workload_fraud_scorer"): None,
        ("pool_h100_mig", "workload_fraud_scorer"): "1 mig-1g.10gb",
        ("tenant_payments", "workload_ranker"): None,
        ("pool_h100_mig", "workload_ranker"): "1 mig-3g.40gb",
    }


def test_large_pools_list_a_few_nodes() -> None:
    result = validate_path(MIG / "before.yaml")
    assert result.blueprint is not None
    import dataclasses

    nodes = tuple(f"node-{i}" for i in range(40))
    pool = dataclasses.replace(result.blueprint.pools[1], nodes=nodes)
    big = dataclasses.replace(result.blueprint, pools=(result.blueprint.pools[0], pool))
    line = blueprint_graph(big).nodes[1].lines[2]
    assert line == f"40 nodes: {', '.join(nodes[:MAX_NODES_SHOWN])} +{40 - MAX_NODES_SHOWN} more"


def test_mermaid_source_shape() -> None:
    source = render_mermaid(graph_of(MIG / "before.yaml"))
    lines = source.splitlines()
    assert lines[0] == "flowchart LR"
    assert '  subgraph pools["Node pools"]' in lines
    assert '  pool_h100_mig -->|"quota mig-1g.10gb: 28, mig-3g.40gb: 4"| tenant_payments' in lines
    subgraphs = [line.split("[")[0].split()[1] for line in lines if line.startswith("  subgraph")]
    assert subgraphs == ["pools", "tenants", "workloads"], "columns left to right"
    edges = [line.split() for line in lines if "-->" in line]
    order = {"pool": 0, "tenant": 1, "workload": 2}
    assert all(order[e[0].split("_")[0]] < order[e[-1].split("_")[0]] for e in edges), "every edge points right"
    assert "classDef" not in source, "an unmarked graph has no styles"


def test_labels_are_escaped() -> None:
    assert escape('a "b" <c> #d') == "a #quot;b#quot; #lt;c#gt; #35;d"
    node = GraphNode("pool", "x", ('odd "name" <b>', "#1"))
    source = render_mermaid(Graph((node,), ()))
    assert 'pool_x["<b>odd #quot;name#quot; #lt;b#gt;</b><br/>#35;1"]' in source


def test_compare_marks_added_removed_and_changed_nodes_and_edges() -> None:
    before = graph_of(MIG / "before.yaml")
    after = Graph(
        (*before.nodes[:4], GraphNode("tenant", "new", ("new",))),
        (
            before.edges[0],
            *before.edges[2:4],
            GraphEdge("pool_l4", "tenant_payments", "quota gpu: 2"),
            GraphEdge("pool_l4", "tenant_new", None),
        ),
    )
    merged = compare_graphs(before, after, [("pool", "h100-mig")])
    marks = {(n.kind, n.name): n.mark for n in merged.nodes}
    assert marks == {
        ("tenant", "payments"): None,
        ("tenant", "new"): Mark.ADDED,
        ("workload", "fraud-scorer"): None,
        ("workload", "ranker"): Mark.REMOVED,
        ("pool", "h100-mig"): Mark.CHANGED,
        ("pool", "l4"): None,
    }
    edge_marks = [(e.source, e.target, e.mark) for e in merged.edges]
    assert ("pool_l4", "tenant_payments", Mark.CHANGED) in edge_marks
    assert ("pool_l4", "tenant_new", Mark.ADDED) in edge_marks
    assert ("pool_h100_mig", "workload_ranker", Mark.REMOVED) in edge_marks
    source = render_mermaid(merged)
    assert "  class tenant_new added" in source
    assert "  class workload_ranker removed" in source
    assert "  class pool_h100_mig changed" in source
    assert "<i>removed</i>" in source, "marks are words too, not only colours"
    # linkStyle indexes are the positions of the edges as written.
    keywords = {"flowchart", "subgraph", "end", "classDef", "class", "linkStyle"}
    edge_lines = [line for line in source.splitlines() if line[:4] != "    " and line.split()[0] not in keywords]
    assert len(edge_lines) == len(merged.edges)
    for line in source.splitlines():
        if line.startswith("  linkStyle"):
            indexes, style = line.split()[1], line.split()[2]
            for index in map(int, indexes.split(",")):
                arrow = edge_lines[index].split()[1]
                if "cf222e" in style:
                    assert arrow.startswith("-.->")
                if "1a7f37" in style:
                    assert arrow.startswith("==>")


def test_a_review_graph_of_a_new_file_marks_everything_added() -> None:
    merged = compare_graphs(None, graph_of(MIG / "after.yaml"), [])
    assert {n.mark for n in merged.nodes} == {Mark.ADDED}
    assert {e.mark for e in merged.edges} == {Mark.ADDED}


# Mermaid's own parser


PARSE_SCRIPT = r"""
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import path from "node:path";
const require = createRequire(path.join(process.env.MERMAID_DIR, "resolve-from-here.js"));
const load = async (name) => import(pathToFileURL(require.resolve(name)).href);
// DOMPurify (inside mermaid) looks for a window when it is first imported: give it one first.
const { JSDOM } = await load("jsdom");
const dom = new JSDOM("<!DOCTYPE html><body></body>");
globalThis.window = dom.window;
globalThis.document = dom.window.document;
const mermaid = (await load("mermaid")).default;
mermaid.initialize({ startOnLoad: false });
let input = "";
for await (const chunk of process.stdin) input += chunk;
const results = [];
for (const source of JSON.parse(input)) {
  try {
    const parsed = await mermaid.parse(source);
    results.push({ ok: true, type: parsed.diagramType });
  } catch (error) {
    results.push({ ok: false, error: String(error?.message ?? error) });
  }
}
process.stdout.write(JSON.stringify(results));
"""


def mermaid_dir() -> Path:
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed: Mermaid's parser runs on node")
    candidates = [Path(os.environ["GPUSTACK_MERMAID_DIR"])] if os.environ.get("GPUSTACK_MERMAID_DIR") else []
    candidates += [REPO / ".ci" / "node", REPO]
    for folder in candidates:
        if (folder / "node_modules" / "mermaid").is_dir() and (folder / "node_modules" / "jsdom").is_dir():
            return folder
    pytest.skip(
        "the npm packages mermaid and jsdom are not installed: run "
        "`npm install --no-save --prefix .ci/node mermaid@11.17.2 jsdom@29.1.1` in the repository "
        "(or --prefix DIR, and set GPUSTACK_MERMAID_DIR=DIR)"
    )


def mermaid_parse(sources: list[str]) -> list[dict[str, object]]:
    folder = mermaid_dir()
    done = subprocess.run(
        ["node", "--input-type=module", "-e", PARSE_SCRIPT],
        input=json.dumps(sources),
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "MERMAID_DIR": str(folder)},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    results: list[dict[str, object]] = json.loads(done.stdout)
    return results


def all_sources() -> dict[str, str]:
    sources = {f"graph {p.name}": render_mermaid(graph_of(p)) for p in shipped_examples()}
    for golden in sorted((CASES / "review").glob("*/review.json")):
        graph = json.loads(golden.read_text(encoding="utf-8"))["graph"]
        if graph:
            sources[f"review {golden.parent.name}"] = graph
    odd = GraphNode("pool", "odd", ('quote " lt < gt > hash # amp &', "end", "subgraph"), Mark.CHANGED)
    edge = GraphEdge("pool_odd", "pool_odd", 'label "|" end', Mark.REMOVED)
    sources["escaping"] = render_mermaid(Graph((odd,), (edge,)))
    return sources


def test_mermaid_parses_every_graph_and_review_picture() -> None:
    sources = all_sources()
    results = mermaid_parse([*sources.values(), 'flowchart LR\n  a["unclosed --> b\n'])
    *ours, broken = results
    assert broken["ok"] is False, "the parser must reject a broken diagram, or this test proves nothing"
    failures = {name: r for name, r in zip(sources, ours, strict=True) if not r["ok"]}
    assert failures == {}
    assert {r["type"] for r in ours} == {"flowchart-v2"}


CROSSED = """\
apiVersion: gpustack.io/v1alpha1
kind: ClusterBlueprint
metadata: {name: crossed}
spec:
  kubernetes: {version: "1.31"}
  nodePools:
    - {name: a, gpu: {model: L4, count: 4}, nodes: [n1]}
    - {name: b, gpu: {model: L4, count: 4}, nodes: [n2]}
    - {name: c, gpu: {model: L4, count: 4}, nodes: [n3]}
  tenants:
    - {name: on-c, namespaces: [on-c], pools: [c]}
    - {name: on-b, namespaces: [on-b], pools: [b]}
    - {name: on-a, namespaces: [on-a], pools: [a]}
  workloads:
    - {name: wc, tenant: on-c, pool: c, kind: Deployment, image: x:1, gpu: {count: 1}}
    - {name: wa, tenant: on-a, pool: a, kind: Deployment, image: x:1, gpu: {count: 1}}
    - {name: wb, tenant: on-b, pool: b, kind: Deployment, image: x:1, gpu: {count: 1}}
"""


def test_columns_are_ordered_so_edges_do_not_cross() -> None:
    from gpustack.graph import crossings
    from gpustack.validation import validate_text

    result = validate_text(CROSSED, "crossed.yaml")
    assert result.blueprint is not None, result.diagnostics
    graph = blueprint_graph(result.blueprint)
    assert [n.name for n in graph.nodes] == ["a", "b", "c", "on-a", "on-b", "on-c", "wa", "wb", "wc"]
    assert crossings(graph) == 0
    in_file_order = Graph(
        tuple(sorted(graph.nodes, key=lambda n: (n.kind != "pool", n.kind != "tenant", CROSSED.index(f" {n.name},")))),
        graph.edges,
    )
    assert crossings(in_file_order) > 0, "the file's order would cross every quota and workload edge"


def test_every_example_draws_with_no_more_crossings_than_its_file_order() -> None:
    from gpustack.graph import crossings

    for blueprint in shipped_examples():
        graph = graph_of(blueprint)
        text = blueprint.read_text(encoding="utf-8")
        in_file_order = Graph(
            tuple(sorted(graph.nodes, key=lambda n: (list("ptw").index(n.kind[0]), text.find(f"name: {n.name}")))),
            graph.edges,
        )
        assert crossings(graph) <= crossings(in_file_order), blueprint.name

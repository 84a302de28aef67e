"""`gpustack graph BLUEPRINT`: pools, tenants and workloads as a Mermaid flowchart."""

from __future__ import annotations

from dataclasses import asdict

import click

from gpustack.commands.options import output_option
from gpustack.commands.reporting import stop_invalid
from gpustack.graph import blueprint_graph, render_mermaid
from gpustack.jsondoc import dump_document
from gpustack.validation import validate_path


@click.command(name="graph")
@click.argument("blueprint", type=click.Path(dir_okay=False, allow_dash=True))
@output_option(("text", "markdown", "json"))
def command(blueprint: str, output: str) -> None:
    """Draw BLUEPRINT's pools (GPU model, nodes, sharing), tenants and workloads as a Mermaid flowchart.

    text prints the Mermaid source, markdown wraps it in a ```mermaid block that GitHub and GitLab
    render, json gives the source with the nodes and edges. Exit 0, or 1 for an invalid blueprint.
    """
    result = validate_path(blueprint)
    if not result.ok or result.context is None:
        stop_invalid([result], output, "nothing drawn")
    graph = blueprint_graph(result.context.blueprint, result.context)
    source = render_mermaid(graph)
    if output == "markdown":
        click.echo(f"```mermaid\n{source}```")
    elif output == "json":
        data = {"mermaid": source, "nodes": [asdict(n) | {"id": n.id} for n in graph.nodes]}
        data["edges"] = [asdict(e) for e in graph.edges]
        click.echo(dump_document("Graph", data), nl=False)
    else:
        click.echo(source, nl=False)

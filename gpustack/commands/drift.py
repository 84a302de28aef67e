"""`gpustack drift BLUEPRINT SNAPSHOT`: is the cluster still what the blueprint says?"""

from __future__ import annotations

import sys

import click

from gpustack.cluster.drift import compare, format_markdown, format_text, report_data
from gpustack.cluster.snapshot import read_snapshot
from gpustack.collector import paused
from gpustack.commands.options import output_option
from gpustack.commands.reporting import echo_text, stop_invalid
from gpustack.compile import compile_blueprint
from gpustack.diagnostic import DiagnosticError
from gpustack.escapes import json_safe
from gpustack.json_text import pretty_json
from gpustack.validation import Validation, validate_path

NOTHING_COMPARED = "nothing compared"


@click.command(name="drift")
@click.argument("blueprint", type=click.Path(dir_okay=False, allow_dash=True))
@click.argument("snapshot", type=click.Path(dir_okay=False, allow_dash=True))
@output_option(("text", "markdown", "json"))
def command(blueprint: str, snapshot: str, output: str) -> None:
    """Compare BLUEPRINT with a cluster SNAPSHOT (`kubectl get nodes,pods,priorityclasses,resourcequotas,
    namespaces,validatingadmissionpolicybindings -A -o yaml`, YAML or JSON): per pool and node, the labels and
    taints gpustack sets, the GPU model, the resources the pool should advertise, the MIG manager's state, nodes
    missing or in no pool, the tenants' ResourceQuotas, the admission policy bindings and the KAI Queues (append
    `kubectl get queues.scheduling.run.ai -o yaml`; each compared only when the snapshot holds its kind; the
    report says which it could not compare).

    What gpustack would only add to take a cluster over (its labels on nodes that carry none of them, a quota of
    its name beside one that enforces the same, a binding not there yet) is listed as adoption, not drift.
    Exit 0 when the cluster matches, 1 on drift or invalid input (for a scheduled CI job), 2 on usage errors.
    """
    if blueprint == "-" and snapshot == "-":
        raise click.UsageError("only one of BLUEPRINT and SNAPSHOT can be standard input")
    sys.exit(_drift(blueprint, snapshot, output))


@paused()
def _drift(blueprint: str, snapshot: str, output: str) -> int:
    """The command's work; its exit code (invalid input still stops it from inside, with its diagnostics).

    Paused whole, as simulate is: comparing 13,000 nodes with the collector on ran full collections that walked the
    snapshot's records to find no cycle among them (tests/test_collector.py). It returns rather than exits, so that
    what it made is freed as it returns, inside the pause."""
    result = validate_path(blueprint)
    if not result.ok or result.context is None:
        stop_invalid([result], output, NOTHING_COMPARED)
    assert result.context is not None
    try:
        cluster = read_snapshot(snapshot)
    except DiagnosticError as error:
        stop_invalid([Validation(snapshot, None, None, error.diagnostics)], output, NOTHING_COMPARED)
    drift = compare(result.context, compile_blueprint(result.context), cluster, result.file)
    if output == "json":
        click.echo(json_safe(pretty_json(report_data(drift))) + "\n", nl=False)
    elif output == "markdown":
        echo_text(format_markdown(drift), nl=False)
    else:
        echo_text(format_text(drift), nl=False)  # node names and labels from the cluster, escaped
    return 0 if drift.in_sync else 1

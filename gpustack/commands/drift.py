"""`gpustack drift BLUEPRINT SNAPSHOT`: is the cluster still what the blueprint says?"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

import click

from gpustack.commands.options import output_option
from gpustack.commands.validate import _read_for_display, line_lookup
from gpustack.diagnostic import Diagnostic, DiagnosticError, Severity
from gpustack.drift import compare, format_markdown, format_text, report_data
from gpustack.report import SourceLine, format_json
from gpustack.report import format_text as format_diagnostics
from gpustack.snapshot import read_snapshot
from gpustack.validation import validate_path


def _fail(file: str, diagnostics: Sequence[Diagnostic], output: str, lookup: SourceLine) -> None:
    if output == "json":
        click.echo(format_json([(file, diagnostics)]), nl=False)
    else:
        click.echo(format_diagnostics(diagnostics, lookup) + "\n", err=True)
        errors = sum(d.severity is Severity.ERROR for d in diagnostics)
        click.echo(f"{file}: {errors} error(s); nothing compared", err=True)
    sys.exit(1)


@click.command(name="drift")
@click.argument("blueprint", type=click.Path(dir_okay=False, allow_dash=True))
@click.argument("snapshot", type=click.Path(dir_okay=False, allow_dash=True))
@output_option(("text", "markdown", "json"))
def command(blueprint: str, snapshot: str, output: str) -> None:
    """Compare BLUEPRINT with a cluster SNAPSHOT (`kubectl get nodes,pods,priorityclasses,resourcequotas,
    namespaces -A -o yaml`): per pool and node, the labels and taints gpustack sets, the GPU model, the
    resources the pool should advertise, the MIG manager's state, and nodes missing or in no pool.

    Exit 0 when the cluster matches, 1 on drift or invalid input (for a scheduled CI job), 2 on usage errors.
    """
    if blueprint == "-" and snapshot == "-":
        raise click.UsageError("only one of BLUEPRINT and SNAPSHOT can be standard input")
    result = validate_path(blueprint)
    if not result.ok or result.blueprint is None:
        _fail(result.file, result.diagnostics, output, line_lookup([result]))
    assert result.blueprint is not None
    try:
        cluster = read_snapshot(snapshot)
    except DiagnosticError as error:
        lines = _read_for_display(snapshot) if snapshot != "-" else []

        def lookup(file: str, line: int) -> str:
            return lines[line - 1] if 0 < line <= len(lines) else ""

        _fail(snapshot, error.diagnostics, output, lookup)
        return
    drift = compare(result.blueprint, cluster, result.file)
    if output == "json":
        click.echo(json.dumps(report_data(drift), indent=2) + "\n", nl=False)
    elif output == "markdown":
        click.echo(format_markdown(drift), nl=False)
    else:
        click.echo(format_text(drift), nl=False)
    sys.exit(0 if drift.in_sync else 1)

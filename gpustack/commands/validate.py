"""`gpustack validate FILE...`."""

from __future__ import annotations

import sys

import click

from gpustack.commands.options import output_option
from gpustack.commands.reporting import echo_diagnostics
from gpustack.report import format_json, summary
from gpustack.sarif import format_sarif
from gpustack.validation import validate_path


@click.command(name="validate")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--strict", is_flag=True, help="Treat warnings as errors.")
@output_option(("text", "json", "sarif"))
def command(files: tuple[str, ...], strict: bool, output: str) -> None:
    """Check blueprint FILES: YAML, shape, references, hardware geometry, sharing and tenancy rules.

    Prints every problem as file:line:col with the source line and a hint (--output json or sarif
    for tools: SARIF 2.1.0 is what GitHub code scanning reads). Exit 0 when all
    files are valid, 1 when any is not, 2 on usage errors. Use - to read standard input.
    """
    results = [validate_path(file) for file in files]
    if strict:
        results = [r.strict() for r in results]
    if output == "json":
        click.echo(format_json([(r.file, r.diagnostics) for r in results]), nl=False)
    elif output == "sarif":
        click.echo(format_sarif([(r.file, r.diagnostics) for r in results]), nl=False)
    else:
        echo_diagnostics(results, err=False)
        click.echo(summary([d for r in results for d in r.diagnostics], len(results)))
    sys.exit(0 if all(r.ok for r in results) else 1)

"""`gpustack compile BLUEPRINT -o DIR`."""

from __future__ import annotations

import dataclasses
import sys

import click

from gpustack.commands.options import output_option
from gpustack.commands.reporting import echo_diagnostics, stop_invalid
from gpustack.compile import compile_blueprint
from gpustack.diagnostic import DiagnosticError, sort_diagnostics
from gpustack.outputs import render_stream, stream_leaves_out
from gpustack.report import format_json
from gpustack.validation import document_locator, validate_path
from gpustack.write import stale_files, write_directory

NOTHING_WRITTEN = "nothing written"


@click.command(name="compile")
@click.argument("blueprint", type=click.Path(dir_okay=False, allow_dash=True))
@click.option(
    "-o", "--out", "out", required=True, help="Output directory (replaced atomically), or - for one YAML stream."
)
@click.option("--check", is_flag=True, help="Write nothing; exit 1 and list the differences if DIR is stale.")
@output_option()
def command(blueprint: str, out: str, check: bool, output: str) -> None:
    """Compile BLUEPRINT into Kubernetes manifests, Helm values and node scripts.

    An invalid blueprint prints its diagnostics and writes nothing (exit 1).
    """
    if check and out == "-":
        raise click.UsageError("--check compares a directory; it cannot check a stream (-o -)")
    result = validate_path(blueprint)
    if not result.ok or result.blueprint is None:
        stop_invalid([result], output, NOTHING_WRITTEN)
    plan = compile_blueprint(result.blueprint, locate=document_locator(result.document) if result.document else None)
    # Compile reports nothing the checks did not (tests/test_one_gate.py); its own would still be shown.
    result = dataclasses.replace(result, diagnostics=tuple(sort_diagnostics([*result.diagnostics, *plan.diagnostics])))
    diagnostics = list(result.diagnostics)
    if not result.ok:
        stop_invalid([result], output, NOTHING_WRITTEN)
    if output == "text":
        echo_diagnostics([result])
    if out == "-":
        click.echo(render_stream(plan), nl=False)
        left_out = stream_leaves_out(plan)
        if left_out:
            click.echo(
                f"gpustack: not in the stream (compile to a directory for them): {'; '.join(left_out)}", err=True
            )
        return
    try:
        if check:
            differences = stale_files(plan, out)
            if differences:
                click.echo("\n".join(differences))
                click.echo(
                    f"{out} is stale: {len(differences)} file(s) differ; run gpustack compile {blueprint} -o {out}"
                )
                sys.exit(1)
            click.echo(f"{out} is up to date")
            return
        files = write_directory(plan, out)
    except DiagnosticError as error:
        stop_invalid([dataclasses.replace(result, diagnostics=error.diagnostics)], output, NOTHING_WRITTEN)
    if output == "json":
        click.echo(format_json([(result.file, diagnostics)]), nl=False)
    else:
        click.echo(
            f"wrote {len(files)} files to {out}: {len(plan.objects)} objects, {len(plan.releases)} Helm release(s)"
        )

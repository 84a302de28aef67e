"""`gpustack compile BLUEPRINT -o DIR`."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click

from gpustack.commands.options import output_option
from gpustack.commands.validate import line_lookup
from gpustack.compile import compile_blueprint
from gpustack.diagnostic import Diagnostic, DiagnosticError, Severity, sort_diagnostics
from gpustack.outputs import render_stream, stream_leaves_out
from gpustack.report import SourceLine, format_json, format_text
from gpustack.validation import validate_path
from gpustack.write import stale_files, write_directory
from gpustack.yamlout import LIBYAML, SLOW_WRITER_NOTE


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
    lookup = line_lookup([result])
    if not result.ok or result.blueprint is None:
        _report(result.file, list(result.diagnostics), output, lookup)
        sys.exit(1)
    plan = compile_blueprint(result.blueprint)
    diagnostics = sort_diagnostics([*result.diagnostics, *plan.diagnostics])
    if any(d.severity is Severity.ERROR for d in diagnostics):
        _report(result.file, diagnostics, output, lookup)
        sys.exit(1)
    if diagnostics and output == "text":
        click.echo(format_text(diagnostics, lookup) + "\n", err=True)
    if not LIBYAML:
        click.echo(SLOW_WRITER_NOTE, err=True)
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
        _report(result.file, list(error.diagnostics), output, lookup)
        sys.exit(1)
    if output == "json":
        click.echo(format_json([(result.file, diagnostics)]), nl=False)
    else:
        click.echo(
            f"wrote {len(files)} files to {out}: {len(plan.objects)} objects, {len(plan.releases)} Helm release(s)"
        )


def _report(file: str, diagnostics: Sequence[Diagnostic], output: str, lookup: SourceLine) -> None:
    if output == "json":
        click.echo(format_json([(file, diagnostics)]), nl=False)
    else:
        click.echo(format_text(diagnostics, lookup) + "\n", err=True)
        errors = sum(d.severity is Severity.ERROR for d in diagnostics)
        click.echo(f"{file}: {errors} error(s); nothing written", err=True)

"""`gpustack validate FILE...`."""

from __future__ import annotations

import os
import sys

import click

from gpustack.commands.options import output_option
from gpustack.load import MAX_BYTES
from gpustack.report import SourceLine, format_json, format_text, summary
from gpustack.sarif import format_sarif
from gpustack.validation import Validation, validate_path


def source_lines(results: list[Validation]) -> dict[str, list[str]]:
    lines = {r.file: r.document.text.splitlines() for r in results if r.document is not None}
    for result in results:
        if result.document is None and result.file != "-":
            lines[result.file] = _read_for_display(result.file)
    return lines


def _read_for_display(file: str) -> list[str]:
    """The text of a file that failed to load, so its diagnostics can still show the line (best effort).

    Only regular files under the size cap: a device or a pipe could be endless, and was refused already.
    """
    try:
        if not os.path.isfile(file) or os.path.getsize(file) > MAX_BYTES:
            return []
        with open(file, "rb") as handle:
            return handle.read(MAX_BYTES + 1).decode("utf-8", errors="replace").splitlines()
    except OSError:
        return []


def line_lookup(results: list[Validation]) -> SourceLine:
    lines = source_lines(results)

    def lookup(file: str, line: int) -> str:
        text = lines.get(file, [])
        return text[line - 1] if 0 < line <= len(text) else ""

    return lookup


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
        diagnostics = [d for r in results for d in r.diagnostics]
        lookup = line_lookup(results)
        if diagnostics:
            click.echo(format_text(diagnostics, lookup) + "\n")
        click.echo(summary(diagnostics, len(results)))
    sys.exit(0 if all(r.ok for r in results) else 1)

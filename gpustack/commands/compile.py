"""`gpustack compile BLUEPRINT -d DIR` (or `--output yaml` for one stream, `--output json` for a report)."""

from __future__ import annotations

import dataclasses
import sys
import tempfile
from pathlib import Path
from typing import NoReturn

import click

from gpustack.codes import MIG_LAYOUT_AUTO
from gpustack.collector import paused
from gpustack.commands.options import deprecated, output_option, refuse_format_named_dir
from gpustack.commands.reporting import echo_diagnostics, echo_text, stop_invalid
from gpustack.compile import compile_blueprint
from gpustack.compile_report import compile_report
from gpustack.diagnostic import DiagnosticError, sort_diagnostics
from gpustack.jsondoc import dump_document
from gpustack.model import Blueprint
from gpustack.outputs import stream_documents, stream_leaves_out
from gpustack.validation import Validation, validate_path
from gpustack.write import stale_files, write_directory
from gpustack.yamlout import LIBYAML, SLOW_WRITER_NOTE

NOTHING_WRITTEN = "nothing written"
STREAM = "-"
SPOOL_CHUNK = 1 << 16  # characters per write of the spooled stream


@click.command(name="compile")
@click.argument("blueprint", type=click.Path(dir_okay=False, allow_dash=True))
@click.option(
    "--out-dir",
    "-d",
    "out_dir",
    metavar="DIR",
    help="Output directory (replaced atomically), or - for one YAML stream on stdout.",
)
@click.option("--out", "legacy_out", hidden=True, help="Deprecated spelling of --out-dir.")
@click.option("--check", is_flag=True, help="Write nothing; exit 1 and list the differences if DIR is stale.")
@output_option(("text", "json", "yaml"), legacy_dir=True)
def command(
    blueprint: str,
    out_dir: str | None,
    legacy_out: str | None,
    legacy_out_dir: str | None,
    check: bool,
    output: str,
) -> None:
    """Compile BLUEPRINT into Kubernetes manifests, Helm values and node scripts, written to --out-dir DIR.

    --output json describes what was written (or, without --out-dir, what would be): files, objects
    by kind, Helm releases and diagnostics. --output yaml prints the objects as one YAML stream
    (like -d -). An invalid blueprint prints its diagnostics and writes nothing (exit 1).
    """
    if legacy_out is not None:
        deprecated(f"--out {legacy_out}", f"--out-dir/-d {legacy_out}")
    out = _one_directory(out_dir, legacy_out, legacy_out_dir)
    if out is not None:
        refuse_format_named_dir(out)
    if output == "yaml":
        if out not in (None, STREAM):
            raise click.UsageError("--output yaml prints one stream on stdout; give no --out-dir (or -d -)")
        out = STREAM
    if out is None and output != "json":
        raise click.UsageError(
            "give --out-dir DIR (or -d - / --output yaml for one stream, --output json for a dry run)"
        )
    if check and out in (None, STREAM):
        raise click.UsageError("--check compares a directory; give --out-dir DIR (it cannot check a stream)")
    result = _refuse_auto_layouts(validate_path(blueprint))
    if not result.ok or result.blueprint is None or result.context is None:
        _stop_invalid(result, output)
    model, context = result.blueprint, result.context
    result = result.text_only()  # validation has read the data; compile needs at most the text, for spans
    plan = compile_blueprint(context)
    # Compile reports nothing the checks did not (tests/test_one_gate.py); its own would still be shown.
    result = dataclasses.replace(result, diagnostics=tuple(sort_diagnostics([*result.diagnostics, *plan.diagnostics])))
    diagnostics = list(result.diagnostics)
    if not result.ok:
        _stop_invalid(result, output)
    if output != "json":
        echo_diagnostics([result])
    if not LIBYAML:
        click.echo(SLOW_WRITER_NOTE, err=True)
    if out == STREAM:
        # Rendered a document at a time into a file, printed once all are: held in memory, the whole stream, the plan
        # and the validated document together were most of compile's memory; printed as rendered, a failure half
        # way (a bug) would leave half a stream for `kubectl apply -f -` to apply.
        left_out = stream_leaves_out(plan)
        with paused(), tempfile.TemporaryFile("w+", encoding="utf-8") as spool:
            for text in stream_documents(plan):
                spool.write(text)
            spool.seek(0)
            while chunk := spool.read(SPOOL_CHUNK):
                click.echo(chunk, nl=False)
        if left_out:
            click.echo(
                f"gpustack: not in the stream (compile to a directory for them): {'; '.join(left_out)}", err=True
            )
        return
    written = False
    try:
        if check:
            assert out is not None
            differences = stale_files(plan, out)
            if output == "json":
                report = compile_report(result.file, plan, diagnostics, out, written=False)
                click.echo(dump_document("CompileReport", {**report, "stale": differences}), nl=False)
                sys.exit(1 if differences else 0)
            if differences:
                # File names and contents read from the folder: anything could be in them.
                echo_text("\n".join(differences))
                echo_text(
                    f"{out} is stale: {len(differences)} file(s) differ; run gpustack compile {blueprint} -d {out}"
                )
                sys.exit(1)
            echo_text(f"{out} is up to date")
            return
        if out is not None:
            files = write_directory(plan, out, inputs=_inputs(result.file, model))
            written = True
    except DiagnosticError as error:
        _stop_invalid(dataclasses.replace(result, diagnostics=error.diagnostics), output)
    if output == "json":
        click.echo(
            dump_document("CompileReport", compile_report(result.file, plan, diagnostics, out, written)), nl=False
        )
    else:
        click.echo(
            f"wrote {len(files)} files to {out}: {len(plan.objects)} objects, {len(plan.releases)} Helm release(s)"
        )


def _inputs(file: str, blueprint: Blueprint) -> list[Path]:
    """The files this compile read: an output folder holding one of them is never replaced."""
    if file == "-":
        return []
    return [Path(file), *(Path(file).parent / path for path, _ in blueprint.templates)]


def _refuse_auto_layouts(result: Validation) -> Validation:
    """layout: auto (GS310) is a warning to validate and an error here, as under validate --strict: one gate, and no
    layout nobody chose reaches a cluster (`gpustack recommend --write` replaces it)."""
    promoted = tuple(d.as_error() if d.code == MIG_LAYOUT_AUTO else d for d in result.diagnostics)
    return dataclasses.replace(result, diagnostics=promoted)


def _one_directory(*spellings: str | None) -> str | None:
    given = [s for s in spellings if s is not None]
    if len(set(given)) > 1:
        raise click.UsageError(f"two output directories given ({' and '.join(given)}); give one --out-dir")
    return given[0] if given else None


def _stop_invalid(result: Validation, output: str) -> NoReturn:
    """As every command stops at invalid input; `--output json` still answers with a CompileReport (nothing written)."""
    if output == "json":
        report = compile_report(result.file, None, result.diagnostics, None, False)
        click.echo(dump_document("CompileReport", report), nl=False)
        sys.exit(1)
    stop_invalid([result], output, NOTHING_WRITTEN)

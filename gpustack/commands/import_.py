"""`gpustack import SNAPSHOT [--out-file BLUEPRINT] [--output yaml|json]`: a blueprint inferred from a running cluster.

`--output/-o` is a format, as on every other command; where the blueprint goes is `--out-file/-f`. gpustack 0.1's
`-o FILE` still works until the next release, with a warning: a `-o` value that is a format name is the format
(`-o json` never writes a file named json), anything else is the old output file.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import click

from gpustack.cluster.importer import Import, import_snapshot
from gpustack.cluster.snapshot import ClusterSnapshot, read_snapshot
from gpustack.codes import OUTPUT_UNSAFE
from gpustack.collector import paused
from gpustack.commands.options import FORMAT_NAMES, output_option
from gpustack.commands.reporting import echo_text, stop_invalid
from gpustack.diagnostic import Diagnostic, DiagnosticError, Severity, sort_diagnostics
from gpustack.jsondoc import dump_document
from gpustack.report import file_report, format_text
from gpustack.validation import Validation, validate_text

FORMATS = ("yaml", "json")
NOTHING_WRITTEN = "nothing written"


def _report(diagnostics: Sequence[Diagnostic], lines: Sequence[str]) -> None:
    def lookup(file: str, line: int) -> str:
        return lines[line - 1] if 0 < line <= len(lines) else ""

    if diagnostics:
        click.echo(format_text(sort_diagnostics(diagnostics), lookup) + "\n", err=True)


def _write(path: str, text: str) -> None:
    """Replace `path` whole or not at all: a half-written blueprint must never be left behind."""
    target = Path(path)
    handle, staging = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent or Path("."))
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(staging, target)
    except BaseException:
        Path(staging).unlink(missing_ok=True)
        raise


def _one_file(out_file: str | None, legacy_out_file: str | None) -> str | None:
    if out_file is not None and legacy_out_file is not None:
        raise click.UsageError("give the output file once: --out-file/-f FILE (-o FILE is its deprecated spelling)")
    path = out_file if out_file is not None else legacy_out_file
    if path is not None and path in FORMAT_NAMES:
        # `-f json` is nearly always `-o json` typed wrong, as `compile -d json` is.
        raise click.BadParameter(
            f"'{path}' is named like an output format; to print {path}, use --output {path}; "
            f"to write to a file named {path}, give ./{path}",
            param_hint="--out-file",
        )
    return path


def _report_json(snapshot: str, result: Import, out_file: str | None, written: bool) -> str:
    spec = result.data.get("spec", {})
    data: dict[str, Any] = {
        "snapshot": snapshot,
        "outFile": out_file,
        "written": written,
        "poolCount": len(spec.get("nodePools", [])),
        "tenantCount": len(spec.get("tenants", [])),
        # A pool's or tenant's note names its section and name; the whole blueprint's say "guessed" or "ignored".
        "notes": [
            {
                "section": section or None,
                "name": name if section else None,
                "kind": name if not section else "guessed",
                "note": note,
            }
            for section, name, note in result.notes
        ],
        **{key: value for key, value in file_report(snapshot, result.diagnostics).items() if key != "file"},
        "blueprint": result.data if result.text else None,
    }
    return dump_document("ImportReport", data)


@click.command(name="import")
@click.argument("snapshot", type=click.Path(dir_okay=False, allow_dash=True))
@click.option(
    "--out-file",
    "-f",
    "out_file",
    metavar="FILE",
    type=click.Path(dir_okay=False, writable=True),
    help="Write the blueprint to FILE (default: print it on standard output).",
)
@click.option("--name", default=None, help="The blueprint's metadata.name (default: the snapshot file's name).")
@output_option(FORMATS, legacy_file=True)
def command(snapshot: str, out_file: str | None, legacy_out_file: str | None, name: str | None, output: str) -> None:
    """Infer a blueprint from a cluster SNAPSHOT (`kubectl get nodes,pods,priorityclasses,resourcequotas,
    namespaces -A -o yaml`, optionally with the GPU Operator's ClusterPolicy and the ConfigMaps of the operator's
    and the device plugin's namespaces).

    Pools come from GPU Feature Discovery and cloud node-pool labels, tenants from namespaces with GPU
    quotas; what was guessed is marked with comments. The blueprint is validated before it is written
    to --out-file or printed. --output json prints an ImportReport (the blueprint as data, every guess,
    the snapshot's warnings) instead of the blueprint's YAML. Exit 0 when written, 1 when the snapshot is
    invalid or yields no valid blueprint.
    """
    sys.exit(_import(snapshot, _one_file(out_file, legacy_out_file), name, output))


@paused()
def _import(snapshot: str, out: str | None, name: str | None, output: str) -> int:
    """The command's work; its exit code (invalid input still stops it from inside, with its diagnostics).

    Paused whole, as simulate and drift are: the stages' own pauses each ended with a young collection walking all
    the stage had made (0.13 s at 13,000 nodes). It returns rather than exits, so that what it made is freed as it
    returns, inside the pause."""
    try:
        loaded: ClusterSnapshot = read_snapshot(snapshot)
    except DiagnosticError as error:
        stop_invalid([Validation(snapshot, None, None, error.diagnostics)], _stop_format(output), NOTHING_WRITTEN)
    document = loaded.document
    lines = document.text.splitlines() if document is not None else []
    default_name = Path(snapshot).stem if snapshot != "-" else "imported"
    result = import_snapshot(loaded, name or default_name)
    _report(result.diagnostics, lines)
    if not result.text:
        if output == "json":
            click.echo(_report_json(snapshot, result, out, written=False), nl=False)
        refused = any(d.severity is Severity.ERROR for d in result.diagnostics)  # too many pools for a blueprint
        why = "" if refused else "no node with NVIDIA GPUs that gpustack knows; "
        echo_text(f"{snapshot}: {why}nothing written", err=True)
        return 1
    check = validate_text(result.text, out or "<imported blueprint>")
    if any(d.severity is Severity.ERROR for d in check.diagnostics):
        # A bug in the importer, or a cluster gpustack cannot express: say so, write nothing.
        errors = tuple(d for d in check.diagnostics if d.severity is Severity.ERROR)
        _stop_unexpressible(Validation(check.file, None, None, errors), result, output)
    if out is None:
        if output == "json":
            click.echo(_report_json(snapshot, result, None, written=False), nl=False)
        else:
            click.echo(result.text, nl=False)
        return 0
    try:
        _write(out, result.text)
    except OSError as error:
        reason = error.strerror or str(error)
        problem = Diagnostic(
            OUTPUT_UNSAFE,
            Severity.ERROR,
            f"cannot write {out}: {reason}; expected a writable file in an existing directory",
            hint="check the path and its directory's permissions; nothing was written",
        )
        stop_invalid([Validation(out, None, None, (problem,))], _stop_format(output), NOTHING_WRITTEN)
    if output == "json":
        click.echo(_report_json(snapshot, result, out, written=True), nl=False)
    pools = len(result.data["spec"]["nodePools"])
    tenants = len(result.data["spec"].get("tenants", []))
    echo_text(f"wrote {out}: {pools} pool(s), {tenants} tenant(s)", err=True)
    return 0


def _stop_format(output: str) -> str:
    """stop_invalid's format: JSON for --output json, else the text diagnostics on stderr."""
    return "json" if output == "json" else "text"


def _stop_unexpressible(check: Validation, result: Import, output: str) -> NoReturn:
    if output == "json":
        stop_invalid([check], "json", NOTHING_WRITTEN, command="import")
    _report(check.diagnostics, result.text.splitlines())
    echo_text("the imported blueprint does not validate; nothing written", err=True)
    sys.exit(1)

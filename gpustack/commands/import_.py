"""`gpustack import SNAPSHOT [-o BLUEPRINT]`: a blueprint inferred from a running cluster."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import click

from gpustack.cluster.importer import import_snapshot
from gpustack.cluster.snapshot import ClusterSnapshot, read_snapshot
from gpustack.codes import OUTPUT_UNSAFE
from gpustack.diagnostic import Diagnostic, DiagnosticError, Severity, sort_diagnostics
from gpustack.report import SourceLine, format_text
from gpustack.validation import Validation, source_lines, validate_text


def _report(diagnostics: Sequence[Diagnostic], lines: Sequence[str] | SourceLine) -> None:
    if callable(lines):
        lookup = lines
    else:

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


@click.command(name="import")
@click.argument("snapshot", type=click.Path(dir_okay=False, allow_dash=True))
@click.option(
    "--out",
    "-o",
    "out",
    type=click.Path(dir_okay=False, writable=True),
    help="Write the blueprint to this file (default: standard output).",
)
@click.option("--name", default=None, help="The blueprint's metadata.name (default: the snapshot file's name).")
def command(snapshot: str, out: str | None, name: str | None) -> None:
    """Infer a blueprint from a cluster SNAPSHOT (`kubectl get nodes,pods,priorityclasses,resourcequotas,
    namespaces -A -o yaml`, optionally with the device plugin's and mig-parted's ConfigMaps).

    Pools come from GPU Feature Discovery and cloud node-pool labels, tenants from namespaces with GPU
    quotas; what was guessed is marked with comments. The blueprint is validated before it is written.
    Exit 0 when written, 1 when the snapshot is invalid or yields no valid blueprint.
    """
    try:
        loaded: ClusterSnapshot = read_snapshot(snapshot)
    except DiagnosticError as error:
        _report(error.diagnostics, source_lines([Validation(snapshot, None, None, error.diagnostics)]))
        click.echo(f"{snapshot}: not a readable cluster snapshot; nothing written", err=True)
        sys.exit(1)
    document = loaded.document
    lines = document.text.splitlines() if document is not None else []
    default_name = Path(snapshot).stem if snapshot != "-" else "imported"
    result = import_snapshot(loaded, name or default_name)
    _report(result.diagnostics, lines)
    if not result.text:
        click.echo(f"{snapshot}: no node with NVIDIA GPUs that gpustack knows; nothing written", err=True)
        sys.exit(1)
    check = validate_text(result.text, out or "<imported blueprint>")
    errors = [d for d in check.diagnostics if d.severity is Severity.ERROR]
    if errors:  # a bug in the importer, or a cluster gpustack cannot express: say so, write nothing
        blueprint_lines = result.text.splitlines()
        _report(errors, blueprint_lines)
        click.echo("the imported blueprint does not validate; nothing written", err=True)
        sys.exit(1)
    if out is None:
        click.echo(result.text, nl=False)
    else:
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
            _report([problem], [])
            sys.exit(1)
        pools = len(result.data["spec"]["nodePools"])
        tenants = len(result.data["spec"].get("tenants", []))
        click.echo(f"wrote {out}: {pools} pool(s), {tenants} tenant(s)", err=True)
    sys.exit(0)

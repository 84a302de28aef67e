"""How every command shows diagnostics: as `gpustack validate` does, each with its source line and caret."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from typing import NoReturn

import click

from gpustack.diagnostic import Severity, sort_diagnostics
from gpustack.escapes import printable
from gpustack.plan import Plan
from gpustack.report import format_json, format_text, stop_summary
from gpustack.validation import Validation, source_lines


def echo_text(text: str, *, err: bool = False, nl: bool = True) -> None:
    """Text for a terminal (a report, a line naming a file): controls, bidi overrides and line separators escaped,
    newlines kept (escapes.printable, the one escaping function)."""
    click.echo(printable(text, keep_newlines=True), err=err, nl=nl)


def echo_diagnostics(results: Sequence[Validation], *, err: bool = True) -> None:
    """The diagnostics of `results` as text (warnings worth reading before a command goes on)."""
    diagnostics = [d for r in results for d in sort_diagnostics(r.diagnostics)]
    if diagnostics:
        click.echo(format_text(diagnostics, source_lines(results)) + "\n", err=err)


def stop_invalid(
    results: Sequence[Validation], output: str, outcome: str, *, command: str | None = None, exit_code: int = 1
) -> NoReturn:
    """Say why a command stops at invalid input, and exit: JSON on stdout, or the diagnostics on stderr followed by
    `FILE: N error(s); OUTCOME` (e.g. "nothing written")."""
    if output == "json":
        click.echo(format_json([(r.file, sort_diagnostics(r.diagnostics)) for r in results]), nl=False)
    else:
        echo_diagnostics(results)
        diagnostics = [d for r in results for d in r.diagnostics]
        click.echo(stop_summary([r.file for r in results], diagnostics, outcome, command), err=True)
    sys.exit(exit_code)


def stop_if_compile_failed(
    compiled: Sequence[tuple[Validation | None, Plan]], output: str, outcome: str, *, command: str, exit_code: int
) -> None:
    """Compile reports nothing validation did not (tests/test_one_gate.py); should it ever, a command that compiles
    both sides of a change stops as it does for an invalid blueprint, compile's errors under their file."""
    failed = [
        dataclasses.replace(validation, diagnostics=errors)
        for validation, plan in compiled
        if validation is not None and (errors := tuple(d for d in plan.diagnostics if d.severity is Severity.ERROR))
    ]
    if failed:
        stop_invalid(failed, output, outcome, command=command, exit_code=exit_code)

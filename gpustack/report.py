"""Diagnostics for people (file:line:col, source line, caret, hint) and for tools (JSON)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from gpustack.codes import CODES, DIAGNOSTICS_LEFT_OUT, docs_page
from gpustack.diagnostic import Diagnostic, Severity, Span
from gpustack.escapes import printable
from gpustack.jsondoc import dump_document

SourceLine = Callable[[str, int], str]


def _no_source(file: str, line: int) -> str:
    return ""


# Listed per file in every format; the rest are counted in one closing diagnostic (GS902): 30,000 SARIF results are
# more than GitHub code scanning takes in one upload (N14). A source line is shown as a window around the caret: a
# one-line (JSON-style) blueprint would otherwise print the whole file under every diagnostic.
MAX_SHOWN_PER_FILE = 50
WINDOW = 160


def _window(text: str, column: int) -> tuple[str, int]:
    """At most WINDOW characters of a source line around a 1-based column, and the caret's column in it."""
    if len(text) <= WINDOW:
        return text, column
    start = max(0, min(column - 1 - WINDOW // 2, len(text) - WINDOW))
    prefix = "..." if start > 0 else ""
    suffix = "..." if start + WINDOW < len(text) else ""
    return prefix + text[start : start + WINDOW] + suffix, column - start + len(prefix)


def format_diagnostic(diagnostic: Diagnostic, source_line: SourceLine = _no_source) -> str:
    span = diagnostic.span
    where = f"{printable(span.file)}:{span.start.line}:{span.start.column}: " if span is not None else ""
    head = f"{where}{diagnostic.severity}[{diagnostic.code}]: {printable(diagnostic.message)}"
    lines = [head]
    if diagnostic.path:
        lines.append(f"  --> {printable(diagnostic.json_path)}")
    if span is not None:
        text = source_line(span.file, span.start.line)
        if text:
            shown, column = _window(text.expandtabs(1), span.start.column)
            gutter = str(span.start.line)
            lines.append(f"{' ' * len(gutter)} |")
            lines.append(f"{gutter} | {printable(shown)}")
            carets = _underline(span, text)[: max(len(shown) - column + 1, 1)]
            # An escape is wider than the character it stands for: the caret goes under the escaped text.
            indent = len(printable(shown[: column - 1]))
            lines.append(f"{' ' * len(gutter)} | {' ' * indent}{carets}")
    for related in diagnostic.related:
        lines.append(f"  note: see {printable(related.file)}:{related.start.line}:{related.start.column}")
    if diagnostic.hint:
        lines.append(f"  = hint: {printable(diagnostic.hint)}")
    if diagnostic.code in CODES:
        lines.append(f"  = see: {docs_page(diagnostic.code)}")
    return "\n".join(lines)


def _underline(span: Span, text: str) -> str:
    """Carets under the whole value when it ends on its first line, else one at its start."""
    end = span.end
    if end is None or end.line != span.start.line or end.column <= span.start.column:
        return "^"
    return "^" * min(end.column - span.start.column, max(len(text) - span.start.column + 1, 1))


def summary(diagnostics: Sequence[Diagnostic], files: int) -> str:
    errors = sum(d.severity is Severity.ERROR for d in diagnostics)
    warnings = len(diagnostics) - errors
    noun = "file" if files == 1 else "files"
    if not diagnostics:
        return f"{files} {noun} valid"
    return f"{files} {noun} checked: {errors} error(s), {warnings} warning(s)"


@dataclass(frozen=True)
class Listed:
    """What a report lists of some diagnostics: the first MAX_SHOWN_PER_FILE of each file, in the order given, then
    one closing GS902 diagnostic per file that had more; `omitted` counts those left out."""

    diagnostics: tuple[Diagnostic, ...]
    omitted: int


def listed(diagnostics: Sequence[Diagnostic], limit: int = MAX_SHOWN_PER_FILE) -> Listed:
    """The one cap every format applies (text, JSON, SARIF), so they list the same diagnostics."""
    kept: list[Diagnostic] = []
    left: dict[str | None, list[Diagnostic]] = {}
    seen: dict[str | None, int] = {}
    for diagnostic in diagnostics:
        file = diagnostic.span.file if diagnostic.span is not None else None
        seen[file] = seen.get(file, 0) + 1
        if seen[file] <= limit:
            kept.append(diagnostic)
        else:
            left.setdefault(file, []).append(diagnostic)
    closing = [_left_out(file, rest, limit) for file, rest in left.items()]
    return Listed((*kept, *closing), sum(len(rest) for rest in left.values()))


def _left_out(file: str | None, rest: Sequence[Diagnostic], limit: int) -> Diagnostic:
    """The closing diagnostic: at the first one left out (code scanning shows a result only at a location)."""
    errors = sum(d.severity is Severity.ERROR for d in rest)
    where = f" in {file}" if file is not None else ""
    counts = f"{errors} error(s), {len(rest) - errors} warning(s)"
    return Diagnostic(
        DIAGNOSTICS_LEFT_OUT,
        Severity.ERROR if errors else Severity.WARNING,
        f"{len(rest)} more diagnostic(s){where}, not shown ({counts}); the first is here",
        rest[0].span,
        hint=f"every output lists at most {limit} diagnostics per file: fix these and run again to see the rest",
    )


def format_text(diagnostics: Sequence[Diagnostic], source_line: SourceLine = _no_source) -> str:
    return "\n\n".join(format_diagnostic(d, source_line) for d in listed(diagnostics).diagnostics)


def stop_summary(
    files: Sequence[str], diagnostics: Sequence[Diagnostic], outcome: str, command: str | None = None
) -> str:
    """The line under an invalid blueprint's diagnostics, for every command and for Pulumi alike:
    `[gpustack COMMAND: ]FILE: N error(s); OUTCOME` (e.g. "nothing written", "nothing applied")."""
    errors = sum(d.severity is Severity.ERROR for d in diagnostics)
    lead = f"gpustack {command}: " if command is not None else ""
    return f"{lead}{', '.join(printable(file) for file in files)}: {errors} error(s); {outcome}"


def diagnostic_json(diagnostic: Diagnostic) -> dict[str, Any]:
    span = diagnostic.span
    out: dict[str, Any] = {
        "code": diagnostic.code,
        "severity": str(diagnostic.severity),
        "message": diagnostic.message,
        "path": diagnostic.json_path,
        "hint": diagnostic.hint,
        "file": span.file if span else None,
        "range": None
        if span is None
        else {
            "start": {"line": span.start.line, "column": span.start.column},
            "end": None if span.end is None else {"line": span.end.line, "column": span.end.column},
        },
    }
    if diagnostic.related:
        out["related"] = [{"file": r.file, "line": r.start.line, "column": r.start.column} for r in diagnostic.related]
    return out


def file_report(file: str, diagnostics: Sequence[Diagnostic]) -> dict[str, Any]:
    """One file's verdict: the counts are of every diagnostic, the list is capped as in every format (`listed`)."""
    errors = sum(d.severity is Severity.ERROR for d in diagnostics)
    shown = listed(diagnostics)
    return {
        "file": file,
        "valid": errors == 0,
        "errorCount": errors,
        "warningCount": len(diagnostics) - errors,
        "omittedCount": shown.omitted,
        "diagnostics": [diagnostic_json(d) for d in shown.diagnostics],
    }


def format_json(results: Sequence[tuple[str, Sequence[Diagnostic]]]) -> str:
    """A ValidationReport: every file's diagnostics (also what other commands print for an invalid blueprint)."""
    files = [file_report(file, diagnostics) for file, diagnostics in results]
    return dump_document("ValidationReport", {"valid": all(f["valid"] for f in files), "files": files})

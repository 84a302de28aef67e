"""Diagnostics for people (file:line:col, source line, caret, hint) and for tools (JSON)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from gpustack.codes import CODES, docs_page
from gpustack.diagnostic import Diagnostic, Severity, Span
from gpustack.jsondoc import dump_document

SourceLine = Callable[[str, int], str]


def _no_source(file: str, line: int) -> str:
    return ""


# Shown per file in text; the rest are counted (JSON lists them all). A source line is shown as a window around the
# caret: a one-line (JSON-style) blueprint would otherwise print the whole file under every diagnostic.
MAX_SHOWN_PER_FILE = 50
WINDOW = 160
# C0 and C1 control characters but tab: a YAML string can carry ESC, and a terminal would obey it.
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f]")


_CONTROL_BUT_NEWLINE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str, *, keep_newlines: bool = False) -> str:
    """Text safe to print on a terminal: control characters written as escapes (ESC as \\x1b)."""
    pattern = _CONTROL_BUT_NEWLINE if keep_newlines else _CONTROL
    return pattern.sub(lambda match: repr(match.group())[1:-1], text)


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
            lines.append(f"{' ' * len(gutter)} | {' ' * (column - 1)}{carets}")
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


def format_text(diagnostics: Sequence[Diagnostic], source_line: SourceLine = _no_source) -> str:
    shown: list[str] = []
    per_file: dict[str | None, int] = {}
    for diagnostic in diagnostics:
        file = diagnostic.span.file if diagnostic.span is not None else None
        per_file[file] = per_file.get(file, 0) + 1
        if per_file[file] <= MAX_SHOWN_PER_FILE:
            shown.append(format_diagnostic(diagnostic, source_line))
    for file, count in per_file.items():
        if count > MAX_SHOWN_PER_FILE:
            where = f" in {printable(file)}" if file is not None else ""
            shown.append(
                f"... and {count - MAX_SHOWN_PER_FILE} more diagnostic(s){where}, not shown "
                "(--output json lists them all)"
            )
    return "\n\n".join(shown)


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
    errors = sum(d.severity is Severity.ERROR for d in diagnostics)
    return {
        "file": file,
        "valid": errors == 0,
        "errorCount": errors,
        "warningCount": len(diagnostics) - errors,
        "diagnostics": [diagnostic_json(d) for d in diagnostics],
    }


def format_json(results: Sequence[tuple[str, Sequence[Diagnostic]]]) -> str:
    """A ValidationReport: every file's diagnostics (also what other commands print for an invalid blueprint)."""
    files = [file_report(file, diagnostics) for file, diagnostics in results]
    return dump_document("ValidationReport", {"valid": all(f["valid"] for f in files), "files": files})

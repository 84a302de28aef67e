"""Diagnostics for people (file:line:col, source line, caret, hint) and for tools (JSON)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from gpustack.codes import CODES, docs_page
from gpustack.diagnostic import Diagnostic, Severity, Span
from gpustack.jsondoc import dump_document

SourceLine = Callable[[str, int], str]


def _no_source(file: str, line: int) -> str:
    return ""


def format_diagnostic(diagnostic: Diagnostic, source_line: SourceLine = _no_source) -> str:
    span = diagnostic.span
    where = f"{span.file}:{span.start.line}:{span.start.column}: " if span is not None else ""
    head = f"{where}{diagnostic.severity}[{diagnostic.code}]: {diagnostic.message}"
    lines = [head]
    if diagnostic.path:
        lines.append(f"  --> {diagnostic.json_path}")
    if span is not None:
        text = source_line(span.file, span.start.line)
        if text:
            gutter = str(span.start.line)
            lines.append(f"{' ' * len(gutter)} |")
            lines.append(f"{gutter} | {text.expandtabs(1)}")
            lines.append(f"{' ' * len(gutter)} | {' ' * (span.start.column - 1)}{_underline(span, text)}")
    for related in diagnostic.related:
        lines.append(f"  note: see {related.file}:{related.start.line}:{related.start.column}")
    if diagnostic.hint:
        lines.append(f"  = hint: {diagnostic.hint}")
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
    return "\n\n".join(format_diagnostic(d, source_line) for d in diagnostics)


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

"""Diagnostics as SARIF 2.1.0, so GitHub code scanning (and other SARIF viewers) mark the blueprint's lines.

Rule ids are the GS codes; each rule carries its summary, what triggers it and the fix from
gpustack/codes/, and helpUri points at its page under docs/codes/. Regions give start and end
line and column (1-based; the end column is the one just after the value, as SARIF counts).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from importlib import metadata
from pathlib import PurePath
from typing import Any
from urllib.parse import quote

from gpustack.codes import CODES, EXPLANATIONS, docs_page
from gpustack.diagnostic import Diagnostic, Severity, Span
from gpustack.escapes import json_safe
from gpustack.json_text import pretty_json
from gpustack.report import listed

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning"}


def format_sarif(results: Sequence[tuple[str, Sequence[Diagnostic]]]) -> str:
    """One run; each file's first 50 diagnostics, then a GS902 result at the first one left out (as text lists)."""
    diagnostics = listed([d for _, found in results for d in found]).diagnostics
    codes = sorted({d.code for d in diagnostics})
    index = {code: i for i, code in enumerate(codes)}
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "gpustack",
                "version": _version(),
                "rules": [_rule(code) for code in codes],
            }
        },
        "results": [_result(d, index[d.code]) for d in diagnostics],
        "columnKind": "unicodeCodePoints",
    }
    document = {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}
    return json_safe(pretty_json(document)) + "\n"


def _version() -> str:
    try:
        return metadata.version("gpustack")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "0+unknown"


def _rule(code: str) -> dict[str, Any]:
    summary = CODES.get(code, code)
    trigger, fix = EXPLANATIONS.get(code, (summary, ""))
    page = docs_page(code)
    return {
        "id": code,
        "name": _rule_name(summary),
        "shortDescription": {"text": summary},
        "fullDescription": {"text": trigger},
        "help": {
            "text": f"{trigger}\nFix: {fix}\nSee {page}",
            "markdown": f"{trigger}\n\n**Fix:** {fix}\n\nSee [{page}]({page}).",
        },
        "helpUri": page,
    }


def _rule_name(summary: str) -> str:
    """SARIF's rule name is one PascalCase identifier: 'unknown GPU model' -> UnknownGpuModel."""
    words = "".join(c if c.isalnum() else " " for c in summary).split()
    if words[:1] in (["a"], ["an"], ["the"]):
        words = words[1:]
    return "".join(w[:1].upper() + w[1:].lower() for w in words)


def _result(diagnostic: Diagnostic, rule_index: int) -> dict[str, Any]:
    text = diagnostic.message + (f"\nHint: {diagnostic.hint}" if diagnostic.hint else "")
    result: dict[str, Any] = {
        "ruleId": diagnostic.code,
        "ruleIndex": rule_index,
        "level": _LEVELS[diagnostic.severity],
        "message": {"text": text},
    }
    if diagnostic.span is not None:
        location = _location(diagnostic.span)
        if diagnostic.path:
            location["logicalLocations"] = [{"fullyQualifiedName": diagnostic.json_path, "kind": "member"}]
        result["locations"] = [location]
    if diagnostic.related:
        result["relatedLocations"] = [{"id": i, **_location(span)} for i, span in enumerate(diagnostic.related)]
    return result


def _location(span: Span) -> dict[str, Any]:
    region: dict[str, int] = {"startLine": span.start.line, "startColumn": span.start.column}
    if span.end is not None and span.end >= span.start:
        region |= {"endLine": span.end.line, "endColumn": span.end.column}
    return {"physicalLocation": {"artifactLocation": {"uri": _uri(span.file)}, "region": region}}


def _uri(file: str) -> str:
    """A relative path stays relative (code scanning resolves it against the repository), in URI spelling."""
    if file == "-":
        return "stdin"
    path = PurePath(file)
    if path.is_absolute():
        return path.as_uri()
    return quote(path.as_posix() if os.sep == "/" else file.replace(os.sep, "/"))

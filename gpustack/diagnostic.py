"""The one type every user-facing problem is reported as.

Loader, schema, semantic checks and compile all speak `Diagnostic`; only the
reporters turn them into text or JSON, and only the CLI turns them into an exit code.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

JsonPath = tuple[str | int, ...]


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True, order=True)
class Position:
    """A 1-based line and column in a source file."""

    line: int
    column: int


@dataclass(frozen=True)
class Span:
    file: str
    start: Position
    end: Position | None = None


@dataclass(frozen=True)
class Diagnostic:
    code: str
    severity: Severity
    message: str
    span: Span | None = None
    path: JsonPath = ()
    hint: str | None = None
    related: tuple[Span, ...] = field(default=())

    @property
    def json_path(self) -> str:
        return format_json_path(self.path)

    def sort_key(self) -> tuple[str, int, int, str, str]:
        if self.span is None:
            return ("", 0, 0, self.code, self.message)
        return (self.span.file, self.span.start.line, self.span.start.column, self.code, self.message)

    def as_error(self) -> Diagnostic:
        """The same diagnostic, promoted to an error (`--strict`)."""
        return Diagnostic(self.code, Severity.ERROR, self.message, self.span, self.path, self.hint, self.related)


class DiagnosticError(Exception):
    """Raised by an edge (load, write) when it cannot go on; carries what to tell the user."""

    def __init__(self, diagnostics: Sequence[Diagnostic]) -> None:
        self.diagnostics = tuple(diagnostics)
        super().__init__("; ".join(d.message for d in self.diagnostics))


def format_json_path(path: JsonPath) -> str:
    out = "$"
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part.replace("-", "_").replace("_", "a").isalnum() and not part[:1].isdigit():
            out += f".{part}"
        else:
            out += f"[{part!r}]"
    return out


def sort_diagnostics(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    return sorted(diagnostics, key=Diagnostic.sort_key)


def has_errors(diagnostics: Iterable[Diagnostic]) -> bool:
    return any(d.severity is Severity.ERROR for d in diagnostics)

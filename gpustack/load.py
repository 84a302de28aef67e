"""Reading a blueprint: the only door from a file (or standard input) to data, a `Document`.

This module is the edge: it reads at most MAX_BYTES, refuses text that is not UTF-8 or holds characters YAML
forbids, and words the parser's syntax errors. The hardened YAML reader itself (one document, aliases within
go-yaml's expansion budget, no merge keys, tags, duplicate or non-string keys, a depth limit, YAML 1.2 core-schema
typing) is `gpustack.event_reader`, and where each key and value starts and ends is kept packed by
`gpustack.positions`. A value written as an alias is located where the alias is used; `Document.alias_origins`
keeps where its anchor is written, and `Document.note_aliases` adds that place to a diagnostic as a note.
"""

from __future__ import annotations

import codecs
import dataclasses
import os
import re
import stat
import sys
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Final

import yaml

from gpustack.codes import FILE_TOO_LARGE, FILE_UNREADABLE, NOT_UTF8, YAML_SYNTAX
from gpustack.collector import paused
from gpustack.core_schema import STR_TAG, BlueprintLoader, PureBlueprintLoader, resolve_plain_scalar
from gpustack.diagnostic import Diagnostic, DiagnosticError, JsonPath, Position, Span
from gpustack.event_reader import (
    MAX_DEPTH,
    MAX_DIAGNOSTICS,
    Builder,
    located_error,
    mark_position,
    second_document,
    too_deep,
)
from gpustack.plain_reader import SecondDocument, plain_data
from gpustack.positions import PackedMarks, PackedPositions, end_positions

# What other modules and the tests read here: the reader's limits and typing, and the parser classes (the tests
# swap BlueprintLoader for the pure-Python one, which _load_marks below then uses).
__all__ = [
    "MAX_BYTES",
    "MAX_DEPTH",
    "MAX_DIAGNOSTICS",
    "STR_TAG",
    "BlueprintLoader",
    "Document",
    "PureBlueprintLoader",
    "parse_document",
    "read_document",
    "resolve_plain_scalar",
]

MAX_BYTES: Final = 8 * 1024 * 1024


@dataclass(frozen=True)
class Document:
    """A loaded blueprint: its data plus where each key and value starts in the source."""

    file: str  # the name to show in diagnostics, as the user gave it
    text: str = field(repr=False)
    data: Any = field(repr=False)
    # Keyed by the path jsonschema reports (tuple(error.absolute_path)); the root is ().
    value_positions: Mapping[JsonPath, Position] = field(repr=False)
    # Keyed by the path of the key's value.
    key_positions: Mapping[JsonPath, Position] = field(repr=False)
    # The path of each value written as an alias -> where its anchor's value is written.
    alias_origins: Mapping[JsonPath, Position] = field(default_factory=dict, repr=False)

    def span(self, path: Sequence[str | int], *, key: bool = False) -> Span:
        """Where `path` starts and ends (its key with key=True), else its nearest located ancestor, else 1:1."""
        path = tuple(path)
        if key and path in self.key_positions:
            return Span(self.file, self.key_positions[path], self._ends[1].get(path))
        for length in range(len(path), -1, -1):
            position = self.value_positions.get(path[:length])
            if position is not None:
                return Span(self.file, position, self._ends[0].get(path[:length]))
        return Span(self.file, Position(1, 1))

    @cached_property
    def _ends(self) -> tuple[Mapping[JsonPath, Position], Mapping[JsonPath, Position]]:
        """Where each value and key ends, just after its last character (as editors and SARIF count)."""
        return end_positions(self.value_positions), end_positions(self.key_positions)

    def text_only(self) -> Document:
        """This document holding only its text: the data dropped, and the positions found again from the text if a
        span is ever asked for. What compile keeps, once validation has read what it needs (at fleet size the
        data and positions are a third of compile's memory, and compile seldom reports anything)."""
        again = _Reparse(self.text, self.file)
        values, keys, aliases = (PackedPositions(marks) for marks in (again.values, again.keys, again.aliases))
        return Document(self.file, self.text, None, values, keys, aliases)

    def note_aliases(self, diagnostics: Sequence[Diagnostic]) -> list[Diagnostic]:
        """`diagnostics`, each about a value written as an alias (or inside one) with a note of where the anchor's
        value is written: the diagnostic stands where the alias is used, the note where the value is written."""
        if not self.alias_origins:
            return list(diagnostics)
        noted: list[Diagnostic] = []
        for diagnostic in diagnostics:
            origin = self._alias_origin(diagnostic.path) if diagnostic.path else None
            if origin is None or diagnostic.span is None or diagnostic.span.file != self.file:
                noted.append(diagnostic)
                continue
            note = Span(self.file, origin)
            related = diagnostic.related if note in diagnostic.related else (*diagnostic.related, note)
            noted.append(dataclasses.replace(diagnostic, related=related))
        return noted

    def _alias_origin(self, path: JsonPath) -> Position | None:
        for length in range(len(path), 0, -1):
            origin = self.alias_origins.get(path[:length])
            if origin is not None:
                return origin
        return None

    def source_line(self, line: int) -> str:
        """The text of 1-based `line` without its line break; '' when out of range."""
        starts, ends = self._lines
        return self.text[starts[line - 1] : ends[line - 1]] if 1 <= line <= len(starts) else ""

    @cached_property
    def _lines(self) -> tuple[array[int], array[int]]:
        """Where each line starts and ends (its break excluded), as `str.splitlines` splits the text.

        Offsets, not the lines: kept for as long as the document (a compile's whole run), the lines of a fleet's
        blueprint were 1 MB beside its 0.6 MB of text; these are 16 bytes a line.
        """
        starts, ends = array("q", [0]), array("q")
        for found in _SPLITLINES_BREAK.finditer(self.text):
            ends.append(found.start())
            starts.append(found.end())
        if starts[-1] == len(self.text):
            starts.pop()  # a text that ends with a line break has no empty line after it
        else:
            ends.append(len(self.text))
        return starts, ends


def parse_document(text: str | bytes, file: str, *, positions_later: bool = False) -> Document:
    """Load one blueprint from memory. Raises DiagnosticError, and nothing else, on bad input.

    positions_later=True reads the data by `plain_reader`'s quick path where it can, and finds the positions again
    from the text the first time a span is asked for (`Document.text_only`'s way): for a large document that seldom
    gets a diagnostic (a cluster snapshot), not for a blueprint, whose warnings would pay for a second read.
    Either way the data, the diagnostics and their places are the same.
    """
    decoded = _decode(text, file)
    if positions_later:
        try:
            with paused(acyclic=True):  # plain data: no cycles, so none to look for
                data = plain_data(decoded, BlueprintLoader)
        except SecondDocument as second:  # the Builder's own refusal, without its reading the first one again
            raise DiagnosticError([second_document(file, second.start)]) from None
        if data is not None:
            return dataclasses.replace(Document(file, decoded, None, {}, {}).text_only(), data=data)
    data, value_positions, key_positions, alias_origins = _load_yaml(decoded, file)
    return Document(file, decoded, data, value_positions, key_positions, alias_origins)


def read_document(path: str | os.PathLike[str], display_name: str | None = None) -> Document:
    """Read and load a blueprint file; '-' reads standard input.

    Never reads more than MAX_BYTES + 1 bytes, so an oversized file costs no memory.
    """
    name = display_name if display_name is not None else os.fspath(path)
    data = _read_stdin(name) if os.fspath(path) == "-" else _read_file(path, name)
    return parse_document(data, name)


def read_text(path: str | os.PathLike[str]) -> str:
    """A file's text ('-': standard input), read and decoded as read_document reads it (size cap, encoding), for
    callers that load it in parts (a cluster snapshot of several YAML documents)."""
    name = os.fspath(path)
    data = _read_stdin(name) if name == "-" else _read_file(path, name)
    return _decode(data, name)


# --- the IO edge -------------------------------------------------------------------------

_READ_HINTS: Final[tuple[tuple[type[OSError], str], ...]] = (
    (FileNotFoundError, "check the path; relative paths are resolved from the current directory"),
    (IsADirectoryError, "give the path of a blueprint file, not a directory"),
    (PermissionError, "check the file's permissions, or run as a user who may read it"),
)


def _read_file(path: str | os.PathLike[str], name: str) -> bytes:
    try:
        with open(path, "rb") as stream:
            info = os.fstat(stream.fileno())
            if stat.S_ISREG(info.st_mode) and info.st_size > MAX_BYTES:
                raise DiagnosticError([_too_large(name, info.st_size)])
            data = stream.read(MAX_BYTES + 1)
    except OSError as error:
        raise DiagnosticError([_unreadable(name, error)]) from error
    if len(data) > MAX_BYTES:  # not a regular file, or it grew while we read it
        raise DiagnosticError([_too_large(name, None)])
    return data


def _read_stdin(name: str) -> bytes | str:
    if sys.stdin is None:
        raise DiagnosticError([_unreadable(name, OSError("standard input is closed"))])
    stream = getattr(sys.stdin, "buffer", sys.stdin)  # a text-only stdin has no .buffer
    try:
        data = stream.read(MAX_BYTES + 1)
    except (OSError, ValueError) as error:  # ValueError: reading a closed stream
        raise DiagnosticError([_unreadable(name, error)]) from error
    if len(data) > MAX_BYTES:
        raise DiagnosticError([_too_large(name, None)])
    return data


def _unreadable(name: str, error: OSError | ValueError) -> Diagnostic:
    reason = getattr(error, "strerror", None) or str(error)
    hint = next((hint for kind, hint in _READ_HINTS if isinstance(error, kind)), "check that the file exists")
    return located_error(FILE_UNREADABLE, f"cannot read {name}: {reason}", hint, name, Position(1, 1))


def _too_large(name: str, size: int | None, *, at_least: bool = False) -> Diagnostic:
    limit = f"the limit is {MAX_BYTES:,} bytes (8 MiB)"
    if size is None:
        message = f"the input is larger than {MAX_BYTES:,} bytes; {limit}"
    else:
        message = f"the file is {'at least ' if at_least else ''}{size:,} bytes; {limit}"
    hint = "a blueprint is usually a few kilobytes; check that this is the right file"
    return located_error(FILE_TOO_LARGE, message, hint, name, Position(1, 1))


# --- text checks -------------------------------------------------------------------------

_LINE_BREAK: Final = re.compile(r"\r\n|[\n\r\x85\u2028\u2029]")
# Where str.splitlines breaks a line (Document.source_line): _LINE_BREAK's and the control characters YAML's reader
# refuses, which a file read for display only may still hold.
_SPLITLINES_BREAK: Final = re.compile("\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
# The characters YAML's reader refuses (the pattern PyYAML's Reader uses; libyaml agrees).
_NON_PRINTABLE: Final = re.compile("[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_UTF16_BOMS: Final = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)


def _decode(text: str | bytes, file: str) -> str:
    if isinstance(text, bytes):
        if len(text) > MAX_BYTES:
            raise DiagnosticError([_too_large(file, len(text))])
        text = _decode_utf8(text, file)
    else:
        _check_str_size(text, file)
    text = text.removeprefix("\ufeff")
    _check_printable(text, file)
    return text


def _check_str_size(text: str, file: str) -> None:
    # A character is at least one UTF-8 byte, so a long str is refused without encoding it.
    if len(text) > MAX_BYTES:
        raise DiagnosticError([_too_large(file, len(text), at_least=not text.isascii())])
    if not text.isascii():
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > MAX_BYTES:
            raise DiagnosticError([_too_large(file, size)])


def _decode_utf8(data: bytes, file: str) -> str:
    if data.startswith(_UTF16_BOMS) and not data.startswith(codecs.BOM_UTF8):
        message = "the file is UTF-16 text (it starts with a UTF-16 byte-order mark); blueprints must be UTF-8"
        raise DiagnosticError([located_error(NOT_UTF8, message, _ENCODING_HINT, file, Position(1, 1))])
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        before = data[: error.start].decode("utf-8")
        position = _position_at(before, len(before))
        bad = data[error.start]
        message = f"the file is not UTF-8 text: byte 0x{bad:02X} at offset {error.start} is not valid UTF-8"
        raise DiagnosticError([located_error(NOT_UTF8, message, _ENCODING_HINT, file, position)]) from None


_ENCODING_HINT: Final = "save the blueprint as UTF-8 text (most editors offer this under 'Save with encoding')"


def _check_printable(text: str, file: str) -> None:
    match = _NON_PRINTABLE.search(text)
    if match is None:
        return
    code_point = ord(match.group())
    if 0xD800 <= code_point <= 0xDFFF:
        message = f"the text contains a lone surrogate U+{code_point:04X}, which is not valid Unicode"
        hint = "the text was decoded wrongly; read the file as UTF-8"
    else:
        message = f"the file contains the control character U+{code_point:04X}, which YAML does not allow"
        hint = "remove it; if the file is binary or damaged, restore it from a good copy"
    position = _position_at(text, match.start())
    raise DiagnosticError([located_error(NOT_UTF8, message, hint, file, position)])


def _position_at(text: str, offset: int) -> Position:
    """The 1-based line and column of character `offset` in `text`, counting YAML's line breaks."""
    line, line_start = 1, 0
    for match in _LINE_BREAK.finditer(text, 0, offset):
        line, line_start = line + 1, match.end()
    return Position(line, offset - line_start + 1)


# --- YAML --------------------------------------------------------------------------------


_Positions = Mapping[JsonPath, Position]


def _load_yaml(text: str, file: str) -> tuple[Any, _Positions, _Positions, _Positions]:
    builder, data = _load_marks(text, file)
    marks = (builder.value_marks, builder.key_marks, builder.alias_marks)
    values, keys, aliases = (PackedPositions(packed) for packed in marks)
    return data, values, keys, aliases


def _load_marks(text: str, file: str) -> tuple[Builder, Any]:
    builder = Builder(file)
    loader: yaml.SafeLoader | None = None
    try:
        loader = BlueprintLoader(text)
        with paused(acyclic=True):  # plain data and position maps: no cycles, so none to look for
            data = builder.build(loader)
    except yaml.MarkedYAMLError as error:
        raise DiagnosticError([*builder.diagnostics, _syntax_error(error, text, file)]) from None
    except yaml.YAMLError as error:  # a ReaderError; _check_printable should have caught it first
        raise DiagnosticError([*builder.diagnostics, _reader_error(error, file)]) from None
    except RecursionError:  # nothing here recurses, but a parser might; it must not escape as a crash
        raise DiagnosticError([*builder.diagnostics, too_deep(file, Position(1, 1), ())]) from None
    finally:
        if loader is not None:
            loader.dispose()
    return builder, data


def _syntax_error(error: yaml.MarkedYAMLError, text: str, file: str) -> Diagnostic:
    problem, context = (error.problem, error.context) if error.problem else (error.context or "invalid YAML", None)
    mark = error.problem_mark or error.context_mark
    position = mark_position(mark) if mark is not None else Position(1, 1)
    if "maximum nesting depth" in problem:  # libyaml's own limit (1000), hit before ours when it scans ahead
        return too_deep(file, position, ())
    message = problem
    related: tuple[Span, ...] = ()
    context_mark = error.context_mark
    if context and context_mark is not None and mark_position(context_mark) != position:
        context_position = mark_position(context_mark)
        message += f" ({context} at line {context_position.line}, column {context_position.column})"
        related = (Span(file, context_position),)
    elif context:
        message += f" ({context})"
    hint = _syntax_hint(problem, _char_at(text, position))
    return located_error(YAML_SYNTAX, message, hint, file, position, related=related)


_SYNTAX_HINTS: Final[tuple[tuple[str, str], ...]] = (
    ("mapping values are not allowed", "a value that contains ': ' must be quoted; otherwise check the indentation"),
    ("could not find expected ':'", "each mapping entry needs 'key: value'; check the indentation and the quotes"),
    ("did not find expected key", "entries of one mapping must start in the same column; check the indentation"),
    ("expected <block end>", "entries of one mapping must start in the same column; check the indentation"),
    ("unknown escape character", "inside double quotes write a backslash as \\\\, or use single quotes"),
    ("found unexpected end of stream", "a quoted string or a bracket is not closed"),
    ("unexpected end of stream", "a quoted string or a bracket is not closed"),
    ("undefined tag handle", "tags are not allowed in blueprints; remove it"),
)


def _syntax_hint(problem: str, char: str) -> str:
    if char == "\t" or "'\\t'" in problem:
        return "YAML does not allow tabs for indentation; use spaces"
    for fragment, hint in _SYNTAX_HINTS:
        if fragment in problem:
            return hint
    return "check the indentation and the quoting around this position"


def _char_at(text: str, position: Position) -> str:
    lines = text.splitlines()
    if position.line > len(lines):
        return ""
    line = lines[position.line - 1]
    return line[position.column - 1] if position.column <= len(line) else ""


def _reader_error(error: yaml.YAMLError, file: str) -> Diagnostic:
    return located_error(NOT_UTF8, f"the file is not valid YAML text: {error}", _ENCODING_HINT, file, Position(1, 1))


class _Reparse:
    """A text that loaded once, loaded again for its positions the first time they are asked for."""

    def __init__(self, text: str, file: str) -> None:
        self._text = text
        self._file = file

    @cached_property
    def _marks(self) -> tuple[PackedMarks, PackedMarks, PackedMarks]:
        try:
            builder = _load_marks(self._text, self._file)[0]
        except DiagnosticError:  # not a text that loaded: no positions
            return {}, {}, {}
        return builder.value_marks, builder.key_marks, builder.alias_marks

    def values(self) -> PackedMarks:
        return self._marks[0]

    def keys(self) -> PackedMarks:
        return self._marks[1]

    def aliases(self) -> PackedMarks:
        return self._marks[2]

"""Reading a blueprint: the only code that turns a file into data.

The YAML is hardened (research: validation-and-yaml.md §4): one document, a size cap, no
anchors, aliases or merge keys, no custom tags, no duplicate or non-string keys, and a
depth limit. Plain scalars are typed the YAML 1.2 core-schema way, so `yes`, `on`, `NO`,
`010`, `22:22` and `2024-01-01` stay the strings the user wrote.

The data is built straight from the parser's event stream, in one iterative pass that also
records where every key and value starts. No node graph is composed, so an alias bomb
is refused at its first anchor, deep nesting is refused at the level that breaks the
limit, and a 5 MB file loads several times faster than with PyYAML's composer.
"""

from __future__ import annotations

import codecs
import enum
import math
import os
import re
import stat
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Final

import yaml
from yaml.events import (
    AliasEvent,
    CollectionStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    NodeEvent,
    ScalarEvent,
    SequenceEndEvent,
    StreamEndEvent,
)

from gpustack.codes import (
    ALIAS,
    CUSTOM_TAG,
    DUPLICATE_KEY,
    EMPTY_DOCUMENT,
    FILE_TOO_LARGE,
    FILE_UNREADABLE,
    NON_STRING_KEY,
    NOT_UTF8,
    SEVERAL_DOCUMENTS,
    TOO_DEEP,
    YAML_SYNTAX,
)
from gpustack.collector import paused
from gpustack.diagnostic import Diagnostic, DiagnosticError, JsonPath, Position, Severity, Span

MAX_BYTES: Final = 8 * 1024 * 1024
MAX_DEPTH: Final = 64  # nesting depth of collections; the root collection is level 1
MAX_DIAGNOSTICS: Final = 50  # a file that is wrong everywhere should not bury the first problems

STR_TAG: Final = "tag:yaml.org,2002:str"
NULL_TAG: Final = "tag:yaml.org,2002:null"
BOOL_TAG: Final = "tag:yaml.org,2002:bool"
INT_TAG: Final = "tag:yaml.org,2002:int"
FLOAT_TAG: Final = "tag:yaml.org,2002:float"
MAP_TAG: Final = "tag:yaml.org,2002:map"
SEQ_TAG: Final = "tag:yaml.org,2002:seq"
_NON_SPECIFIC_TAG: Final = "!"
_STANDARD_TAG_PREFIX: Final = "tag:yaml.org,2002:"

# YAML 1.2 core schema, as the research loader verified it. Integers take no leading
# zeros, so `010` stays a string instead of silently becoming 8 or 10.
_CORE_SCHEMA: Final[tuple[tuple[str, re.Pattern[str], str], ...]] = (
    (NULL_TAG, re.compile(r"~|null|Null|NULL|"), "~nN"),
    (BOOL_TAG, re.compile(r"true|True|TRUE|false|False|FALSE"), "tTfF"),
    (INT_TAG, re.compile(r"[-+]?(?:0|[1-9][0-9]*)|0o[0-7]+|0x[0-9a-fA-F]+"), "-+0123456789"),
    (
        FLOAT_TAG,
        re.compile(
            r"[-+]?(?:\.[0-9]+|(?:0|[1-9][0-9]*)(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
            r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)"
        ),
        "-+.0123456789",
    ),
)
_CORE_PATTERN_BY_TAG: Final = {tag: pattern for tag, pattern, _ in _CORE_SCHEMA}


def _patterns_by_first_char() -> dict[str, list[tuple[str, re.Pattern[str]]]]:
    table: dict[str, list[tuple[str, re.Pattern[str]]]] = {"": [(NULL_TAG, _CORE_PATTERN_BY_TAG[NULL_TAG])]}
    for tag, pattern, first_chars in _CORE_SCHEMA:
        for char in first_chars:
            table.setdefault(char, []).append((tag, pattern))
    return table


_PATTERNS_BY_FIRST_CHAR: Final = _patterns_by_first_char()


def resolve_plain_scalar(text: str) -> str:
    """The tag a plain (unquoted, untagged) scalar gets under the YAML 1.2 core schema."""
    for tag, pattern in _PATTERNS_BY_FIRST_CHAR.get(text[:1], ()):
        if pattern.fullmatch(text):
            return tag
    return STR_TAG


def _install_core_schema(loader_class: type[yaml.SafeLoader]) -> None:
    # PyYAML's resolvers use .match(), so each pattern is anchored at the end here.
    loader_class.yaml_implicit_resolvers = {}
    for tag, pattern, first_chars in _CORE_SCHEMA:
        first = [*first_chars, ""] if tag == NULL_TAG else list(first_chars)
        loader_class.add_implicit_resolver(tag, re.compile(rf"(?:{pattern.pattern})\Z"), first)


class PureBlueprintLoader(yaml.SafeLoader):
    """The pure-Python parser, with YAML 1.2 core-schema resolvers."""


# CSafeLoader exists only when PyYAML was built with libyaml.
_FastSafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", PureBlueprintLoader)


# A base class chosen at import time is no static type: mypy cannot follow it.
class BlueprintLoader(_FastSafeLoader):  # type: ignore[valid-type,misc]
    """The libyaml parser where available, with YAML 1.2 core-schema resolvers.

    gpustack only pulls parse events from it (see `_Builder`); its resolvers are set too
    so that anyone composing with it gets the same typing.
    """


_install_core_schema(PureBlueprintLoader)
_install_core_schema(BlueprintLoader)


def _to_null(_text: str) -> None:
    return None


def _to_bool(text: str) -> bool:
    return text.lower() == "true"


def _to_int(text: str) -> int:
    # int() refuses more than 4300 decimal digits with ValueError; the caller reports it.
    if text.startswith("0o"):
        return int(text[2:], 8)
    if text.startswith("0x"):
        return int(text[2:], 16)
    return int(text)


def _to_float(text: str) -> float:
    lowered = text.lower()
    if lowered.endswith(".inf"):
        return -math.inf if text.startswith("-") else math.inf
    if lowered == ".nan":
        return math.nan
    return float(text)


_SCALAR_CONVERTERS: Final[dict[str, Callable[[str], Any]]] = {
    STR_TAG: str,
    NULL_TAG: _to_null,
    BOOL_TAG: _to_bool,
    INT_TAG: _to_int,
    FLOAT_TAG: _to_float,
}


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
        return _end_positions(self.value_positions), _end_positions(self.key_positions)

    def text_only(self) -> Document:
        """This document holding only its text: the data dropped, and the positions found again from the text if a
        span is ever asked for. What compile keeps, once validation has read what it needs (at fleet size the
        data and positions are a third of compile's memory, and compile seldom reports anything)."""
        again = _Reparse(self.text, self.file)
        return Document(self.file, self.text, None, _MarkPositions(again, "value"), _MarkPositions(again, "key"))

    def source_line(self, line: int) -> str:
        """The text of 1-based `line` without its line break; '' when out of range."""
        return self._lines[line - 1] if 1 <= line <= len(self._lines) else ""

    @cached_property
    def _lines(self) -> list[str]:
        # str.splitlines breaks on the same characters as YAML's reader once control
        # characters are refused (\n, \r\n, \r, \x85, \u2028, \u2029).
        return self.text.splitlines()


def parse_document(text: str | bytes, file: str) -> Document:
    """Load one blueprint from memory. Raises DiagnosticError, and nothing else, on bad input."""
    decoded = _decode(text, file)
    data, value_positions, key_positions = _load_yaml(decoded, file)
    return Document(file, decoded, data, value_positions, key_positions)


def read_document(path: str | os.PathLike[str], display_name: str | None = None) -> Document:
    """Read and load a blueprint file; '-' reads standard input.

    Never reads more than MAX_BYTES + 1 bytes, so an oversized file costs no memory.
    """
    name = display_name if display_name is not None else os.fspath(path)
    data = _read_stdin(name) if os.fspath(path) == "-" else _read_file(path, name)
    return parse_document(data, name)


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
    return _error(FILE_UNREADABLE, f"cannot read {name}: {reason}", hint, name, Position(1, 1))


def _too_large(name: str, size: int | None, *, at_least: bool = False) -> Diagnostic:
    limit = f"the limit is {MAX_BYTES:,} bytes (8 MiB)"
    if size is None:
        message = f"the input is larger than {MAX_BYTES:,} bytes; {limit}"
    else:
        message = f"the file is {'at least ' if at_least else ''}{size:,} bytes; {limit}"
    hint = "a blueprint is usually a few kilobytes; check that this is the right file"
    return _error(FILE_TOO_LARGE, message, hint, name, Position(1, 1))


# --- text checks -------------------------------------------------------------------------

_LINE_BREAK: Final = re.compile(r"\r\n|[\n\r\x85\u2028\u2029]")
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
        raise DiagnosticError([_error(NOT_UTF8, message, _ENCODING_HINT, file, Position(1, 1))])
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        before = data[: error.start].decode("utf-8")
        position = _position_at(before, len(before))
        bad = data[error.start]
        message = f"the file is not UTF-8 text: byte 0x{bad:02X} at offset {error.start} is not valid UTF-8"
        raise DiagnosticError([_error(NOT_UTF8, message, _ENCODING_HINT, file, position)]) from None


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
    raise DiagnosticError([_error(NOT_UTF8, message, hint, file, position)])


def _position_at(text: str, offset: int) -> Position:
    """The 1-based line and column of character `offset` in `text`, counting YAML's line breaks."""
    line, line_start = 1, 0
    for match in _LINE_BREAK.finditer(text, 0, offset):
        line, line_start = line + 1, match.end()
    return Position(line, offset - line_start + 1)


# --- YAML --------------------------------------------------------------------------------

_Mark = Any  # yaml.error.Mark, or the libyaml parser's own Mark: both have 0-based .line and .column


def _load_yaml(text: str, file: str) -> tuple[Any, Mapping[JsonPath, Position], Mapping[JsonPath, Position]]:
    builder, data = _load_marks(text, file)
    return data, _MarkPositions(builder.value_marks), _MarkPositions(builder.key_marks)


def _load_marks(text: str, file: str) -> tuple[_Builder, Any]:
    builder = _Builder(file)
    loader: yaml.SafeLoader | None = None
    try:
        loader = BlueprintLoader(text)
        with paused():  # the data has no cycles
            data = builder.build(loader)
    except yaml.MarkedYAMLError as error:
        raise DiagnosticError([*builder.diagnostics, _syntax_error(error, text, file)]) from None
    except yaml.YAMLError as error:  # a ReaderError; _check_printable should have caught it first
        raise DiagnosticError([*builder.diagnostics, _reader_error(error, file)]) from None
    except RecursionError:  # nothing here recurses, but a parser might; it must not escape as a crash
        raise DiagnosticError([*builder.diagnostics, _too_deep(file, Position(1, 1), ())]) from None
    finally:
        if loader is not None:
            loader.dispose()
    return builder, data


def _syntax_error(error: yaml.MarkedYAMLError, text: str, file: str) -> Diagnostic:
    problem, context = (error.problem, error.context) if error.problem else (error.context or "invalid YAML", None)
    mark = error.problem_mark or error.context_mark
    position = _position(mark) if mark is not None else Position(1, 1)
    if "maximum nesting depth" in problem:  # libyaml's own limit (1000), hit before ours when it scans ahead
        return _too_deep(file, position, ())
    message = problem
    related: tuple[Span, ...] = ()
    context_mark = error.context_mark
    if context and context_mark is not None and _position(context_mark) != position:
        context_position = _position(context_mark)
        message += f" ({context} at line {context_position.line}, column {context_position.column})"
        related = (Span(file, context_position),)
    elif context:
        message += f" ({context})"
    hint = _syntax_hint(problem, _char_at(text, position))
    return _error(YAML_SYNTAX, message, hint, file, position, related=related)


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
    return _error(NOT_UTF8, f"the file is not valid YAML text: {error}", _ENCODING_HINT, file, Position(1, 1))


def _too_deep(file: str, position: Position, path: JsonPath) -> Diagnostic:
    message = f"collections are nested more than {MAX_DEPTH} levels deep"
    hint = "flatten the structure; no blueprint needs this much nesting"
    return _error(TOO_DEEP, message, hint, file, position, path)


def _position(mark: _Mark) -> Position:
    return Position(mark.line + 1, mark.column + 1)


# A located value is kept as one int: the 0-based line and column where it starts and where it ends, 32 bits each.
# A large blueprint has hundreds of thousands of them and few are ever looked up; the parser's Mark objects cost
# several times more to keep, and finding ends by parsing again on the first diagnostic cost as much as the load.
_BITS: Final = 32
_FIELD: Final = (1 << _BITS) - 1
_END_BITS: Final = (1 << 2 * _BITS) - 1  # the end's line and column


def _pack(start: _Mark, end: _Mark) -> int:
    return (((start.line << _BITS | start.column) << _BITS | end.line) << _BITS) | end.column


def _start_of(packed: int) -> Position:
    return Position((packed >> 3 * _BITS) + 1, (packed >> 2 * _BITS & _FIELD) + 1)


def _end_of(packed: int) -> Position:
    return Position((packed >> _BITS & _FIELD) + 1, (packed & _FIELD) + 1)


class _Reparse:
    """A text that loaded once, loaded again for its positions the first time they are asked for."""

    def __init__(self, text: str, file: str) -> None:
        self._text = text
        self._file = file

    @cached_property
    def marks(self) -> dict[str, dict[JsonPath, int]]:
        try:
            builder = _load_marks(self._text, self._file)[0]
        except DiagnosticError:  # not a text that loaded: no positions
            return {"value": {}, "key": {}}
        return {"value": builder.value_marks, "key": builder.key_marks}


class _MarkPositions(Mapping[JsonPath, Position]):
    """Positions kept packed (_pack) and made into Positions when asked for: where each value or key starts, or
    with ends=True where it ends."""

    def __init__(self, marks: dict[JsonPath, int] | _Reparse, which: str = "value", ends: bool = False) -> None:
        self._source = marks
        self._which = which
        self._unpack = _end_of if ends else _start_of

    @property
    def _marks(self) -> dict[JsonPath, int]:
        source = self._source
        return source.marks[self._which] if isinstance(source, _Reparse) else source

    def ends(self) -> _MarkPositions:
        return _MarkPositions(self._source, self._which, ends=True)

    def __getitem__(self, path: JsonPath) -> Position:
        return self._unpack(self._marks[path])

    def __iter__(self) -> Iterator[JsonPath]:
        return iter(self._marks)

    def __len__(self) -> int:
        return len(self._marks)

    def __contains__(self, path: object) -> bool:
        return path in self._marks


def _end_positions(starts: Mapping[JsonPath, Position]) -> Mapping[JsonPath, Position]:
    # A Document made by hand holds plain positions, without ends.
    return starts.ends() if isinstance(starts, _MarkPositions) else {}


def _error(
    code: str,
    message: str,
    hint: str,
    file: str,
    position: Position,
    path: JsonPath = (),
    related: tuple[Span, ...] = (),
) -> Diagnostic:
    return Diagnostic(code, Severity.ERROR, message, Span(file, position), path, hint, related)


def _tag_name(tag: str) -> str:
    return "!!" + tag.removeprefix(_STANDARD_TAG_PREFIX) if tag.startswith(_STANDARD_TAG_PREFIX) else tag


class _Pending(enum.Enum):
    """What a mapping frame holds instead of an accepted key."""

    NO_KEY = enum.auto()  # waiting for its next key
    BAD_KEY = enum.auto()  # the key was refused (or is a duplicate); its value is read but dropped


_NO_KEY: Final = _Pending.NO_KEY
_BAD_KEY: Final = _Pending.BAD_KEY
_ALIASED: Final = object()  # stands in for an alias (already reported) so it never counts as a key
_KIND_OF_VALUE: Final = {
    bool: "bool",
    int: "int",
    float: "float",
    type(None): "null",
    dict: "mapping",
    list: "sequence",
}


class _Frame:
    """A collection being built: its container, its path (None when its content is not
    addressable: inside a key, or under a refused key) and, for a mapping, the pending key."""

    __slots__ = ("container", "flow", "is_list", "key", "path", "start")

    def __init__(
        self, container: dict[str, Any] | list[Any], path: JsonPath | None, start: _Mark, flow: bool = False
    ) -> None:
        self.container = container
        self.is_list = isinstance(container, list)
        self.path = path
        self.start = start
        self.flow = flow  # a [..] or {..} collection, which ends at its bracket
        self.key: str | _Pending = _NO_KEY


class _Builder:
    """Builds plain data and position maps from a parser's events, iteratively."""

    def __init__(self, file: str) -> None:
        self._file = file
        # Path -> where its value (its key) starts and ends, packed by _pack.
        self.value_marks: dict[JsonPath, int] = {}
        self.key_marks: dict[JsonPath, int] = {}
        self.diagnostics: list[Diagnostic] = []
        self._reported_anchor = False

    def build(self, loader: yaml.SafeLoader) -> Any:
        next_event = loader.get_event
        next_event()  # StreamStartEvent
        if isinstance(next_event(), StreamEndEvent):  # else a DocumentStartEvent
            self._fail(
                EMPTY_DOCUMENT,
                "the blueprint is empty: there is no YAML content to validate",
                _EMPTY_HINT,
                Position(1, 1),
            )
        data = self._build_root(next_event)
        next_event()  # DocumentEndEvent
        event = next_event()
        if not isinstance(event, StreamEndEvent):
            self._fail(
                SEVERAL_DOCUMENTS,
                "found a second YAML document; a blueprint is a single document",
                "remove the '---' line, or put each blueprint in a file of its own",
                _position(event.start_mark),
            )
        if self.diagnostics:
            raise DiagnosticError(self.diagnostics)
        if data is None:  # `---` alone, or a lone `~`/`null`
            self._fail(EMPTY_DOCUMENT, "the blueprint is empty: its only content is null", _EMPTY_HINT, Position(1, 1))
        return data

    def _build_root(self, next_event: Callable[[], Any]) -> Any:
        # The hot loop: a large file has hundreds of thousands of events, so the common
        # cases (plain scalars, list items) take as few calls as possible.
        stack: list[_Frame] = []
        value: Any
        while True:
            event = next_event()
            kind = type(event)
            if kind is MappingEndEvent or kind is SequenceEndEvent:
                frame = stack.pop()
                self._closed(frame, event)
                value, start, event = frame.container, frame.start, None
            else:
                start = event.start_mark
                path = self._child_path(stack[-1]) if stack else ()
                if kind is ScalarEvent:
                    value = self._scalar(event, start, path)
                elif kind is AliasEvent:
                    value, event = self._alias(event, start, path), None
                else:
                    stack.append(self._open(event, start, path, len(stack)))
                    continue
            if not stack:
                return value
            parent = stack[-1]
            if parent.is_list:
                parent.container.append(value)  # type: ignore[union-attr]
            else:
                self._add_to_mapping(parent, value, start, event)

    @staticmethod
    def _child_path(parent: _Frame) -> JsonPath | None:
        path = parent.path
        if path is None:
            return None
        if parent.is_list:
            return (*path, len(parent.container))
        key = parent.key
        if key is _NO_KEY or key is _BAD_KEY:
            return None  # a key (located through key_positions), or the value of a refused key
        return (*path, key)

    def _closed(self, frame: _Frame, event: Any) -> None:
        """A collection's end event: where it starts and ends is known now."""
        path = frame.path
        if path is None:
            return
        # A flow collection ends at its bracket; a block one where its last value ends (its end event stands
        # where the next line starts).
        container = frame.container
        if container and not frame.flow:
            last = self.value_marks.get((*path, len(container) - 1 if frame.is_list else next(reversed(container))))
            if last is not None:
                start = frame.start
                self.value_marks[path] = (start.line << _BITS | start.column) << 2 * _BITS | last & _END_BITS
                return
        self.value_marks[path] = _pack(frame.start, event.end_mark)

    def _open(self, event: CollectionStartEvent, start: _Mark, path: JsonPath | None, depth: int) -> _Frame:
        if depth >= MAX_DEPTH:
            self._fail_with(_too_deep(self._file, _position(start), path or ()))
        is_mapping = type(event) is MappingStartEvent
        self._check_anchor(event, start, path)
        tag = event.tag
        if tag is not None and tag != _NON_SPECIFIC_TAG and tag != (MAP_TAG if is_mapping else SEQ_TAG):
            kind = "mapping" if is_mapping else "sequence"
            standard = tag in _STANDARD_TAGS
            self._report_tag(
                f"the tag {_tag_name(tag)} cannot be used on a {kind}" if standard else _custom_tag_message(tag),
                start,
                path,
            )
        if path is not None:
            self.value_marks[path] = _pack(start, start)  # its place in document order; _closed adds the end
        return _Frame({} if is_mapping else [], path, start, bool(event.flow_style))

    def _scalar(self, event: ScalarEvent, start: _Mark, path: JsonPath | None) -> Any:
        text = event.value
        tag: str | None
        if event.tag is None and event.anchor is None:  # the common case, kept short
            tag = resolve_plain_scalar(text) if event.implicit[0] else STR_TAG
        else:
            self._check_anchor(event, start, path)
            tag = self._scalar_tag(event, start, path)
            if tag is None:
                return None
        if path is not None:
            end: _Mark = event.end_mark
            self.value_marks[path] = (((start.line << _BITS | start.column) << _BITS | end.line) << _BITS) | end.column
        if tag == STR_TAG:
            return text
        try:
            return _SCALAR_CONVERTERS[tag](text)
        except ValueError:  # an integer beyond Python's 4300-digit conversion limit
            message = f"the number starting {text[:20]!r} has too many digits to read"
            self._report(YAML_SYNTAX, message, "quote it if it is meant as text", start, path or ())
            return None

    def _scalar_tag(self, event: ScalarEvent, start: _Mark, path: JsonPath | None) -> str | None:
        """The scalar's tag, or None after reporting a tag or a tagged value that is not allowed."""
        tag = event.tag
        if tag is None:
            return resolve_plain_scalar(event.value) if event.implicit[0] else STR_TAG
        if tag == _NON_SPECIFIC_TAG:
            return STR_TAG  # `! text` is YAML's way to say "just a string"
        if tag not in _SCALAR_CONVERTERS:
            message = f"the tag {_tag_name(tag)} cannot be used on a scalar" if tag in _STANDARD_TAGS else None
            self._report_tag(message or _custom_tag_message(tag), start, path)
            return None
        pattern = _CORE_PATTERN_BY_TAG.get(tag)
        if pattern is not None and not pattern.fullmatch(event.value):
            message = f"{event.value!r} is not a valid {_tag_name(tag)} value"
            hint = "remove the tag, or write the value the way YAML 1.2 spells it"
            self._report(CUSTOM_TAG, message, hint, start, path or ())
            return None
        return tag

    def _check_anchor(self, event: NodeEvent, start: _Mark, path: JsonPath | None) -> None:
        if event.anchor is not None:
            message = f"anchor '&{event.anchor}' is not allowed; blueprints cannot use anchors or aliases"
            self._report_anchor(message, start, path)

    def _report_tag(self, message: str, start: _Mark, path: JsonPath | None) -> None:
        self._report(CUSTOM_TAG, message, "remove the tag; quote the value if it should be a string", start, path or ())

    def _alias(self, event: AliasEvent, start: _Mark, path: JsonPath | None) -> object:
        message = f"alias '*{event.anchor}' is not allowed; blueprints cannot use anchors or aliases"
        self._report_anchor(message, start, path)
        return _ALIASED

    def _report_anchor(self, message: str, start: _Mark, path: JsonPath | None) -> None:
        # One report is enough: a billion-laughs file has hundreds of anchors and aliases.
        if not self._reported_anchor:
            self._reported_anchor = True
            self._report(ALIAS, message, _ALIAS_HINT, start, path or ())

    def _add_to_mapping(self, parent: _Frame, value: Any, start: _Mark, event: ScalarEvent | None) -> None:
        container = parent.container
        if parent.key is _NO_KEY:
            parent.key = self._accept_key(parent, value, start, event)
        else:
            if parent.key is not _BAD_KEY and isinstance(container, dict):  # a frame with a key is a mapping's
                container[parent.key] = value
            parent.key = _NO_KEY

    def _accept_key(self, parent: _Frame, key: Any, start: _Mark, event: ScalarEvent | None) -> str | _Pending:
        path = parent.path
        if not isinstance(key, str):
            if path is not None and key is not _ALIASED:
                self._report_key_type(key, start, path, event)
            return _BAD_KEY
        if path is None:
            return key  # inside something already refused: nothing here is addressable
        if event is not None and key == "<<" and event.tag is None and event.implicit[0]:
            message = "merge key '<<' is not allowed; blueprints cannot use anchors, aliases or merge keys"
            self._report_anchor(message, start, path)
            return _BAD_KEY
        key_path = (*path, key)
        first_mark = self.key_marks.get(key_path)
        if first_mark is None:
            self.key_marks[key_path] = _pack(start, start if event is None else event.end_mark)
            return key
        first = _start_of(first_mark)
        message = f"duplicate key {key!r} (first defined at line {first.line}, column {first.column})"
        hint = "remove one of them; YAML would silently keep only the last one"
        self._report(DUPLICATE_KEY, message, hint, start, key_path, related=(Span(self._file, first),))
        return _BAD_KEY  # its value must not be checked against the first one's positions

    def _report_key_type(self, key: Any, start: _Mark, path: JsonPath, event: ScalarEvent | None) -> None:
        kind = _KIND_OF_VALUE.get(type(key), type(key).__name__)
        if event is None:
            message, hint = f"mapping keys must be strings, got a {kind}", "write the key as a plain name, like `name:`"
        elif event.value == "":
            message, hint = "mapping keys must be strings, got an empty key", "give the key a name, like `name:`"
        else:
            shown = kind if event.value == kind else f"{kind} {event.value}"  # not "got null null"
            message, hint = f"mapping keys must be strings, got {shown}", f'quote it: "{event.value}"'
        self._report(NON_STRING_KEY, message, hint, start, path)

    def _report(
        self, code: str, message: str, hint: str, start: _Mark, path: JsonPath, related: tuple[Span, ...] = ()
    ) -> None:
        self.diagnostics.append(_error(code, message, hint, self._file, _position(start), path, related))
        if len(self.diagnostics) >= MAX_DIAGNOSTICS:
            raise DiagnosticError(self.diagnostics)

    def _fail(self, code: str, message: str, hint: str, position: Position) -> None:
        self._fail_with(_error(code, message, hint, self._file, position))

    def _fail_with(self, diagnostic: Diagnostic) -> None:
        raise DiagnosticError([*self.diagnostics, diagnostic])


def _custom_tag_message(tag: str) -> str:
    return f"the tag {_tag_name(tag)} is not allowed; blueprints use plain YAML without tags"


_STANDARD_TAGS: Final = frozenset({STR_TAG, NULL_TAG, BOOL_TAG, INT_TAG, FLOAT_TAG, MAP_TAG, SEQ_TAG})
_EMPTY_HINT: Final = "a blueprint is a YAML mapping that starts with apiVersion and kind"
_ALIAS_HINT: Final = "write the value out in full where it is needed; aliases can expand a small file into a huge one"

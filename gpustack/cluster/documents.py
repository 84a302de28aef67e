"""A cluster snapshot written as several YAML documents (`kubectl get ... -o yaml` outputs joined with `---`, or
objects one per document), read as the one v1 List cluster/snapshot.py reads, every position found when needed."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from functools import cached_property
from typing import Any

from gpustack.codes import SEVERAL_DOCUMENTS
from gpustack.diagnostic import DiagnosticError, JsonPath, Position
from gpustack.load import Document, parse_document


def several_documents(error: DiagnosticError) -> bool:
    return len(error.diagnostics) == 1 and error.diagnostics[0].code == SEVERAL_DOCUMENTS


_SEPARATOR = re.compile(r"^(---|\.\.\.)(?:[ \t].*)?$")


def _rebased(path: JsonPath, base: int, listed: bool) -> JsonPath | None:
    """A path of one document as a path of the joined List: a List's items follow the items before it."""
    if not listed:
        return ("items", base, *path)
    if len(path) >= 2 and path[0] == "items" and isinstance(path[1], int):
        return ("items", base + path[1], *path[2:])
    return None


def joined(text: str, file: str) -> Document:
    """Several YAML documents (`---`) as one v1 List: each a List's items or one object, paths rebased on `items`.

    Each document's data is read by the quick path (`parse_document(..., positions_later=True)`); the positions are
    found the first time a span is asked for, by reading each document again padded with the lines before it, so its
    lines are the file's. Reading them all up front made a 5 MiB snapshot of two documents take 6 s against 1.4 s
    as one."""
    lines = text.split("\n")
    items: list[Any] = []
    parts: list[tuple[int, int, int, bool]] = []  # (first line, line after the last, items before it, a List's)
    for start, end in _documents(lines):
        document = parse_document(_padded(lines, start, end), file, positions_later=True)  # a broken one: its line
        data = document.data
        listed = isinstance(data, dict) and (data.get("kind") == "List" or "items" in data)
        found = data.get("items") if listed and isinstance(data, dict) else [data]
        if not isinstance(found, list):
            continue  # snapshot_from says what is wrong with a List without items, if this is the only document
        parts.append((start, end, len(items), listed))
        items.extend(found)
    data = {"apiVersion": "v1", "kind": "List", "items": items}
    positions = _JoinedPositions(text, file, parts)
    return Document(file, text, data, positions.of(values=True), positions.of(values=False))


def _documents(lines: list[str]) -> list[tuple[int, int]]:
    """(first line, line after the last) of each document with content, 0-based."""
    separators = [index for index, line in enumerate(lines) if _SEPARATOR.match(line)]
    starts, ends = [0] + [index + 1 for index in separators], [*separators, len(lines)]
    return [
        (start, end)
        for start, end in zip(starts, ends, strict=True)
        if any(line.strip() and not line.lstrip().startswith("#") for line in lines[start:end])
    ]


def _padded(lines: list[str], start: int, end: int) -> str:
    """A document's text after as many line breaks as lines before it, so that the reader's lines are the file's."""
    return "\n" * start + "\n".join(lines[start:end])


class _JoinedPositions:
    """Where each value and key of the joined List stands, found once, the first time either map is read."""

    def __init__(self, text: str, file: str, parts: list[tuple[int, int, int, bool]]) -> None:
        self._text, self._file, self._parts = text, file, parts
        self._found: tuple[dict[JsonPath, Position], dict[JsonPath, Position]] | None = None

    def of(self, *, values: bool) -> Mapping[JsonPath, Position]:
        return _Lazy(lambda: self._maps()[0 if values else 1])

    def _maps(self) -> tuple[dict[JsonPath, Position], dict[JsonPath, Position]]:
        if self._found is None:
            lines = self._text.split("\n")
            values: dict[JsonPath, Position] = {(): Position(1, 1)}
            keys: dict[JsonPath, Position] = {}
            for start, end, base, listed in self._parts:
                document = parse_document(_padded(lines, start, end), self._file)
                for source, target in ((document.value_positions, values), (document.key_positions, keys)):
                    for path, position in source.items():
                        moved = _rebased(path, base, listed)
                        if moved is not None:
                            target[moved] = position
            self._found = values, keys
        return self._found


class _Lazy(Mapping[JsonPath, Position]):
    """A map made by `build` the first time it is read."""

    def __init__(self, build: Callable[[], Mapping[JsonPath, Position]]) -> None:
        self._build = build

    @cached_property
    def _map(self) -> Mapping[JsonPath, Position]:
        return self._build()

    def __getitem__(self, path: JsonPath) -> Position:
        return self._map[path]

    def __iter__(self) -> Iterator[JsonPath]:
        return iter(self._map)

    def __len__(self) -> int:
        return len(self._map)

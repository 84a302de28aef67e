"""A cluster snapshot written as several YAML documents (`kubectl get ... -o yaml` outputs joined with `---`, or
objects one per document), read as the one v1 List cluster/snapshot.py reads, every position kept."""

from __future__ import annotations

import re
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
    """Several YAML documents (`---`) as one v1 List: each a List's items or one object, every position kept (each
    document is loaded padded with the lines before it, so its lines are the file's), paths rebased on `items`."""
    lines = text.split("\n")
    starts = [0] + [index + 1 for index, line in enumerate(lines) if _SEPARATOR.match(line)]
    ends = [index for index, line in enumerate(lines) if _SEPARATOR.match(line)] + [len(lines)]
    items: list[Any] = []
    values: dict[JsonPath, Position] = {(): Position(1, 1)}
    keys: dict[JsonPath, Position] = {}
    for start, end in zip(starts, ends, strict=True):
        chunk = "\n" * start + "\n".join(lines[start:end])
        if not chunk.strip() or all(not line.strip() or line.lstrip().startswith("#") for line in lines[start:end]):
            continue
        document = parse_document(chunk, file)  # DiagnosticError at the file's own line on a broken one
        data = document.data
        listed = isinstance(data, dict) and (data.get("kind") == "List" or "items" in data)
        found = data.get("items") if listed and isinstance(data, dict) else [data]
        if not isinstance(found, list):
            continue  # snapshot_from says what is wrong with a List without items, if this is the only document
        base = len(items)
        items.extend(found)

        for source, target in ((document.value_positions, values), (document.key_positions, keys)):
            for path, position in source.items():
                moved = _rebased(path, base, listed)
                if moved is not None:
                    target[moved] = position
    data = {"apiVersion": "v1", "kind": "List", "items": items}
    return Document(file, text, data, values, keys)

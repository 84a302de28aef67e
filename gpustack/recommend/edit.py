"""`recommend --write`: the chosen layouts written over `auto` in the blueprint's own text.

A minimal text edit at the spans the loader recorded (no re-dump), so every other byte, comment and key order
stays as written: the `auto` value becomes a flow-style layout (or `layout: auto` becomes `groups: [...]` when the
node's GPUs differ), a comment line above says where the layouts came from, and a fixed-size pool's `count`
becomes the node count chosen.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpustack.diagnostic import Position
from gpustack.load import Document
from gpustack.recommend import Recommendation
from gpustack.recommend.report import layout_yaml, provenance, uses_groups

COMMENT = "# "


def rewritten(document: Document, recommendations: Sequence[Recommendation]) -> str:
    """The document's text with each recommendation written over its pool's `auto`."""
    text = document.text
    newline = "\r\n" if "\r\n" in text else "\n"  # the comment line ends as the file's lines do
    starts = _line_starts(text)
    edits: list[tuple[int, int, str]] = []  # (start offset, end offset, replacement)
    for r in recommendations:
        path = r.demand.layout_path
        value = document.span(path)
        key = document.span(path, key=True)
        assert value.end is not None, "a located scalar has an end"
        begin = _offset(starts, key.start) if uses_groups(r) else _offset(starts, value.start)
        replacement = ("groups: " if uses_groups(r) else "") + layout_yaml(r)
        edits.append((begin, _offset(starts, value.end), replacement))
        line_start = starts[key.start.line - 1]
        indent = text[line_start : line_start + len(text[line_start:]) - len(text[line_start:].lstrip(" "))]
        edits.append((line_start, line_start, f"{indent}{COMMENT}{provenance(r)}{newline}"))
        count = r.demand.pool.count
        if count is not None and count != r.nodes:
            # A fixed-size pool gets the node count too (the GPUs it frees show in `gpustack diff`); an autoscaled
            # pool grows to it by itself, and a static pool's node names are not gpustack's to pick.
            span = document.span((*r.demand.pool.path, "count"))
            assert span.end is not None, "a located scalar has an end"
            edits.append((_offset(starts, span.start), _offset(starts, span.end), str(r.nodes)))
    # From the end backwards, so earlier offsets stay where they were; an insertion before a replacement on its line.
    for begin, end, replacement in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        text = text[:begin] + replacement + text[end:]
    return text


def _line_starts(text: str) -> list[int]:
    starts = [0]
    for index, char in enumerate(text):
        if char == "\n":
            starts.append(index + 1)
    return starts


def _offset(starts: list[int], position: Position) -> int:
    return starts[position.line - 1] + position.column - 1

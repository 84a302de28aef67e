"""`recommend --write`: what was chosen written over `auto` in the blueprint's own text.

A minimal text edit at the spans the loader recorded (no re-dump), so every other byte, comment and key order
stays as written, and a comment line above says where the choice came from:

- `layout: auto`: the value becomes a flow-style layout (or `layout: auto` becomes `groups: [...]` when the node's
  GPUs differ);
- `sharing.strategy: auto`: the value becomes the sharing chosen (`none`, `mig`, `time-slicing`) and, for MIG and
  time-slicing, its block follows as a sibling key in flow style: on the next line in a block mapping, after a
  comma in a flow mapping (`{strategy: mig, mig: {...}}`).

A fixed-size pool's `count` becomes the node count chosen.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpustack.diagnostic import Position
from gpustack.load import Document
from gpustack.mig import layout_text
from gpustack.recommend import Chosen, Recommendation, SharingRecommendation
from gpustack.recommend.candidates import Choice

COMMENT = "# "

Edit = tuple[int, int, str]  # (start offset, end offset, replacement)


def rewritten(document: Document, recommendations: Sequence[Chosen]) -> str:
    """The document's text with each recommendation written over its pool's `auto`."""
    text = document.text
    newline = "\r\n" if "\r\n" in text else "\n"  # the lines it adds end as the file's lines do
    starts = _line_starts(text)
    edits: list[Edit] = []
    for r in recommendations:
        path = r.auto_path
        value = document.span(path)
        key = document.span(path, key=True)
        assert value.end is not None, "a located scalar has an end"
        if isinstance(r, SharingRecommendation):
            edits.extend(_sharing_edits(document, r, starts, newline))
            pool = r.pool
        else:
            begin = _offset(starts, key.start) if uses_groups(r) else _offset(starts, value.start)
            replacement = ("groups: " if uses_groups(r) else "") + layout_yaml(r)
            edits.append((begin, _offset(starts, value.end), replacement))
            pool = r.demand.pool
        line_start = starts[key.start.line - 1]
        line = text[line_start:]
        indent = line[: len(line) - len(line.lstrip(" "))]
        edits.append((line_start, line_start, f"{indent}{COMMENT}{provenance(r)}{newline}"))
        if pool.count is not None and pool.count != r.nodes:
            # A fixed-size pool gets the node count too (the GPUs it frees show in `gpustack diff`); an autoscaled
            # pool grows to it by itself, and a static pool's node names are not gpustack's to pick.
            span = document.span((*pool.path, "count"))
            assert span.end is not None, "a located scalar has an end"
            edits.append((_offset(starts, span.start), _offset(starts, span.end), str(r.nodes)))
    # From the end backwards, so earlier offsets stay where they were; an insertion before a replacement on its line.
    for begin, end, replacement in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        text = text[:begin] + replacement + text[end:]
    return text


def _sharing_edits(document: Document, r: SharingRecommendation, starts: list[int], newline: str) -> list[Edit]:
    """`auto` -> the strategy chosen, and its block (`mig:` or `timeSlicing:`) beside it."""
    value = document.span(r.auto_path)
    key = document.span(r.auto_path, key=True)
    assert value.end is not None, "a located scalar has an end"
    sibling = block_yaml(r)
    begin, end = _offset(starts, value.start), _offset(starts, value.end)
    if sibling is None:
        return [(begin, end, r.chosen.choice.value)]
    text = document.text
    mapping = document.span(r.pool.sharing.path)
    if text[_offset(starts, mapping.start)] == "{":  # flow style: one more entry after the strategy's
        return [(begin, end, f"{r.chosen.choice.value}, {sibling}")]
    # Block style: the sibling key on the line after the strategy's value, at the strategy key's indentation.
    after = starts[value.end.line] if value.end.line < len(starts) else len(text)
    lead = "" if text[:after].endswith("\n") else newline  # a last line without its line break gets one
    indent = " " * (key.start.column - 1)
    return [(begin, end, r.chosen.choice.value), (after, after, f"{lead}{indent}{sibling}{newline}")]


def block_yaml(r: SharingRecommendation) -> str | None:
    """The chosen sharing's own block as a flow-style key and value (None: whole GPUs need none)."""
    chosen = r.chosen
    if chosen.choice is Choice.MIG:
        assert chosen.layouts is not None
        field = "groups" if uses_groups(chosen.layouts) else "layout"
        return f"mig: {{strategy: mixed, {field}: {layout_yaml(chosen.layouts)}}}"
    if chosen.choice is Choice.TIME_SLICING:
        return f"timeSlicing: {{replicas: {chosen.replicas}}}"
    return None


def layout_yaml(recommendation: Recommendation) -> str:
    """What --write puts where `auto` stood: one flow-style layout, or flow-style groups when GPUs differ."""
    groups = recommendation.groups()
    if len(groups) == 1 and groups[0][1] is not None:
        return layout_text(groups[0][1])
    return "[" + ", ".join(_group_yaml(devices, layout) for devices, layout in groups) + "]"


def _group_yaml(devices: tuple[int, ...], layout: dict[str, int] | None) -> str:
    listed = ", ".join(map(str, devices))
    what = "whole: true" if layout is None else f"layout: {layout_text(layout)}"
    return f"{{devices: [{listed}], {what}}}"


def uses_groups(recommendation: Recommendation) -> bool:
    groups = recommendation.groups()
    return not (len(groups) == 1 and groups[0][1] is not None)


def provenance(r: Chosen) -> str:
    """The comment --write leaves above what it wrote: where it came from, in one line."""
    proof = "optimal" if r.optimal else "not proven optimal"
    baseline = f"first-fit-decreasing: {r.baseline_gpus if r.baseline_gpus is not None else '-'}"
    figures = f"{r.nodes} node(s), {r.gpus} GPU(s), lower bound {r.bound_gpus}, {proof}; {baseline}"
    if not isinstance(r, SharingRecommendation):
        return f"chosen by gpustack recommend: {figures}"
    others = "; ".join(
        f"{c.choice.words}: "
        + ("not a candidate" if c.refusal is not None else f"{c.gpus} GPU(s)" if c.fits else "does not fit")
        for c in r.candidates
        if c is not r.chosen
    )
    return f"sharing chosen by gpustack recommend: {r.chosen.choice.words}, {figures}; {others}"


def _line_starts(text: str) -> list[int]:
    starts = [0]
    for index, char in enumerate(text):
        if char == "\n":
            starts.append(index + 1)
    return starts


def _offset(starts: list[int], position: Position) -> int:
    return starts[position.line - 1] + position.column - 1

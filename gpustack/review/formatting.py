"""Small formatters the review templates share: values, before/after pairs, aligned tables, markdown escapes."""

from __future__ import annotations

import html
import re
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from gpustack.escapes import printable

NAMES_SHOWN = 12  # past this a list of nodes or workloads says "+N more": a comment must stay readable


def show(value: Any, none: str = "-") -> str:
    """A field value the way a blueprint author wrote it, in YAML flow style."""
    if value is None:
        return none
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(show(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {show(v)}" for k, v in value.items()) + "}"
    if isinstance(value, float):
        return format(value, "g")
    return str(value)


def change(pair: Mapping[str, Any], none: str = "-", arrow: str = "->") -> str:
    """'28' when both sides agree, '28 -> 10' when they differ."""
    before, after = show(pair["before"], none), show(pair["after"], none)
    return after if before == after else f"{before} {arrow} {after}"


def memory(units: Mapping[str, Any] | None, none: str = "-") -> str:
    if units is None or units["memory"] is None:
        return none
    return f"{show(units['memory']['value'])} {units['memory']['unit']}"


def units_change(resource: Mapping[str, Any], field: str, none: str = "-", arrow: str = "->") -> str:
    def one(units: Mapping[str, Any] | None) -> Any:
        if units is None:
            return None
        return memory(units, none) if field == "memory" else units[field]

    return change({"before": one(resource["before"]), "after": one(resource["after"])}, none, arrow)


def names(items: Sequence[str], limit: int = NAMES_SHOWN, quote: str = "") -> str:
    shown = ", ".join(f"{quote}{item}{quote}" for item in items[:limit])
    return shown + (f" (+{len(items) - limit} more)" if len(items) > limit else "")


def wrap(text: str, indent: int, width: int = 100) -> str:
    prefix = " " * indent
    return textwrap.fill(text, width=width, initial_indent=prefix, subsequent_indent=prefix, break_on_hyphens=False)


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], indent: int = 2) -> str:
    """Columns padded to their widest cell, for terminals."""
    widths = [max(len(str(row[i])) for row in (headers, *rows)) for i in range(len(headers))]
    lines = [
        " " * indent + "  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in (headers, *rows)
    ]
    return "\n".join(lines)


# Every line terminator CommonMark or GitHub honours: a lone CR ends a table row as surely as LF does (M6).
_LINE_BREAKS = re.compile("\r\n|[\n\r\x0b\x0c\x85\u2028\u2029]")


def one_line(text: str) -> str:
    """User-derived text (a file name, a revision, an object's name) kept on one markdown line: line breaks become
    spaces and other hidden characters (controls, bidi overrides) escapes, as in a table cell, so it cannot open a
    heading, list or link (N9), nor reorder what the reviewer reads (N16)."""
    return printable(_LINE_BREAKS.sub(" ", text))


def cell(text: str) -> str:
    """Text for a markdown table cell: a '|' would end the cell (even inside a code span), any line break the row,
    and what follows it would be rendered as markdown of its own (headings, @mentions, links) in the PR comment."""
    return one_line(text).replace("|", "\\|")


def code(text: str) -> str:
    """A markdown code span that survives backticks in the text."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if longest else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def fence(text: str) -> str:
    """A code fence longer than any backtick run inside, so a diff of a README cannot close it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def escape_html(text: str) -> str:
    return html.escape(text, quote=False)


def _counted(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def summary(counts: Mapping[str, Any]) -> str:
    """One line: what changed, how risky, how many objects: '2 pools changed, 1 tenant added; 3 risks (2 high, ...)'."""
    parts = []
    if counts["clusterSettings"]:
        parts.append(f"{_counted(counts['clusterSettings'], 'cluster setting')} changed")
    for kind in ("pool", "tenant", "workload"):
        for status in ("added", "removed", "changed"):
            count = counts[f"{kind}s"][status]
            if count:
                parts.append(f"{_counted(count, kind)} {status}")
    risks = counts["risks"]
    total = sum(risks.values())
    levels = ", ".join(f"{n} {level}" for level, n in risks.items() if n)
    risk_text = f"{_counted(total, 'risk')} ({levels})" if total else "no risk flagged"
    objects = counts["objects"]
    moved = ", ".join(f"{n} {status}" for status, n in objects.items() if n)
    object_text = f"{_counted(sum(objects.values()), 'object')} ({moved})" if moved else "no object changes"
    return f"{', '.join(parts) or 'no blueprint field changes'}; {risk_text}; {object_text}"


def _quota_side(row: Mapping[str, Any], side: str, none: str) -> str:
    if not row["access"][side]:
        return "no access" if row["access"][side] is False else none
    if row["supply"][side] is None:
        return none  # the pool does not offer the resource on this side: a quota on it means nothing
    quota = row["quota"][side]
    return "no limit" if quota is None else str(quota)


def quota_change(row: Mapping[str, Any], none: str = "-", arrow: str = "->") -> str:
    """A tenant's quota on one resource: a number, 'no limit', 'no access', or none where the pool lacks it."""
    return change({"before": _quota_side(row, "before", none), "after": _quota_side(row, "after", none)}, none, arrow)


def _need_side(row: Mapping[str, Any], side: str, none: str) -> str:
    if not row["access"][side]:
        return "no access" if row["access"][side] is False else none
    need = row["need"][side]
    return none if row["supply"][side] is None and not need else show(need, none)


def need_change(row: Mapping[str, Any], none: str = "-", arrow: str = "->") -> str:
    """What a tenant's workloads request of one resource, or none where the pool does not offer it."""
    return change({"before": _need_side(row, "before", none), "after": _need_side(row, "after", none)}, none, arrow)

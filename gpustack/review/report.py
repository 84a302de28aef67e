"""A Review for people (terminal text, a pull-request comment in markdown) and for tools (JSON)."""

from __future__ import annotations

from functools import cache
from typing import Any

import jinja2

from gpustack.jsondoc import dump_document
from gpustack.review import formatting
from gpustack.review.data import review_data
from gpustack.review.review import Review
from gpustack.templating import package_environment

MAX_DIFF_LINES = 200  # per object in markdown; the terminal and JSON get every line
MAX_DIFF_CHARS = 40_000  # all diffs of one comment together, to start with
MAX_COMMENT_CHARS = 60_000  # GitHub refuses comments over 65,536 characters; leave room for a CI job's note
SEVERITY_MARKS = {"high": "🔴 high", "medium": "🟠 medium", "low": "🟡 low"}
COMMENT_MARKER = "<!-- gpustack-review -->"  # lets a CI job find and update its own comment
FILTERS = (
    *("show", "change", "memory", "units_change", "quota_change", "need_change"),
    *("names", "wrap", "cell", "one_line", "code", "fence", "summary"),
)


@cache
def _environment() -> jinja2.Environment:
    environment = package_environment()
    for name in FILTERS:
        environment.filters[name] = getattr(formatting, name)
    environment.filters["html"] = formatting.escape_html
    environment.globals["table"] = formatting.table
    environment.globals["severity_marks"] = SEVERITY_MARKS
    environment.globals["comment_marker"] = COMMENT_MARKER
    return environment


def render_json(review: Review) -> str:
    return dump_document("ReviewReport", review_data(review))


def render_text(review: Review) -> str:
    return _environment().get_template("review-text.j2").render(review=review_data(review))


def _trim_diffs(objects: list[dict[str, Any]], budget: int = MAX_DIFF_CHARS) -> list[dict[str, Any]]:
    """Markdown only: cut long diffs, and leave out the rest once the comment would grow too large."""
    trimmed = []
    for item in objects:
        lines = item["diff"].splitlines(keepends=True)
        shown = "".join(lines[:MAX_DIFF_LINES])
        cut = len(lines) - MAX_DIFF_LINES if len(lines) > MAX_DIFF_LINES else 0
        omitted = len(shown) > budget
        budget -= 0 if omitted else len(shown)
        trimmed.append({**item, "diff": "" if omitted else shown, "cut_lines": cut, "omitted": omitted})
    return trimmed


def render_markdown(review: Review) -> str:
    data = review_data(review)
    objects, budget = data["objects"], MAX_DIFF_CHARS
    while True:
        text = (
            _environment()
            .get_template("review-markdown.j2")
            .render(review={**data, "objects": _trim_diffs(objects, budget)})
        )
        # The rest of the review can be large too (many pools, a big picture): give up diff space until it fits.
        if len(text) <= MAX_COMMENT_CHARS or budget == 0:
            return text
        budget = max(0, budget - (len(text) - MAX_COMMENT_CHARS) - 1000)


RENDERERS = {"text": render_text, "markdown": render_markdown, "json": render_json}

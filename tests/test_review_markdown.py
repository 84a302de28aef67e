"""The markdown review is CommonMark (plus GFM tables) that renders as intended: tables, collapsed diffs, Mermaid."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from conftest import CASES
from markdown_it import MarkdownIt
from markdown_it.token import Token

from gpustack.review import report
from gpustack.review.formatting import cell, code, fence

REVIEW_CASES = CASES / "review"
CHANGED_CASES = sorted(p.name for p in REVIEW_CASES.iterdir() if (p / "review.md").exists() and p.name != "no-op")


def parse(text: str) -> list[Token]:
    return MarkdownIt("commonmark").enable("table").parse(text)


def case(name: str) -> tuple[str, dict[str, Any]]:
    folder = REVIEW_CASES / name
    return folder.joinpath("review.md").read_text(encoding="utf-8"), json.loads(
        folder.joinpath("review.json").read_text()
    )


def headings(tokens: list[Token], tag: str) -> list[str]:
    return [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open" and t.tag == tag]


def tables(tokens: list[Token]) -> list[list[list[str]]]:
    """Each table as rows of cell texts, header row first."""
    found: list[list[list[str]]] = []
    for token_index, token in enumerate(tokens):
        if token.type == "table_open":
            rows: list[list[str]] = []
            for inner in tokens[token_index:]:
                if inner.type == "tr_open":
                    rows.append([])
                elif inner.type == "inline" and rows:
                    rows[-1].append(inner.content)
                elif inner.type == "table_close":
                    break
            found.append(rows)
    return found


@pytest.mark.parametrize("name", CHANGED_CASES)
def test_sections_are_headings_in_order(name: str) -> None:
    tokens = parse(case(name)[0])
    assert headings(tokens, "h2") == ["gpustack review: `before.yaml` → `after.yaml`"]
    assert headings(tokens, "h3") == ["Risks", "Changes", "Capacity", "Manifests", "Picture", "Rollout plan"]


@pytest.mark.parametrize("name", CHANGED_CASES)
def test_risk_table_has_a_row_per_risk(name: str) -> None:
    text, data = case(name)
    risk_tables = [t for t in tables(parse(text)) if t[0] == ["Severity", "Risk", "Nodes", "Workloads"]]
    if not data["risks"]:
        assert risk_tables == []
        return
    (rows,) = risk_tables
    assert [row[1] for row in rows[1:]] == [r["title"] for r in data["risks"]]
    assert [row[0].split()[-1] for row in rows[1:]] == [r["severity"] for r in data["risks"]]


@pytest.mark.parametrize("name", CHANGED_CASES)
def test_every_table_row_has_as_many_cells_as_its_header(name: str) -> None:
    text = case(name)[0]
    for block in re.split(r"\n\n", text):
        lines = [line for line in block.splitlines() if line.startswith("|")]
        if not lines:
            continue
        widths = {len(re.findall(r"(?<!\\)\|", line)) for line in lines}
        assert len(widths) == 1, block


@pytest.mark.parametrize("name", CHANGED_CASES)
def test_each_changed_object_is_a_collapsed_diff(name: str) -> None:
    text, data = case(name)
    tokens = parse(text)
    opened = [t for t in tokens if t.type == "html_block" and t.content.startswith("<details>")]
    closed = [t for t in tokens if t.type == "html_block" and t.content.strip() == "</details>"]
    diffs = [t for t in tokens if t.type == "fence" and t.info == "diff"]
    # Diffs past GitHub's comment size limit are left out with a note (the tenant-quota case's policies are).
    left_out = [t for t in tokens if t.type == "inline" and t.content.startswith("Diff left out")]
    assert len(opened) == len(closed) == len(diffs) + len(left_out) == len(data["objects"])
    for token in diffs:
        header = token.content.split("\n", 2)[:2]  # --- a/... and +++ b/...: the object it is the diff of
        [obj] = [obj for obj in data["objects"] if obj["diff"].split("\n", 2)[:2] == header]
        assert token.content == obj["diff"] or obj["diff"].startswith(token.content.rsplit("\n", 2)[0])
    for token, obj in zip(opened, data["objects"], strict=True):
        assert obj["name"] in token.content and token.content.startswith(f"<details><summary>{obj['status']} ")


@pytest.mark.parametrize("name", CHANGED_CASES)
def test_picture_is_one_mermaid_block_with_the_graph(name: str) -> None:
    text, data = case(name)
    mermaid = [t for t in parse(text) if t.type == "fence" and t.info == "mermaid"]
    assert [t.content for t in mermaid] == [data["graph"]]
    assert data["graph"].startswith("flowchart LR\n")


def test_no_change_is_one_sentence() -> None:
    tokens = parse((REVIEW_CASES / "no-op" / "review.md").read_text(encoding="utf-8"))
    paragraphs = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "paragraph_open"]
    assert paragraphs == ["No change: both versions describe the same cluster."]


def test_cells_keep_pipes_and_backticks_inside_one_cell() -> None:
    value = "a|b `c`"
    tokens = parse(f"| x | y |\n|---|---|\n| {cell(code(value))} | z |\n")
    assert len(tables(tokens)[0][1]) == 2
    inlines = [t for t in tokens if t.type == "inline"]
    spans = [child.content for t in inlines for child in t.children or [] if child.type == "code_inline"]
    assert spans == [value]


def test_fence_outlasts_backticks_in_the_diff() -> None:
    diff = "+```yaml\n+a: 1\n+```\n"
    ticks = fence(diff)
    tokens = parse(f"{ticks}diff\n{diff}{ticks}\n")
    assert [(t.type, t.content) for t in tokens] == [("fence", diff)]


def test_long_diffs_are_cut_and_the_comment_stays_under_the_size_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    long_diff = "".join(f"+line {i}\n" for i in range(report.MAX_DIFF_LINES + 50))
    objects = [{"diff": long_diff, "name": f"o{i}"} for i in range(40)]
    trimmed = report._trim_diffs(objects)
    assert trimmed[0]["cut_lines"] == 50
    assert trimmed[0]["diff"].count("\n") == report.MAX_DIFF_LINES
    assert trimmed[-1]["omitted"] and trimmed[-1]["diff"] == ""
    assert sum(len(t["diff"]) for t in trimmed) <= report.MAX_DIFF_CHARS


def test_a_large_review_fits_in_one_comment() -> None:
    from conftest import BLUEPRINTS

    from gpustack.review.review import review_change
    from gpustack.review.snapshot import Snapshot
    from gpustack.validation import validate_path

    sides = [validate_path(BLUEPRINTS / name).context for name in ("multi-tenant.yaml", "seed-article.yaml")]
    text = report.render_markdown(review_change(Snapshot("a", sides[0]), Snapshot("b", sides[1])))
    assert len(text) <= report.MAX_COMMENT_CHARS
    tokens = parse(text)
    opened = [t for t in tokens if t.type == "html_block" and t.content.startswith("<details>")]
    closed = [t for t in tokens if t.type == "html_block" and t.content.strip() == "</details>"]
    assert len(opened) == len(closed) > 0
    assert "Diff left out to keep this comment under GitHub's size limit" in text

"""A PR comment shows user-derived text (file names, revisions, object names) as text: no heading, link, image,
mention or HTML of its own, whatever the text holds (security review 3, N9; M6's remainder).

`diff --output markdown` and `rollout --output markdown` print the blueprint's file name in their header; the review
names changed objects in a collapsed `<details>` summary; the rollout plan's steps carry object, node and pool names.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import CASES
from markdown_it import MarkdownIt
from markdown_it.token import Token
from test_rollout_security import FIELDS, WORST, hostile_plan

from gpustack.cli import group
from gpustack.review import report
from gpustack.review.data import review_data
from gpustack.review.loading import side_from_file
from gpustack.review.review import review_change
from gpustack.rollout.render import render_markdown, render_markdown_summary

REVIEW = Path(__file__).resolve().parents[2] / "shared" / "reference" / "security-review-3"
BASE = REVIEW / "base.yaml" if (REVIEW / "base.yaml").exists() else CASES / "rollout" / "taints" / "old.yaml"
# N9's repro: blank lines open a heading, an @mention, a link and an image in the bot's comment.
N9_NAME = "x\n\n## LGTM: approved by @org-security-team\n\n[Re-run checks](https:\\\\evil.example) <img src=x>\n\n.yaml"
VARIANTS = [
    N9_NAME,
    "x\r## CR alone\r.yaml",
    "x\u2028## line separator\u2029.yaml",
    "x\u0085## next line.yaml",
    "x\x0b\x0c## vertical tab.yaml",
    "a`b``c ## backticks.yaml",
    "<img src=x onerror=alert(1)> [link](https:evil.example) @someone.yaml",
    "|pipe|.yaml",
]
MARKUP = {"link_open", "image", "html_inline", "html_block", "heading_open"}


def parse(text: str) -> list[Token]:
    return MarkdownIt("commonmark").enable("table").parse(text)


def flat(tokens: list[Token]) -> list[Token]:
    return [t for token in tokens for t in [token, *(token.children or [])]]


def markup(tokens: list[Token]) -> set[str]:
    """The markup tokens a text could open (gpustack's own comment marker, <details> blocks and <br> aside)."""
    ours = ("<!-- gpustack-review -->", "<details>", "</details>", "<br>")
    return {t.type for t in flat(tokens) if t.type in MARKUP - {"heading_open"} and not t.content.startswith(ours)}


def headings(tokens: list[Token]) -> list[tuple[str, list[Token]]]:
    return [(t.tag, tokens[i + 1].children or []) for i, t in enumerate(tokens) if t.type == "heading_open"]


@pytest.mark.parametrize("name", VARIANTS, ids=range(len(VARIANTS)))
def test_diff_markdown_header_shows_the_file_name_as_one_code_span(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    shutil.copy(BASE, "base.yaml")
    shutil.copy(BASE, name)
    result = CliRunner().invoke(group, ["diff", "base.yaml", name, "--output", "markdown"])
    assert result.exit_code in (0, 1), result.output
    tokens = parse(result.stdout)
    assert [tag for tag, _ in headings(tokens)] == ["h2"]  # no heading of the file name's own
    (_, inline), *_ = headings(tokens)
    assert [t.type for t in inline] == ["text", "code_inline", "text", "code_inline"]
    shown = inline[3].content
    assert "\n" not in shown and "\r" not in shown and "\u2028" not in shown and "\u0085" not in shown
    assert not markup(tokens)


def test_n9_repro_diff_and_rollout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """N9's repro: the review's header keeps the name in one code span; rollout refuses the name outright."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(BASE, "base.yaml")
    shutil.copy(BASE, N9_NAME)
    review = CliRunner().invoke(group, ["diff", "base.yaml", N9_NAME, "--output", "markdown"]).stdout
    header = review.splitlines()[1]
    assert header.startswith("## gpustack review: `base.yaml` → `x  ## LGTM: approved by @org-security-team  [Re-run")
    assert "LGTM" not in "".join(review.splitlines()[2:])
    rollout = CliRunner().invoke(group, ["rollout", "base.yaml", N9_NAME, "--output", "markdown"])
    assert rollout.exit_code == 2 and rollout.stdout == "" and "control character" in rollout.stderr


@pytest.mark.parametrize("name", VARIANTS, ids=range(len(VARIANTS)))
def test_rollout_markdown_keeps_names_and_steps_as_text(name: str) -> None:
    """Built directly: the CLI refuses such file names, and the template check such object names."""
    plan = hostile_plan({**dict.fromkeys(FIELDS, f"{name}{WORST}"), "before": name, "after": f"HEAD:{name}"})
    text = render_markdown(plan)
    tokens = parse(text)
    assert [tag for tag, _ in headings(tokens)] == ["h1", "h2", "h3", "h3", "h3"]
    h1 = headings(tokens)[0][1]
    assert [t.type for t in h1] == ["text", "code_inline", "text", "code_inline"]
    assert not any(char in h1[1].content for char in "\n\r\x0b\x0c\x85\u2028\u2029")
    assert not markup(tokens)
    steps = [t for t in tokens if t.type == "list_item_open"]
    assert len(steps) == len(plan.steps)
    assert not markup(parse(render_markdown_summary(plan)))


def test_review_summary_of_an_object_stays_in_its_details_block() -> None:
    """An object's name in the collapsed diff's <summary>: a blank line there would end the HTML block."""
    case = CASES / "review" / "nodes-taints-chart"
    before, after = side_from_file(str(case / "before.yaml")), side_from_file(str(case / "after.yaml"))
    assert before.snapshot is not None and after.snapshot is not None
    review = review_change(before.snapshot, after.snapshot)
    data = review_data(review)
    assert data["objects"]
    hostile = "x\n\n## LGTM @org-security-team\n\n<img src=x>\u2028[a](https://evil.example)"
    data["objects"] = report._trim_diffs([{**o, "name": hostile} for o in data["objects"]])
    text = report._environment().get_template("review-markdown.j2").render(review=data)
    tokens = parse(text)
    assert not any("LGTM" in "".join(c.content for c in inline) for _, inline in headings(tokens))
    summaries = [t for t in tokens if t.type == "html_block" and t.content.startswith("<details>")]
    assert len(summaries) == len(data["objects"])
    assert all("&lt;img src=x&gt;" in t.content and "\n\n" not in t.content for t in summaries)
    assert not markup(tokens)


def test_a_revision_label_is_escaped_like_a_file_name() -> None:
    """With --base the header reads REV:path (and a rename's old name, from git's history, after it)."""
    case = CASES / "review" / "nodes-taints-chart"
    before, after = side_from_file(str(case / "before.yaml")), side_from_file(str(case / "after.yaml"))
    assert before.snapshot is not None and after.snapshot is not None
    old = dataclasses.replace(before.snapshot, label="main\n\n# x:blueprints/old\u2028name.yaml (renamed to a.yaml)")
    text = report.render_markdown(review_change(old, after.snapshot))
    tokens = parse(text)
    assert next(tag for tag, _ in headings(tokens)) == "h2"
    assert "h1" not in [tag for tag, _ in headings(tokens)]
    assert "main  # x:blueprints/old name.yaml (renamed to a.yaml)" in text.splitlines()[1]

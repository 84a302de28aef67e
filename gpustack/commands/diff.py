"""`gpustack diff OLD NEW` and `gpustack diff --base REV BLUEPRINT`: review a blueprint change."""

from __future__ import annotations

import sys
from typing import NoReturn

import click

from gpustack.commands.options import output_option
from gpustack.commands.reporting import echo_text, stop_if_compile_failed, stop_invalid
from gpustack.jsondoc import dump_document
from gpustack.review.loading import Side, side_at_revision, side_from_file
from gpustack.review.report import RENDERERS
from gpustack.review.review import Review, review_change
from gpustack.review.revision import RevisionError
from gpustack.review.risk import Level

EXIT_SAME = 0
EXIT_CHANGED = 1
EXIT_ERROR = 2


def _fail(message: str, output: str) -> NoReturn:
    if output == "json":
        click.echo(dump_document("ReviewError", {"error": message}), nl=False)
    echo_text(f"gpustack diff: {message}", err=True)
    sys.exit(EXIT_ERROR)


def _report_invalid(sides: list[Side], output: str) -> NoReturn:
    """Like `gpustack validate`: every problem with its source line; JSON on stdout, text on stderr."""
    invalid = {s.validation.file: s.validation for s in sides if s.validation is not None and not s.validation.ok}
    results = list(invalid.values())  # one report per file, even when OLD and NEW are the same file
    stop_invalid(results, output, "nothing to review", command="diff", exit_code=EXIT_ERROR)


def _rollout_summary(review: Review) -> str:
    """The rollout plan's summary under the review: its waves, how long their waits may take, the capacity dip."""
    from gpustack.rollout.planner import plan_rollout
    from gpustack.rollout.render import render_markdown_summary

    plan = plan_rollout(review.before, review.after)
    return "\n" + render_markdown_summary(plan, "###") if plan.phases else ""


@click.command(name="diff")
@click.argument(
    "blueprints", nargs=-1, required=True, metavar="OLD NEW | --base REV BLUEPRINT", type=click.Path(dir_okay=False)
)
@click.option(
    "--base",
    metavar="REV",
    help="Compare BLUEPRINT with its version at git revision REV (a branch such as origin/main, a tag, a commit).",
)
@click.option(
    "--fail-on",
    type=click.Choice([str(level) for level in Level]),
    help="Exit 1 only when a risk at or above this severity is flagged (otherwise 0), instead of on any change.",
)
@output_option(("text", "markdown", "json"))
def command(blueprints: tuple[str, ...], base: str | None, fail_on: str | None, output: str) -> None:
    """Review a blueprint change: OLD NEW, or --base REV BLUEPRINT.

    Reports pools, tenants and workloads added, removed or changed field by field; capacity per pool
    and tenant before and after; risk flags (MIG re-partitioning, evicting taints, renamed resources,
    ...) with the nodes and workloads they touch; and the manifest objects that change, with diffs.

    Exit 0 no change, 1 changes (with --fail-on: a risk at or above that severity), 2 error:
    an invalid blueprint on either side, a git failure, or a usage error.
    """
    if base is not None and len(blueprints) != 1:
        raise click.UsageError("with --base give exactly one BLUEPRINT (the working-tree version)")
    if base is not None and blueprints[0] == "-":
        raise click.UsageError("--base reads BLUEPRINT's history from git: give its path, not - (standard input)")
    if base is None and len(blueprints) != 2:
        raise click.UsageError("give OLD and NEW blueprints, or --base REV and one BLUEPRINT")
    try:
        before = side_at_revision(blueprints[0], base) if base is not None else side_from_file(blueprints[0])
    except RevisionError as error:
        _fail(str(error), output)
    after = side_from_file(blueprints[-1])
    if before.snapshot is None or after.snapshot is None:
        _report_invalid([before, after], output)
    review = review_change(before.snapshot, after.snapshot)
    compiled = [(before.validation, review.before.plan), (after.validation, review.after.plan)]
    stop_if_compile_failed(compiled, output, "nothing to review", command="diff", exit_code=EXIT_ERROR)
    text = RENDERERS[output](review)
    if output == "markdown" and review.changed:
        text += _rollout_summary(review)
    # Blueprint strings reach the text and Markdown reviews as written: nothing hidden may reach a terminal (L6, N16).
    if output == "json":
        click.echo(text, nl=False)
    else:
        echo_text(text, nl=False)
    sys.exit(EXIT_CHANGED if review.fails(Level(fail_on) if fail_on else None) else EXIT_SAME)

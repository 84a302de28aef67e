"""`gpustack rollout OLD NEW` and `gpustack rollout --base REV BLUEPRINT`: a change as an ordered, resumable plan."""

from __future__ import annotations

import dataclasses
import sys

import click

from gpustack.codes import MIG_LAYOUT_AUTO, ROLLOUT_UNSAFE_WORD
from gpustack.commands.options import output_option
from gpustack.commands.reporting import echo_text, stop_if_compile_failed, stop_invalid
from gpustack.diagnostic import Diagnostic, JsonPath, Severity, Span
from gpustack.escapes import hidden
from gpustack.review.loading import Side, side_at_revision, side_from_file
from gpustack.review.revision import RevisionError
from gpustack.rollout.model import DEFAULT_PERCENT
from gpustack.rollout.planner import MaxUnavailableError, plan_rollout
from gpustack.rollout.render import RENDERERS
from gpustack.rollout.script import UnsafeWord, visible

EXIT_OK = 0
EXIT_FAILED = 1  # an invalid blueprint, a git failure, or a refused capacity drop


def _refuse_hidden(blueprints: tuple[str, ...], base: str | None) -> None:
    """A path or revision with a control or format character is refused before anything is read: it would reach
    the plan's header, the script and a PR comment, and git allows a newline in a file name (N2)."""
    for value, hint in [*((path, "OLD NEW | --base REV BLUEPRINT") for path in blueprints), (base, "--base")]:
        found = next((char for char in value or "" if hidden(char)), None)
        if found is not None:
            raise click.BadParameter(
                f"'{visible(value or '')}' holds a control character (U+{ord(found):04X}); rename it",
                param_hint=hint,
            )


def _load(blueprints: tuple[str, ...], base: str | None, output: str) -> tuple[Side, Side]:
    try:
        before = side_at_revision(blueprints[0], base) if base is not None else side_from_file(blueprints[0])
    except RevisionError as error:
        echo_text(f"gpustack rollout: {error}", err=True)
        sys.exit(EXIT_FAILED)
    after = side_from_file(blueprints[-1])
    auto = after.validation and [d.as_error() for d in after.validation.diagnostics if d.code == MIG_LAYOUT_AUTO]
    if after.validation is not None and auto:
        # The new side is what the plan applies: a layout left to `gpustack recommend` is refused, as compile does.
        refused = dataclasses.replace(after.validation, diagnostics=tuple(auto))
        stop_invalid([refused], output, "nothing to plan", command="rollout", exit_code=EXIT_FAILED)
    if before.snapshot is None or after.snapshot is None:
        invalid = {s.validation.file: s.validation for s in (before, after) if s.validation and not s.validation.ok}
        stop_invalid(
            list(invalid.values()),
            output,
            "invalid blueprint; nothing to plan",
            command="rollout",
            exit_code=EXIT_FAILED,
        )
    return before, after


@click.command(name="rollout")
@click.argument(
    "blueprints", nargs=-1, required=True, metavar="OLD NEW | --base REV BLUEPRINT", type=click.Path(dir_okay=False)
)
@click.option("--base", metavar="REV", help="Plan from BLUEPRINT's version at git revision REV (like `gpustack diff`).")
@click.option(
    "--max-unavailable",
    metavar="N|N%",
    help=f"Nodes of a pool out at once: a count, or a share of the pool rounded down. "
    f"Default: {DEFAULT_PERCENT}% of the pool, at least 1 node.",
)
@click.option(
    "--allow-capacity-drop",
    is_flag=True,
    help="Print the plan even when a wave leaves a pool below the quota its tenants were guaranteed.",
)
@output_option(("text", "markdown", "json", "script"))
def command(
    blueprints: tuple[str, ...], base: str | None, max_unavailable: str | None, allow_capacity_drop: bool, output: str
) -> None:
    """Plan a blueprint change on a running cluster: OLD NEW, or --base REV BLUEPRINT.

    Waves of nodes per pool; for each wave cordon, drain gpustack's GPU pods (PodDisruptionBudgets are
    honoured), relabel and retaint, wait for the MIG manager and for the new resources, uncordon. Charts,
    configs and quota raises go first, workload changes after their pool's first wave, quota cuts last.
    `--output script` prints a resumable POSIX sh script.

    Exit 0 a plan, 1 an invalid blueprint, a git failure, or a wave that leaves a tenant below its
    guaranteed quota (unless --allow-capacity-drop), 2 a usage error.
    """
    if base is not None and len(blueprints) != 1:
        raise click.UsageError("with --base give exactly one BLUEPRINT (the working-tree version)")
    if base is None and len(blueprints) != 2:
        raise click.UsageError("give OLD and NEW blueprints, or --base REV and one BLUEPRINT")
    _refuse_hidden(blueprints, base)
    before, after = _load(blueprints, base, output)
    assert before.snapshot is not None and after.snapshot is not None
    compiled = [(before.validation, before.snapshot.plan), (after.validation, after.snapshot.plan)]
    stop_if_compile_failed(compiled, output, "nothing to plan", command="rollout", exit_code=EXIT_FAILED)
    document = after.validation.document if after.validation is not None else None

    def locate(path: JsonPath) -> Span | None:
        return document.span(path) if document is not None else None

    try:
        plan = plan_rollout(before.snapshot, after.snapshot, max_unavailable, locate)
    except MaxUnavailableError as error:
        raise click.BadParameter(str(error), param_hint="--max-unavailable") from error
    if plan.refusals and not allow_capacity_drop and after.validation is not None:
        refused = dataclasses.replace(after.validation, diagnostics=tuple(plan.refusals))
        why = "refused: the rollout would leave tenants below their guaranteed quota (see --allow-capacity-drop)"
        stop_invalid([refused], output, why, command="rollout", exit_code=EXIT_FAILED)
    try:
        text = RENDERERS[output](plan)
    except UnsafeWord as error:
        assert after.validation is not None
        problem = Diagnostic(ROLLOUT_UNSAFE_WORD, Severity.ERROR, str(error), None, (), None)
        unsafe = dataclasses.replace(after.validation, diagnostics=(problem,))
        stop_invalid([unsafe], output, "no script written", command="rollout", exit_code=EXIT_FAILED)
    if output in ("json", "script"):
        click.echo(text, nl=False)  # escaped or quoted as its format needs; the script's bytes are its meaning
    else:
        echo_text(text, nl=False)
    sys.exit(EXIT_OK)

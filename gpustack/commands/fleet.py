"""`gpustack fleet ...`: a fleet file's clusters compiled, reviewed and checked for drift as one.

Each subcommand imports what it needs when it runs: `fleet compile` never loads the review or the cluster reader.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn

import click

from gpustack.commands.options import output_option, refuse_format_named_dir
from gpustack.commands.reporting import echo_text, stop_invalid
from gpustack.diagnostic import Diagnostic
from gpustack.fleet.model import Fleet
from gpustack.fleet.reading import FleetRead, read_fleet
from gpustack.json_text import pretty_json
from gpustack.validation import Validation

if TYPE_CHECKING:
    from gpustack.fleet.compiling import ClusterOutcome

NOTHING_WRITTEN = "nothing written"


@click.group(name="fleet")
def command() -> None:
    """A fleet file's clusters (a base blueprint plus overlays), compiled, reviewed and checked as one.

    See docs/fleet.md: the fleet file, pointing Argo CD or Flux at the output, and how a change flows.
    """


def read_or_stop(path: str, output: str, outcome: str) -> tuple[FleetRead, Fleet]:
    """The fleet file, or its diagnostics and exit 1."""
    read = read_fleet(path)
    if not read.ok or read.fleet is None or read.document is None:
        stop_invalid([Validation(read.file, read.document, None, read.diagnostics)], output, outcome)
    return read, read.fleet


def stop_clusters(path: str, diagnostics: list[Diagnostic], output: str, outcome: str) -> NoReturn:
    """Stop at the clusters' diagnostics: each shown with its source line, under the files they are in."""
    stop_invalid(_by_file(path, diagnostics), output, outcome)


def _by_file(path: str, diagnostics: list[Diagnostic]) -> list[Validation]:
    """Diagnostics grouped under the file each is in (the fleet file for those without a place); one raised alike in
    many clusters (the base's) once, naming them."""
    from gpustack.fleet.resolve import collapse_repeats

    diagnostics = collapse_repeats(diagnostics)
    files = sorted({d.span.file for d in diagnostics if d.span is not None} | {path})
    by_file = {file: tuple(d for d in diagnostics if (d.span.file if d.span else path) == file) for file in files}
    return [Validation(file, None, None, found) for file, found in by_file.items() if found]


@command.command(name="compile")
@click.argument("fleet", type=click.Path(dir_okay=False))
@click.option("--out-dir", "-d", "out_dir", metavar="DIR", required=True, help="The fleet's output folder.")
@click.option("--check", is_flag=True, help="Write nothing; exit 1 and list the differences if any folder is stale.")
@click.option(
    "--jobs", "-j", type=click.IntRange(min=1), default=None, help="Clusters compiled at once (default: every core)."
)
@output_option(("text", "json"))
def compile_command(fleet: str, out_dir: str, check: bool, jobs: int | None, output: str) -> None:
    """Compile every cluster of FLEET to DIR/CLUSTER/ (as `gpustack compile` of its blueprint) and the Argo CD or
    Flux objects that deliver them to DIR/delivery/. A cluster's folder is replaced only while it holds nothing
    but what gpustack wrote; an invalid cluster writes nothing at all (exit 1).

    --output json prints a FleetCompileReport: each cluster's CompileReport (as `gpustack compile --output json`
    gives it), the delivery folder's files, and with --check what is stale.
    """
    from gpustack.commands.reporting import echo_diagnostics
    from gpustack.diagnostic import DiagnosticError
    from gpustack.fleet.compiling import compile_fleet, default_jobs, orphans, write_clusters, write_delivery

    refuse_format_named_dir(out_dir)
    report = _CompileJson(fleet, out_dir, check) if output == "json" else None
    read = read_fleet(fleet)
    if not read.ok or read.fleet is None or read.document is None:
        if report is not None:
            report.stop(None, [], read.diagnostics)
        stop_invalid([Validation(read.file, read.document, None, read.diagnostics)], output, NOTHING_WRITTEN)
    model = read.fleet
    outcomes = compile_fleet(fleet, model, out_dir, check=check, jobs=jobs or default_jobs(), describe=bool(report))
    failed = [d for outcome in outcomes for d in outcome.diagnostics if not outcome.ok]
    if failed:  # every cluster compiled before any is written: a fleet is written whole or not at all
        if report is not None:
            report.stop(model, outcomes, [])
        stop_clusters(fleet, failed, "text", NOTHING_WRITTEN)
    warnings = [d for outcome in outcomes for d in outcome.diagnostics]
    if warnings and report is None:
        echo_diagnostics(_by_file(fleet, warnings))
    if not check:
        try:
            write_delivery(model, out_dir, check=False, dry_run=True)  # refused before any cluster is written
        except DiagnosticError as error:
            if report is not None:
                report.stop(model, outcomes, list(error.diagnostics))
            stop_clusters(fleet, list(error.diagnostics), "text", NOTHING_WRITTEN)
        refused = write_clusters(outcomes, out_dir)
        if refused:
            if report is not None:
                report.stop(model, outcomes, refused)
            stop_clusters(fleet, refused, "text", NOTHING_WRITTEN)
    try:
        delivery = write_delivery(model, out_dir, check=check)
    except DiagnosticError as error:
        if report is not None:
            report.stop(model, outcomes, list(error.diagnostics), written=not check)
        stop_clusters(fleet, list(error.diagnostics), "text", "delivery objects not written")
    left = orphans(model, out_dir)
    if report is not None:
        report.finish(model, outcomes, delivery if check else None, left)
    for name in left:
        echo_text(
            f"{out_dir}/{name}: written by gpustack for a cluster no longer in the fleet; delete it in a reviewed "
            "change (the engine no longer delivers it)",
            err=True,
        )
    if check:
        _report_check(fleet, out_dir, [(o.name, list(o.stale)) for o in outcomes] + [("delivery", delivery)], left)
        return
    files = sum(outcome.count for outcome in outcomes)
    echo_text(
        f"wrote {len(outcomes)} cluster folder(s) ({files} files) and {out_dir}/delivery/ "
        f"({model.delivery.engine}) to {out_dir}"
    )


class _CompileJson:
    """`fleet compile --output json`: one FleetCompileReport on stdout, whatever the outcome, and the exit code."""

    def __init__(self, fleet: str, out_dir: str, check: bool) -> None:
        self.fleet, self.out_dir, self.check = fleet, out_dir, check

    def _echo(
        self,
        model: Fleet | None,
        outcomes: list[ClusterOutcome],
        problems: Sequence[Diagnostic],
        written: bool,
        delivery_stale: list[str] | None = None,
        left: list[str] | None = None,
    ) -> None:
        from gpustack.fleet.compiling import fleet_compile_data
        from gpustack.jsondoc import dump_document

        grouped = [(v.file, list(v.diagnostics)) for v in _by_file(self.fleet, list(problems))] if problems else []
        data = fleet_compile_data(
            self.fleet,
            model,
            self.out_dir,
            check=self.check,
            written=written,
            outcomes=outcomes,
            problems=grouped,
            delivery_stale=delivery_stale,
            left=left,
        )
        click.echo(dump_document("FleetCompileReport", data), nl=False)

    def stop(
        self,
        model: Fleet | None,
        outcomes: list[ClusterOutcome],
        problems: Sequence[Diagnostic],
        written: bool = False,
    ) -> NoReturn:
        """Invalid or refused: what was found, nothing (or, past the clusters, only they) written; exit 1."""
        self._echo(model, outcomes, problems, written)
        sys.exit(1)

    def finish(
        self, model: Fleet, outcomes: list[ClusterOutcome], delivery_stale: list[str] | None, left: list[str]
    ) -> NoReturn:
        """Written (or checked): exit 1 only when --check found a folder stale or left behind."""
        self._echo(model, outcomes, [], not self.check, delivery_stale, left)
        stale = any(outcome.stale for outcome in outcomes) or bool(delivery_stale) or bool(left)
        sys.exit(1 if self.check and stale else 0)


def _report_check(fleet: str, out_dir: str, stale: list[tuple[str, list[str]]], orphaned: list[str]) -> None:
    behind = [(name, differences) for name, differences in stale if differences]
    for name, differences in behind:
        echo_text("\n".join(f"{name}/{line}" for line in differences))
    if behind or orphaned:
        names = [name for name, _ in behind] + orphaned
        echo_text(f"{out_dir} is stale: {', '.join(names)}; run gpustack fleet compile {fleet} -d {out_dir}")
        sys.exit(1)
    echo_text(f"{out_dir} is up to date ({len(stale) - 1} clusters)")


@command.command(name="resolve")
@click.argument("fleet", type=click.Path(dir_okay=False))
@click.argument("cluster")
def resolve_command(fleet: str, cluster: str) -> None:
    """Print CLUSTER's blueprint as the fleet makes it (the base with its overlay merged): what `fleet compile`
    compiles for it, to read or to `gpustack compile` by hand (save it in the base's folder for its templates)."""
    from gpustack.fleet.resolve import resolve_cluster
    from gpustack.yamlout import dump_yaml

    read, model = read_or_stop(fleet, "text", "nothing resolved")
    entry = model.cluster(cluster)
    if entry is None:
        raise click.UsageError(f"no cluster named {cluster!r} in {fleet}")
    assert read.document is not None
    resolved = resolve_cluster(model, read.document, entry)
    if resolved.data is None or not resolved.ok:
        stop_clusters(fleet, list(resolved.validation.diagnostics), "text", "nothing resolved")
    click.echo(dump_yaml(resolved.data), nl=False)


@command.command(name="drift")
@click.argument("fleet", type=click.Path(dir_okay=False))
@click.argument("snapshots", type=click.Path(file_okay=False, exists=True), metavar="SNAPSHOT-DIR")
@output_option(("text", "markdown", "json"))
def drift_command(fleet: str, snapshots: str, output: str) -> None:
    """Compare every cluster of FLEET with its snapshot SNAPSHOT-DIR/CLUSTER.yaml (`kubectl get nodes,pods,
    resourcequotas,namespaces -A -o yaml`), as `gpustack drift` does, in one report.

    Exit 0 when every cluster matches, 1 when any drifted, has no snapshot or is invalid (for a scheduled job).
    """
    from pathlib import Path

    from gpustack.escapes import json_safe
    from gpustack.fleet.drift import fleet_drift, fleet_report_data, format_fleet_markdown, format_fleet_text, in_sync

    read, model = read_or_stop(fleet, output, "nothing compared")
    assert read.document is not None
    found = fleet_drift(model, read.document, Path(snapshots))
    problems = [d for entry in found for d in entry.diagnostics]
    if problems and output != "json":
        from gpustack.commands.reporting import echo_diagnostics

        echo_diagnostics(_by_file(fleet, problems))
    if output == "json":
        click.echo(json_safe(pretty_json(fleet_report_data(found))) + "\n", nl=False)
    elif output == "markdown":
        echo_text(format_fleet_markdown(found), nl=False)
    else:
        echo_text(format_fleet_text(found), nl=False)  # node names and labels from the clusters, escaped
    sys.exit(0 if in_sync(found) else 1)


@command.command(name="diff")
@click.argument("fleet", type=click.Path(dir_okay=False))
@click.option("--base", metavar="REV", required=True, help="The git revision to compare with (origin/main, a tag).")
@output_option(("text", "markdown", "json"))
def diff_command(fleet: str, base: str, output: str) -> None:
    """Review a change to FLEET (its file, base or overlays) against git revision REV: per cluster the review
    `gpustack diff` gives, the whole fleet's GPUs per model before and after, and which clusters a change to the
    base reaches. --output markdown for a pull-request comment.

    Exit 0 no change, 1 changes, 2 error (an invalid side, a git failure).
    """
    from gpustack.fleet.review import render_markdown, render_text, review_data, review_fleet
    from gpustack.jsondoc import dump_document
    from gpustack.review.revision import RevisionError

    try:
        review = review_fleet(fleet, base)
    except RevisionError as error:
        if output == "json":
            click.echo(dump_document("ReviewError", {"error": str(error)}), nl=False)
        echo_text(f"gpustack fleet diff: {error}", err=True)
        sys.exit(2)
    if review.invalid:
        problems = [d for side in review.invalid for d in side.diagnostics]
        stop_invalid(_by_file(fleet, problems), output, "nothing to review", command="fleet diff", exit_code=2)
    if output == "json":
        click.echo(dump_document("FleetReview", review_data(review)), nl=False)
    else:
        echo_text(render_markdown(review) if output == "markdown" else render_text(review), nl=False)
    sys.exit(1 if review.changed else 0)

"""`gpustack simulate BLUEPRINT [--scenario FILE] [--cluster SNAPSHOT]`."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click

from gpustack.commands.options import output_option
from gpustack.commands.validate import line_lookup
from gpustack.compile import compile_blueprint
from gpustack.diagnostic import Diagnostic, DiagnosticError, JsonPath, Severity, Span, sort_diagnostics
from gpustack.load import read_document
from gpustack.report import format_json as format_diagnostics_json
from gpustack.report import format_text as format_diagnostics_text
from gpustack.simulate import run_simulation
from gpustack.simulate.demand import TooManyPods
from gpustack.simulate.hints import SCENARIO
from gpustack.simulate.messages import KubeVersion
from gpustack.simulate.report import format_json, format_text, report_data
from gpustack.simulate.scenario import Scenario, scenario_from
from gpustack.snapshot import Snapshot, read_snapshot
from gpustack.validation import Validation, validate_path


def _version(context: click.Context, parameter: click.Parameter, value: str | None) -> KubeVersion | None:
    if value is None:
        return None
    try:
        return KubeVersion.parse(value)
    except ValueError as error:
        raise click.BadParameter(str(error)) from error


@click.command(name="simulate")
@click.argument("blueprint", type=click.Path(dir_okay=False, allow_dash=True))
@click.option(
    "--scenario", type=click.Path(dir_okay=False), help="Demand scenario: replicas, pod spec overrides, raw pods."
)
@click.option(
    "--cluster",
    "cluster",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="Start from a running cluster: `kubectl get nodes,pods,priorityclasses,resourcequotas,namespaces -A -o yaml`.",
)
@click.option(
    "--kubernetes-version",
    "version",
    callback=_version,
    metavar="1.MINOR[.PATCH]",
    help="Word messages as this release does (default: the blueprint's; 1.34.1 keeps the taint in the message).",
)
@output_option()
def command(
    blueprint: str, scenario: str | None, cluster: str | None, version: KubeVersion | None, output: str
) -> None:
    """Place every workload's pods as kube-scheduler (and Volcano) would, before anything is applied.

    Reports placements, utilisation per pool, quota use per tenant, and for each pod that would stay
    Pending the scheduler's own message for the cluster's version plus a hint at the line to change.
    Exit 0 when every pod is placed, 1 when any stays pending or the input is invalid, 2 on usage errors.
    """
    result = validate_path(blueprint)
    if not result.ok or result.blueprint is None:
        _fail(result.file, list(result.diagnostics), output, result)
    assert result.blueprint is not None and result.document is not None
    plan = compile_blueprint(result.blueprint)
    diagnostics = sort_diagnostics([*result.diagnostics, *plan.diagnostics])
    if any(d.severity is Severity.ERROR for d in diagnostics):
        _fail(result.file, diagnostics, output, result)
    if diagnostics and output == "text":  # warnings: worth reading, not worth stopping for
        click.echo(format_diagnostics_text(diagnostics, line_lookup([result])) + "\n", err=True)
    loaded: Scenario | None = None
    if scenario is not None:
        try:
            loaded = scenario_from(read_document(scenario), result.blueprint)
        except DiagnosticError as error:
            _fail(scenario, list(error.diagnostics), output, result)
    snapshot: Snapshot | None = None
    if cluster is not None:
        try:
            snapshot = read_snapshot(cluster)
        except DiagnosticError as error:
            _fail(cluster, list(error.diagnostics), output, result)
    try:
        objects = [m.obj for m in plan.objects]
        simulation = run_simulation(result.blueprint, objects, loaded, version, snapshot=snapshot)
    except TooManyPods as error:
        click.echo(f"gpustack: {error}; lower the scenario's scale or replicas", err=True)
        sys.exit(1)
    document = result.document

    def locate(which: str, path: JsonPath) -> Span | None:
        if which == SCENARIO:
            return loaded.document.span(path) if loaded is not None and loaded.document is not None else None
        return document.span(path)

    data = report_data(simulation, result.file, locate)
    click.echo(format_json(data) if output == "json" else format_text(data), nl=False)
    sys.exit(0 if data["ok"] else 1)


def _fail(file: str, diagnostics: Sequence[Diagnostic], output: str, result: Validation) -> None:
    """Print why nothing was simulated, the way `gpustack validate` prints it, and exit 1."""
    if output == "json":
        click.echo(format_diagnostics_json([(file, diagnostics)]), nl=False)
    else:
        click.echo(format_diagnostics_text(diagnostics, line_lookup([result])) + "\n", err=True)
        errors = sum(d.severity is Severity.ERROR for d in diagnostics)
        click.echo(f"{file}: {errors} error(s); nothing simulated", err=True)
    sys.exit(1)

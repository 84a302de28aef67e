"""`gpustack simulate BLUEPRINT [--scenario FILE] [--cluster SNAPSHOT]`."""

from __future__ import annotations

import dataclasses
import sys

import click

from gpustack.cluster.snapshot import ClusterSnapshot, read_snapshot
from gpustack.collector import paused
from gpustack.commands.options import output_option
from gpustack.commands.reporting import echo_diagnostics, echo_text, stop_invalid
from gpustack.compile import compile_blueprint
from gpustack.diagnostic import DiagnosticError, JsonPath, Span, sort_diagnostics
from gpustack.load import read_document
from gpustack.names import SNAPSHOT_COMMAND
from gpustack.simulate import run_simulation
from gpustack.simulate.demand import TooManyPods
from gpustack.simulate.hints import SCENARIO
from gpustack.simulate.messages import KubeVersion
from gpustack.simulate.report import format_json, format_text, report_data
from gpustack.simulate.scenario import Scenario, scenario_from
from gpustack.validation import Validation, validate_path

NOTHING_SIMULATED = "nothing simulated"


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
    help=f"Start from a running cluster: `{SNAPSHOT_COMMAND}` (docs/import.md).",
)
@click.option(
    "--kubernetes-version",
    "version",
    callback=_version,
    metavar="1.MINOR[.PATCH]",
    help="Word messages as this release does (default: the blueprint's; 1.34.1 keeps the taint in the message).",
)
@output_option()
@paused()  # the whole command, not stage by stage: each pause's end collected all its stage had made (0.3 s at 10x)
def command(
    blueprint: str, scenario: str | None, cluster: str | None, version: KubeVersion | None, output: str
) -> None:
    """Place every workload's pods as kube-scheduler (and Volcano) would, before anything is applied.

    Reports placements, utilisation per pool, quota use per tenant, and for each pod that would stay
    Pending the scheduler's own message for the cluster's version plus a hint at the line to change.
    Exit 0 when every pod is placed, 1 when any stays pending or the input is invalid, 2 on usage errors.
    """
    # _simulate returns rather than exits: its simulation and report are freed by reference counting as it returns,
    # inside the pause. Exiting from inside it kept them alive in the traceback, and the first collection after the
    # pause walked every one of them (0.15 s at kube-limit 10x).
    sys.exit(_simulate(blueprint, scenario, cluster, version, output))


def _simulate(
    blueprint: str, scenario: str | None, cluster: str | None, version: KubeVersion | None, output: str
) -> int:
    """The command's work; its exit code (invalid input still stops it from inside, with its diagnostics)."""
    result = validate_path(blueprint)
    if not result.ok or result.context is None:
        stop_invalid([result], output, NOTHING_SIMULATED)
    assert result.context is not None and result.document is not None
    context, document = result.context, result.document
    valid = context.blueprint
    plan = compile_blueprint(context)
    # Compile reports nothing the checks did not (tests/test_one_gate.py); its own would still be shown.
    result = dataclasses.replace(result, diagnostics=tuple(sort_diagnostics([*result.diagnostics, *plan.diagnostics])))
    if not result.ok:
        stop_invalid([result], output, NOTHING_SIMULATED)
    if output == "text":  # warnings: worth reading, not worth stopping for
        echo_diagnostics([result])
    loaded: Scenario | None = None
    if scenario is not None:
        try:
            loaded = scenario_from(read_document(scenario), valid)
        except DiagnosticError as error:
            stop_invalid([Validation(scenario, None, None, error.diagnostics)], output, NOTHING_SIMULATED)
    snapshot: ClusterSnapshot | None = None
    if cluster is not None:
        try:
            snapshot = read_snapshot(cluster)
        except DiagnosticError as error:
            stop_invalid([Validation(cluster, None, None, error.diagnostics)], output, NOTHING_SIMULATED)
    try:
        simulation = run_simulation(context, [m.obj for m in plan.objects], loaded, version, snapshot=snapshot)
    except TooManyPods as error:
        click.echo(f"gpustack: {error}; lower the scenario's scale or replicas", err=True)
        return 1

    def locate(which: str, path: JsonPath) -> Span | None:
        if which == SCENARIO:
            return loaded.document.span(path) if loaded is not None and loaded.document is not None else None
        return document.span(path)

    data = report_data(simulation, result.file, locate)
    if output == "json":
        click.echo(format_json(data), nl=False)
    else:
        echo_text(format_text(data), nl=False)  # descriptions, names and images reach the terminal escaped
    return 0 if data["ok"] else 1

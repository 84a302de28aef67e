"""`gpustack capacity BLUEPRINT [--chart FILE.svg]`."""

from __future__ import annotations

import os
import sys
import tempfile

import click

from gpustack.capacity import capacity_data, format_json, format_text, measure_capacity
from gpustack.capacity_chart import render_chart
from gpustack.commands.options import output_option
from gpustack.commands.reporting import echo_text, stop_invalid
from gpustack.validation import validate_path


@click.command(name="capacity")
@click.argument("blueprint", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--chart", type=click.Path(dir_okay=False, writable=True), help="Also draw the capacity as an SVG file.")
@output_option()
def command(blueprint: str, chart: str | None, output: str) -> None:
    """Show what each pool can give and what each tenant may take and asks for.

    Per pool: physical GPUs, schedulable units per resource name, memory and compute per unit and
    how isolated a unit is. Per tenant: quota against what its pools have and what its templates
    request. Warns where time-slicing lets pods oversubscribe GPU memory. Exit 0, or 1 when the
    blueprint is invalid or the chart cannot be written, 2 on usage errors.
    """
    result = validate_path(blueprint)
    if not result.ok or result.context is None:
        stop_invalid([result], output, "no capacity to show")
    data = capacity_data(measure_capacity(result.context), result.file)
    if chart is not None:
        try:
            _write(chart, render_chart(data))
        except OSError as error:
            click.echo(f"gpustack: cannot write chart {chart}: {error.strerror or error}", err=True)
            sys.exit(1)
    if output == "json":
        click.echo(format_json(data), nl=False)
    else:
        echo_text(format_text(data), nl=False)  # names and descriptions reach the terminal escaped


def _write(path: str, text: str) -> None:
    """Write atomically, so a failed run never leaves half a chart behind."""
    folder = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=".gpustack-chart-", suffix=".svg")
    try:
        mask = os.umask(0o022)
        os.umask(mask)
        os.chmod(temporary, 0o666 & ~mask)  # mkstemp makes it 0600: a chart is for others to read
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise

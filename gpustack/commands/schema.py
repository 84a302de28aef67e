"""`gpustack schema`: the blueprint JSON Schema, for editors and CI."""

from __future__ import annotations

import json

import click

from gpustack.schema import load_schema


@click.command(name="schema")
def command() -> None:
    """Print the blueprint JSON Schema (2020-12)."""
    click.echo(json.dumps(load_schema(), indent=2))

"""`gpustack models`: the GPU catalog, so users can name a model the way gpustack knows it."""

from __future__ import annotations

import json

import click

from gpustack.catalog import GpuModel, load_catalog
from gpustack.commands.options import output_option


def _model_json(model: GpuModel) -> dict[str, object]:
    return {
        "key": model.key,
        "name": model.display_name,
        "productLabels": list(model.product_labels),
        "memoryGiB": model.memory_gib,
        "architecture": model.architecture,
        "family": model.family,
        "computeCapability": model.compute_capability,
        "mig": None
        if model.mig is None
        else [{"profile": p.name, "id": p.id, "maxCount": p.max_count} for p in model.mig.profiles],
    }


@click.command(name="models")
@click.argument("model", required=False)
@output_option()
def command(model: str | None, output: str) -> None:
    """List catalogued GPU models, or show one MODEL (a key or a GFD product label) with its MIG profiles."""
    catalog = load_catalog()
    if model is not None:
        found = catalog.resolve(model)
        if found is None:
            suggestions = catalog.suggest(model)
            hint = f"; did you mean {' or '.join(suggestions)}?" if suggestions else ""
            raise click.UsageError(f"unknown GPU model '{model}'{hint}")
        models = [found]
    else:
        models = sorted(catalog.models.values(), key=lambda m: m.key)
    if output == "json":
        click.echo(json.dumps([_model_json(m) for m in models], indent=2))
        return
    for entry in models:
        mig = "no MIG" if entry.mig is None else "MIG: " + ", ".join(p.name for p in entry.mig.profiles)
        click.echo(f"{entry.key:32} {entry.memory_gib:>4} GiB  {entry.product_label:48} {mig}")

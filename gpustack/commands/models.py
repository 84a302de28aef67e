"""`gpustack models [TEXT]`: the GPU catalog, so users can name a model the way gpustack knows it."""

from __future__ import annotations

import sys

import click

from gpustack.catalog import GpuModel, load_catalog
from gpustack.commands.options import output_option
from gpustack.jsondoc import dump_document


def _model_json(model: GpuModel) -> dict[str, object]:
    return {
        "key": model.key,
        "name": model.display_name,
        "productLabels": list(model.product_labels),
        "gkeAccelerators": list(model.gke_accelerators),
        "memoryGiB": model.memory_gib,
        "architecture": model.architecture,
        "family": model.family,
        "computeCapability": model.compute_capability,
        "mig": None
        if model.mig is None
        else [{"profile": p.name, "id": p.id, "maxCount": p.max_count} for p in model.mig.profiles],
    }


@click.command(name="models")
@click.argument("text", required=False)
@output_option()
def command(text: str | None, output: str) -> None:
    """List catalogued GPU models, or those matching TEXT, with their MIG profiles.

    TEXT matches, ignoring case, any part of a catalog key, a GFD product label (nvidia.com/gpu.product)
    or a cloud accelerator name (GKE's nvidia-tesla-t4): `gpustack models a100` lists every A100.
    Exit 0, or 1 when nothing matches.
    """
    catalog = load_catalog()
    if text is None:
        models = sorted(catalog.models.values(), key=lambda m: m.key)
    else:
        exact = catalog.resolve(text)  # a full node label such as NVIDIA-A100-SXM4-40GB-MIG-1g.5gb
        found = catalog.search(text)
        models = found if exact is None or exact in found else [exact, *found]
    if output == "json":
        click.echo(dump_document("ModelList", {"models": [_model_json(m) for m in models]}), nl=False)
    else:
        for entry in models:
            mig = "no MIG" if entry.mig is None else "MIG: " + ", ".join(p.name for p in entry.mig.profiles)
            click.echo(f"{entry.key:32} {entry.memory_gib:>4} GiB  {entry.product_label:48} {mig}")
    if not models:
        assert text is not None
        suggestions = catalog.suggest(text)
        hint = f"; did you mean {' or '.join(suggestions)}?" if suggestions else ""
        click.echo(f"gpustack: no GPU model matches '{text}'{hint} (`gpustack models` lists them all)", err=True)
        sys.exit(1)

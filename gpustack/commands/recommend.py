"""`gpustack recommend BLUEPRINT [--write]`: for every pool that says `auto`, its MIG layouts (`layout: auto`) or its
sharing (`sharing.strategy: auto`: whole GPUs, MIG layouts or time-slicing), on the fewest GPUs."""

from __future__ import annotations

import dataclasses
import os
import sys
import tempfile
from typing import TYPE_CHECKING

import click

from gpustack.codes import MIG_LAYOUT_AUTO
from gpustack.commands.options import output_option
from gpustack.commands.reporting import echo_text, stop_invalid
from gpustack.diagnostic import Severity
from gpustack.jsondoc import dump_document
from gpustack.validation import Validation, validate_path

if TYPE_CHECKING:
    from gpustack.recommend import Chosen

EXTRA = "pip install 'gpustack[recommend]'"


@click.command(name="recommend")
@click.argument("blueprint", type=click.Path(dir_okay=False, exists=False))
@click.option(
    "--write",
    is_flag=True,
    help="Write the chosen layouts or sharing over `auto` in BLUEPRINT itself (comments and order kept).",
)
@output_option()
def command(blueprint: str, write: bool, output: str) -> None:
    """Choose MIG layouts for each pool with `sharing.mig.layout: auto`, and the sharing for each pool with
    `sharing.strategy: auto` (whole GPUs, MIG layouts, or time-slicing where every workload is shareable).

    Per pool: each GPU's layout (the same on every node) or the sharing and its replicas, the nodes and GPUs that
    hold every workload's pods and every tenant's quota, a proven lower bound and whether the answer is optimal
    (fewest GPUs, then least stranded memory, then fewest distinct layouts; for a sharing, then the strongest
    isolation), why the other sharings lost, and what first-fit-decreasing would need. Exit 0; 1 when the
    blueprint is invalid or a pool's demand fits nothing within its nodes (GS311); 2 on usage errors.
    """
    try:
        from gpustack.recommend import recommend
        from gpustack.recommend.report import as_data, format_text
    except ModuleNotFoundError as error:
        if not (error.name or "").startswith("ortools"):
            raise
        # The solver is an optional extra: say how to get it rather than fail with a traceback.
        click.echo(f"gpustack recommend needs OR-Tools, the solver it uses: {EXTRA}", err=True)
        sys.exit(2)
    result = validate_path(blueprint)
    if not result.ok or result.context is None or result.document is None:
        stop_invalid([result], output, "nothing recommended")
    recommendations, refused = recommend(result.context)
    if refused:
        stop_invalid([dataclasses.replace(result, diagnostics=refused)], output, "nothing recommended")
    if not recommendations:
        echo_text(
            f"{result.file}: no pool has sharing.mig.layout: auto or sharing.strategy: auto; nothing to recommend",
            err=True,
        )
        if output == "json":
            click.echo(dump_document("Recommendation", as_data(())), nl=False)
        return
    if output == "json":
        click.echo(dump_document("Recommendation", as_data(recommendations)), nl=False)
    else:
        echo_text(format_text(recommendations), nl=False)
    if write:
        _write(blueprint, result, recommendations)


def _write(path: str, result: Validation, chosen: tuple[Chosen, ...]) -> None:
    from gpustack.recommend.edit import rewritten

    assert result.document is not None
    text = rewritten(result.document, chosen)
    # The edit is checked before it replaces anything: it must still validate, with no auto left where it wrote.
    check = _validate_text(path, text)
    problems = [d for d in check.diagnostics if d.code == MIG_LAYOUT_AUTO or d.severity is Severity.ERROR]
    written = {r.auto_path for r in chosen}
    if any(d.code != MIG_LAYOUT_AUTO or d.path in written for d in problems):
        stop_invalid([check], "text", f"{path} left as it was")
    _replace(path, text)
    echo_text(f"{path}: wrote what was chosen for {len(chosen)} pool(s)", err=True)


def _validate_text(path: str, text: str) -> Validation:
    """Validate the edited text as if it were the file (templates resolve from the same folder)."""
    folder = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=".gpustack-recommend-", suffix=".yaml")
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as stream:
            stream.write(text)
        return dataclasses.replace(validate_path(temporary), file=path)
    finally:
        os.unlink(temporary)


def _replace(path: str, text: str) -> None:
    """Atomically, keeping the file's mode: a failed run leaves the blueprint as it was."""
    folder = os.path.dirname(os.path.abspath(path))
    mode = os.stat(path).st_mode & 0o7777
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=".gpustack-recommend-", suffix=".yaml")
    try:
        os.chmod(temporary, mode)
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as stream:
            stream.write(text)
        os.replace(temporary, path)
    except OSError as error:
        if os.path.exists(temporary):
            os.unlink(temporary)
        click.echo(f"gpustack: cannot write {path}: {error.strerror or error}", err=True)
        sys.exit(1)

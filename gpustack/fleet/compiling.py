"""Every cluster of a fleet compiled, in parallel on all cores, each to DIR/NAME/ exactly as `gpustack compile` of its
resolved blueprint writes it; the delivery objects to DIR/delivery/.

A worker process reads the fleet file again (cheap), resolves, validates, compiles and renders its cluster (or
compares it with its folder, for --check). The files come back to the parent, which writes only once every cluster
compiled: a fleet with one invalid cluster writes nothing. Results come back in the fleet's order, so the output and
every report are the same as a serial run's (`jobs=1` runs in this process).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from gpustack.codes import FLEET_CLUSTER_SOURCE
from gpustack.collector import paused
from gpustack.compile import compile_blueprint
from gpustack.diagnostic import Diagnostic, DiagnosticError, Severity, has_errors, sort_diagnostics
from gpustack.fleet.delivery import delivery_files
from gpustack.fleet.model import DELIVERY_FOLDER, Fleet
from gpustack.fleet.reading import read_fleet
from gpustack.fleet.resolve import ResolvedCluster, resolve_cluster
from gpustack.write import (
    MANIFEST,
    check_replaceable,
    render_output,
    resolve_target,
    stale_rendered,
    with_manifest,
    write_files,
)


@dataclass(frozen=True)
class ClusterOutcome:
    name: str
    diagnostics: tuple[Diagnostic, ...]
    count: int = 0  # files in the cluster's folder
    objects: int = 0
    releases: int = 0
    stale: tuple[str, ...] = field(default=())  # --check: the differences, as compile --check lists them
    files: dict[str, str] | None = field(default=None, repr=False)  # the folder's files, to write
    inputs: tuple[str, ...] = field(default=())  # what the folder must not hold

    @property
    def ok(self) -> bool:
        return not has_errors(self.diagnostics)


def default_jobs() -> int:
    """Every core this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def compile_fleet(fleet_file: str, fleet: Fleet, out_dir: str, *, check: bool, jobs: int) -> list[ClusterOutcome]:
    """Each cluster compiled and written (or checked, with `check`) under out_dir, in the fleet's order."""
    tasks = [(fleet_file, cluster.name, out_dir, check) for cluster in fleet.clusters]
    if jobs <= 1 or len(tasks) <= 1:
        return [_cluster_task(task) for task in tasks]
    with ProcessPoolExecutor(max_workers=min(jobs, len(tasks))) as pool:
        return list(pool.map(_cluster_task, tasks))


def _cluster_task(task: tuple[str, str, str, bool]) -> ClusterOutcome:
    fleet_file, name, out_dir, check = task
    read = read_fleet(fleet_file)  # valid when the parent read it; edited since, it is reported as it is now
    cluster = read.fleet.cluster(name) if read.fleet is not None else None
    if not read.ok or read.fleet is None or read.document is None or cluster is None:
        changed = Diagnostic(
            FLEET_CLUSTER_SOURCE,
            Severity.ERROR,
            f"{fleet_file} changed while it was compiled (cluster '{name}'); run the command again",
        )
        return ClusterOutcome(name, (*read.diagnostics, changed))
    return compile_cluster(read.fleet, resolve_cluster(read.fleet, read.document, cluster), out_dir, check)


@paused()  # see gpustack/collector.py
def compile_cluster(fleet: Fleet, resolved: ResolvedCluster, out_dir: str, check: bool) -> ClusterOutcome:
    """One cluster compiled: its folder's files rendered (or, with `check`, compared with what DIR/NAME holds)."""
    validation = resolved.validation
    if not resolved.ok or validation.context is None:
        return ClusterOutcome(resolved.name, validation.diagnostics)
    plan = compile_blueprint(validation.context)
    diagnostics = tuple(sort_diagnostics([*validation.diagnostics, *plan.diagnostics]))
    if has_errors(diagnostics):
        return ClusterOutcome(resolved.name, diagnostics)
    files = render_output(plan)
    counts = (len(files), len(plan.objects), len(plan.releases))
    inputs = tuple(str(path) for path in _inputs(fleet, resolved))
    if not check:
        return ClusterOutcome(resolved.name, diagnostics, *counts, files=files, inputs=inputs)
    try:
        stale = tuple(stale_rendered(files, str(Path(out_dir) / resolved.name)))
    except DiagnosticError as error:
        return ClusterOutcome(resolved.name, tuple(sort_diagnostics([*diagnostics, *error.diagnostics])))
    return ClusterOutcome(resolved.name, diagnostics, *counts, stale=stale)


def write_clusters(outcomes: list[ClusterOutcome], out_dir: str) -> list[Diagnostic]:
    """Each compiled cluster's folder replaced (gpustack's safe writer: never a folder holding what it did not
    write, nor one holding an input); what the writer refused, as diagnostics."""
    refused: list[Diagnostic] = []
    for outcome in outcomes:  # every folder checked first: one refused writes none
        if outcome.files is None:
            continue
        target = str(Path(out_dir) / outcome.name)
        try:
            check_replaceable(resolve_target(target), outcome.files, [Path(p) for p in outcome.inputs], target)
        except DiagnosticError as error:
            refused.extend(error.diagnostics)
    if refused:
        return refused
    for outcome in outcomes:
        if outcome.files is None:
            continue
        try:
            write_files(outcome.files, str(Path(out_dir) / outcome.name), inputs=[Path(p) for p in outcome.inputs])
        except DiagnosticError as error:
            refused.extend(error.diagnostics)
    return refused


def _inputs(fleet: Fleet, resolved: ResolvedCluster) -> Iterator[Path]:
    """What a cluster's folder must never hold, as it would be deleted with it: the fleet file, the blueprint and its
    overlay, the templates."""
    yield Path(fleet.file)
    validation = resolved.validation
    if validation.file != "-":
        yield Path(validation.file)
    if validation.blueprint is not None:
        yield from (resolved.folder / path for path, _ in validation.blueprint.templates)
    cluster = fleet.cluster(resolved.name)
    if cluster is not None and isinstance(cluster.overlay, str):
        yield fleet.folder / cluster.overlay


def write_delivery(fleet: Fleet, out_dir: str, *, check: bool, dry_run: bool = False) -> list[str]:
    """Write DIR/delivery/ (or, with check, the differences from it; with dry_run, only refuse as writing would)."""
    files = with_manifest(delivery_files(fleet))
    target = str(Path(out_dir) / DELIVERY_FOLDER)
    if check:
        return stale_rendered(files, target)
    if dry_run:
        check_replaceable(resolve_target(target), files, [Path(fleet.file)], target)
        return []
    return write_files(files, target, inputs=[Path(fleet.file)])


def orphans(fleet: Fleet, out_dir: str) -> list[str]:
    """Folders under DIR that gpustack wrote for a cluster no longer in the fleet: named, never deleted (the engine
    stops delivering them once the fleet leaves them out; removing them is a reviewed change)."""
    names = {cluster.name for cluster in fleet.clusters} | {DELIVERY_FOLDER}
    root = Path(out_dir)
    if not root.is_dir():
        return []
    return sorted(
        entry.name
        for entry in root.iterdir()
        if entry.is_dir() and not entry.is_symlink() and entry.name not in names and (entry / MANIFEST).is_file()
    )

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
from typing import Any

from gpustack.codes import FLEET_CLUSTER_SOURCE
from gpustack.collector import paused
from gpustack.compile import compile_blueprint
from gpustack.compile_report import compile_report, file_entries
from gpustack.diagnostic import Diagnostic, DiagnosticError, Severity, has_errors, sort_diagnostics
from gpustack.fleet.delivery import delivery_files
from gpustack.fleet.model import DELIVERY_FOLDER, Fleet
from gpustack.fleet.reading import read_fleet
from gpustack.fleet.resolve import ResolvedCluster, resolve_cluster
from gpustack.outputs import render_files
from gpustack.report import file_report
from gpustack.write import (
    MANIFEST,
    check_replaceable,
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
    report: dict[str, Any] | None = field(default=None, repr=False)  # --output json: its CompileReport body

    @property
    def ok(self) -> bool:
        return not has_errors(self.diagnostics)


def default_jobs() -> int:
    """Every core this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def compile_fleet(
    fleet_file: str, fleet: Fleet, out_dir: str, *, check: bool, jobs: int, describe: bool = False
) -> list[ClusterOutcome]:
    """Each cluster compiled and written (or checked, with `check`) under out_dir, in the fleet's order; with
    `describe`, each outcome carries its CompileReport body (`gpustack compile --output json`'s)."""
    tasks = [(fleet_file, cluster.name, out_dir, check, describe) for cluster in fleet.clusters]
    if jobs <= 1 or len(tasks) <= 1:
        return [_cluster_task(task) for task in tasks]
    with ProcessPoolExecutor(max_workers=min(jobs, len(tasks))) as pool:
        return list(pool.map(_cluster_task, tasks))


def _cluster_task(task: tuple[str, str, str, bool, bool]) -> ClusterOutcome:
    fleet_file, name, out_dir, check, describe = task
    read = read_fleet(fleet_file)  # valid when the parent read it; edited since, it is reported as it is now
    cluster = read.fleet.cluster(name) if read.fleet is not None else None
    if not read.ok or read.fleet is None or read.document is None or cluster is None:
        changed = Diagnostic(
            FLEET_CLUSTER_SOURCE,
            Severity.ERROR,
            f"{fleet_file} changed while it was compiled (cluster '{name}'); run the command again",
        )
        diagnostics = (*read.diagnostics, changed)
        folder = str(Path(out_dir) / name)
        report = compile_report(fleet_file, None, diagnostics, folder, False) if describe else None
        return ClusterOutcome(name, diagnostics, report=report)
    resolved = resolve_cluster(read.fleet, read.document, cluster)
    return compile_cluster(read.fleet, resolved, out_dir, check, describe=describe)


@paused()  # see gpustack/collector.py
def compile_cluster(
    fleet: Fleet, resolved: ResolvedCluster, out_dir: str, check: bool, *, describe: bool = False
) -> ClusterOutcome:
    """One cluster compiled: its folder's files rendered (or, with `check`, compared with what DIR/NAME holds); with
    `describe`, its CompileReport body too (written: false; the parent says whether it wrote the folder)."""
    validation = resolved.validation
    folder = str(Path(out_dir) / resolved.name)

    def failed(diagnostics: tuple[Diagnostic, ...]) -> ClusterOutcome:
        report = compile_report(validation.file, None, diagnostics, folder, False) if describe else None
        return ClusterOutcome(resolved.name, diagnostics, report=report)

    if not resolved.ok or validation.context is None:
        return failed(validation.diagnostics)
    plan = compile_blueprint(validation.context)
    diagnostics = tuple(sort_diagnostics([*validation.diagnostics, *plan.diagnostics]))
    if has_errors(diagnostics):
        return failed(diagnostics)
    rendered = render_files(plan)
    files = with_manifest(rendered)
    counts = (len(files), len(plan.objects), len(plan.releases))
    inputs = tuple(str(path) for path in _inputs(fleet, resolved))
    report = compile_report(validation.file, plan, diagnostics, folder, False, rendered) if describe else None
    if not check:
        return ClusterOutcome(resolved.name, diagnostics, *counts, files=files, inputs=inputs, report=report)
    try:
        stale = tuple(stale_rendered(files, folder))
    except DiagnosticError as error:
        return failed(tuple(sort_diagnostics([*diagnostics, *error.diagnostics])))
    if report is not None:
        report["stale"] = list(stale)
    return ClusterOutcome(resolved.name, diagnostics, *counts, stale=stale, report=report)


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
    files = delivery_output(fleet)
    target = str(Path(out_dir) / DELIVERY_FOLDER)
    if check:
        return stale_rendered(files, target)
    if dry_run:
        check_replaceable(resolve_target(target), files, [Path(fleet.file)], target)
        return []
    return write_files(files, target, inputs=[Path(fleet.file)])


def delivery_output(fleet: Fleet) -> dict[str, str]:
    """DIR/delivery/'s files, its manifest among them."""
    return with_manifest(delivery_files(fleet))


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


def fleet_compile_data(
    fleet_file: str,
    fleet: Fleet | None,
    out_dir: str,
    *,
    check: bool,
    written: bool,
    outcomes: list[ClusterOutcome],
    problems: list[tuple[str, list[Diagnostic]]],
    delivery_stale: list[str] | None = None,
    left: list[str] | None = None,
) -> dict[str, Any]:
    """The FleetCompileReport body (`fleet compile --output json`): each cluster's CompileReport (what `gpustack
    compile --output json` of its resolved blueprint says), the delivery folder's files, and the diagnostics no
    cluster holds (the fleet file's own, a refused folder) under the file they are in."""
    files = [file_report(file, diagnostics) for file, diagnostics in problems]
    clusters = []
    for outcome in outcomes:
        report = outcome.report or {}
        entry = fleet.cluster(outcome.name) if fleet is not None else None
        labels = dict(entry.labels) if entry is not None else {}
        clusters.append({"name": outcome.name, "labels": labels, **report, "written": written and outcome.ok})
    delivery: dict[str, Any] | None = None
    if fleet is not None:
        delivery = {
            "outDir": str(Path(out_dir) / DELIVERY_FOLDER),
            "engine": fleet.delivery.engine,
            "written": written,
            "files": file_entries(delivery_files(fleet)),
        }
        if check:
            delivery["stale"] = delivery_stale or []
    counted = [*files, *(c for c in clusters if "errorCount" in c)]
    data: dict[str, Any] = {
        "fleet": fleet_file,
        "name": fleet.name if fleet is not None else None,
        "outDir": out_dir,
        "check": check,
        "valid": all(entry["valid"] for entry in counted),
        "written": written,
        "errorCount": sum(entry["errorCount"] for entry in counted),
        "warningCount": sum(entry["warningCount"] for entry in counted),
        "files": files,
        "clusters": clusters,
        "delivery": delivery,
        "orphans": left or [],
    }
    if check:
        data["stale"] = [c["name"] for c in clusters if c.get("stale")] + (["delivery"] if delivery_stale else [])
    return data

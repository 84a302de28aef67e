"""Every cluster of a fleet against its own snapshot (SNAPSHOT-DIR/NAME.yaml), in one report, for a scheduled job.

Each comparison is `gpustack drift`'s (gpustack.cluster.drift.compare on the cluster's Context and Plan); a cluster
without a snapshot is a GS033 error, never silently in sync.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpustack.cluster.drift import Drift, compare, format_markdown, format_text, report_data
from gpustack.cluster.snapshot import read_snapshot
from gpustack.codes import FLEET_SNAPSHOT_MISSING
from gpustack.compile import compile_blueprint
from gpustack.diagnostic import Diagnostic, DiagnosticError, Severity
from gpustack.fleet.model import Fleet
from gpustack.fleet.resolve import resolve_cluster
from gpustack.load import Document

SNAPSHOT_SUFFIXES = (".yaml", ".yml", ".json")
API_VERSION = "gpustack.io/v1alpha1"
KIND = "FleetDriftReport"


@dataclass(frozen=True)
class ClusterDrift:
    name: str
    drift: Drift | None  # None when the cluster or its snapshot could not be read: see diagnostics
    diagnostics: tuple[Diagnostic, ...]


def snapshot_of(folder: Path, cluster: str) -> Path | None:
    """The cluster's snapshot in the folder: NAME.yaml, NAME.yml or NAME.json (a name is a DNS label: no path)."""
    return next(
        (folder / f"{cluster}{suffix}" for suffix in SNAPSHOT_SUFFIXES if (folder / f"{cluster}{suffix}").is_file()),
        None,
    )


def fleet_drift(fleet: Fleet, document: Document, snapshots: Path) -> list[ClusterDrift]:
    found = []
    for cluster in fleet.clusters:
        resolved = resolve_cluster(fleet, document, cluster)
        context = resolved.validation.context
        if not resolved.ok or context is None:
            found.append(ClusterDrift(cluster.name, None, resolved.validation.diagnostics))
            continue
        path = snapshot_of(snapshots, cluster.name)
        if path is None:
            missing = Diagnostic(
                FLEET_SNAPSHOT_MISSING,
                Severity.ERROR,
                f"no snapshot for cluster '{cluster.name}' in {snapshots} "
                f"(looked for {cluster.name}.yaml, .yml or .json)",
                document.span((*cluster.path, "name")),
                (*cluster.path, "name"),
                "save it with kubectl get nodes,pods,resourcequotas,namespaces -A -o yaml",
            )
            found.append(ClusterDrift(cluster.name, None, (missing,)))
            continue
        try:
            snapshot = read_snapshot(str(path))
        except DiagnosticError as error:
            found.append(ClusterDrift(cluster.name, None, error.diagnostics))
            continue
        drift = compare(context, compile_blueprint(context), snapshot, f"{fleet.file} (cluster {cluster.name})")
        found.append(ClusterDrift(cluster.name, drift, ()))
    return found


def in_sync(found: list[ClusterDrift]) -> bool:
    return all(entry.drift is not None and entry.drift.in_sync for entry in found)


def _state(entry: ClusterDrift) -> str:
    if entry.drift is None:
        return "not compared"
    return "in sync" if entry.drift.in_sync else "drifted"


def format_fleet_text(found: list[ClusterDrift]) -> str:
    drifted = [entry.name for entry in found if _state(entry) != "in sync"]
    head = f"fleet: {len(found) - len(drifted)} of {len(found)} cluster(s) in sync"
    lines = [head + (f"; drifted or not compared: {', '.join(drifted)}" if drifted else "")]
    for entry in found:
        lines += ["", f"== cluster {entry.name}: {_state(entry)}"]
        if entry.drift is not None:
            lines.append(format_text(entry.drift).rstrip("\n"))
    return "\n".join(lines) + "\n"


def format_fleet_markdown(found: list[ClusterDrift]) -> str:
    lines = ["## Fleet drift", "", "| cluster | state |", "|---|---|"]
    lines += [f"| {entry.name} | {_state(entry)} |" for entry in found]
    for entry in found:
        if entry.drift is not None and not entry.drift.in_sync:
            lines += ["", f"#### {entry.name}", "", format_markdown(entry.drift).rstrip("\n")]
    return "\n".join(lines) + "\n"


def fleet_report_data(found: list[ClusterDrift]) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "inSync": in_sync(found),
        "clusters": [
            {
                "name": entry.name,
                "state": _state(entry),
                "drift": report_data(entry.drift) if entry.drift is not None else None,
            }
            for entry in found
        ],
    }

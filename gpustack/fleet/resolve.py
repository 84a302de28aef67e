"""A cluster of a fleet as the `Validation` of its blueprint: read whole, or the base with the overlay merged in.

The merged blueprint goes through the same front half as a file (validation.validate_document), so every check runs
on it; its spans come from the base's text (the merge keeps each base item's path), and a diagnostic at a value the
overlay wrote is then moved to the overlay's line, the base line it touches kept as a related location. A
diagnostic elsewhere that sits above what the overlay wrote (a pool whose nodes the overlay replaced) keeps the base
line and points at the overlay's lines too. Every message names its cluster: the base is shared.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from gpustack.codes import FLEET_CLUSTER_SOURCE, FLEET_OVERLAY_OWNED
from gpustack.diagnostic import Diagnostic, DiagnosticError, JsonPath, Severity, Span, has_errors, sort_diagnostics
from gpustack.fleet.model import Fleet, FleetCluster
from gpustack.fleet.overlay import Origins, merge_overlay
from gpustack.fleet.reading import read_named, shown_path
from gpustack.load import Document
from gpustack.validation import ReadTemplate, Validation, folder_templates, validate_document

OWNED = (("apiVersion",), ("kind",), ("metadata", "name"))
RELATED_SHOWN = 3  # overlay lines named beside a diagnostic above them


@dataclass(frozen=True)
class ResolvedCluster:
    name: str
    validation: Validation  # its file is the blueprint's (the base's for an overlay)
    data: Any  # the resolved blueprint (what `fleet resolve` prints); None when a file could not be read
    folder: Path  # where its workload templates are read: the blueprint's (the base's) folder

    @property
    def ok(self) -> bool:
        return not has_errors(self.validation.diagnostics)

    @property
    def diagnostics(self) -> tuple[Diagnostic, ...]:
        return self.validation.diagnostics


class FleetFiles(Protocol):
    """Where a fleet's files are read: the working tree, or a git revision (`fleet diff --base`)."""

    def read(self, relative: str, at: JsonPath) -> Document:
        """A file the fleet names at `at`, loaded; DiagnosticError when it cannot be (GS030 at `at`)."""
        ...

    def templates(self, relative: str) -> ReadTemplate:
        """The workload templates of the blueprint `relative` names, read from beside it."""
        ...


@dataclass(frozen=True)
class DiskFiles:
    fleet: Fleet
    document: Document

    def read(self, relative: str, at: JsonPath) -> Document:
        return read_named(self.fleet, self.document, relative, at)

    def templates(self, relative: str) -> ReadTemplate:
        return folder_templates(Path(shown_path(self.fleet, relative)).parent)


def resolve_cluster(
    fleet: Fleet, fleet_document: Document, cluster: FleetCluster, files: FleetFiles | None = None
) -> ResolvedCluster:
    """The cluster's blueprint, validated; unreadable files and misplaced overlays as diagnostics."""
    files = files if files is not None else DiskFiles(fleet, fleet_document)
    source = cluster.blueprint if cluster.blueprint is not None else fleet.base
    assert source is not None  # reading.read_fleet refused a cluster with neither
    at = (*cluster.path, "blueprint") if cluster.blueprint is not None else ("spec", "base")
    try:
        base = files.read(source, at)
        overlay, overlay_at = _overlay(files, fleet_document, cluster)
    except DiagnosticError as error:
        return _failed(cluster, fleet, error.diagnostics)
    folder = Path(base.file).parent
    if cluster.blueprint is not None:
        validation = validate_document(base, files.templates(source))
        return ResolvedCluster(cluster.name, _named(validation, cluster.name), base.data, folder)
    owned = [d for d in _owned(overlay, overlay_at, cluster)] if overlay is not None else []
    if owned:
        return _failed(cluster, fleet, owned)
    data, origins = (
        (base.data, {})
        if overlay is None
        else merge_overlay(base.data, overlay.data_at(overlay_at), overlay.document, overlay_at)
    )
    if isinstance(data, dict) and isinstance(data.get("metadata"), dict):
        data["metadata"] = {**data["metadata"], "name": cluster.name}  # the fleet names each cluster's blueprint
        origins[("metadata", "name")] = (fleet_document, (*cluster.path, "name"))
    merged = Document(base.file, base.text, data, base.value_positions, base.key_positions)
    validation = validate_document(merged, files.templates(source))
    moved = tuple(sort_diagnostics(_relocate(d, origins, base) for d in validation.diagnostics))
    validation = dataclasses.replace(validation, diagnostics=moved)
    return ResolvedCluster(cluster.name, _named(validation, cluster.name), data, folder)


@dataclass(frozen=True)
class _Overlay:
    document: Document

    def data_at(self, at: tuple[str | int, ...]) -> Any:
        value: Any = self.document.data
        for part in at:
            value = value[part]
        return value


def _overlay(
    files: FleetFiles, fleet_document: Document, cluster: FleetCluster
) -> tuple[_Overlay | None, tuple[str | int, ...]]:
    """The overlay's document and where in it the overlay starts (a file's root, or the fleet file's entry)."""
    if cluster.overlay is None:
        return None, ()
    at = (*cluster.path, "overlay")
    if isinstance(cluster.overlay, dict):
        return _Overlay(fleet_document), at
    document = files.read(cluster.overlay, at)
    if not isinstance(document.data, dict):
        raise DiagnosticError(
            [
                Diagnostic(
                    FLEET_CLUSTER_SOURCE,
                    Severity.ERROR,
                    f"cluster '{cluster.name}': its overlay is not a mapping",
                    document.span(()),
                    (),
                    "an overlay is a part of a blueprint: spec: {nodePools: [...], ...}",
                )
            ]
        )
    return _Overlay(document), ()


def _owned(overlay: _Overlay, at: tuple[str | int, ...], cluster: FleetCluster) -> list[Diagnostic]:
    found = []
    data = overlay.data_at(at)
    for path in OWNED:
        value: Any = data
        for part in path:
            value = value.get(part) if isinstance(value, dict) else None
        if value is not None:
            where = (*at, *path)
            found.append(
                Diagnostic(
                    FLEET_OVERLAY_OWNED,
                    Severity.ERROR,
                    f"its overlay sets {'.'.join(map(str, path))}, which the fleet owns",
                    overlay.document.span(where, key=True),
                    where,
                    "remove it: each cluster's blueprint is the base's, named after the cluster",
                )
            )
    return found


def _failed(
    cluster: FleetCluster, fleet: Fleet, diagnostics: tuple[Diagnostic, ...] | list[Diagnostic]
) -> ResolvedCluster:
    validation = Validation(fleet.file, None, None, tuple(diagnostics))
    return ResolvedCluster(cluster.name, _named(validation, cluster.name), None, fleet.folder)


def _named(validation: Validation, name: str) -> Validation:
    """Every message prefixed with its cluster: the base's diagnostics would otherwise repeat, indistinguishable."""
    prefix = f"cluster '{name}': "
    renamed = tuple(
        d if d.message.startswith(prefix) else dataclasses.replace(d, message=prefix + d.message)
        for d in validation.diagnostics
    )
    return dataclasses.replace(validation, diagnostics=renamed)


def _relocate(diagnostic: Diagnostic, origins: Origins, base: Document) -> Diagnostic:
    """At the overlay's line when the overlay wrote the value it is about, the base's line kept as related."""
    if not origins or diagnostic.span is None or diagnostic.span.file != base.file:
        return diagnostic
    path = diagnostic.path
    for length in range(len(path), -1, -1):
        found = origins.get(path[:length])
        if found is None:
            continue
        document, at = found
        where = (*at, *path[length:])
        # At the key when the diagnostic was (an unknown field), or when the base has no such value to point at.
        was_key = base.key_positions.get(path) == diagnostic.span.start or path not in base.value_positions
        span = document.span(where, key=was_key and where in document.key_positions)
        return dataclasses.replace(diagnostic, span=span, related=(diagnostic.span, *diagnostic.related))
    if not path:
        return diagnostic
    below = [_span(document, at) for written, (document, at) in origins.items() if written[: len(path)] == path][
        :RELATED_SHOWN
    ]
    return dataclasses.replace(diagnostic, related=(*diagnostic.related, *below)) if below else diagnostic


def _span(document: Document, at: tuple[str | int, ...]) -> Span:
    return document.span(at, key=at in document.key_positions)


NAMES_SHOWN = 5
_PREFIX = re.compile(r"^cluster '([a-z0-9-]+)': ")


def collapse_repeats(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """A diagnostic of the shared base, raised alike in many clusters, shown once naming them all: a warning in
    the base would otherwise repeat once per cluster (100 times in a fleet of 100)."""
    groups: dict[tuple[object, ...], tuple[Diagnostic, list[str]]] = {}
    for diagnostic in diagnostics:
        found = _PREFIX.match(diagnostic.message)
        if found is None:
            groups[(id(diagnostic),)] = (diagnostic, [])
            continue
        rest = diagnostic.message[found.end() :]
        key = (diagnostic.code, diagnostic.severity, diagnostic.span, diagnostic.path, rest, diagnostic.related)
        groups.setdefault(key, (dataclasses.replace(diagnostic, message=rest), []))[1].append(found[1])
    collapsed = []
    for diagnostic, names in groups.values():
        if not names:
            collapsed.append(diagnostic)
            continue
        shown = ", ".join(f"'{name}'" for name in names[:NAMES_SHOWN])
        more = f" and {len(names) - NAMES_SHOWN} more" if len(names) > NAMES_SHOWN else ""
        who = f"cluster {shown}" if len(names) == 1 else f"clusters {shown}{more}"
        collapsed.append(dataclasses.replace(diagnostic, message=f"{who}: {diagnostic.message}"))
    return collapsed

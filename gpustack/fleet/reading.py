"""Reading a fleet file and the files it names, each through gpustack's hardened loader and confined to its folder.

The fleet file is checked against its own schema (gpustack/data/fleet.schema.json) with the blueprint's wording, so
its diagnostics read like a blueprint's, at file:line:col. Every path it names (base, overlays, blueprints) is
relative, without '..', and resolved (symlinks followed) inside the fleet file's folder, as workload templates are
inside a blueprint's (validation.read_templates): a fleet file in a pull request must not read a file elsewhere on
the CI machine into its output.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path, PurePosixPath
from typing import Any

from jsonschema import Draft202012Validator, ValidationError
from jsonschema.protocols import Validator
from jsonschema.validators import extend

from gpustack.codes import FLEET_CLUSTER_NAME, FLEET_CLUSTER_SOURCE, FLEET_FILE_UNREADABLE
from gpustack.diagnostic import Diagnostic, DiagnosticError, JsonPath, Severity, has_errors, sort_diagnostics
from gpustack.fleet.model import DELIVERY_FOLDER, Fleet, build_fleet
from gpustack.load import MAX_BYTES, Document, read_document
from gpustack.schema import check_shape
from gpustack.schema_file import compiled_pattern

SCHEMA_FILE = "fleet.schema.json"
CONFINED_HINT = (
    "a path in a fleet file is relative to the fleet file's folder and stays inside it (no absolute path, no '..', "
    "no symlink out of it): move or copy the file next to the fleet file"
)


@functools.cache
def fleet_schema() -> dict[str, Any]:
    """The fleet JSON Schema, parsed once. Callers must not mutate it."""
    text = resources.files("gpustack").joinpath("data", SCHEMA_FILE).read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def _inlined(node: Any, defs: Mapping[str, Any]) -> Any:
    """The schema with every local `$ref` replaced by what it names (the referring node's own keys win): the
    blueprint's wording (schema_words) looks a `$ref` up in the blueprint's schema, so the fleet's must hold none."""
    if isinstance(node, list):
        return [_inlined(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    own = {key: _inlined(value, defs) for key, value in node.items() if key not in ("$ref", "$defs")}
    if "$ref" in node:
        return {**_inlined(defs[node["$ref"].removeprefix("#/$defs/")], defs), **own}
    return own


def _ecma_pattern(validator: Any, regex: str, instance: Any, schema: Mapping[str, Any]) -> Iterator[ValidationError]:
    # ECMA-262 patterns, as the blueprint's validator reads them ("train-eu\n" is no DNS label).
    if validator.is_type(instance, "string") and not compiled_pattern(regex).search(instance):
        yield ValidationError(f"{instance!r} does not match {regex!r}")


@functools.cache
def _validator() -> Validator:
    schema = fleet_schema()
    validator: Validator = extend(Draft202012Validator, {"pattern": _ecma_pattern})(_inlined(schema, schema["$defs"]))
    return validator


@dataclass(frozen=True)
class FleetRead:
    file: str
    document: Document | None
    fleet: Fleet | None  # None when the file or its shape is wrong
    diagnostics: tuple[Diagnostic, ...]

    @property
    def ok(self) -> bool:
        return not has_errors(self.diagnostics)


def read_fleet(path: str) -> FleetRead:
    """The fleet file at `path`: loaded, its shape checked, built, and its clusters' names and sources checked."""
    try:
        document = read_document(path)
    except DiagnosticError as error:
        return FleetRead(path, None, None, error.diagnostics)
    return fleet_from_document(document)


def fleet_from_document(document: Document) -> FleetRead:
    """A loaded fleet file (from disk, or from git at a revision): its shape checked, built, its clusters checked."""
    path = document.file
    shape = check_shape(document, _validator())
    if shape:
        return FleetRead(path, document, None, tuple(shape))
    fleet = build_fleet(document.data, path)
    return FleetRead(path, document, fleet, tuple(sort_diagnostics(_check_clusters(fleet, document))))


def _check_clusters(fleet: Fleet, document: Document) -> list[Diagnostic]:
    found: list[Diagnostic] = []
    first: dict[str, JsonPath] = {}
    for cluster in fleet.clusters:
        at = (*cluster.path, "name")
        if cluster.name == DELIVERY_FOLDER:
            found.append(
                Diagnostic(
                    FLEET_CLUSTER_NAME,
                    Severity.ERROR,
                    f"cluster name '{cluster.name}' is reserved: {DELIVERY_FOLDER}/ holds the Argo CD or Flux objects",
                    document.span(at),
                    at,
                    "rename the cluster",
                )
            )
        if cluster.name in first:
            found.append(
                Diagnostic(
                    FLEET_CLUSTER_NAME,
                    Severity.ERROR,
                    f"two clusters are named '{cluster.name}': a name is the cluster's output folder",
                    document.span(at),
                    at,
                    "rename one of them",
                    (document.span(first[cluster.name]),),
                )
            )
        first.setdefault(cluster.name, at)
        problem = _source_problem(fleet, cluster.blueprint, cluster.overlay)
        if problem is not None:
            found.append(
                Diagnostic(
                    FLEET_CLUSTER_SOURCE,
                    Severity.ERROR,
                    f"cluster '{cluster.name}': {problem}",
                    document.span(cluster.path),
                    cluster.path,
                    "give either a whole blueprint, or an overlay on the fleet's spec.base",
                )
            )
    return found


def _source_problem(fleet: Fleet, blueprint: str | None, overlay: object) -> str | None:
    if blueprint is not None and overlay is not None:
        return "names both a blueprint and an overlay"
    if blueprint is None and fleet.base is None:
        return "has no blueprint, and the fleet has no spec.base for an overlay"
    return None


def confined_file(folder: Path, relative: str) -> Path:
    """The real file `relative` names inside `folder`; raises a reason (ValueError) if it is not one there."""
    path = PurePosixPath(relative)
    if path.is_absolute() or ".." in path.parts:
        raise ValueError("the path leaves the fleet file's folder")
    root = folder.resolve()
    try:
        file = (root / path).resolve(strict=True)
    except RuntimeError as error:  # a symlink loop, before Python 3.13
        raise ValueError("a symlink loop") from error
    except OSError as error:
        raise ValueError(error.strerror or "cannot be resolved") from error
    if not file.is_relative_to(root):
        raise ValueError("a symlink leads out of the fleet file's folder")
    if not file.is_file():
        raise ValueError("not a regular file")
    if file.stat().st_size > MAX_BYTES:
        raise ValueError(f"larger than {MAX_BYTES} bytes")
    return file


def shown_path(fleet: Fleet, relative: str) -> str:
    """A named file as diagnostics show it: the fleet file's folder joined with the path as written."""
    return str(fleet.folder / relative)


def read_named(fleet: Fleet, fleet_document: Document, relative: str, at: JsonPath) -> Document:
    """A file the fleet names (base, overlay, blueprint), loaded; DiagnosticError (GS030 at `at`) when it cannot be."""
    try:
        file = confined_file(fleet.folder, relative)
    except ValueError as error:
        raise DiagnosticError(
            [
                Diagnostic(
                    FLEET_FILE_UNREADABLE,
                    Severity.ERROR,
                    f"cannot read '{relative}': {error}",
                    fleet_document.span(at),
                    at,
                    CONFINED_HINT,
                )
            ]
        ) from error
    return read_document(file, display_name=shown_path(fleet, relative))

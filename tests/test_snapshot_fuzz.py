"""Hostile snapshots: every scalar of a real one replaced by something wrong is a GS020 (or accepted), never a crash."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from builders import planned, sourceless

from gpustack.cluster.drift import compare
from gpustack.cluster.importer import import_snapshot
from gpustack.cluster.snapshot import snapshot_from
from gpustack.codes import SNAPSHOT_MALFORMED
from gpustack.compile import compile_blueprint
from gpustack.diagnostic import DiagnosticError
from gpustack.load import parse_document, read_document
from gpustack.simulate import run_simulation
from gpustack.validation import validate_path
from gpustack.yamlout import dump_yaml

CASES = Path(__file__).parent / "cases"
SNAPSHOTS = [CASES / "import" / "mixed-cluster.yaml", CASES / "simulate-cluster" / "cluster.yaml"]
WRONG: list[Any] = ["lots", -3, 1.5, True, None, [], {}, "", "1e400"]


def _scalar_paths(data: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _scalar_paths(value, (*path, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from _scalar_paths(value, (*path, index))
    else:
        yield path


def _set(data: Any, path: tuple[Any, ...], value: Any) -> Any:
    out = copy.deepcopy(data)
    target = out
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    return out


@pytest.mark.parametrize("snapshot", SNAPSHOTS, ids=lambda p: p.parent.name)
def test_every_wrong_scalar_is_reported_or_survived(snapshot: Path) -> None:
    blueprint = validate_path(CASES.parent.parent / "blueprints" / "multi-tenant.yaml").blueprint
    assert blueprint is not None
    objects = [m.obj for m in compile_blueprint(sourceless(blueprint)).objects]
    data = read_document(snapshot).data
    paths = list(_scalar_paths(data))
    assert len(paths) > 100
    for index, path in enumerate(paths):
        mutated = _set(data, path, WRONG[index % len(WRONG)])
        try:
            loaded = snapshot_from(parse_document(dump_yaml(mutated), "cluster.yaml"))
        except DiagnosticError as error:
            assert {d.code for d in error.diagnostics} <= {SNAPSHOT_MALFORMED}, path
            assert all(d.span is not None and d.hint for d in error.diagnostics)
            continue
        import_snapshot(loaded, "fuzz")
        compare(*planned(blueprint), loaded, "bp.yaml")
        run_simulation(sourceless(blueprint), objects, snapshot=loaded)

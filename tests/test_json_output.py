"""One JSON style across every command: camelCase keys, apiVersion and kind first (docs/json-output.md)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import CASES, REPO, shipped_examples

from gpustack.cli import group
from gpustack.jsondoc import API_VERSION
from gpustack.simulate.report import API_VERSION as SIMULATION_API_VERSION

# A kind whose keys changed is versioned on its own (docs/json-output.md): SimulationReport is at v1alpha2.
VERSIONS = {"SimulationReport": SIMULATION_API_VERSION}

CAMEL = re.compile(r"[a-z][a-zA-Z0-9]*")
# Keys that are data, not gpustack's own field names: resource names, MIG profiles, kinds, node names.
DATA_KEY = re.compile(r".*[./]|[A-Z][A-Za-z]*|[a-z0-9-]+(\.[a-z0-9-]+)*")


def snake_keys(value: Any, where: str = "$") -> list[str]:
    found = []
    if isinstance(value, dict):
        for key, item in value.items():
            if "_" in key or not (CAMEL.fullmatch(key) or DATA_KEY.fullmatch(key)):
                found.append(f"{where}.{key}")
            found += snake_keys(item, f"{where}.{key}")
    elif isinstance(value, list):
        for item in value:
            found += snake_keys(item, f"{where}[]")
    return found


def documents() -> list[tuple[list[str], str]]:
    examples = [str(p) for p in shipped_examples()]
    invalid = str(CASES / "invalid" / "quota-problems.yaml")
    runs: list[tuple[list[str], str]] = [(["models"], "ModelList"), (["validate", *examples], "ValidationReport")]
    for blueprint in [*examples, invalid]:
        ok = blueprint != invalid
        runs += [
            (["compile", blueprint], "CompileReport"),
            (["simulate", blueprint], "SimulationReport" if ok else "ValidationReport"),
            (["capacity", blueprint], "CapacityReport" if ok else "ValidationReport"),
            (["graph", blueprint], "Graph" if ok else "ValidationReport"),
        ]
    review = CASES / "review" / "mig-layout"
    runs.append((["diff", str(review / "before.yaml"), str(review / "after.yaml")], "ReviewReport"))
    runs.append((["diff", examples[0], invalid], "ValidationReport"))
    return runs


@pytest.mark.parametrize(
    ("args", "kind"), documents(), ids=lambda v: " ".join(Path(a).name for a in v) if isinstance(v, list) else v
)
def test_every_json_document_is_camel_case_with_api_version_and_kind(args: list[str], kind: str) -> None:
    result = CliRunner().invoke(group, [*args, "--output", "json"])
    assert result.exit_code in (0, 1, 2), result.stderr
    data = json.loads(result.stdout)
    assert list(data)[:2] == ["apiVersion", "kind"]
    assert data["apiVersion"] == VERSIONS.get(kind, API_VERSION) and data["kind"] == kind
    assert snake_keys(data) == []


def test_the_json_page_documents_every_kind() -> None:
    page = (REPO / "docs" / "json-output.md").read_text(encoding="utf-8")
    kinds = {kind for _, kind in documents()} | {"ReviewError"}
    assert API_VERSION in page and SIMULATION_API_VERSION in page
    assert {kind for kind in kinds if f"`{kind}`" not in page} == set()

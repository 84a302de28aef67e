"""Every command that stops at an invalid blueprint says so the same way (commands/reporting.py): each diagnostic
at file:line:col with its source line and caret, then `FILE: N error(s); what was not done`, exit non-zero; with
`--output json`, the diagnostics as JSON on stdout.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from conftest import CASES

from gpustack.cli import group
from gpustack.codes import MIG_LAYOUT_IMPOSSIBLE

INVALID = CASES / "invalid" / "seed-a100-4x3g20gb.yaml"
VALID = CASES / "review" / "mig-layout" / "before.yaml"
SOURCE = '19 |           layout: {"3g.20gb": 4}'
CARET = "   |                   ^"


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(group, [str(a) for a in args])


COMMANDS = {
    "compile": (lambda out: ("compile", INVALID, "-o", out), "nothing written", 1),
    "simulate": (lambda out: ("simulate", INVALID), "nothing simulated", 1),
    "capacity": (lambda out: ("capacity", INVALID), "no capacity to show", 1),
    "graph": (lambda out: ("graph", INVALID), "nothing drawn", 1),
    "diff": (lambda out: ("diff", VALID, INVALID), "nothing to review", 2),
}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_an_invalid_blueprint_is_reported_as_validate_reports_it(name: str, tmp_path: Path) -> None:
    arguments, outcome, code = COMMANDS[name]
    result = run(*arguments(tmp_path / "out"))
    assert result.exit_code == code
    assert result.stdout == ""  # nothing produced
    assert f"{INVALID}:19:19: error[GS303]" in result.stderr
    assert SOURCE in result.stderr and CARET in result.stderr  # the one source-line lookup
    assert result.stderr.rstrip().endswith(f"{INVALID}: 1 error(s); {outcome}")
    assert not (tmp_path / "out").exists()
    validated = run("validate", INVALID).stdout
    assert validated.split("\n\n")[0] in result.stderr  # word for word what validate prints


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_an_invalid_blueprint_as_json(name: str, tmp_path: Path) -> None:
    arguments, _outcome, code = COMMANDS[name]
    result = run(*arguments(tmp_path / "out"), "--output", "json")
    assert result.exit_code == code
    report = json.loads(result.stdout)
    # compile answers with its own CompileReport (valid: false, nothing written); the others with validate's report
    [file] = [report] if report["kind"] == "CompileReport" else report["files"]
    assert file["file"] == str(INVALID) and file["diagnostics"][0]["code"] == MIG_LAYOUT_IMPOSSIBLE
    assert file["diagnostics"][0]["range"]["start"] == {"line": 19, "column": 19}


def test_a_scenario_problem_shows_the_scenario_line(tmp_path: Path) -> None:
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text("workloads:\n  no-such-workload: {replicas: 2}\n", encoding="utf-8")
    result = run("simulate", VALID, "--scenario", scenario)
    assert result.exit_code == 1
    assert f"{scenario}:2:" in result.stderr
    assert "2 |   no-such-workload: {replicas: 2}" in result.stderr  # read again for display
    assert result.stderr.rstrip().endswith("error(s); nothing simulated")


def test_a_file_that_does_not_load_still_shows_its_line(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"  # not UTF-8: no Document, so the line is read again for display
    broken.write_bytes(b"apiVersion: gpustack.io/v1alpha1\nkind: ClusterBlueprint\ncaf\xe9: 1\n")
    for arguments in (("validate", broken), ("graph", broken), ("compile", broken, "-o", tmp_path / "out")):
        result = run(*arguments)
        assert result.exit_code == 1
        assert f"{broken}:3:4: error[GS003]" in result.stdout + result.stderr
        assert "3 | caf\ufffd: 1" in result.stdout + result.stderr

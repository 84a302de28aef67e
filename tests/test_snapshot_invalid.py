"""Hostile snapshots as data (issue 27 item 4): each file under tests/cases/snapshot-invalid/ names the diagnostics
it must give (`# expect: CODE at LINE:COL: MESSAGE`), and import, drift and simulate --cluster each give exactly
those, exit 1, write nothing and never show a traceback."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpustack.cli import group
from gpustack.names import SNAPSHOT_COMMAND

CASES = sorted((Path(__file__).parent / "cases" / "snapshot-invalid").glob("*.yaml"))
REPO = Path(__file__).parent.parent
EXPECT = re.compile(r"^# expect: (GS\d{3}) at (\d+):(\d+): (.+)$", re.MULTILINE)
FOUND = re.compile(r"^\S+:(\d+):(\d+): error\[(GS\d{3})\]: (.+)$", re.MULTILINE)


def expectations(path: Path) -> set[tuple[str, int, int, str]]:
    return {(code, int(line), int(col), message) for code, line, col, message in EXPECT.findall(path.read_text())}


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_each_command_reports_exactly_what_the_case_expects(case: Path, tmp_path: Path) -> None:
    expected = expectations(case)
    assert expected, f"{case.name} names no expected diagnostic"
    out = tmp_path / "imported.yaml"
    blueprint = str(REPO / "blueprints" / "quickstart.yaml")
    for command in (
        ["import", str(case), "-f", str(out)],
        ["drift", blueprint, str(case)],
        ["simulate", blueprint, "--cluster", str(case)],
    ):
        run = CliRunner().invoke(group, command)
        assert run.exception is None or isinstance(run.exception, SystemExit), run.exception
        assert "Traceback" not in run.output
        assert run.exit_code == 1, (command, run.output)
        found = {(code, int(line), int(col), message) for line, col, code, message in FOUND.findall(run.stderr)}
        assert found == expected, command
    assert not out.exists()


def test_the_cases_cover_every_new_shape_check() -> None:
    messages = " ".join(m for case in CASES for *_, m in expectations(case))
    for words in ("taint list", "unschedulable", "ownerReferences", "nodeName", "volume list", "claimName", "phase"):
        assert words in messages, words
    assert "activeDeadlineSeconds" in messages and "listed twice" in messages and "max 'nvidia.com/gpu'" in messages


def test_hints_and_help_give_the_snapshot_command_of_the_docs() -> None:
    """One spelling of the snapshot command: the docs give it, every GS020 hint and simulate's --cluster help."""
    assert SNAPSHOT_COMMAND in (REPO / "docs" / "import.md").read_text()
    assert SNAPSHOT_COMMAND in " ".join((REPO / "README.md").read_text().split())
    run = CliRunner().invoke(group, ["import", str(CASES[0])])
    assert f"hint: give the unedited output of `{SNAPSHOT_COMMAND}`" in " ".join(run.stderr.split())
    helped = CliRunner().invoke(group, ["simulate", "--help"], terminal_width=400)
    assert " ".join(SNAPSHOT_COMMAND.split(",")) in " ".join(helped.output.replace(",", " ").split())

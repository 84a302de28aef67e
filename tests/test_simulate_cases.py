"""Every case under tests/cases/simulate: a blueprint (and scenario) with the outcome it must have.

A case directory holds `blueprint.yaml`, optionally `scenario.yaml`, and `expected.yaml`:

    kubernetes: "1.34.1"        # optional: run with --kubernetes-version
    exit: 1                     # the command's exit code
    placements: {llm-0: gpu-node-1, ...}   # every placed pod and its node, exactly
    pending:                    # every pod left pending, in creation order, exactly
      - pod: llm-3
        event: FailedScheduling # FailedScheduling | FailedCreate | Unschedulable | GroupIncomplete
        message: "0/3 nodes are available: ..."
        hint: "a substring of gpustack's hint"   # optional
        at: "blueprint.yaml:12:14"               # optional: where the hint points
    gangs: ["1/5 tasks in gang unschedulable: ..."]   # optional: PodGroup messages, exactly

The command runs from the case directory, so files are named as a user would type them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from gpustack.cli import group

CASES = Path(__file__).parent / "cases" / "simulate"


def _cases() -> list[Path]:
    return sorted(p for p in CASES.iterdir() if (p / "expected.yaml").is_file())


@pytest.mark.parametrize("case", _cases(), ids=lambda p: p.name)
def test_case(case: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = yaml.safe_load((case / "expected.yaml").read_text(encoding="utf-8"))
    args = ["simulate", "blueprint.yaml", "--output", "json"]
    if (case / "scenario.yaml").is_file():
        args += ["--scenario", "scenario.yaml"]
    if "kubernetes" in expected:
        args += ["--kubernetes-version", expected["kubernetes"]]
    monkeypatch.chdir(case)
    result = CliRunner().invoke(group, args, catch_exceptions=False)
    report = json.loads(result.stdout)
    assert result.exit_code == expected["exit"], result.output
    placed = {p["pod"]: p["node"] for w in report["workloads"] for p in w["placements"]}
    assert placed == (expected.get("placements") or {})
    # SimulationReport v1alpha2: a pending pod names its message and hint by index (docs/json-output.md).
    messages, hints = report["messages"], report["hints"]
    assert [(p["pod"], p["event"], messages[p["messageIndex"]]) for p in report["pending"]] == [
        (p["pod"], p["event"], p["message"]) for p in expected.get("pending") or []
    ]
    for got, want in zip(report["pending"], expected.get("pending") or [], strict=True):
        hint = hints[got["hintIndex"]] if got["hintIndex"] is not None else None
        if "hint" in want:
            assert hint is not None and want["hint"] in hint["message"]
        if "at" in want:
            assert hint is not None and f"{hint['file']}:{hint['line']}:{hint['column']}" == want["at"]
    if "gangs" in expected:
        assert [g["message"] for g in report["gangs"]] == expected["gangs"]


def test_every_case_has_a_blueprint() -> None:
    assert len(_cases()) >= 7
    for case in _cases():
        assert (case / "blueprint.yaml").is_file(), case

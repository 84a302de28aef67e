"""Before/after blueprint pairs with golden reviews in text, markdown and JSON.

Regenerate the goldens after a deliberate change with GPUSTACK_UPDATE_GOLDEN=1, then read the diff.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import CASES, UPDATE_GOLDEN

from gpustack.cli import group

REVIEW_CASES = CASES / "review"
CASE_NAMES = sorted(p.name for p in REVIEW_CASES.iterdir() if (p / "before.yaml").exists())
GOLDENS = {"text": "review.txt", "markdown": "review.md", "json": "review.json"}
# What each case is about: the goldens must keep saying it, whatever else they say.
EXPECTED_RISKS: dict[str, set[str]] = {
    "mig-layout": {"mig-repartition"},
    "sharing-mode": {"resource-renamed", "isolation-weakened"},
    "tenant-quota": {"quota-below-need", "tenant-access-lost"},
    "nodes-taints-chart": {"noexecute-taint", "node-moved", "device-plugin-chart", "workload-stranded"},
    "no-op": set(),
    "allocation-dra": {"allocation-switched"},
}


def review(case: str, output: str, monkeypatch: pytest.MonkeyPatch, *files: str) -> tuple[int, str]:
    monkeypatch.chdir(REVIEW_CASES / case)
    result = CliRunner().invoke(group, ["diff", "--output", output, *(files or ("before.yaml", "after.yaml"))])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout


def test_the_required_cases_exist() -> None:
    assert set(EXPECTED_RISKS) == set(CASE_NAMES)


@pytest.mark.parametrize("output", GOLDENS)
@pytest.mark.parametrize("case", CASE_NAMES)
def test_review_matches_golden(case: str, output: str, monkeypatch: pytest.MonkeyPatch) -> None:
    code, out = review(case, output, monkeypatch)
    assert code == (0 if case == "no-op" else 1)
    golden = REVIEW_CASES / case / GOLDENS[output]
    if UPDATE_GOLDEN:
        golden.write_text(out, encoding="utf-8")
    assert golden.exists(), f"no golden {golden}: run with GPUSTACK_UPDATE_GOLDEN=1"
    assert out == golden.read_text(encoding="utf-8")


@pytest.mark.parametrize("case", CASE_NAMES)
def test_golden_json_flags_what_the_case_is_about(case: str) -> None:
    data = json.loads((REVIEW_CASES / case / "review.json").read_text(encoding="utf-8"))
    assert {r["code"] for r in data["risks"]} == EXPECTED_RISKS[case]
    assert data["changed"] is (case != "no-op")
    assert data["before"]["file"] == "before.yaml" and data["after"]["file"] == "after.yaml"


@pytest.mark.parametrize("case", CASE_NAMES)
def test_review_is_deterministic_and_runs_backwards(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert review(case, "json", monkeypatch) == review(case, "json", monkeypatch)
    code, out = review(case, "json", monkeypatch, "after.yaml", "before.yaml")
    assert code == (0 if case == "no-op" else 1)
    assert json.loads(out)["changed"] is (case != "no-op")


def test_reviewing_a_file_against_itself_is_no_change(monkeypatch: pytest.MonkeyPatch) -> None:
    code, out = review("mig-layout", "text", monkeypatch, "after.yaml", "after.yaml")
    assert code == 0
    assert out == "gpustack review: after.yaml -> after.yaml\nNo change: both versions describe the same cluster.\n"


def test_cases_are_valid_blueprints() -> None:
    from gpustack.validation import validate_path

    for path in sorted(Path(REVIEW_CASES).glob("*/*.yaml")):
        assert validate_path(path).ok, path

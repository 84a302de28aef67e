"""Invalid blueprints as data: each file names the diagnostics (code, line, column) it must produce."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import CASES

from gpustack.codes import (
    CODES,
    DIAGNOSTICS_LEFT_OUT,
    OUTPUT_UNSAFE,
    RECOMMEND_NO_FIT,
    ROLLOUT_CAPACITY_DROP,
    ROLLOUT_UNSAFE_WORD,
)
from gpustack.validation import validate_path

EXPECT = re.compile(r"^# expect: (GS\d{3}) at (\d+):(\d+)$", re.MULTILINE)
CASE_FILES = sorted((CASES / "invalid").glob("*.yaml"))


def expectations(path: Path) -> set[tuple[str, int, int]]:
    return {(code, int(line), int(col)) for code, line, col in EXPECT.findall(path.read_text())}


@pytest.mark.parametrize("case", CASE_FILES, ids=lambda p: p.stem)
def test_case_produces_exactly_its_diagnostics(case: Path) -> None:
    expected = expectations(case)
    assert expected, f"{case.name} names no expected diagnostic"
    result = validate_path(case)
    found = {(d.code, d.span.start.line, d.span.start.column) for d in result.diagnostics if d.span}
    assert expected <= found, f"missing {expected - found}; got {sorted(found)}"
    unexpected = {d.code for d in result.diagnostics} - {code for code, _, _ in expected}
    assert not unexpected, f"unexpected diagnostics {unexpected}: {[d.message for d in result.diagnostics]}"
    for diagnostic in result.diagnostics:
        assert diagnostic.hint, f"{diagnostic.code} has no hint"
        assert diagnostic.code in CODES


def test_every_semantic_code_has_a_case() -> None:
    covered = {code for case in CASE_FILES for code, _, _ in expectations(case)}
    # GS951 comes from `gpustack rollout` (two blueprints, not one): tests/test_rollout_cases.py covers it; GS952 is
    # the rollout script's guard behind GS606, so no blueprint reaches it: tests/test_rollout_security.py covers it
    rollout = {ROLLOUT_CAPACITY_DROP, ROLLOUT_UNSAFE_WORD}
    # GS311 comes from `gpustack recommend` (a pool whose demand fits no layouts): tests/test_recommend.py covers it
    # GS902 closes a report capped at 50 diagnostics per file: tests/test_output_caps.py covers it
    output = {OUTPUT_UNSAFE, DIAGNOSTICS_LEFT_OUT}
    semantic = {code for code in CODES if code >= "GS200" and code not in {*output, RECOMMEND_NO_FIT, *rollout}}
    assert semantic <= covered, f"codes without an invalid case: {sorted(semantic - covered)}"

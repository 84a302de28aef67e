"""A hint adds something: it never offers back the value the message rejects, or restates the message."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import CASES

from gpustack.validation import validate_path

CASE_FILES = sorted((CASES / "invalid").glob("*.yaml")) + sorted((CASES / "schema").glob("*.yaml"))
SUGGESTED = re.compile(r"did you mean (.+?)\?")


@pytest.mark.parametrize("case", CASE_FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_no_hint_suggests_what_the_message_already_says(case: Path) -> None:
    for diagnostic in validate_path(case).diagnostics:
        quoted = set(re.findall(r"'([^']+)'", diagnostic.message))
        for suggestion in SUGGESTED.findall(diagnostic.hint or ""):
            offered = set(re.findall(r"'([^']+)'", suggestion))
            assert not offered & quoted, f"{diagnostic.code}: {diagnostic.message} / {diagnostic.hint}"

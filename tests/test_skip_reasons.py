"""A skipped test says what is missing in words a newcomer can act on, not as a path beside the repository."""

from __future__ import annotations

import re

from conftest import REPO, missing_reference

SKIPS = re.compile(r"(?:pytest\.skip\(|reason=)\s*(f?\"[^\"]*\"|f?'[^']*'|_ABSENT|missing_reference)")


def test_no_skip_reason_is_a_relative_path() -> None:
    offenders = []
    for path in sorted((REPO / "tests").glob("*.py")):
        for match in SKIPS.finditer(path.read_text(encoding="utf-8")):
            if "../" in match.group(1) or match.group(1).startswith(('f"{', "f'{")):
                offenders.append(f"{path.name}: {match.group(1)}")
    assert offenders == []


def test_the_missing_reference_reason_names_what_and_why() -> None:
    reason = missing_reference("The NVIDIA device plugin chart's own values.yaml", "every Helm value gpustack writes")
    assert reason.startswith("The NVIDIA device plugin chart's own values.yaml is not available")
    assert "cannot check every Helm value gpustack writes" in reason
    assert "../" not in reason and "a plain clone skips these tests" in reason

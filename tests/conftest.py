from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

# No wall-clock judgement in a unit test: a property test's examples may take as long as a loaded 2-core machine
# needs (Hypothesis's 200 ms deadline and its too-slow check fail a correct test there). Speed is bench/'s job.
# Where CI is set, Hypothesis's own "ci" profile (derandomized, the same settings otherwise) still takes over.
settings.register_profile("gpustack", deadline=None, suppress_health_check=[HealthCheck.too_slow])
if not os.environ.get("CI"):
    settings.load_profile("gpustack")

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
# Upstream files the conformance tests read (NVIDIA's, Kueue's and Volcano's own): only the development workspace
# has them, beside the repository. A plain clone skips those tests; CI refuses to run without them.
CONFORMANCE = SHARED / "conformance"
CONFORMANCE_FOLDER = "shared/conformance"  # as a reader finds it: a folder named shared beside this repository
BLUEPRINTS = REPO / "blueprints"
CASES = Path(__file__).resolve().parent / "cases"
UPDATE_GOLDEN = os.environ.get("GPUSTACK_UPDATE_GOLDEN") == "1"
# What `gpustack recommend --write` makes of each example that leaves layouts or sharing to it (`auto`, which compile
# refuses): test_recommend_examples.py keeps each copy byte for byte what recommend writes, and refuses a copy
# without its example or an auto example without its copy.
RECOMMENDED = Path(__file__).resolve().parent / "golden" / "recommended"


def shipped_examples() -> list[Path]:
    """Every top-level example as it compiles: one with `auto` pools by its recommended copy (same file name, so
    its goldens keep the example's name), the others as they are."""
    return [RECOMMENDED / p.name if (RECOMMENDED / p.name).exists() else p for p in sorted(BLUEPRINTS.glob("*.yaml"))]


def in_ci() -> bool:
    """CI services set CI (GitHub Actions, GitLab CI and others set CI=true; `.ci/run` sets it too)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def missing_reference(what: str, checks: str, folder: str = CONFORMANCE_FOLDER) -> str:
    """A skip reason a newcomer can act on: what is missing, what it would check, which folder it comes in."""
    return (
        f"{what} is not available, so this test cannot check {checks}. It comes with the project's reference "
        f"files from upstream (NVIDIA, Kubernetes, Kueue, Volcano) in the folder {folder} beside this repository, "
        "which only the development workspace has; a plain clone skips these tests (with CI=true they fail instead)"
    )


def shared_path(*parts: str) -> Path:
    path = SHARED.joinpath(*parts)
    if not path.exists():
        folder = "/".join(("shared", *parts[:-1]))
        pytest.skip(missing_reference(f"The upstream file {parts[-1]}", "gpustack's output against it", folder))
    return path


def refusals(ci: bool, conformance: Path, update_golden: bool) -> list[str]:
    """Why a run must not start: CI may never go green by skipping the conformance tests or rewriting goldens."""
    found = []
    if ci and not conformance.is_dir():
        found.append(
            f"CI is set, but the folder {CONFORMANCE_FOLDER} beside this repository ({conformance}) is missing: "
            "the conformance tests would skip, and CI must never pass by skipping. Put the upstream reference files "
            "(NVIDIA's, Kueue's and Volcano's own) there, or run without CI set to let those tests skip."
        )
    if ci and update_golden:
        found.append(
            "CI is set, and GPUSTACK_UPDATE_GOLDEN=1 would rewrite the golden files the tests compare against, so "
            "they could not fail: regenerate goldens on a workstation, read the diff and commit it; unset "
            "GPUSTACK_UPDATE_GOLDEN in CI."
        )
    return found


def pytest_sessionstart(session: pytest.Session) -> None:
    """Refuse at once, before collecting anything, a run that could only pass by not testing."""
    found = refusals(in_ci(), CONFORMANCE, UPDATE_GOLDEN)
    if found:
        raise pytest.UsageError("\n".join(found))


@pytest.fixture
def examples() -> list[Path]:
    return sorted(BLUEPRINTS.glob("*.yaml"))


def typed(value: Any) -> Any:
    """The value with each scalar's type kept: 1, 1.0 and True are equal in Python, not in a document."""
    if isinstance(value, dict):
        return ("map", [(key, typed(item)) for key, item in value.items()])
    if isinstance(value, list):
        return ("seq", [typed(item) for item in value])
    if isinstance(value, float) and math.isnan(value):
        return ("float", "nan")
    return (type(value).__name__, value)

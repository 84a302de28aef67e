from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
BLUEPRINTS = REPO / "blueprints"
CASES = Path(__file__).resolve().parent / "cases"
UPDATE_GOLDEN = os.environ.get("GPUSTACK_UPDATE_GOLDEN") == "1"


def missing_reference(what: str, checks: str) -> str:
    """A skip reason a newcomer can act on: what is missing, what it would check, where it comes from."""
    return (
        f"{what} is not available, so this test cannot check {checks}. It comes with the project's reference "
        "files from upstream (NVIDIA, Kubernetes, Kueue), which only the development workspace has, in a folder "
        "named 'shared' beside this repository; a plain clone skips these tests"
    )


def shared_path(*parts: str) -> Path:
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(missing_reference(f"The upstream file {parts[-1]}", "gpustack's output against it"))
    return path


@pytest.fixture
def examples() -> list[Path]:
    return sorted(BLUEPRINTS.glob("*.yaml"))

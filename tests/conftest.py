from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
BLUEPRINTS = REPO / "blueprints"
CASES = Path(__file__).resolve().parent / "cases"
UPDATE_GOLDEN = os.environ.get("GPUSTACK_UPDATE_GOLDEN") == "1"


def shared_path(*parts: str) -> Path:
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent: conformance data lives in ../shared beside the repository")
    return path


@pytest.fixture
def examples() -> list[Path]:
    return sorted(BLUEPRINTS.glob("*.yaml"))

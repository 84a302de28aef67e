"""The shipped example blueprints are valid, documented and editor-ready."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import BLUEPRINTS, shipped_examples

from gpustack.validation import validate_path

EXAMPLES = sorted(BLUEPRINTS.glob("*.yaml"))


def test_the_required_examples_exist() -> None:
    names = {p.name for p in EXAMPLES}
    assert {"quickstart.yaml", "seed-article.yaml", "multi-tenant.yaml"} <= names
    assert {"kueue.yaml", "volcano.yaml", "hami.yaml"} <= names  # one example per scheduler integration


@pytest.mark.parametrize("example", shipped_examples(), ids=lambda p: p.stem)
def test_example_is_valid_without_warnings(example: Path) -> None:
    """As it compiles: an example that says `auto` by its recommended copy (test_recommend_examples.py)."""
    result = validate_path(example)
    assert result.diagnostics == (), [d.message for d in result.diagnostics]


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_example_carries_the_schema_modeline(example: Path) -> None:
    first = example.read_text().splitlines()[0]
    assert first == "# yaml-language-server: $schema=../schemas/blueprint.schema.json"


def test_seed_article_covers_every_practice() -> None:
    result = validate_path(BLUEPRINTS / "seed-article.yaml")
    blueprint = result.blueprint
    assert blueprint is not None
    strategies = {pool.sharing.strategy.value for pool in blueprint.pools}
    assert {"mig", "mps", "time-slicing", "none"} <= strategies
    assert any(t.scheduler.value == "volcano" for t in blueprint.tenants)
    assert any(w.kind.value == "VolcanoJob" and w.workers == 4 and w.gpu.count == 2 for w in blueprint.workloads)
    assert all(pool.taints for pool in blueprint.pools), "multi-level pools are tainted"
    assert any(pool.topology is not None for pool in blueprint.pools)
    assert any(w.serve is not None for w in blueprint.workloads)


@pytest.mark.parametrize(
    ("example", "strategy", "scheduler"),
    [("kueue.yaml", None, "kueue"), ("volcano.yaml", None, "volcano"), ("hami.yaml", "hami", None)],
)
def test_each_integration_example_uses_its_integration(
    example: str, strategy: str | None, scheduler: str | None
) -> None:
    blueprint = validate_path(BLUEPRINTS / example).blueprint
    assert blueprint is not None
    if strategy is not None:
        assert any(pool.sharing.strategy.value == strategy for pool in blueprint.pools)
    if scheduler is not None:
        assert all(tenant.scheduler.value == scheduler for tenant in blueprint.tenants)

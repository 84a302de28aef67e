"""A taint is written one way and a toleration matches it by one rule (core/v1 ToleratesTaint), everywhere."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from gpustack.model import Taint
from gpustack.taints import Toleration, read_toleration, taint_object, taint_text, toleration_for

PACKAGE = Path(__file__).resolve().parents[1] / "gpustack"
GPU = Taint("nvidia.com/gpu", "true", "NoSchedule", ())
POOL = Taint("gpustack.io/pool", None, "NoExecute", ())


def test_a_taint_is_written_as_kubectl_writes_it() -> None:
    assert taint_text(GPU) == "nvidia.com/gpu=true:NoSchedule"
    assert taint_text(POOL) == "gpustack.io/pool:NoExecute"
    assert taint_text(Taint("k", "", "NoSchedule", ())) == "k=:NoSchedule"  # kubectl's own form of an empty value


def test_a_taint_object_has_a_value_only_where_the_taint_does() -> None:
    assert taint_object(GPU) == {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
    assert taint_object(POOL) == {"key": "gpustack.io/pool", "effect": "NoExecute"}
    assert list(taint_object(GPU)) == ["key", "value", "effect"]  # kubectl's order, as the golden files have it


def test_the_derived_toleration_tolerates_exactly_its_taint() -> None:
    assert toleration_for(GPU).as_object() == {
        "key": "nvidia.com/gpu",
        "operator": "Equal",
        "value": "true",
        "effect": "NoSchedule",
    }
    assert toleration_for(POOL).as_object() == {"key": "gpustack.io/pool", "operator": "Exists", "effect": "NoExecute"}
    assert toleration_for(GPU).tolerates(GPU) and toleration_for(POOL).tolerates(POOL)
    assert not toleration_for(GPU).tolerates(Taint("nvidia.com/gpu", "false", "NoSchedule", ()))
    assert not toleration_for(GPU).tolerates(Taint("nvidia.com/gpu", "true", "NoExecute", ()))
    assert not toleration_for(POOL).tolerates(GPU)


@pytest.mark.parametrize(
    ("raw", "tolerated"),
    [
        ({"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}, True),
        ({"key": "nvidia.com/gpu", "value": "true"}, True),  # Equal by default, any effect
        ({"key": "nvidia.com/gpu", "operator": "Exists"}, True),
        ({"operator": "Exists"}, True),  # the wildcard: every taint
        ({"key": "gpu", "operator": "Exists"}, False),  # the seed's mistake: keys match exactly
        ({"key": "nvidia.com/gpu", "value": "false"}, False),
        ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}, False),
        ({"key": "nvidia.com/gpu", "operator": "In", "value": "true"}, False),  # no such operator
        ({"key": "nvidia.com/gpu", "value": True}, False),  # a YAML boolean: the API server refuses it
    ],
)
def test_a_written_toleration_is_matched_by_kubernetes_rule(raw: dict[str, Any], tolerated: bool) -> None:
    toleration = read_toleration(raw)
    assert (toleration is not None and toleration.tolerates(GPU)) is tolerated


def test_the_simulator_uses_the_same_toleration() -> None:
    from gpustack.simulate.pods import Toleration as SimulatedToleration

    assert SimulatedToleration is Toleration


def test_no_other_module_writes_a_taint_or_matches_a_toleration() -> None:
    written = re.compile(r"\{\w*key\}=\{\w*value\}:|\{\w+\.key\}=\{\w+\.value\}|=\{taint\.value\}")  # by hand
    matched = re.compile(r"operator == .Exists.:?\s+return True|\.value is None or [\w.]*\.value ==")
    for path in PACKAGE.rglob("*.py"):
        if path.name == "taints.py":
            continue
        text = path.read_text()
        assert not written.search(text), path
        assert not matched.search(text), path

"""`gpustack diff` skips writing out objects that did not change, but never one that is written differently."""

from __future__ import annotations

from typing import Any

import pytest

from gpustack.review.manifests import _same
from gpustack.yamlout import dump_yaml

WRITTEN_DIFFERENTLY = [
    ({"a": True}, {"a": 1}),
    ({"a": 1}, {"a": 1.0}),
    ({"a": 0.0}, {"a": -0.0}),
    ({"a": 1, "b": 2}, {"b": 2, "a": 1}),
    ({"a": [1, 2]}, {"a": [2, 1]}),
    ({"a": None}, {"a": "null"}),
    ({"a": {"b": "x"}}, {"a": {"b": "x", "c": "y"}}),
]


@pytest.mark.parametrize(("old", "new"), WRITTEN_DIFFERENTLY)
def test_objects_written_differently_are_never_the_same(old: dict[str, Any], new: dict[str, Any]) -> None:
    assert dump_yaml(old) != dump_yaml(new)
    assert not _same(old, new)


def test_objects_written_alike_are_the_same() -> None:
    old = {"kind": "Node", "spec": {"taints": [{"key": "k", "value": "v"}], "n": 1.5}, "x": (1, "2", None)}
    new = {"kind": "Node", "spec": {"taints": [{"key": "k", "value": "v"}], "n": 1.5}, "x": (1, "2", None)}
    assert _same(old, new) and dump_yaml(old) == dump_yaml(new)

"""The leaf fast path of shape checking: a value it lets through is one jsonschema itself accepts."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from gpustack.schema import _lookup, _passes_leaf, _validator, load_schema


def subschemas(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from subschemas(value)
    elif isinstance(node, list):
        for value in node:
            yield from subschemas(value)


LEAVES = [s for s in subschemas(load_schema()) if _passes_leaf(s, "x") or _passes_leaf(s, 1) or "pattern" in s]
VALUES = (
    st.none()
    | st.booleans()
    | st.integers(-5, 300)
    | st.floats(allow_nan=True)
    | st.text(st.sampled_from("abz09-.:/_ AZ\n"), max_size=70)
    | st.sampled_from(["NoSchedule", "mig", "1Gi", "500m", "gpu-node-01", "a" * 64, "nvidia.com/gpu", "0.5"])
    | st.lists(st.text(max_size=3), max_size=2)
)


def reference_accepts(schema: dict[str, Any], value: Any) -> bool:
    if "$ref" in schema:  # resolve against the whole schema, as check_shape does
        target = _lookup(schema["$ref"]).contents
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        return reference_accepts(target, value) and Draft202012Validator(rest).is_valid(value)
    return bool(Draft202012Validator(schema, format_checker=None).is_valid(value))


def test_the_schema_has_leaves_worth_a_fast_path() -> None:
    assert len(LEAVES) > 20


@pytest.mark.parametrize("index", range(0, len(LEAVES), max(1, len(LEAVES) // 40)))
@settings(max_examples=60, deadline=None)
@given(value=VALUES)
def test_a_value_the_fast_path_passes_is_valid_to_jsonschema(index: int, value: Any) -> None:
    schema = LEAVES[index]
    if _passes_leaf(schema, value):
        assert reference_accepts(schema, value), (schema, value)


@pytest.mark.parametrize("value", [True, 1.0, "-x", "Gpu", "x" * 300, "", "prod-ai\n"])
def test_values_jsonschema_refuses_are_still_reported(value: Any) -> None:
    # A node name: the fast path lets none of these through, so jsonschema words the error.
    nodes = load_schema()["$defs"]["nodePool"]["properties"]["nodes"]
    assert not _passes_leaf(nodes["items"], value)
    assert list(_validator().evolve(schema=nodes).iter_errors([value]))

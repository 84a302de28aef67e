"""The leaf fast path of shape checking: a value it lets through is one jsonschema itself accepts."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from gpustack.schema_fast import holds, lookup, passes_leaf, shape_validator
from gpustack.schema_file import load_schema


def subschemas(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from subschemas(value)
    elif isinstance(node, list):
        for value in node:
            yield from subschemas(value)


LEAVES = [s for s in subschemas(load_schema()) if passes_leaf(s, "x") or passes_leaf(s, 1) or "pattern" in s]
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
        target = lookup(schema["$ref"]).contents
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
    if passes_leaf(schema, value):
        assert reference_accepts(schema, value), (schema, value)


@pytest.mark.parametrize("value", [True, 1.0, "-x", "Gpu", "x" * 300, "", "prod-ai\n"])
def test_values_jsonschema_refuses_are_still_reported(value: Any) -> None:
    # A node name: the fast path lets none of these through, so jsonschema words the error.
    nodes = load_schema()["$defs"]["nodePool"]["properties"]["nodes"]
    assert not passes_leaf(nodes["items"], value)
    assert list(shape_validator().evolve(schema=nodes).iter_errors([value]))


# --- the `if` fast path ------------------------------------------------------------------------

CONDITIONS = [s["if"] for s in subschemas(load_schema()) if "if" in s]
WORDS = "device-plugin none time-slicing mps mig hami default volcano kueue VolcanoJob JobSet Deployment StatefulSet"
CONDITION_WORDS = st.sampled_from([*WORDS.split(), "Job", "LeaderWorkerSet", "In", "NotIn", "Exists", "Mig", ""])
CONDITION_VALUES = (
    CONDITION_WORDS | st.none() | st.booleans() | st.integers(-1, 3) | st.lists(CONDITION_WORDS, max_size=2)
)
CONDITION_KEYS = st.sampled_from(["stack", "strategy", "selector", "cloud", "count", "scheduler", "kind", "operator"])
INSTANCES = st.dictionaries(CONDITION_KEYS, CONDITION_VALUES, max_size=4) | CONDITION_VALUES


def test_every_condition_in_the_schema_is_decided_without_jsonschema() -> None:
    assert len(CONDITIONS) >= 10
    for condition in CONDITIONS:
        assert holds(condition, {}) is not None, condition


@settings(max_examples=600, deadline=None)
@given(st.sampled_from(CONDITIONS), INSTANCES)
def test_a_decided_condition_is_what_jsonschema_decides(condition: dict[str, Any], instance: Any) -> None:
    decided = holds(condition, instance)
    assert decided is not None
    assert decided == Draft202012Validator(condition).is_valid(instance), (condition, instance)


@pytest.mark.parametrize(
    "condition",
    [{"properties": {"a": {"const": 1}}}, {"properties": {"a": {"pattern": "x"}}}, {"minProperties": 1}, True],
    ids=["non-string const", "pattern", "other keyword", "boolean schema"],
)
def test_other_conditions_are_left_to_jsonschema(condition: Any) -> None:
    assert holds(condition, {"a": 1}) is None

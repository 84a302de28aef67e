"""pretty_json writes what json.dumps(indent=2, ensure_ascii=False) writes, byte for byte, or leaves it to it."""

from __future__ import annotations

import enum
import json
import math
from collections import OrderedDict
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpustack.json_text import pretty_json

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()  # NaN and the infinities too
    | st.text()  # any code point: controls, quotes, backslashes, surrogates, line separators
)


def _nest(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(inner, max_size=4) | st.tuples(inner) | st.dictionaries(st.text(max_size=5), inner, max_size=4)


documents = st.recursive(scalars, _nest, max_leaves=40)


def _same(value: Any) -> None:
    expected = json.dumps(value, indent=2, ensure_ascii=False)
    assert pretty_json(value) == expected


@settings(max_examples=500)
@given(documents)
def test_generated_json_data_is_written_as_json_dumps_writes_it(value: Any) -> None:
    _same(value)


class Colour(enum.StrEnum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


@pytest.mark.parametrize(
    "value",
    [
        {},
        [],
        {"a": {}, "b": [], "c": [{}], "d": [[]]},
        {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "tiny": 5e-324, "big": 10**400, "neg": -0.0},
        {"\u2028": '\x00\x1f"\\\ud800', "é": "日本"},
        {2: "int key", 1.5: "float key", True: "bool key", None: "null key"},  # json.dumps's own key rules
        {"colour": Colour.RED, "level": Level.HIGH},  # subclasses of str and int
        OrderedDict(b=1, a=2),
        (1, (2, [3])),
    ],
    ids=["empty dict", "empty list", "empties nested", "floats", "strings", "keys", "enums", "ordered", "tuples"],
)
def test_edges_are_written_as_json_dumps_writes_them(value: Any) -> None:
    _same(value)


def test_what_json_dumps_refuses_it_refuses_alike() -> None:
    with pytest.raises(TypeError, match="not JSON serializable"):
        pretty_json({"a": [object()]})
    cycle: list[Any] = []
    cycle.append(cycle)
    with pytest.raises(ValueError, match="Circular reference"):
        pretty_json(cycle)

"""The compiled schema (gpustack/schema_predicate.py) never calls valid what jsonschema or check_shape would refuse.

Its "surely valid" skips jsonschema in check_shape, so a wrong yes would hide an error from the user. These tests hold
it to a reference validator that shares none of its code (plain jsonschema with ECMA patterns, as check_shape's is),
subschema by subschema on generated values, on mutated blueprints, and on every blueprint file in the repository.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator, ValidationError, validators
from jsonschema.protocols import Validator

from gpustack.diagnostic import DiagnosticError
from gpustack.load import Document, read_document
from gpustack.schema import MAX_ENTRIES, check_shape
from gpustack.schema_fast import lookup
from gpustack.schema_file import compiled_pattern, load_schema, local_target
from gpustack.schema_predicate import compiled, surely_valid, uncompiled_keywords

REPO = Path(__file__).resolve().parents[1]


def _ecma_pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    if validator.is_type(instance, "string") and not compiled_pattern(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


REFERENCE: Validator = validators.extend(Draft202012Validator, {"pattern": _ecma_pattern})(load_schema())


def reference_accepts(schema: Any, value: Any) -> bool:
    if isinstance(schema, dict) and "$schema" in schema:
        # evolve() picks the validator class a schema's `$schema` names: plain Draft 2020-12, whose Python `$` lets
        # "prod-ai\n" match a DNS label. Without it the ECMA pattern above stays.
        schema = {key: value for key, value in schema.items() if key != "$schema"}
    return bool(REFERENCE.evolve(schema=schema).is_valid(value))


def test_the_reference_words_patterns_the_ecma_way_for_the_whole_document() -> None:
    data = copy.deepcopy(VALID[0])
    data["metadata"]["name"] += "\n"
    assert not reference_accepts(load_schema(), data)


def plain(value: Any) -> bool:
    """What check_shape asks beyond the schema: plain YAML data, finite numbers, no container over the cap."""
    if type(value) is dict:
        return len(value) <= MAX_ENTRIES and all(type(k) is str and plain(v) for k, v in value.items())
    if type(value) is list:
        return len(value) <= MAX_ENTRIES and all(plain(v) for v in value)
    if type(value) is float:
        return math.isfinite(value)
    return type(value) in (str, int, bool, type(None))


def document(data: Any) -> Document:
    return Document("mutant.yaml", "", data, {}, {})


# --- the schema compiles whole -----------------------------------------------------------------------------------


def test_every_keyword_of_the_blueprint_schema_is_compiled() -> None:
    # A keyword left to jsonschema would still be judged right, but at jsonschema's speed.
    assert uncompiled_keywords() == set()


def test_a_keyword_it_does_not_compile_is_judged_by_jsonschema() -> None:
    schema = {"type": "array", "contains": {"const": 3}, "items": {"type": "integer", "multipleOf": 3}}
    assert uncompiled_keywords(schema) == {"contains", "multipleOf"}
    check = compiled(schema, MAX_ENTRIES)
    assert check([1 * 3, 3])
    assert not check([6, 9])  # no 3
    assert not check([3, 4])  # 4 is no multiple of 3
    assert not check([3, math.nan])


@pytest.mark.parametrize(
    "schema",
    [{"enum": [1, None, True, 2.5, "1"]}, {"const": 0}, {"const": False}, {"enum": [[1], {"a": True}]}],
    ids=["mixed enum", "zero", "false", "containers"],
)
def test_enum_and_const_compare_as_jsonschema_does(schema: dict[str, Any]) -> None:
    # True is not 1 and False is not 0 to JSON Schema; 1.0 is 1; containers are compared by jsonschema itself.
    for value in [1, 1.0, True, False, 0, 0.0, None, 2.5, "1", [1], [True], {"a": True}, {"a": 1}, math.nan]:
        assert compiled(schema, MAX_ENTRIES, strong=False)(value) == reference_accepts(schema, value), value


# --- subschema by subschema ---------------------------------------------------------------------------------------


def subschemas(node: Any) -> Iterator[Any]:
    if isinstance(node, dict):
        yield node
        for key, value in node.items():
            if key not in ("enum", "const", "examples", "default", "required"):
                yield from subschemas(value)
    elif isinstance(node, list):
        for value in node:
            yield from subschemas(value)


SUBSCHEMAS = list({json.dumps(s, sort_keys=True): s for s in subschemas(load_schema()["$defs"])}.values())


def words_of(node: Any) -> Iterator[Any]:
    """Every property name, enum value, const and example in the schema: the values most likely to matter."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "properties":
                yield from value
            if key in ("enum", "examples"):
                yield from (v for v in value if not isinstance(v, dict | list))
            elif key in ("const", "default") and not isinstance(value, dict | list):
                yield value
            yield from words_of(value)
    elif isinstance(node, list):
        for value in node:
            yield from words_of(value)


WORDS = sorted({w for w in words_of(load_schema())}, key=repr)
KEYS = st.sampled_from(sorted({w for w in WORDS if isinstance(w, str)}))
SCALARS = (
    st.sampled_from(WORDS)
    | st.none()
    | st.booleans()
    | st.integers(-3, 70000)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from([1.0, 2.0, -0.0, 0.5, 16.0, 17.0])
    | st.text(st.sampled_from("abz09-./:_ A\n"), max_size=70)
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS | st.text(max_size=3), inner, max_size=5),
    max_leaves=12,
)


EDGES = [0, 1, -1, 1.0, 2.0, 2.5, -0.0, True, False, None, math.nan, math.inf, -math.inf, "", "a\n", [], {}]


def bounds_of(node: Any, keywords: frozenset[str]) -> set[Any]:
    """Every value the schema gives one of `keywords` (maxLength 63, maxItems 10000, maximum 2147483647, ...)."""
    found: set[Any] = set()
    if isinstance(node, dict):
        found |= {value for key, value in node.items() if key in keywords and not isinstance(value, bool)}
        for value in node.values():
            found |= bounds_of(value, keywords)
    elif isinstance(node, list):
        for value in node:
            found |= bounds_of(value, keywords)
    return found


def patterns_of(node: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(node, dict):
        if isinstance(node.get("pattern"), str):
            found.add(node["pattern"])
        for key, value in node.items():
            if key != "properties":  # a property named "pattern" is no pattern
                found |= patterns_of(value)
            else:
                found |= {p for sub in value.values() for p in patterns_of(sub)}
    elif isinstance(node, list):
        for value in node:
            found |= patterns_of(value)
    return found


SEEDS = ["a", "a.b", "a/b", "us-central1-a", "us-east-1a", "n1-standard-8", "p4d.24xlarge", "Standard_ND96", "pd-ssd"]


def stretched(length: int) -> Iterator[str]:
    """For each pattern of the schema, a string of exactly `length` characters that matches it, where a word of
    the schema (or a seed) stretched by repeating one of its characters does: a length bound is then the only
    thing that can tell the probe from a valid value."""
    words = [w for w in (*SEEDS, *WORDS) if isinstance(w, str) and 0 < len(w) <= length]
    for pattern in sorted(patterns_of(load_schema())):
        search = compiled_pattern(pattern).search
        found = next(
            (
                candidate
                for word in words
                for at in range(len(word))
                if search(candidate := word[:at] + word[at] * (length - len(word) + 1) + word[at + 1 :])
            ),
            None,
        )
        if found is not None:
            yield found


LENGTHS = bounds_of(load_schema(), frozenset({"minLength", "maxLength"}))
COUNTS = bounds_of(load_schema(), frozenset({"minItems", "maxItems", "minProperties", "maxProperties"}))
NUMBERS = bounds_of(
    load_schema(), frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"})
)
# Values at and just past every bound the schema sets: a long name that matches its pattern, a list of distinct
# names or a mapping one entry over its maximum, a number one past its limit. Counts past MAX_ENTRIES are left to
# test_data_check_shape_would_cut_or_report_is_left_to_it (the cap refuses them before any maxItems could).
SIZES = [count for n in sorted(COUNTS) for count in (n - 1, n, n + 1) if 0 <= count <= MAX_ENTRIES // 2]
BOUNDARIES = [
    *sorted({s for n in LENGTHS for length in (n - 1, n, n + 1) if length > 0 for s in stretched(length)}),
    *([f"a{i}" for i in range(count)] for count in SIZES),
    *({f"k{i}": "v" for i in range(count)} for count in SIZES),
    *(value for n in sorted(NUMBERS) for value in (n - 1, n, n + 1, n - 0.5, n + 0.5, float(n))),
]
PROBES = [*WORDS, *EDGES, *BOUNDARIES, ["a", "a"], ["a", "b"], [1, 1.0], [True, 1], [{"a": 1}, {"a": 1.0}], {"a": 1}]


def test_the_boundary_probes_reach_every_length_bound() -> None:
    # Each maxLength of the schema meets a string of its length and one a character longer that its pattern takes.
    lengths = {len(p) for p in BOUNDARIES if isinstance(p, str)}
    assert {n + 1 for n in LENGTHS} <= lengths
    assert {1000, 1001} <= {len(p) for p in BOUNDARIES if isinstance(p, list | dict)}


# The blueprint schema has no `oneOf` today, and not every way to combine the others: these hold each combinator to
# jsonschema where branches overlap, nest and negate, so that a schema change that starts using one cannot meet a
# wrong predicate.
COMBINED = [
    {"oneOf": [{"type": "integer"}, {"minimum": 0}]},
    {"oneOf": [{"type": "string"}, {"maxLength": 2}, {"const": "abc"}]},
    {"anyOf": [{"type": "integer", "minimum": 5}, {"type": "string", "pattern": "^a"}]},
    {"allOf": [{"type": ["integer", "string"]}, {"not": {"const": 3}}, {"not": {"enum": ["b", 1]}}]},
    {"not": {"oneOf": [{"type": "integer"}, {"type": "number"}]}},
    {"if": {"required": ["a"]}, "then": {"required": ["b"]}, "else": {"maxProperties": 1}},
    {"if": {"properties": {"a": {"const": 1}}}, "then": {"properties": {"b": {"type": "string"}}}},
    {"type": "object", "minProperties": 1, "maxProperties": 2, "propertyNames": {"pattern": "^[ab]$"}},
    {"type": "array", "minItems": 1, "maxItems": 2, "items": {"oneOf": [{"type": "integer"}, {"const": 1.5}]}},
    {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 3},
]
COMBINED_PROBES = [
    *EDGES,
    *(3, 5, 7, -4, 1.5, 3.0, "a", "ab", "abc", "b", "ba"),
    *([1], [1, 2], [1, 1.5, 2], [1.5], ["a"]),
    *({"a": 1}, {"a": 1, "b": "x"}, {"a": 1, "b": 2}, {"b": 2}, {"a": 2, "b": 2, "c": 1}, {"c": 1}, {"a": None}),
]


@pytest.mark.parametrize("schema", COMBINED, ids=[json.dumps(s) for s in COMBINED])
def test_combinators_give_jsonschemas_verdict(schema: dict[str, Any]) -> None:
    exact, strong = compiled(schema, MAX_ENTRIES, strong=False), compiled(schema, MAX_ENTRIES)
    for value in COMBINED_PROBES:
        expected = reference_accepts(schema, value)
        assert exact(value) == expected, value
        assert strong(value) == (expected and plain(value)), value


@pytest.mark.parametrize("chunk", range(8))
def test_each_subschema_gives_jsonschemas_verdict_on_every_word_and_edge(chunk: int) -> None:
    """Deterministic: every subschema meets every name, enum value and example in the schema, and the edges
    (True beside 1, 2.0 beside 2, NaN and the infinities, a trailing newline, repeats)."""
    for schema in SUBSCHEMAS[chunk::8]:
        exact, strong = compiled(schema, MAX_ENTRIES, strong=False), compiled(schema, MAX_ENTRIES)
        for value in PROBES:
            expected = reference_accepts(schema, value)
            assert exact(value) == expected, (schema, value)
            assert strong(value) == (expected and plain(value)), (schema, value)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(index=st.integers(0, len(SUBSCHEMAS) - 1), value=VALUES)
def test_each_subschema_compiles_to_jsonschemas_verdict(index: int, value: Any) -> None:
    schema = SUBSCHEMAS[index]
    expected = reference_accepts(schema, value)
    assert compiled(schema, MAX_ENTRIES, strong=False)(value) == expected, (schema, value)
    assert compiled(schema, MAX_ENTRIES)(value) == (expected and plain(value)), (schema, value)


# --- whole blueprints ---------------------------------------------------------------------------------------------


def blueprint_files() -> Iterator[Path]:
    for path in sorted(REPO.glob("**/*.yaml")):
        if ".git" not in path.parts and "golden" not in path.parts and ".venv" not in path.parts:
            yield path


def blueprints() -> list[tuple[Path, Document]]:
    found = []
    for path in blueprint_files():
        try:
            doc = read_document(path)
        except DiagnosticError:
            continue
        if isinstance(doc.data, dict) and doc.data.get("kind") == "ClusterBlueprint":
            found.append((path, doc))
    return found


BLUEPRINTS = blueprints()
VALID = [doc.data for _, doc in BLUEPRINTS if not check_shape(doc)]


def test_the_repository_holds_blueprints_of_both_kinds() -> None:
    assert len(VALID) > 50
    assert len(BLUEPRINTS) - len(VALID) > 20  # tests/cases/schema: one shape error each


@pytest.mark.parametrize("path, doc", BLUEPRINTS, ids=[str(p.relative_to(REPO)) for p, _ in BLUEPRINTS])
def test_every_blueprint_file_gets_check_shapes_verdict(path: Path, doc: Document) -> None:
    # Valid ones too: a valid blueprint that missed the compiled path would be slow, not wrong.
    assert surely_valid(doc.data, MAX_ENTRIES) == (check_shape(doc) == [])


def paths(data: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield at
    if isinstance(data, dict):
        for key, value in data.items():
            yield from paths(value, (*at, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from paths(value, (*at, index))


def nudged(value: Any) -> list[Any]:
    """Values next to `value`, as a slip makes them: a number off by a half or past a bound, a name a character too
    long for its pattern's bound or with a stray capital, a list grown past its maximum, a flag written as 1."""
    kind = type(value)
    if kind is bool:
        return [int(value), str(value).lower(), None]
    if kind is int:
        return [value + 0.5, float(value), -value - 1, value * 1_000_003, True, str(value), *NUMBERS]
    if kind is float:
        return [value + 0.5, math.nan, int(value) if math.isfinite(value) else 0, str(value)]
    if kind is str:
        tail = value[-1:] or "a"
        longer = [value + tail * (n + 1 - len(value)) for n in sorted(LENGTHS) if n >= len(value)]
        return [*longer, value.upper(), value + " ", value + "\n", "", f"{value}.", 1]
    if kind is list:
        return [[*value, *(f"a{i}" for i in range(n + 1 - len(value)))] for n in sorted(COUNTS) if n < 2000] + [
            value[:1] * 2,
            [],
        ]
    if kind is dict:
        return [{**value, "extra": 1}, {}, {k: None for k in value}]
    return [0, "", [], {}]


def mutate(data: Any, path: tuple[Any, ...], how: str, value: Any) -> None:
    """One edit at `path`: the kind of change a person's mistake makes."""
    parent: Any = data
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    value = copy.deepcopy(value)  # one drawn value used by two edits must not nest a list inside itself
    if how == "replace":
        parent[last] = value
    elif how == "delete":
        del parent[last]
    elif how == "add" and isinstance(parent[last], dict):
        parent[last][value if isinstance(value, str) else "extra"] = value
    elif how == "repeat" and isinstance(parent[last], list) and parent[last]:
        parent[last].append(copy.deepcopy(parent[last][-1]))
    elif how == "nudge":
        options = nudged(parent[last])
        parent[last] = options[len(repr(value)) % len(options)]
    elif how == "borrow" and isinstance(parent, dict):
        # another field's value under this key: the right shape in the wrong place
        siblings = [v for k, v in parent.items() if k != last]
        if siblings:
            parent[last] = copy.deepcopy(siblings[hash(repr(value)) % len(siblings)])


EDITS = st.lists(
    st.tuples(
        st.integers(0, 10**6),
        st.sampled_from(["replace", "delete", "add", "repeat", "borrow", "nudge", "nudge"]),
        VALUES | KEYS | st.sampled_from(PROBES),  # PROBES: a value at or past one of the schema's bounds, among others
    ),
    min_size=1,
    max_size=3,
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(base=st.integers(0, 10**6), edits=EDITS)
def test_a_mutated_blueprint_it_calls_valid_is_valid(base: int, edits: list[tuple[int, str, Any]]) -> None:
    data = copy.deepcopy(VALID[base % len(VALID)])
    for where, how, value in edits:
        located = [p for p in paths(data) if p]
        mutate(data, located[where % len(located)], how, value)
    verdict = surely_valid(data, MAX_ENTRIES)
    assert verdict == (reference_accepts(load_schema(), data) and plain(data)), data
    if verdict:
        assert check_shape(document(data)) == []


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d["spec"]["nodePools"][0].update(maxPods=math.nan),
        lambda d: d["spec"]["nodePools"][0].update(maxPods=math.inf),
        lambda d: d["spec"]["nodePools"][0]["labels"].update({1: "x"}),
        lambda d: d["spec"].update(nodePools=tuple(d["spec"]["nodePools"])),
        lambda d: d["spec"]["nodePools"][0].update(nodes=[f"n{i}" for i in range(MAX_ENTRIES + 1)]),
        lambda d: d["spec"]["nodePools"][0]["labels"].update({f"k{i}": "v" for i in range(MAX_ENTRIES + 1)}),
    ],
    ids=["nan", "inf", "non-string key", "tuple", "list over the cap", "mapping over the cap"],
)
def test_data_check_shape_would_cut_or_report_is_left_to_it(change: Any) -> None:
    data = copy.deepcopy(next(d for d in VALID if d["spec"]["nodePools"][0].get("labels")))
    assert surely_valid(data, MAX_ENTRIES)
    change(data)
    assert not surely_valid(data, MAX_ENTRIES)


def test_every_ref_resolves_to_the_target_jsonschema_finds() -> None:
    """The predicate resolves `$ref`s without jsonschema (schema_file.local_target): the same subschema, object for
    object, as jsonschema's resolver gives, for every `$ref` the schema holds; anything else is left to jsonschema."""
    refs = {ref for ref in _refs(load_schema())}
    assert len(refs) > 20
    for ref in refs:
        assert local_target(ref) is lookup(ref).contents, ref
    for ref in ("#/$defs/noSuchThing", "https://example.com/schema#/$defs/x", "#nodePools"):
        with pytest.raises(LookupError):
            local_target(ref)
    assert local_target("#") is load_schema()


def _refs(schema: Any) -> Iterator[str]:
    if isinstance(schema, dict):
        if isinstance(schema.get("$ref"), str):
            yield schema["$ref"]
        for value in schema.values():
            yield from _refs(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _refs(value)

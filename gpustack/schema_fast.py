"""The shape check made fast: what is decided in Python before, or instead of, jsonschema's own walk.

jsonschema is the authority on the blueprint's shape (gpustack/data/blueprint.schema.json), and every
error a user reads comes from it, worded by `gpustack.schema`. This module only spares it work that
cannot produce an error: a cut before the walk, and three shortcuts plugged into the validator as
keyword functions.

- bounds before the walk (`within_bounds`): a list or mapping with more entries than its schema's
  `maxItems`/`maxProperties` (or the overall cap) is cut to that many before jsonschema sees it, and the
  cut is reported once; a 6.8 MB blueprint of 40 env maps of 9,000 entries is refused in the time it
  takes to read it (2.8 s of CPU for `gpustack validate`, 7.4 s before). What is kept is still checked;
- a `$ref` cache: every `$ref` in the schema is local (`#/$defs/...`, tests/test_schema.py checks it),
  so each is resolved once, not afresh for every value it applies to; and a value a `$ref` target already
  passed in the same document (the same marshal bytes) is not walked again (`_VALID`);
- a leaf fast path: a value under a leaf schema (a type, a pattern, lengths, bounds, an enum of
  strings), or a small closed mapping of such leaves (a taint, a pool's `gpu`), that surely passes is
  accepted in one step, without building a validator for it (in `properties`, `items`,
  `additionalProperties`, `propertyNames` and `$ref`);
- `if` conditions decided in Python where they have the shapes this schema uses (a property's string
  `const` or `enum`, `required`, `anyOf`, `not`), instead of collecting an error to learn the answer.

Each shortcut only ever says "valid" or "I cannot tell": a value the leaf path does not surely accept,
and a condition `holds` cannot decide (it returns None), go to jsonschema's standard code, which finds
and reports the error with its paths. tests/test_schema_leaves.py checks both against plain jsonschema.

Why it exists: speed, measured. On bench/fleet.py's many-pools blueprint at 10x (1,000 pools, 10,000
nodes), jsonschema's walk over the data took 4.9 s plain and 1.7 s with these shortcuts (median of 3,
collector paused, a shared 2-core machine). Resolving `$ref` afresh was a third of the plain time and
building a validator per leaf most of the rest; deciding `if` here also spares the collector the
reference cycles of the throw-away errors (6,000 on a 1,000-pool blueprint).

JSON Schema patterns are ECMA-262; `pattern` is checked here the ECMA way (a final `$` is the very end).
"""

from __future__ import annotations

import functools
import itertools
import marshal
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator, ValidationError, validators
from jsonschema.protocols import Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from gpustack.diagnostic import JsonPath
from gpustack.schema_file import compiled_pattern, load_schema

# What keyword functions receive: the class validators.extend builds from Draft202012Validator. The
# `Validator` protocol lacks `descend`, which every concrete validator class has.
KeywordValidator = Draft202012Validator


def _ecma_pattern(validator: KeywordValidator, pattern: str, instance: Any, schema: Mapping[str, Any]) -> Iterator[Any]:
    if validator.is_type(instance, "string") and not compiled_pattern(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


@functools.cache
def lookup(ref: str) -> Any:  # referencing's Resolved; the class is not exported
    # Every $ref in the schema is local ("#/$defs/..."), so one lookup per ref string serves every
    # use. jsonschema resolves each $ref afresh for every instance it meets, which is a third of
    # the time on a large blueprint.
    schema = load_schema()
    resource = Resource.from_contents(schema, default_specification=DRAFT202012)
    return Registry().with_resource(schema["$id"], resource).resolver(base_uri=schema["$id"]).lookup(ref)


def _cached_ref(validator: KeywordValidator, ref: str, instance: Any, schema: Mapping[str, Any]) -> Iterator[Any]:
    resolved = lookup(ref)
    if passes_leaf(resolved.contents, instance):
        return
    key = _valid_key(ref, instance)
    if key is not None and key in _VALID:
        return
    errors = list(validator.descend(instance, resolved.contents, resolver=resolved.resolver))
    if key is not None and not errors:
        if len(_VALID) >= _VALID_MAX:
            _VALID.clear()
        _VALID.add(key)
    yield from errors


# --- values already found valid ------------------------------------------------------------------------------------
# A fleet repeats its small mappings: 1,000 pools carry 21 distinct label maps, 3 sharing blocks, one nodeResources.
# A `$ref` target that a value with the same marshal bytes already passed passes again: every `$ref` here is local and
# jsonschema's verdict depends on nothing but the schema and the value, and marshal's bytes pin the value exactly
# (types, so 1 is not 1.0 nor True; key order; every nested value), as review/manifests.py's compare does. Only
# passes are remembered, so every error is still found and worded by jsonschema. A value marshal cannot write (none
# from the YAML reader) takes the plain descent. The set holds one document's values: `within_bounds`, which starts
# every shape check, empties it (a long-lived process must not grow it, and a second check of the same file costs
# what the first did), `forget_valid` empties it again once the check is done, and it is bounded within a document.
_VALID: set[tuple[str, bytes]] = set()
_VALID_MAX = 100_000


def _valid_key(ref: str, instance: Any) -> tuple[str, bytes] | None:
    if not isinstance(instance, dict | list):
        return None  # a leaf is checked faster than it is written
    try:
        return ref, marshal.dumps(instance)
    except ValueError:
        return None


# --- the leaf fast path --------------------------------------------------------------------------
# Most of a large blueprint is leaves: node names, pool and namespace names, quantities. jsonschema
# builds a validator for every one (descend/evolve), which is most of its time. A leaf schema (a
# type, a pattern, lengths, bounds, an enum of strings) is checked here in one step instead; only a
# value that passes skips the descent, so every error still comes from jsonschema, with its paths.

_ANNOTATIONS = frozenset({"description", "title", "examples", "default", "$comment", "deprecated"})
_LEAF_KEYWORDS = frozenset(
    {"$ref", "type", "pattern", "minLength", "maxLength", "minimum", "maximum", "enum"} | _ANNOTATIONS
)
_EXACT_TYPES: Mapping[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),  # 2.0 is an integer to jsonschema too, but it takes the slow path
    "number": (int, float),
    "boolean": (bool,),
}
LeafCheck = tuple[tuple[type, ...] | None, re.Pattern[str] | None, int, float, float, float, frozenset[str] | None]


def _merge_leaf(schema: Any) -> LeafCheck | None:
    if not isinstance(schema, dict) or not schema.keys() <= _LEAF_KEYWORDS:
        return None
    parts = [schema]
    if "$ref" in schema:
        target = lookup(schema["$ref"]).contents
        if not isinstance(target, dict) or "$ref" in target or not target.keys() <= _LEAF_KEYWORDS:
            return None
        parts.append(target)
    types: tuple[type, ...] | None = None
    pattern: re.Pattern[str] | None = None
    min_length, max_length, minimum, maximum = 0, float("inf"), float("-inf"), float("inf")
    enum: frozenset[str] | None = None
    for part in parts:
        if "type" in part:
            if not isinstance(part["type"], str) or part["type"] not in _EXACT_TYPES or types is not None:
                return None
            types = _EXACT_TYPES[part["type"]]
        if "pattern" in part:
            if pattern is not None:
                return None
            pattern = compiled_pattern(part["pattern"])
        min_length = max(min_length, part.get("minLength", 0))
        max_length = min(max_length, part.get("maxLength", float("inf")))
        minimum = max(minimum, part.get("minimum", float("-inf")))
        maximum = min(maximum, part.get("maximum", float("inf")))
        if "enum" in part:
            if enum is not None or not all(isinstance(value, str) for value in part["enum"]):
                return None
            enum = frozenset(part["enum"])
    return types, pattern, min_length, max_length, minimum, maximum, enum


def passes_leaf(schema: Any, instance: Any) -> bool:
    """True only when `schema` is a leaf schema, or a closed object of them, and `instance` surely satisfies it."""
    if not isinstance(schema, dict):
        return False
    if type(instance) is dict:
        return _passes_object(schema, instance)
    known = _LEAVES.get(id(schema))
    if known is None or known[0] is not schema:
        known = _LEAVES[id(schema)] = (schema, _merge_leaf(schema))
    check = known[1]
    if check is None:
        return False
    types, pattern, min_length, max_length, minimum, maximum, enum = check
    kind = type(instance)
    if kind is bool:
        if types is not None and bool not in types:
            return False  # True is an int to Python, never an integer to JSON Schema
    elif types is not None and kind not in types:
        return False
    if kind is str:
        if pattern is not None and not pattern.search(instance):
            return False
        if not min_length <= len(instance) <= max_length:
            return False
    elif kind in (int, float) and not minimum <= instance <= maximum:
        return False
    return enum is None or (kind is str and instance in enum)


# id(schema) -> (schema, its check): holding the schema keeps its id from being reused.
_LEAVES: dict[int, tuple[Any, LeafCheck | None]] = {}

# A small mapping of leaves (a taint, a pool's `gpu`, nodeResources) is checked here too: its schema only types it
# as an object, names its properties, the required ones, and (optionally) closes it; every property present must
# pass passes_leaf (a leaf, or such an object again). Any other keyword (allOf, if, propertyNames, bounds...) and a
# `$ref` to anything but such a schema leave it to jsonschema. 3,000 descents at many-pools 10x were taints and
# `gpu` blocks, each a validator built for three leaves.
_OBJECT_KEYWORDS = frozenset({"type", "properties", "required", "additionalProperties"} | _ANNOTATIONS)
ObjectCheck = tuple[Mapping[str, Any], frozenset[str], bool]  # properties, required, closed
_OBJECTS: dict[int, tuple[Any, ObjectCheck | Any | None]] = {}  # id(schema) -> (schema, check or $ref target)


def _object_check(schema: dict[str, Any]) -> ObjectCheck | Any | None:
    if "$ref" in schema:
        target = lookup(schema["$ref"]).contents
        return target if isinstance(target, dict) and schema.keys() <= _ANNOTATIONS | {"$ref"} else None
    if not schema.keys() <= _OBJECT_KEYWORDS or schema.get("type") != "object":
        return None
    properties, required, extra = (
        schema.get("properties", {}),
        schema.get("required", []),
        schema.get("additionalProperties", True),
    )
    if not isinstance(properties, dict) or not isinstance(required, list) or extra not in (True, False):
        return None
    return properties, frozenset(required), extra is False


def _passes_object(schema: dict[str, Any], instance: dict[str, Any]) -> bool:
    known = _OBJECTS.get(id(schema))
    if known is None or known[0] is not schema:
        known = _OBJECTS[id(schema)] = (schema, _object_check(schema))
    check = known[1]
    if check is None:
        return False
    if isinstance(check, dict):  # the target of a bare $ref
        return passes_leaf(check, instance)
    properties, required, closed = check
    if not required <= instance.keys() or (closed and not instance.keys() <= properties.keys()):
        return False
    return all(name not in properties or passes_leaf(properties[name], value) for name, value in instance.items())


def _leaf_properties(
    validator: KeywordValidator, properties: Mapping[str, Any], instance: Any, schema: Mapping[str, Any]
) -> Iterator[Any]:
    """The 2020-12 `properties` keyword, with passing leaves skipped."""
    if not validator.is_type(instance, "object"):
        return
    for name, subschema in properties.items():
        if name in instance and not passes_leaf(subschema, instance[name]):
            yield from validator.descend(instance[name], subschema, path=name, schema_path=name)


def _leaf_items(validator: KeywordValidator, items: Any, instance: Any, schema: Mapping[str, Any]) -> Iterator[Any]:
    """The 2020-12 `items` keyword (this schema has no prefixItems and no `items: false`), passing leaves skipped."""
    if not validator.is_type(instance, "array"):
        return
    if "prefixItems" in schema or isinstance(items, bool):
        yield from _STANDARD_ITEMS(validator, items, instance, schema)
        return
    for index, item in enumerate(instance):
        if not passes_leaf(items, item):
            yield from validator.descend(instance=item, schema=items, path=index)


_STANDARD_ITEMS = Draft202012Validator.VALIDATORS["items"]


def _leaf_additional(
    validator: KeywordValidator, extra: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[Any]:
    """The 2020-12 `additionalProperties` keyword (a map of env values, say), passing leaves skipped."""
    if not isinstance(extra, dict) or "patternProperties" in schema:
        yield from _STANDARD_ADDITIONAL(validator, extra, instance, schema)
        return
    if not validator.is_type(instance, "object"):
        return
    named = schema.get("properties", {})
    for name, value in instance.items():
        if name not in named and not passes_leaf(extra, value):
            yield from validator.descend(value, extra, path=name)


_STANDARD_ADDITIONAL = Draft202012Validator.VALIDATORS["additionalProperties"]


def _leaf_names(validator: KeywordValidator, names: Any, instance: Any, schema: Mapping[str, Any]) -> Iterator[Any]:
    """The 2020-12 `propertyNames` keyword (an env map's names, say), passing leaves skipped."""
    if not validator.is_type(instance, "object"):
        return
    for name in instance:
        if not passes_leaf(names, name):
            yield from validator.descend(instance=name, schema=names)


def _decided_if(validator: KeywordValidator, if_schema: Any, instance: Any, schema: Mapping[str, Any]) -> Iterator[Any]:
    """The 2020-12 `if` keyword, with the condition decided here where it is simple (a property's const or enum of
    strings, required, anyOf, not). jsonschema decides it by collecting an error, and the errors of every `if`
    that fails form cycles for the garbage collector: 6,000 of them on a 1,000-pool blueprint."""
    decided = holds(if_schema, instance)
    if decided is None:
        decided = validator.evolve(schema=if_schema).is_valid(instance)
    if decided:
        if "then" in schema:
            yield from validator.descend(instance, schema["then"], schema_path="then")
    elif "else" in schema:
        yield from validator.descend(instance, schema["else"], schema_path="else")


_CONDITION_KEYWORDS = frozenset({"properties", "required", "anyOf", "not", "description", "$comment"})


def holds(schema: Any, instance: Any) -> bool | None:
    """Whether `instance` satisfies `schema`, for the condition shapes this schema uses; None for any other."""
    if not isinstance(schema, dict) or not schema.keys() <= _CONDITION_KEYWORDS:
        return None
    is_object = isinstance(instance, dict)
    verdicts: list[bool | None] = []
    for name, subschema in schema.get("properties", {}).items():
        if not is_object or name not in instance:
            continue  # properties constrain only the names present, of objects
        verdicts.append(_matches_strings(subschema, instance[name]))
    if "required" in schema:
        verdicts.append(not is_object or all(name in instance for name in schema["required"]))
    if "anyOf" in schema:
        branches = [holds(branch, instance) for branch in schema["anyOf"]]
        verdicts.append(True if True in branches else None if None in branches else False)
    if "not" in schema:
        negated = holds(schema["not"], instance)
        verdicts.append(None if negated is None else not negated)
    if False in verdicts:
        return False
    return None if None in verdicts else True


def _matches_strings(schema: Any, value: Any) -> bool | None:
    """A property schema of only a string `const` or an `enum` of strings; None for any other."""
    if not isinstance(schema, dict) or not schema.keys() <= {"const", "enum", "description"}:
        return None
    allowed = [schema["const"]] if "const" in schema else schema.get("enum")
    if not isinstance(allowed, list) or not all(isinstance(item, str) for item in allowed):
        return None
    return isinstance(value, str) and value in allowed


@functools.cache
def shape_validator() -> Validator:
    # Built once: constructing the validator costs far more than checking a blueprint.
    cls = validators.extend(
        Draft202012Validator,
        {
            "pattern": _ecma_pattern,
            "$ref": _cached_ref,
            "properties": _leaf_properties,
            "items": _leaf_items,
            "additionalProperties": _leaf_additional,
            "propertyNames": _leaf_names,
            "if": _decided_if,
        },
    )
    built: Validator = cls(load_schema())
    return built


# --- bounds before the walk ----------------------------------------------------------------------
# jsonschema checks `maxItems` and `maxProperties` only after it has walked every entry of the list or mapping:
# a 6.8 MB blueprint of 40 env maps of 9,000 entries (1,000 allowed) cost seconds of validation to refuse. The
# bounds are read here first, along the schema's `properties`, `additionalProperties`, `items` and `$ref`s, and an
# oversized container is cut to its bound before jsonschema sees it: every error in what is kept is still found
# and worded by jsonschema, and the cut is reported once (`Overflow`). A bound this walk does not reach (one inside
# an if/then branch, under patternProperties) is left to jsonschema, as before.


@dataclass(frozen=True)
class Overflow:
    """A list or mapping with more entries than allowed, cut to `limit` for jsonschema."""

    path: JsonPath
    count: int
    limit: int
    keyword: str  # the schema's maxItems or maxProperties that was passed; "" for the overall cap
    schema: Mapping[str, Any]  # the container's schema (its description words the hint)


def forget_valid() -> None:
    """Empty `_VALID` once a document's shape check is done (as `within_bounds` does before one).

    Why: kept until the next check, its marshal bytes (0.9 MB at many-pools 10x, 4,000 values) stayed alive through
    the compile that follows validation, inside `compile -d -`'s peak memory. Forgetting costs nothing: a later check
    starts afresh anyway."""
    _VALID.clear()


def within_bounds(data: Any, cap: int, *, guided: bool = True) -> tuple[Any, list[Overflow]]:
    """`data` with every list and mapping cut to the entries the blueprint schema allows (with guided=False, for a
    document of another schema: only to `cap`), and to `cap` everywhere; the cuts.

    Containers that need no cut are shared with `data`, not copied."""
    overflows: list[Overflow] = []
    _VALID.clear()  # a new document: remember what it repeats, not what earlier documents held (see _VALID)
    return _bounded(data, load_schema() if guided else None, (), cap, overflows), overflows


def _bounded(value: Any, schema: Any, path: JsonPath, cap: int, overflows: list[Overflow]) -> Any:
    parts = _parts(schema)
    if isinstance(value, dict):
        limit, keyword = _limit(parts, "maxProperties", cap)
        kept: dict[str, Any] | None = None
        if len(value) > limit:
            overflows.append(Overflow(path, len(value), limit, keyword, parts[0] if parts else {}))
            kept = dict(itertools.islice(value.items(), limit))
        entries = kept if kept is not None else value
        for key, item in entries.items():
            if isinstance(item, dict | list):
                bounded = _bounded(item, _property(parts, key), (*path, key), cap, overflows)
                if bounded is not item:
                    kept = kept if kept is not None else dict(value)
                    kept[key] = bounded
        return kept if kept is not None else value
    if isinstance(value, list):
        limit, keyword = _limit(parts, "maxItems", cap)
        cut: list[Any] | None = None
        if len(value) > limit:
            overflows.append(Overflow(path, len(value), limit, keyword, parts[0] if parts else {}))
            cut = value[:limit]
        items = cut if cut is not None else value
        item_schema = _items(parts)
        for index, item in enumerate(items):
            if isinstance(item, dict | list):
                bounded = _bounded(item, item_schema, (*path, index), cap, overflows)
                if bounded is not item:
                    cut = cut if cut is not None else list(value)
                    cut[index] = bounded
        return cut if cut is not None else value
    return value


def _parts(schema: Any) -> list[Mapping[str, Any]]:
    """A schema and the schemas its `$ref`s point to: every one of them applies."""
    parts: list[Mapping[str, Any]] = []
    while isinstance(schema, dict) and len(parts) < 16:
        parts.append(schema)
        ref = schema.get("$ref")
        if not isinstance(ref, str):
            break
        schema = lookup(ref).contents
    return parts


def _limit(parts: list[Mapping[str, Any]], keyword: str, cap: int) -> tuple[int, str]:
    bounds = [part[keyword] for part in parts if isinstance(part.get(keyword), int)]
    bound = min(bounds, default=cap)
    return (bound, keyword) if bound <= cap else (cap, "")


def _property(parts: list[Mapping[str, Any]], key: str) -> Any:
    for part in parts:
        properties = part.get("properties")
        if isinstance(properties, dict) and key in properties:
            return properties[key]
    if any("patternProperties" in part for part in parts):
        return None  # which schema applies depends on the patterns: no bound is assumed
    for part in parts:
        extra = part.get("additionalProperties")
        if isinstance(extra, dict):
            return extra
    return None


def _items(parts: list[Mapping[str, Any]]) -> Any:
    for part in parts:
        items = part.get("items")
        if isinstance(items, dict) and "prefixItems" not in part:
            return items
    return None

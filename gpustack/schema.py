"""The blueprint's shape: JSON Schema validation, reported as gpustack `Diagnostic`s.

The schema (gpustack/data/blueprint.schema.json) owns the shape; this module only turns
jsonschema's errors into messages a person can act on: the path in words, expected vs got,
what the user actually wrote, and one hint (did you mean, quote it, the field's purpose).
The schema is designed for this: discriminated variants use if/then (never oneOf), forbidden
fields are `{"not": {}, "description": why}` so the error keeps its path and carries its reason,
and every pattern lives in `$defs` with a description whose first sentence says the format in words.
"""

from __future__ import annotations

import difflib
import functools
import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from importlib import resources
from typing import Any

from jsonschema import Draft202012Validator, ValidationError, validators
from jsonschema.protocols import Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from gpustack.codes import (
    BAD_FORMAT,
    COMBINATION,
    DUPLICATE_ITEM,
    MISSING_FIELD,
    NOT_ALLOWED_VALUE,
    OUT_OF_RANGE,
    UNKNOWN_FIELD,
    WRONG_TYPE,
)
from gpustack.diagnostic import Diagnostic, JsonPath, Severity, Span, format_json_path, sort_diagnostics
from gpustack.load import Document

# What keyword functions receive: the class validators.extend builds from Draft202012Validator. The
# `Validator` protocol lacks `descend`, which every concrete validator class has.
KeywordValidator = Draft202012Validator

SCHEMA_FILE = "blueprint.schema.json"

Typos = frozenset[tuple[JsonPath, str]]

SHAPE_CODES = frozenset(
    {UNKNOWN_FIELD, MISSING_FIELD, WRONG_TYPE, NOT_ALLOWED_VALUE, BAD_FORMAT, OUT_OF_RANGE, DUPLICATE_ITEM, COMBINATION}
)

# Fields people write by habit from other tools; difflib cannot guess these from spelling alone.
_SYNONYMS: Mapping[str, tuple[str, str]] = {
    "tolerations": ("taints", "a pool declares taints; gpustack adds the matching tolerations to its workloads"),
    "nodeselector": ("labels", "a pool's labels are what its workloads select on"),
    "gpus": ("gpu", ""),
    "limits": ("resources", ""),
    "requests": ("resources", ""),
    "nodenames": ("nodes", ""),
}

_TYPE_WORDS: Mapping[str, str] = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "object": "a mapping",
    "array": "a list",
    "null": "null",
}

_RANGE_KEYWORDS = frozenset(
    {
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minItems",
        "maxItems",
        "minLength",
        "maxLength",
        "minProperties",
        "maxProperties",
    }
)

# A plain YAML scalar as written: up to whitespace, a flow separator or a comment.
_SCALAR_TOKEN = re.compile(r"[^\s,\]}#]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


@functools.cache
def load_schema() -> dict[str, Any]:
    """The blueprint JSON Schema, parsed once. Callers must not mutate it."""
    text = resources.files("gpustack").joinpath("data", SCHEMA_FILE).read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def check_shape(doc: Document) -> list[Diagnostic]:
    """Every shape error in the document, sorted by position; [] when the shape is right."""
    oversized = list(_oversized(doc))
    if oversized:
        return oversized  # the schema would walk every entry of them first: seconds per hundred thousand
    errors = list(_validator().iter_errors(doc.data))
    # `efect: NoSchedule` is one mistake, not two: the unknown-field error's did-you-mean already
    # covers the "missing effect" that the same typo causes.
    typos = frozenset(fix for error in errors for fix in _typo_fixes(error))
    forbidden = {tuple(error.absolute_path) for error in errors if _is_forbidden(error)}
    found = [diagnostic for error in errors for diagnostic in _convert(error, doc, typos)]
    return sort_diagnostics([*_collapse(found, forbidden), *_non_finite(doc)])


MAX_ENTRIES = 10_000  # no list or mapping a person writes in a blueprint comes near it (nodes per pool: 10,000)


def _oversized(doc: Document) -> Iterator[Diagnostic]:
    stack: list[tuple[JsonPath, Any]] = [((), doc.data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, dict | list) and len(value) > MAX_ENTRIES:
            yield Diagnostic(
                OUT_OF_RANGE,
                Severity.ERROR,
                f"{_name(path) if path else 'the document'} has {len(value)} entries: at most {MAX_ENTRIES} allowed",
                doc.span(path),
                path,
                "a blueprint describes a cluster; generate what runs in it from the blueprint, not into it",
            )
        elif isinstance(value, dict):
            stack.extend(((*path, key), item) for key, item in value.items())
        elif isinstance(value, list):
            stack.extend(((*path, index), item) for index, item in enumerate(value))


def _non_finite(doc: Document) -> Iterator[Diagnostic]:
    """YAML's .nan and .inf: JSON Schema's bounds let NaN through (every comparison with it is false)."""
    stack: list[tuple[JsonPath, Any]] = [((), doc.data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, dict):
            stack.extend(((*path, key), item) for key, item in value.items())
        elif isinstance(value, list):
            stack.extend(((*path, index), item) for index, item in enumerate(value))
        elif isinstance(value, float) and not math.isfinite(value):
            yield Diagnostic(
                OUT_OF_RANGE,
                Severity.ERROR,
                f"{_name(path) if path else 'the document'} is {value}: only finite numbers are allowed",
                doc.span(path),
                path,
                "write a number such as 1.5",
            )


# --- the validator -----------------------------------------------------------------------------


@functools.cache
def _compiled(pattern: str) -> re.Pattern[str]:
    # JSON Schema patterns are ECMA-262, where a final `$` matches only at the very end. Python's `$`
    # also matches before a trailing newline, so "prod-ai\n" would pass as a DNS label; `\Z` restores ECMA.
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        pattern = pattern[:-1] + r"\Z"
    return re.compile(pattern)


def _ecma_pattern(validator: KeywordValidator, pattern: str, instance: Any, schema: Mapping[str, Any]) -> Iterator[Any]:
    if validator.is_type(instance, "string") and not _compiled(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


@functools.cache
def _lookup(ref: str) -> Any:  # referencing's Resolved; the class is not exported
    # Every $ref in the schema is local ("#/$defs/..."), so one lookup per ref string serves every
    # use. jsonschema resolves each $ref afresh for every instance it meets, which is a third of
    # the time on a large blueprint.
    schema = load_schema()
    resource = Resource.from_contents(schema, default_specification=DRAFT202012)
    return Registry().with_resource(schema["$id"], resource).resolver(base_uri=schema["$id"]).lookup(ref)


def _cached_ref(validator: KeywordValidator, ref: str, instance: Any, schema: Mapping[str, Any]) -> Iterator[Any]:
    resolved = _lookup(ref)
    if _passes_leaf(resolved.contents, instance):
        return
    yield from validator.descend(instance, resolved.contents, resolver=resolved.resolver)


# --- the leaf fast path --------------------------------------------------------------------------
# Most of a large blueprint is leaves: node names, pool and namespace names, quantities. jsonschema
# builds a validator for every one (descend/evolve), which is most of its time. A leaf schema (a
# type, a pattern, lengths, bounds, an enum of strings) is checked here in one step instead; only a
# value that passes skips the descent, so every error still comes from jsonschema, with its paths.

_LEAF_KEYWORDS = frozenset(
    {"$ref", "type", "pattern", "minLength", "maxLength", "minimum", "maximum", "enum"}
    | {"description", "title", "examples", "default", "$comment", "deprecated"}
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
        target = _lookup(schema["$ref"]).contents
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
            pattern = _compiled(part["pattern"])
        min_length = max(min_length, part.get("minLength", 0))
        max_length = min(max_length, part.get("maxLength", float("inf")))
        minimum = max(minimum, part.get("minimum", float("-inf")))
        maximum = min(maximum, part.get("maximum", float("inf")))
        if "enum" in part:
            if enum is not None or not all(isinstance(value, str) for value in part["enum"]):
                return None
            enum = frozenset(part["enum"])
    return types, pattern, min_length, max_length, minimum, maximum, enum


def _passes_leaf(schema: Any, instance: Any) -> bool:
    """True only when `schema` is a leaf schema and `instance` surely satisfies it."""
    if not isinstance(schema, dict):
        return False
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


def _leaf_properties(
    validator: KeywordValidator, properties: Mapping[str, Any], instance: Any, schema: Mapping[str, Any]
) -> Iterator[Any]:
    """The 2020-12 `properties` keyword, with passing leaves skipped."""
    if not validator.is_type(instance, "object"):
        return
    for name, subschema in properties.items():
        if name in instance and not _passes_leaf(subschema, instance[name]):
            yield from validator.descend(instance[name], subschema, path=name, schema_path=name)


def _leaf_items(validator: KeywordValidator, items: Any, instance: Any, schema: Mapping[str, Any]) -> Iterator[Any]:
    """The 2020-12 `items` keyword (this schema has no prefixItems and no `items: false`), passing leaves skipped."""
    if not validator.is_type(instance, "array"):
        return
    if "prefixItems" in schema or isinstance(items, bool):
        yield from _STANDARD_ITEMS(validator, items, instance, schema)
        return
    for index, item in enumerate(instance):
        if not _passes_leaf(items, item):
            yield from validator.descend(instance=item, schema=items, path=index)


_STANDARD_ITEMS = Draft202012Validator.VALIDATORS["items"]


def _decided_if(validator: KeywordValidator, if_schema: Any, instance: Any, schema: Mapping[str, Any]) -> Iterator[Any]:
    """The 2020-12 `if` keyword, with the condition decided here where it is simple (a property's const or enum of
    strings, required, anyOf, not). jsonschema decides it by collecting an error, and the errors of every `if`
    that fails form cycles for the garbage collector: 6,000 of them on a 1,000-pool blueprint."""
    holds = _holds(if_schema, instance)
    if holds is None:
        holds = validator.evolve(schema=if_schema).is_valid(instance)
    if holds:
        if "then" in schema:
            yield from validator.descend(instance, schema["then"], schema_path="then")
    elif "else" in schema:
        yield from validator.descend(instance, schema["else"], schema_path="else")


_CONDITION_KEYWORDS = frozenset({"properties", "required", "anyOf", "not", "description", "$comment"})


def _holds(schema: Any, instance: Any) -> bool | None:
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
        branches = [_holds(branch, instance) for branch in schema["anyOf"]]
        verdicts.append(True if True in branches else None if None in branches else False)
    if "not" in schema:
        negated = _holds(schema["not"], instance)
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
def _validator() -> Validator:
    # Built once: constructing the validator costs far more than checking a blueprint.
    cls = validators.extend(
        Draft202012Validator,
        {
            "pattern": _ecma_pattern,
            "$ref": _cached_ref,
            "properties": _leaf_properties,
            "items": _leaf_items,
            "if": _decided_if,
        },
    )
    validator: Validator = cls(load_schema())
    return validator


# --- error -> diagnostic -----------------------------------------------------------------------
# jsonschema's stubs allow `Unset` on every field of a ValidationError, for errors built by hand. Each
# error here comes from a validator, which sets them all; these read them with the types that leaves.


def _keyword(error: ValidationError) -> str:
    return error.validator if isinstance(error.validator, str) else ""


def _value(error: ValidationError) -> Any:
    """The failing keyword's value in the schema (`required`'s list, `minimum`'s bound)."""
    return error.validator_value


def _instance(error: ValidationError) -> Any:
    """The part of the document the keyword failed on."""
    return error.instance


def _schema_of(error: ValidationError) -> Mapping[str, Any]:
    # A boolean schema (`false`) is no mapping and has no words to offer.
    return error.schema if isinstance(error.schema, Mapping) else {}


def _convert(error: ValidationError, doc: Document, typos: Typos = frozenset()) -> list[Diagnostic]:
    path: JsonPath = tuple(error.absolute_path)
    schema_path = tuple(error.absolute_schema_path)
    keyword = _keyword(error)
    if "propertyNames" in schema_path:
        # propertyNames errors carry the map's path and the offending key as the instance.
        return [_bad_key(error, doc, path)]
    if keyword == "additionalProperties":
        return list(_unknown_fields(error, doc, path))
    if keyword == "required":
        if _in_branch(schema_path, 2):
            return list(_conditionally_required(error, doc, path, schema_path))
        return list(_missing_fields(error, doc, path, typos))
    if _is_forbidden(error):
        return [_forbidden(error, doc, path, schema_path)]
    if keyword == "not" and isinstance(_value(error), Mapping) and "required" in _value(error):
        return [_exclusive(error, doc, path)]
    if keyword == "type":
        return [_wrong_type(doc, path, _instance(error), _value(error), _schema_of(error))]
    if keyword in ("enum", "const"):
        return [_not_allowed(error, doc, path)]
    if keyword == "pattern":
        return [_bad_format(doc, path, _instance(error), _schema_of(error), key=False)]
    if keyword in _RANGE_KEYWORDS:
        return [_out_of_range(error, doc, path, key=None)]
    if keyword == "uniqueItems":
        return [_duplicate(error, doc, path)]
    if keyword in ("anyOf", "oneOf"):
        return _alternatives(error, doc, path, typos)
    # A keyword this module has no words for yet: still a located error, never a crash.
    return [_diag(COMBINATION, f"{_name(path)}: {error.message}", doc.span(path), path, _about(error.schema))]


def _unknown_fields(error: ValidationError, doc: Document, path: JsonPath) -> Iterator[Diagnostic]:
    allowed = list(_schema_of(error).get("properties", {}))
    patterns = [re.compile(p) for p in _schema_of(error).get("patternProperties", {})]
    for key in _instance(error):
        if key in allowed or any(p.search(key) for p in patterns):
            continue
        at = (*path, key)
        yield _diag(
            UNKNOWN_FIELD, f"unknown field '{key}' {_in(path)}", _key_span(doc, at), at, _suggest_field(key, allowed)
        )


def _suggest_field(key: str, allowed: Sequence[str]) -> str:
    field, why = _closest_field(key, allowed)
    if field is None:
        return "allowed fields here: " + ", ".join(allowed)
    return f"did you mean '{field}'?" + (f" ({why})" if why else "")


def _closest_field(key: str, allowed: Sequence[str]) -> tuple[str | None, str]:
    close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
    if close:
        return close[0], ""
    synonym = difflib.get_close_matches(key.lower(), list(_SYNONYMS), n=1, cutoff=0.8)
    if synonym and _SYNONYMS[synonym[0]][0] in allowed:
        return _SYNONYMS[synonym[0]]
    return None, ""


def _typo_fixes(error: ValidationError) -> Iterator[tuple[JsonPath, str]]:
    """(object path, required field) pairs that an unknown key in that object is a misspelling of."""
    if _keyword(error) != "additionalProperties" or not isinstance(_instance(error), Mapping):
        return
    allowed = list(_schema_of(error).get("properties", {}))
    required = _schema_of(error).get("required", [])
    for key in _instance(error):
        if key not in allowed:
            field, _ = _closest_field(key, allowed)
            if field is not None and field in required and field not in _instance(error):
                yield tuple(error.absolute_path), field


def _missing_fields(error: ValidationError, doc: Document, path: JsonPath, typos: Typos) -> Iterator[Diagnostic]:
    # jsonschema yields one `required` error per missing field without naming it as data; computing the
    # whole missing list for each and de-duplicating later is simpler than parsing its message.
    properties = _schema_of(error).get("properties", {})
    for field in _value(error):
        if field in _instance(error) or (path, field) in typos:
            continue
        yield _diag(
            MISSING_FIELD,
            f"missing required field '{field}' {_in(path)}",
            _object_span(doc, path),
            path,
            _purpose(field, properties),
        )


def _conditionally_required(
    error: ValidationError, doc: Document, path: JsonPath, schema_path: JsonPath
) -> Iterator[Diagnostic]:
    branch = schema_path[:-1]
    owner = _schema_at(_owner_path(branch))
    condition = _condition(branch, _instance(error))
    for field in _value(error):
        if field in _instance(error):
            continue
        message = f"{_name(path)} needs '{field}' when {condition}"
        yield _diag(COMBINATION, message, _object_span(doc, path), path, _purpose(field, owner.get("properties", {})))


def _forbidden(error: ValidationError, doc: Document, path: JsonPath, schema_path: JsonPath) -> Diagnostic:
    field, parent = path[-1], path[:-1]
    branch = schema_path[:-3]
    condition = _condition(branch, _value_at(doc.data, parent))
    message = f"{field} is not allowed {_in(parent)} when {condition}"
    return _diag(COMBINATION, message, _key_span(doc, path), path, _about(_schema_at(schema_path[:-1])))


def _exclusive(error: ValidationError, doc: Document, path: JsonPath) -> Diagnostic:
    fields: list[str] = list(_value(error)["required"])
    # Point at whichever of them was written last: that is the one the user added on top.
    last = max(fields, key=lambda f: _position_key(doc, (*path, f)))
    message = f"{_join(fields, 'and')} cannot be used together {_in(path)}"
    hint = _value(error).get("description") or "give only one of them"
    return _diag(COMBINATION, message, _key_span(doc, (*path, last)), (*path, last), hint)


def _alternatives(error: ValidationError, doc: Document, path: JsonPath, typos: Typos) -> list[Diagnostic]:
    branches: list[Any] = list(_value(error))
    if all(isinstance(b, Mapping) and set(b) == {"required"} for b in branches):
        # anyOf: [{required: [a]}, {required: [b]}]: "give at least one of a, b".
        fields = [f for b in branches for f in b["required"]]
        properties = _schema_of(error).get("properties", {})
        purposes = [f"{f}: {_first_sentence(_description(properties.get(f))).rstrip('.')}" for f in fields]
        message = f"{_name(path)} needs {_join(fields, 'or')}"
        return [_diag(COMBINATION, message, _object_span(doc, path), path, "; ".join(purposes))]
    # Typed alternatives (a string or a list of them): report the errors of the branch whose type fits
    # what was written, instead of "is not valid under any of the given schemas".
    by_branch: dict[str | int, list[ValidationError]] = {}
    for sub in error.context or ():
        by_branch.setdefault(sub.relative_schema_path[0], []).append(sub)
    fitting = [
        errs for errs in by_branch.values() if not any(e.validator == "type" and not e.relative_path for e in errs)
    ]
    if fitting:
        # Where several branches fit the type, the first (the schema's preferred form) speaks.
        return [d for sub in fitting[0] for d in _convert(sub, doc, typos)]
    types = [
        t
        for errs in by_branch.values()
        for e in errs
        if e.validator == "type" and not e.relative_path
        for t in _as_list(_value(e))
    ]
    return [_wrong_type(doc, path, _instance(error), types, _schema_of(error))]


def _wrong_type(doc: Document, path: JsonPath, value: Any, expected: Any, schema: Mapping[str, Any]) -> Diagnostic:
    wanted = list(dict.fromkeys(_as_list(expected)))
    expected_words = _join([_TYPE_WORDS.get(t, t) for t in wanted], "or")
    message = f"wrong type for {_name(path)}: expected {expected_words}, got {_got(doc, path, value)}"
    hint = _type_hint(doc, path, value, wanted, schema) or _about(schema)
    return _diag(WRONG_TYPE, message, doc.span(path), path, hint)


def _type_hint(
    doc: Document, path: JsonPath, value: Any, wanted: Sequence[str], schema: Mapping[str, Any]
) -> str | None:
    if value is None:
        return "the value is empty: fill it in or delete the line"
    # Suggest a rewrite only when the rewritten value would pass: quoting `true` is no fix where
    # the field wants one of uuid/index.
    written = _written(doc, path, value)
    if "string" in wanted and isinstance(value, bool | int | float) and _would_pass(schema, written):
        # YAML typed it (true, 1.30 -> 1.3); quoting keeps exactly what was written.
        return f'quote it: "{written}"'
    if isinstance(value, str):
        if "boolean" in wanted and value.lower() in ("yes", "no", "on", "off", "y", "n"):
            return "write true or false: yes/no/on/off are plain strings in a blueprint"
        number = _as_number(value)
        if number is not None and _would_pass(schema, number):
            return f"remove the quotes: {value}"
        if "array" in wanted and _would_pass(schema, [value]):
            return f"write a list: [{value}]"
    allowed = schema.get("enum")
    if allowed:
        return "allowed values: " + ", ".join(map(_plain, allowed))
    return None


def _would_pass(schema: Mapping[str, Any], value: Any) -> bool:
    # evolve() keeps the validator's $ref resolution, so subschemas that refer to $defs work.
    return bool(_validator().evolve(schema=schema).is_valid(value))


def _not_allowed(error: ValidationError, doc: Document, path: JsonPath) -> Diagnostic:
    allowed = list(_value(error)) if _keyword(error) == "enum" else [_value(error)]
    value = _instance(error)
    expected = (
        f"expected {_show(allowed[0])}" if len(allowed) == 1 else "expected one of " + ", ".join(map(str, allowed))
    )
    message = f"invalid value {_got_value(doc, path, value)} for {_name(path)}: {expected}"
    hint = _about(error.schema)
    if isinstance(value, str) and len(allowed) > 1:  # one allowed value: the message names it already
        words = [a for a in allowed if isinstance(a, str)]
        # Compare case-insensitively so `noschedule` finds NoSchedule, but suggest the real spelling.
        lowered = {a.lower(): a for a in words}
        close = difflib.get_close_matches(value.lower(), list(lowered), n=1, cutoff=0.6)
        if close:
            hint = f"did you mean {_show(lowered[close[0]])}?"
    return _diag(NOT_ALLOWED_VALUE, message, doc.span(path), path, hint)


def _bad_format(doc: Document, path: JsonPath, value: Any, schema: Mapping[str, Any], *, key: bool) -> Diagnostic:
    words = _first_sentence(schema.get("description", "")).rstrip(".")
    words = words[:1].lower() + words[1:] if words else f"matching {schema.get('pattern')}"
    subject = f"key {_show(value)} {_in(path)}" if key else f"{_name(path)} {_show(value)}"
    message = f"{subject} is not {words}"
    at = (*path, value) if key else path
    span = _key_span(doc, at) if key else doc.span(path)
    return _diag(BAD_FORMAT, message, span, at, _format_hint(schema, value) or _examples(schema) or _about(schema))


def _format_hint(schema: Mapping[str, Any], value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    title = schema.get("title")
    if title in ("DNS-1123 label", "DNS-1123 subdomain"):
        keep = "a-z0-9." if title == "DNS-1123 subdomain" else "a-z0-9"
        fixed = re.sub(f"[^{keep}]+", "-", value.lower()).strip("-.")
        fixed = fixed[:63].rstrip("-") if title == "DNS-1123 label" else fixed[:253]
        if fixed and _compiled(schema["pattern"]).search(fixed):
            return f"try '{fixed}'"
    if title == "Kubernetes minor version":
        match = re.match(r"^v?(1\.[0-9]{1,2})", value)
        if match:
            return f'write the minor version only: "{match.group(1)}"'
    return None


def _bad_key(error: ValidationError, doc: Document, path: JsonPath) -> Diagnostic:
    if _keyword(error) == "pattern":
        return _bad_format(doc, path, _instance(error), _schema_of(error), key=True)
    if _keyword(error) in _RANGE_KEYWORDS:
        return _out_of_range(error, doc, path, key=_instance(error))
    at = (*path, _instance(error))
    message = f"key {_show(_instance(error))} {_in(path)}: {error.message}"
    return _diag(COMBINATION, message, _key_span(doc, at), at, _about(error.schema))


def _out_of_range(error: ValidationError, doc: Document, path: JsonPath, key: str | None) -> Diagnostic:
    limit, value, keyword = _value(error), _instance(error), _keyword(error)
    subject = f"key {_show(key)} {_in(path)}" if key is not None else _name(path)
    if keyword in ("minItems", "minLength", "minProperties") and limit == 1:
        message = f"{subject} must not be empty"
    elif keyword in ("minItems", "maxItems"):
        bound = "at least" if keyword == "minItems" else "at most"
        message = f"{subject} must have {bound} {limit} item{'s' * (limit != 1)}, got {len(value)}"
    elif keyword in ("minProperties", "maxProperties"):
        bound = "at least" if keyword == "minProperties" else "at most"
        message = f"{subject} must have {bound} {limit} entr{'ies' if limit != 1 else 'y'}, got {len(value)}"
    elif keyword in ("minLength", "maxLength"):
        bound = "at least" if keyword == "minLength" else "at most"
        message = f"{subject} must be {bound} {limit} characters long, got {len(value)}"
    else:
        bound = {
            "minimum": "at least",
            "maximum": "at most",
            "exclusiveMinimum": "greater than",
            "exclusiveMaximum": "less than",
        }[keyword]
        message = f"{subject} must be {bound} {limit}, got {_written(doc, path, value)}"
    at = (*path, key) if key is not None else path
    span = _key_span(doc, at) if key is not None else doc.span(path)
    return _diag(OUT_OF_RANGE, message, span, at, _about(error.schema))


def _duplicate(error: ValidationError, doc: Document, path: JsonPath) -> Diagnostic:
    seen: dict[str, int] = {}
    first, again = 0, 0
    for index, item in enumerate(_instance(error)):
        # json.dumps gives unhashable items (maps, lists) an identity; sort_keys makes key order irrelevant.
        identity = json.dumps(item, sort_keys=True, default=str)
        if identity in seen:
            first, again = seen[identity], index
            break
        seen[identity] = index
    at = (*path, again)
    message = (
        f"duplicate item {_got_value(doc, at, _instance(error)[again])} in {_name(path)} (items {first} and {again})"
    )
    return Diagnostic(
        DUPLICATE_ITEM,
        Severity.ERROR,
        message,
        doc.span(at),
        at,
        "each item may appear only once",
        related=(doc.span((*path, first)),),
    )


def _collapse(found: Iterable[Diagnostic], forbidden: set[JsonPath]) -> list[Diagnostic]:
    """One report per problem: drop exact repeats and the echoes of a more basic error."""
    unique = list({(d.code, d.path, d.message): d for d in found}.values())
    # A value of the wrong type also fails its enum/pattern/range; the type error says it all.
    mistyped = {d.path for d in unique if d.code == WRONG_TYPE}
    kept = []
    for d in unique:
        if d.code != WRONG_TYPE and d.path in mistyped:
            continue
        # A field that must not be there at all: whatever else is wrong with it does not matter.
        if any(d.path[: len(f)] == f and not (d.path == f and d.code == COMBINATION) for f in forbidden):
            continue
        kept.append(d)
    return kept


def _is_forbidden(error: ValidationError) -> bool:
    """`properties: {field: {"not": {}}}` inside an if/then branch: the field may not be given here."""
    return _keyword(error) == "not" and _value(error) == {} and _in_branch(tuple(error.absolute_schema_path), 4)


# --- schema navigation ---------------------------------------------------------------------------


def _schema_at(schema_path: Iterable[str | int]) -> Any:
    """The subschema at an absolute schema path. jsonschema's paths skip `$ref`, so follow one
    whenever the next step is not in the current node."""
    root = load_schema()
    node: Any = root
    for step in schema_path:
        while isinstance(node, Mapping) and step not in node and "$ref" in node:
            node = _resolve(node["$ref"])
        node = node[step]
    return _resolved(node)


def _resolved(node: Any) -> Any:
    # A property written as {"$ref": ..., "description": ...} stands for the schema it refers to.
    while isinstance(node, Mapping) and "$ref" in node and "properties" not in node:
        node = _resolve(node["$ref"])
    return node


def _resolve(ref: str) -> Any:
    node: Any = load_schema()
    for part in ref.removeprefix("#/").split("/"):
        node = node[part]
    return node


def _in_branch(schema_path: JsonPath, depth: int) -> bool:
    """Whether the keyword `depth` steps from the end of the path sits in an if/then(/else) branch."""
    return len(schema_path) > depth and schema_path[-depth] in ("then", "else")


def _owner_path(branch: JsonPath) -> JsonPath:
    # [..., object schema..., "allOf", i, "then"] -> the object schema the conditional belongs to
    return branch[:-3] if len(branch) >= 3 and branch[-3] == "allOf" else branch[:-1]


def _condition(branch: JsonPath, instance: Any) -> str:
    """The if-condition of a then/else branch in words, with the values the document actually has."""
    rule = _schema_at(branch[:-1])
    negate = branch[-1] == "else"
    parts = []
    for field, sub in rule.get("if", {}).get("properties", {}).items():
        actual = instance.get(field) if isinstance(instance, Mapping) else None
        if actual is not None and not negate:
            parts.append(f"{field} is {actual}")
        elif "const" in sub:
            parts.append(f"{field} is {'not ' if negate else ''}{sub['const']}")
        else:
            parts.append(f"{field} is {'not ' if negate else ''}one of {', '.join(map(str, sub.get('enum', [])))}")
    return " and ".join(parts) or "this combination is used"


def _description(schema: Any) -> str:
    if not isinstance(schema, Mapping):
        return ""
    if "description" in schema:
        return str(schema["description"])
    if "$ref" in schema:
        return _description(_resolve(schema["$ref"]))
    return ""


def _purpose(field: str, properties: Mapping[str, Any]) -> str:
    purpose = _first_sentence(_description(properties.get(field)))
    return f"'{field}': {purpose}" if purpose else f"add '{field}'"


def _about(schema: Any) -> str:
    """What a field is, for hints that have no computed fix."""
    return (
        _first_sentence(_description(schema))
        or _examples(schema)
        or "`gpustack schema` prints every field with its description"
    )


def _examples(schema: Any) -> str:
    examples = schema.get("examples") if isinstance(schema, Mapping) else None
    return (
        "for example: " + ", ".join(e if isinstance(e, str) else json.dumps(e) for e in examples[:3])
        if examples
        else ""
    )


def _first_sentence(text: str) -> str:
    return _SENTENCE_END.split(text.strip(), maxsplit=1)[0] if text else ""


# --- words and positions -------------------------------------------------------------------------


def _name(path: JsonPath) -> str:
    """The path in words: `nodePools[1].taints[0]`. Everything users write lives under spec, so the
    `spec.` prefix is left out; the full path is in Diagnostic.path."""
    if not path:
        return "the blueprint"
    shown = path[1:] if path[0] == "spec" and len(path) > 1 else path
    return format_json_path(shown).removeprefix("$").removeprefix(".")


def _in(path: JsonPath) -> str:
    return f"in {_name(path)}" if path else "at the top level"


def _join(words: Sequence[str], conjunction: str) -> str:
    if len(words) <= 1:
        return "".join(words)
    return f"{', '.join(words[:-1])} {conjunction} {words[-1]}"


def _show(value: Any) -> str:
    return repr(value) if isinstance(value, str) else _plain(value)


def _plain(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return str(value)


def _written(doc: Document, path: JsonPath, value: Any) -> str:
    """What the user typed for a scalar: `1.30`, not the float 1.3 YAML made of it."""
    if isinstance(value, str):
        return value
    token = _source_token(doc, path, value)
    return token if token is not None else _plain(value)


def _source_token(doc: Document, path: JsonPath, value: Any) -> str | None:
    position = doc.value_positions.get(path)
    if position is None:
        return None
    match = _SCALAR_TOKEN.match(doc.source_line(position.line), max(position.column - 1, 0))
    return match.group(0) if match and _same_scalar(match.group(0), value) else None


def _same_scalar(token: str, value: Any) -> bool:
    # Only trust the source text when it really is this value (flow style and odd layouts can fool the token).
    if value is None:
        return token in ("null", "Null", "NULL", "~")
    if isinstance(value, bool):
        return token.lower() == str(value).lower()
    if isinstance(value, int | float):
        try:
            return float(token) == float(value)
        except ValueError:
            return _is_int_literal(token, value)
    return False


def _is_int_literal(token: str, value: int | float) -> bool:
    try:
        return int(token, 0) == value  # 0x1F, 0o17
    except ValueError:
        return False


def _got(doc: Document, path: JsonPath, value: Any) -> str:
    if value is None:
        # `key:` with nothing after it is null too, but "an empty value" is what the user sees.
        return "null" if _source_token(doc, path, value) is not None else "an empty value"
    if isinstance(value, bool):
        return f"boolean {_written(doc, path, value)}"
    if isinstance(value, int):
        return f"integer {_written(doc, path, value)}"
    if isinstance(value, float):
        return f"number {_written(doc, path, value)}"
    if isinstance(value, str):
        return f"string {value!r}"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__


def _got_value(doc: Document, path: JsonPath, value: Any) -> str:
    return repr(value) if isinstance(value, str) else _written(doc, path, value)


def _as_number(text: str) -> int | float | None:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return None


def _as_list(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def _value_at(data: Any, path: JsonPath) -> Any:
    for step in path:
        data = data[step]
    return data


def _key_span(doc: Document, path: JsonPath) -> Span:
    """The span of the mapping key that introduces `path`, or of the value when it has no key (list items)."""
    if path and isinstance(path[-1], str) and path in doc.key_positions:
        return doc.span(path, key=True)
    return doc.span(path)


def _object_span(doc: Document, path: JsonPath) -> Span:
    # `gpu:` is where a reader looks for a block's missing field, not the block's first child.
    return _key_span(doc, path)


def _position_key(doc: Document, path: JsonPath) -> tuple[int, int]:
    position = doc.key_positions.get(path) or doc.value_positions.get(path)
    return (position.line, position.column) if position else (0, 0)


def _diag(code: str, message: str, span: Span, path: JsonPath, hint: str) -> Diagnostic:
    # Every shape diagnostic carries a hint: the fix when one can be computed, else what the field is.
    return Diagnostic(code, Severity.ERROR, message, span, path, hint)

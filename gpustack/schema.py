"""The blueprint's shape: JSON Schema validation, reported as gpustack `Diagnostic`s.

The schema (gpustack/data/blueprint.schema.json) owns the shape; this module runs it (through
`gpustack.schema_fast`, which spares jsonschema work that cannot produce an error) and turns
jsonschema's errors into messages a person can act on: the path in words, expected vs got,
what the user actually wrote, and one hint (did you mean, quote it, the field's purpose); the
phrases themselves are in `gpustack.schema_words`. Two limits are checked before jsonschema
runs, because it would spend seconds on what one look refuses: no list or mapping over
MAX_ENTRIES, and no .nan or .inf (its bounds let NaN through).
The schema is designed for this: discriminated variants use if/then (never oneOf), forbidden
fields are `{"not": {}, "description": why}` so the error keeps its path and carries its reason,
and every pattern lives in `$defs` with a description whose first sentence says the format in words.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from gpustack import schema_words as words
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
from gpustack.diagnostic import Diagnostic, JsonPath, Severity, sort_diagnostics
from gpustack.load import Document
from gpustack.schema_file import compiled_pattern, load_schema
from gpustack.schema_predicate import surely_valid

if TYPE_CHECKING:  # jsonschema is imported only when the compiled schema cannot vouch for the data (check_shape)
    from jsonschema import ValidationError
    from jsonschema.protocols import Validator

    from gpustack.schema_fast import Overflow

__all__ = ["MAX_ENTRIES", "SHAPE_CODES", "check_shape", "load_schema"]

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

# Close in spelling, never meant: a `namespace` on a Secret's reference is not a misspelt `name` (there is none).
_NOT_TYPOS: frozenset[tuple[str, str]] = frozenset({("namespace", "name")})

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


def check_shape(doc: Document, validator: Validator | None = None) -> list[Diagnostic]:
    """Every shape error in the document, sorted by position; [] when the shape is right.

    `validator`: another schema's (a fleet file's), worded the same way; the blueprint's by default."""
    if validator is None and surely_valid(doc.data, MAX_ENTRIES):
        return []  # the compiled schema's verdict: nothing for jsonschema to find (gpustack/schema_predicate.py)
    from gpustack.schema_fast import forget_valid, shape_validator, within_bounds  # jsonschema: only from here on

    # A list or mapping over its bound is cut to it first (reported once), so jsonschema never walks the thousands
    # of entries a blueprint cannot have: at most a bound's worth of each is checked, and worded as before.
    data, overflows = within_bounds(doc.data, MAX_ENTRIES, guided=validator is None)
    try:
        errors = list((validator or shape_validator()).iter_errors(data))
    finally:
        forget_valid()  # what the walk remembered is this document's alone: not kept through compile
    # `efect: NoSchedule` is one mistake, not two: the unknown-field error's did-you-mean already
    # covers the "missing effect" that the same typo causes.
    typos = frozenset(fix for error in errors for fix in _typo_fixes(error))
    forbidden = {tuple(error.absolute_path) for error in errors if _is_forbidden(error)}
    found = [diagnostic for error in errors for diagnostic in _convert(error, doc, typos)]
    cut = [_overflow(overflow, doc) for overflow in overflows]
    return sort_diagnostics([*cut, *_collapse(found, forbidden), *_non_finite(doc, data)])


MAX_ENTRIES = 10_000  # no list or mapping a person writes in a blueprint comes near it (nodes per pool: 10,000)


def _overflow(overflow: Overflow, doc: Document) -> Diagnostic:
    path, count, limit = overflow.path, overflow.count, overflow.limit
    subject = words.path_name(path) if path else "the document"
    if count > MAX_ENTRIES or not overflow.keyword:
        message = f"{subject} has {count} entries: at most {MAX_ENTRIES} allowed"
        hint = "a blueprint describes a cluster; generate what runs in it from the blueprint, not into it"
    else:
        message = _count_bound(subject, overflow.keyword, limit, count)
        hint = words.about(overflow.schema)
    return Diagnostic(OUT_OF_RANGE, Severity.ERROR, message, doc.span(path), path, hint)


def _non_finite(doc: Document, data: Any) -> Iterator[Diagnostic]:
    """YAML's .nan and .inf: JSON Schema's bounds let NaN through (every comparison with it is false)."""
    stack: list[tuple[JsonPath, Any]] = [((), data)]
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
                f"{words.path_name(path) if path else 'the document'} is {value}: only finite numbers are allowed",
                doc.span(path),
                path,
                "write a number such as 1.5",
            )


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
        if words.in_branch(schema_path, 2):
            return list(_conditionally_required(error, doc, path, schema_path, typos))
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
    return [
        words.diag(
            COMBINATION, f"{words.path_name(path)}: {error.message}", doc.span(path), path, words.about(error.schema)
        )
    ]


def _unknown_fields(error: ValidationError, doc: Document, path: JsonPath) -> Iterator[Diagnostic]:
    allowed = list(_schema_of(error).get("properties", {}))
    patterns = [re.compile(p) for p in _schema_of(error).get("patternProperties", {})]
    for key in _instance(error):
        if key in allowed or any(p.search(key) for p in patterns):
            continue
        at = (*path, key)
        yield words.diag(
            UNKNOWN_FIELD,
            f"unknown field '{key}' {words.in_path(path)}",
            words.key_span(doc, at),
            at,
            _suggest_field(key, allowed),
        )


def _suggest_field(key: str, allowed: Sequence[str]) -> str:
    field, why = _closest_field(key, allowed)
    if field is None:
        return "allowed fields here: " + ", ".join(allowed)
    return f"did you mean '{field}'?" + (f" ({why})" if why else "")


def _closest_field(key: str, allowed: Sequence[str]) -> tuple[str | None, str]:
    close = [f for f in difflib.get_close_matches(key, allowed, n=2, cutoff=0.6) if (key, f) not in _NOT_TYPOS]
    if close:
        return close[0], ""
    synonym = difflib.get_close_matches(key.lower(), list(_SYNONYMS), n=1, cutoff=0.8)
    if synonym and _SYNONYMS[synonym[0]][0] in allowed:
        return _SYNONYMS[synonym[0]]
    return None, ""


def _typo_fixes(error: ValidationError) -> Iterator[tuple[JsonPath, str]]:
    """(object path, absent field) pairs that an unknown key in that object is a misspelling of: a field required
    always or only under a condition (`timeslicing:` under `strategy: time-slicing`) is then not reported missing,
    the did-you-mean being the cause."""
    if _keyword(error) != "additionalProperties" or not isinstance(_instance(error), Mapping):
        return
    allowed = list(_schema_of(error).get("properties", {}))
    for key in _instance(error):
        if key not in allowed:
            field, _ = _closest_field(key, allowed)
            if field is not None and field not in _instance(error):
                yield tuple(error.absolute_path), field


def _missing_fields(error: ValidationError, doc: Document, path: JsonPath, typos: Typos) -> Iterator[Diagnostic]:
    # jsonschema yields one `required` error per missing field without naming it as data; computing the
    # whole missing list for each and de-duplicating later is simpler than parsing its message.
    properties = _schema_of(error).get("properties", {})
    for field in _value(error):
        if field in _instance(error) or (path, field) in typos:
            continue
        yield words.diag(
            MISSING_FIELD,
            f"missing required field '{field}' {words.in_path(path)}",
            words.object_span(doc, path),
            path,
            words.purpose(field, properties),
        )


def _conditionally_required(
    error: ValidationError, doc: Document, path: JsonPath, schema_path: JsonPath, typos: Typos
) -> Iterator[Diagnostic]:
    branch = schema_path[:-1]
    owner = words.schema_at(words.owner_path(branch))
    condition = words.condition(branch, _instance(error))
    for field in _value(error):
        if field in _instance(error) or (path, field) in typos:
            continue
        message = f"{words.path_name(path)} needs '{field}' when {condition}"
        yield words.diag(
            COMBINATION, message, words.object_span(doc, path), path, words.purpose(field, owner.get("properties", {}))
        )


def _forbidden(error: ValidationError, doc: Document, path: JsonPath, schema_path: JsonPath) -> Diagnostic:
    field, parent = path[-1], path[:-1]
    branch = schema_path[:-3]
    condition = words.condition(branch, words.value_at(doc.data, parent))
    message = f"{field} is not allowed {words.in_path(parent)} when {condition}"
    return words.diag(
        COMBINATION, message, words.key_span(doc, path), path, words.about(words.schema_at(schema_path[:-1]))
    )


def _exclusive(error: ValidationError, doc: Document, path: JsonPath) -> Diagnostic:
    fields: list[str] = list(_value(error)["required"])
    # Point at whichever of them was written last: that is the one the user added on top.
    last = max(fields, key=lambda f: words.position_key(doc, (*path, f)))
    message = f"{words.join(fields, 'and')} cannot be used together {words.in_path(path)}"
    hint = _value(error).get("description") or "give only one of them"
    return words.diag(COMBINATION, message, words.key_span(doc, (*path, last)), (*path, last), hint)


def _alternatives(error: ValidationError, doc: Document, path: JsonPath, typos: Typos) -> list[Diagnostic]:
    branches: list[Any] = list(_value(error))
    if all(isinstance(b, Mapping) and set(b) == {"required"} for b in branches):
        # anyOf: [{required: [a]}, {required: [b]}]: "give at least one of a, b".
        fields = [f for b in branches for f in b["required"]]
        properties = _schema_of(error).get("properties", {})
        purposes = [f"{f}: {words.first_sentence(words.description(properties.get(f))).rstrip('.')}" for f in fields]
        message = f"{words.path_name(path)} needs {words.join(fields, 'or')}"
        return [words.diag(COMBINATION, message, words.object_span(doc, path), path, "; ".join(purposes))]
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
        for t in words.as_list(_value(e))
    ]
    return [_wrong_type(doc, path, _instance(error), types, _schema_of(error))]


def _wrong_type(doc: Document, path: JsonPath, value: Any, expected: Any, schema: Mapping[str, Any]) -> Diagnostic:
    wanted = list(dict.fromkeys(words.as_list(expected)))
    expected_words = words.join([_TYPE_WORDS.get(t, t) for t in wanted], "or")
    message = f"wrong type for {words.path_name(path)}: expected {expected_words}, got {words.got(doc, path, value)}"
    hint = _type_hint(doc, path, value, wanted, schema) or words.about(schema)
    return words.diag(WRONG_TYPE, message, doc.span(path), path, hint)


def _type_hint(
    doc: Document, path: JsonPath, value: Any, wanted: Sequence[str], schema: Mapping[str, Any]
) -> str | None:
    if value is None:
        return "the value is empty: fill it in or delete the line"
    # Suggest a rewrite only when the rewritten value would pass: quoting `true` is no fix where
    # the field wants one of uuid/index.
    written = words.written(doc, path, value)
    if "string" in wanted and isinstance(value, bool | int | float) and _would_pass(schema, written):
        # YAML typed it (true, 1.30 -> 1.3); quoting keeps exactly what was written.
        return f'quote it: "{written}"'
    if isinstance(value, str):
        if "boolean" in wanted and value.lower() in ("yes", "no", "on", "off", "y", "n"):
            return "write true or false: yes/no/on/off are plain strings in a blueprint"
        number = words.as_number(value)
        if number is not None and _would_pass(schema, number):
            return f"remove the quotes: {value}"
        if "array" in wanted and _would_pass(schema, [value]):
            return f"write a list: [{value}]"
    allowed = schema.get("enum")
    if allowed:
        return "allowed values: " + ", ".join(map(words.plain, allowed))
    return None


def _would_pass(schema: Mapping[str, Any], value: Any) -> bool:
    # evolve() keeps the validator's $ref resolution, so subschemas that refer to $defs work.
    from gpustack.schema_fast import shape_validator

    return bool(shape_validator().evolve(schema=schema).is_valid(value))


def _not_allowed(error: ValidationError, doc: Document, path: JsonPath) -> Diagnostic:
    allowed = list(_value(error)) if _keyword(error) == "enum" else [_value(error)]
    value = _instance(error)
    expected = (
        f"expected {words.show(allowed[0])}" if len(allowed) == 1 else "expected one of " + ", ".join(map(str, allowed))
    )
    message = f"invalid value {words.got_value(doc, path, value)} for {words.path_name(path)}: {expected}"
    hint = words.about(error.schema)
    if isinstance(value, str) and len(allowed) > 1:  # one allowed value: the message names it already
        strings = [a for a in allowed if isinstance(a, str)]
        # Compare case-insensitively so `noschedule` finds NoSchedule, but suggest the real spelling.
        lowered = {a.lower(): a for a in strings}
        close = difflib.get_close_matches(value.lower(), list(lowered), n=1, cutoff=0.6)
        if close:
            hint = f"did you mean {words.show(lowered[close[0]])}?"
    return words.diag(NOT_ALLOWED_VALUE, message, doc.span(path), path, hint)


def _bad_format(doc: Document, path: JsonPath, value: Any, schema: Mapping[str, Any], *, key: bool) -> Diagnostic:
    said = words.first_sentence(schema.get("description", "")).rstrip(".")
    said = said[:1].lower() + said[1:] if said else f"matching {schema.get('pattern')}"
    subject = (
        f"key {words.show(value)} {words.in_path(path)}" if key else f"{words.path_name(path)} {words.show(value)}"
    )
    message = f"{subject} is not {said}"
    at = (*path, value) if key else path
    span = words.key_span(doc, at) if key else doc.span(path)
    return words.diag(
        BAD_FORMAT, message, span, at, _format_hint(schema, value) or words.examples(schema) or words.about(schema)
    )


def _format_hint(schema: Mapping[str, Any], value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    title = schema.get("title")
    if title in ("DNS-1123 label", "DNS-1123 subdomain"):
        keep = "a-z0-9." if title == "DNS-1123 subdomain" else "a-z0-9"
        fixed = re.sub(f"[^{keep}]+", "-", value.lower()).strip("-.")
        fixed = fixed[:63].rstrip("-") if title == "DNS-1123 label" else fixed[:253]
        if fixed and compiled_pattern(schema["pattern"]).search(fixed):
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
    message = f"key {words.show(_instance(error))} {words.in_path(path)}: {error.message}"
    return words.diag(COMBINATION, message, words.key_span(doc, at), at, words.about(error.schema))


def _out_of_range(error: ValidationError, doc: Document, path: JsonPath, key: str | None) -> Diagnostic:
    limit, value, keyword = _value(error), _instance(error), _keyword(error)
    subject = f"key {words.show(key)} {words.in_path(path)}" if key is not None else words.path_name(path)
    if keyword in ("minItems", "minLength", "minProperties") and limit == 1:
        message = f"{subject} must not be empty"
    elif keyword in ("minItems", "maxItems", "minProperties", "maxProperties"):
        message = _count_bound(subject, keyword, limit, len(value))
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
        message = f"{subject} must be {bound} {limit}, got {words.written(doc, path, value)}"
    at = (*path, key) if key is not None else path
    span = words.key_span(doc, at) if key is not None else doc.span(path)
    return words.diag(OUT_OF_RANGE, message, span, at, words.about(error.schema))


def _count_bound(subject: str, keyword: str, limit: int, count: int) -> str:
    bound = "at least" if keyword.startswith("min") else "at most"
    if keyword.endswith("Items"):
        return f"{subject} must have {bound} {limit} item{'s' * (limit != 1)}, got {count}"
    return f"{subject} must have {bound} {limit} entr{'ies' if limit != 1 else 'y'}, got {count}"


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
    item = words.got_value(doc, at, _instance(error)[again])
    message = f"duplicate item {item} in {words.path_name(path)} (items {first} and {again})"
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
    return _fold_under_unknown_fields(kept)


def _fold_under_unknown_fields(found: list[Diagnostic]) -> list[Diagnostic]:
    """A field missing from an object that also holds an unknown field is most likely that field, misnamed
    (`gpu: {mig: 1g.10gb}` for `profile`): the unknown field is the cause and is reported, and what the object then
    lacks is said in its hint rather than as a second error before it."""
    unknown = {d.path[:-1] for d in found if d.code == UNKNOWN_FIELD}
    lacking: dict[JsonPath, list[str]] = {}
    kept: list[Diagnostic] = []
    for d in found:
        lacks = d.code == MISSING_FIELD or (d.code == COMBINATION and " needs " in d.message)  # not "cannot be used"
        if lacks and d.path in unknown:
            lacking.setdefault(d.path, []).append(d.message)
        else:
            kept.append(d)
    if not lacking:
        return kept
    folded: list[Diagnostic] = []
    for d in kept:
        owner = d.path[:-1]
        if d.code == UNKNOWN_FIELD and owner in lacking:
            also = "; ".join(lacking.pop(owner))
            d = dataclasses.replace(d, hint=f"{d.hint} (as it stands, {also})")
        folded.append(d)
    return folded


def _is_forbidden(error: ValidationError) -> bool:
    """`properties: {field: {"not": {}}}` inside an if/then branch: the field may not be given here."""
    return _keyword(error) == "not" and _value(error) == {} and words.in_branch(tuple(error.absolute_schema_path), 4)

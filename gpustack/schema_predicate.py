"""The blueprint schema compiled into one Python predicate: "surely valid", or "let jsonschema look".

jsonschema interprets the schema afresh for every value: each keyword of each subschema is a lookup, a generator
and, for each child, a new validator. A valid blueprint needs none of its error machinery, only the verdict. So the
schema is compiled, once per process, into plain Python closures (one per subschema, specialised by the keywords it
has), and `check_shape` asks the compiled predicate first: when it says the document is surely valid, there is
nothing to report and jsonschema is not run; otherwise jsonschema runs as before and finds and words every error.
Every message a user reads is therefore still jsonschema's, and a wrong "invalid" here costs only time; a wrong
"valid" would hide an error, and is what the design rules out.

What "surely valid" means (`surely_valid`): jsonschema accepts the document AND the document is plain data that
`check_shape` has nothing else to say about: only dicts with string keys, lists, strings, ints, finite floats,
booleans and None, and no list or mapping over `cap` entries (`within_bounds` would cut it, `_non_finite` would
report .nan). Two modes compile each subschema:

- exact (`strong=False`): the predicate is jsonschema's verdict on plain data. Used where a verdict is negated or
  chooses a branch (`not`, `if`), where a conservative "no" would turn into a wrong "yes";
- strong (`strong=True`): jsonschema's verdict AND the plain-data rules for the whole value. A subschema with a
  `type` checks its own value and hands strong checks to its children (properties, items, additional properties);
  an untyped one gets that from a keyword that covers its value (a scalar const or enum, `$ref`, `allOf`,
  `anyOf`, `oneOf`, `if`), or else walks it (`plain`).

A keyword this module does not compile (none in the blueprint schema today: tests/test_schema_predicate.py checks
it) is not guessed at: its whole subschema is judged by jsonschema's own `is_valid` (the fallback), and anything that
raises inside the predicate means "let jsonschema look". Patterns are matched the ECMA way (`compiled_pattern`), as
`check_shape`'s validator does; `format` is an annotation there (no format checker), so here too.

Why it exists: speed, measured (bench/README.md). On bench/fleet.py's many-pools blueprint at 10x, jsonschema's
walk with `schema_fast`'s shortcuts took about as long as reading the file; the compiled predicate takes a tenth
of that. tests/test_schema_predicate.py holds it to jsonschema's exact verdict over mutated blueprints (slips of a
value's kind, values at and past every bound the schema sets), every subschema and every blueprint file.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, Final

from gpustack.schema_file import compiled_pattern, load_schema, local_target

__all__ = ["compiled", "surely_valid", "uncompiled_keywords"]

Check = Callable[[Any], bool]

_ANNOTATIONS: Final = frozenset(
    {"description", "title", "examples", "default", "$comment", "deprecated", "readOnly", "writeOnly", "format"}
)
_ROOT_ONLY: Final = frozenset({"$schema", "$id", "$defs"})
_STRING: Final = frozenset({"pattern", "minLength", "maxLength"})
_NUMBER: Final = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
_OBJECT: Final = frozenset(
    {"properties", "required", "additionalProperties", "propertyNames", "minProperties", "maxProperties"}
)
_ARRAY: Final = frozenset({"items", "minItems", "maxItems", "uniqueItems"})
_GENERAL: Final = frozenset({"type", "const", "enum", "$ref", "allOf", "anyOf", "oneOf", "not", "if", "then", "else"})
_COMPILED: Final = _ANNOTATIONS | _STRING | _NUMBER | _OBJECT | _ARRAY | _GENERAL
_SCALARS: Final = (str, int, float, bool, type(None))


def surely_valid(data: Any, cap: int) -> bool:
    """True only when the blueprint schema accepts `data` and `data` is plain data within `cap` (see the module)."""
    try:
        return _blueprint(cap)(data)
    except (TypeError, ValueError, RecursionError):  # data no YAML reader makes: jsonschema will say
        return False


def compiled(schema: Any, cap: int, *, strong: bool = True) -> Check:
    """`schema` (a subschema of the blueprint's: its `$ref`s resolve there) as a predicate, strong or exact."""
    return _Compiler(cap).compile(schema, strong=strong)


def uncompiled_keywords(schema: Any = None) -> set[str]:
    """The keywords in `schema` (the blueprint's by default) that this module leaves to jsonschema."""
    found: set[str] = set()
    stack = [schema if schema is not None else load_schema()]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        found |= node.keys() - _COMPILED - _ROOT_ONLY
        for keyword in _SUBSCHEMA_MAPS & node.keys():
            stack.extend(node[keyword].values())
        for keyword in _SUBSCHEMA_LISTS & node.keys():
            stack.extend(node[keyword])
        stack.extend(node[keyword] for keyword in _SUBSCHEMA & node.keys())
    return found


_SUBSCHEMA: Final = frozenset({"items", "additionalProperties", "propertyNames", "not", "if", "then", "else"})
_SUBSCHEMA_LISTS: Final = frozenset({"allOf", "anyOf", "oneOf"})
_SUBSCHEMA_MAPS: Final = frozenset({"properties", "$defs"})


@functools.cache
def _blueprint(cap: int) -> Check:
    schema = load_schema()
    return compiled({k: v for k, v in schema.items() if k not in _ROOT_ONLY}, cap)


def _always(_value: Any) -> bool:
    return True


def _never(_value: Any) -> bool:
    return False


class _Compiler:
    """Compiles subschemas of the blueprint schema, each at most once per mode."""

    def __init__(self, cap: int) -> None:
        self._cap = cap
        # (id(schema), strong) -> (schema, its check); holding the schema keeps its id from being reused.
        self._done: dict[tuple[int, bool], tuple[Any, Check]] = {}

    def plain(self, value: Any) -> bool:
        """Plain data within the cap: what a strong check asks of a value no typed subschema looks into."""
        kind = type(value)
        if kind is dict:
            return len(value) <= self._cap and all(type(key) is str and self.plain(item) for key, item in value.items())
        if kind is list:
            return len(value) <= self._cap and all(self.plain(item) for item in value)
        return math.isfinite(value) if kind is float else kind in _SCALARS

    def compile(self, schema: Any, *, strong: bool) -> Check:
        key = (id(schema), strong)
        done = self._done.get(key)
        if done is not None:
            return done[1]
        # A $ref may lead back here before this check exists: it calls through `late` until then.
        late: list[Check] = []
        self._done[key] = (schema, lambda value: late[0](value))
        check = self._build(schema, strong)
        late.append(check)
        self._done[key] = (schema, check)
        return check

    def _build(self, schema: Any, strong: bool) -> Check:
        if isinstance(schema, bool):
            return (self.plain if strong else _always) if schema else _never
        if not isinstance(schema, dict) or schema.keys() - _COMPILED or not _known_types(schema.get("type", [])):
            return self._fallback(schema, strong)
        typed = "type" in schema
        if schema.get("type") == "string" and not schema.keys() & _GENERAL - {"type"}:
            return _string_check(schema, typed=True) or _is_string  # a leaf: most values of a blueprint
        parts = self._parts(schema, strong and typed)
        default: Check | None = _never if typed else None
        general = self._general(schema, strong and not typed)
        return _joined(parts, default, general)

    def _fallback(self, schema: Any, strong: bool) -> Check:
        """jsonschema's own verdict (the validator `check_shape` runs, with its ECMA patterns)."""
        from gpustack.schema_fast import shape_validator  # jsonschema, imported only where a schema needs it

        is_valid = shape_validator().evolve(schema=schema).is_valid
        plain = self.plain
        return (lambda value: plain(value) and is_valid(value)) if strong else is_valid

    # --- keywords that apply to one kind of value ------------------------------------------------------------------

    def _parts(self, schema: dict[str, Any], covering: bool) -> dict[type, Check]:
        """Python type -> the check of the keywords that apply to values of that type. With a `type` keyword only the
        allowed types have an entry; `covering`: each also holds the plain-data rules for the value it checks."""
        allowed = _allowed_types(schema["type"], finite=covering) if "type" in schema else None
        parts: dict[type, Check] = {}
        if allowed is None or str in allowed:
            parts[str] = _string_check(schema) or _always
        if allowed is None or int in allowed:
            parts[int] = _number_check(schema) or _always
        if allowed is None or float in allowed:
            parts[float] = _both(allowed[float] if allowed is not None else None, _number_check(schema))
        if allowed is None or dict in allowed:
            parts[dict] = self._object(schema, covering) if covering or schema.keys() & _OBJECT else _always
        if allowed is None or list in allowed:
            parts[list] = self._array(schema, covering) if covering or schema.keys() & _ARRAY else _always
        if allowed is None or bool in allowed:
            parts[bool] = _always
        if allowed is None or type(None) in allowed:
            parts[type(None)] = _always
        return parts

    def _object(self, schema: dict[str, Any], covering: bool) -> Check:
        names: dict[str, Check] = {
            name: self.compile(sub, strong=covering) for name, sub in schema.get("properties", {}).items()
        }
        required = tuple(schema.get("required", ()))
        extra = schema.get("additionalProperties", True)
        rest: Check | None = None if extra is True and not covering else self.compile(extra, strong=covering)
        any_key = rest is not None and rest is not _never and covering  # unnamed keys must then be strings
        key_check = self.compile(schema["propertyNames"], strong=False) if "propertyNames" in schema else None
        low = schema.get("minProperties", 0)
        high = min(schema.get("maxProperties", math.inf), self._cap if covering else math.inf)

        if rest is None and key_check is None and not low and high == math.inf:
            # An open object checked exactly (an `if` condition, mostly): only its named properties matter.
            named = tuple(names.items())
            if len(named) == 1 and set(required) <= {named[0][0]}:
                # The usual `if`: one property (`strategy`, `kind`), required or not: one expression, no loops.
                ((only, sub),) = named
                if required:
                    return lambda value: only in value and sub(value[only])
                return lambda value: only not in value or sub(value[only])

            def open_check(value: dict[Any, Any]) -> bool:
                for name in required:
                    if name not in value:
                        return False
                for name, sub in named:  # noqa: SIM110  a loop: all() would make a generator per call
                    if name in value and not sub(value[name]):
                        return False
                return True

            return open_check

        def check(value: dict[Any, Any]) -> bool:
            if not low <= len(value) <= high:
                return False
            for name in required:
                if name not in value:
                    return False
            for key, item in value.items():
                sub = names.get(key)
                if sub is None:
                    if rest is None:
                        continue
                    if any_key and type(key) is not str:
                        return False
                    sub = rest
                if not sub(item):
                    return False
            return key_check is None or all(key_check(key) for key in value)

        return check

    def _array(self, schema: dict[str, Any], covering: bool) -> Check:
        items: Check | None = self.plain if covering else None
        if "items" in schema:
            items = self.compile(schema["items"], strong=covering)
        low = schema.get("minItems", 0)
        high = min(schema.get("maxItems", math.inf), self._cap if covering else math.inf)
        unique = schema.get("uniqueItems") is True

        def check(value: list[Any]) -> bool:
            if not low <= len(value) <= high:
                return False
            if items is not None:
                for item in value:
                    if not items(item):
                        return False
            return not unique or _unique(value)

        return check

    # --- keywords that apply to any value ------------------------------------------------------------------------

    def _general(self, schema: dict[str, Any], cover: bool) -> list[Check]:
        """Checks of the in-place keywords. `cover`: the subschema has no `type`, and a strong check must get the
        plain-data rules from one of these (the first that can give them) or walk the value itself."""
        checks: list[Check] = []
        for keyword in ("const", "enum"):
            if keyword in schema:
                values = [schema["const"]] if keyword == "const" else schema["enum"]
                equal = _one_of(values)
                checks.append(equal or self._fallback({keyword: schema[keyword]}, strong=False))
                cover = cover and equal is None  # an equal scalar is plain data
        if "$ref" in schema:
            try:
                target = local_target(schema["$ref"])
            except LookupError:  # not a local reference, or one to nothing: jsonschema resolves it, or reports it
                checks.append(self._fallback({"$ref": schema["$ref"]}, strong=cover))
            else:
                checks.append(self.compile(target, strong=cover))
            cover = False
        for keyword in ("allOf", "anyOf", "oneOf"):
            if keyword in schema:
                # Each branch strong gives the same verdict as exact, on plain data, and False on any other.
                branches = [self.compile(sub, strong=cover) for sub in schema[keyword]]
                checks.append(_COMBINERS[keyword](branches))
                cover = False
        if "not" in schema:
            negated = self.compile(schema["not"], strong=False)
            checks.append(lambda value: not negated(value))
        if "if" in schema:
            checks.append(self._condition(schema, cover))
            cover = False
        if cover:
            checks.append(self.plain)
        return checks

    def _condition(self, schema: dict[str, Any], strong: bool) -> Check:
        condition = self.compile(schema["if"], strong=False)
        then = self.compile(schema.get("then", True), strong=strong)
        otherwise = self.compile(schema.get("else", True), strong=strong)
        return lambda value: then(value) if condition(value) else otherwise(value)


def _joined(parts: dict[type, Check], default: Check | None, general: Sequence[Check]) -> Check:
    """One check: the part for the value's type (`default` for a type without one; None: it passes), then each of
    `general`. Most values meet a subschema of one type: that gets a closure of its own."""
    rest = _all(general)
    if default is _never and len(parts) == 1:
        ((kind, part),) = parts.items()
        if part is _always:
            return (
                (lambda value: type(value) is kind)
                if rest is _always
                else (lambda value: type(value) is kind and rest(value))
            )
        if rest is _always:
            return lambda value: type(value) is kind and part(value)
        return lambda value: type(value) is kind and part(value) and rest(value)
    if default is None:
        kinds = [kind for kind, part in parts.items() if part is not _always]
        if not kinds:
            return rest
        if len(kinds) == 1:  # keywords of one type only (`required`, say): other values pass them
            (kind,) = kinds
            part = parts[kind]
            if rest is _always:
                return lambda value: type(value) is not kind or part(value)
            return lambda value: (type(value) is not kind or part(value)) and rest(value)
        default = _always
    if rest is _always:
        return lambda value: parts.get(type(value), default)(value)
    return lambda value: parts.get(type(value), default)(value) and rest(value)


def _all(checks: Sequence[Check]) -> Check:
    if not checks:
        return _always
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        first, second = checks
        return lambda value: first(value) and second(value)
    every = tuple(checks)

    def check_all(value: Any) -> bool:
        for check in every:  # noqa: SIM110  a loop: all() would make a generator per call
            if not check(value):
                return False
        return True

    return check_all


def _any(checks: Sequence[Check]) -> Check:
    if len(checks) == 2:
        first, second = checks
        return lambda value: first(value) or second(value)
    return lambda value: any(check(value) for check in checks)


def _exactly_one(checks: Sequence[Check]) -> Check:
    return lambda value: sum(1 for check in checks if check(value)) == 1


_COMBINERS: Final[Mapping[str, Callable[[Sequence[Check]], Check]]] = {
    "allOf": _all,
    "anyOf": _any,
    "oneOf": _exactly_one,
}


def _both(first: Check | None, second: Check | None) -> Check:
    if first is None or second is None:
        return first or second or _always
    return lambda value: first(value) and second(value)


def _allowed_types(types: Any, *, finite: bool) -> dict[type, Check | None]:
    """The `type` keyword as Python types, each with what more a value of it needs: a float, to be integral for
    "integer" alone, and finite for plain data."""
    names = [types] if isinstance(types, str) else list(types)
    allowed: dict[type, Check | None] = {_PYTHON_TYPES[name]: None for name in names if name in _PYTHON_TYPES}
    if "number" in names:
        allowed[int], allowed[float] = None, math.isfinite if finite else None
    elif "integer" in names:
        allowed[int], allowed[float] = None, float.is_integer  # 2.0 is an integer to jsonschema
    return allowed


def _known_types(types: Any) -> bool:
    names = [types] if isinstance(types, str) else types
    return isinstance(names, list) and all(name in _PYTHON_TYPES or name in ("integer", "number") for name in names)


_PYTHON_TYPES: Final[Mapping[str, type]] = {
    "string": str,
    "boolean": bool,
    "null": type(None),
    "object": dict,
    "array": list,
}


def _string_check(schema: Mapping[str, Any], *, typed: bool = False) -> Check | None:
    """The string keywords; `typed`: the value must be a string too (else they apply to strings only)."""
    if not schema.keys() & _STRING:
        return None
    pattern = compiled_pattern(schema["pattern"]).search if "pattern" in schema else None
    low, high = schema.get("minLength", 0), schema.get("maxLength", math.inf)
    if not typed:
        if pattern is None:
            return lambda value: low <= len(value) <= high
        return lambda value: low <= len(value) <= high and pattern(value) is not None
    if pattern is None:
        return lambda value: type(value) is str and low <= len(value) <= high
    return lambda value: type(value) is str and low <= len(value) <= high and pattern(value) is not None


def _is_string(value: Any) -> bool:
    return type(value) is str


def _number_check(schema: Mapping[str, Any]) -> Check | None:
    """jsonschema's comparisons as it writes them (`instance < minimum` fails), so NaN passes here as there; only the
    bounds the schema gives (an absent maximum is no `inf` bound that inf itself would fail)."""
    if not schema.keys() & _NUMBER:
        return None
    if schema.keys() & _NUMBER == {"minimum", "maximum"}:  # the common bounds, in one step
        low, high = schema["minimum"], schema["maximum"]
        return lambda value: not (value < low or value > high)
    fails = [_FAILS[keyword](schema[keyword]) for keyword in sorted(_NUMBER & schema.keys())]
    if len(fails) == 1:
        (fail,) = fails
        return lambda value: not fail(value)
    return lambda value: not any(fail(value) for fail in fails)


_FAILS: Final[Mapping[str, Callable[[Any], Check]]] = {
    "minimum": lambda bound: lambda value: value < bound,
    "maximum": lambda bound: lambda value: value > bound,
    "exclusiveMinimum": lambda bound: lambda value: value <= bound,
    "exclusiveMaximum": lambda bound: lambda value: value >= bound,
}


def _one_of(values: Sequence[Any]) -> Check | None:
    """`enum` (or `const`) of scalars, compared as jsonschema's `equal` does (True is not 1, 1.0 is 1); None for
    values of any other kind, which jsonschema compares."""
    if all(type(v) is str for v in values):
        strings = frozenset(values)
        return lambda value: type(value) is str and value in strings
    if not all(type(v) in _SCALARS and (type(v) is not float or math.isfinite(v)) for v in values):
        return None
    return lambda value: any(_equal(expected, value) for expected in values)


def _equal(expected: Any, value: Any) -> bool:
    if type(expected) is str:
        return type(value) is str and value == expected
    if expected is None or type(expected) is bool:
        return value is expected
    return type(value) in (int, float) and value == expected


def _unique(items: list[Any]) -> bool:
    if set(map(type, items)) <= {str}:
        return len(set(items)) == len(items)
    keys = [_equality_key(item) for item in items]
    return len(set(keys)) == len(keys)


def _equality_key(value: Any) -> Hashable:
    """A key equal for two values exactly when jsonschema's `uniqueItems` counts them equal (`jsonschema._utils.equal`):
    1 and 1.0 alike, True and 1 not, lists item by item, mappings key by key. jsonschema's own sorted shortcut may miss
    a duplicate this finds; then "not unique" here only sends the data to jsonschema, which has the last word.
    Anything but plain data raises TypeError: jsonschema looks."""
    kind = type(value)
    if kind is str:
        return ("s", value)
    if kind is bool or value is None:
        return ("b", value)
    if kind is int or kind is float:
        return ("n", value)
    if kind is list:
        return ("l", tuple(_equality_key(item) for item in value))
    if kind is dict:
        return ("m", frozenset((key, _equality_key(item)) for key, item in value.items()))
    raise TypeError(f"not plain data: {kind.__name__}")

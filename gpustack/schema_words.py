"""The words of shape diagnostics: a path as a reader says it, a value as the user wrote it, a field's purpose.

`gpustack.schema` decides which jsonschema error means what; these are the phrases and positions it builds its
messages from, and the reading of the schema itself (a subschema at a path, an `if` condition in words, a field's
description) that its hints quote.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from gpustack.diagnostic import Diagnostic, JsonPath, Severity, Span, format_json_path
from gpustack.load import Document
from gpustack.schema_file import load_schema

# A plain YAML scalar as written: up to whitespace, a flow separator or a comment.
_SCALAR_TOKEN = re.compile(r"[^\s,\]}#]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


def schema_at(schema_path: Iterable[str | int]) -> Any:
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


def in_branch(schema_path: JsonPath, depth: int) -> bool:
    """Whether the keyword `depth` steps from the end of the path sits in an if/then(/else) branch."""
    return len(schema_path) > depth and schema_path[-depth] in ("then", "else")


def owner_path(branch: JsonPath) -> JsonPath:
    # [..., object schema..., "allOf", i, "then"] -> the object schema the conditional belongs to
    return branch[:-3] if len(branch) >= 3 and branch[-3] == "allOf" else branch[:-1]


def condition(branch: JsonPath, instance: Any) -> str:
    """The if-condition of a then/else branch in words, with the values the document actually has."""
    rule = schema_at(branch[:-1])
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


def description(schema: Any) -> str:
    if not isinstance(schema, Mapping):
        return ""
    if "description" in schema:
        return str(schema["description"])
    if "$ref" in schema:
        return description(_resolve(schema["$ref"]))
    return ""


def purpose(field: str, properties: Mapping[str, Any]) -> str:
    purpose = first_sentence(description(properties.get(field)))
    return f"'{field}': {purpose}" if purpose else f"add '{field}'"


def about(schema: Any) -> str:
    """What a field is, for hints that have no computed fix."""
    return (
        first_sentence(description(schema))
        or examples(schema)
        or "`gpustack schema` prints every field with its description"
    )


def examples(schema: Any) -> str:
    examples = schema.get("examples") if isinstance(schema, Mapping) else None
    return (
        "for example: " + ", ".join(e if isinstance(e, str) else json.dumps(e) for e in examples[:3])
        if examples
        else ""
    )


def first_sentence(text: str) -> str:
    return _SENTENCE_END.split(text.strip(), maxsplit=1)[0] if text else ""


# --- words and positions -------------------------------------------------------------------------


def path_name(path: JsonPath) -> str:
    """The path in words: `nodePools[1].taints[0]`. Everything users write lives under spec, so the
    `spec.` prefix is left out; the full path is in Diagnostic.path."""
    if not path:
        return "the blueprint"
    shown = path[1:] if path[0] == "spec" and len(path) > 1 else path
    return format_json_path(shown).removeprefix("$").removeprefix(".")


def in_path(path: JsonPath) -> str:
    return f"in {path_name(path)}" if path else "at the top level"


def join(words: Sequence[str], conjunction: str) -> str:
    if len(words) <= 1:
        return "".join(words)
    return f"{', '.join(words[:-1])} {conjunction} {words[-1]}"


def show(value: Any) -> str:
    return repr(value) if isinstance(value, str) else plain(value)


def plain(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return str(value)


def written(doc: Document, path: JsonPath, value: Any) -> str:
    """What the user typed for a scalar: `1.30`, not the float 1.3 YAML made of it."""
    if isinstance(value, str):
        return value
    token = _source_token(doc, path, value)
    return token if token is not None else plain(value)


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


def got(doc: Document, path: JsonPath, value: Any) -> str:
    if value is None:
        # `key:` with nothing after it is null too, but "an empty value" is what the user sees.
        return "null" if _source_token(doc, path, value) is not None else "an empty value"
    if isinstance(value, bool):
        return f"boolean {written(doc, path, value)}"
    if isinstance(value, int):
        return f"integer {written(doc, path, value)}"
    if isinstance(value, float):
        return f"number {written(doc, path, value)}"
    if isinstance(value, str):
        return f"string {value!r}"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__


def got_value(doc: Document, path: JsonPath, value: Any) -> str:
    return repr(value) if isinstance(value, str) else written(doc, path, value)


def as_number(text: str) -> int | float | None:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return None


def as_list(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def value_at(data: Any, path: JsonPath) -> Any:
    for step in path:
        data = data[step]
    return data


def key_span(doc: Document, path: JsonPath) -> Span:
    """The span of the mapping key that introduces `path`, or of the value when it has no key (list items)."""
    if path and isinstance(path[-1], str) and path in doc.key_positions:
        return doc.span(path, key=True)
    return doc.span(path)


def object_span(doc: Document, path: JsonPath) -> Span:
    # `gpu:` is where a reader looks for a block's missing field, not the block's first child.
    return key_span(doc, path)


def position_key(doc: Document, path: JsonPath) -> tuple[int, int]:
    position = doc.key_positions.get(path) or doc.value_positions.get(path)
    return (position.line, position.column) if position else (0, 0)


def diag(code: str, message: str, span: Span, path: JsonPath, hint: str) -> Diagnostic:
    # Every shape diagnostic carries a hint: the fix when one can be computed, else what the field is.
    return Diagnostic(code, Severity.ERROR, message, span, path, hint)

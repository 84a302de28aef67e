"""The blueprint's JSON Schema as data: the file, its patterns the ECMA way, and its local `$ref`s resolved.

What the compiled predicate (`schema_predicate`) needs to judge a blueprint without jsonschema: a valid blueprint is
judged by the predicate alone, so `validate`, `compile` and `simulate` of one never import jsonschema (about 70 ms
of every command's start-up); `schema_fast` and `schema` import it when the predicate cannot vouch for the data.
"""

from __future__ import annotations

import functools
import json
import re
from importlib import resources
from typing import Any
from urllib.parse import unquote

SCHEMA_FILE = "blueprint.schema.json"


@functools.cache
def load_schema() -> dict[str, Any]:
    """The blueprint JSON Schema, parsed once. Callers must not mutate it."""
    text = resources.files("gpustack").joinpath("data", SCHEMA_FILE).read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@functools.cache
def compiled_pattern(pattern: str) -> re.Pattern[str]:
    # JSON Schema patterns are ECMA-262, where a final `$` matches only at the very end. Python's `$`
    # also matches before a trailing newline, so "prod-ai\n" would pass as a DNS label; `\Z` restores ECMA.
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        pattern = pattern[:-1] + r"\Z"
    return re.compile(pattern)


def local_target(ref: str) -> Any:
    """The subschema a local `$ref` (`#/$defs/name`, a JSON Pointer in a URI fragment) points at in the blueprint
    schema. LookupError for any other reference, or one that points at nothing: the caller leaves it to jsonschema.
    tests/test_schema_predicate.py holds every `$ref` of the schema to the target jsonschema's resolver finds."""
    if not ref.startswith("#"):
        raise LookupError(f"not a local reference: {ref!r}")
    target: Any = load_schema()
    pointer = unquote(ref[1:])
    if not pointer:
        return target
    if not pointer.startswith("/"):
        raise LookupError(f"not a JSON Pointer: {ref!r}")
    for token in pointer[1:].split("/"):
        step = token.replace("~1", "/").replace("~0", "~")
        if isinstance(target, dict) and step in target:
            target = target[step]
        elif isinstance(target, list) and step.isdigit() and int(step) < len(target):
            target = target[int(step)]
        else:
            raise LookupError(f"{ref!r} points at nothing")
    return target

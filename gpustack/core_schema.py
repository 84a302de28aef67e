"""YAML 1.2's core schema: how a plain scalar is typed, how its text becomes a value, and the parser classes set to
type it so.

Plain scalars are typed the YAML 1.2 core-schema way, so `yes`, `on`, `NO`, `010`, `22:22` and `2024-01-01` stay the
strings the user wrote. Both readers type with these tables: `event_reader.Builder` (positions and every refusal
worded) and `plain_reader` (its quick path without positions), so they cannot disagree on a value.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any, Final

import yaml

STR_TAG: Final = "tag:yaml.org,2002:str"
NULL_TAG: Final = "tag:yaml.org,2002:null"
BOOL_TAG: Final = "tag:yaml.org,2002:bool"
INT_TAG: Final = "tag:yaml.org,2002:int"
FLOAT_TAG: Final = "tag:yaml.org,2002:float"
MAP_TAG: Final = "tag:yaml.org,2002:map"
SEQ_TAG: Final = "tag:yaml.org,2002:seq"
NON_SPECIFIC_TAG: Final = "!"
STANDARD_TAG_PREFIX: Final = "tag:yaml.org,2002:"

# YAML 1.2 core schema, as the research loader verified it. Integers take no leading
# zeros, so `010` stays a string instead of silently becoming 8 or 10.
CORE_SCHEMA: Final[tuple[tuple[str, re.Pattern[str], str], ...]] = (
    (NULL_TAG, re.compile(r"~|null|Null|NULL|"), "~nN"),
    (BOOL_TAG, re.compile(r"true|True|TRUE|false|False|FALSE"), "tTfF"),
    (INT_TAG, re.compile(r"[-+]?(?:0|[1-9][0-9]*)|0o[0-7]+|0x[0-9a-fA-F]+"), "-+0123456789"),
    (
        FLOAT_TAG,
        re.compile(
            r"[-+]?(?:\.[0-9]+|(?:0|[1-9][0-9]*)(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
            r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)"
        ),
        "-+.0123456789",
    ),
)
CORE_PATTERN_BY_TAG: Final = {tag: pattern for tag, pattern, _ in CORE_SCHEMA}


# The core schema as one pattern, a named group per tag: one match, in C, tells a plain string from the rest (the
# first alternative to match the whole text wins, as in CORE_SCHEMA's order).
GROUP_TAGS: Final = {tag.rpartition(":")[2]: tag for tag, _, _ in CORE_SCHEMA}
TYPED_PLAIN: Final = re.compile(
    "|".join(f"(?P<{tag.rpartition(':')[2]}>{pattern.pattern})" for tag, pattern, _ in CORE_SCHEMA)
).fullmatch


# The core schema's words (`null`, `~`, the empty null, `true`, `False`, ...: its null and bool patterns are lists of
# literals) and the first characters of its numbers: a plain scalar that is no word and starts with no such
# character is a string without running the pattern, as PyYAML's resolvers skip by first character. Most of a
# blueprint's plain scalars are (`name`, `pool-0001`, `nvidia.com/gpu`).
WORD_TAGS: Final = {
    word: tag for tag, pattern, _ in CORE_SCHEMA if tag in (NULL_TAG, BOOL_TAG) for word in pattern.pattern.split("|")
}
NUMBER_FIRST: Final = frozenset("".join(first for tag, _, first in CORE_SCHEMA if tag in (INT_TAG, FLOAT_TAG)))


def resolve_plain_scalar(text: str) -> str:
    """The tag a plain (unquoted, untagged) scalar gets under the YAML 1.2 core schema."""
    tag = WORD_TAGS.get(text)
    if tag is not None:
        return tag
    if text[:1] not in NUMBER_FIRST:
        return STR_TAG
    match = TYPED_PLAIN(text)
    return STR_TAG if match is None else GROUP_TAGS[match.lastgroup or ""]


def _install_core_schema(loader_class: type[yaml.SafeLoader]) -> None:
    # PyYAML's resolvers use .match(), so each pattern is anchored at the end here.
    loader_class.yaml_implicit_resolvers = {}
    for tag, pattern, first_chars in CORE_SCHEMA:
        first = [*first_chars, ""] if tag == NULL_TAG else list(first_chars)
        loader_class.add_implicit_resolver(tag, re.compile(rf"(?:{pattern.pattern})\Z"), first)


class PureBlueprintLoader(yaml.SafeLoader):
    """The pure-Python parser, with YAML 1.2 core-schema resolvers."""


# CSafeLoader exists only when PyYAML was built with libyaml.
_FastSafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", PureBlueprintLoader)


# A base class chosen at import time is no static type: mypy cannot follow it.
class BlueprintLoader(_FastSafeLoader):  # type: ignore[valid-type,misc]
    """The libyaml parser where available, with YAML 1.2 core-schema resolvers.

    gpustack only pulls parse events from it (see `Builder`); its resolvers are set too
    so that anyone composing with it gets the same typing.
    """


_install_core_schema(PureBlueprintLoader)
_install_core_schema(BlueprintLoader)


def _to_null(_text: str) -> None:
    return None


def _to_bool(text: str) -> bool:
    return text.lower() == "true"


def _to_int(text: str) -> int:
    # int() refuses more than 4300 decimal digits with ValueError; the caller reports it.
    if text.startswith("0o"):
        return int(text[2:], 8)
    if text.startswith("0x"):
        return int(text[2:], 16)
    return int(text)


def _to_float(text: str) -> float:
    lowered = text.lower()
    if lowered.endswith(".inf"):
        return -math.inf if text.startswith("-") else math.inf
    if lowered == ".nan":
        return math.nan
    return float(text)


SCALAR_CONVERTERS: Final[dict[str, Callable[[str], Any]]] = {
    STR_TAG: str,
    NULL_TAG: _to_null,
    BOOL_TAG: _to_bool,
    INT_TAG: _to_int,
    FLOAT_TAG: _to_float,
}

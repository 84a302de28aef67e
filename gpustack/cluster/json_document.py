"""A cluster snapshot written as JSON (`kubectl get ... -o json`), read by Python's C `json` module.

JSON is YAML, so the blueprint loader reads it too, but that reader spends Python on every key and value and keeps
where each one is: about 4 s for the 16 MiB of JSON that lists 5,000 nodes and 20,000 pods, which `json.loads` reads
in 0.1 s. Positions matter only to locate a diagnostic, so the Document made here holds json.loads' data and finds
the positions again, with the loader, the first time a span is asked for (`Document.text_only`): a valid snapshot
never pays for them, a malformed one gets its diagnostics where the loader would put them.

The data are the loader's own only where both read a text alike, so anything else is left to the loader (None here),
which reads it or says what is wrong as it always has:
- text json.loads refuses, and text that does not start with `{` (a snapshot is one object);
- a key written twice (the loader refuses it; json.loads keeps the last);
- nesting deeper than the loader's MAX_DEPTH;
- NaN and Infinity (not JSON: json.loads reads floats, YAML's core schema strings);
- a \\u escape of a UTF-16 surrogate (json.loads pairs them into one character; libyaml refuses them);
- U+0085, U+2028 or U+2029 written as itself (YAML may fold it as a line break inside a string).
The text is one `load.read_text` has checked (size, UTF-8, characters YAML refuses). One difference is kept on
purpose: valid JSON that libyaml refuses on YAML's rules for implicit keys (a key of more than 1,024 characters, a
line break between a key and its colon; kubectl writes neither) is read, as JSON, where the loader used to refuse it.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any, Final

from gpustack.load import MAX_DEPTH, Document

_SURROGATE_ESCAPE: Final = re.compile(r"\\u[dD][89a-fA-F]")  # libyaml refuses it; json.loads pairs them
_LINE_BREAKS: Final = re.compile("[\x85\u2028\u2029]")  # YAML's line breaks beyond ASCII: a string may fold them


class _NotAlike(ValueError):
    """The text is JSON the blueprint loader would read otherwise, or refuse."""


def json_document(text: str, file: str) -> Document | None:
    """The snapshot's Document read by json.loads with positions found later; None where the loader must read it."""
    if not text.lstrip(" \t\r\n").startswith("{") or _SURROGATE_ESCAPE.search(text) is not None:
        return None
    if not text.isascii() and _LINE_BREAKS.search(text) is not None:  # isascii: a C scan, ten times quicker
        return None
    try:
        data = json.loads(text, object_pairs_hook=_unique, parse_constant=_refused)
    except (ValueError, RecursionError):  # not JSON (json.JSONDecodeError is a ValueError), or _NotAlike
        return None
    if _too_deep(data):
        return None
    return dataclasses.replace(Document(file, text, None, {}, {}).text_only(), data=data)


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    mapping = dict(pairs)
    if len(mapping) != len(pairs):
        raise _NotAlike("a key written twice")
    return mapping


def _refused(constant: str) -> Any:
    raise _NotAlike(f"{constant} is not JSON")


def _too_deep(data: Any) -> bool:
    """Whether collections nest deeper than the loader allows (the root collection is level 1)."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        children = value.values() if type(value) is dict else value
        for child in children:
            if type(child) is dict or type(child) is list:
                if depth >= MAX_DEPTH:
                    return True
                stack.append((child, depth + 1))
    return False

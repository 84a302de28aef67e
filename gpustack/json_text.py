"""`json.dumps(value, indent=2, ensure_ascii=False)`, byte for byte, at a third of its cost.

With `indent` set, the json module leaves its C encoder for a pure-Python one that yields each token from nested
generators: `simulate --output json` at the Kubernetes limit (16.6 MB) took 0.97 s to write against 0.15 s for the
same document compact. `pretty_json` walks the plain data once, appending to one list, with the C string encoder the
json module itself uses for each string (0.35 s). Anything but plain JSON data (a key that is not a str, a subclass
of str, int, dict or list, an object the module would refuse) goes to `json.dumps` whole, which writes or refuses it
as it always has. tests/test_json_text.py holds the two to the same text on generated data.
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring  # the C encoder where CPython has it, as json.dumps uses
from typing import Any

_INFINITY = float("inf")


class _NotPlain(Exception):
    """A value json.dumps writes by rules this module does not repeat."""


def pretty_json(value: Any) -> str:
    """The text `json.dumps(value, indent=2, ensure_ascii=False)` gives, or its error."""
    parts: list[str] = []
    try:
        _write(value, "\n", parts)
    except (_NotPlain, RecursionError):
        return json.dumps(value, indent=2, ensure_ascii=False)
    return "".join(parts)


def _write(value: Any, newline: str, out: list[str]) -> None:
    kind = type(value)
    if kind is str:
        out.append(encode_basestring(value))
    elif kind is dict:
        if not value:
            out.append("{}")
            return
        inner = newline + "  "
        lead = "{" + inner
        for key, item in value.items():
            if type(key) is not str:  # json.dumps writes 1, 1.5, true and null keys as strings
                raise _NotPlain
            out.append(lead + encode_basestring(key) + ": ")
            _write(item, inner, out)
            lead = "," + inner
        out.append(newline + "}")
    elif kind is list or kind is tuple:
        if not value:
            out.append("[]")
            return
        inner = newline + "  "
        lead = "[" + inner
        for item in value:
            out.append(lead)
            _write(item, inner, out)
            lead = "," + inner
        out.append(newline + "]")
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif kind is int:
        out.append(int.__repr__(value))
    elif kind is float:
        out.append(_float(value))
    else:
        raise _NotPlain


def _float(value: float) -> str:
    """As json.dumps writes a float (allow_nan, its default: NaN and the infinities as JavaScript spells them)."""
    if value != value:
        return "NaN"
    if value == _INFINITY:
        return "Infinity"
    if value == -_INFINITY:
        return "-Infinity"
    return float.__repr__(value)

"""The one place that names the characters no output may hand a terminal raw, and escapes them.

By Unicode category: C0 and C1 controls and DEL (Cc; a YAML string can carry ESC, and a terminal obeys it), format
characters (Cf: the bidi overrides and isolates U+202A-202E and U+2066-2069, the marks U+200E/F, U+FEFF, which
reorder or hide what a reviewer reads: Trojan Source), line and paragraph separators (Zl, Zp: a new line to some
terminals and viewers, and to JavaScript before ES2019), and lone surrogates (Cs: a file name that is not UTF-8,
which cannot even be encoded). `printable` is for text and Markdown, `json_safe` for JSON and SARIF, which stay the
same data.
"""

from __future__ import annotations

import re
import unicodedata

HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
# Runs that may hold a hidden character: anything but printable ASCII, so the common case stays in the regex engine.
# Tab is kept, and newline where the text is lines.
_SUSPECT = re.compile("[^\t\x20-\x7e]+")
_SUSPECT_BUT_NEWLINE = re.compile("[^\t\n\x20-\x7e]+")
# In JSON text json.dumps already escapes C0 and DEL is harmless; what it leaves raw (ensure_ascii=False) is beyond.
_JSON_SUSPECT = re.compile("[^\x00-\x7f]+")


def hidden(char: str) -> bool:
    """A character a terminal would obey, or that reorders, hides or breaks the text around it."""
    return unicodedata.category(char) in HIDDEN_CATEGORIES


def escaped(char: str) -> str:
    """A character as its escape: ESC as \\x1b, U+202E as \\u202e, U+E0001 as \\U000e0001."""
    point = ord(char)
    return f"\\x{point:02x}" if point < 0x100 else f"\\u{point:04x}" if point < 0x10000 else f"\\U{point:08x}"


def _escape_run(match: re.Match[str]) -> str:
    run = match.group()
    if run.isprintable():  # accented letters, CJK, emoji: nothing to escape
        return run
    return "".join(escaped(char) if hidden(char) else char for char in run)


def printable(text: str, *, keep_newlines: bool = False) -> str:
    """Text safe to print on a terminal: every hidden character written as an escape (`escaped`).

    The escaping of every text and Markdown output: diagnostics, `diff`, `rollout`, `simulate`, `capacity`, `drift`,
    `import` and `compile --check` all print through it, and the review's Markdown cells are built with it.
    """
    return (_SUSPECT_BUT_NEWLINE if keep_newlines else _SUSPECT).sub(_escape_run, text)


def _json_escape(char: str) -> str:
    point = ord(char)
    if point < 0x10000:
        return f"\\u{point:04x}"
    point -= 0x10000
    return f"\\u{0xD800 + (point >> 10):04x}\\u{0xDC00 + (point & 0x3FF):04x}"  # a UTF-16 surrogate pair


def _json_run(match: re.Match[str]) -> str:
    run = match.group()
    if run.isprintable():
        return run
    return "".join(_json_escape(char) if hidden(char) else char for char in run)


def json_safe(text: str) -> str:
    """JSON text (from json.dumps with ensure_ascii=False) with every hidden character written as a \\u escape: the
    same data to a parser, nothing a terminal obeys. Hidden characters can only be inside strings, where an escape
    means the character itself."""
    return _JSON_SUSPECT.sub(_json_run, text)

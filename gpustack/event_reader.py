"""The hardened YAML reader: plain data and packed positions, built from the parser's events.

The YAML is hardened (research: validation-and-yaml.md §4): no merge keys, no custom tags, no duplicate or
non-string keys, a depth limit, and anchors and aliases only within a budget. Plain scalars are typed the YAML 1.2
core-schema way (`gpustack.core_schema`), so `yes`, `on`, `NO`, `010`, `22:22` and `2024-01-01` stay the strings the
user wrote.

Aliases are everyday YAML (Compose files, CI files, Helm values), and the threat is their expansion, not the
feature, so the budget is go-yaml v3's (decode.go, `allowedAliasRatio`, the rule the Kubernetes API server's YAML
decoder inherits): once more than 100 nodes came from aliases and the document has more than 1,000 nodes in all,
the nodes aliases add may be at most 99% of all nodes (aliases expanding to at most 99 times the document's own
nodes) up to 400,000 nodes, falling linearly to 10% at 4,000,000. An alias is judged before it is copied, so a
billion-laughs file is refused at the first alias over budget, in time and memory bounded by the budget. An
expansion must also keep within the depth limit where it is used.

Merge keys (`<<`) stay refused: YAML 1.2's core schema has none (they were a YAML 1.1 type). Kubernetes' own
decoder (sigs.k8s.io/yaml, go-yaml underneath) applies them, but which value wins is then invisible in the file;
an alias of the whole mapping, or the keys written out, says the same thing plainly.

`Builder` builds the data straight from the parser's event stream, in one iterative pass that also
records where every key and value starts and ends (`gpustack.positions`). No node graph is composed:
an alias's value is a copy of its anchor's, located where the alias is used (`alias_marks` keeps where its
anchor is written, for a note), and a 5 MB file loads several times faster than with PyYAML's composer.
`gpustack.load` is the door: it reads the text, checks its encoding and size, and runs this reader (or, where the
positions may be found later, `gpustack.plain_reader`'s quick path first).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any, Final

import yaml
from yaml.events import (
    AliasEvent,
    CollectionStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)

from gpustack.codes import (
    ALIAS,
    CUSTOM_TAG,
    DUPLICATE_KEY,
    EMPTY_DOCUMENT,
    NON_STRING_KEY,
    SEVERAL_DOCUMENTS,
    TOO_DEEP,
    YAML_SYNTAX,
)
from gpustack.core_schema import (
    BOOL_TAG,
    CORE_PATTERN_BY_TAG,
    FLOAT_TAG,
    GROUP_TAGS,
    INT_TAG,
    MAP_TAG,
    NON_SPECIFIC_TAG,
    NULL_TAG,
    NUMBER_FIRST,
    SCALAR_CONVERTERS,
    SEQ_TAG,
    STANDARD_TAG_PREFIX,
    STR_TAG,
    TYPED_PLAIN,
    WORD_TAGS,
    resolve_plain_scalar,
)
from gpustack.diagnostic import Diagnostic, DiagnosticError, JsonPath, Position, Severity, Span
from gpustack.positions import Mark, pack, pack_to_end_of, start_of

MAX_DEPTH: Final = 64  # nesting depth of collections; the root collection is level 1
MAX_DIAGNOSTICS: Final = 50  # a file that is wrong everywhere should not bury the first problems


def too_deep(file: str, position: Position, path: JsonPath) -> Diagnostic:
    message = f"collections are nested more than {MAX_DEPTH} levels deep"
    hint = "flatten the structure; no blueprint needs this much nesting"
    return located_error(TOO_DEEP, message, hint, file, position, path)


def mark_position(mark: Mark) -> Position:
    return Position(mark.line + 1, mark.column + 1)


# A located value is kept as one int: the 0-based line and column where it starts and where it ends, 32 bits each.


def located_error(
    code: str,
    message: str,
    hint: str,
    file: str,
    position: Position,
    path: JsonPath = (),
    related: tuple[Span, ...] = (),
) -> Diagnostic:
    return Diagnostic(code, Severity.ERROR, message, Span(file, position), path, hint, related)


def _tag_name(tag: str) -> str:
    return "!!" + tag.removeprefix(STANDARD_TAG_PREFIX) if tag.startswith(STANDARD_TAG_PREFIX) else tag


class _Pending(enum.Enum):
    """What a mapping frame holds instead of an accepted key."""

    NO_KEY = enum.auto()  # waiting for its next key
    BAD_KEY = enum.auto()  # the key was refused (or is a duplicate); its value is read but dropped


_NO_KEY: Final = _Pending.NO_KEY
_BAD_KEY: Final = _Pending.BAD_KEY
_UNTYPED: Final = object()  # a plain scalar not typed yet
_KIND_OF_VALUE: Final = {
    bool: "bool",
    int: "int",
    float: "float",
    type(None): "null",
    dict: "mapping",
    list: "sequence",
}


class _Frame:
    """A collection being built: its container, its path (None when its content is not
    addressable: inside a key, or under a refused key) and, for a mapping, the pending key."""

    __slots__ = (
        "anchor",
        "container",
        "flow",
        "height",
        "is_list",
        "key",
        "key_path",
        "nodes_before",
        "path",
        "start",
    )

    def __init__(
        self, container: dict[str, Any] | list[Any], path: JsonPath | None, start: Mark, flow: bool = False
    ) -> None:
        self.container = container
        self.is_list = type(container) is list
        self.path = path
        self.start = start
        self.flow = flow  # a [..] or {..} collection, which ends at its bracket
        self.key: str | _Pending = _NO_KEY
        self.key_path: JsonPath = ()  # the accepted key's path (where `path` is not None): its value's path
        self.height = 1  # levels of collections from this one down, itself included
        self.anchor: str | None = None
        self.nodes_before = 0  # for an anchored collection: the nodes (own and aliased) read before it


class _Anchor:
    """An anchored value, as an alias copies it: its size in nodes (aliases inside expanded), its height in
    collection levels, and where it is written (a packed span)."""

    __slots__ = ("height", "mark", "size", "value")

    def __init__(self, value: Any, size: int, height: int, mark: int) -> None:
        self.value = value
        self.size = size
        self.height = height
        self.mark = mark


# go-yaml v3's alias budget (decode.go): the checks start past these counts, and the share of nodes aliases may
# add falls from 99% to 10% between the two document sizes.
ALIAS_FREE_NODES: Final = 1000
ALIAS_FREE_EXPANSION: Final = 100
_RATIO_RANGE_LOW: Final = 400_000
_RATIO_RANGE_HIGH: Final = 4_000_000


def allowed_alias_ratio(nodes: int) -> float:
    """The share of a document's `nodes` that may come from alias expansion (go-yaml v3's allowedAliasRatio)."""
    if nodes <= _RATIO_RANGE_LOW:
        return 0.99
    if nodes >= _RATIO_RANGE_HIGH:
        return 0.10
    return 0.99 - 0.89 * (nodes - _RATIO_RANGE_LOW) / (_RATIO_RANGE_HIGH - _RATIO_RANGE_LOW)


def over_alias_budget(own: int, expanded: int) -> bool:
    """Whether `expanded` nodes from aliases beside `own` nodes written out exceed the budget."""
    total = own + expanded
    return (
        expanded > ALIAS_FREE_EXPANSION and total > ALIAS_FREE_NODES and expanded / total > allowed_alias_ratio(total)
    )


def _copied(value: Any) -> Any:
    """A fresh copy of an anchored value, so that no two paths of the data share a container."""
    if type(value) is dict:
        return {key: _copied(item) for key, item in value.items()}
    if type(value) is list:
        return [_copied(item) for item in value]
    return value  # str, int, float, bool, None: immutable


class Builder:
    """Builds plain data and position maps from a parser's events, iteratively."""

    def __init__(self, file: str) -> None:
        self._file = file
        # Path -> where its value (its key) starts and ends, packed by pack.
        self.value_marks: dict[JsonPath, int] = {}
        self.key_marks: dict[JsonPath, int] = {}
        # Path of a value written as an alias -> where its anchor's value is written (packed).
        self.alias_marks: dict[JsonPath, int] = {}
        self.diagnostics: list[Diagnostic] = []
        self._reported_merge = False
        self._anchors: dict[str, _Anchor] = {}
        self._expanded = 0  # nodes added by aliases so far

    def build(self, loader: yaml.SafeLoader) -> Any:
        next_event = loader.get_event
        next_event()  # StreamStartEvent
        if isinstance(next_event(), StreamEndEvent):  # else a DocumentStartEvent
            self._fail(
                EMPTY_DOCUMENT,
                "the blueprint is empty: there is no YAML content to validate",
                _EMPTY_HINT,
                Position(1, 1),
            )
        data = self._build_root(next_event)
        next_event()  # DocumentEndEvent
        event = next_event()
        if not isinstance(event, StreamEndEvent):
            self._fail_with(second_document(self._file, event.start_mark))
        if self.diagnostics:
            raise DiagnosticError(self.diagnostics)
        if data is None:  # `---` alone, or a lone `~`/`null`
            self._fail(EMPTY_DOCUMENT, "the blueprint is empty: its only content is null", _EMPTY_HINT, Position(1, 1))
        return data

    def _build_root(self, next_event: Callable[[], Any]) -> Any:
        # The hot loop: a large file has hundreds of thousands of events. The most common, a scalar without tag or
        # anchor inside a collection (a key, its value, a list item), and a collection without tag or anchor opening
        # and closing under a located value, are handled in line below, with as few calls as possible; everything
        # else, and whatever is refused, goes through the methods after this one (the same steps, spelt out).
        stack: list[_Frame] = []
        value_marks, key_marks = self.value_marks, self.key_marks
        value: Any
        nodes = 0  # nodes written out (scalars and collections), for the alias budget
        # Each plain scalar's text -> its value: typed once, and a text written 150,000 times held once (a
        # cluster snapshot's data took half the memory). Never a number with too many digits: each is reported.
        plain: dict[str, Any] = {}
        while True:
            event = next_event()
            kind = type(event)
            if kind is ScalarEvent and stack and event.tag is None and event.anchor is None:
                nodes += 1
                parent, text = stack[-1], event.value
                span = pack(event.start_mark, event.end_mark)
                value = text
                if event.implicit[0]:  # a plain scalar: resolve_plain_scalar, in line, once per distinct text
                    value = plain.get(text, _UNTYPED)
                    if value is _UNTYPED:
                        value = text
                        tag = WORD_TAGS.get(text)
                        if tag is None and text[:1] in NUMBER_FIRST:
                            typed = TYPED_PLAIN(text)
                            tag = None if typed is None else GROUP_TAGS[typed.lastgroup or ""]
                        if tag is not None:  # a number, bool or null
                            try:
                                value = plain[text] = SCALAR_CONVERTERS[tag](text)
                            except ValueError:  # too many digits: `_scalar_value` says so where each one stands
                                value = self._scalar_value(text, tag, event.start_mark, self._child_path(parent))
                        else:
                            plain[text] = value
                path = parent.path
                if parent.is_list:
                    if path is not None:
                        value_marks[(*path, len(parent.container))] = span
                    parent.container.append(value)  # type: ignore[union-attr]
                elif parent.key is _NO_KEY:  # a key: a new string key of a located mapping is the common case
                    if path is not None and type(value) is str and value != "<<" and value not in parent.container:
                        parent.key_path = key_path = (*path, value)
                        key_marks[key_path] = span
                        parent.key = value
                    else:  # refused, a duplicate, a merge key, or inside what is not located
                        parent.key = self._accept_key(parent, value, event.start_mark, event)
                else:
                    if parent.key is not _BAD_KEY:
                        if path is not None:
                            value_marks[parent.key_path] = span
                        parent.container[parent.key] = value  # type: ignore[call-overload]
                    parent.key = _NO_KEY
                continue
            if kind is MappingEndEvent or kind is SequenceEndEvent:
                frame = stack.pop()
                value = frame.container
                if frame.flow and frame.path is not None:  # `_closed`'s case for a [..] or {..}: ends at its bracket
                    value_marks[frame.path] = pack(frame.start, event.end_mark)
                else:
                    self._closed(frame, event)
                if frame.anchor is not None:
                    self._define(frame, nodes)
                if not stack:
                    return value
                parent = stack[-1]
                if parent.height <= frame.height:
                    parent.height = frame.height + 1
                if parent.is_list:
                    parent.container.append(value)  # type: ignore[union-attr]
                elif parent.key is _NO_KEY:  # a collection as a key: refused
                    parent.key = self._accept_key(parent, value, frame.start, None)
                else:
                    if parent.key is not _BAD_KEY:
                        parent.container[parent.key] = value  # type: ignore[call-overload]
                    parent.key = _NO_KEY
                continue
            start = event.start_mark
            path = self._child_path(stack[-1]) if stack else ()
            opens = kind is MappingStartEvent or kind is SequenceStartEvent
            if opens and event.tag is None and event.anchor is None and 0 < len(stack) < MAX_DEPTH:
                # `_open`'s case for a collection inside another with nothing to refuse
                nodes += 1
                if path is not None:
                    value_marks[path] = pack(start, start)  # its place in document order; the end comes later
                stack.append(_Frame({} if kind is MappingStartEvent else [], path, start, bool(event.flow_style)))
                continue
            if kind is ScalarEvent:
                nodes += 1
                value = self._scalar(event, start, path)
            elif kind is AliasEvent:
                value, event = self._alias(event, start, path, nodes, stack), None
            else:
                nodes += 1
                stack.append(self._open(event, start, path, len(stack), nodes - 1))
                continue
            if not stack:
                return value
            parent = stack[-1]
            if parent.is_list:
                parent.container.append(value)  # type: ignore[union-attr]
            else:
                self._add_to_mapping(parent, value, start, event)

    @staticmethod
    def _child_path(parent: _Frame) -> JsonPath | None:
        path = parent.path
        if path is None:
            return None
        if parent.is_list:
            return (*path, len(parent.container))
        key = parent.key
        if key is _NO_KEY or key is _BAD_KEY:
            return None  # a key (located through key_positions), or the value of a refused key
        return parent.key_path

    def _closed(self, frame: _Frame, event: Any) -> None:
        """A collection's end event: where it starts and ends is known now."""
        path = frame.path
        if path is None:
            return
        # A flow collection ends at its bracket; a block one where its last value ends (its end event stands
        # where the next line starts).
        container = frame.container
        if container and not frame.flow:
            last = self.value_marks.get((*path, len(container) - 1 if frame.is_list else next(reversed(container))))
            if last is not None:
                self.value_marks[path] = pack_to_end_of(frame.start, last)
                return
        self.value_marks[path] = pack(frame.start, event.end_mark)

    def _open(self, event: CollectionStartEvent, start: Mark, path: JsonPath | None, depth: int, nodes: int) -> _Frame:
        if depth >= MAX_DEPTH:
            self._fail_with(too_deep(self._file, mark_position(start), path or ()))
        is_mapping = type(event) is MappingStartEvent
        tag = event.tag
        if tag is not None and tag != NON_SPECIFIC_TAG and tag != (MAP_TAG if is_mapping else SEQ_TAG):
            kind = "mapping" if is_mapping else "sequence"
            standard = tag in _STANDARD_TAGS
            self._report_tag(
                f"the tag {_tag_name(tag)} cannot be used on a {kind}" if standard else _custom_tag_message(tag),
                start,
                path,
            )
        if path is not None:
            self.value_marks[path] = pack(start, start)  # its place in document order; _closed adds the end
        frame = _Frame({} if is_mapping else [], path, start, bool(event.flow_style))
        if event.anchor is not None:
            frame.anchor, frame.nodes_before = event.anchor, nodes + self._expanded
        return frame

    def _define(self, frame: _Frame, nodes: int) -> None:
        """An anchored collection has closed: what an alias of it copies. A later anchor of the same name
        replaces it, as YAML says."""
        size = nodes + self._expanded - frame.nodes_before
        mark = pack(frame.start, frame.start)
        self._anchors[frame.anchor or ""] = _Anchor(frame.container, size, frame.height, mark)

    def _alias(self, event: AliasEvent, start: Mark, path: JsonPath | None, nodes: int, stack: list[_Frame]) -> Any:
        """A copy of the anchored value, once the budget allows it and its nesting fits where it is used."""
        name = event.anchor or ""
        anchor = self._anchors.get(name)
        if anchor is None:  # PyYAML's composer says "found undefined alias"; the event parser does not check
            message = f"alias '*{name}' names no anchor defined before it"
            hint = f"write '&{name}' on the value to reuse, before this alias and not around it"
            self._report(YAML_SYNTAX, message, hint, start, path or ())
            return None
        expanded = self._expanded + anchor.size
        if over_alias_budget(nodes, expanded):
            self._fail_with(self._over_budget(name, anchor, nodes, expanded, start, path))
        depth = len(stack)
        if depth + anchor.height > MAX_DEPTH:
            self._fail_with(too_deep(self._file, mark_position(start), path or ()))
        self._expanded = expanded
        if path is not None:
            self.value_marks[path] = pack(start, event.end_mark)
            self.alias_marks[path] = anchor.mark
        if stack and stack[-1].height <= anchor.height:
            stack[-1].height = anchor.height + 1
        return _copied(anchor.value)

    def _over_budget(
        self, name: str, anchor: _Anchor, nodes: int, expanded: int, start: Mark, path: JsonPath | None
    ) -> Diagnostic:
        written = start_of(anchor.mark)
        message = (
            f"alias '*{name}' would bring the nodes added by aliases to {expanded:,} beside {nodes:,} written out; "
            f"aliases may add at most {allowed_alias_ratio(nodes + expanded):.0%} of a document's nodes"
        )
        related = (Span(self._file, written),)
        return located_error(ALIAS, message, _ALIAS_HINT, self._file, mark_position(start), path or (), related)

    def _scalar(self, event: ScalarEvent, start: Mark, path: JsonPath | None) -> Any:
        text = event.value
        tag: str | None
        if event.tag is None and event.anchor is None:  # the common case, kept short
            tag = resolve_plain_scalar(text) if event.implicit[0] else STR_TAG
        else:
            return self._tagged_or_anchored(event, start, path)
        if path is not None:
            self.value_marks[path] = pack(start, event.end_mark)
        if tag == STR_TAG:
            return text
        return self._scalar_value(text, tag, start, path)

    def _tagged_or_anchored(self, event: ScalarEvent, start: Mark, path: JsonPath | None) -> Any:
        tag = self._scalar_tag(event, start, path)
        value = None
        if tag is not None:
            if path is not None:
                self.value_marks[path] = pack(start, event.end_mark)
            value = self._scalar_value(event.value, tag, start, path)
        if event.anchor is not None:
            self._anchors[event.anchor] = _Anchor(value, 1, 0, pack(start, event.end_mark))
        return value

    def _scalar_value(self, text: str, tag: str, start: Mark, path: JsonPath | None) -> Any:
        if tag == STR_TAG:
            return text
        try:
            return SCALAR_CONVERTERS[tag](text)
        except ValueError:  # an integer beyond Python's 4300-digit conversion limit
            message = f"the number starting {text[:20]!r} has too many digits to read"
            self._report(YAML_SYNTAX, message, "quote it if it is meant as text", start, path or ())
            return None

    def _scalar_tag(self, event: ScalarEvent, start: Mark, path: JsonPath | None) -> str | None:
        """The scalar's tag, or None after reporting a tag or a tagged value that is not allowed."""
        tag = event.tag
        if tag is None:
            return resolve_plain_scalar(event.value) if event.implicit[0] else STR_TAG
        if tag == NON_SPECIFIC_TAG:
            return STR_TAG  # `! text` is YAML's way to say "just a string"
        if tag not in SCALAR_CONVERTERS:
            message = f"the tag {_tag_name(tag)} cannot be used on a scalar" if tag in _STANDARD_TAGS else None
            self._report_tag(message or _custom_tag_message(tag), start, path)
            return None
        pattern = CORE_PATTERN_BY_TAG.get(tag)
        if pattern is not None and not pattern.fullmatch(event.value):
            message = f"{event.value!r} is not a valid {_tag_name(tag)} value"
            hint = "remove the tag, or write the value the way YAML 1.2 spells it"
            self._report(CUSTOM_TAG, message, hint, start, path or ())
            return None
        return tag

    def _report_tag(self, message: str, start: Mark, path: JsonPath | None) -> None:
        self._report(CUSTOM_TAG, message, "remove the tag; quote the value if it should be a string", start, path or ())

    def _add_to_mapping(self, parent: _Frame, value: Any, start: Mark, event: ScalarEvent | None) -> None:
        container = parent.container
        if parent.key is _NO_KEY:
            parent.key = self._accept_key(parent, value, start, event)
        else:
            if parent.key is not _BAD_KEY and isinstance(container, dict):  # a frame with a key is a mapping's
                container[parent.key] = value
            parent.key = _NO_KEY

    def _accept_key(self, parent: _Frame, key: Any, start: Mark, event: ScalarEvent | None) -> str | _Pending:
        path = parent.path
        if not isinstance(key, str):
            if path is not None:
                self._report_key_type(key, start, path, event)
            return _BAD_KEY
        if path is None:
            return key  # inside something already refused: nothing here is addressable
        if event is not None and key == "<<" and event.tag is None and event.implicit[0]:
            if not self._reported_merge:  # once is enough: a file written with merges has many
                self._reported_merge = True
                message = "merge key '<<' is not allowed; YAML 1.2 has no merge keys, so which value wins is hidden"
                self._report(ALIAS, message, _MERGE_HINT, start, path)
            return _BAD_KEY
        key_path = (*path, key)
        first_mark = self.key_marks.get(key_path)
        if first_mark is None:
            self.key_marks[key_path] = pack(start, start if event is None else event.end_mark)
            parent.key_path = key_path
            return key
        first = start_of(first_mark)
        message = f"duplicate key {key!r} (first defined at line {first.line}, column {first.column})"
        hint = "remove one of them; YAML would silently keep only the last one"
        self._report(DUPLICATE_KEY, message, hint, start, key_path, related=(Span(self._file, first),))
        return _BAD_KEY  # its value must not be checked against the first one's positions

    def _report_key_type(self, key: Any, start: Mark, path: JsonPath, event: ScalarEvent | None) -> None:
        kind = _KIND_OF_VALUE.get(type(key), type(key).__name__)
        if event is None:
            message, hint = f"mapping keys must be strings, got a {kind}", "write the key as a plain name, like `name:`"
        elif event.value == "":
            message, hint = "mapping keys must be strings, got an empty key", "give the key a name, like `name:`"
        else:
            shown = kind if event.value == kind else f"{kind} {event.value}"  # not "got null null"
            message, hint = f"mapping keys must be strings, got {shown}", f'quote it: "{event.value}"'
        self._report(NON_STRING_KEY, message, hint, start, path)

    def _report(
        self, code: str, message: str, hint: str, start: Mark, path: JsonPath, related: tuple[Span, ...] = ()
    ) -> None:
        self.diagnostics.append(located_error(code, message, hint, self._file, mark_position(start), path, related))
        if len(self.diagnostics) >= MAX_DIAGNOSTICS:
            raise DiagnosticError(self.diagnostics)

    def _fail(self, code: str, message: str, hint: str, position: Position) -> None:
        self._fail_with(located_error(code, message, hint, self._file, position))

    def _fail_with(self, diagnostic: Diagnostic) -> None:
        raise DiagnosticError([*self.diagnostics, diagnostic])


def second_document(file: str, start: Mark) -> Diagnostic:
    """A second document starts at `start`: the error of a text whose first document is read without a word."""
    return located_error(
        SEVERAL_DOCUMENTS,
        "found a second YAML document; a blueprint is a single document",
        "remove the '---' line, or put each blueprint in a file of its own",
        file,
        mark_position(start),
    )


def _custom_tag_message(tag: str) -> str:
    return f"the tag {_tag_name(tag)} is not allowed; blueprints use plain YAML without tags"


_STANDARD_TAGS: Final = frozenset({STR_TAG, NULL_TAG, BOOL_TAG, INT_TAG, FLOAT_TAG, MAP_TAG, SEQ_TAG})
_EMPTY_HINT: Final = "a blueprint is a YAML mapping that starts with apiVersion and kind"
_ALIAS_HINT: Final = "alias smaller values, or write this one out in full; see the note for where its anchor is"
_MERGE_HINT: Final = "alias the whole mapping (`key: *name`), or write its keys out in this mapping"

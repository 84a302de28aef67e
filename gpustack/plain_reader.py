"""The hardened reader's quick path: a document's plain data without positions, or None to leave it to `Builder`.

`event_reader.Builder` keeps where every key and value starts and ends, and words every refusal. Both cost: at the
Kubernetes limit a 5.6 MiB snapshot takes 2.0 s through it against 1.2 s here, and libyaml's own loader takes 3.1 s.
Positions matter only to locate a diagnostic, and most documents never get one, so a reader that can find them later
(`load.parse_document(..., positions_later=True)`) reads the text here first and leaves the positions to a second
read by the Builder, done the first time a span is asked for.

This path reads only what the Builder would read to the same data without a word: plain and quoted scalars without
a tag (YAML 1.2 core-schema typing, as the Builder types them), and collections without a tag, up to the Builder's
depth limit, in one document. An anchor no alias uses changes nothing in the data, so it is read past. Anything else
returns None and the Builder reads the text as it always has, refusing what it refuses where it refuses it: a tag,
an alias (the Builder keeps the alias budget and notes where each anchor is written), a key that is not a plain new
string (a duplicate, a merge key `<<`, a number, a collection), a number with too many digits, a scalar at the root,
a second document, an empty one, and any syntax error. tests/test_plain_reader.py holds the two to the same data on
every YAML text the tests know and on generated ones.
"""

from __future__ import annotations

from typing import Any, Final

import yaml
from yaml.events import (
    DocumentEndEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)

from gpustack.core_schema import GROUP_TAGS, NUMBER_FIRST, SCALAR_CONVERTERS, TYPED_PLAIN, WORD_TAGS, BlueprintLoader
from gpustack.event_reader import MAX_DEPTH


class _LeftToBuilder(Exception):
    """The text holds something only the Builder reads (or refuses) as it should."""


class SecondDocument(Exception):
    """The first document was read as the Builder reads it without a word, and a second one starts at `start`
    (a parser mark): the Builder would refuse the text there and nowhere before (`event_reader.second_document`)."""

    def __init__(self, start: Any) -> None:
        super().__init__("a second YAML document")
        self.start = start


_NO_KEY: Final = object()  # a mapping waiting for its next key


def plain_data(text: str, loader_class: type[yaml.SafeLoader] = BlueprintLoader) -> Any | None:
    """The document's data as the Builder would build it, or None where the Builder must read the text.

    Raises SecondDocument where a clean first document is followed by another (several `kubectl get -o yaml`
    outputs joined with `---`), so that the caller need not read the first one twice more to hear it."""
    loader = loader_class(text)
    try:
        return _read(loader)
    except (_LeftToBuilder, yaml.YAMLError, ValueError):  # ValueError: an integer beyond int()'s digit limit
        return None
    finally:
        loader.dispose()


def _read(loader: yaml.SafeLoader) -> Any:
    next_event = loader.get_event
    next_event()  # StreamStartEvent
    if type(next_event()) is StreamEndEvent:  # an empty text: the Builder words it
        raise _LeftToBuilder
    data = _root(next_event)
    if type(next_event()) is not DocumentEndEvent:
        raise _LeftToBuilder
    event = next_event()
    if type(event) is not StreamEndEvent:
        raise SecondDocument(event.start_mark)
    return data


def _root(next_event: Any) -> Any:
    # One frame per open collection, in two parallel stacks: the container, and for a mapping its pending key
    # (_NO_KEY between entries; None for a sequence). The common events are handled in line: this loop runs once per
    # node of a 5 MiB file.
    containers: list[Any] = []
    keys: list[Any] = []
    word_tags, number_first, typed_plain, group_tags = WORD_TAGS, NUMBER_FIRST, TYPED_PLAIN, GROUP_TAGS
    converters = SCALAR_CONVERTERS
    # Each plain scalar's text -> its value: typed once, and a text written 150,000 times (a node's name, a resource,
    # a phase) held once, which halved the memory of a snapshot's data (62 MiB -> 33 at the Kubernetes limit).
    plain: dict[str, Any] = {}
    while True:
        event = next_event()
        kind = type(event)
        if kind is ScalarEvent:
            if event.tag is not None or not containers:
                raise _LeftToBuilder
            value = event.value
            if event.implicit[0]:  # a plain scalar, typed as core_schema.resolve_plain_scalar types it
                known = plain.get(value, _NO_KEY)
                if known is not _NO_KEY:
                    value = known
                else:  # a number with too many digits raises ValueError, and the Builder reports it
                    text = value
                    tag = word_tags.get(value)
                    if tag is None and value[:1] in number_first:
                        typed = typed_plain(value)
                        tag = None if typed is None else group_tags[typed.lastgroup or ""]
                    if tag is not None:
                        value = converters[tag](value)
                    plain[text] = value
        elif kind is MappingStartEvent or kind is SequenceStartEvent:
            if event.tag is not None or len(containers) >= MAX_DEPTH:
                raise _LeftToBuilder
            if kind is MappingStartEvent:
                containers.append({})
                keys.append(_NO_KEY)
            else:
                containers.append([])
                keys.append(None)
            continue
        elif kind is MappingEndEvent or kind is SequenceEndEvent:
            value = containers.pop()
            keys.pop()
            if not containers:
                return value
        else:  # an alias
            raise _LeftToBuilder
        key = keys[-1]
        if key is None:
            containers[-1].append(value)
        elif key is _NO_KEY:
            if type(value) is not str or value == "<<" or value in containers[-1]:
                raise _LeftToBuilder
            keys[-1] = value
        else:
            containers[-1][key] = value
            keys[-1] = _NO_KEY

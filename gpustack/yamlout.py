"""Writing YAML that every reader types the same way.

Manifests are read by PyYAML (YAML 1.1), by gpustack's own loader (YAML 1.2 core schema)
and by Kubernetes (sigs.k8s.io/yaml -> goyaml.v2, its own mix). `yaml.safe_dump` leaves
`y`, `n`, `1e3` and `0o10` bare, which Kubernetes reads as bool, float and int, and it writes
`&id001`/`*id001` when one Python object appears twice. This writer double-quotes any string
that one of the three could read as something else, and never writes anchors or aliases.
"""

from __future__ import annotations

import io
import re
import sys
from collections.abc import Iterable, Iterator
from typing import Any, Final

import yaml
from yaml.nodes import ScalarNode

from gpustack.load import STR_TAG, resolve_plain_scalar

_DOUBLE_QUOTED: Final = '"'
_LITERAL: Final = "|"
_NO_WRAP: Final = sys.maxsize  # never fold a long string across lines

# Line breaks that readers normalise to '\n' inside literal blocks; only escapes keep them.
_ODD_LINE_BREAKS: Final = re.compile("[\r\x85\u2028\u2029]")

# goyaml.v2 resolve.go: the words it maps to bool, null, float or merge.
_GO_YAML_WORDS: Final = frozenset(
    {
        *("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"),
        *("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"),
        *("", "~", "null", "Null", "NULL", "<<"),
        *(".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF"),
    }
)
# goyaml.v2 tries numbers only when the first character is a sign, a digit or a dot. It then
# removes '_' and tries strconv.ParseInt(s, 0, 64) (0x, 0o, 0b and leading-zero octal), then
# its yamlStyleFloat; a leading dot goes to strconv.ParseFloat. Both are covered, with some room.
_GO_YAML_NUMBER: Final = re.compile(
    r"[-+]?(?:0[xX][0-9a-fA-F]+|0[oO]?[0-7]*|0[bB][01]+|[0-9]+)"
    r"|[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
)
# goyaml.v2 reads "2006-1-2", optionally followed by a time, as a timestamp.
_GO_YAML_TIMESTAMP: Final = re.compile(r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt ].*)?")

_YAML_1_1: Final = yaml.resolver.Resolver()


def dump_yaml(obj: Any) -> str:
    """One YAML document: block style, keys in the order given, ending with a newline."""
    return Writer().dump(obj)


def dump_all(objs: Iterable[Any]) -> str:
    """A stream of documents separated by '---' lines."""
    return "".join(dump_each(objs))


def dump_each(objs: Iterable[Any]) -> Iterator[str]:
    """dump_all's stream a document at a time, each after the first starting with its '---' line."""
    writer = Writer()  # one style cache for the whole stream, dropped with it
    for index, obj in enumerate(objs):
        yield writer.dump(obj) if index == 0 else "---\n" + writer.dump(obj)


def could_be_misread(text: str) -> bool:
    """Whether YAML 1.1, YAML 1.2 core or goyaml.v2 would read the plain scalar as a non-string."""
    return (
        _YAML_1_1.resolve(ScalarNode, text, (True, False)) != STR_TAG
        or resolve_plain_scalar(text) != STR_TAG
        or _go_yaml_reads_as_non_string(text)
    )


def _go_yaml_reads_as_non_string(text: str) -> bool:
    if text in _GO_YAML_WORDS:
        return True
    if text[0] not in "+-.0123456789":
        return False
    return bool(_GO_YAML_NUMBER.fullmatch(text.replace("_", "")) or _GO_YAML_TIMESTAMP.fullmatch(text))


class Writer:
    """Dumps documents, libyaml's C emitter where PyYAML has it, with one style decision per distinct string.

    The C emitter writes the same bytes as PyYAML's pure-Python one for the styles chosen here, as
    long as every character is printable ASCII or a line break, and every key is a short single
    line (tests compare both paths on every example, generated fleets and random strings). A
    document holding anything else is written by the pure-Python emitter, which is the reference.
    """

    def __init__(self, libyaml: bool = True) -> None:
        """libyaml=False: always the pure-Python emitter (the reference the C path is tested against)."""
        self.c_dumper = _CDumper if libyaml else None
        self.pure_documents = 0  # documents that needed the pure-Python emitter
        # Style per distinct string, for as long as this writer lives (one stream or one file). The
        # C path's cache holds only strings it may write, so each path has its own.
        self.styles: dict[str, str | None] = {}
        self.pure_styles: dict[str, str | None] = {}
        self.tags: dict[str, str] = {}  # the C path's implicit tag per distinct scalar text

    def dump(self, obj: Any) -> str:
        if self.c_dumper is not None:
            try:
                return _dump(obj, self.c_dumper, self.styles, width=-1, tags=self.tags)  # -1: never wrap
            except _NotForLibyaml:
                pass
        self.pure_documents += 1
        return _dump(obj, _PureDumper, self.pure_styles, width=_NO_WRAP)


class _NotForLibyaml(Exception):
    """A string whose escaping libyaml and PyYAML might word differently."""


def _dump(
    obj: Any, dumper_class: type[Any], styles: dict[str, str | None], width: int, tags: dict[str, str] | None = None
) -> str:
    stream = io.StringIO()
    dumper = dumper_class(
        stream, default_flow_style=False, sort_keys=False, allow_unicode=True, width=width
    )  # sort_keys=False: the compiler decides the order
    dumper.styles = styles
    dumper.tags = tags
    try:
        dumper.open()
        dumper.represent(obj)
        dumper.close()
    finally:
        dumper.dispose()
    return stream.getvalue()


class _PureDumper(yaml.SafeDumper):
    styles: dict[str, str | None]

    def ignore_aliases(self, data: Any) -> bool:
        return True  # a shared object is written out again, never as &id001 / *id001


def _represent_str(dumper: _PureDumper, text: str) -> ScalarNode:
    style = dumper.styles.get(text, _UNDECIDED)
    if style is _UNDECIDED:
        style = dumper.styles[text] = _choose_style(text)
    return ScalarNode(STR_TAG, text, style=style)


_UNDECIDED: Final = "?"
_MAP_TAG: Final = "tag:yaml.org,2002:map"
_SEQ_TAG: Final = "tag:yaml.org,2002:seq"


def _choose_style(text: str) -> str | None:
    """Plain where that is safe, a literal block for multi-line text, double quotes otherwise."""
    if _ODD_LINE_BREAKS.search(text):
        return _DOUBLE_QUOTED
    if "\n" in text:
        return _LITERAL  # the emitter falls back to double quotes where a block cannot hold the text
    if could_be_misread(text):
        return _DOUBLE_QUOTED
    if _ASCII_LINE.fullmatch(text):  # what analyze_scalar would say, without walking the string in Python
        return None if _ASCII_PLAIN.fullmatch(text) else _DOUBLE_QUOTED
    analysis = _ANALYST.analyze_scalar(text)
    if analysis.empty or not analysis.allow_block_plain:
        return _DOUBLE_QUOTED  # one quoting style everywhere, instead of the emitter's single quotes
    return None


# PyYAML's analyze_scalar, for one line of printable ASCII: plain in a block unless it starts with
# an indicator ('---', '...', one of #,[]{}&*!|>'"%@` or '?', ':', '-' before a space or the end) or
# a space, ends with a space or ':', or holds ': ' or ' #'. Tests hold the two to the same answers.
_ASCII_LINE: Final = re.compile(r"[\x20-\x7e]+")
_ASCII_PLAIN: Final = re.compile(
    r"(?!---|\.\.\.|[#,\[\]{}&*!|>'\"%@` ]|[?:-](?: |\Z))(?!.*(?:: | #|[: ]\Z)).+", re.DOTALL
)
# analyze_scalar reads only allow_unicode from the emitter's state.
_ANALYST: Final = yaml.emitter.Emitter(io.StringIO(), allow_unicode=True)


def _represent_tuple(dumper: _PureDumper, items: tuple[Any, ...]) -> yaml.SequenceNode:
    return dumper.represent_list(items)


def _refuse_set(dumper: _PureDumper, items: set[Any]) -> yaml.Node:
    # A set's order changes with the hash seed, and !!set is not JSON: sort it into a list first.
    raise yaml.representer.RepresenterError(f"cannot write a set as Kubernetes YAML (sort it into a list): {items!r}")


_PureDumper.add_representer(str, _represent_str)
_PureDumper.add_representer(tuple, _represent_tuple)  # frozen model objects hold tuples
_PureDumper.add_representer(set, _refuse_set)

# Characters both emitters treat alike in every style chosen above.
_LIBYAML_SAFE: Final = re.compile(r"[\x20-\x7e\n]*")
# Keys both emitters write as `key:`. PyYAML counts the "!!str" of even an implicit tag towards its
# 128-character limit on simple keys and refuses empty ones; libyaml does neither, so such keys
# (and multi-line ones) go to the pure-Python emitter.
_LIBYAML_SIMPLE_KEY: Final = re.compile(r"[\x20-\x7e]{1,100}")


def _c_dumper_class() -> type[Any] | None:
    try:
        from yaml._yaml import CEmitter as c_emitter  # only where PyYAML was built with libyaml (as yaml.cyaml does)
    except ImportError:
        return None

    class CDumper(c_emitter, yaml.representer.SafeRepresenter, yaml.resolver.Resolver):
        """libyaml's emitter, fed the nodes _PureDumper would build, with the same style decisions.

        Dicts, lists, tuples and strings (nearly every node of a manifest) are turned into nodes
        here, as SafeRepresenter would with default_flow_style=False, sort_keys=False and no
        aliases; everything else goes through SafeRepresenter itself.
        """

        styles: dict[str, str | None]
        tags: dict[str, str]

        def __init__(self, stream: Any, **options: Any) -> None:
            default_flow_style = options.pop("default_flow_style")
            sort_keys = options.pop("sort_keys")
            c_emitter.__init__(self, stream, **options)
            yaml.representer.SafeRepresenter.__init__(self, default_flow_style=default_flow_style, sort_keys=sort_keys)
            yaml.resolver.Resolver.__init__(self)

        def ignore_aliases(self, data: Any) -> bool:
            return True

        def represent_data(self, data: Any) -> yaml.Node:
            kind = type(data)
            if kind is str:
                style = self.styles.get(data, _UNDECIDED)
                if style is _UNDECIDED:
                    if not _LIBYAML_SAFE.fullmatch(data):
                        raise _NotForLibyaml(data)
                    style = self.styles[data] = _choose_style(data)
                return ScalarNode(STR_TAG, data, style=style)
            if kind is dict:
                for key in data:
                    if type(key) is str and not _LIBYAML_SIMPLE_KEY.fullmatch(key):
                        raise _NotForLibyaml(key)
                represent = self.represent_data
                pairs = [(represent(key), represent(value)) for key, value in data.items()]
                return yaml.MappingNode(_MAP_TAG, pairs, flow_style=False)
            if kind is list or kind is tuple:
                return yaml.SequenceNode(_SEQ_TAG, [self.represent_data(item) for item in data], flow_style=False)
            node: yaml.Node = super().represent_data(data)
            return node

        def resolve(self, kind: type[yaml.Node], value: str, implicit: tuple[bool, bool]) -> str:
            # The C serializer asks twice per scalar whether its tag can go unwritten.
            if kind is not ScalarNode:
                return str(super().resolve(kind, value, implicit))
            if not implicit[0]:
                return STR_TAG  # the default tag of a quoted scalar, as Resolver answers without path resolvers
            tag = self.tags.get(value)
            if tag is None:
                tag = self.tags[value] = super().resolve(kind, value, implicit)
            return tag

    CDumper.yaml_representers = dict(_PureDumper.yaml_representers)
    return CDumper


_CDumper: Final = _c_dumper_class()
LIBYAML: Final = _CDumper is not None
SLOW_WRITER_NOTE: Final = (
    "gpustack: PyYAML has no libyaml here, so YAML is written by its pure-Python emitter: "
    "the same bytes, several times slower (reinstall PyYAML from a wheel built with libyaml)"
)

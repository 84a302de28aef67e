"""Writing YAML that every reader types the same way.

Manifests are read by PyYAML (YAML 1.1), by gpustack's own loader (YAML 1.2 core schema)
and by Kubernetes (sigs.k8s.io/yaml -> goyaml.v2, its own mix). `yaml.safe_dump` leaves
`y`, `n`, `1e3` and `0o10` bare, which Kubernetes reads as bool, float and int, and it writes
`&id001`/`*id001` when one Python object appears twice. This writer double-quotes any string
that one of the three could read as something else, and never writes anchors or aliases.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
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
    return yaml.dump(
        obj,
        Dumper=_KubernetesDumper,
        default_flow_style=False,
        sort_keys=False,  # the compiler decides the order
        allow_unicode=True,
        width=_NO_WRAP,
    )


def dump_all(objs: Iterable[Any]) -> str:
    """A stream of documents separated by '---' lines."""
    return "---\n".join(dump_yaml(obj) for obj in objs)


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


class _KubernetesDumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True  # a shared object is written out again, never as &id001 / *id001


def _represent_str(dumper: _KubernetesDumper, text: str) -> ScalarNode:
    return dumper.represent_scalar(STR_TAG, text, style=_choose_style(dumper, text))


def _choose_style(dumper: _KubernetesDumper, text: str) -> str | None:
    """Plain where that is safe, a literal block for multi-line text, double quotes otherwise."""
    if _ODD_LINE_BREAKS.search(text):
        return _DOUBLE_QUOTED
    if "\n" in text:
        return _LITERAL  # the emitter falls back to double quotes where a block cannot hold the text
    if could_be_misread(text):
        return _DOUBLE_QUOTED
    analysis = dumper.analyze_scalar(text)
    if analysis.empty or not analysis.allow_block_plain:
        return _DOUBLE_QUOTED  # one quoting style everywhere, instead of the emitter's single quotes
    return None


def _represent_tuple(dumper: _KubernetesDumper, items: tuple[Any, ...]) -> yaml.SequenceNode:
    return dumper.represent_list(items)


def _refuse_set(dumper: _KubernetesDumper, items: set[Any]) -> yaml.Node:
    # A set's order changes with the hash seed, and !!set is not JSON: sort it into a list first.
    raise yaml.representer.RepresenterError(f"cannot write a set as Kubernetes YAML (sort it into a list): {items!r}")


_KubernetesDumper.add_representer(str, _represent_str)
_KubernetesDumper.add_representer(tuple, _represent_tuple)  # frozen model objects hold tuples
_KubernetesDumper.add_representer(set, _refuse_set)

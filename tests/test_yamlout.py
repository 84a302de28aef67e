"""The manifest writer: strings every YAML reader types alike, no aliases, stable bytes."""

from __future__ import annotations

import copy
import math
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gpustack.load import parse_document
from gpustack.yamlout import could_be_misread, dump_all, dump_yaml

# Strings that YAML 1.1 (PyYAML), YAML 1.2 core (gpustack's loader) or goyaml.v2 (Kubernetes)
# would read as something other than a string when written bare.
MUST_QUOTE = [
    *["y", "n", "Y", "N", "yes", "Yes", "NO", "no", "on", "On", "off", "OFF"],
    *["true", "True", "false", "FALSE", "null", "Null", "~", ""],
    *["1e3", "1E3", "1.0e+3", "0o10", "0O10", "010", "08", "0x1F", "0b101", "-0b1", "42", "-1", "+1"],
    *["12.10", "1.31", "1.", ".5", "1_000", "0x_1F", "22:22", "1:30:00"],
    *[".inf", "-.Inf", "+.INF", ".nan", ".NaN"],
    *["2024-01-01", "2024-1-2", "2024-01-01T10:00:00Z", "2024-01-01 10:00:00"],
    *["=", "<<"],
]
# Strings that need quotes for YAML syntax alone: they must be double-quoted too (one style).
NEED_SYNTAX_QUOTES = [
    *["-", "a: b", "#x", "x #y", " lead", "trail ", "- item"],
    *["[x]", "{x}", "*x", "&x", "!x", "%x", "@x", "`x"],
]
STAY_PLAIN = [
    *["gpu", "nvidia.com/gpu", "nvidia.com/mig-3g.40gb", "3g.40gb", "1g.10gb", "A100-SXM4-80GB"],
    *["nvcr.io/nvidia/k8s-device-plugin:v0.17.0", "registry.example.com:5000/vllm@sha256:abc123"],
    *["0.20.0", "535.104.05", "v1.31", "1.2.3", "x86_64", "NoSchedule", "single-numa-node", "a=b", "caf\u00e9"],
]


@pytest.mark.parametrize("text", MUST_QUOTE + NEED_SYNTAX_QUOTES)
def test_ambiguous_strings_are_double_quoted(text: str) -> None:
    assert dump_yaml({"v": text}) == f'v: "{text}"\n'


@pytest.mark.parametrize("text", MUST_QUOTE)
def test_ambiguous_strings_are_known_to_be_ambiguous(text: str) -> None:
    assert could_be_misread(text)


@pytest.mark.parametrize("text", STAY_PLAIN)
def test_ordinary_strings_stay_plain(text: str) -> None:
    assert dump_yaml({"v": text}) == f"v: {text}\n"
    assert not could_be_misread(text)


@pytest.mark.parametrize("text", ["y", "n", "Y", "1e3", "0o10", "08", "0b1_0", ".5_0", "2024-1-2", "+1"])
def test_strings_only_kubernetes_would_misread_are_quoted(text: str) -> None:
    # These are strings to PyYAML (YAML 1.1), so safe_dump leaves some of them bare.
    assert could_be_misread(text)
    assert dump_yaml([text]) == f'- "{text}"\n'


def test_keys_are_quoted_by_the_same_rules() -> None:
    assert dump_yaml({"y": 1, "on": 2, "gpu": 3}) == '"y": 1\n"on": 2\ngpu: 3\n'


def test_other_types_are_written_as_yaml_types() -> None:
    written = dump_yaml({"int": 8, "float": 0.5, "big": 1e16, "bool": True, "none": None, "inf": math.inf})
    assert written == "int: 8\nfloat: 0.5\nbig: 1.0e+16\nbool: true\nnone: null\ninf: .inf\n"


def test_multi_line_strings_use_literal_blocks() -> None:
    assert dump_yaml({"script": "set -e\nnvidia-smi\n"}) == "script: |\n  set -e\n  nvidia-smi\n"
    assert dump_yaml({"script": "a\nb"}) == "script: |-\n  a\n  b\n"


@pytest.mark.parametrize("text", ["a\rb", "a\x85b", "a\u2028b", "trailing space \nb", "tab\there\nx"])
def test_line_breaks_a_block_would_change_are_escaped(text: str) -> None:
    written = dump_yaml({"v": text})
    assert written.startswith('v: "')
    assert yaml.safe_load(written) == {"v": text}
    assert parse_document(written, "out.yaml").data == {"v": text}


def test_keys_keep_the_order_the_compiler_gave() -> None:
    assert dump_yaml({"kind": "ConfigMap", "apiVersion": "v1", "data": {"b": "1", "a": "2"}}) == (
        'kind: ConfigMap\napiVersion: v1\ndata:\n  b: "1"\n  a: "2"\n'
    )


def test_shared_objects_are_written_out_not_aliased() -> None:
    tolerations = [{"key": "gpu", "operator": "Exists"}]
    labels = {"pool": "a100"}
    shared = {"a": {"tolerations": tolerations, "labels": labels}, "b": {"tolerations": tolerations, "labels": labels}}
    written = dump_yaml(shared)
    assert "&" not in written and "*" not in written
    assert written == dump_yaml(copy.deepcopy(shared))


def test_long_strings_are_not_folded() -> None:
    long = " ".join(["word"] * 100)
    assert dump_yaml({"v": long}) == f"v: {long}\n"
    assert dump_yaml({"v": long + ": x"}) == f'v: "{long}: x"\n'


def test_unicode_is_written_as_is() -> None:
    assert dump_yaml({"team": "\u00e9quipe-\u6771\u4eac"}) == "team: \u00e9quipe-\u6771\u4eac\n"


def test_tuples_are_sequences() -> None:
    assert dump_yaml({"nodes": ("a", "b")}) == "nodes:\n- a\n- b\n"


def test_sets_are_refused_because_their_order_is_not_stable() -> None:
    with pytest.raises(yaml.representer.RepresenterError):
        dump_yaml({"nodes": {"a", "b"}})


def test_empty_collections() -> None:
    assert dump_yaml({"a": {}, "b": []}) == "a: {}\nb: []\n"


def test_dump_all_separates_documents() -> None:
    assert dump_all([{"a": 1}, {"b": "yes"}]) == 'a: 1\n---\nb: "yes"\n'
    assert dump_all([]) == ""
    assert dump_all(iter([{"a": 1}])) == "a: 1\n"


def test_output_is_deterministic() -> None:
    def build() -> dict[str, Any]:
        return {"metadata": {"name": "x", "labels": {"b": "y", "a": "1e3"}}, "data": {"k": "multi\nline\n"}}

    first = dump_yaml(build())
    assert all(dump_yaml(build()) == first for _ in range(3))
    assert dump_all([build(), build()]) == first + "---\n" + first


# --- round trip --------------------------------------------------------------------------------

TRICKY = st.sampled_from(MUST_QUOTE + NEED_SYNTAX_QUOTES + STAY_PLAIN) | st.text(
    "0123456789.-+_:eExXoObB yYnNtT~#'\"\n |>", max_size=12
)
SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TRICKY | st.text(max_size=30)
KEYS = TRICKY | st.text(max_size=20)
VALUES = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(KEYS, children, max_size=4),
    max_leaves=20,
)


def same(a: Any, b: Any) -> bool:
    """Equal, with the same types all the way down (so True is not 1 and 1 is not 1.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(KEYS, VALUES, max_size=6))
def test_every_value_reads_back_the_same_in_yaml_1_1_and_1_2(obj: dict[str, Any]) -> None:
    written = dump_yaml(obj)
    assert written.endswith("\n")
    assert same(yaml.safe_load(written), obj), written
    assert same(parse_document(written, "out.yaml").data, obj), written


@settings(max_examples=100, deadline=None)
@given(st.lists(st.dictionaries(KEYS, VALUES, min_size=1, max_size=3), max_size=3))
def test_streams_read_back_document_by_document(objs: list[dict[str, Any]]) -> None:
    assert same(list(yaml.safe_load_all(dump_all(objs))), objs)

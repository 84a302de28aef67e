"""Property tests: whatever it is given, the loader returns a Document or raises diagnostics.

Never another exception, and every diagnostic points somewhere real. A loaded Document's
position maps cover exactly the paths its data has.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import gpustack.load as load
from gpustack.diagnostic import DiagnosticError, JsonPath, Severity
from gpustack.load import parse_document

BASE = """\
apiVersion: gpustack.io/v1alpha1
kind: ClusterBlueprint
metadata:
  name: prod-ai
spec:
  kubernetes: {version: "1.31"}
  nodePools:
    - name: a100-inference
      gpu: {model: A100-SXM4-80GB, count: 8}
      nodes: [gpu-node-01, 'gpu-node-02']
      labels: {gpu-pool: inference}
      taints:
        - {key: gpu-pool, value: inference, effect: NoSchedule}
      sharing:
        strategy: mig
        mig: {strategy: mixed, layout: {"3g.40gb": 1, "1g.10gb": 2}}
    - name: l4-dev
      gpu: {model: L4, count: 4}
      sharing:
        strategy: time-slicing
        timeSlicing: {replicas: 4}
  tenants:
    - name: search   # a comment
      namespaces: [search-prod, search-staging]
      quota:
        l4-dev: {gpu: 4}
      description: |
        several
        lines
"""

INJECTIONS = [
    "&a ", "*a", "!tag ", "!Ref ", "!!python/object ", "!!set ", "!!int ", "---\n", "...\n", "%YAML 1.2\n",
    "\t", "<<: ", "? ", "- ", ": ", "[", "]", "{", "}", ",", "'", '"', "#", "|", ">-", "\\", "\n", "  ",
    "~", "0o7", "1e3", "9" * 5000, "\x00", "\x85", "\u2028", "\r", "\ufeff", "\ud800", "é", "\U0001f600",
]  # fmt: skip
YAML_ALPHABET = " \n\t-:?[]{},#&*!|>'\"%@`ab01.~<=\\"
CODE = re.compile(r"GS0\d\d")


def paths_of(data: Any, path: JsonPath = ()) -> Iterator[tuple[JsonPath, bool]]:
    """Every path in the data, with whether it is the value of a mapping key."""
    pending: list[tuple[JsonPath, Any, bool]] = [(path, data, False)]
    while pending:
        here, value, keyed = pending.pop()
        yield here, keyed
        if isinstance(value, dict):
            pending.extend(((*here, k), v, True) for k, v in value.items())
        elif isinstance(value, list):
            pending.extend(((*here, i), v, False) for i, v in enumerate(value))


def check_outcome(text: str | bytes) -> None:
    try:
        doc = parse_document(text, "fuzz.yaml")
    except DiagnosticError as error:
        assert error.diagnostics
        for diagnostic in error.diagnostics:
            assert CODE.fullmatch(diagnostic.code), diagnostic
            assert diagnostic.severity is Severity.ERROR
            assert diagnostic.message and diagnostic.hint
            assert diagnostic.span is not None and diagnostic.span.file == "fuzz.yaml"
            assert diagnostic.span.start.line >= 1 and diagnostic.span.start.column >= 1
        return
    every = dict(paths_of(doc.data))
    # Inside a value written as an alias nothing is located of its own: it stands where the alias is used.
    aliased = set(doc.alias_origins)
    own = {path: keyed for path, keyed in every.items() if not any(path[:n] in aliased for n in range(len(path)))}
    assert aliased <= set(doc.value_positions)
    assert set(doc.value_positions) == set(own)
    assert set(doc.key_positions) == {path for path, keyed in own.items() if keyed}
    last_line = len(doc.text.splitlines()) + 1
    for position in [*doc.value_positions.values(), *doc.key_positions.values()]:
        assert 1 <= position.line <= last_line and position.column >= 1


@contextmanager
def parser(loader_class: type) -> Iterator[None]:
    saved = load.BlueprintLoader
    load.BlueprintLoader = loader_class  # type: ignore[misc]
    try:
        yield
    finally:
        load.BlueprintLoader = saved  # type: ignore[misc]


@st.composite
def mutations(draw: st.DrawFn) -> str:
    text = BASE
    for _ in range(draw(st.integers(1, 4))):
        operation = draw(st.sampled_from(["delete", "duplicate", "insert", "swap lines"]))
        at = draw(st.integers(0, len(text)))
        size = draw(st.integers(1, 30))
        if operation == "delete":
            text = text[:at] + text[at + size :]
        elif operation == "duplicate":
            text = text[: at + size] + text[at : at + size] + text[at + size :]
        elif operation == "insert":
            piece = draw(st.sampled_from(INJECTIONS) | st.text(YAML_ALPHABET, max_size=6))
            text = text[:at] + piece + text[at:]
        else:
            lines = text.split("\n")
            first, second = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
            lines[first], lines[second] = lines[second], lines[first]
            text = "\n".join(lines)
    return text


@st.composite
def flipped_bytes(draw: st.DrawFn) -> bytes:
    data = bytearray(BASE.encode())
    for _ in range(draw(st.integers(1, 3))):
        data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
    return bytes(data)


@settings(max_examples=300, deadline=None)
@given(mutations())
def test_mutated_blueprints(text: str) -> None:
    check_outcome(text)


@settings(max_examples=80, deadline=None)
@given(mutations())
def test_mutated_blueprints_with_the_pure_python_parser(text: str) -> None:
    with parser(load.PureBlueprintLoader):
        check_outcome(text)


@settings(max_examples=200, deadline=None)
@given(st.text(YAML_ALPHABET, max_size=120))
def test_yaml_punctuation(text: str) -> None:
    check_outcome(text)


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=200))
def test_random_text(text: str) -> None:
    check_outcome(text)


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=200) | flipped_bytes())
def test_random_bytes(data: bytes) -> None:
    check_outcome(data)


def test_the_base_document_loads() -> None:
    doc = parse_document(BASE, "fuzz.yaml")
    assert doc.data["spec"]["nodePools"][0]["sharing"]["mig"]["layout"] == {"3g.40gb": 1, "1g.10gb": 2}
    check_outcome(BASE)


def test_the_invariants_hold_with_aliases() -> None:
    document = parse_document("a: &x {b: [1, {c: 2}]}\nd: *x\ne: [*x, &y k, *y]\n? *y\n: 4\n", "fuzz.yaml")
    assert document.data["k"] == 4 and document.data["e"][0] == {"b": [1, {"c": 2}]}
    check_outcome(document.text)

"""The hardened blueprint loader: codes GS001-GS011, YAML 1.2 scalars, positions, and limits."""

from __future__ import annotations

import io
import math
import os
import re
import sys
import time
import tracemalloc
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

import gpustack.load as load
from gpustack.codes import (
    ALIAS,
    CODES,
    CUSTOM_TAG,
    DUPLICATE_KEY,
    FILE_TOO_LARGE,
    FILE_UNREADABLE,
    NON_STRING_KEY,
    NOT_UTF8,
    TOO_DEEP,
    YAML_SYNTAX,
)
from gpustack.core_schema import CORE_SCHEMA, WORD_TAGS
from gpustack.diagnostic import Diagnostic, DiagnosticError, Position, Severity
from gpustack.load import MAX_BYTES, MAX_DEPTH, STR_TAG, Document, parse_document, read_document, resolve_plain_scalar

CASES = Path(__file__).parent / "cases" / "load"
CASE_FILES = sorted(CASES.glob("*.yaml"))
HEADER = re.compile(r"^# (expect|message|hint): (.*)$")
EXPECT = re.compile(r"(GS\d{3}) at (\d+):(\d+)")


@pytest.fixture(params=["libyaml", "pure-python"])
def parser(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a test with the libyaml parser and again with PyYAML's pure-Python one."""
    if request.param == "pure-python":
        monkeypatch.setattr(load, "BlueprintLoader", load.PureBlueprintLoader)
    elif not issubclass(load.BlueprintLoader, load.yaml.CSafeLoader):
        pytest.skip(
            "PyYAML was installed without its fast C parser (libyaml), so only the pure-Python parser is tested; "
            "install libyaml (Debian: libyaml-dev) and reinstall PyYAML to test both"
        )
    return request.param


def diagnostics_of(text: str | bytes, file: str = "blueprint.yaml") -> tuple[Diagnostic, ...]:
    with pytest.raises(DiagnosticError) as raised:
        parse_document(text, file)
    return raised.value.diagnostics


def only(text: str | bytes) -> Diagnostic:
    (diagnostic,) = diagnostics_of(text)
    return diagnostic


def where(diagnostic: Diagnostic) -> tuple[str, int, int]:
    assert diagnostic.span is not None
    return diagnostic.code, diagnostic.span.start.line, diagnostic.span.start.column


def load_data(text: str) -> Any:
    return parse_document(text, "blueprint.yaml").data


# --- invalid inputs as data ------------------------------------------------------------------


@dataclass
class Expected:
    code: str
    line: int
    column: int
    message: str | None = None
    hint: str | None = None


def expectations(case: Path) -> list[Expected]:
    """The `# expect: GSxxx at L:C` header, each optionally followed by `# message:` and `# hint:`."""
    found: list[Expected] = []
    for line in case.read_bytes().decode("ascii", "replace").splitlines():
        header = HEADER.match(line)
        if header is None:
            continue
        kind, text = header.groups()
        if kind == "expect":
            code, row, column = EXPECT.fullmatch(text).groups()  # type: ignore[union-attr]
            found.append(Expected(code, int(row), int(column)))
        else:
            setattr(found[-1], kind, text)
    return found


@pytest.mark.parametrize("case", CASE_FILES, ids=lambda p: p.stem)
def test_case_produces_exactly_its_diagnostics(case: Path, parser: str) -> None:
    expected = expectations(case)
    assert expected, f"{case.name} names no expected diagnostic"
    with pytest.raises(DiagnosticError) as raised:
        read_document(case, case.name)
    found = raised.value.diagnostics
    assert [where(d) for d in found] == [(e.code, e.line, e.column) for e in expected]
    for diagnostic, want in zip(found, expected, strict=True):
        assert diagnostic.span is not None and diagnostic.span.file == case.name
        # The pure-Python parser words syntax errors its own way; positions and codes still agree.
        if parser == "libyaml" or diagnostic.code != YAML_SYNTAX:
            assert want.message is None or diagnostic.message == want.message
            assert want.hint is None or diagnostic.hint == want.hint


def test_every_load_code_is_exercised() -> None:
    by_cases = {e.code for case in CASE_FILES for e in expectations(case)}
    by_tests_below = {FILE_UNREADABLE, FILE_TOO_LARGE}  # they need a file system or a huge input, not a fixture
    load_codes = {code for code in CODES if "GS001" <= code <= "GS019"}  # GS020-GS029: snapshots, test_import.py
    assert load_codes == by_cases | by_tests_below


def test_every_diagnostic_is_a_complete_error() -> None:
    for case in CASE_FILES:
        with pytest.raises(DiagnosticError) as raised:
            read_document(case)
        for diagnostic in raised.value.diagnostics:
            assert diagnostic.severity is Severity.ERROR
            assert diagnostic.message and diagnostic.hint
            assert diagnostic.span is not None and diagnostic.span.start >= Position(1, 1)


# --- YAML 1.2 core-schema scalars ------------------------------------------------------------

SCALARS: list[tuple[str, Any]] = [
    # YAML 1.1 booleans are strings
    *[(word, word) for word in ["yes", "no", "on", "off", "y", "n", "Y", "N", "NO", "Yes", "ON", "Off"]],
    # YAML 1.2 booleans and nulls
    *[(word, True) for word in ["true", "True", "TRUE"]],
    *[(word, False) for word in ["false", "False", "FALSE"]],
    *[(word, None) for word in ["null", "Null", "NULL", "~", ""]],
    # integers: no leading zeros, no underscores, no base 60
    ("0", 0),
    ("-0", 0),
    ("+12", 12),
    ("42", 42),
    ("0o10", 8),
    ("0x1F", 31),
    ("010", "010"),
    ("00", "00"),
    ("1_000", "1_000"),
    ("22:22", "22:22"),
    ("1:30:00", "1:30:00"),
    ("0b101", "0b101"),
    ("0O10", "0O10"),
    # floats
    ("1e3", 1000.0),
    ("1.0e+3", 1000.0),
    ("-1.5", -1.5),
    ("12.10", 12.1),
    ("1.", 1.0),
    (".5", 0.5),
    (".inf", math.inf),
    ("-.Inf", -math.inf),
    ("+.INF", math.inf),
    ("01.5", "01.5"),
    ("535.104.05", "535.104.05"),
    (".", "."),
    # dates and odd YAML 1.1 types stay strings
    ("2024-01-01", "2024-01-01"),
    ("2024-01-01T10:00:00Z", "2024-01-01T10:00:00Z"),
    ("=", "="),
    ("<<x", "<<x"),
    # quoting and tags
    ('"true"', "true"),
    ("'1e3'", "1e3"),
    ("! 12", "12"),
    ("!!str 12", "12"),
    ("!!float 1", 1.0),
    ("!!int 0x10", 16),
    ("!!bool false", False),
    ("!!null ''", None),
    # ordinary strings
    ("3g.40gb", "3g.40gb"),
    ("nvidia.com/gpu", "nvidia.com/gpu"),
    ("A100-SXM4-80GB", "A100-SXM4-80GB"),
]


@pytest.mark.parametrize(("written", "expected"), SCALARS, ids=[s for s, _ in SCALARS])
def test_scalars_follow_yaml_1_2_core_schema(written: str, expected: Any, parser: str) -> None:
    value = load_data(f"v: {written}\n")["v"]
    assert type(value) is type(expected)
    assert value == expected


@settings(max_examples=800, deadline=None)
@given(st.text(st.sampled_from("-+.0123456789eExXoaAbfFinNtTlrsuU~ _:"), max_size=8))
def test_one_pattern_types_plain_scalars_as_the_core_schema_in_order(text: str) -> None:
    # The reader matches all of YAML 1.2's core-schema patterns at once; the first in order to match the whole
    # text must name the tag, as trying them one by one does.
    expected = next((tag for tag, pattern, _ in CORE_SCHEMA if pattern.fullmatch(text)), STR_TAG)
    assert resolve_plain_scalar(text) == expected


def test_the_core_schema_words_are_literals_and_typed_as_their_pattern_types_them() -> None:
    # The reader looks the null and bool words up instead of matching their patterns (`WORD_TAGS`): that holds only
    # while those patterns are lists of literal words.
    for word, tag in WORD_TAGS.items():
        assert not set(word) & set("\\.^$*+?{}[]()|"), word
        assert resolve_plain_scalar(word) == tag
    for near in ("nul", "nulls", "tRue", "yes", "No", "~~", " ", "NULL ", "Falsey"):
        assert resolve_plain_scalar(near) == STR_TAG
    assert {word for word in WORD_TAGS if word and load_data(f"v: [{word}]\n")["v"][0] is None} == {
        "~",
        "null",
        "Null",
        "NULL",
    }


def test_nan_is_a_float(parser: str) -> None:
    assert math.isnan(load_data("v: .nan\n")["v"])


def test_a_quoted_merge_key_is_an_ordinary_key(parser: str) -> None:
    assert load_data("'<<': 1\n") == {"<<": 1}


def test_a_huge_integer_is_a_diagnostic_not_a_crash() -> None:
    assert where(only("count: " + "9" * 5000 + "\n")) == (YAML_SYNTAX, 1, 8)


# --- positions -------------------------------------------------------------------------------

POSITIONED = """\
apiVersion: gpustack.io/v1alpha1
spec:
  nodePools:
    - name: a100
      gpu: {model: A100, count: 8}
      nodes: [n1, "n2"]
      taints:
        - key: gpu
          effect: NoSchedul
    -
      name: l4
  empty:
"""


def test_value_and_key_positions(parser: str) -> None:
    doc = parse_document(POSITIONED, "blueprint.yaml")
    values = {path: (p.line, p.column) for path, p in doc.value_positions.items()}
    keys = {path: (p.line, p.column) for path, p in doc.key_positions.items()}
    assert values == {
        (): (1, 1),
        ("apiVersion",): (1, 13),
        ("spec",): (3, 3),
        ("spec", "nodePools"): (4, 5),
        ("spec", "nodePools", 0): (4, 7),
        ("spec", "nodePools", 0, "name"): (4, 13),
        ("spec", "nodePools", 0, "gpu"): (5, 12),
        ("spec", "nodePools", 0, "gpu", "model"): (5, 20),
        ("spec", "nodePools", 0, "gpu", "count"): (5, 33),
        ("spec", "nodePools", 0, "nodes"): (6, 14),
        ("spec", "nodePools", 0, "nodes", 0): (6, 15),
        ("spec", "nodePools", 0, "nodes", 1): (6, 19),
        ("spec", "nodePools", 0, "taints"): (8, 9),
        ("spec", "nodePools", 0, "taints", 0): (8, 11),
        ("spec", "nodePools", 0, "taints", 0, "key"): (8, 16),
        ("spec", "nodePools", 0, "taints", 0, "effect"): (9, 19),
        ("spec", "nodePools", 1): (11, 7),
        ("spec", "nodePools", 1, "name"): (11, 13),
        ("spec", "empty"): (12, 9),
    }
    assert keys == {
        ("apiVersion",): (1, 1),
        ("spec",): (2, 1),
        ("spec", "nodePools"): (3, 3),
        ("spec", "nodePools", 0, "name"): (4, 7),
        ("spec", "nodePools", 0, "gpu"): (5, 7),
        ("spec", "nodePools", 0, "gpu", "model"): (5, 13),
        ("spec", "nodePools", 0, "gpu", "count"): (5, 26),
        ("spec", "nodePools", 0, "nodes"): (6, 7),
        ("spec", "nodePools", 0, "taints"): (7, 7),
        ("spec", "nodePools", 0, "taints", 0, "key"): (8, 11),
        ("spec", "nodePools", 0, "taints", 0, "effect"): (9, 11),
        ("spec", "nodePools", 1, "name"): (11, 7),
        ("spec", "empty"): (12, 3),
    }


def test_a_text_only_document_locates_every_value_and_key_as_the_loaded_one(parser: str) -> None:
    """Compile keeps only the text; a span asked for later is found in it again, start and end alike."""
    doc = parse_document(POSITIONED, "blueprint.yaml")
    light = doc.text_only()
    assert light.data is None and light.text == doc.text
    paths = [*doc.value_positions, ("spec", "nodePools", 1, "missing", 3), ("nowhere",)]
    assert [light.span(p) for p in paths] == [doc.span(p) for p in paths]
    assert [light.span(p, key=True) for p in doc.key_positions] == [doc.span(p, key=True) for p in doc.key_positions]
    assert doc.span(("spec", "nodePools", 0, "gpu")).end == Position(5, 35)  # the flow mapping's closing brace
    assert light.source_line(5) == doc.source_line(5)


SCHEMA = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "nodePools": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            "name": {"type": "string", "pattern": "^[a-z]+$"},
                            "gpu": {"type": "object", "properties": {"count": {"type": "string"}}},
                            "nodes": {"type": "array", "items": {"type": "integer"}},
                            "taints": {
                                "type": "array",
                                "items": {"properties": {"effect": {"enum": ["NoSchedule"]}}},
                            },
                        },
                    },
                },
                "empty": {"type": "string"},
            },
        }
    },
}


def test_positions_are_keyed_by_the_paths_jsonschema_reports(parser: str) -> None:
    doc = parse_document(POSITIONED, "blueprint.yaml")
    errors = list(Draft202012Validator(SCHEMA).iter_errors(doc.data))
    paths = {tuple(error.absolute_path) for error in errors}
    assert paths == {
        ("spec", "nodePools", 0, "name"),
        ("spec", "nodePools", 1, "name"),
        ("spec", "nodePools", 0, "gpu", "count"),
        ("spec", "nodePools", 0, "nodes", 0),
        ("spec", "nodePools", 0, "nodes", 1),
        ("spec", "nodePools", 0, "taints", 0, "effect"),
        ("spec", "empty"),
    }
    assert paths <= doc.value_positions.keys()
    assert doc.span(("spec", "nodePools", 0, "taints", 0, "effect")).start == Position(9, 19)


def test_span_prefers_the_key_then_falls_back_to_the_nearest_ancestor() -> None:
    doc = parse_document(POSITIONED, "blueprint.yaml")
    effect = ("spec", "nodePools", 0, "taints", 0, "effect")
    assert doc.span(effect, key=True).start == Position(9, 11)
    assert doc.span(effect).start == Position(9, 19)
    assert doc.span(("spec", "nodePools", 0, "taints", 0), key=True).start == Position(8, 11)  # items have no key
    assert doc.span(("spec", "nodePools", 1, "missing", 3)).start == Position(11, 7)
    assert doc.span(("nowhere",)).start == Position(1, 1)
    assert doc.span(("spec",)).file == "blueprint.yaml"


def test_span_of_a_document_without_positions_is_the_first_character() -> None:
    doc = Document("b.yaml", "", {}, {}, {})
    assert doc.span(("a",)).start == Position(1, 1)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(["a", "é", " ", "\n", "\r", "\r\n", "\x85", "\u2028", "\u2029", "\v", "\f", "\x1c"])))
def test_source_line_is_the_line_splitlines_gives(pieces: list[str]) -> None:
    """Lines are found by their offsets (kept for a compile's whole run: the lines themselves took more memory than
    the text), splitting where `str.splitlines` does, on any text, one a file read only for display included."""
    text = "".join(pieces)
    doc = Document("b.yaml", text, None, {}, {})
    lines = text.splitlines()
    assert [doc.source_line(n) for n in range(-1, len(lines) + 3)] == ["", "", *lines, "", ""]


def test_source_line_counts_every_yaml_line_break(parser: str) -> None:
    doc = parse_document("a: 1\r\nb: 2\rc: 3\n# x\u2028d: 4\x85e: 5\u2029f: 6\n", "b.yaml")
    lines = ["", "a: 1", "b: 2", "c: 3", "# x", "d: 4", "e: 5", "f: 6", ""]
    assert [doc.source_line(n) for n in range(0, 9)] == lines
    for key, line in [("a", 1), ("c", 3), ("d", 5), ("e", 6), ("f", 7)]:
        assert doc.value_positions[(key,)] == Position(line, 4)


def test_positions_count_characters_not_bytes(parser: str) -> None:
    doc = parse_document("name: \u00e9t\u00e9\nlabels: {caf\u00e9: \U0001f600, b: 1}\n", "b.yaml")
    assert doc.value_positions[("labels", "b")] == Position(2, 22)


def test_a_byte_order_mark_is_skipped_and_not_counted() -> None:
    from_bytes = parse_document(b"\xef\xbb\xbfa: 1\n", "b.yaml")
    from_str = parse_document("\ufeffa: 1\n", "b.yaml")
    for doc in (from_bytes, from_str):
        assert doc.data == {"a": 1}
        assert doc.text == "a: 1\n"
        assert doc.value_positions[("a",)] == Position(1, 4)


def test_several_problems_are_reported_together_in_source_order() -> None:
    found = diagnostics_of("a: 1\nb: !Ref x\na: 2\n1: y\n")
    assert [where(d) for d in found] == [(CUSTOM_TAG, 2, 4), (DUPLICATE_KEY, 3, 1), (NON_STRING_KEY, 4, 1)]


def test_diagnostics_carry_their_json_path() -> None:
    duplicate = only("spec:\n  pools:\n    - {name: a, name: b}\n")
    assert duplicate.path == ("spec", "pools", 0, "name")
    assert duplicate.related[0].start == Position(3, 8)


def test_a_file_wrong_everywhere_gives_a_bounded_report() -> None:
    found = diagnostics_of("".join(f"{n}: x\n" for n in range(10_000)))
    assert len(found) == load.MAX_DIAGNOSTICS
    assert {d.code for d in found} == {NON_STRING_KEY}


# --- limits ----------------------------------------------------------------------------------

BILLION_LAUGHS = (CASES / "gs006-billion-laughs.yaml").read_text()


def test_the_billion_laughs_is_refused_quickly_and_cheaply(parser: str) -> None:
    tracemalloc.start()
    started = time.perf_counter()
    try:
        assert where(only(BILLION_LAUGHS)) == (ALIAS, 8, 11)
        elapsed = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert elapsed < 2  # a sanity bound: it takes well under a millisecond with libyaml
    assert peak < 1_000_000


def test_an_alias_after_a_long_document_loads_and_stands_where_it_is_used() -> None:
    text = "".join(f"k{n}: v\n" for n in range(1000)) + "x: &a 1\ny: *a\n"
    document = parse_document(text, "blueprint.yaml")
    assert document.data["y"] == 1
    assert document.span(("y",)).start == Position(1002, 4)
    assert document.alias_origins[("y",)] == Position(1001, 4)


@pytest.mark.parametrize("depth", [MAX_DEPTH - 1, MAX_DEPTH])
def test_nesting_up_to_the_limit_loads(depth: int, parser: str) -> None:
    text = "[" * depth + "]" * depth
    data = load_data(text)
    for _ in range(depth - 1):
        data = data[0]
    assert data == []


def test_flow_nesting_past_the_limit_is_refused_where_it_crosses(parser: str) -> None:
    depth = MAX_DEPTH + 1
    assert where(only("[" * depth + "]" * depth)) == (TOO_DEEP, 1, depth)


def test_block_nesting_past_the_limit_is_refused(parser: str) -> None:
    text = "".join("  " * level + f"k{level}:\n" for level in range(MAX_DEPTH + 5))
    assert where(only(text)) == (TOO_DEEP, MAX_DEPTH + 1, 2 * MAX_DEPTH + 1)


def test_ten_thousand_brackets_are_refused(parser: str) -> None:
    assert only("[" * 10_000).code == TOO_DEEP


def test_a_huge_string_is_refused_before_parsing() -> None:
    text = "a" * (50 * 1024 * 1024)
    started = time.perf_counter()
    diagnostic = only(text)
    assert time.perf_counter() - started < 1
    assert diagnostic.code == FILE_TOO_LARGE
    assert diagnostic.message == "the file is 52,428,800 bytes; the limit is 8,388,608 bytes (8 MiB)"


def test_size_is_counted_in_utf8_bytes() -> None:
    text = "a: " + "\u00e9" * (MAX_BYTES // 2)  # fewer characters than the cap, more bytes
    assert only(text).code == FILE_TOO_LARGE
    assert only(text.encode()).code == FILE_TOO_LARGE


def test_a_huge_file_is_refused_without_being_read(tmp_path: Path) -> None:
    huge = tmp_path / "huge.yaml"
    with huge.open("wb") as stream:
        stream.truncate(50 * 1024 * 1024)  # sparse: no disk used
    tracemalloc.start()
    try:
        with pytest.raises(DiagnosticError) as raised:
            read_document(huge, "huge.yaml")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    (diagnostic,) = raised.value.diagnostics
    assert where(diagnostic) == (FILE_TOO_LARGE, 1, 1)
    assert diagnostic.message == "the file is 52,428,800 bytes; the limit is 8,388,608 bytes (8 MiB)"
    assert peak < 1_000_000


def test_a_file_just_under_the_cap_is_read(tmp_path: Path) -> None:
    path = tmp_path / "b.yaml"
    path.write_bytes(b"a: 1\n" + b"#" * (MAX_BYTES - 6) + b"\n")
    assert read_document(path).data == {"a": 1}


# --- text and encoding -----------------------------------------------------------------------


def test_bytes_that_are_not_utf8_are_located() -> None:
    diagnostic = only(b"a: 1\nb: \xc3\xa9\xff\n")
    assert where(diagnostic) == (NOT_UTF8, 2, 5)
    assert diagnostic.message == "the file is not UTF-8 text: byte 0xFF at offset 10 is not valid UTF-8"


def test_utf16_is_named() -> None:
    diagnostic = only("a: 1\n".encode("utf-16"))
    assert diagnostic.code == NOT_UTF8
    assert "UTF-16" in diagnostic.message


def test_a_lone_surrogate_in_a_str_is_refused() -> None:
    diagnostic = only("a: \ud800\n")
    assert where(diagnostic) == (NOT_UTF8, 1, 4)
    assert "surrogate U+D800" in diagnostic.message


@pytest.mark.parametrize("char", ["\x00", "\x07", "\x1b", "\x7f", "\ufffe"])
def test_control_characters_are_refused(char: str) -> None:
    assert where(only(f"a: 1\nb: x{char}\n")) == (NOT_UTF8, 2, 5)


def test_allowed_odd_characters_load() -> None:
    assert load_data("a: 'x\ty'\nb: \u00a0z\n") == {"a": "x\ty", "b": "\u00a0z"}


# --- the IO edge -----------------------------------------------------------------------------


def test_read_document_names_the_file_as_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("b.yaml").write_text("a: 1\n")
    assert read_document("b.yaml").file == "b.yaml"
    assert read_document(Path("b.yaml"), "shown.yaml").file == "shown.yaml"


def test_a_missing_file() -> None:
    diagnostic = diagnostics_of_read("/nonexistent/blueprint.yaml")
    assert diagnostic.code == FILE_UNREADABLE
    assert diagnostic.message == "cannot read /nonexistent/blueprint.yaml: No such file or directory"
    assert diagnostic.hint and "check the path" in diagnostic.hint


def test_a_directory(tmp_path: Path) -> None:
    diagnostic = diagnostics_of_read(tmp_path)
    assert diagnostic.code == FILE_UNREADABLE
    assert diagnostic.message == f"cannot read {tmp_path}: Is a directory"
    assert diagnostic.hint == "give the path of a blueprint file, not a directory"


def test_an_unreadable_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "secret.yaml"
    path.write_text("a: 1\n")
    path.chmod(0)
    if os.geteuid() == 0:  # root reads anything: make open() answer as it would for anyone else

        def refuse(*_args: object, **_kwargs: object) -> None:
            raise PermissionError(13, "Permission denied", str(path))

        monkeypatch.setattr("builtins.open", refuse)
    diagnostic = diagnostics_of_read(path)
    assert diagnostic.code == FILE_UNREADABLE
    assert diagnostic.message == f"cannot read {path}: Permission denied"
    assert diagnostic.hint == "check the file's permissions, or run as a user who may read it"


def diagnostics_of_read(path: str | Path) -> Diagnostic:
    with pytest.raises(DiagnosticError) as raised:
        read_document(path)
    (diagnostic,) = raised.value.diagnostics
    return diagnostic


def fake_stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))


def test_dash_reads_standard_input(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_stdin(monkeypatch, b"kind: ClusterBlueprint\ncount: 010\n")
    doc = read_document("-")
    assert doc.file == "-"
    assert doc.data == {"kind": "ClusterBlueprint", "count": "010"}


def test_standard_input_errors_carry_the_display_name(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_stdin(monkeypatch, b"a: 1\na: 2\n")
    with pytest.raises(DiagnosticError) as raised:
        read_document("-", "<stdin>")
    assert raised.value.diagnostics[0].span.file == "<stdin>"  # type: ignore[union-attr]


def test_oversized_standard_input_is_refused_after_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_stdin(monkeypatch, b"#" * (MAX_BYTES + 10))
    diagnostic = diagnostics_of_read("-")
    assert diagnostic.code == FILE_TOO_LARGE
    assert diagnostic.message == "the input is larger than 8,388,608 bytes; the limit is 8,388,608 bytes (8 MiB)"


def test_text_only_standard_input_works(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("a: yes\n"))
    assert read_document("-").data == {"a": "yes"}


# --- speed (run with --benchmark-only; skipped by the default addopts) ------------------------


def blueprint_of_size(size: int) -> str:
    pool = (
        "  - name: pool-{n}\n    gpu: {{model: A100-SXM4-80GB, count: 8}}\n    nodes: [node-{n}-a, node-{n}-b]\n"
        "    labels: {{gpu-pool: inference, team: t{n}}}\n"
        "    taints:\n      - {{key: gpu-pool, value: inference, effect: NoSchedule}}\n"
        "    sharing: {{strategy: mig, mig: {{strategy: mixed, layout: {{3g.40gb: 1, 1g.10gb: 2}}}}}}\n"
    )
    parts = ["apiVersion: gpustack.io/v1alpha1\nkind: ClusterBlueprint\nspec:\n  nodePools:\n"]
    total, n = len(parts[0]), 0
    while total < size:
        parts.append(pool.format(n=n))
        total, n = total + len(parts[-1]), n + 1
    return "".join(parts)


def test_five_megabytes_load_in_seconds(benchmark: Any) -> None:
    text = blueprint_of_size(5_000_000)
    doc = benchmark.pedantic(parse_document, (text, "big.yaml"), rounds=1, iterations=1)
    assert len(doc.data["spec"]["nodePools"]) > 10_000

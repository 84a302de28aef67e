"""The front door: reading a blueprint (packed positions) and refusing a huge invalid one quickly."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st

from gpustack.diagnostic import Position
from gpustack.load import parse_document
from gpustack.positions import BITS, PackedPositions, end_of, pack, pack_to_end_of, start_of

# --- packed positions: one home for the bit layout ------------------------------------------------

FIELDS = st.integers(0, (1 << BITS) - 1)


def mark(line: int, column: int) -> SimpleNamespace:
    return SimpleNamespace(line=line, column=column)  # what the parser's marks offer: 0-based line and column


@given(FIELDS, FIELDS, FIELDS, FIELDS)
def test_a_packed_span_gives_back_its_start_and_end(line: int, column: int, end_line: int, end_column: int) -> None:
    packed = pack(mark(line, column), mark(end_line, end_column))
    assert start_of(packed) == Position(line + 1, column + 1)
    assert end_of(packed) == Position(end_line + 1, end_column + 1)


@given(FIELDS, FIELDS, FIELDS, FIELDS, FIELDS, FIELDS)
def test_a_collection_spans_from_its_start_to_its_last_value_s_end(
    line: int, column: int, inner_line: int, inner_column: int, end_line: int, end_column: int
) -> None:
    last = pack(mark(inner_line, inner_column), mark(end_line, end_column))
    packed = pack_to_end_of(mark(line, column), last)
    assert start_of(packed) == Position(line + 1, column + 1)
    assert end_of(packed) == end_of(last) == Position(end_line + 1, end_column + 1)


def test_the_reader_s_positions_are_the_text_s() -> None:
    text = "spec:\n  pools:\n    - name: a\n      nodes: [x, yy]\n"
    doc = parse_document(text, "b.yaml")
    assert isinstance(doc.value_positions, PackedPositions)
    ends = doc.value_positions.ends()
    # a scalar: where it starts and just after its last character
    assert doc.value_positions[("spec", "pools", 0, "name")] == Position(3, 13)
    assert ends[("spec", "pools", 0, "name")] == Position(3, 14)
    # a flow list ends at its bracket, a block mapping with its last value
    assert (doc.value_positions[("spec", "pools", 0, "nodes")], ends[("spec", "pools", 0, "nodes")]) == (
        Position(4, 14),
        Position(4, 21),
    )
    assert ends[("spec", "pools", 0)] == Position(4, 21)
    assert ends[("spec",)] == Position(4, 21)
    keys = doc.key_positions
    assert isinstance(keys, PackedPositions)
    assert (keys[("spec", "pools")], keys.ends()[("spec", "pools")]) == (Position(2, 3), Position(2, 8))


def test_a_text_only_document_finds_the_same_positions_again() -> None:
    text = "spec:\n  pools:\n    - name: a\n      nodes: [x, yy]\n"
    doc = parse_document(text, "b.yaml")
    again = doc.text_only()
    assert dict(again.value_positions) == dict(doc.value_positions)
    assert dict(again.key_positions) == dict(doc.key_positions)
    assert again.span(("spec", "pools", 0, "nodes")) == doc.span(("spec", "pools", 0, "nodes"))

"""The front door: reading a blueprint (packed positions) and refusing a huge invalid one quickly."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import grimp
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpustack import schema, schema_fast
from gpustack.catalog import Catalog, load_catalog
from gpustack.diagnostic import Position
from gpustack.load import parse_document
from gpustack.positions import BITS, PackedPositions, end_of, pack, pack_to_end_of, start_of
from gpustack.schema_fast import within_bounds
from gpustack.validation import validate_text

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


# --- L4: a huge invalid blueprint is refused without walking what it cannot have ------------------

BASE = """apiVersion: gpustack.io/v1alpha1
kind: ClusterBlueprint
metadata: {name: big}
spec:
  kubernetes: {version: "1.31"}
  nodePools:
    - {name: l4, gpu: {model: L4, count: 4}, nodes: [n1]}
  tenants:
    - {name: ml, namespaces: [ml], pools: [l4], quota: {l4: {gpu: 8}}}
  workloads:
"""


def huge_blueprint(workloads: int = 40, entries: int = 9000, field: str = "env") -> str:
    """The review's L4 input: 40 workloads with 9,000 env entries each (1,000 allowed), about 6.8 MB."""
    lines = [BASE.rstrip("\n")]
    for w in range(workloads):
        lines += [f"    - name: chat-{w}", "      tenant: ml", "      pool: l4", "      kind: Deployment"]
        lines += ["      image: vllm/vllm-openai:v0.6.3", "      gpu: {count: 1}", f"      {field}:"]
        lines += [f"        e{i}: v{w}" if field == "env" else f"        - a{i}" for i in range(entries)]
    return "\n".join(lines) + "\n"


class Recording:
    """The shape validator, noting the largest env map and args list that jsonschema is handed."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.largest = 0

    def iter_errors(self, data: Any) -> Iterator[Any]:
        for workload in data["spec"]["workloads"]:
            self.largest = max(self.largest, len(workload.get("env", ())), len(workload.get("args", ())))
        return self.real.iter_errors(data)


@pytest.fixture
def recording(monkeypatch: pytest.MonkeyPatch) -> Recording:
    spy = Recording(schema_fast.shape_validator())
    monkeypatch.setattr(schema_fast, "shape_validator", lambda: spy)  # gpustack.schema imports it where it needs it
    return spy


def test_a_huge_env_is_cut_to_its_bound_before_jsonschema_walks_it(recording: Recording) -> None:
    text = huge_blueprint()
    assert len(text) > 6_500_000
    found = schema.check_shape(parse_document(text, "big.yaml"))
    assert recording.largest == 1000  # not 9,000: jsonschema never sees the entries the schema forbids
    assert [(d.code, d.message) for d in found] == [
        ("GS106", f"workloads[{w}].env must have at most 1000 entries, got 9000") for w in range(40)
    ]
    assert [d.span.start.line for d in found] == [18 + w * 9007 for w in range(40)]


def test_what_is_kept_is_still_checked_and_lists_are_cut_too(recording: Recording) -> None:
    text = huge_blueprint(workloads=2, entries=1500, field="args").replace("        - a7\n", "        - {a: 7}\n")
    found = schema.check_shape(parse_document(text, "big.yaml"))
    assert recording.largest == 1000
    assert sorted((d.code, d.message) for d in found) == [
        ("GS103", "wrong type for workloads[0].args[7]: expected a string, got a mapping"),
        ("GS103", "wrong type for workloads[1].args[7]: expected a string, got a mapping"),
        ("GS106", "workloads[0].args must have at most 1000 items, got 1500"),
        ("GS106", "workloads[1].args must have at most 1000 items, got 1500"),
    ]


def test_a_list_within_its_bound_is_handed_over_untouched() -> None:
    doc = parse_document(huge_blueprint(workloads=1, entries=1000), "ok.yaml")
    data, overflows = within_bounds(doc.data, schema.MAX_ENTRIES)
    assert data is doc.data and overflows == []
    assert schema.check_shape(doc) == []


def test_the_review_s_l4_file_is_refused_by_validate(tmp_path: Path) -> None:
    (tmp_path / "big.yaml").write_text(huge_blueprint(), encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "gpustack", "validate", "big.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1
    assert result.stdout.count("error[GS106]") + result.stderr.count("error[GS106]") == 40
    assert "Traceback" not in result.stderr


# --- GS302's hint comes from the catalog ----------------------------------------------------------------------

MIG_ON_L4 = BASE.replace("  workloads:\n", "").replace(
    "nodes: [n1]}", "nodes: [n1], sharing: {strategy: mig, mig: {strategy: single, layout: {1g.10gb: 7}}}}"
)


def test_gs302_names_every_mig_gpu_of_the_catalog_and_no_other() -> None:
    [diagnostic] = [d for d in validate_text(MIG_ON_L4, "bp.yaml").diagnostics if d.code == "GS302"]
    catalog = load_catalog()
    hint = diagnostic.hint or ""
    named = set(hint.split("MIG needs one of ", 1)[1].split(";", 1)[0].replace(" or ", ", ").split(", "))
    assert named == {"A30", "A100", "H100", "H200", "GH200", "B200", "GB200", "RTX-PRO-6000-Blackwell"}
    assert named == set(catalog.mig_capable())


def test_a_model_that_gains_mig_in_the_catalog_is_named_in_the_hint() -> None:
    catalog = load_catalog()
    a100 = catalog.models["A100-SXM4-40GB"]
    grown = {**catalog.models, "L4": dataclasses.replace(catalog.models["L4"], mig=a100.mig)}
    assert "L4" in Catalog(grown).mig_capable()
    shrunk = {key: model for key, model in catalog.models.items() if not key.startswith("A30")}
    assert "A30" not in Catalog(shrunk).mig_capable()


# --- no import cycle, not even a type-only one ------------------------------------------------------------------


def test_no_module_of_the_package_imports_itself_through_others() -> None:
    # grimp reads every import, those under TYPE_CHECKING too (simulate/cluster <-> simulate/index was one).
    graph = grimp.build_graph("gpustack")
    edges = {module: graph.find_modules_directly_imported_by(module) for module in graph.modules}
    cycles = []
    for start in sorted(edges):
        seen: set[str] = set()
        todo = list(edges[start])
        while todo:
            module = todo.pop()
            if module == start:
                cycles.append(start)
                break
            if module not in seen:
                seen.add(module)
                todo.extend(edges[module])
    assert cycles == []

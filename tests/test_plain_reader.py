"""The quick path (`plain_reader`) reads what the Builder reads to the same data, and leaves everything else to it.

A snapshot read with `positions_later` takes the quick path and finds positions again only for a diagnostic, so
three things must hold: the same data (types included) for any text both read; None, never a guess, wherever the
Builder refuses a text or words something about it; and a malformed snapshot's diagnostics at the same file:line:col
with the same words, whichever way it was read.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import typed
from hypothesis import given, settings
from hypothesis import strategies as st

from gpustack.cluster.snapshot import read_snapshot, snapshot_from
from gpustack.diagnostic import DiagnosticError
from gpustack.event_reader import second_document
from gpustack.load import MAX_DEPTH, parse_document
from gpustack.plain_reader import SecondDocument, plain_data

ROOT = Path(__file__).parent.parent


def _builder_data(text: str) -> tuple[bool, Any]:
    """(True, data) where the full reader reads the text without a word, else (False, None)."""
    try:
        return True, parse_document(text, "t.yaml").data
    except DiagnosticError:
        return False, None


def _agrees(text: str) -> Any:
    """plain_data's result, once checked against the full reader's (None for a second document after a clean
    first, which the full reader must refuse there with the same diagnostic, and nothing else)."""
    try:
        quick = plain_data(text)
    except SecondDocument as second:
        with pytest.raises(DiagnosticError) as refused:
            parse_document(text, "t.yaml")
        assert list(refused.value.diagnostics) == [second_document("t.yaml", second.start)]
        return None
    read, data = _builder_data(text)
    if not read:
        assert quick is None, f"the quick path read what the full reader refuses:\n{text[:400]}"
    elif quick is not None:
        assert typed(quick) == typed(data)
    return quick


def _yaml_files() -> list[Path]:
    folders = ("blueprints", "tests/cases", "tests/golden", "examples", "docs")
    return sorted(path for folder in folders for path in (ROOT / folder).rglob("*.y*ml") if path.is_file())


def test_every_yaml_file_of_the_project_is_read_alike_or_left_to_the_full_reader() -> None:
    files = _yaml_files()
    quick = 0
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # the encoding cases: refused before either reader runs
        quick += _agrees(text) is not None
    shipped = sorted((ROOT / "blueprints").glob("*.yaml"))
    assert len(files) > 200 and shipped
    for path in shipped:  # plain YAML, as most files are: the quick path must take it, or it is no quick path
        assert plain_data(path.read_text(encoding="utf-8")) is not None, path
    assert quick > len(files) // 2


@pytest.mark.parametrize(
    "text",
    [
        "a: 1\na: 2\n",  # a duplicate key
        "<<: {a: 1}\nb: 2\n",  # a merge key
        "a: &x {b: 1}\nc: *x\n",  # an alias (of an anchor)
        "a: !!str 1\n",  # a tag
        "a: !custom x\n",
        "1: a\n",  # keys that are no strings
        "null: a\n",
        "[a]: b\n",
        "{a: 1}: b\n",
        "a: 1\nb: *x\n---\nc: 2\n",  # a second document after a first the full reader refuses
        "",  # no document
        "just text\n",  # a scalar at the root
        "a: [1, 2\n",  # a syntax error
        "a: " + "1" * 5000 + "\n",  # beyond int()'s digits
        "a: " + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "\n",  # deeper than the limit
    ],
)
def test_what_the_full_reader_words_or_refuses_is_left_to_it(text: str) -> None:
    assert plain_data(text) is None
    _agrees(text)


def _refusal(text: str, *, positions_later: bool = False) -> list[Any]:
    with pytest.raises(DiagnosticError) as raised:
        parse_document(text, "t.yaml", positions_later=positions_later)
    return list(raised.value.diagnostics)


@pytest.mark.parametrize(
    "text",
    ["a: 1\n---\nb: 2\n", "---\na: [1]\n...\n--- # two\nb: 2\n", "a: 1\n--- {b: 2}\n", "a: 1\n---\nb: [2\n"],
)
def test_a_second_document_after_a_clean_first_is_refused_as_the_full_reader_refuses_it(text: str) -> None:
    """The quick path says where the second document starts, so that a snapshot of several (which joined() reads
    document by document) is not read twice more first; the diagnostic is the full reader's, word for word."""
    with pytest.raises(SecondDocument):
        plain_data(text)
    _agrees(text)
    assert _refusal(text, positions_later=True) == _refusal(text)


def test_an_anchor_no_alias_uses_is_read_past() -> None:
    assert _agrees("a: &x {b: 1}\nc: &y [1, &z two]\n&k d: e\n") == {"a": {"b": 1}, "c": [1, "two"], "d": "e"}


def test_the_depth_limit_is_the_full_readers() -> None:
    at_limit = "a: " + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1) + "\n"
    assert _agrees(at_limit) is not None


def test_core_schema_typing_is_the_full_readers() -> None:
    words = ["yes", "on", "NO", "010", "0o17", "0x1F", "1e3", ".5", "-.inf", ".NaN", "~", "", "True", "22:22"]
    text = "".join(f"p{i}: {word}\nq{i}: '{word}'\n" for i, word in enumerate(words))
    data = _agrees(text)
    assert data["p0"] == "yes" and data["p3"] == "010" and data["p4"] == 15 and data["p5"] == 31
    assert data["p7"] == 0.5 and data["p8"] == -math.inf and data["p10"] is None and data["p12"] is True
    assert all(data[f"q{i}"] == word for i, word in enumerate(words))  # quoted: always the string


keys = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), max_size=6)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(10**20), 10**20)
    | st.floats(allow_nan=False)
    | st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), max_size=10)
    | st.sampled_from(["0", "010", "1e3", "true", "null", "~", "no", "0x1F", ".5", "1_000", "a: b", "#c", "<<", "*x"])
)
values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4), max_leaves=30
)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(keys, values, max_size=5),
    st.sampled_from([None, True, False]),
    st.sampled_from(["", "dup", "anchor", "tag", "merge", "int key", "two"]),
)
def test_generated_yaml_is_read_alike_or_left_to_the_full_reader(
    data: dict[str, Any], flow: bool | None, twist: str
) -> None:
    text = yaml.safe_dump(data, default_flow_style=flow, allow_unicode=True, sort_keys=False)
    text += {
        "": "",
        "dup": "dup: 1\ndup: 2\n",
        "anchor": "anchored: &x [1]\nuse: *x\n",
        "tag": "tagged: !!str 1\n",
        "merge": "<<: {m: 1}\n",
        "int key": "7: seven\n",
        "two": "---\nsecond: 1\n",
    }[twist]
    if text.startswith("{") and twist:  # a flow mapping at the root: write the twist inside a block one instead
        text = "root: " + text
    quick = _agrees(text)
    if not twist and quick is None:  # PyYAML's dump reads back (its 1.1 typing aside): only the full reader's words
        assert _builder_data(text)[0] is False or "<<" in str(data) or _has_anchor_or_tag(text)


def _has_anchor_or_tag(text: str) -> bool:
    return any(type(event).__name__ == "AliasEvent" or getattr(event, "tag", None) for event in yaml.parse(text))


NODE_YAML = """\
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: gpu-1, labels: {nvidia.com/gpu.product: NVIDIA-L4}}
  status: {allocatable: {nvidia.com/gpu: '1', cpu: '8', memory: 32Gi}}
- apiVersion: v1
  kind: Node
  metadata: {name: gpu-2}
  status: {allocatable: {nvidia.com/gpu: '1', cpu: '8', memory: lots}}
- kind: Pod
  metadata: {name: p, namespace: a}
  spec:
    nodeName: gpu-1
    containers:
    - name: c
      resources: {requests: {cpu: x}}
"""


def test_a_malformed_yaml_snapshot_is_reported_where_the_full_reader_would(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(NODE_YAML, encoding="utf-8")
    assert plain_data(NODE_YAML) is not None  # read_snapshot takes the quick path
    with pytest.raises(DiagnosticError) as quick:
        read_snapshot(str(path))
    with pytest.raises(DiagnosticError) as full:
        snapshot_from(parse_document(NODE_YAML, str(path)))  # every position kept from the start
    assert quick.value.diagnostics == full.value.diagnostics
    assert len(quick.value.diagnostics) == 2
    memory = next(d for d in quick.value.diagnostics if "memory" in d.message)
    assert memory.span is not None
    line = NODE_YAML.splitlines()[memory.span.start.line - 1]
    assert line[memory.span.start.column - 1 :].startswith("lots}")


@pytest.mark.parametrize("read", [plain_data, lambda text: parse_document(text, "t.yaml").data], ids=["quick", "full"])
def test_a_plain_scalar_written_many_times_is_held_once(read: Any) -> None:
    """Both readers type each distinct plain scalar once and hand out that one value: a snapshot's data at the
    Kubernetes limit took 62 MiB with a string per occurrence and 33 MiB so."""
    text = "items:\n" + "".join(f"- {{name: pod-{i}, node: gpu-node-7, phase: Running, gpus: 8}}\n" for i in range(3))
    items = read(text)["items"]
    assert len({id(item["node"]) for item in items}) == 1 and len({id(item["phase"]) for item in items}) == 1
    assert [item["gpus"] for item in items] == [8, 8, 8] and len({item["name"] for item in items}) == 3


def test_a_number_with_too_many_digits_is_reported_where_each_one_stands() -> None:
    """The full reader's memo of typed scalars never holds a number it could not read: each is reported."""
    digits = "9" * 5000
    with pytest.raises(DiagnosticError) as raised:
        parse_document(f"a: {digits}\nb: [{digits}]\n", "t.yaml")
    places = [(d.span.start.line, d.path) for d in raised.value.diagnostics if d.span is not None]
    assert places == [(1, ("a",)), (2, ("b", 0))]

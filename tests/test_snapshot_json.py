"""A JSON snapshot (`kubectl get ... -o json`) is read by the C json module, as the blueprint loader would read it.

`cluster/json_document.py` takes json.loads' data only where the loader reads the text alike and leaves everything
else to the loader; positions are found again, by the loader, only when a diagnostic needs one. So: the same data for
any JSON text both accept, the loader's word wherever it refuses, and a malformed snapshot's diagnostics at the same
file:line:col with the same words, whichever way the file was read.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import typed
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpustack.cluster.json_document import json_document
from gpustack.cluster.snapshot import parse_snapshot, read_snapshot, snapshot_from
from gpustack.diagnostic import DiagnosticError
from gpustack.load import MAX_DEPTH, parse_document, read_text

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(10**20), 10**20)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
    | st.sampled_from(["0", "1e3", "true", "null", "~", "no", "0x1F", ".5", "-.inf", "1_000", "@x", "a: b", "#c"])
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=25,
)


def _read(tmp_path: Path, text: str) -> str | None:
    """The text as read_snapshot gets it (load.read_text's checks), or None where those refuse it."""
    path = tmp_path / "snapshot.json"
    path.write_text(text, encoding="utf-8")
    try:
        return read_text(str(path))
    except DiagnosticError:
        return None


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.dictionaries(st.text(max_size=8), values, max_size=5),
    st.sampled_from([None, 0, 2, 4]),
    st.booleans(),
    st.sampled_from(["", "dup", "nan", "deep", "surrogates", "low surrogate"]),
)
def test_json_is_read_as_the_loader_reads_it_or_left_to_the_loader(
    tmp_path: Path, data: dict[str, Any], indent: int | None, ascii_only: bool, twist: str
) -> None:
    text = json.dumps(data, indent=indent, ensure_ascii=ascii_only)
    if twist == "dup":
        text = '{"k": 1, "k": 2' + (", " + text.lstrip()[1:] if data else "}")
    elif twist == "nan":
        text = text.rstrip()[:-1] + (', "n": NaN}' if data else '"n": NaN}')
    elif twist == "deep":
        text = '{"d": ' + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "}"
    elif twist == "surrogates":
        text = '{"s": "\\ud83d\\ude00"}'
    elif twist == "low surrogate":
        text = '{"s": "x\\udc00"}'
    checked = _read(tmp_path, text)
    if checked is None:
        return
    fast = json_document(checked, "snapshot.json")
    try:
        loaded = parse_document(checked, "snapshot.json").data
    except DiagnosticError:
        assert fast is None, "json_document read what the loader refuses"
        return
    if fast is not None:
        assert typed(fast.data) == typed(loaded)
    if not twist and ascii_only and re.search(r"\\u[dD][89a-fA-F]", text) is None:
        assert fast is not None  # plain JSON of printable ASCII without a surrogate escape: the fast path takes it


def test_the_loaders_refusals_are_left_to_it() -> None:
    for text in ('{"a": 1, "a": 2}', '{"a": NaN}', '{"a": "\\udc00"}', '{"a": "x\x85y"}', "{a: 1}", "[1, 2]"):
        assert json_document(text, "x.json") is None, text
    nested = '{"a": ' + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1) + "}"
    assert json_document(nested, "x.json") is not None  # at the limit, as the loader allows
    deeper = '{"a": ' + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "}"
    assert json_document(deeper, "x.json") is None


NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "gpu-1", "labels": {"nvidia.com/gpu.product": "NVIDIA-L4"}},
    "status": {"allocatable": {"nvidia.com/gpu": "1", "cpu": "8", "memory": "32Gi"}},
}


def _broken_list() -> dict[str, Any]:
    bad_node = json.loads(json.dumps(NODE))
    bad_node["metadata"]["name"] = "gpu-2"
    bad_node["status"]["allocatable"]["memory"] = "lots"
    pod = {
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "a"},
        "spec": {"nodeName": "gpu-1", "containers": [{"name": "c", "resources": {"requests": {"cpu": "x"}}}]},
    }
    return {"apiVersion": "v1", "kind": "List", "items": [NODE, bad_node, pod, {"kind": "Pod", "metadata": {}}]}


@pytest.mark.parametrize("indent", [None, 4])
def test_a_malformed_json_snapshot_is_reported_where_the_loader_would(tmp_path: Path, indent: int | None) -> None:
    text = json.dumps(_broken_list(), indent=indent)
    path = tmp_path / "cluster.json"
    path.write_text(text, encoding="utf-8")
    assert json_document(read_text(str(path)), str(path)) is not None  # read_snapshot takes the fast path
    with pytest.raises(DiagnosticError) as fast:
        read_snapshot(str(path))
    with pytest.raises(DiagnosticError) as loader:
        snapshot_from(parse_document(text, str(path)))  # the loader's way, every position kept
    assert fast.value.diagnostics == loader.value.diagnostics
    assert len(fast.value.diagnostics) == 3
    lines = text.splitlines()
    for problem in fast.value.diagnostics:
        assert problem.span is not None and problem.span.file == str(path)
        assert (problem.span.start.line, problem.span.start.column) != (1, 1)  # located, not left at the top
    memory = next(d for d in fast.value.diagnostics if "memory" in d.message)
    assert memory.span is not None
    assert '"lots"' in lines[memory.span.start.line - 1][memory.span.start.column - 1 :]


def test_a_json_snapshot_reads_the_same_records_as_its_yaml(tmp_path: Path) -> None:
    listed = {"apiVersion": "v1", "kind": "List", "items": [NODE, _broken_list()["items"][2]]}
    listed["items"][1]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "250m"
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(listed, indent=4), encoding="utf-8")
    fast = read_snapshot(str(path))
    slow = parse_snapshot(path.read_text(encoding="utf-8"), str(path))
    assert (fast.nodes, fast.pods) == (slow.nodes, slow.pods)
    assert fast.span(("items", 1, "spec", "nodeName")) == slow.span(("items", 1, "spec", "nodeName"))

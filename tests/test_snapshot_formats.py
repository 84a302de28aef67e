"""Issue 27 item 4: snapshots as users make them.

The docs' `kubectl get ... -A -o yaml` (a v1 List), its `-o json`, several outputs joined with `---` or objects one
per document, objects of kinds import does not use (skipped without a word), and a clear error, never a traceback,
for anything else.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpustack.cli import group
from gpustack.cluster.snapshot import parse_snapshot, read_snapshot
from gpustack.diagnostic import DiagnosticError

L4 = (
    "apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n  labels:\n"
    "    nvidia.com/gpu.product: NVIDIA-L4\n    nvidia.com/gpu.count: '1'\n"
    "status:\n  allocatable: {{nvidia.com/gpu: '1', cpu: '8', memory: 32Gi}}\n"
)
SERVICE = "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: apps}\nspec: {ports: [{port: 80}]}\n"


def _as_list(*objects: str) -> str:
    body = "".join("- " + text.replace("\n", "\n  ").rstrip() + "\n" for text in objects)
    return f"apiVersion: v1\nkind: List\nitems:\n{body}"


def _names(text: str) -> list[str]:
    return [node.name for node in parse_snapshot(text, "cluster.yaml").nodes]


def test_a_list_its_json_and_several_documents_read_the_same() -> None:
    listed = _as_list(L4.format(name="a"), SERVICE, L4.format(name="b"))
    as_json = json.dumps(
        {"apiVersion": "v1", "kind": "List", "items": parse_snapshot(listed, "x").document.data["items"]}
    )
    several = "---\n" + L4.format(name="a") + "---\n" + SERVICE + "...\n---\n" + _as_list(L4.format(name="b")) + "---\n"
    assert _names(listed) == _names(as_json) == _names(several) == ["a", "b"]


def test_several_documents_keep_each_objects_own_line(tmp_path: Path) -> None:
    broken = L4.format(name="b").replace("memory: 32Gi", "memory: lots")
    snapshot = tmp_path / "cluster.yaml"
    snapshot.write_text(_as_list(L4.format(name="a")) + "---\n# the second command's output\n" + _as_list(broken))
    with pytest.raises(DiagnosticError) as raised:
        read_snapshot(str(snapshot))
    (problem,) = raised.value.diagnostics
    assert problem.span is not None
    line = snapshot.read_text().splitlines()[problem.span.start.line - 1]
    assert "memory: lots" in line
    assert problem.message == "allocatable 'memory' is 'lots'; expected a Kubernetes quantity"


def test_kinds_import_does_not_use_are_skipped_silently(tmp_path: Path) -> None:
    snapshot = tmp_path / "cluster.yaml"
    event = "apiVersion: v1\nkind: Event\nmetadata: {name: e1, namespace: apps}\nreason: Pulled\n"
    snapshot.write_text(_as_list(SERVICE, event, L4.format(name="a")))
    run = CliRunner().invoke(group, ["import", str(snapshot)])
    assert run.exit_code == 0, run.output
    assert "warning" not in run.stderr and "error" not in run.stderr


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "empty"),
        ("[1, 2]\n", "the snapshot is a list; expected a mapping"),
        ("just words\n", "expected a v1 List with items"),
        ("kind: List\nitems: 3\n", "expected a v1 List with items"),
        ("---\n[1]\n---\n" + L4.format(name="a"), "items"),
        ("kind: List\nitems:\n- kind: Node\n  metadata: {name: n, labels: {a: {b: c}}}\n", "expected a string"),
        ("\x00\x01", "error["),
    ],
)
def test_anything_else_is_a_clear_error_never_a_traceback(tmp_path: Path, text: str, says: str) -> None:
    snapshot = tmp_path / "cluster.yaml"
    snapshot.write_text(text)
    for command in (["import", str(snapshot)], ["drift", "blueprints/quickstart.yaml", str(snapshot)]):
        run = CliRunner().invoke(group, command)
        assert run.exception is None or isinstance(run.exception, SystemExit), run.exception
        assert "Traceback" not in run.output
        assert run.exit_code == 1, (command, run.output)
        assert says in run.stderr, (command, run.stderr)


def test_several_documents_are_read_once_and_their_positions_found_only_when_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A 5 MiB snapshot of two documents took 6 s against 1.4 s as one: each document was read three times, with
    every position, before anything needed one. Now the full reader runs only when a span is asked for."""
    import gpustack.load as load

    full_reads: list[str] = []
    real = load._load_yaml

    def counted(text: str, file: str) -> object:
        full_reads.append(file)
        return real(text, file)

    monkeypatch.setattr(load, "_load_yaml", counted)
    several = _as_list(L4.format(name="a")) + "---\n# the second command's output\n" + _as_list(L4.format(name="b"))
    snapshot = parse_snapshot(several, "cluster.yaml")
    assert [node.name for node in snapshot.nodes] == ["a", "b"] and full_reads == []
    span = snapshot.document.span(("items", 1, "metadata", "name"))
    assert several.splitlines()[span.start.line - 1] == "    name: b" and len(full_reads) == 2

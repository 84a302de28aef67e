"""Each label key has one home, gpustack/names.py; every other module derives it (design-review-3 N4, seam 11).

A copy typed again elsewhere is how the pool-origin tuple and the cloud pool labels came to list different providers,
and how GS406 could miss a label gpustack owns: renaming a key in names.py must reach every check, compile, import,
drift and the simulator.
"""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import REPO

from gpustack import names
from gpustack.checks.sharing import OWNED_LABELS
from gpustack.cluster.labels import POOL_ORIGIN_LABELS, PROVIDER_POOL_LABELS
from gpustack.simulate import hints

PACKAGE = REPO / "gpustack"
# The node label keys whose one home is names.py: the labels gpustack owns (HAMi's among them), GFD's product label
# and each cloud's node-pool label.
VOCABULARY = sorted(
    {*names.OWNED_NODE_LABELS, names.GFD_PRODUCT_LABEL, names.HAMI_DEVICE_PLUGIN_LABEL}
    | set(names.CLOUD_POOL_LABELS.values())
)


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings: prose about a label may name it."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def copies(path: Path, root: Path = REPO) -> list[str]:
    """Where a module types a label key itself: a string constant that is the key (a dict key, a subscript, a
    constant of its own). Docstrings, messages and hints that mention a key inside longer text are prose."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _docstrings(tree)
    return [
        f"{path.relative_to(root)}:{node.lineno}: {node.value!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in VOCABULARY and id(node) not in skip
    ]


def test_the_vocabulary_is_what_the_review_names() -> None:
    assert {
        "nvidia.com/gpu.product",
        "gpustack.io/device-plugin",
        "gpustack.io/pool",
        "nvidia.com/mig.config",
        "nvidia.com/device-plugin.config",
        "cloud.google.com/gke-nodepool",
        "eks.amazonaws.com/nodegroup",
        "kubernetes.azure.com/agentpool",
        "karpenter.sh/nodepool",
    } <= set(VOCABULARY)


def test_no_module_but_names_types_a_label_key() -> None:
    found = [hit for path in sorted(PACKAGE.rglob("*.py")) if path != PACKAGE / "names.py" for hit in copies(path)]
    assert found == []


def test_the_scan_finds_a_planted_copy(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text(
        '"""Docs may say nvidia.com/gpu.product."""\n'
        'PRODUCT = "nvidia.com/gpu.product"\n'
        'labels = {"cloud.google.com/gke-nodepool": "a", "x": 1}\n'
        'prose = "a label such as gpustack.io/pool is fine in a sentence"\n'
        'state = "nvidia.com/mig.config.state"\n',
        encoding="utf-8",
    )
    hits = sorted(hit.split(": ", 1)[1] for hit in copies(planted, tmp_path))
    assert hits == ["'cloud.google.com/gke-nodepool'", "'nvidia.com/gpu.product'"]


def test_the_derived_names_follow_names_py() -> None:
    """The facts the review found typed twice now come from names.py, so they cannot disagree."""
    assert not hasattr(hints, "PRODUCT_LABEL")  # gone: hints reads names.GFD_PRODUCT_LABEL
    assert set(OWNED_LABELS) == {
        names.POOL_LABEL,
        names.DEVICE_PLUGIN_CONFIG_LABEL,
        names.MIG_CONFIG_LABEL,
        names.HAMI_DEVICE_PLUGIN_LABEL,
    }
    assert POOL_ORIGIN_LABELS[0] == names.POOL_LABEL
    assert set(names.CLOUD_POOL_LABELS.values()) <= set(PROVIDER_POOL_LABELS)
    assert names.HAMI_NODE_LABELS[names.HAMI_DEVICE_PLUGIN_LABEL] == names.HAMI_DEVICE_PLUGIN

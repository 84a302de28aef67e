"""Each fact has one home: MIG layout text and GPU index ranges in mig.py, a Decimal as a JSON number in quantity.py.

Like tests/test_taints.py, a scan of the package keeps hand-written copies from coming back: a copy drifts (one of the
three `_number` copies rounded and the other two did not), and `graph` had to import `review` to share one.
"""

from __future__ import annotations

import ast
import re
from decimal import Decimal
from pathlib import Path

import pytest

import gpustack
from gpustack.mig import index_ranges, layout_text
from gpustack.quantity import json_number

PACKAGE = Path(gpustack.__file__).parent

# What a hand-written copy looks like, and the one module allowed to hold it.
COPIES = {
    "mig.py": [
        # layout text: "{" + ", ".join(f"{profile}: {count}" ...) + "}"
        re.compile(r"\"\{\"\s*\+\s*\", \"\.join\(\s*f\"\{\w+\}: \{\w+\}\""),
        # index ranges: f"{start}-{previous}"
        re.compile(r"f\"\{start\}-\{\w+\}\""),
    ],
    "quantity.py": [
        # a Decimal as an int when whole, else a float
        re.compile(r"int\((\w+)\) if \1 == \1\.to_integral_value\(\) else float\(\1\)"),
        re.compile(r"def _number\("),
    ],
}


def _sources() -> list[tuple[Path, str]]:
    return [(path, path.read_text(encoding="utf-8")) for path in sorted(PACKAGE.rglob("*.py"))]


@pytest.mark.parametrize("home", sorted(COPIES))
def test_no_copy_outside_its_home(home: str) -> None:
    found = [
        f"{path.relative_to(PACKAGE)}: {pattern.pattern}"
        for path, text in _sources()
        if path.relative_to(PACKAGE) != Path(home)
        for pattern in COPIES[home]
        if pattern.search(text)
    ]
    assert found == []


@pytest.mark.parametrize("home", sorted(COPIES))
def test_the_scan_finds_the_home_itself(home: str) -> None:
    # The patterns match the real thing: a scan that matches nothing would pass forever.
    text = (PACKAGE / home).read_text(encoding="utf-8")
    for pattern in COPIES[home]:
        if pattern.pattern != r"def _number\(":
            assert pattern.search(text), pattern.pattern


def test_the_scan_catches_the_old_copies() -> None:
    old_layout = 'return "{" + ", ".join(f"{profile}: {count}" for profile, count in layout.items()) + "}"'
    old_number = "return int(value) if value == value.to_integral_value() else float(value)"
    assert any(p.search(old_layout) for p in COPIES["mig.py"])
    assert any(p.search(old_number) for p in COPIES["quantity.py"])


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_graph_does_not_import_review() -> None:
    # review/data imports graph (the review's picture); graph importing review back was the package's one upward arrow.
    assert not {name for name in _imports(PACKAGE / "graph.py") if name.startswith("gpustack.review")}


def test_graph_importing_review_breaks_the_layers_contract(tmp_path: Path) -> None:
    # The outputs are independent of each other in pyproject.toml (`|`), so the back-edge cannot return, even
    # indirectly: review uses graph, never the other way.
    from test_layers import copy_of_package, lint_imports

    root = copy_of_package(tmp_path)
    graph = root / "gpustack" / "graph.py"
    graph.write_text(graph.read_text(encoding="utf-8") + "\nfrom gpustack.review import layouts  # noqa\n")
    result = lint_imports(root)
    assert result.returncode == 1
    assert "gpustack.graph is not allowed to import gpustack.review" in result.stdout


def test_layout_text_and_index_ranges() -> None:
    assert layout_text({"3g.40gb": 2, "1g.10gb": 1}) == "{3g.40gb: 2, 1g.10gb: 1}"
    assert layout_text({}) == "{}"
    assert index_ranges([6, 0, 1, 2, 3, 8, 9, 9]) == "0-3, 6, 8-9"
    assert index_ranges([]) == ""


@pytest.mark.parametrize(
    ("value", "places", "expected"),
    [
        (None, None, None),
        (Decimal("24"), None, 24),
        (Decimal("24.000"), None, 24),
        (Decimal("9.75"), None, 9.75),
        (Decimal("9.755"), "0.01", 9.76),
        (Decimal("0.3333333"), "0.001", 0.333),
        (Decimal("40.00"), "0.01", 40),
    ],
)
def test_json_number(value: Decimal | None, places: str | None, expected: float | None) -> None:
    result = json_number(value, places)
    assert result == expected
    assert type(result) is type(expected)


@pytest.mark.parametrize(("value", "expected"), [(1.0, 1), (1.5, 1.5), (0.1, 0.1), (3.0000001, 3.0000001)])
def test_json_number_of_a_float_keeps_its_value(value: float, expected: float) -> None:
    result = json_number(value)
    assert result == expected and type(result) is type(expected)

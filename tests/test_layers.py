"""The stages import in one direction only, as pyproject.toml's import-linter contracts say (ARCHITECTURE.md).

The contracts run here so a violation fails the suite; a copy of the package with one upward import shows the check
is real, not a contract that always passes.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from conftest import REPO

LINT = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """lint-imports on the package under `root`, with that folder first on the import path."""
    environment = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [sys.executable, "-c", LINT, "--no-cache", "--no-logo", "--config", str(root / "pyproject.toml")],
        cwd=root,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_every_import_follows_the_layers() -> None:
    result = lint_imports(REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_every_module_has_a_layer() -> None:
    """A new module must be placed in the stack (exhaustive), so the order covers all of gpustack."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    [layers] = [c for c in config["contracts"] if c["type"] == "layers" and c["id"] == "layers"]
    assert layers["exhaustive"] is True and layers["containers"] == ["gpustack"]
    named = {name.strip().strip("()") for layer in layers["layers"] for name in re.split("[:|]", layer)}
    assert {"load", "schema", "build", "checks", "compile", "validation", "commands", "cli"} <= named


def copy_of_package(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "gpustack", tmp_path / "gpustack", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def test_a_check_that_imports_compile_breaks_the_contract(tmp_path: Path) -> None:
    root = copy_of_package(tmp_path)
    rule = root / "gpustack" / "checks" / "cluster.py"
    rule.write_text(rule.read_text(encoding="utf-8") + "\nfrom gpustack.compile import kueue  # noqa\n")
    result = lint_imports(root)
    assert result.returncode == 1
    assert "gpustack.checks.cluster -> gpustack.compile.kueue" in result.stdout


def test_review_reading_a_rule_breaks_the_contract(tmp_path: Path) -> None:
    root = copy_of_package(tmp_path)
    module = root / "gpustack" / "review" / "risk.py"
    module.write_text(module.read_text(encoding="utf-8") + "\nfrom gpustack.checks import tenancy  # noqa\n")
    result = lint_imports(root)
    assert result.returncode == 1
    assert "gpustack.review is not allowed to import gpustack.checks" in result.stdout


def test_architecture_md_shows_the_contract_s_layers() -> None:
    """The layer table in ARCHITECTURE.md is the contract, top to bottom, so the picture cannot drift from it."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    [layers] = [c for c in config["contracts"] if c["type"] == "layers" and c["id"] == "layers"]
    contract = [{name.strip().strip("()") for name in re.split("[:|]", layer)} for layer in layers["layers"]]
    text = (REPO / "ARCHITECTURE.md").read_text(encoding="utf-8")
    table = text.split("## Layers", 1)[1].split("| layer (top to bottom) |", 1)[1].split("\n\n", 1)[0]
    rows = [line.split("|")[2] for line in table.splitlines()[2:] if line.startswith("|")]
    documented = [{name.strip(" `/") for name in row.split(",")} for row in rows]
    assert documented == contract


def test_the_cluster_folder_is_layered_too() -> None:
    """cluster/ is left out of the package-wide contract as a folder, so its own contract must name every module."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    [cluster] = [c for c in config["contracts"] if c["id"] == "cluster-layers"]
    assert cluster["exhaustive"] is True and cluster["containers"] == ["gpustack.cluster"]
    named = {name.strip() for layer in cluster["layers"] for name in layer.split(":")}
    modules = {path.stem for path in (REPO / "gpustack" / "cluster").glob("*.py") if path.stem != "__init__"}
    assert named == modules


def test_drift_reaching_up_to_import_breaks_the_cluster_contract(tmp_path: Path) -> None:
    root = copy_of_package(tmp_path)
    module = root / "gpustack" / "cluster" / "snapshot.py"
    module.write_text(module.read_text(encoding="utf-8") + "\nfrom gpustack.cluster import drift  # noqa\n")
    result = lint_imports(root)
    assert result.returncode == 1
    assert "gpustack.cluster.snapshot -> gpustack.cluster.drift" in result.stdout

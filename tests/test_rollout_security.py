"""The rollout script is run by an admin with cluster-admin rights, so nothing in a plan may run as shell code there
(security review 3, N1 and N2), and its resume state cannot be forged (N10).

Each script here runs under `sh` with stub `kubectl` and `helm` on PATH that record every call's argv (NUL-separated)
and stdin: the calls must be exactly the plan's commands, word for word, and no file may appear.
"""

from __future__ import annotations

import gc
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import CASES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpustack.cli import group
from gpustack.plan import HelmRelease, Manifest
from gpustack.review.loading import side_from_file
from gpustack.rollout.capacity import Tracker, availability, supply
from gpustack.rollout.model import Action, Availability, Phase, PhaseKind, RolloutPlan
from gpustack.rollout.nodes import NodeChange, NodeState, TaintKey
from gpustack.rollout.objects import apply_step, delete_step, helm_uninstall_step, helm_upgrade_step
from gpustack.rollout.planner import plan_rollout
from gpustack.rollout.render import RENDERERS
from gpustack.rollout.script import UnsafeWord, render_script
from gpustack.rollout.steps import StepIds, wave_steps

SH = shutil.which("sh")
pytestmark = pytest.mark.skipif(SH is None, reason="no sh on this machine")
REVIEW = Path(__file__).resolve().parents[2] / "shared" / "reference" / "security-review-3"
ROLLOUT_CASES = CASES / "rollout"
UNTAINT_JSONPATH = 'jsonpath={range .spec.taints[*]}{.key}:{.effect}{"\\n"}{end}'

# Records argv (NUL-separated) and stdin of each call in files numbered in call order; `get` finds nothing.
STUB = """#!/bin/sh
n=$(find "$CALLS" -name '*.argv' | wc -l)
n=$(printf '%05d' "$n")
{ printf '%s\\0' "$(basename "$0")"; for arg in "$@"; do printf '%s\\0' "$arg"; done; } >"$CALLS/$n.argv"
cat >"$CALLS/$n.stdin"
if [ -n "${FAIL_MATCH:-}" ] && [ ! -e "$CALLS.failed" ]; then
  case "$*" in
    *"$FAIL_MATCH"*) : >"$CALLS.failed"; exit 1 ;;
  esac
fi
exit 0
"""

# What a tenant's template, a pool or a file name could carry into the script: line breaks sh and viewers honour,
# quotes, command substitutions, comment and heredoc markers, redirections, bidi overrides.
PIECES = (
    *("\n", "\r", "\r\n", "\u2028", "\u2029", "\u0085", "\x0b", "\x0c", "\x1b[2J", "\u202e", "\t"),
    *("'", '"', "\\", "`touch PWNED`", "$(touch PWNED)", "${HOME}", ";touch PWNED;", "&& touch PWNED", "|"),
    *("#", " ", ">PWNED", "<<X", "GPUSTACK_OBJECT", "x", "-", "*", "~", "!", "é"),
)
# A leading '-' is refused outright where kubectl or helm would read it as an option (test below).
hostile = st.lists(st.sampled_from(PIECES), min_size=1, max_size=6).map("".join).filter(lambda t: t[0] != "-")
WORST = "x\ntouch PWNED\n#'$(touch PWNED)`touch PWNED`\r\u2028\u0085;touch PWNED\nGPUSTACK_OBJECT\n"

FIELDS = (
    *("before", "after", "max_unavailable", "node", "old_pool", "pool", "label_key", "label_value", "gone_label"),
    *("taint_key", "taint_value", "effect", "old_taint", "mig", "resource", "unprotected", "kind", "group"),
    *("name", "namespace", "why", "data", "job", "job_namespace", "release", "chart", "version", "release_ns"),
    "repository",
)


def hostile_plan(text: dict[str, str]) -> RolloutPlan:
    """A plan built from the real step builders with `text` in every field that reaches the script; the blueprint
    and the template check would refuse most of these values, so the plan objects are made directly."""
    old = NodeState(
        pool=text["old_pool"],
        labels=((text["label_key"], "a"), (text["gone_label"], "b")),
        taints=(TaintKey(text["old_taint"], None, "NoSchedule"),),
        gpus=("whole",),
        offers=((text["resource"], 1),),
        advertised=((text["resource"], 1),),
        mig_config=None,
    )
    new = NodeState(
        pool=text["pool"],
        labels=((text["label_key"], text["label_value"]),),
        taints=(TaintKey(text["taint_key"], text["taint_value"], text["effect"]),),
        gpus=("mig",),
        offers=((text["resource"], 2),),
        advertised=((text["resource"], 2),),
        mig_config=text["mig"],
    )
    change = NodeChange(text["node"], old, new)
    wave = wave_steps(StepIds("wave01"), [change], drains=True)
    manifest = Manifest(
        "tenants",
        "tenants/x.yaml",
        {
            "apiVersion": f"{text['group']}/v1",
            "kind": text["kind"],
            "metadata": {"name": text["name"], "namespace": text["namespace"]},
            "data": {"k": text["data"]},
        },
    )
    job = Manifest(
        "workloads",
        "workloads/j.yaml",
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": text["job"], "namespace": text["job_namespace"]},
        },
    )
    release = HelmRelease(
        name=text["release"],
        chart=text["chart"],
        repository=f"https://{text['repository']}",
        version=text["version"],
        namespace=text["release_ns"],
        values={"v": text["data"]},
        values_file="charts/v.yaml",
    )
    ids = StepIds("prepare")
    prepare = (
        helm_upgrade_step(ids.next(Action.HELM_UPGRADE), release, text["why"]),
        apply_step(ids.next(Action.APPLY), manifest, text["why"]),
        apply_step(ids.next(Action.APPLY), job, text["why"]),
    )
    ids = StepIds("finish")
    finish = (
        delete_step(ids.next(Action.DELETE), manifest, text["why"]),
        helm_uninstall_step(ids.next(Action.HELM_UNINSTALL), release),
    )
    title = f"pool {text['pool']}: drain and change {text['node']} ({'; '.join(change.reasons)})"
    return RolloutPlan(
        before=text["before"],
        after=text["after"],
        max_unavailable=text["max_unavailable"],
        phases=(
            Phase("prepare", PhaseKind.PREPARE, f"objects {text['why']}", prepare),
            Phase(
                "wave01",
                PhaseKind.WAVE,
                title,
                tuple(wave),
                pool=text["pool"],
                nodes=(text["node"],),
                drains=True,
                unprotected=(text["unprotected"], "y"),
            ),
            Phase("finish", PhaseKind.FINISH, text["why"], finish),
        ),
        capacity_before=(),
        capacity_after=(),
    )


def expected_calls(plan: RolloutPlan) -> list[tuple[list[str], str | None]]:
    """(argv, stdin or None when not checked) of every call the plan makes against stubs that find nothing."""
    calls: list[tuple[list[str], str | None]] = []
    for step in plan.steps:
        if step.action is Action.UNTAINT:
            calls.append((["kubectl", "get", "node", step.command[3], "-o", UNTAINT_JSONPATH], None))
        elif step.action is Action.APPLY_JOB:
            # the stub says the Job exists: the helper looks and leaves it
            assert step.stdin is not None
            metadata = json.loads(step.stdin)["metadata"]
            calls.append((["kubectl", "get", "job", metadata["name"], "--namespace", metadata["namespace"]], None))
        else:
            calls.append((list(step.command), "" if step.stdin is None else step.stdin + "\n"))
    return calls


def run(
    script: Path, root: Path, state: Path | None = None, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], list[tuple[list[str], str]]]:
    """Run the script from an empty folder `root/work` with the stubs; the calls it made, in order."""
    bin_dir, calls, work = root / "bin", root / "calls", root / "work"
    for folder in (bin_dir, calls, work):
        folder.mkdir(exist_ok=True)
    for tool in ("kubectl", "helm"):
        (bin_dir / tool).write_text(STUB, encoding="utf-8")
        (bin_dir / tool).chmod(0o755)
    done = sorted(calls.glob("*.argv"))
    assert SH is not None
    result = subprocess.run(
        [SH, str(script)],
        env={
            "PATH": f"{bin_dir}:/usr/bin:/bin",
            "CALLS": str(calls),
            "HOME": str(root / "home"),
            "GPUSTACK_ROLLOUT_STATE_DIR": str(state or root / "state"),
            **(env or {}),
        },
        cwd=work,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    made = []
    for argv in sorted(calls.glob("*.argv"))[len(done) :]:
        words = argv.read_bytes().decode("utf-8", "surrogateescape").split("\0")[:-1]
        made.append((words, argv.with_suffix(".stdin").read_bytes().decode("utf-8", "surrogateescape")))
    return result, made


def assert_runs_exactly_the_plan(plan: RolloutPlan, root: Path) -> None:
    script = root / "rollout.sh"
    script.write_text(render_script(plan), encoding="utf-8", errors="surrogateescape")
    assert SH is not None
    parsed = subprocess.run([SH, "-n", str(script)], capture_output=True, text=True, timeout=30)
    assert parsed.returncode == 0, parsed.stderr
    result, made = run(script, root)
    assert result.returncode == 0, result.stderr
    expected = expected_calls(plan)
    assert [argv for argv, _ in made] == [argv for argv, _ in expected]
    for (_, stdin), (_, wanted) in zip(made, expected, strict=True):
        assert wanted is None or stdin == wanted
    assert list((root / "work").iterdir()) == []  # nothing ran that writes a file
    assert not [p for p in root.rglob("*PWNED*")]
    assert "all steps done" in result.stdout


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.fixed_dictionaries({field: hostile for field in FIELDS}))
def test_no_plan_data_runs_as_shell_code(text: dict[str, str]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        assert_runs_exactly_the_plan(hostile_plan(text), Path(folder))


@pytest.mark.parametrize(
    "worst",
    [WORST, "'\n'touch PWNED'\n'", "a\rb\u2028c\u0085d\u2029e", '"$(touch PWNED)"`touch PWNED`\\', "x-\n-#"],
)
def test_the_worst_values_in_every_field_run_nothing(worst: str, tmp_path: Path) -> None:
    text = {name: f"{worst}{index}" for index, name in enumerate(FIELDS)}
    assert_runs_exactly_the_plan(hostile_plan(text), tmp_path)


def test_every_output_of_a_hostile_plan_keeps_each_line_whole() -> None:
    """Comments in the script, and the text report, hold no line break or bidi override of the plan's data."""
    plan = hostile_plan(dict.fromkeys(FIELDS, WORST + "\u202e"))
    script = render_script(plan)
    comments = [line for line in script.splitlines() if line.startswith("#")]
    assert comments and all(line.isprintable() for line in comments)
    # the header with both file names stays one comment line
    assert len([c for c in comments if c.startswith("# gpustack rollout: ")]) == 1
    text = RENDERERS["text"](plan)
    assert "\u202e" not in text and "\u2028" not in text and "\r" not in text
    assert not any(line.startswith(("touch", "#")) for line in text.split("\n"))


def test_a_nul_byte_is_refused_not_written() -> None:
    with pytest.raises(UnsafeWord):
        render_script(hostile_plan({**{f: "ok" for f in FIELDS}, "name": "a\0b"}))


OPERANDS = ("node", "label_key", "gone_label", "taint_key", "old_taint", "kind", "name", "job", "job_namespace")


@pytest.mark.parametrize("field", [*OPERANDS, "release", "chart"])
def test_a_name_that_would_be_read_as_an_option_is_refused(field: str) -> None:
    """`kubectl delete ConfigMap --all` deletes every ConfigMap: a name never reaches a command as an option."""
    with pytest.raises(UnsafeWord, match="would be read as an option"):
        render_script(hostile_plan({**{f: "ok" for f in FIELDS}, field: "--all"}))


@pytest.mark.parametrize("field", ["why", "before", "max_unavailable", "data", "unprotected", "namespace"])
def test_a_leading_dash_is_only_text_elsewhere(field: str, tmp_path: Path) -> None:
    """In a description, an object's body or an option's value (`--namespace -x`) a '-' is only text."""
    assert_runs_exactly_the_plan(hostile_plan({**{f: "ok" for f in FIELDS}, field: "--all\n-x"}), tmp_path)


# --- the review's reproductions


def test_n1_a_template_name_is_refused_and_never_reaches_the_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """N1's repro: a ConfigMap template named "x\\ntouch PWNED-cm\\n#"."""
    case = REVIEW / "n1-rollout-object-name"
    if not case.exists():
        pytest.skip("the security review's reproductions are not beside this repository")
    shutil.copytree(case, tmp_path / "case")
    shutil.copy(REVIEW / "base.yaml", tmp_path / "base.yaml")
    monkeypatch.chdir(tmp_path / "case")
    result = CliRunner().invoke(group, ["rollout", "../base.yaml", "new.yaml", "-o", "script"])
    assert result.exit_code == 1 and "#!/bin/sh" not in result.stdout
    # And were the name to get past the template check, the script would still carry it as one quoted word.
    name = "x\ntouch PWNED-cm\n#"
    manifest = Manifest("workloads", "w.yaml", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
    plan = RolloutPlan(
        "../base.yaml",
        "new.yaml",
        "10%",
        (
            Phase("prepare", PhaseKind.PREPARE, "t", (apply_step("prepare.01-apply", manifest, "why"),)),
            Phase("finish", PhaseKind.FINISH, "t", (delete_step("finish.01-delete", manifest, "gone"),)),
        ),
        (),
        (),
    )
    (tmp_path / "run").mkdir()
    assert_runs_exactly_the_plan(plan, tmp_path / "run")


def test_n2_a_file_name_with_a_newline_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """N2's repro: blueprints/$'prod\\ntouch PWNED-fn\\n#.yaml'."""
    monkeypatch.chdir(tmp_path)
    base = (REVIEW / "base.yaml") if (REVIEW / "base.yaml").exists() else CASES / "rollout" / "taints" / "old.yaml"
    shutil.copy(base, tmp_path / "old.yaml")
    for name in ("prod\ntouch PWNED-fn\n#.yaml", "prod\u2028x.yaml", "prod\u202e.yaml", "prod\rx.yaml"):
        shutil.copy(base, tmp_path / name)
        result = CliRunner().invoke(group, ["rollout", "old.yaml", name, "-o", "script"])
        assert result.exit_code == 2, result.output
        assert result.stdout == "" and "control character" in result.stderr
        assert "\n#" not in result.stderr.split("Error:")[-1].strip()
    result = CliRunner().invoke(group, ["rollout", "--base", "HEAD\n:x", "old.yaml", "-o", "script"])
    assert result.exit_code == 2 and "control character" in result.stderr


def test_n2_the_header_keeps_a_revision_label_on_its_comment_line(tmp_path: Path) -> None:
    """With --base the header reads `HEAD:<dir>/name`; a name git brings back (a rename) is only escaped."""
    text = {f: "ok" for f in FIELDS}
    plan = hostile_plan({**text, "before": "HEAD:blueprints/prod\ntouch PWNED-fn\n#.yaml (renamed to x)"})
    script = render_script(plan)
    assert script.splitlines()[1].startswith("# gpustack rollout: HEAD:blueprints/prod\\x0atouch PWNED-fn\\x0a#")
    assert_runs_exactly_the_plan(plan, tmp_path)


# --- N10: the resume state


def script_of(case: str, tmp_path: Path) -> Path:
    copy = tmp_path / f"{case}.sh"
    shutil.copy(ROLLOUT_CASES / case / "plan.sh", copy)
    return copy


def plan_tag(script: Path) -> str:
    return next(
        line.split("=")[1] for line in script.read_text(encoding="utf-8").splitlines() if line.startswith("PLAN_TAG=")
    )


def test_n10_a_state_file_in_the_working_folder_is_not_read(tmp_path: Path) -> None:
    """N10's repro: the PR commits gpustack-rollout-<digest>.state, every step id in it, where the admin runs."""
    script = script_of("taints", tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    steps = [line.split()[1] for line in script.read_text(encoding="utf-8").splitlines() if line.startswith("step ")]
    (work / f"gpustack-rollout-{plan_tag(script)}.state").write_text("\n".join(steps) + "\n", encoding="utf-8")
    result, made = run(script, tmp_path)
    assert result.returncode == 0, result.stderr
    assert len(made) >= len(steps) and "0 skipped" in result.stdout
    assert f"state in {tmp_path / 'state'}/gpustack-rollout-" in result.stdout


def test_the_default_state_lives_in_the_users_private_state_folder(tmp_path: Path) -> None:
    script = script_of("taints", tmp_path)
    result, _ = run(script, tmp_path, env={"GPUSTACK_ROLLOUT_STATE_DIR": "", "XDG_STATE_HOME": str(tmp_path / "xdg")})
    assert result.returncode == 0, result.stderr
    folder = tmp_path / "xdg" / "gpustack"
    assert oct(folder.stat().st_mode & 0o777) == "0o700"
    assert [p.name for p in folder.iterdir()] == [f"gpustack-rollout-{plan_tag(script)}.state"]
    assert f"state in {folder}/" in result.stdout
    result, _ = run(script, tmp_path, env={"GPUSTACK_ROLLOUT_STATE_DIR": ""})
    assert f"state in {tmp_path}/home/.local/state/gpustack/" in result.stdout


def test_a_resumed_run_counts_what_it_skipped(tmp_path: Path) -> None:
    script = script_of("taints", tmp_path)
    first, _ = run(script, tmp_path, env={"FAIL_MATCH": "wait node/a100-c"})
    assert first.returncode != 0
    second, _ = run(script, tmp_path)
    assert second.returncode == 0
    done_before = sum(1 for line in second.stdout.splitlines() if line.endswith("done before, skipped"))
    assert done_before > 0 and f"{done_before} skipped (done before)" in second.stdout


def refused(result: subprocess.CompletedProcess[str], made: list[tuple[list[str], str]], why: str) -> bool:
    return result.returncode == 1 and made == [] and why in result.stderr


def test_a_state_file_of_another_plan_is_refused(tmp_path: Path) -> None:
    other, script = script_of("mig-relayout", tmp_path), script_of("taints", tmp_path)
    result, _ = run(other, tmp_path)
    assert result.returncode == 0
    state = tmp_path / "state"
    (state / f"gpustack-rollout-{plan_tag(other)}.state").rename(state / f"gpustack-rollout-{plan_tag(script)}.state")
    result, made = run(script, tmp_path)
    assert refused(result, made, "not written by this plan's script")


def another_run_id(header: str) -> str:
    """The header with its random run id's last digit changed, whichever digit it was."""
    return header[:-1] + ("1" if header.endswith("0") else "0")


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(lambda lines, steps: [*lines, steps[-1]], id="a bare step id"),
        pytest.param(lambda lines, steps: [*lines, f"{steps[-1]} 1 2"], id="a wrong checksum"),
        pytest.param(lambda lines, steps: [*lines, lines[1].replace(lines[1].split()[0], steps[-1])], id="moved"),
        pytest.param(lambda lines, steps: [another_run_id(lines[0]), *lines[1:]], id="another run id"),
        pytest.param(lambda lines, steps: [*lines, ""], id="a blank line"),
    ],
)
def test_a_hand_edited_state_file_is_refused(edit, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    script = script_of("taints", tmp_path)
    first, _ = run(script, tmp_path, env={"FAIL_MATCH": "wait node/a100-c"})
    assert first.returncode != 0
    (state,) = (tmp_path / "state").iterdir()
    steps = [line.split()[1] for line in script.read_text(encoding="utf-8").splitlines() if line.startswith("step ")]
    lines = state.read_text(encoding="utf-8").splitlines()
    edited = edit(lines, steps)
    assert edited != lines, "the edit must change the state file, or the test proves nothing"
    state.write_text("\n".join(edited) + "\n", encoding="utf-8")
    result, made = run(script, tmp_path)
    assert result.returncode == 1 and made == [], result.stdout
    assert "gpustack-rollout:" in result.stderr and "start over" in result.stderr


def test_a_state_file_planted_before_the_first_run_is_refused(tmp_path: Path) -> None:
    script = script_of("taints", tmp_path)
    text = script.read_text(encoding="utf-8")
    digest = next(line.split("=")[1] for line in text.splitlines() if line.startswith("PLAN_DIGEST="))
    steps = [line.split()[1] for line in text.splitlines() if line.startswith("step ")]
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    planted = state / f"gpustack-rollout-{plan_tag(script)}.state"
    # the right header, but step lines no run of this script wrote
    planted.write_text(f"gpustack-rollout-state 1 {digest} {'0' * 32}\n" + "\n".join(steps) + "\n", encoding="utf-8")
    result, made = run(script, tmp_path)
    assert refused(result, made, "has a line this script did not write")
    planted.write_text("\n".join(steps) + "\n", encoding="utf-8")  # N10's format: step ids alone
    result, made = run(script, tmp_path)
    assert refused(result, made, "was not written by this")


@pytest.mark.parametrize("mode", [0o755, 0o750, 0o770, 0o777, 0o1777])
def test_a_state_folder_others_can_open_is_refused(mode: int, tmp_path: Path) -> None:
    """A checkout (0755), a shared folder or /tmp could hold a file someone else planted."""
    script = script_of("taints", tmp_path)
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(mode)
    result, made = run(script, tmp_path, state=shared)
    assert refused(result, made, "only you can open")
    assert list(shared.iterdir()) == []


@pytest.mark.parametrize(
    "env",
    [
        {"GPUSTACK_ROLLOUT_STATE_DIR": "relative/state"},
        {"GPUSTACK_ROLLOUT_STATE": "./gpustack.state"},
        {"GPUSTACK_ROLLOUT_STATE_DIR": "", "HOME": ""},
    ],
    ids=["relative", "the old variable", "no home"],
)
def test_a_state_place_outside_a_private_folder_is_refused(env: dict[str, str], tmp_path: Path) -> None:
    script = script_of("taints", tmp_path)
    result, made = run(script, tmp_path, env=env)
    assert result.returncode == 1 and made == [], result.stdout
    assert list((tmp_path / "work").iterdir()) == []


def test_a_linked_state_folder_is_refused(tmp_path: Path) -> None:
    script = script_of("taints", tmp_path)
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    os.symlink(real, tmp_path / "link")
    result, made = run(script, tmp_path, state=tmp_path / "link")
    assert refused(result, made, "only you can open")


# --- N8: capacity per wave, worked out incrementally, equals the straightforward count


def _state(pool: str, offers: tuple[tuple[str, int], ...]) -> NodeState:
    return NodeState(pool, (), (), (), offers, offers, None)


offer = st.tuples(
    st.sampled_from(["nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "nvidia.com/gpu.shared"]), st.integers(0, 8)
)
node_state = st.builds(_state, st.sampled_from(["a", "b", "c"]), st.lists(offer, max_size=3).map(tuple))


@settings(max_examples=150, deadline=None)
@given(
    old=st.dictionaries(st.sampled_from([f"n{i}" for i in range(8)]), node_state, max_size=8),
    waves=st.lists(
        st.tuples(
            st.sampled_from(["a", "b", "c"]),
            st.lists(st.tuples(st.sampled_from([f"n{i}" for i in range(10)]), st.none() | node_state), max_size=3),
            st.booleans(),
            st.booleans(),
        ),
        max_size=6,
    ),
    quota=st.dictionaries(
        st.tuples(st.sampled_from(["a", "b", "c", "d"]), st.sampled_from(["nvidia.com/gpu", "nvidia.com/mig-1g.10gb"])),
        st.dictionaries(st.sampled_from(["t1", "t2"]), st.integers(0, 20), min_size=1, max_size=2),
        max_size=4,
    ),
)
def test_incremental_capacity_equals_counting_every_node_each_wave(
    old: dict[str, NodeState],
    waves: list[tuple[str, list[tuple[str, NodeState | None]], bool, bool]],
    quota: dict[tuple[str, str], dict[str, int]],
) -> None:
    """Every wave's table, its pool's rows, its dips and each pair's lowest figure, as the old per-wave recount
    (supply of every node not out, then availability) gives them."""
    tracker = Tracker(old, quota)
    current = dict(old)
    lowest: dict[tuple[str, str], tuple[int, Availability]] = {}
    for index, (pool, nodes, drains, shown) in enumerate(waves):
        changes = list(dict(nodes).items())  # a node at most once in a wave
        out = [node for node, _ in changes] if drains else []
        expected = availability(supply(s for n, s in current.items() if n not in out), quota)
        own, dips = tracker.wave(pool, out, changes, shown=shown)
        assert tracker.timeline.at(index) == expected
        assert own == tuple(r for r in expected if r.pool == pool)
        assert dips == tuple(r for r in expected if r.short > 0)
        if shown:
            for row in expected:
                key = (row.pool, row.resource)
                if key not in lowest or row.available < lowest[key][1].available:
                    lowest[key] = (index, row)
        for node, new in changes:
            if new is None:
                current.pop(node, None)
            else:
                current[node] = new
    assert tracker.lowest == lowest
    # and read again out of order, each wave's table is the same
    for index in reversed(range(len(waves))):
        assert tracker.timeline.at(index) == tracker.timeline.at(index)


@pytest.mark.skipif(shutil.which("git") is None, reason="no git on this machine")
def test_n2_a_name_git_brings_back_is_escaped_in_the_script(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--base` after a `git mv` reviews against the old name, which git's history hands back as it was: a name with
    a newline reaches the header (`HEAD:prod<newline>touch ...`) without passing the command line's check."""
    repo = tmp_path / "repo"
    repo.mkdir()
    hostile = "prod\ntouch PWNED-fn\n#.yaml"
    base = ROLLOUT_CASES / "taints"
    shutil.copy(base / "old.yaml", repo / hostile)

    def git(*args: str) -> None:
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True, capture_output=True
        )

    git("init", "-q")
    git("add", "-A")
    git("commit", "-q", "-m", "base")
    git("mv", hostile, "prod.yaml")
    shutil.copy(base / "new.yaml", repo / "prod.yaml")
    monkeypatch.chdir(repo)
    result = CliRunner().invoke(group, ["rollout", "--base", "HEAD", "prod.yaml", "-o", "script"])
    assert result.exit_code == 0, result.output
    header = result.stdout.splitlines()[1]
    assert header.startswith("# gpustack rollout: HEAD:prod\\x0atouch PWNED-fn\\x0a#.yaml (renamed to prod.yaml)")
    script = tmp_path / "rollout.sh"
    script.write_text(result.stdout, encoding="utf-8")
    (tmp_path / "run").mkdir()
    run_result, made = run(script, tmp_path / "run")
    assert run_result.returncode == 0, run_result.stderr
    assert made and not list((tmp_path / "run" / "work").iterdir())


def test_planning_and_writing_a_rollout_make_no_cycles() -> None:
    """plan_rollout and the script, text and markdown renderers run with the cyclic collector paused
    (gpustack/collector.py): they must leave nothing only it could free, or a paused run would keep it."""
    case = ROLLOUT_CASES / "taints"
    before, after = side_from_file(str(case / "old.yaml")), side_from_file(str(case / "new.yaml"))
    assert before.snapshot is not None and after.snapshot is not None

    def plan_and_write() -> None:
        plan = plan_rollout(before.snapshot, after.snapshot)  # type: ignore[arg-type]
        for output in ("script", "text", "markdown"):
            RENDERERS[output](plan)

    plan_and_write()  # the sides compile their plans once, and keep them
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        plan_and_write()
        gc.collect()
        garbage = list(gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert garbage == []

"""Old/new blueprint pairs with golden rollout plans in text, markdown, JSON and script form.

Regenerate the goldens after a deliberate change with GPUSTACK_UPDATE_GOLDEN=1, then read the diff.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import CASES, UPDATE_GOLDEN

from gpustack.cli import group
from gpustack.codes import ROLLOUT_CAPACITY_DROP

ROLLOUT_CASES = CASES / "rollout"
CASE_NAMES = sorted(p.name for p in ROLLOUT_CASES.iterdir() if (p / "old.yaml").exists())
GOLDENS = {"text": "plan.txt", "markdown": "plan.md", "json": "plan.json", "script": "plan.sh"}
# Options each case is planned with: the goldens show what they change.
ARGS: dict[str, tuple[str, ...]] = {
    "mig-relayout": (),
    "resource-rename": ("--allow-capacity-drop",),
    "sharing-change": ("--max-unavailable", "40%"),
    "taints": (),
    "node-move": (),
    "pool-removed": (),
}


def rollout(case: str, monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[int, str, str]:
    monkeypatch.chdir(ROLLOUT_CASES / case)
    result = CliRunner().invoke(group, ["rollout", *args, "old.yaml", "new.yaml"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def plan_json(case: str) -> dict:  # type: ignore[type-arg]
    data: dict = json.loads((ROLLOUT_CASES / case / "plan.json").read_text(encoding="utf-8"))  # type: ignore[type-arg]
    return data


def steps(data: dict, phase_kind: str = "wave") -> list[dict]:  # type: ignore[type-arg]
    return [s for p in data["phases"] if p["kind"] == phase_kind for s in p["steps"]]


def test_the_required_cases_exist() -> None:
    assert set(ARGS) == set(CASE_NAMES)


@pytest.mark.parametrize("output", GOLDENS)
@pytest.mark.parametrize("case", CASE_NAMES)
def test_plan_matches_golden(case: str, output: str, monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, err = rollout(case, monkeypatch, "--output", output, *ARGS[case])
    assert code == 0, err
    golden = ROLLOUT_CASES / case / GOLDENS[output]
    if UPDATE_GOLDEN:
        golden.write_text(out, encoding="utf-8")
    assert golden.exists(), f"no golden {golden}: run with GPUSTACK_UPDATE_GOLDEN=1"
    assert out == golden.read_text(encoding="utf-8")


def test_json_names_its_kind() -> None:
    data = plan_json("mig-relayout")
    assert (data["apiVersion"], data["kind"]) == ("gpustack.io/v1alpha1", "RolloutPlan")


def test_mig_relayout_drains_one_node_at_a_time_and_waits_for_the_mig_manager() -> None:
    data = plan_json("mig-relayout")
    waves = [p for p in data["phases"] if p["kind"] == "wave"]
    assert [w["nodes"] for w in waves] == [["h100-a"], ["h100-b"]]
    actions = [s["action"] for s in waves[0]["steps"]]
    assert actions.index("cordon") < actions.index("drain") < actions.index("label") < actions.index("wait-mig")
    assert actions.index("wait-mig") < actions.index("wait-resource") < actions.index("uncordon")
    # the config keeps its name: the label goes off and on again, and a stale state label cannot end the wait
    removed = next(s for s in waves[0]["steps"] if s["action"] == "label")
    assert "nvidia.com/mig.config-" in removed["command"] and "nvidia.com/mig.config.state-" in removed["command"]
    waits = [s["command"] for s in waves[0]["steps"] if s["action"] == "wait-resource"]
    assert any("--for=jsonpath={.status.allocatable.nvidia\\.com/mig-1g\\.10gb}=42" in c for c in waits)
    assert waves[0]["workloadsWithoutDisruptionBudget"] == ["fraud-scorer", "ranker"]


def test_quota_raise_goes_first_and_the_new_template_after_the_first_wave() -> None:
    data = plan_json("mig-relayout")
    prepare = [s["description"] for s in steps(data, "prepare")]
    assert any("ResourceQuota gpustack-gpu-quota" in d for d in prepare)
    first_wave = next(p for p in data["phases"] if p["kind"] == "wave")
    assert "Deployment fraud-scorer" in first_wave["steps"][-1]["description"]
    assert not any("fraud-scorer" in d for d in prepare)


def test_resource_rename_cuts_the_old_quota_only_after_the_last_wave() -> None:
    data = plan_json("resource-rename")
    finish = [s["description"] for s in steps(data, "finish")]
    assert any("ResourceQuota gpustack-gpu-quota in ml" in d for d in finish)
    assert data["summary"]["belowGuarantee"], "the old resource runs out while nodes convert"


def test_resource_rename_is_refused_without_allow_capacity_drop(monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, err = rollout("resource-rename", monkeypatch)
    assert code == 1 and out == ""
    assert "new.yaml:23:13: error[GS951]: wave02 leaves pool 'l4' with 0 nvidia.com/gpu" in err
    assert "ml, web were guaranteed 6" in err and "--allow-capacity-drop" in err


def test_refusal_as_json(monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, _ = rollout("resource-rename", monkeypatch, "--output", "json")
    assert code == 1
    assert [d["code"] for f in json.loads(out)["files"] for d in f["diagnostics"]] == [ROLLOUT_CAPACITY_DROP]


def test_sharing_change_waves_follow_max_unavailable() -> None:
    data = plan_json("sharing-change")
    waves = [p for p in data["phases"] if p["kind"] == "wave"]
    # 40 % of five nodes is two; of two nodes, rounded down, still at least one
    assert [w["nodes"] for w in waves] == [["l4-a", "l4-b"], ["l4-c", "l4-d"], ["l4-e"], ["l40s-a"], ["l40s-b"]]
    plugin = [s["command"] for w in waves[:1] for s in w["steps"] if s["action"] == "label"]
    assert [
        "kubectl",
        "label",
        "node",
        "l4-a",
        "nvidia.com/device-plugin.config=time-slicing-4",
        "--overwrite",
    ] in plugin
    capacity = {(r["pool"], r["resource"]): r["available"] for r in waves[0]["capacity"]}
    assert capacity[("l4-shared", "nvidia.com/gpu")] == 24  # three untouched nodes x 4 GPUs x 2 replicas


def test_taints_drain_only_for_noexecute() -> None:
    data = plan_json("taints")
    waves = [p for p in data["phases"] if p["kind"] == "wave"]
    calm = [w for w in waves if not w["drains"]]
    assert [w["nodes"] for w in calm] == [["a100-a", "a100-b"]]
    assert [w["nodes"] for w in waves if w["drains"]] == [["a100-c"], ["a100-d"]]
    commands = [s["command"] for w in calm for s in w["steps"]]
    assert ["kubectl", "taint", "node", "a100-a", "maintenance:NoSchedule-"] in commands
    assert ["kubectl", "taint", "node", "a100-a", "dedicated=training:NoSchedule", "--overwrite"] in commands
    assert not any(c[1] in ("cordon", "drain") for c in commands)


def test_node_move_relabels_the_pool_after_a_drain() -> None:
    data = plan_json("node-move")
    waves = [p for p in data["phases"] if p["kind"] == "wave"]
    assert [(w["nodes"], w["drains"]) for w in waves] == [(["a100-f"], False), (["a100-e"], True)]
    labels = [s["command"] for s in waves[1]["steps"] if s["action"] == "label"]
    assert ["kubectl", "label", "node", "a100-e", "gpustack.io/pool=a100-serve", "--overwrite"] in [
        [w for w in c if not w.startswith("nvidia.com/")] for c in labels
    ]


def test_no_change_plans_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROLLOUT_CASES / "taints")
    result = CliRunner().invoke(group, ["rollout", "old.yaml", "old.yaml"])
    assert result.exit_code == 0
    assert "Nothing to roll out" in result.stdout


@pytest.mark.parametrize("value", ["0", "-1", "150%", "two", "1.5"])
def test_bad_max_unavailable_is_a_usage_error(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, err = rollout("taints", monkeypatch, "--max-unavailable", value)
    assert code == 2 and out == ""
    assert "--max-unavailable" in err and "Traceback" not in err


def test_invalid_blueprint_is_reported_not_planned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "old.yaml").write_text((ROLLOUT_CASES / "taints" / "old.yaml").read_text(encoding="utf-8"))
    (tmp_path / "new.yaml").write_text("apiVersion: gpustack.io/v1alpha1\nkind: ClusterBlueprint\nspec: {}\n")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(group, ["rollout", "old.yaml", "new.yaml"])
    assert result.exit_code == 1 and result.stdout == ""
    assert "new.yaml:" in result.stderr and "invalid blueprint" in result.stderr


def test_device_plugin_keeps_the_old_configs_until_the_last_wave() -> None:
    data = plan_json("sharing-change")
    first = json.loads(next(s for s in steps(data, "prepare") if s["action"] == "helm-upgrade")["stdin"])
    last = json.loads(next(s for s in steps(data, "finish") if s["action"] == "helm-upgrade")["stdin"])
    # stack: gpu-operator (the default): the per-pool configs are the operator's devicePlugin.config.data
    first_configs, last_configs = first["devicePlugin"]["config"]["data"], last["devicePlugin"]["config"]["data"]
    assert {"time-slicing-2", "time-slicing-4", "mps-4"} <= set(first_configs)
    assert "time-slicing-2" not in last_configs and "time-slicing-4" in last_configs


def test_hami_waits_only_for_what_the_kubelet_lists(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    old = (Path(__file__).resolve().parents[1] / "blueprints" / "hami.yaml").read_text(encoding="utf-8")
    new = old.replace("splitCount: 4 ", "splitCount: 8 ")
    assert new != old
    (tmp_path / "old.yaml").write_text(old, encoding="utf-8")
    (tmp_path / "new.yaml").write_text(new, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(group, ["rollout", "--output", "json", "--allow-capacity-drop", "old.yaml", "new.yaml"])
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    waits = [s["command"][3] for s in steps(data) if s["action"] == "wait-resource"]
    # HAMi's memory and core counters are its scheduler's: only nvidia.com/gpu shows in status.allocatable
    assert waits == ["--for=jsonpath={.status.allocatable.nvidia\\.com/gpu}=32"] * 2


def git(repo: Path, *args: str) -> None:
    identity = ["-c", "user.name=gpustack-test", "-c", "user.email=test@example.com"]
    identity += ["-c", "commit.gpgsign=false", "-c", "core.hooksPath=/dev/null"]
    subprocess.run(["git", "-C", str(repo), *identity, *args], capture_output=True, text=True, check=True)


def test_base_plans_from_a_git_revision(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    case = ROLLOUT_CASES / "mig-relayout"
    git(tmp_path, "init", "-q")
    shutil.copy(case / "old.yaml", tmp_path / "prod.yaml")
    git(tmp_path, "add", "prod.yaml")
    git(tmp_path, "commit", "-q", "-m", "old")
    shutil.copy(case / "new.yaml", tmp_path / "prod.yaml")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(group, ["rollout", "--base", "HEAD", "--output", "json", "prod.yaml"])
    assert result.exit_code == 0, result.stderr
    from_git = json.loads(result.stdout)
    assert (from_git["before"], from_git["after"]) == ("HEAD:prod.yaml", "prod.yaml")
    assert from_git["phases"] == plan_json("mig-relayout")["phases"]
    unknown = CliRunner().invoke(group, ["rollout", "--base", "no-such-rev", "prod.yaml"])
    assert unknown.exit_code == 1 and "unknown revision 'no-such-rev'" in unknown.stderr


def test_leaving_nodes_lose_gpustack_labels_and_taints_and_come_back() -> None:
    data = plan_json("pool-removed")
    prepare = [s["command"] for s in steps(data, "prepare")]
    assert [
        "kubectl",
        "delete",
        "Deployment.apps",
        "embedder",
        "--namespace",
        "search",
        "--ignore-not-found",
    ] in prepare
    wave = next(p for p in data["phases"] if p["kind"] == "wave")
    assert [s["action"] for s in wave["steps"]] == ["cordon", "drain", "label", "untaint", "uncordon"]
    assert wave["steps"][2]["command"][4:] == [
        "gpustack.io/pool-",
        "nvidia.com/device-plugin.config-",
        "nvidia.com/mig.config-",
    ]
    finish = [s["description"] for s in steps(data, "finish")]
    assert finish[-1] == "delete Namespace search and everything in it (removed from the blueprint)"


def test_many_waves_show_the_lowest_capacity_not_a_column_each(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nodes = "[" + ", ".join(f"l4-{i:02d}" for i in range(30)) + "]"
    for side in ("old", "new"):
        text = (ROLLOUT_CASES / "sharing-change" / f"{side}.yaml").read_text(encoding="utf-8")
        (tmp_path / f"{side}.yaml").write_text(text.replace("[l4-a, l4-b, l4-c, l4-d, l4-e]", nodes), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(group, ["rollout", "old.yaml", "new.yaml"])
    assert result.exit_code == 0, result.stderr
    # 10 % of 30 nodes: three at a time, ten waves for the big pool and two for the other
    assert "12 wave(s) (12 draining) over 32 node(s)" in result.stdout
    header = next(line for line in result.stdout.splitlines() if line.lstrip().startswith("pool "))
    assert header.split() == ["pool", "resource", "before", "lowest", "during", "the", "waves", "after"]
    assert "l4-shared  nvidia.com/gpu  240/16  216/16 (wave01)" in result.stdout
    assert "pool l4-shared offers meanwhile: 216/16 nvidia.com/gpu" in result.stdout

"""`gpustack simulate` and `gpustack capacity` as a user meets them: exit codes, formats, no tracebacks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpustack.cli import group
from gpustack.codes import FILE_UNREADABLE

REPO = Path(__file__).resolve().parents[1]
SEED = str(REPO / "blueprints" / "seed-article.yaml")
CASES = Path(__file__).parent / "cases" / "simulate"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(group, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def test_every_pod_placed_exits_zero() -> None:
    code, out, _ = run("simulate", SEED)
    assert code == 0, out
    assert "all 11 pod(s) placed" in out
    assert "pretrain-master-0 -> gpu-node-03" in out and "pretrain-worker-2 -> gpu-node-06" in out


def test_json_report() -> None:
    code, out, _ = run("simulate", SEED, "--output", "json")
    data = json.loads(out)
    assert code == 0 and data["ok"] is True
    assert data["kubernetes"] == "1.31"
    assert {p["name"] for p in data["pools"]} == {"a100-inference", "h100-training", "l40s-mps", "t4-dev"}
    assert {q["tenant"] for q in data["quotas"]} == {"search", "research", "dev"}


def test_pending_pods_exit_one_with_message_and_hint() -> None:
    code, out, _ = run("simulate", str(CASES / "seed-opening-1.33" / "blueprint.yaml"))
    assert code == 1
    assert "0/3 nodes are available: 3 Insufficient nvidia.com/gpu." in out
    assert "blueprint.yaml:12:14: hint: pool 't4' has 3 nvidia.com/gpu" in out
    assert out.rstrip().endswith("1 pod(s) would stay pending")


def test_kubernetes_version_option_changes_the_wording() -> None:
    blueprint = str(CASES / "seed-opening-1.33" / "blueprint.yaml")
    _, out, _ = run("simulate", blueprint, "--kubernetes-version", "1.35", "-O", "json")
    data = json.loads(out)
    assert data["messages"][data["pending"][0]["messageIndex"]].count("no new claims to deallocate") == 1


@pytest.mark.parametrize("version", ["2.0", "1.x", "latest"])
def test_bad_kubernetes_version_is_a_usage_error(version: str) -> None:
    code, _, err = run("simulate", SEED, "--kubernetes-version", version)
    assert code == 2
    assert "not a Kubernetes version" in err


def test_invalid_blueprint_prints_diagnostics_and_exits_one(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    text = Path(SEED).read_text().replace("model: L40S", "model: NVIDIA-A100")
    bad.write_text(text, encoding="utf-8")
    code, out, err = run("simulate", str(bad))
    assert code == 1 and out == ""
    assert "error[GS301]" in err and "nothing simulated" in err
    code, out, _ = run("simulate", str(bad), "-O", "json")
    assert code == 1 and json.loads(out)["valid"] is False


def test_missing_files_are_diagnostics_not_tracebacks(tmp_path: Path) -> None:
    code, _, err = run("simulate", str(tmp_path / "nope.yaml"))
    assert code == 1 and FILE_UNREADABLE in err
    code, _, err = run("simulate", SEED, "--scenario", str(tmp_path / "nope.yaml"))
    assert code == 1 and FILE_UNREADABLE in err


def test_bad_scenario_exits_one_at_its_line(tmp_path: Path) -> None:
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text("workloads:\n  embeder: {replicas: 2}\n", encoding="utf-8")
    code, _, err = run("simulate", SEED, "--scenario", str(scenario))
    assert code == 1
    assert "scenario.yaml:2:3: error[GS101]: the blueprint has no workload 'embeder'" in err
    assert "did you mean 'embedder'?" in err


def test_scenario_scaling_makes_pods_pend(tmp_path: Path) -> None:
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text("workloads:\n  embedder: {replicas: 20}\n", encoding="utf-8")
    code, out, _ = run("simulate", SEED, "--scenario", str(scenario), "-O", "json")
    data = json.loads(out)
    assert code == 1
    # The quota (4 GPUs in search-prod) refuses pods before the scheduler ever sees them.
    assert {p["event"] for p in data["pending"]} == {"FailedCreate"}
    assert len(data["pending"]) == 16


def test_same_input_same_bytes() -> None:
    assert run("simulate", SEED, "-O", "json")[1] == run("simulate", SEED, "-O", "json")[1]


def test_capacity_text_and_json() -> None:
    code, out, _ = run("capacity", SEED)
    assert code == 0
    assert "a100-inference: 2 node(s) x 8 A100-SXM4-80GB = 16 GPU(s), sharing mig" in out
    assert "time-slicing does not isolate memory" in out
    code, out, _ = run("capacity", SEED, "--output", "json")
    data = json.loads(out)
    assert code == 0 and data["blueprint"] == "seed-article"


def test_capacity_chart_is_deterministic_svg(tmp_path: Path) -> None:
    first, second = tmp_path / "a.svg", tmp_path / "b.svg"
    assert run("capacity", SEED, "--chart", str(first))[0] == 0
    assert run("capacity", SEED, "--chart", str(second))[0] == 0
    assert first.read_bytes() == second.read_bytes()
    assert first.read_text(encoding="utf-8").startswith("<svg xmlns=")


def test_capacity_chart_that_cannot_be_written(tmp_path: Path) -> None:
    code, _, err = run("capacity", SEED, "--chart", str(tmp_path / "missing" / "c.svg"))
    assert code == 1 and "cannot write chart" in err and "Traceback" not in err


def test_capacity_of_invalid_blueprint(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: gpustack.io/v1alpha1\n", encoding="utf-8")
    code, _, err = run("capacity", str(bad))
    assert code == 1 and "no capacity to show" in err


def test_a_scenario_asking_for_too_many_pods_is_refused(tmp_path: Path) -> None:
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(
        "workloads:\n  embedder: {replicas: 100000}\n  llm-inference: {replicas: 100000}\n"
        "  notebook: {replicas: 100000}\n",
        encoding="utf-8",
    )
    code, _, err = run("simulate", SEED, "--scenario", str(scenario))
    assert code == 1 and "more than 250000 pods" in err


@pytest.mark.parametrize("case", ["mixed-reasons-1.35", "toleration-key-1.33", "gang-partial"])
def test_same_report_across_hash_seeds(case: str) -> None:
    """Placement memory is keyed by object identity and sets of class indexes: none of it may leak into the
    report, whatever order a hash seed gives sets and dicts of strings."""
    args = ["simulate", str(CASES / case / "blueprint.yaml")]
    if (CASES / case / "scenario.yaml").is_file():
        args += ["--scenario", str(CASES / case / "scenario.yaml")]
    reports = [
        subprocess.run(
            [sys.executable, "-m", "gpustack", *args, "--output", output],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            check=False,
        )
        for seed in ("0", "12345")
        for output in ("text", "json")
    ]
    assert all(r.returncode == 1 for r in reports), [r.stderr for r in reports]  # every case leaves a pod pending
    assert reports[0].stdout == reports[2].stdout and reports[1].stdout == reports[3].stdout
    assert b"FailedScheduling" in reports[0].stdout or b"Unschedulable" in reports[0].stdout

"""SimulationReport gpustack.io/v1alpha2: each distinct pending message and hint written once, pods refer to them.

At 1,000 pools every pending replica's FailedScheduling message names each pool's taint; written per pod, the
JSON report was 60 MB where the text report (which groups the replicas) was 4 MB (issue 28, docs/json-output.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gpustack.cli import group
from gpustack.simulate.messages import event_note
from gpustack.simulate.report import _as_event

REPO = Path(__file__).resolve().parents[1]
SEED = REPO / "blueprints" / "seed-article.yaml"


def fleet(pools: int, replicas: int) -> str:
    """`pools` tainted one-GPU pools of two nodes; one workload asks for `replicas` pods of the first pool."""
    lines = [
        "apiVersion: gpustack.io/v1alpha1",
        "kind: ClusterBlueprint",
        "metadata: {name: shape}",
        "spec:",
        '  kubernetes: {version: "1.33"}',
        "  nodePools:",
    ]
    for p in range(pools):
        lines += [
            f"    - name: pool-{p:03d}",
            "      gpu: {model: Tesla-T4, count: 1}",
            f"      nodes: [node-{p:03d}-a, node-{p:03d}-b]",
            f"      taints: [{{key: gpustack.io/pool, value: pool-{p:03d}, effect: NoSchedule}}]",
        ]
    lines += [
        "  tenants:",
        "    - {name: ml, namespaces: [ml], pools: [pool-000], quota: {pool-000: unlimited}}",
        "  workloads:",
        f"    - {{name: llm, tenant: ml, pool: pool-000, kind: Deployment, replicas: {replicas}, image: llm:1, "
        "gpu: {count: 1}}",
    ]
    return "\n".join(lines) + "\n"


def simulate(path: Path, *options: str) -> tuple[int, str]:
    result = CliRunner().invoke(group, ["simulate", str(path), *options])
    return result.exit_code, result.stdout


def resolved(data: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    """Each pending pod with its message and hint message looked up: what v1alpha1 wrote in place."""
    hints = data["hints"]
    return [
        (
            pod["pod"],
            data["messages"][pod["messageIndex"]],
            hints[pod["hintIndex"]]["message"] if pod["hintIndex"] is not None else None,
        )
        for pod in data["pending"]
    ]


def test_replicas_refused_alike_share_one_message_and_one_hint(tmp_path: Path) -> None:
    path = tmp_path / "blueprint.yaml"
    path.write_text(fleet(pools=40, replicas=30), encoding="utf-8")
    code, out = simulate(path, "--output", "json")
    data = json.loads(out)
    assert code == 1 and data["apiVersion"] == "gpustack.io/v1alpha2" and data["kind"] == "SimulationReport"
    assert len(data["pending"]) == 28
    [message] = data["messages"]
    assert "node(s) had untolerated taint {gpustack.io/pool: pool-039}" in message
    assert {pod["messageIndex"] for pod in data["pending"]} == {0}
    assert len(data["hints"]) == 1 and {pod["hintIndex"] for pod in data["pending"]} == {0}
    assert out.count("pool-039}") == 1  # the 40-taint message is in the document once, not 28 times
    assert all("message" not in pod and "hint" not in pod for pod in data["pending"])


def test_the_json_report_grows_by_an_entry_per_pending_pod_not_by_a_message(tmp_path: Path) -> None:
    sizes = {}
    for replicas in (30, 300):
        path = tmp_path / f"blueprint-{replicas}.yaml"
        path.write_text(fleet(pools=40, replicas=replicas), encoding="utf-8")
        _, text = simulate(path)
        _, document = simulate(path, "--output", "json")
        sizes[replicas] = len(document)
        message = json.loads(document)["messages"][0]
        # JSON holds the whole message (the PodScheduled condition's); the text shows it cut, as the event reads
        assert len(message) > 2000 and message not in text and text.count(event_note(message)) == 1
    # 270 more pending pods cost their own entries (under 200 bytes each), not 270 copies of the 2.6 kB message:
    # v1alpha1 grew by 770 kB here, v1alpha2 by 45 kB.
    assert sizes[300] - sizes[30] < 270 * 200


def test_looking_up_the_indexes_gives_the_text_reports_messages_and_hints(tmp_path: Path) -> None:
    path = tmp_path / "blueprint.yaml"
    path.write_text(fleet(pools=3, replicas=6), encoding="utf-8")
    _, out = simulate(path, "--output", "json")
    _, text = simulate(path)
    pods = resolved(json.loads(out))
    assert [pod for pod, _, _ in pods] == ["llm-2", "llm-3", "llm-4", "llm-5"]
    for _, message, hint in pods:
        assert f"    {message}\n" in text
        assert hint is not None and f"hint: {hint}\n" in text


def test_pod_specific_messages_stay_one_per_pod_in_order_of_first_use(tmp_path: Path) -> None:
    """A quota refusal names its pod: each is a message of its own, and the table lists them as pods meet them."""
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text("workloads:\n  embedder: {replicas: 20}\n", encoding="utf-8")
    code, out = simulate(SEED, "--scenario", str(scenario), "--output", "json")
    data = json.loads(out)
    assert code == 1 and len(data["pending"]) == 16
    assert [pod["messageIndex"] for pod in data["pending"]] == list(range(16))
    for pod, message, _ in resolved(data):
        deployment, _, index = pod.rpartition("-")  # the ReplicaSet's pod: `<deployment>-<hash>-<suffix>`
        assert f'"{deployment}-<hash>-{index}"' in message and message.startswith("Error creating: ")


def test_a_pod_without_a_hint_has_a_null_hint_index(tmp_path: Path) -> None:
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text("workloads:\n  embedder: {replicas: 20}\n", encoding="utf-8")
    _, out = simulate(SEED, "--scenario", str(scenario), "--output", "json")
    data = json.loads(out)
    indexes = [pod["hintIndex"] for pod in data["pending"]]
    assert all(index is None or 0 <= index < len(data["hints"]) for index in indexes)
    assert len(data["hints"]) == len({index for index in indexes if index is not None})


def test_the_text_report_shows_kube_schedulers_event_cut_and_says_where_the_whole_message_is(tmp_path: Path) -> None:
    """kube-scheduler cuts its FailedScheduling event at 1024 bytes (the pod's condition keeps the whole message);
    the text report shows what `kubectl describe pod` would, so 4x the pools leave its pending part the same size."""
    pending_parts = {}
    for pools in (40, 160):
        path = tmp_path / f"blueprint-{pools}.yaml"
        path.write_text(fleet(pools=pools, replicas=30), encoding="utf-8")
        _, text = simulate(path)
        _, document = simulate(path, "--output", "json")
        [message] = json.loads(document)["messages"]
        size = len(message.encode())
        assert size > 2000 * pools // 40
        assert f"    {message[:1020]} ...\n" in text
        assert f"`--output json` hold the whole message, {size} bytes)\n" in text
        pending_parts[pools] = text[text.index("\nPending\n") :]
    assert abs(len(pending_parts[160]) - len(pending_parts[40])) < 100


@pytest.mark.parametrize(
    ("event", "scheduler", "cut"),
    [
        ("FailedScheduling", "default-scheduler", True),
        ("FailedScheduling", None, True),  # a scenario pod no workload row names: kube-scheduler's
        ("Unschedulable", "volcano", False),  # Volcano records its events whole
        ("FailedCreate", "default-scheduler", False),  # the controller's event, not kube-scheduler's
    ],
)
def test_only_kube_schedulers_failed_scheduling_event_is_cut(event: str, scheduler: str | None, cut: bool) -> None:
    message = "0/2000 nodes are available: " + "x" * 2000
    row = _as_event({"event": event, "message": message}, scheduler)
    assert (row["shown"] != message) is cut and row["message"] is message
    assert row["whole"] == (len(message) if cut else None)


@pytest.mark.parametrize(
    ("kind", "first", "named"),
    [
        ("Deployment", "llm-2", 'Error creating: pods "llm-<hash>-2" is forbidden: exceeded quota'),
        ("StatefulSet", "llm-2", 'create Pod llm-2 in StatefulSet llm failed error: pods "llm-2" is forbidden'),
    ],
)
def test_the_text_report_shows_one_workloads_quota_refusals_once_though_each_names_its_pod(
    tmp_path: Path, kind: str, first: str, named: str
) -> None:
    """The API server names the pod it refuses (for a Deployment's pod, the name it generated); the text report masks
    that name to see the replicas refused alike, and shows them as one run of pods under the first one's message."""
    path = tmp_path / "blueprint.yaml"
    text = fleet(pools=1, replicas=6).replace("quota: {pool-000: unlimited}", "quota: {pool-000: {gpu: 2}}")
    path.write_text(text.replace("kind: Deployment", f"kind: {kind}"), encoding="utf-8")
    _, report = simulate(path)
    _, document = simulate(path, "--output", "json")
    pods = resolved(json.loads(document))
    assert [pod for pod, _, _ in pods] == ["llm-2", "llm-3", "llm-4", "llm-5"]
    assert len({message for _, message, _ in pods}) == 4  # each names its own pod, as the API server wrote
    assert f"  ml/{first} .. llm-5 (4 pods)  FailedCreate\n    {named}" in report
    assert report.count("exceeded quota") == 1

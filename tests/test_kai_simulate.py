"""`gpustack simulate` knows KAI Scheduler's queues: over its queue's limit a job pends with KAI's own words, over
its quota it runs and is shown over quota, and a MIG pod the queue has room for is still stopped by the
ResourceQuota on its exact profile name (KAI's queue does not cap a profile)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from builders import sourceless
from click.testing import CliRunner

from gpustack.cli import group
from gpustack.compile import compile_blueprint
from gpustack.model import Blueprint
from gpustack.simulate import Simulation, run_simulation
from gpustack.simulate.kai import OVER_LIMIT, humanize
from gpustack.simulate.report import format_json, format_text, report_data
from gpustack.simulate.scenario import load_scenario
from gpustack.validation import validate_path, validate_text

ROOT = Path(__file__).parent.parent
KAI = ROOT / "blueprints" / "kai.yaml"
CASES = Path(__file__).parent / "cases" / "kai-sim"


@pytest.fixture(scope="module")
def kai() -> Blueprint:
    result = validate_path(KAI)
    assert result.ok and result.blueprint is not None
    return result.blueprint


def objects_of(blueprint: Blueprint) -> list[dict[str, Any]]:
    return [dict(m.obj) for m in compile_blueprint(sourceless(blueprint)).objects]


def simulate(
    blueprint: Blueprint, scenario: str | None = None, objects: list[dict[str, Any]] | None = None
) -> Simulation:
    loaded = load_scenario(scenario, "scenario.yaml", blueprint) if scenario is not None else None
    return run_simulation(sourceless(blueprint), objects if objects is not None else objects_of(blueprint), loaded)


def pending(simulation: Simulation) -> dict[str, tuple[str, str]]:
    return {item.pod.name: (item.event, item.message) for item in simulation.outcome.pending}


def queue(simulation: Simulation, name: str) -> Any:
    assert simulation.outcome.kai is not None
    return simulation.outcome.kai.queues[name]


# A job in training-dev on the H100 pool: its namespace's ResourceQuota (12 GPUs) lets it in, its leaf's limit (12)
# too, but the parent Queue 'training.h100' (its H100 shard's) already holds pretrain's 8 GPUs.
DEV_JOB = (CASES / "dev-job.yaml").read_text(encoding="utf-8")


def test_a_job_over_its_parent_queues_limit_pends_with_kais_words(kai: Blueprint) -> None:
    simulation = simulate(kai, DEV_JOB)
    assert pending(simulation) == {
        "dev-job-1": (
            OVER_LIMIT,
            "training.h100 quota has reached the allowable limit of GPUs. Limit is 12 GPUs, currently 12 GPUs "
            "allocated and workload requested 4 GPUs",
        )
    }
    # The API server admitted it (its namespace's ResourceQuota had room) and h100-b has 4 GPUs free: it is KAI
    # that holds it back.
    assert all(item.quota is None for item in simulation.outcome.pending)
    assert queue(simulation, "training.h100").allocated == 12
    free = [n for n, node in enumerate(simulation.outcome.cluster.nodes) if node.name == "h100-b"]
    assert simulation.outcome.cluster.used[free[0]].get("nvidia.com/gpu") == 4


def test_a_job_under_the_limit_is_placed(kai: Blueprint) -> None:
    simulation = simulate(kai, DEV_JOB.replace("replicas: 2", "replicas: 1"))
    assert pending(simulation) == {}
    assert queue(simulation, "training.h100").allocated == 12
    assert queue(simulation, "training.h100.training-dev").allocated == 4


def test_a_leaf_limit_is_checked_before_the_parent(kai: Blueprint) -> None:
    """A gang bigger than its leaf's limit: the leaf is named, as KAI walks from the job's queue up."""
    simulation = simulate(kai, "workloads:\n  pretrain: {replicas: 4}\n")
    # The namespace's ResourceQuota (12) refuses the 4th worker first; the three admitted are a 12-GPU job that the
    # leaf's limit (12) still takes, so no OverLimit: quota admission comes before KAI.
    events = {event for event, _ in pending(simulation).values()}
    assert OVER_LIMIT not in events
    objects = [o for o in objects_of(kai) if o["kind"] != "ResourceQuota"]
    simulation = simulate(kai, "workloads:\n  pretrain: {replicas: 4}\n", objects)
    assert set(pending(simulation).values()) == {
        (
            OVER_LIMIT,
            "training.h100.training quota has reached the allowable limit of GPUs. Limit is 12 GPUs, currently 0 "
            "GPUs allocated and workload requested 16 GPUs",
        )
    }
    assert len(pending(simulation)) == 4  # the whole JobSet group waits: KAI judges the job, not its pods one by one


def test_over_quota_under_limit_is_placed_and_marked(kai: Blueprint) -> None:
    simulation = simulate(kai)
    assert simulation.outcome.ok
    leaf = queue(simulation, "training.h100.training")
    assert (leaf.quota, leaf.limit, leaf.allocated) == (6, 12, 8)
    # The JobSet's group is one job: it takes the leaf from 0 to 8 units, past its quota (6), so KAI may reclaim it
    # whole.
    assert [pod.name for pod in leaf.over_quota] == ["pretrain-workers-0-0", "pretrain-workers-0-1"]
    data = report_data(simulation, "kai.yaml")
    pretrain = next(w for w in data["workloads"] if w["name"] == "pretrain")
    assert [p["kaiOverQuota"] for p in pretrain["placements"]] == ["training.h100.training"] * 2
    assert all("kaiOverQuota" not in p for w in data["workloads"] if w["name"] != "pretrain" for p in w["placements"])
    text = format_text(data)
    assert "pretrain-workers-0-0 -> h100-a (over quota in KAI queue training.h100.training)" in text
    assert "pretrain-workers-0-1 -> h100-b (over quota in KAI queue training.h100.training)" in text
    assert "chat-0 -> a100-a\n" in text
    assert (
        "training.h100.training (in training.h100): 8 / 6, limit 12, over-quota weight 1  over quota: 2 pod(s) KAI "
        "may reclaim" in text
    )
    document = json.loads(format_json(data))
    by_name = {q["name"]: q for q in document["kaiQueues"]}
    assert by_name["training.h100.training"]["overQuota"] is True
    assert by_name["training.h100.training"]["overQuotaPods"] == [
        {"pod": "pretrain-workers-0-0", "namespace": "training"},
        {"pod": "pretrain-workers-0-1", "namespace": "training"},
    ]
    assert by_name["training.h100"] == {
        "name": "training.h100",
        "parent": None,
        "gpuQuota": 12,
        "gpuLimit": 12,
        "overQuotaWeight": 1,
        "gpuAllocated": 8,
        "overQuota": False,
        "overQuotaPods": [],
    }


def test_queue_figures_are_read_from_the_compiled_queues(kai: Blueprint) -> None:
    """Change a compiled Queue and the simulation follows it: nothing is worked out again from the blueprint."""
    objects = objects_of(kai)
    for obj in objects:
        if obj["kind"] == "Queue" and obj["metadata"]["name"] == "training.h100":
            obj["spec"] = {**obj["spec"], "resources": {**obj["spec"]["resources"], "gpu": {"quota": 4, "limit": 4}}}
    simulation = simulate(kai, None, objects)
    assert {name: event for name, (event, _) in pending(simulation).items()} == {
        "pretrain-workers-0-0": OVER_LIMIT,
        "pretrain-workers-0-1": OVER_LIMIT,
    }
    assert pending(simulation)["pretrain-workers-0-0"][1] == (
        "training.h100 quota has reached the allowable limit of GPUs. Limit is 4 GPUs, currently 0 GPUs allocated "
        "and workload requested 8 GPUs"
    )


def test_an_unlimited_queue_takes_any_job(kai: Blueprint) -> None:
    objects = objects_of(kai)
    for obj in objects:
        if obj["kind"] == "Queue" and obj["metadata"]["name"].startswith("training"):
            obj["spec"]["resources"]["gpu"] = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    simulation = simulate(kai, DEV_JOB, objects)
    assert pending(simulation) == {}
    assert queue(simulation, "training.h100").allocated == 16
    assert not queue(simulation, "training.h100").over()


def test_mig_pods_count_their_slices_but_the_queue_does_not_cap_a_profile(kai: Blueprint) -> None:
    """serving's A100 queue holds 26 units. 20 embedders (mig-1g.10gb) and 2 chats (mig-3g.40gb) are 26: the queue
    lets them all in, 20 instances of a profile granted 14. Only the ResourceQuota on the exact name stops the 6
    extra."""
    scenario = "workloads:\n  embedder: {replicas: 20}\n"
    without_quota = [o for o in objects_of(kai) if o["kind"] != "ResourceQuota"]
    unguarded = simulate(kai, scenario, without_quota)
    assert unguarded.outcome.ok
    assert queue(unguarded, "serving.a100-mig").allocated == 20 + 2 * 3
    guarded = simulate(kai, scenario)
    refused = pending(guarded)
    assert sorted(refused) == [f"embedder-{i}" for i in range(14, 20)]
    assert {event for event, _ in refused.values()} == {"FailedCreate"}
    assert refused["embedder-14"][1] == (
        'Error creating: pods "embedder-<hash>-14" is forbidden: exceeded quota: gpustack-gpu-quota, '
        "requested: requests.nvidia.com/mig-1g.10gb=1, used: requests.nvidia.com/mig-1g.10gb=14, "
        "limited: requests.nvidia.com/mig-1g.10gb=14"
    )
    assert queue(guarded, "serving.a100-mig").allocated == 14 + 2 * 3  # still room in the queue: 26 units


def test_a_mig_job_over_the_queue_limit_pends_in_units(kai: Blueprint) -> None:
    """The limit is in units: 5 chats of mig-3g.40gb are 15 units; with the queue cut to 10 the third waits."""
    objects = [o for o in objects_of(kai) if o["kind"] != "ResourceQuota"]
    for obj in objects:
        if obj["kind"] == "Queue" and obj["metadata"]["name"] == "serving.a100-mig.serving":
            obj["spec"]["resources"]["gpu"] = {"quota": 10, "limit": 10, "overQuotaWeight": 1}
    simulation = simulate(kai, "workloads:\n  chat: {replicas: 5}\n  embedder: {replicas: 0}\n", objects)
    assert pending(simulation)["chat-3"] == (
        OVER_LIMIT,
        "serving.a100-mig.serving quota has reached the allowable limit of GPUs. Limit is 10 GPUs, currently 9 "
        "GPUs allocated and workload requested 3 GPUs",
    )
    assert sorted(pending(simulation)) == ["chat-3", "chat-4"]


def test_without_kai_tenants_nothing_changes() -> None:
    result = validate_path(ROOT / "blueprints" / "multi-tenant.yaml")
    assert result.blueprint is not None
    simulation = simulate(result.blueprint)
    assert simulation.outcome.kai is None
    assert "kaiQueues" not in report_data(simulation, "multi-tenant.yaml")


def test_cli_text_and_json(kai: Blueprint) -> None:
    scenario = CASES / "dev-job.yaml"
    text = CliRunner().invoke(group, ["simulate", str(KAI), "--scenario", str(scenario)])
    assert text.exit_code == 1
    assert "training-dev/dev-job-1  OverLimit" in text.output
    assert "training.h100 quota has reached the allowable limit of GPUs. Limit is 12 GPUs" in text.output
    assert (
        "hint: the KAI queue named above is at its limit, which is tenant 'training''s quota in GPU units (a MIG "
        "device counts its slices; each pool is a KAI shard of its own); raise the quota or run fewer pods of "
        "'dev-job'"
    ) in " ".join(text.output.split())
    out = CliRunner().invoke(group, ["simulate", str(KAI), "--scenario", str(scenario), "-o", "json"])
    document = json.loads(out.output)
    (item,) = document["pending"]
    assert item["event"] == OVER_LIMIT
    assert document["messages"][item["messageIndex"]].startswith("training.h100 quota has reached the allowable")
    # The hint points at the quota the queue's limit is written from.
    hint = document["hints"][item["hintIndex"]]
    assert (hint["document"], hint["path"]) == ("blueprint", "$.spec.tenants[0].quota.h100.gpu")
    assert hint["file"] is not None and hint["line"] is not None


def test_pods_running_in_the_cluster_count_in_their_queues(kai: Blueprint) -> None:
    """A snapshot's running KAI pod (4 GPUs in training-dev) and pretrain's 8 fill the parent: no dev job fits."""
    from gpustack.cluster.snapshot import read_snapshot

    loaded = load_scenario(DEV_JOB, "scenario.yaml", kai)
    snapshot = read_snapshot(str(CASES / "cluster.yaml"))
    simulation = run_simulation(sourceless(kai), objects_of(kai), loaded, snapshot=snapshot)
    assert {name: event for name, (event, _) in pending(simulation).items()} == {
        "dev-job-0": OVER_LIMIT,
        "dev-job-1": OVER_LIMIT,
    }
    assert pending(simulation)["dev-job-0"][1].endswith("currently 12 GPUs allocated and workload requested 4 GPUs")
    assert queue(simulation, "training.h100.training-dev").allocated == 4
    # Without the running pod, the first dev job fits (the second does not).
    assert sorted(pending(simulate(kai, DEV_JOB))) == ["dev-job-1"]


@pytest.mark.parametrize(("value", "text"), [(12, "12"), (0, "0"), (-1, "Unlimited")])
def test_numbers_as_kai_writes_them(value: int, text: str) -> None:
    assert humanize(value) == text


TRAINING = "      scheduler: kai\n      quota:\n        h100: {gpu: 12}"
SERVING = "      priority: high\n      scheduler: kai\n"
ORG = "      kai:\n        cohort:\n          name: gpu-org\n"


def cohort_blueprint() -> Blueprint:
    """kai.yaml with both tenants in cohort gpu-org, training borrowing up to 2 GPUs: its Queue's limit is 14."""
    text = KAI_TEXT.replace(
        TRAINING,
        "      scheduler: kai\n" + ORG + "          borrowingLimit: {h100: {gpu: 2}}\n"
        "      quota:\n        h100: {gpu: 12}",
    )
    text = text.replace(SERVING, SERVING + ORG)
    result = validate_text(text, "kai-cohort.yaml")
    assert result.ok and result.blueprint is not None, [d.message for d in result.diagnostics]
    return result.blueprint


KAI_TEXT = KAI.read_text(encoding="utf-8")
BORROWER = """
pods:
  - name: dev-job
    namespace: training-dev
    replicas: 2
    spec:
      schedulerName: kai-scheduler
      priorityClassName: gpustack-normal
      tolerations: [{key: gpustack.io/pool, operator: Equal, value: h100, effect: NoSchedule}]
      containers: [{name: main, resources: {limits: {nvidia.com/gpu: 4}}}]
  - name: small
    namespace: training-dev
    spec:
      schedulerName: kai-scheduler
      priorityClassName: gpustack-normal
      tolerations: [{key: gpustack.io/pool, operator: Equal, value: h100, effect: NoSchedule}]
      containers: [{name: main, resources: {limits: {nvidia.com/gpu: 2}}}]
"""


def test_a_tenant_borrowing_in_its_cohort_runs_over_quota_up_to_its_limit() -> None:
    """pretrain (8) and dev-job-0 (4) fill training's quota (12); dev-job-1 (4) would pass its limit (14) and
    waits; small (2) borrows up to the limit and runs over quota in the parent Queue 'training', under gpu-org."""
    blueprint = cohort_blueprint()
    simulation = simulate(blueprint, BORROWER)
    assert pending(simulation) == {
        "dev-job-1": (
            OVER_LIMIT,
            "training.h100 quota has reached the allowable limit of GPUs. Limit is 14 GPUs, currently 12 GPUs "
            "allocated and workload requested 4 GPUs",
        )
    }
    parent = queue(simulation, "training.h100")
    assert (parent.parent, parent.quota, parent.limit, parent.allocated) == ("gpu-org.h100", 12, 14, 14)
    assert [pod.name for pod in parent.over_quota] == ["small"]
    assert queue(simulation, "gpu-org.h100").allocated == 14  # the cohort's H100 Queue; serving runs on the A100s
    assert queue(simulation, "gpu-org.a100-mig").allocated == 10
    text = format_text(report_data(simulation, "kai-cohort.yaml"))
    assert (
        "  training.h100 (in gpu-org.h100): 14 / 12, limit 14, over-quota weight 1  over quota: 1 pod(s) KAI may "
        "reclaim" in text
    )
    assert "small -> h100-b (over quota in KAI queue training.h100)" in text


SERVING_ON_H100 = """
pods:
  - name: h100-job
    namespace: serving
    replicas: 5
    spec:
      schedulerName: kai-scheduler
      priorityClassName: gpustack-high
      nodeSelector: {gpustack.io/pool: h100}
      tolerations: [{key: gpustack.io/pool, operator: Equal, value: h100, effect: NoSchedule}]
      containers: [{name: main, resources: {limits: {nvidia.com/gpu: 1}}}]
"""


def test_the_h100_shards_queue_holds_serving_to_its_h100s_however_many_units_it_has_elsewhere(
    kai: Blueprint,
) -> None:
    """Per-model limits (KAI issue #1087): with one Queue serving's 30 units would have taken 5 H100s (its namespace's
    ResourceQuota on nvidia.com/gpu, left out here, is the only other cap, and it cannot tell H100s from other whole
    GPUs). In the H100 shard its Queue holds 4, while its A100 Queue keeps 16 units free."""
    objects = [o for o in objects_of(kai) if o["kind"] != "ResourceQuota"]
    simulation = simulate(kai, SERVING_ON_H100, objects)
    assert pending(simulation) == {
        "h100-job-4": (
            OVER_LIMIT,
            "serving.h100.serving quota has reached the allowable limit of GPUs. Limit is 4 GPUs, currently 4 GPUs "
            "allocated and workload requested 1 GPUs",
        )
    }
    assert queue(simulation, "serving.h100").allocated == 4
    assert queue(simulation, "serving.a100-mig").allocated == 10  # chat and embedder: 16 units left unused

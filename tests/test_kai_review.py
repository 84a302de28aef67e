"""Review: a change that cuts a KAI tenant's Queue below, removes it from under, or moves the tenant off KAI while its
jobs run is a risk naming the tenant, the queue and the jobs stranded."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from gpustack.review.risk import Level, Risk
from gpustack.review.risks import assess_risks
from gpustack.review.risks.queues import kai_queue_stranded
from gpustack.review.snapshot import Snapshot
from gpustack.validation import validate_text

KAI = (Path(__file__).parent.parent / "blueprints" / "kai.yaml").read_text(encoding="utf-8")
CODE = "kai-queue-stranded"


def side(text: str, label: str) -> Snapshot:
    result = validate_text(text, label)
    errors = [d.message for d in result.diagnostics if d.severity == "error"]
    assert result.ok and result.context is not None, errors
    return Snapshot(label, result.context)


def risks(*edits: tuple[str, str]) -> list[Risk]:
    after = KAI
    for old, new in edits:
        assert old in after, old
        after = after.replace(old, new, 1)
    found = assess_risks(side(KAI, "before.yaml"), side(after, "after.yaml"))
    return [r for r in found if r.code == CODE]


CUT_TRAINING = ("h100: {gpu: 12}", "h100: {gpu: 6}")


def test_kai_queue_stranded__limit_cut_below_running_jobs() -> None:
    found = risks(CUT_TRAINING)
    assert [(r.severity, r.title) for r in found] == [
        (Level.MEDIUM, "KAI queue 'training.h100' limit cut to 6 GPU units, below the 8 its running jobs hold"),
        (
            Level.MEDIUM,
            "KAI queue 'training.h100.training' limit cut to 6 GPU units, below the 8 its running jobs hold",
        ),
    ]
    parent = found[0]
    assert parent.tenants == ("training",)
    assert parent.workloads == ("pretrain",)
    assert parent.details == ("pretrain: 2 pods, 8 GPU units in queue 'training.h100.training'",)
    assert "goes from 12 to 6" in parent.message
    assert "while job 'pretrain' holds 8 units in it" in parent.message
    assert "of the pods that end, restart or roll, 2 units' worth are not placed again" in parent.message
    assert "OverLimit: 'training.h100 quota has reached the allowable limit of GPUs'" in parent.message


def test_kai_queue_stranded__quota_cut_below_running_jobs_is_over_quota() -> None:
    """A third namespace cuts each leaf's guaranteed share to 4; pretrain's 8 stay under the limit (12)."""
    found = risks(("namespaces: [training, training-dev]", "namespaces: [training, training-dev, training-x]"))
    assert [(r.severity, r.title) for r in found] == [
        (Level.LOW, "KAI queue 'training.h100.training' quota cut to 4 GPU units, below the 8 its running jobs hold"),
    ]
    assert "4 of them run over quota" in found[0].message
    assert found[0].workloads == ("pretrain",)


def test_kai_queue_stranded__queue_renamed_with_its_namespace() -> None:
    found = risks(("namespaces: [training, training-dev]", "namespaces: [train, training-dev]"))
    assert [(r.severity, r.title) for r in found] == [
        (
            Level.HIGH,
            "KAI queue 'training.h100.training' of tenant 'training' removed or renamed while 8 GPU units run in it",
        ),
    ]
    assert "QueueDoesNotExist" in found[0].message
    assert found[0].workloads == ("pretrain",)


def test_kai_queue_stranded__tenant_moved_off_kai() -> None:
    found = risks(("      priority: high\n      scheduler: kai\n", "      priority: high\n"))
    (risk,) = found
    assert (risk.severity, risk.title) == (
        Level.HIGH,
        "Tenant 'serving' moves off KAI to default while 10 GPU units run in its queues",
    )
    assert (
        "Its KAI queues 'serving.a100-mig', 'serving.a100-mig.serving', 'serving.h100', 'serving.h100.serving' go"
        in risk.message
    )
    assert risk.workloads == ("chat", "embedder")
    assert risk.details == (
        "chat: 2 pods, 6 GPU units in queue 'serving.a100-mig.serving'",
        "embedder: 4 pods, 4 GPU units in queue 'serving.a100-mig.serving'",
    )


def test_kai_queue_stranded__silent_when_nothing_runs_above_the_new_figure() -> None:
    assert risks() == []
    assert risks(("h100: {gpu: 12}", "h100: {gpu: 16}")) == []  # raised
    # 10 still holds pretrain's 8 in the parent; only the leaf's guaranteed share (5) is below it.
    assert [r.title for r in risks(("h100: {gpu: 12}", "h100: {gpu: 10}"))] == [
        "KAI queue 'training.h100.training' quota cut to 5 GPU units, below the 8 its running jobs hold"
    ]
    # serving's A100 queue goes from 26 to 20 units: chat and embedder hold 10.
    assert risks(("mig-1g.10gb: 14}", "mig-1g.10gb: 8}")) == []


def test_kai_queue_stranded__scaled_jobs_are_counted_with_every_pod() -> None:
    """Eight embedders (8 units) and two chats (6) run in the old version: 14 units. Serving cut to 12 strands them;
    with four embedders (10 units) the same cut strands nothing."""
    more = ("      replicas: 4\n      image: serving/embedder", "      replicas: 8\n      image: serving/embedder")
    cut = (
        "h100: {gpu: 4}\n        a100-mig: {mig-3g.40gb: 4, mig-1g.10gb: 14}",
        "a100-mig: {mig-3g.40gb: 2, mig-1g.10gb: 6}",
    )
    before = KAI.replace(*more)
    found = kai_queue_stranded(side(before, "b.yaml"), side(before.replace(*cut), "a.yaml"))
    assert [r.title for r in found] == [
        "KAI queue 'serving.a100-mig' limit cut to 12 GPU units, below the 14 its running jobs hold",
        "KAI queue 'serving.a100-mig.serving' limit cut to 12 GPU units, below the 14 its running jobs hold",
    ]
    assert found[0].details == (
        "chat: 2 pods, 6 GPU units in queue 'serving.a100-mig.serving'",
        "embedder: 8 pods, 8 GPU units in queue 'serving.a100-mig.serving'",
    )
    assert kai_queue_stranded(side(KAI, "b.yaml"), side(KAI.replace(*cut), "a.yaml")) == []


def test_kai_queue_stranded__the_figures_come_from_the_plans() -> None:
    """The rule reads each side's compiled Queues: an old plan without them has nothing to strand."""
    before = side(KAI, "before.yaml")
    plan = before.plan
    # Snapshot.plan is a cached_property: the side's Plan, held in the instance's __dict__ once compiled.
    before.__dict__["plan"] = dataclasses.replace(plan, objects=tuple(m for m in plan.objects if m.kind != "Queue"))
    after = side(KAI.replace(*CUT_TRAINING), "after.yaml")
    assert kai_queue_stranded(before, after) == []


def test_kai_queue_stranded__a_removed_tenant_is_left_to_tenant_access_lost() -> None:
    start = KAI.index("    - name: serving\n")
    end = KAI.index("  workloads:")
    text = KAI[:start] + KAI[end:]
    text = text[: text.index("    - name: chat\n")]
    found = assess_risks(side(KAI, "before.yaml"), side(text, "after.yaml"))
    assert [r.code for r in found if "serving" in r.tenants] == ["tenant-access-lost"]

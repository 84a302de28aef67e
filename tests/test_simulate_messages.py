"""kube-scheduler's and Volcano's wording, version by version (kube-scheduler-messages.md)."""

from __future__ import annotations

import pytest

from gpustack.simulate.messages import (
    NO_VICTIMS,
    NOT_HELPFUL,
    KubeVersion,
    event_note,
    fit_error,
    histogram,
    post_filter,
    preemption_fit_error,
    volcano_gang_message,
    volcano_nodes_error,
)


def test_counts_sort_as_strings_not_numbers() -> None:
    # Go's sort.Strings: "10 ..." sorts before "9 ...".
    assert histogram({"Insufficient nvidia.com/gpu": 10, "node(s) had untolerated taint(s)": 9}) == [
        "10 Insufficient nvidia.com/gpu",
        "9 node(s) had untolerated taint(s)",
    ]


def test_uppercase_sorts_before_lowercase_at_equal_counts() -> None:
    assert histogram({"node(s) didn't match Pod's node affinity/selector": 1, "Insufficient cpu": 1}) == [
        "1 Insufficient cpu",
        "1 node(s) didn't match Pod's node affinity/selector",
    ]


def test_had_sorts_before_were() -> None:
    reasons = {"node(s) were unschedulable": 2, "node(s) had untolerated taint(s)": 2}
    assert histogram(reasons) == ["2 node(s) had untolerated taint(s)", "2 node(s) were unschedulable"]


def test_fit_error_has_one_period_per_part() -> None:
    message = fit_error(3, {"Insufficient nvidia.com/gpu": 3}, "preemption: x")
    assert message == "0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: x"


@pytest.mark.parametrize(
    ("version", "reason"),
    [
        ("1.17", "node(s) had taints that the pod didn't tolerate"),
        ("1.23", "node(s) had taint {gpu-pool: training}, that the pod didn't tolerate"),
        ("1.24", "node(s) had untolerated taint {gpu-pool: training}"),
        ("1.33", "node(s) had untolerated taint {gpu-pool: training}"),
        ("1.33.9", "node(s) had untolerated taint {gpu-pool: training}"),
        ("1.34.0", "node(s) had untolerated taint {gpu-pool: training}"),
        ("1.34.1", "node(s) had untolerated taint {gpu-pool: training}"),
        ("1.34.2", "node(s) had untolerated taint(s)"),
        ("1.34", "node(s) had untolerated taint(s)"),  # a bare minor is its latest patch
        ("1.35.0", "node(s) had untolerated taint(s)"),
    ],
)
def test_taint_reason_by_version(version: str, reason: str) -> None:
    assert KubeVersion.parse(version).taint_reason("gpu-pool", "training") == reason


def test_taint_without_value_keeps_the_space() -> None:
    assert KubeVersion.parse("1.33").taint_reason("dedicated", None) == "node(s) had untolerated taint {dedicated: }"


def test_seed_failure_1_33_vs_1_34() -> None:
    # kube-scheduler-messages.md section 4, verbatim.
    reasons = {"Insufficient nvidia.com/gpu": 3}
    for text, expected in (
        (
            "1.33",
            "0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are available: "
            "3 No preemption victims found for incoming pod.",
        ),
        (
            "1.34",
            "0/3 nodes are available: 3 Insufficient nvidia.com/gpu. no new claims to deallocate, preemption: "
            "0/3 nodes are available: 3 No preemption victims found for incoming pod.",
        ),
    ):
        version = KubeVersion.parse(text)
        preemption = preemption_fit_error(version, 3, {NO_VICTIMS: 3})
        assert fit_error(3, reasons, post_filter(version, preemption)) == expected


def test_old_releases_end_the_preemption_part_with_two_periods() -> None:
    version = KubeVersion.parse("1.27")
    assert preemption_fit_error(version, 1, {NOT_HELPFUL: 1}) == (
        "0/1 nodes are available: 1 Preemption is not helpful for scheduling.."
    )
    assert not KubeVersion.parse("1.28").double_period


def test_no_preemption_part_before_1_24() -> None:
    assert post_filter(KubeVersion.parse("1.23"), "anything") == ""


def test_request_over_allocatable_is_unresolvable_from_1_34() -> None:
    assert not KubeVersion.parse("1.33").unresolvable_when_over_allocatable
    assert KubeVersion.parse("1.34").unresolvable_when_over_allocatable


@pytest.mark.parametrize("text", ["1", "2.30", "1.x", "1.30.1.2", "", "v1"])
def test_bad_versions_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="not a Kubernetes version"):
        KubeVersion.parse(text)


def test_version_prints_as_written() -> None:
    assert str(KubeVersion.parse("v1.34.1")) == "1.34.1"
    assert str(KubeVersion.parse("1.31")) == "1.31"


def test_volcano_gang_message_matches_volcanos_own_test() -> None:
    # volcano pkg/scheduler/api/job_info_test.go TestTaskSchedulingReason (reference section 6).
    origin = volcano_nodes_error(3, {"node(s) pod number exceeded": 1, "node(s) resource fit failed": 2})
    message = volcano_gang_message(3, 6, 6, 6, 3, ("task-6", origin))
    assert message.split(": ", 1)[1] == (
        "pod group is not ready, 6 Pending, 6 minAvailable; Pending: 3 Schedulable, 3 Unschedulable. "
        "Origin reason is task-6: 0/3 nodes are unavailable: 1 node(s) pod number exceeded, "
        "2 node(s) resource fit failed."
    )
    assert message.startswith("3/6 tasks in gang unschedulable: ")


def test_volcano_says_unavailable_not_available() -> None:
    assert volcano_nodes_error(2, {"Insufficient nvidia.com/gpu": 2}) == (
        "0/2 nodes are unavailable: 2 Insufficient nvidia.com/gpu."
    )
    assert volcano_nodes_error(0, {}) == "all nodes are unavailable"


@pytest.mark.parametrize(
    ("size", "kept"),
    [(1023, 1023), (1024, 1024), (1025, 1020), (64_000, 1020)],
)
def test_the_event_keeps_1024_bytes_as_truncate_message_does(size: int, kept: int) -> None:
    """schedule_one.go: a message over NoteLengthLimit (1024) keeps its first 1020 bytes and ends ` ...`."""
    message = "".join(f"{i % 10}" for i in range(size))
    note = event_note(message)
    if kept == size:
        assert note is message
    else:
        assert note == message[:kept] + " ..." and len(note.encode()) == 1024


def test_the_event_cuts_bytes_not_characters() -> None:
    message = "x" * 1019 + "\u00e9" * 10  # é is 2 bytes in UTF-8: the cut at byte 1020 splits the first
    assert event_note(message) == "x" * 1019 + "\ufffd ..."

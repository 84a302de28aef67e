"""kube-scheduler's FailedScheduling wording, by Kubernetes version (kube-scheduler-messages.md).

Only the words live here; which nodes failed and why is the scheduler's business. Every
version difference the reference pins is a method of `KubeVersion`, so a test can ask each one.
"""

from __future__ import annotations

import re
from bisect import bisect_left, insort
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

NO_NODES = "no nodes available to schedule pods"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
NO_CLAIMS = "no new claims to deallocate"
STILL_NOT_SCHEDULABLE = "still not schedulable"  # DynamicResources PostFilter: the pod's claims hold nothing to free
CLAIMS_UNALLOCATABLE = "cannot allocate all claims"  # DynamicResources Filter
UNSCHEDULABLE_NODE = "node(s) were unschedulable"
AFFINITY_MISMATCH = "node(s) didn't match Pod's node affinity/selector"
TOO_MANY_PODS = "Too many pods"

_VERSION = re.compile(r"^v?1\.(?P<minor>[0-9]{1,2})(?:\.(?P<patch>[0-9]{1,3}))?$")


@dataclass(frozen=True, order=True)
class KubeVersion:
    """A Kubernetes 1.x release; `patch` None means "the latest patch of that minor"."""

    minor: int
    patch: int | None = None

    @staticmethod
    def parse(text: str) -> KubeVersion:
        match = _VERSION.match(text.strip())
        if match is None:
            raise ValueError(f"not a Kubernetes version: {text!r} (expected 1.MINOR or 1.MINOR.PATCH)")
        patch = match["patch"]
        return KubeVersion(int(match["minor"]), None if patch is None else int(patch))

    def __str__(self) -> str:
        return f"1.{self.minor}" if self.patch is None else f"1.{self.minor}.{self.patch}"

    def _at_least(self, minor: int, patch: int = 0) -> bool:
        # A bare minor stands for its latest patch, so it has every patch-level change of that minor.
        return self.minor > minor or (self.minor == minor and (self.patch is None or self.patch >= patch))

    @property
    def generic_taint_reason(self) -> bool:
        """1.34.2+ and 1.35+ no longer name the taint (PR #134740, cherry-picked as #135023)."""
        return self._at_least(34, 2)

    @property
    def unresolvable_when_over_allocatable(self) -> bool:
        """1.34+: a request larger than the node's allocatable makes the node UnschedulableAndUnresolvable."""
        return self.minor >= 34

    @property
    def dra_post_filter(self) -> bool:
        """1.34+: DynamicResources (GA, on) runs its PostFilter before preemption and says so."""
        return self.minor >= 34

    @property
    def preemption_part(self) -> bool:
        """The `preemption: ...` part arrived with PR #107775 (merged 2022-02, first released in 1.24)."""
        return self.minor >= 24

    @property
    def double_period(self) -> bool:
        """Before PR #117588 (≈1.28) the inner message's period was followed by the outer one."""
        return self.minor < 28

    def taint_reason(self, key: str, value: str | None) -> str:
        """The TaintToleration reason for the first untolerated NoSchedule/NoExecute taint."""
        if self.generic_taint_reason:
            return "node(s) had untolerated taint(s)"
        if self.minor >= 24:
            return f"node(s) had untolerated taint {{{key}: {value or ''}}}"
        if self.minor >= 18:
            return f"node(s) had taint {{{key}: {value or ''}}}, that the pod didn't tolerate"
        return "node(s) had taints that the pod didn't tolerate"


# validation.NoteLengthLimit: the most an events.k8s.io Event's note may hold, which kube-scheduler cuts to.
EVENT_NOTE_LIMIT = 1024
_CUT = " ..."


def event_note(message: str) -> str:
    """The FailedScheduling event's text: kube-scheduler's truncateMessage (schedule_one.go) cuts a message longer
    than 1024 bytes to its first 1020 and ` ...`; the pod's PodScheduled condition keeps it whole.

    Go cuts bytes; a character the cut splits reads as U+FFFD here, where Go would leave a broken UTF-8 sequence.
    """
    data = message.encode()
    if len(data) <= EVENT_NOTE_LIMIT:
        return message
    return data[: EVENT_NOTE_LIMIT - len(_CUT)].decode("utf-8", "replace") + _CUT


def insufficient(resource: str) -> str:
    return f"Insufficient {resource}"


def histogram(reasons: Mapping[str, int]) -> list[str]:
    """`"<count> <reason>"` entries sorted as strings, as Go's sort.Strings does: "10 x" < "9 x", "1 I" < "1 n".

    Python orders str by code point, which for these texts is the byte order Go uses.
    """
    return sorted(f"{count} {reason}" for reason, count in reasons.items())


@dataclass(frozen=True)
class Histogram:
    """Reason -> node count, with `histogram`'s entries kept sorted beside it (`entries == histogram(counts)`).

    Why: at 1,000 tainted pools a pod that fits nowhere is refused by a clause per pool's taint, and every pending
    workload's message counts the same thousand refusals but for its own few pools. The fleet's histogram is made
    once and each message's is this one `plus` what differs: a copy of the sorted entries with those few moved
    (bisect), not a thousand entries worded and sorted again per workload. `histogram(counts)` is the fallback and
    the reference (tests/test_simulate_property.py compares them).
    """

    counts: Mapping[str, int]
    entries: Sequence[str]

    @staticmethod
    def of(counts: Mapping[str, int]) -> Histogram:
        return Histogram(dict(counts), histogram(counts))

    def plus(self, changes: Mapping[str, int]) -> Histogram:
        """This histogram with each change's nodes added to its reason (taken away where negative); a reason counted
        down to 0 leaves it."""
        if not any(changes.values()):
            return self
        counts, entries = dict(self.counts), list(self.entries)
        for reason, change in changes.items():
            if not change:
                continue
            old = counts.pop(reason, 0)
            if old:
                del entries[bisect_left(entries, f"{old} {reason}")]
            new = old + change
            if new < 0:
                raise ValueError(f"{reason!r}: {old} nodes less {-change}")
            if new:
                counts[reason] = new
                insort(entries, f"{new} {reason}")
        return Histogram(counts, entries)


def fit_error(nodes: int, reasons: Mapping[str, int] | Histogram, post_filter: str = "") -> str:
    """FitError.Error(): `0/N nodes are available: <histogram>. <post-filter>`."""
    message = f"0/{nodes} nodes are available:"
    entries = reasons.entries if isinstance(reasons, Histogram) else histogram(reasons)
    if entries:
        message += f" {', '.join(entries)}."
    if post_filter:
        message += f" {post_filter}"
    return message


def post_filter(version: KubeVersion, preemption: str, *, claims: bool = False) -> str:
    """What the PostFilter plugins add after the filter histogram; '' where the version adds nothing.

    DynamicResources speaks first: `no new claims to deallocate` for a pod without claims, `still not schedulable`
    for one whose claims are not allocated (nothing to deallocate either).
    """
    if not version.preemption_part:
        return ""
    # A pod with claims runs only where DRA is on, so the plugin speaks even before 1.34 (beta, opted in).
    parts = [STILL_NOT_SCHEDULABLE] if claims else [NO_CLAIMS] if version.dra_post_filter else []
    parts.append(f"preemption: {preemption}")
    return ", ".join(parts)


def preemption_fit_error(version: KubeVersion, nodes: int, reasons: Mapping[str, int]) -> str:
    inner = fit_error(nodes, reasons)
    return inner + "." if version.double_period else inner


# --- Volcano (v1.10+, job_info.go FitError and unschedule_info.go FitErrors) ------------------


def volcano_nodes_error(nodes: int, reasons: Mapping[str, int]) -> str:
    """FitErrors.Error(): note "unavailable", and N counts the nodes that failed, not all nodes."""
    if nodes == 0:
        return "all nodes are unavailable"
    return f"0/{nodes} nodes are unavailable: {', '.join(histogram(reasons))}."


def volcano_gang_message(
    unready: int,
    tasks: int,
    pending: int,
    min_available: int,
    schedulable: int,
    origin: tuple[str, str] | None,
) -> str:
    """The PodGroup's Unschedulable condition: `<unready>/<tasks> tasks in gang unschedulable: ...`."""
    status = histogram({"Pending": pending, "minAvailable": min_available})
    message = f"pod group is not ready, {', '.join(status)}"
    split = {name: n for name, n in (("Schedulable", schedulable), ("Unschedulable", pending - schedulable)) if n}
    if split:
        message += f"; Pending: {', '.join(histogram(split))}"
    if origin is not None:
        message += f". Origin reason is {origin[0]}: {origin[1]}"
    return f"{unready}/{tasks} tasks in gang unschedulable: {message}"


def volcano_waiting(namespace: str, pod: str, node: str) -> str:
    """A gang member that found a node but waits for the rest of its gang."""
    return f"Pod {namespace}/{pod} can possibly be assigned to {node}, once minAvailable is satisfied"


def volcano_too_few_tasks(valid: int, minimum: int) -> str:
    return f"Not enough valid tasks for gang-scheduling, valid: {valid}, min: {minimum}"

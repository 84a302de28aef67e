"""A whole review: the blueprint changes, capacity deltas, risk flags and manifest delta of one change."""

from __future__ import annotations

from dataclasses import dataclass

from gpustack.collector import paused
from gpustack.review.capacity import CapacityChange, capacity_deltas
from gpustack.review.changes import EntityChange, blueprint_changes
from gpustack.review.manifests import ObjectChange, manifest_changes
from gpustack.review.risk import Level, Risk, at_least
from gpustack.review.risks import assess_risks
from gpustack.review.snapshot import Snapshot


@dataclass(frozen=True)
class Review:
    before: Snapshot
    after: Snapshot
    changes: tuple[EntityChange, ...]
    capacity: CapacityChange
    risks: tuple[Risk, ...]
    objects: tuple[ObjectChange, ...]

    @property
    def changed(self) -> bool:
        """Whether the cluster or the blueprint's meaning differs; comments and key order do not count."""
        return bool(self.changes or self.objects or self.risks)

    def fails(self, threshold: Level | None) -> bool:
        """Exit 1 or not: any change without a threshold, else a risk at or above it."""
        return self.changed if threshold is None else at_least(self.risks, threshold)


@paused()  # see gpustack/collector.py
def review_change(before: Snapshot, after: Snapshot) -> Review:
    return Review(
        before=before,
        after=after,
        changes=blueprint_changes(before, after),
        capacity=capacity_deltas(before, after),
        risks=assess_risks(before, after),
        objects=manifest_changes(before.plan, after.plan),
    )

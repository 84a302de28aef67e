"""A node class: the nodes of one profile (pool, labels but the hostname, taints, allocatable), judged as one.

The shared type of the cluster state (`cluster.Cluster` groups nodes into classes) and of the class index
(`index.ClassIndex` finds the classes a pod shape could land on); both import it from here, so neither needs the
other's module for its types.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from gpustack.simulate.inventory import Node

Usage = tuple[int, ...]  # used units per resource of the class, in NodeClass.resources order
# (id(shape), class index, usage, most allocated) -> (the shape, its fit score): placement's memo, kept by the cluster
FitScores = dict[tuple[int, int, Usage, bool], tuple[object, int]]


@dataclass(frozen=True)
class NodeClass:
    index: int
    node: Node  # the first member: every member has the same profile
    members: tuple[int, ...]
    resources: tuple[str, ...]  # what the class's nodes advertise, sorted

    def position(self, resource: str) -> int | None:
        return self._positions.get(resource)

    @functools.cached_property
    def _positions(self) -> dict[str, int]:
        """Each resource's place in a Usage, found once per class: every filter and score asks for each resource of
        each pod (1.8 million times for 150,000 pods), and a tuple search per ask was a tenth of simulate. A
        cached_property writes the instance's __dict__, not a field: the class stays frozen."""
        return {resource: i for i, resource in enumerate(self.resources)}

"""A node class: the nodes of one profile (pool, labels but the hostname, taints, allocatable), judged as one.

The shared type of the cluster state (`cluster.Cluster` groups nodes into classes) and of the class index
(`index.ClassIndex` finds the classes a pod shape could land on); both import it from here, so neither needs the
other's module for its types.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpustack.simulate.inventory import Node

Usage = tuple[int, ...]  # used units per resource of the class, in NodeClass.resources order


@dataclass(frozen=True)
class NodeClass:
    index: int
    node: Node  # the first member: every member has the same profile
    members: tuple[int, ...]
    resources: tuple[str, ...]  # what the class's nodes advertise, sorted

    def position(self, resource: str) -> int | None:
        return self.resources.index(resource) if resource in self.resources else None

"""The simulated cluster's mutable state: what each node has left, and which pods sit where.

Nodes with the same profile (pool, labels but the hostname, taints, allocatable) form a class;
within a class, nodes with the same usage form a group. Filters and scores are the same for every
node of a group, so the scheduler judges groups, not nodes: 10,000 identical nodes cost one check.
Each group keeps a heap of its node indexes, so "the first node of the best group" is cheap; entries
of nodes that moved on are dropped lazily when they reach the top.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from gpustack.simulate.demand import Pod
from gpustack.simulate.index import ClassIndex
from gpustack.simulate.inventory import Node
from gpustack.simulate.node_class import FitScores, NodeClass, Usage
from gpustack.simulate.pods import PODS


@dataclass
class _Group:
    count: int = 0
    heap: list[int] = field(default_factory=list)


class Cluster:
    def __init__(self, nodes: Sequence[Node]) -> None:
        self.nodes = tuple(nodes)
        by_profile: dict[object, list[int]] = {}
        for index, node in enumerate(self.nodes):
            by_profile.setdefault(node.profile, []).append(index)
        self.classes: tuple[NodeClass, ...] = tuple(
            NodeClass(i, self.nodes[members[0]], tuple(members), tuple(sorted(self.nodes[members[0]].allocatable)))
            for i, members in enumerate(by_profile.values())
        )
        self.index = ClassIndex(self.classes)
        self.class_of = [0] * len(self.nodes)
        for node_class in self.classes:
            for member in node_class.members:
                self.class_of[member] = node_class.index
        self.used: list[dict[str, int]] = [{} for _ in self.nodes]
        self.pods: list[list[Pod]] = [[] for _ in self.nodes]
        self._usage: list[Usage] = [(0,) * len(self.classes[c].resources) for c in self.class_of]
        self._groups: list[dict[Usage, _Group]] = []
        for node_class in self.classes:
            empty = (0,) * len(node_class.resources)
            self._groups.append({empty: _Group(len(node_class.members), list(node_class.members))})
        self.lowest_priority: int | None = None  # of any bound pod: preemption needs strictly lower ones
        self.generation = 0  # counts binds and unbinds: equal generations, equal state
        self.fit_scores: FitScores = {}  # placement's memo of scores, which depend on no state but a group's usage
        self.claim_nodes: dict[str, int] = {}  # shared ResourceClaim -> the node its first holder was allocated on

    @cached_property
    def pool_classes(self) -> dict[str | None, tuple[int, ...]]:
        """Each pool's classes, in class order (hints read a pending pod's refusals in its own pool)."""
        found: dict[str | None, list[int]] = {}
        for node_class in self.classes:
            found.setdefault(node_class.node.pool, []).append(node_class.index)
        return {pool: tuple(indexes) for pool, indexes in found.items()}

    def groups(self, class_index: int) -> Iterator[tuple[Usage, int, int]]:
        """(usage, node count, first node index) of every non-empty group of the class."""
        for usage, group in self._groups[class_index].items():
            heap = group.heap
            while self._usage[heap[0]] != usage:  # a node that has since moved to another group
                heapq.heappop(heap)
            yield usage, group.count, heap[0]

    def members(self, class_index: int, usage: Usage) -> Iterator[int]:
        """The nodes of one group, in index order (the slow path: preemption and per-node selectors)."""
        return (i for i in self.classes[class_index].members if self._usage[i] == usage)

    def usage_of(self, node_index: int) -> Usage:
        return self._usage[node_index]

    def bind(self, pod: Pod, node_index: int) -> None:
        self._change(node_index, pod, 1)
        self.pods[node_index].append(pod)
        if self.lowest_priority is None or pod.priority < self.lowest_priority:
            self.lowest_priority = pod.priority

    def first(self, class_index: int, usage: Usage) -> int | None:
        """The lowest node index of one group, or None when no node of the class has that usage."""
        group = self._groups[class_index].get(usage)
        if group is None:
            return None
        heap = group.heap
        while self._usage[heap[0]] != usage:  # a node that has since moved to another group
            heapq.heappop(heap)
        return heap[0]

    def bind_run(
        self, pods: Sequence[Pod], class_index: int, usage: Usage, below: int | None = None, start: int = 0
    ) -> list[int]:
        """Bind `pods[start:]`, of one shape, one to a node, to the nodes of one group in index order: the first
        pod to the group's first node, each next one while the group has nodes left and (where `below` is set) the
        next node's index is below `below`. The nodes taken, in order. (`start`, not a slice: a run of 560 replicas
        judged pod by pod copied the rest of the list 560 times.)

        What `bind` does pod by pod (the same used amounts, pods, usages and groups), with the group bookkeeping done
        once: the nodes of a group have one usage and take the same amounts, so they all move to one group. A shape
        that leaves the usage as it is (nothing the class counts, not even a pod slot) takes one node, as `bind` would
        leave the group's first node first."""
        groups = self._groups[class_index]
        group = groups[usage]
        heap, current = group.heap, self._usage
        amounts = (*pods[start].shape.requests, (PODS, 1))
        # The nodes of a group have the same used amount of each resource their class counts, so where the class
        # counts every resource the pods ask for, each node ends with the amounts the first one ends with: one dict
        # update per node (`counted`). A request the nodes do not advertise (a running pod's, say) is added node by
        # node, as `bind` adds it.
        node_class = self.classes[class_index]
        all_counted = all(node_class.position(resource) is not None for resource, _ in amounts)
        counted: dict[str, int] | None = None
        taken: list[int] = []
        after: Usage | None = None
        wanted = len(pods) - start
        while heap and len(taken) < wanted and after != usage:
            node_index = heap[0]
            if current[node_index] != usage:  # a node that has since moved to another group
                heapq.heappop(heap)
                continue
            if taken and below is not None and node_index >= below:
                break
            heapq.heappop(heap)
            used, node = self.used[node_index], self.nodes[node_index]
            if node.served:  # a DRA-backed extended resource takes its class's devices
                for requested, value in amounts:
                    resource = node.serving(requested)
                    used[resource] = used.get(resource, 0) + value
            elif counted is not None:
                used.update(counted)
            else:
                for resource, value in amounts:
                    used[resource] = used.get(resource, 0) + value
                if all_counted:
                    counted = {resource: used[resource] for resource, _ in amounts}
            if after is None:
                after = tuple([used.get(r, 0) for r in node_class.resources])
            current[node_index] = after  # now, so a second entry of this node in the heap reads as moved
            self.pods[node_index].append(pods[start + len(taken)])
            taken.append(node_index)
        if after is None:
            return taken
        priority = min(pods[i].priority for i in range(start, start + len(taken)))
        group.count -= len(taken)
        if group.count == 0:
            del groups[usage]
        new = groups.get(after)
        if new is None:
            new = groups[after] = _Group()
        new.count += len(taken)
        for node_index in taken:
            heapq.heappush(new.heap, node_index)
        self.generation += len(taken)
        if self.lowest_priority is None or priority < self.lowest_priority:
            self.lowest_priority = priority
        return taken

    def unbind(self, pod: Pod, node_index: int) -> None:
        self._change(node_index, pod, -1)
        self.pods[node_index].remove(pod)

    def _change(self, node_index: int, pod: Pod, sign: int) -> None:
        self.generation += 1
        used = self.used[node_index]
        node = self.nodes[node_index]
        for requested, value in (*pod.shape.requests, (PODS, 1)):
            # A DRA-backed extended resource takes its class's devices.
            resource = node.serving(requested) if node.served else requested
            used[resource] = used.get(resource, 0) + sign * value
        node_class = self.classes[self.class_of[node_index]]
        before = self._usage[node_index]
        after = tuple([used.get(r, 0) for r in node_class.resources])
        groups = self._groups[node_class.index]
        old = groups[before]
        old.count -= 1
        if old.count == 0:
            del groups[before]
        new = groups.get(after)
        if new is None:  # not setdefault: a _Group made for every bind was a fifth of binding's cost
            new = groups[after] = _Group()
        new.count += 1
        self._usage[node_index] = after
        heapq.heappush(new.heap, node_index)

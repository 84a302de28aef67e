"""Pods onto identical nodes, each pod whole on one node: as the scheduler spreads them, and the least possible.

Two answers to one question, how much of a unit a node must hold so that the pods asking it fit on n nodes:

- `spread_capacity`: the pods placed largest first, each onto the node with most room, as kube-scheduler's default
  least-allocated scoring (and `gpustack simulate`) spreads them. What recommend sizes pools by: a placement the
  scheduler finds by itself.
- `least_capacity`: the least any placement needs (bin packing, exact: an integer program over node patterns,
  OR-Tools CP-SAT on one worker with a fixed seed). What lower bounds and proofs use. Where the pods' sizes divide
  each other (1, 2, 4, 8 GPUs) the two agree; a tighter packing of, say, 3- and 2-GPU pods may need fewer nodes
  than the spread, which the scheduler placing pods one at a time would not find.

`whole_nodes` is the whole-GPU candidate of a `sharing.strategy: auto` pool: the fewest nodes of that spread.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from ortools.sat.python import cp_model

SECONDS = 5.0  # CP-SAT's limit; past it the least is not proven
SEED = 1


@dataclass(frozen=True)
class Packing:
    nodes: int  # the fewest nodes the spread fits
    bound: int  # nodes no placement can go below
    optimal: bool  # `nodes` is proven the least any placement needs


def whole_nodes(pods: Sequence[int], per_node: int, at_least: int) -> Packing:
    """The fewest nodes of `per_node` GPUs that hold every pod (GPUs each) as spread, with at least `at_least` GPUs
    in all (a quota the pool's capacity must reach)."""
    sizes = tuple(sorted(pods, reverse=True))
    assert not sizes or sizes[0] <= per_node, "a pod larger than a node fits no node count"
    quota_nodes = -(-at_least // per_node)
    start = max(1, quota_nodes, -(-sum(sizes) // per_node))
    nodes = start
    while sizes and spread_capacity(sizes, nodes) > per_node:
        nodes += 1
    if nodes == start:
        return Packing(nodes, start, True)
    least, proven = _patterns(sizes, per_node)
    bound = max(least, quota_nodes) if proven else start
    return Packing(nodes, bound, proven and nodes == bound)


def spread_capacity(pods: Sequence[int], nodes: int) -> int:
    """The least capacity at which the pods (largest first), each onto the node with most room, all fit."""
    if not pods:
        return 0
    capacity = _even(pods, nodes)
    if pods[0] == pods[-1]:  # equal pods: round robin, exact
        return pods[0] * -(-len(pods) // nodes)
    while True:
        room = [-capacity] * nodes
        heapq.heapify(room)
        for size in pods:
            most = -heapq.heappop(room)
            if most < size:
                break
            heapq.heappush(room, -(most - size))
        else:
            return capacity
        capacity += 1


def least_capacity(pods: Sequence[int], nodes: int) -> int:
    """A per-node capacity no placement of the pods (largest first) on `nodes` nodes can go below: the least one
    where the solver proves it, else the largest pod or the pods' total spread evenly."""
    spread = spread_capacity(pods, nodes)
    even = _even(pods, nodes)
    for capacity in range(even, spread):
        least, proven = _patterns(tuple(pods), capacity)
        if not proven:
            return even
        if least <= nodes:
            return capacity
    return spread


def _even(pods: Sequence[int], nodes: int) -> int:
    return max(pods[0], -(-sum(pods) // nodes)) if pods else 0


@cache
def _patterns(sizes: tuple[int, ...], per_node: int) -> tuple[int, bool]:
    """The fewest nodes any placement needs, and whether it is proven: x_p nodes filled as pattern p (pods per
    size), sum_p x_p * a_p(s) >= pods of size s. Patterns are the maximal fillings of one node, so the program is
    small for any real node."""
    counts = sorted(Counter(sizes).items(), reverse=True)
    patterns = [p for p in _fillings([s for s, _ in counts], per_node) if any(p)]
    model = cp_model.CpModel()
    x = [model.new_int_var(0, len(sizes), f"x{i}") for i in range(len(patterns))]
    for column, (_, count) in enumerate(counts):
        model.add(sum(x[i] * p[column] for i, p in enumerate(patterns)) >= count)
    model.minimize(sum(x))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = SEED
    solver.parameters.max_time_in_seconds = SECONDS
    status = solver.solve(model)
    if status != cp_model.OPTIMAL:
        return len(sizes), False
    return round(solver.objective_value), True


def _fillings(sizes: Sequence[int], room: int) -> list[tuple[int, ...]]:
    """Every count of pods per size (largest first) that fits `room` and leaves no room for one more pod."""
    if not sizes:
        return [()]
    head, rest = sizes[0], sizes[1:]
    found = []
    for count in range(room // head, -1, -1):
        for tail in _fillings(rest, room - count * head):
            left = room - count * head - sum(n * s for n, s in zip(tail, rest, strict=True))
            if left < min(sizes):
                found.append((count, *tail))
    return found or [tuple(0 for _ in sizes)]

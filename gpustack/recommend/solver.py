"""The fewest nodes, and how to cut each GPU of them, that hold an auto pool's demand: an integer program.

Every node of a pool gets the same MIG config (one mig-parted entry per pool), so a recommendation is one node's
cut, repeated: for each of the node's GPUs a valid layout from the catalog (`gpustack.mig.valid_layouts`) or, under
the mixed strategy, a GPU left whole. For n nodes each node must hold its share of every unit: the pods packed
over n nodes (a pod cannot span nodes) and every tenant's quota. Whether a cut exists is a small integer program
(y_L = GPUs of the node cut as layout L, sum y_L = GPUs per node, sum y_L * instances_L(u) >= share(u)), solved by
OR-Tools CP-SAT on one worker with a fixed seed, so the same blueprint gives the same answer.

The smallest n is searched upward from a proven lower bound: the smallest n whose linear relaxation is feasible
(GLOP) with the least per-node need any placement of the pods allows. Every smaller n the search passes is proven
infeasible by CP-SAT, so the first feasible n is the optimum. The pods are sized as the scheduler spreads them over
the nodes (`packing`); where their sizes do not divide each other a tighter placement may need less, so a count
counts as proven infeasible only if it is so under that least need too.
Among cuts of that n: the least stranded memory (memory slices no instance holds), then the fewest distinct
layouts. The baseline is first-fit-decreasing: each node's share of instances, largest first, into the first GPU
whose layout stays valid.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ortools.linear_solver import pywraplp  # type: ignore[import-untyped]
from ortools.sat.python import cp_model

from gpustack.catalog import MigGeometry
from gpustack.mig import check_layout, valid_layouts
from gpustack.recommend.demand import WHOLE, PoolDemand
from gpustack.recommend.packing import least_capacity, spread_capacity

SECONDS_PER_SOLVE = 5.0  # CP-SAT's limit per node count; past it the answer says it is not proven
SEED = 1


@dataclass(frozen=True)
class Cut:
    """One node's GPUs: (GPUs, layout) pairs; a layout of {WHOLE: 1} leaves the GPUs whole."""

    groups: tuple[tuple[int, tuple[tuple[str, int], ...]], ...]

    def offered(self) -> dict[str, int]:
        total: dict[str, int] = {}
        for gpus, layout in self.groups:
            for unit, count in layout:
                total[unit] = total.get(unit, 0) + gpus * count
        return total


@dataclass(frozen=True)
class Solution:
    nodes: int
    cut: Cut
    share: tuple[tuple[str, int], ...]  # per node: instances (whole GPUs) each unit needs
    stranded_slices: int  # memory slices per node that no instance holds
    proven_nodes: bool  # every smaller node count was proven infeasible (or is below the bound)
    proven_cut: bool  # CP-SAT proved the stranded memory and layout count optimal for this node count
    tighter: bool = False  # a smaller count holds the pods only placed tighter than the scheduler's spread


@dataclass(frozen=True)
class Bound:
    nodes: int  # the smallest node count whose linear relaxation is feasible
    relaxed_gpus: float  # the pool-wide linear relaxation (GPUs, fractional): how the bound reads in GPUs
    memory_gpus: int  # total memory slices / slices per GPU, rounded up
    compute_gpus: int  # the same for compute slices


@dataclass(frozen=True)
class Search:
    bound: Bound
    solution: Solution | None  # None: nothing fits within the pool's nodes
    baseline_nodes: int | None  # first-fit-decreasing; None: it fits nothing within the pool's nodes
    columns: int  # layouts the program chose among


Column = tuple[tuple[str, int], ...]  # unit -> instances on one GPU, largest first


def solve(demand: PoolDemand, limit: int | None = None) -> Search:
    """The optimal cut within `limit` nodes (the pool's own by default)."""
    most = demand.max_nodes if limit is None else limit
    columns = _columns(demand)
    bound = _bound(demand, columns, max(most, 1))
    solution = _search(demand, columns, bound.nodes, most)
    baseline = _baseline(demand, bound.nodes, most)
    return Search(bound, solution, baseline, len(columns))


def share(demand: PoolDemand, nodes: int, *, lower: bool = False) -> dict[str, int]:
    """Per node, what each unit needs for `nodes` nodes: instances (or whole GPUs).

    The pods as the scheduler spreads them (`gpustack.recommend.packing.spread_capacity`), a placement it finds by
    itself; `lower`: the least any placement needs, for bounds and proofs.
    """
    result = {}
    for need in demand.needs:
        pods = need.pods
        packed = least_capacity(pods, nodes) if lower else spread_capacity(pods, nodes)
        units = max(packed, -(-need.quota // nodes), 1 if need.named or need.pods else 0)
        per = 1 if need.unit == WHOLE else demand.shared_by
        result[need.unit] = -(-units // per)
    return result


def exact_share(demand: PoolDemand, nodes: int) -> bool:
    """Whether the spread's need per node is also the least any placement needs (so infeasible means infeasible)."""
    return share(demand, nodes) == share(demand, nodes, lower=True)


def _columns(demand: PoolDemand) -> tuple[Column, ...]:
    """The valid layouts that use only profiles the pool needs (no resource nobody asked for), WHOLE last."""
    wanted = {need.unit for need in demand.needs if need.unit != WHOLE}
    single = not demand.whole_allowed
    columns: list[Column] = [
        tuple(layout.items())
        for layout in valid_layouts(demand.geometry)
        if set(layout) <= wanted and (not single or len(layout) == 1)
    ]
    if demand.whole_allowed and any(need.unit == WHOLE for need in demand.needs):
        columns.append(((WHOLE, 1),))
    return tuple(sorted(columns, key=lambda c: (c == ((WHOLE, 1),), c)))


def _slices(geometry: MigGeometry, column: Column) -> int:
    """Memory slices the column leaves uncut (none for a whole GPU: all of it is one unit)."""
    if column == ((WHOLE, 1),):
        return 0
    used = 0
    for unit, count in column:
        profile = geometry.profile(unit)
        assert profile is not None
        used += profile.memory_slices * count
    return geometry.memory_slices - used


def _bound(demand: PoolDemand, columns: tuple[Column, ...], most: int) -> Bound:
    geometry = demand.geometry
    g = demand.gpus_per_node
    pool_wide = share(demand, 1, lower=True)  # all of it on one "node": the pool's total need
    memory = compute = 0
    for unit, count in pool_wide.items():
        profile = geometry.profile(unit)
        memory += count * (profile.memory_slices if profile else geometry.memory_slices)
        compute += count * (profile.compute if profile else geometry.compute_slices)
    relaxed = _relaxation(pool_wide, columns, None) or 0.0
    floor = max(1, -(-max(memory // geometry.memory_slices, int(relaxed)) // g))
    nodes = _first(floor, max(most, floor), lambda n: _relaxation(share(demand, n, lower=True), columns, g) is not None)
    return Bound(
        nodes=nodes if nodes is not None else max(most, floor) + 1,
        relaxed_gpus=round(relaxed, 3),
        memory_gpus=-(-memory // geometry.memory_slices),
        compute_gpus=-(-compute // geometry.compute_slices),
    )


def _relaxation(needed: Mapping[str, int], columns: tuple[Column, ...], gpus: int | None) -> float | None:
    """The linear relaxation: the fewest (fractional) GPUs covering `needed`, or None when more than `gpus`."""
    if not columns:
        return None if any(needed.values()) else 0.0
    solver = pywraplp.Solver.CreateSolver("GLOP")
    y = [solver.NumVar(0, solver.infinity(), f"y{i}") for i in range(len(columns))]
    for unit, count in needed.items():
        terms = [y[i] * n for i, column in enumerate(columns) for u, n in column if u == unit]
        if not terms:
            if count:
                return None
            continue
        solver.Add(sum(terms) >= count)
    total = sum(y)
    if gpus is not None:
        solver.Add(total <= gpus)
    solver.Minimize(total)
    if solver.Solve() != pywraplp.Solver.OPTIMAL:
        return None
    return float(solver.Objective().Value())


def _first(low: int, high: int, holds: Callable[[int], bool]) -> int | None:
    """The smallest n in [low, high] for which a monotone predicate holds (None: none)."""
    if low > high or not holds(high):
        return None
    while low < high:
        middle = (low + high) // 2
        if holds(middle):
            high = middle
        else:
            low = middle + 1
    return low


def _search(demand: PoolDemand, columns: tuple[Column, ...], start: int, most: int) -> Solution | None:
    """Upward from the bound; after a few misses, halving, so a loose bound costs log steps, not a scan."""
    below: list[bool | None] = []  # for each count passed, _too_small's answer
    n = start
    while n <= most:
        infeasible, cut, stranded, optimal = _node_cut(demand, columns, n)
        if cut is not None:
            return _solution(demand, n, cut, stranded, optimal, below)
        below.append(_too_small(demand, columns, n) if infeasible else None)
        if len(below) == 4 and n < most:
            # Feasibility only grows with n: find the smallest feasible n left by bisection, then solve it.
            return _bisect(demand, columns, n + 1, most, below)
        n += 1
    return None


def _bisect(
    demand: PoolDemand, columns: tuple[Column, ...], low: int, most: int, below: list[bool | None]
) -> Solution | None:
    passed: dict[int, bool | None] = {}  # counts found too few, and whether that is proven (see _too_small)

    def fits(k: int) -> bool:
        infeasible, cut, _, _ = _node_cut(demand, columns, k, feasibility=True)
        if cut is None:
            passed[k] = _too_small(demand, columns, k) if infeasible else None
        return cut is not None

    found = _first(low, most, fits)
    if found is None:
        return None
    _, cut, stranded, optimal = _node_cut(demand, columns, found)
    if cut is None:
        return None
    return _solution(demand, found, cut, stranded, optimal, [*below, *(v for k, v in passed.items() if k < found)])


def _solution(
    demand: PoolDemand, nodes: int, cut: Cut, stranded: int, optimal: bool, below: list[bool | None]
) -> Solution:
    """The answer at `nodes`; its count is proven where every smaller count passed was proven too small."""
    proven = all(answer is True for answer in below)
    tighter = any(answer is False for answer in below)
    return Solution(nodes, cut, tuple(share(demand, nodes).items()), stranded, proven, optimal, tighter)


def _too_small(demand: PoolDemand, columns: tuple[Column, ...], nodes: int) -> bool | None:
    """For a count the spread does not fit: True where no placement fits it either (the least need is infeasible
    too, or is the spread's), False where a tighter placement would, None where the solver ran out of time."""
    if exact_share(demand, nodes):
        return True
    infeasible, cut, _, _ = _node_cut(demand, columns, nodes, feasibility=True, lower=True)
    return True if infeasible else False if cut is not None else None


def _node_cut(
    demand: PoolDemand, columns: tuple[Column, ...], nodes: int, *, feasibility: bool = False, lower: bool = False
) -> tuple[bool, Cut | None, int, bool]:
    """CP-SAT: one node's cut for `nodes` nodes, least stranded memory then fewest layouts.

    (proven infeasible, the cut or None, its stranded memory slices, whether the cut is proven optimal)
    """
    g = demand.gpus_per_node
    needed = share(demand, nodes, lower=lower)
    model = cp_model.CpModel()
    y = [model.new_int_var(0, g, f"y{i}") for i in range(len(columns))]
    used = [model.new_bool_var(f"used{i}") for i in range(len(columns))]
    model.add(sum(y) == g)
    for i in range(len(columns)):
        model.add(y[i] <= g * used[i])
    for unit, count in needed.items():
        terms = [y[i] * n for i, column in enumerate(columns) for u, n in column if u == unit]
        if count and not terms:
            return True, None, 0, True
        if terms:
            model.add(sum(terms) >= count)
    stranded = sum(y[i] * _slices(demand.geometry, c) for i, c in enumerate(columns))
    if not feasibility:
        # Lexicographic in one objective: a stranded slice outweighs every possible count of distinct layouts.
        model.minimize(stranded * (len(columns) + 1) + sum(used))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = SEED
    solver.parameters.max_time_in_seconds = SECONDS_PER_SOLVE
    status = solver.solve(model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return status == cp_model.INFEASIBLE, None, 0, True
    chosen = [(int(solver.value(y[i])), columns[i]) for i in range(len(columns)) if solver.value(y[i])]
    # Layouts in a stable order (by their profiles' names and counts) on the lowest GPU indexes, whole GPUs last.
    chosen.sort(key=lambda item: (item[1] == ((WHOLE, 1),), item[1]))
    slices = sum(gpus * _slices(demand.geometry, column) for gpus, column in chosen)
    return False, Cut(tuple(chosen)), slices, status == cp_model.OPTIMAL


def _baseline(demand: PoolDemand, start: int, most: int) -> int | None:
    """First-fit-decreasing: the fewest nodes for which a node's share, largest instance first, fits GPU by GPU."""
    for nodes in range(max(start, 1), most + 1):
        if _first_fit(demand, share(demand, nodes)):
            return nodes
    return None


def _first_fit(demand: PoolDemand, needed: Mapping[str, int]) -> bool:
    geometry = demand.geometry
    gpus: list[dict[str, int]] = []
    whole = needed.get(WHOLE, 0)
    if whole > demand.gpus_per_node:
        return False
    instances = []
    for unit, count in needed.items():
        profile = geometry.profile(unit)
        if profile is not None:
            instances += [profile] * count
    instances.sort(key=lambda p: (-p.memory_slices, -p.compute, p.name))
    free = demand.gpus_per_node - whole
    for profile in instances:
        for layout in gpus:
            trial = {**layout, profile.name: layout.get(profile.name, 0) + 1}
            if check_layout(geometry, trial).valid:
                layout[profile.name] = trial[profile.name]
                break
        else:
            if len(gpus) == free:
                return False
            gpus.append({profile.name: 1})
    return True

"""One pool's MIG layouts as the solver chose them, and in words why none fit where none do.

A `Recommendation` is the answer for a `layout: auto` pool, and the MIG candidate of a `sharing.strategy: auto`
pool: one node's cut (the same on every node), the nodes, the proven bound and the first-fit-decreasing baseline.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from gpustack.diagnostic import JsonPath
from gpustack.recommend.demand import WHOLE, Need, PoolDemand
from gpustack.recommend.solver import Cut, Search, share, solve


@dataclass(frozen=True)
class Recommendation:
    demand: PoolDemand
    search: Search

    @property
    def cut(self) -> Cut:
        assert self.search.solution is not None
        return self.search.solution.cut

    @property
    def nodes(self) -> int:
        assert self.search.solution is not None
        return self.search.solution.nodes

    @property
    def gpus(self) -> int:
        return self.nodes * self.demand.gpus_per_node

    @property
    def bound_gpus(self) -> int:
        return self.search.bound.nodes * self.demand.gpus_per_node

    @property
    def optimal(self) -> bool:
        solution = self.search.solution
        return solution is not None and solution.proven_nodes and solution.proven_cut

    @property
    def baseline_gpus(self) -> int | None:
        nodes = self.search.baseline_nodes
        return None if nodes is None else nodes * self.demand.gpus_per_node

    @property
    def auto_path(self) -> JsonPath:
        """The `auto` --write replaces: sharing.mig.layout."""
        return self.demand.layout_path

    def groups(self) -> tuple[tuple[tuple[int, ...], dict[str, int] | None], ...]:
        """The node's GPU indexes per layout (None: left whole), lowest indexes to the first layout."""
        result = []
        index = 0
        for gpus, column in self.cut.groups:
            devices = tuple(range(index, index + gpus))
            index += gpus
            result.append((devices, None if column == ((WHOLE, 1),) else dict(column)))
        return tuple(result)


def has_slices(demand: PoolDemand) -> bool:
    """Whether anything asks for a MIG instance: MIG with every GPU whole is no MIG at all (GS303 would refuse it)."""
    return any(need.unit != WHOLE for need in demand.needs)


def solved(demand: PoolDemand) -> Recommendation | None:
    """The optimal layouts within the pool's nodes, or None where nothing fits them."""
    search = solve(demand)
    return Recommendation(demand, search) if search.solution is not None else None


def no_fit_words(demand: PoolDemand) -> str:
    """What does not fit the pool's nodes under any layouts, and how many nodes it would take."""
    culprits = []
    for need in demand.needs:
        alone = dataclasses.replace(demand, needs=(need,))
        if solve(alone).solution is None:
            culprits.append(need_words(need, demand))
    # How many nodes it would take: each GPU holds at least one instance, so the total need bounds the search.
    ceiling = max(demand.max_nodes + 1, sum(share(demand, 1).values()))
    wider = solve(demand, ceiling).solution
    takes = f"; it would take {wider.nodes} node(s)" if wider is not None else ""
    what = (
        "; ".join(culprits) if culprits else "together: " + "; ".join(need_words(need, demand) for need in demand.needs)
    )
    return what + takes


def need_words(need: Need, demand: PoolDemand) -> str:
    unit = "whole GPU" if need.unit == WHOLE else need.unit
    parts = []
    if need.pods:
        parts.append(f"{len(need.pods)} pod(s) of {', '.join(need.workloads)} ask {need.units}")
    if need.quota:
        parts.append(f"a quota of {need.quota}")
    shared = f" (each instance shared by {demand.shared_by})" if demand.shared_by > 1 and need.unit != WHOLE else ""
    return f"{unit}{shared}: " + (", ".join(parts) or "named by a quota")

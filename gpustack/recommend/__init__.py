"""`gpustack recommend`: the MIG layouts that hold each `layout: auto` pool's workloads on the fewest GPUs.

`recommend(context)` reads validation's Context (demand), solves each pool (solver: OR-Tools, imported only
here), and returns one Recommendation per auto pool or a GS311 diagnostic where nothing fits the pool's nodes.
`report` words them; `edit` writes the chosen layouts into the blueprint's text in place of `auto`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from gpustack.codes import RECOMMEND_NO_FIT
from gpustack.context import Context
from gpustack.diagnostic import Diagnostic, JsonPath
from gpustack.recommend.demand import WHOLE, Need, PoolDemand, auto_pools
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

    def groups(self) -> tuple[tuple[tuple[int, ...], dict[str, int] | None], ...]:
        """The node's GPU indexes per layout (None: left whole), lowest indexes to the first layout."""
        result = []
        index = 0
        for gpus, column in self.cut.groups:
            devices = tuple(range(index, index + gpus))
            index += gpus
            result.append((devices, None if column == ((WHOLE, 1),) else dict(column)))
        return tuple(result)


def recommend(ctx: Context) -> tuple[tuple[Recommendation, ...], tuple[Diagnostic, ...]]:
    """A recommendation for every auto pool that fits within its nodes; GS311 for each that does not."""
    found: list[Recommendation] = []
    refused: list[Diagnostic] = []
    for demand in auto_pools(ctx):
        if not any(need.unit != WHOLE for need in demand.needs):
            refused.append(_nothing_to_cut(ctx, demand))
            continue
        search = solve(demand)
        if search.solution is not None:
            found.append(Recommendation(demand, search))
            continue
        refused.append(_no_fit(ctx, demand))
    return tuple(found), tuple(refused)


def _no_fit(ctx: Context, demand: PoolDemand) -> Diagnostic:
    pool = demand.pool
    g = demand.gpus_per_node
    per_node = f"{g} GPU{'s' if g > 1 else ''} per node"
    culprits = []
    for need in demand.needs:
        alone = dataclasses.replace(demand, needs=(need,))
        if solve(alone).solution is None:
            culprits.append(_need_words(need, demand))
    # How many nodes it would take: each GPU holds at least one instance, so the total need bounds the search.
    ceiling = max(demand.max_nodes + 1, sum(share(demand, 1).values()))
    wider = solve(demand, ceiling).solution
    takes = f"; it would take {wider.nodes} node(s)" if wider is not None else ""
    what = (
        "; ".join(culprits)
        if culprits
        else "together: " + "; ".join(_need_words(need, demand) for need in demand.needs)
    )
    return ctx.error(
        RECOMMEND_NO_FIT,
        _limit_path(demand),
        f"pool '{pool.name}' cannot hold its demand on {demand.max_nodes} node(s) of {per_node} "
        f"({demand.model_key}) under any MIG layouts: {what}{takes}",
        "raise maxNodes (or count, or list more nodes), give nodes more GPUs, or lower the replicas or quotas named",
    )


def _nothing_to_cut(ctx: Context, demand: PoolDemand) -> Diagnostic:
    """MIG with every GPU whole is no MIG at all (GS303 would refuse it): say so before choosing anything."""
    asked = "asks only for whole GPUs" if demand.needs else "asks for nothing"
    return ctx.error(
        RECOMMEND_NO_FIT,
        demand.layout_path,
        f"pool '{demand.pool.name}' has no MIG layout to choose: no workload or quota on it asks for a MIG instance "
        f"(its demand {asked})",
        "use sharing.strategy: none for whole GPUs, or place the workloads that want MIG slices on this pool",
    )


def _need_words(need: Need, demand: PoolDemand) -> str:
    unit = "whole GPU" if need.unit == WHOLE else need.unit
    parts = []
    if need.pods:
        parts.append(f"{len(need.pods)} pod(s) of {', '.join(need.workloads)} ask {need.units}")
    if need.quota:
        parts.append(f"a quota of {need.quota}")
    shared = f" (each instance shared by {demand.shared_by})" if demand.shared_by > 1 and need.unit != WHOLE else ""
    return f"{unit}{shared}: " + (", ".join(parts) or "named by a quota")


def _limit_path(demand: PoolDemand) -> JsonPath:
    pool = demand.pool
    if pool.selector is None:
        return (*pool.path, "nodes")
    return (*pool.path, "count" if pool.count is not None else "maxNodes")

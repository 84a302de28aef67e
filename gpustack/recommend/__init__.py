"""`gpustack recommend`: the MIG layouts, and for `sharing.strategy: auto` the sharing, on the fewest GPUs.

`recommend(context)` reads validation's Context, and for each pool in blueprint order that leaves something to it
returns a recommendation, or a GS311 diagnostic where nothing fits the pool's nodes:

- `layout: auto`: the layouts (`layouts.Recommendation`; demand, then the solver: OR-Tools, imported only here);
- `sharing.strategy: auto`: the sharing (`sharing.SharingRecommendation`): whole GPUs, MIG layouts or
  time-slicing, each a candidate sized on its own (`candidates`).

`report` words them; `edit` writes them into the blueprint's text in place of `auto`.
"""

from __future__ import annotations

from gpustack.codes import RECOMMEND_NO_FIT
from gpustack.context import Context
from gpustack.diagnostic import Diagnostic, JsonPath
from gpustack.model import NodePool, SharingStrategy
from gpustack.recommend.candidates import Candidate
from gpustack.recommend.demand import PoolDemand, auto_pools
from gpustack.recommend.layouts import Recommendation, has_slices, no_fit_words, solved
from gpustack.recommend.sharing import SharingRecommendation, choose

Chosen = Recommendation | SharingRecommendation

__all__ = ["Chosen", "Recommendation", "SharingRecommendation", "recommend"]


def recommend(ctx: Context) -> tuple[tuple[Chosen, ...], tuple[Diagnostic, ...]]:
    """A recommendation for every auto pool that fits within its nodes; GS311 for each that does not."""
    found: list[Chosen] = []
    refused: list[Diagnostic] = []
    layouts = {demand.pool.name: demand for demand in auto_pools(ctx)}
    for pool in ctx.blueprint.pools:
        model = ctx.models.get(pool.name)
        if pool.sharing.strategy is SharingStrategy.AUTO and model is not None and pool.gpu is not None:
            outcome = choose(ctx, pool, model)
            if isinstance(outcome, SharingRecommendation):
                found.append(outcome)
            else:
                refused.append(_no_sharing_fits(ctx, pool, model.key, outcome))
            continue
        demand = layouts.get(pool.name)
        if demand is None:
            continue
        if not has_slices(demand):
            refused.append(_nothing_to_cut(ctx, demand))
            continue
        chosen = solved(demand)
        if chosen is not None:
            found.append(chosen)
        else:
            refused.append(_no_fit(ctx, demand))
    return tuple(found), tuple(refused)


def _per_node(pool: NodePool, model_key: str) -> str:
    g = pool.gpus_per_node
    return f"{pool.node_count} node(s) of {g} GPU{'s' if g > 1 else ''} per node ({model_key})"


def _no_fit(ctx: Context, demand: PoolDemand) -> Diagnostic:
    return ctx.error(
        RECOMMEND_NO_FIT,
        _limit_path(demand.pool),
        f"pool '{demand.pool.name}' cannot hold its demand on {_per_node(demand.pool, demand.model_key)} under any "
        f"MIG layouts: {no_fit_words(demand)}",
        "raise maxNodes (or count, or list more nodes), give nodes more GPUs, or lower the replicas or quotas named",
    )


def _no_sharing_fits(ctx: Context, pool: NodePool, model_key: str, candidates: tuple[Candidate, ...]) -> Diagnostic:
    """No candidate fits: at the node limit where some candidate only lacks nodes, else at the strategy itself."""
    reasons = "; ".join(
        f"{c.choice.words}: "
        + (f"not a candidate ({c.refusal})" if c.refusal is not None else f"does not fit ({c.too_small})")
        for c in candidates
    )
    sized = any(c.refusal is None for c in candidates)
    return ctx.error(
        RECOMMEND_NO_FIT,
        _limit_path(pool) if sized else (*pool.sharing.path, "strategy"),
        f"pool '{pool.name}' cannot hold its demand on {_per_node(pool, model_key)} under any sharing: {reasons}",
        "raise maxNodes (or count, or list more nodes), give nodes more GPUs, or lower the replicas or quotas named"
        if sized
        else "choose the sharing yourself, or change what rules each candidate out (the quotas or workloads named)",
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


def _limit_path(pool: NodePool) -> JsonPath:
    if pool.selector is None:
        return (*pool.path, "nodes")
    return (*pool.path, "count" if pool.count is not None else "maxNodes")

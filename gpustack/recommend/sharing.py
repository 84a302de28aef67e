"""A `sharing.strategy: auto` pool's sharing: the candidate on the fewest GPUs, the strongest isolation on a tie.

Each candidate (`gpustack.recommend.candidates`) is sized on its own, to its proven optimum where it can be. The
pool gets the one with the fewest GPUs; on equal counts, whole GPUs before MIG before time-slicing: the same GPUs
bought with more isolation (a whole GPU shares nothing, a MIG instance shares no memory or compute, a time-sliced
GPU shares both) and fewer moving parts (no MIG manager, no replicated device-plugin config). Any answer is one of
the candidates, so the least of their lower bounds bounds them all.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpustack.catalog import GpuModel
from gpustack.context import Context
from gpustack.diagnostic import JsonPath
from gpustack.model import NodePool
from gpustack.recommend.candidates import (
    Candidate,
    Choice,
    mig_candidate,
    pool_facts,
    time_slicing_candidate,
    whole_candidate,
)

ORDER = (Choice.WHOLE, Choice.MIG, Choice.TIME_SLICING)  # isolation, strongest first


@dataclass(frozen=True)
class SharingRecommendation:
    pool: NodePool
    model_key: str
    candidates: tuple[Candidate, ...]  # in ORDER
    chosen: Candidate

    @property
    def auto_path(self) -> JsonPath:
        """The `auto` --write replaces: sharing.strategy."""
        return (*self.pool.sharing.path, "strategy")

    @property
    def gpus_per_node(self) -> int:
        return self.pool.gpus_per_node

    @property
    def max_nodes(self) -> int:
        return self.pool.node_count

    @property
    def nodes(self) -> int:
        assert self.chosen.nodes is not None
        return self.chosen.nodes

    @property
    def gpus(self) -> int:
        return self.chosen.gpus

    @property
    def bound_gpus(self) -> int:
        bounds = [c.bound_gpus for c in self.candidates if c.refusal is None and c.bound_gpus is not None]
        return min(bounds, default=self.gpus)

    @property
    def optimal(self) -> bool:
        """The chosen count is proven least under its sharing, and no other candidate's bound goes below it."""
        others = [c for c in self.candidates if c.refusal is None and c is not self.chosen]
        return self.chosen.optimal and all((c.bound_gpus or 0) >= self.gpus for c in others)

    @property
    def baseline_gpus(self) -> int | None:
        return self.chosen.baseline_gpus

    def lost(self, candidate: Candidate) -> str:
        """Why a candidate was not chosen, in words."""
        if candidate.refusal is not None:
            return f"not a candidate: {candidate.refusal}"
        if not candidate.fits:
            return f"does not fit the pool's nodes: {candidate.too_small}"
        more = candidate.gpus - self.gpus
        if more > 0:
            return f"{candidate.gpus} GPU(s), {more} more"
        return f"{candidate.gpus} GPU(s) too, but {self.chosen.choice.words} isolate better"


def choose(ctx: Context, pool: NodePool, model: GpuModel) -> tuple[Candidate, ...] | SharingRecommendation:
    """The pool's sharing; where no candidate fits, every candidate (each says why) for the refusal."""
    facts = pool_facts(ctx, pool, model)
    candidates = (whole_candidate(facts), mig_candidate(facts), time_slicing_candidate(facts))
    fitting = [c for c in candidates if c.fits]
    if not fitting:
        return candidates
    chosen = min(fitting, key=lambda c: (c.gpus, ORDER.index(c.choice)))
    return SharingRecommendation(pool, model.key, candidates, chosen)

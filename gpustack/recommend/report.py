"""Recommendations in words (text) and as data (`--output json`, kind Recommendation)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gpustack.mig import index_ranges, layout_text
from gpustack.recommend import Chosen, Recommendation, SharingRecommendation
from gpustack.recommend.candidates import Candidate, Choice
from gpustack.recommend.demand import WHOLE

MIG_BOUND = "linear relaxation of one node's cut (GLOP)"
SHARING_BOUND = "the least of the candidates' lower bounds"


def format_text(recommendations: Sequence[Chosen]) -> str:
    lines: list[str] = []
    for r in recommendations:
        lines.extend(_sharing_lines(r) if isinstance(r, SharingRecommendation) else _layout_lines(r))
        lines.append("")
    return "\n".join(lines)


def _layout_lines(r: Recommendation) -> list[str]:
    d = r.demand
    lines = [f"pool {d.pool.name}: {d.model_key}, {d.gpus_per_node} GPU(s) per node, at most {d.max_nodes} node(s)"]
    lines.extend(_groups_lines(r))
    lines.append(f"  nodes: {r.nodes}, GPUs: {r.gpus}{_resize(d.pool.count, r.nodes)}")
    lines.append(f"  lower bound: {r.bound_gpus} GPU(s) ({_bound_words(r)})")
    lines.append(f"  optimal: {_proof_words(r)}")
    lines.append(_baseline_line(r.baseline_gpus, r.gpus))
    lines.extend(_cut_lines(r))
    return lines


def _sharing_lines(r: SharingRecommendation) -> list[str]:
    chosen = r.chosen
    lines = [
        f"pool {r.pool.name}: {r.model_key}, {r.gpus_per_node} GPU(s) per node, at most {r.max_nodes} node(s), "
        "sharing: auto",
        f"  sharing: {sharing_words(chosen)}",
    ]
    if chosen.layouts is not None:
        lines.extend(_groups_lines(chosen.layouts))
    lines.append(f"  nodes: {r.nodes}, GPUs: {r.gpus}{_resize(r.pool.count, r.nodes)}")
    bounds = ", ".join(
        f"{c.choice.words} {c.bound_gpus}" for c in r.candidates if c.refusal is None and c.bound_gpus is not None
    )
    lines.append(f"  lower bound: {r.bound_gpus} GPU(s) ({SHARING_BOUND}: {bounds})")
    lines.append(f"  optimal: {_sharing_proof(r)}")
    lines.append(_baseline_line(r.baseline_gpus, r.gpus))
    if chosen.layouts is not None:
        lines.extend(_cut_lines(chosen.layouts))
    lines.append("  candidates:")
    for c in r.candidates:
        what = f"chosen, {_candidate_words(c)}" if c is chosen else r.lost(c)
        if c is not chosen and c.fits:
            what += f" ({_candidate_words(c)})"
        lines.append(f"    {c.choice.words}: {what}")
    return lines


def sharing_words(c: Candidate) -> str:
    """The chosen sharing as the blueprint will say it."""
    if c.choice is Choice.WHOLE:
        return "whole GPUs (strategy: none)"
    if c.choice is Choice.MIG:
        return "MIG (strategy: mig, mixed), the layouts below"
    return (
        f"time-slicing, {c.replicas} replicas per GPU (strategy: time-slicing; at most {c.most_replicas} keep the "
        "largest memory need within the GPU)"
    )


def _candidate_words(c: Candidate) -> str:
    proof = "optimal" if c.optimal else "not proven optimal"
    return (
        f"{c.gpus} GPU(s) on {c.nodes} node(s), lower bound {c.bound_gpus}, {proof}, first-fit-decreasing "
        f"{c.baseline_gpus if c.baseline_gpus is not None else '-'}"
    )


def _sharing_proof(r: SharingRecommendation) -> str:
    if r.optimal:
        return f"yes (proven least under {r.chosen.choice.words}, and no other candidate's lower bound is below it)"
    if not r.chosen.optimal:
        return f"not proven (the count under {r.chosen.choice.words} is not proven least)"
    return "not proven (another candidate's lower bound is below it, and its own count is not proven least)"


def _groups_lines(r: Recommendation) -> list[str]:
    return [
        f"  GPU {index_ranges(devices)} of each node: {'whole (MIG off)' if layout is None else layout_text(layout)}"
        for devices, layout in r.groups()
    ]


def _cut_lines(r: Recommendation) -> list[str]:
    solution = r.search.solution
    assert solution is not None
    lines = [f"  stranded memory: {_stranded_gib(r):g} GiB per node (memory no instance holds)"]
    offered = r.cut.offered()
    for unit, needed in solution.share:
        name = "whole GPU" if unit == WHOLE else unit
        lines.append(f"  {name}: {offered.get(unit, 0)} per node, {needed} needed per node")
    return lines


def _resize(count: int | None, nodes: int) -> str:
    return f" (count {count}; --write sets it to {nodes})" if count is not None and count != nodes else ""


def _baseline_line(baseline: int | None, gpus: int) -> str:
    if baseline is None:
        return "  first-fit-decreasing: no fit within the pool's nodes"
    return f"  first-fit-decreasing: {baseline} GPU(s) (saves {baseline - gpus})"


def _bound_words(r: Recommendation) -> str:
    b = r.search.bound
    return (
        f"linear relaxation of one node's cut over {r.search.columns} layout(s) ({b.nodes} node(s)); "
        f"pool-wide relaxation {b.relaxed_gpus:g} GPU(s), memory slices {b.memory_gpus}, "
        f"compute slices {b.compute_gpus}"
    )


def _proof_words(r: Recommendation) -> str:
    solution = r.search.solution
    assert solution is not None
    if r.optimal:
        how = (
            "the lower bound"
            if r.nodes == r.search.bound.nodes
            else "CP-SAT proved every smaller node count infeasible"
        )
        return f"yes ({how}; least stranded memory, then fewest layouts, proven for {r.nodes} node(s))"
    if solution.tighter:
        return (
            "no: pods placed tighter than the scheduler spreads them would fit fewer nodes (the lower bound); "
            "these are the fewest the spread fits"
        )
    if not solution.proven_nodes:
        return "not proven (a smaller node count ran out of solver time)"
    return "GPU count proven; the stranded-memory tie-break ran out of solver time"


def _stranded_gib(r: Recommendation) -> float:
    solution = r.search.solution
    assert solution is not None
    geometry = r.demand.geometry
    return round(solution.stranded_slices * geometry.memory_gib / geometry.memory_slices, 2)


def as_data(recommendations: Sequence[Chosen]) -> dict[str, Any]:
    pools = [_sharing_data(r) if isinstance(r, SharingRecommendation) else _layout_data(r) for r in recommendations]
    return {"pools": pools}


def _layout_data(r: Recommendation) -> dict[str, Any]:
    bound = r.search.bound
    return {
        "pool": r.demand.pool.name,
        "model": r.demand.model_key,
        "gpusPerNode": r.demand.gpus_per_node,
        "maxNodes": r.demand.max_nodes,
        "auto": "layout",
        "sharing": Choice.MIG.value,
        "nodes": r.nodes,
        "gpus": r.gpus,
        "lowerBound": {
            "gpus": r.bound_gpus,
            "nodes": bound.nodes,
            "method": MIG_BOUND,
            "relaxedGpus": bound.relaxed_gpus,
            "memorySliceGpus": bound.memory_gpus,
            "computeSliceGpus": bound.compute_gpus,
        },
        "optimal": r.optimal,
        "firstFitDecreasingGpus": r.baseline_gpus,
        **_cut_data(r),
    }


def _cut_data(r: Recommendation) -> dict[str, Any]:
    solution = r.search.solution
    assert solution is not None
    offered = r.cut.offered()
    return {
        "groups": [
            {"devices": list(devices), **({"whole": True} if layout is None else {"layout": layout})}
            for devices, layout in r.groups()
        ],
        "strandedGibPerNode": _stranded_gib(r),
        "distinctLayouts": len(r.cut.groups),
        "units": [
            {"unit": unit, "offeredPerNode": offered.get(unit, 0), "neededPerNode": needed}
            for unit, needed in solution.share
        ],
    }


def _sharing_data(r: SharingRecommendation) -> dict[str, Any]:
    chosen = r.chosen
    data: dict[str, Any] = {
        "pool": r.pool.name,
        "model": r.model_key,
        "gpusPerNode": r.gpus_per_node,
        "maxNodes": r.max_nodes,
        "auto": "sharing",
        "sharing": chosen.choice.value,
        "nodes": r.nodes,
        "gpus": r.gpus,
        "lowerBound": {"gpus": r.bound_gpus, "method": SHARING_BOUND},
        "optimal": r.optimal,
        "firstFitDecreasingGpus": r.baseline_gpus,
    }
    if chosen.replicas is not None:
        data["replicas"] = chosen.replicas
        data["mostReplicas"] = chosen.most_replicas
    if chosen.layouts is not None:
        data.update(_cut_data(chosen.layouts))
    data["candidates"] = [_candidate_data(r, c) for c in r.candidates]
    return data


def _candidate_data(r: SharingRecommendation, c: Candidate) -> dict[str, Any]:
    return {
        "sharing": c.choice.value,
        "candidate": c.refusal is None,
        "reason": c.refusal,
        "fits": c.fits,
        "nodes": c.nodes,
        "gpus": c.gpus if c.fits else None,
        "lowerBoundGpus": c.bound_gpus,
        "optimal": c.optimal if c.fits else None,
        "firstFitDecreasingGpus": c.baseline_gpus,
        "chosen": c is r.chosen,
        "lost": None if c is r.chosen else r.lost(c),
    }

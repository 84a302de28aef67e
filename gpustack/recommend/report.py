"""A recommendation in words (text) and as data (`--output json`, kind Recommendation)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gpustack.mig import index_ranges, layout_text
from gpustack.recommend import Recommendation
from gpustack.recommend.demand import WHOLE


def layout_yaml(recommendation: Recommendation) -> str:
    """What --write puts where `auto` stood: one flow-style layout, or flow-style groups when GPUs differ."""
    groups = recommendation.groups()
    if len(groups) == 1 and groups[0][1] is not None:
        return layout_text(groups[0][1])
    return "[" + ", ".join(_group_yaml(devices, layout) for devices, layout in groups) + "]"


def _group_yaml(devices: tuple[int, ...], layout: dict[str, int] | None) -> str:
    listed = ", ".join(map(str, devices))
    what = "whole: true" if layout is None else f"layout: {layout_text(layout)}"
    return f"{{devices: [{listed}], {what}}}"


def uses_groups(recommendation: Recommendation) -> bool:
    groups = recommendation.groups()
    return not (len(groups) == 1 and groups[0][1] is not None)


def provenance(recommendation: Recommendation) -> str:
    """The comment --write leaves above the layouts: where they came from, in one line."""
    r = recommendation
    proof = "optimal" if r.optimal else "not proven optimal"
    baseline = f"first-fit-decreasing: {r.baseline_gpus}" if r.baseline_gpus is not None else "first-fit-decreasing: -"
    return (
        f"chosen by gpustack recommend: {r.nodes} node(s), {r.gpus} GPU(s), lower bound {r.bound_gpus}, "
        f"{proof}; {baseline}"
    )


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
    if not solution.proven_nodes:
        return "not proven (a smaller node count ran out of solver time)"
    return "GPU count proven; the stranded-memory tie-break ran out of solver time"


def format_text(recommendations: Sequence[Recommendation]) -> str:
    lines: list[str] = []
    for r in recommendations:
        d = r.demand
        pool = d.pool
        g = d.gpus_per_node
        solution = r.search.solution
        assert solution is not None
        lines.append(f"pool {pool.name}: {d.model_key}, {g} GPU(s) per node, at most {d.max_nodes} node(s)")
        for devices, layout in r.groups():
            what = "whole (MIG off)" if layout is None else layout_text(layout)
            lines.append(f"  GPU {index_ranges(devices)} of each node: {what}")
        count = pool.count
        resize = f" (count {count}; --write sets it to {r.nodes})" if count is not None and count != r.nodes else ""
        lines.append(f"  nodes: {r.nodes}, GPUs: {r.gpus}{resize}")
        lines.append(f"  lower bound: {r.bound_gpus} GPU(s) ({_bound_words(r)})")
        lines.append(f"  optimal: {_proof_words(r)}")
        if r.baseline_gpus is None:
            lines.append("  first-fit-decreasing: no fit within the pool's nodes")
        else:
            lines.append(f"  first-fit-decreasing: {r.baseline_gpus} GPU(s) (saves {r.baseline_gpus - r.gpus})")
        lines.append(f"  stranded memory: {_stranded_gib(r):g} GiB per node (memory no instance holds)")
        offered = r.cut.offered()
        for unit, needed in solution.share:
            name = "whole GPU" if unit == WHOLE else unit
            lines.append(f"  {name}: {offered.get(unit, 0)} per node, {needed} needed per node")
        lines.append("")
    return "\n".join(lines)


def _stranded_gib(r: Recommendation) -> float:
    solution = r.search.solution
    assert solution is not None
    geometry = r.demand.geometry
    return round(solution.stranded_slices * geometry.memory_gib / geometry.memory_slices, 2)


def as_data(recommendations: Sequence[Recommendation]) -> dict[str, Any]:
    pools = []
    for r in recommendations:
        solution = r.search.solution
        assert solution is not None
        bound = r.search.bound
        offered = r.cut.offered()
        pools.append(
            {
                "pool": r.demand.pool.name,
                "model": r.demand.model_key,
                "gpusPerNode": r.demand.gpus_per_node,
                "maxNodes": r.demand.max_nodes,
                "nodes": r.nodes,
                "gpus": r.gpus,
                "groups": [
                    {"devices": list(devices), "whole": True}
                    if layout is None
                    else {"devices": list(devices), "layout": layout}
                    for devices, layout in r.groups()
                ],
                "lowerBound": {
                    "gpus": r.bound_gpus,
                    "nodes": bound.nodes,
                    "method": "linear relaxation of one node's cut (GLOP)",
                    "relaxedGpus": bound.relaxed_gpus,
                    "memorySliceGpus": bound.memory_gpus,
                    "computeSliceGpus": bound.compute_gpus,
                },
                "optimal": r.optimal,
                "firstFitDecreasingGpus": r.baseline_gpus,
                "strandedGibPerNode": _stranded_gib(r),
                "distinctLayouts": len(r.cut.groups),
                "units": [
                    {"unit": unit, "offeredPerNode": offered.get(unit, 0), "neededPerNode": needed}
                    for unit, needed in solution.share
                ],
            }
        )
    return {"pools": pools}

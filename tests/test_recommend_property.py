"""recommend's GPU count equals exhaustive search over the catalog's layouts, on small pools.

Exhaustive search knows nothing of the solver: every multiset of the node's GPU layouts drawn from all the
catalog's valid layouts (any profile, not just the asked ones), each giving the fewest identical nodes that hold
the demand (n * per-node instances >= instances asked, for every profile). The least GPUs over all of them is the
optimum the solver must match, and it must never report a bound above it.
"""

from __future__ import annotations

import itertools
from functools import cache

from hypothesis import given, settings
from hypothesis import strategies as st

from gpustack.catalog import MigGeometry, load_catalog
from gpustack.mig import valid_layouts
from gpustack.model import DevicePluginFlags as Flags
from gpustack.model import (
    GpuRef,
    MigGroup,
    MigSharing,
    MigStrategy,
    NodePool,
    Sharing,
    SharingStrategy,
)
from gpustack.recommend.demand import Need, PoolDemand
from gpustack.recommend.solver import solve

CATALOG = load_catalog()
MODELS = ("A100-SXM4-40GB", "A100-SXM4-80GB")


@cache
def geometry(model: str) -> MigGeometry:
    found = CATALOG.resolve(model)
    assert found is not None and found.mig is not None
    return found.mig


def exhaustive_gpus(model: str, gpus_per_node: int, asked: dict[str, int]) -> int | None:
    best: int | None = None
    layouts = valid_layouts(geometry(model))
    for node in itertools.combinations_with_replacement(layouts, gpus_per_node):
        offered: dict[str, int] = {}
        for layout in node:
            for profile, count in layout.items():
                offered[profile] = offered.get(profile, 0) + count
        if any(offered.get(profile, 0) == 0 for profile in asked):
            continue
        nodes = max(-(-count // offered[profile]) for profile, count in asked.items())
        if best is None or nodes * gpus_per_node < best:
            best = nodes * gpus_per_node
    return best


def demand(model: str, gpus_per_node: int, asked: dict[str, int]) -> PoolDemand:
    mig = MigSharing(MigStrategy.MIXED, (MigGroup(None, (), ("layout",)),), (), auto=True)
    pool = NodePool(
        name="pool",
        gpu=GpuRef(model, gpus_per_node, ()),
        nodes=tuple(f"n{i}" for i in range(64)),
        labels=(),
        taints=(),
        sharing=Sharing(SharingStrategy.MIG, mig=mig),
        topology=None,
        flags=Flags(),
        node_resources=None,
        description=None,
        path=(),
    )
    order = [p.name for p in geometry(model).profiles]
    needs = tuple(
        Need(profile, (1,) * count, 0, False, ("w",))
        for profile, count in sorted(asked.items(), key=lambda i: order.index(i[0]))
    )
    return PoolDemand(pool, model, geometry(model), gpus_per_node, 64, True, 1, needs, ("layout",))


PLAIN = {model: [p.name for p in geometry(model).profiles if "+" not in p.name] for model in MODELS}


@st.composite
def pools(draw: st.DrawFn) -> tuple[str, int, dict[str, int]]:
    model = draw(st.sampled_from(MODELS))
    gpus = draw(st.sampled_from((1, 2)))
    profiles = draw(st.lists(st.sampled_from(PLAIN[model]), min_size=1, max_size=3, unique=True))
    return model, gpus, {p: draw(st.integers(1, 9)) for p in profiles}


@settings(max_examples=40, deadline=None)
@given(pools())
def test_the_solver_needs_exactly_the_gpus_exhaustive_search_needs(pool: tuple[str, int, dict[str, int]]) -> None:
    model, gpus, asked = pool
    expected = exhaustive_gpus(model, gpus, asked)
    search = solve(demand(model, gpus, asked))
    if expected is None:
        assert search.solution is None
        return
    assert search.solution is not None
    assert search.solution.nodes * gpus == expected
    assert search.bound.nodes * gpus <= expected
    assert search.baseline_nodes is None or search.baseline_nodes >= search.solution.nodes
    assert search.solution.proven_nodes

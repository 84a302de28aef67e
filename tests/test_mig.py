"""MIG layouts: the rules of mig.md section 4, the placements they produce, and the suggestions offered."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpustack.catalog import MigGeometry, load_catalog
from gpustack.mig import (
    LayoutCheck,
    check_layout,
    nearest_valid_layouts,
    place,
    resource_name,
    similar_profile,
)

GEOMETRIES = load_catalog().geometries

# Layouts whose validity is not obvious (mig.md section 4), plus the families' balanced ones.
VALID = [
    ("A100-40GB", {"3g.20gb": 1, "1g.5gb": 4}),
    ("A100-80GB", {"1g.20gb": 2, "2g.20gb": 1, "1g.10gb": 2}),
    ("GH200-96GB", {"2g.24gb": 3, "1g.24gb": 1}),
    ("A100-80GB", {"3g.40gb": 2}),
    ("A100-80GB", {"4g.40gb": 1, "3g.40gb": 1}),
    ("A100-80GB", {"1g.20gb": 4}),
    ("A100-80GB", {"1g.10gb+me": 1, "1g.10gb": 6}),
    ("A100-80GB", {"3g.40gb": 2, "7g.80gb": 0}),
    ("A30-24GB", {"2g.12gb+me": 1, "1g.6gb": 2}),
    ("H100-94GB", {"1g.12gb": 2, "2g.24gb": 1, "3g.47gb": 1}),
    ("B200-180GB", {"1g.23gb": 2, "2g.45gb": 1, "3g.90gb": 1}),
    ("RTX-PRO-6000-Blackwell-96GB", {"2g.48gb": 1, "1g.24gb": 2}),
    ("RTX-PRO-6000-Blackwell-96GB", {"1g.24gb+me.all": 1, "1g.24gb-me": 3}),
    ("RTX-PRO-6000-Blackwell-96GB", {"4g.96gb+gfx": 1}),
]

# Invalid layouts and a phrase the reasons must contain.
INVALID = [
    ("A100-40GB", {"3g.20gb": 2, "1g.5gb": 1}, "need 9 memory slices, the GPU has 8"),  # within 7 compute slices
    ("A100-40GB", {"1g.10gb": 4, "1g.5gb": 1}, "need 9 memory slices, the GPU has 8"),  # within 7 compute slices
    ("A100-40GB", {"1g.5gb": 8}, "at most 7 instances of 1g.5gb"),
    ("A100-80GB", {"1g.10gb+me": 2}, "at most 1 instance of 1g.10gb+me fits"),
    ("A30-24GB", {"1g.6gb+me": 1, "2g.12gb+me": 1}, "at most one instance with media extensions"),
    ("RTX-PRO-6000-Blackwell-96GB", {"1g.24gb+me": 1, "2g.48gb+me.all": 1}, "at most one instance with media"),
    ("RTX-PRO-6000-Blackwell-96GB", {"1g.24gb+me.all": 1, "1g.24gb": 1}, "5 NVDEC of 4"),
    ("RTX-PRO-6000-Blackwell-96GB", {"2g.48gb": 2, "1g.24gb": 1}, "need 5 compute slices, the GPU has 4"),
    ("A100-80GB", {}, "needs at least one instance"),
    ("A100-80GB", {"1g.10gb": 0}, "needs at least one instance"),
    ("A100-80GB", {"1g.10gb": -1}, "-1 is not a number of instances"),
    ("A100-80GB", {"7g.40gb": 1}, "7g.40gb is not a MIG profile of A100-80GB (its 7-slice profile is 7g.80gb)"),
    ("A100-80GB", {"1g.5gb": 1}, "its 1-slice profiles are 1g.10gb, 1g.20gb"),
    ("A100-80GB", {"5g.50gb": 1}, "its profiles are 1g.10gb, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb"),
    ("A100-80GB", {"3g40gb": 1}, "did you mean 3g.40gb?"),
    ("GB200-186GB", {"3g.95gb": 1}, "its 3-slice profile is 3g.93gb"),
]


def geometry(name: str) -> MigGeometry:
    return GEOMETRIES[name]


def assert_witness(geo: MigGeometry, layout: dict[str, int], result: LayoutCheck) -> None:
    """The placements make exactly the layout, at allowed starts, side by side, largest first."""
    wanted = sorted(name for name, count in layout.items() for _ in range(count))
    assert sorted(p.profile for p in result.placements) == wanted
    taken: set[int] = set()
    for placement in result.placements:
        profile = geo.profile(placement.profile)
        assert profile is not None
        assert (placement.profile_id, placement.size) == (profile.id, profile.size)
        assert placement.start in profile.placements
        units = set(range(placement.start, placement.start + placement.size))
        assert units <= set(range(geo.placement_units))
        assert not units & taken
        taken |= units
    sizes = [p.size for p in result.placements]
    assert sizes == sorted(sizes, reverse=True)


def test_seed_layout_is_rejected_for_both_reasons_with_the_closest_valid_ones():
    # The article: "A100 80GB -> 4 x 3g.20gb". 3g.20gb is the 40GB card's name, and two 3g fit at most.
    a100 = geometry("A100-80GB")
    result = check_layout(a100, {"3g.20gb": 4})
    assert not result.valid and result.placements == ()
    assert "3g.20gb is not a MIG profile of A100-80GB (its 3-slice profile is 3g.40gb)" in result.problems
    assert "at most 2 instances of 3g.40gb fit on one GPU, the layout asks for 4" in result.problems
    assert "the instances need 16 memory slices, the GPU has 8" in result.problems
    suggestions = nearest_valid_layouts(a100, {"3g.20gb": 4})
    # mig.md section 6: -cgi 9:0,9:4 / 5:0,9:4 / 15:0,15:2,15:4,15:6
    assert suggestions[0] == {"3g.40gb": 2}
    assert sorted(map(str, suggestions)) == sorted(
        map(str, [{"3g.40gb": 2}, {"4g.40gb": 1, "3g.40gb": 1}, {"1g.20gb": 4}])
    )


@pytest.mark.parametrize(("name", "layout"), VALID)
def test_valid_layout(name, layout):
    geo = geometry(name)
    result = check_layout(geo, layout)
    assert result.valid, result.problems
    assert result.problems == ()
    assert_witness(geo, {k: v for k, v in layout.items() if v}, result)


@pytest.mark.parametrize(("name", "layout", "phrase"), INVALID)
def test_invalid_layout(name, layout, phrase):
    result = check_layout(geometry(name), layout)
    assert not result.valid
    assert result.placements == ()
    assert any(phrase in problem for problem in result.problems), result.problems


def test_every_problem_is_reported_not_only_the_first():
    result = check_layout(geometry("A100-80GB"), {"9g.90gb": 1, "1g.10gb+me": 2, "3g.40gb": 2})
    assert len(result.problems) >= 3, result.problems
    assert any("9g.90gb is not a MIG profile" in p for p in result.problems)
    assert any("1g.10gb+me" in p for p in result.problems)
    assert any("memory slices" in p for p in result.problems)


def test_witness_places_the_tricky_instances_where_only_they_fit():
    a40 = check_layout(geometry("A100-40GB"), {"3g.20gb": 1, "1g.5gb": 4})
    assert [(p.profile, p.start) for p in a40.placements if p.profile == "3g.20gb"] == [("3g.20gb", 4)]
    a80 = check_layout(geometry("A100-80GB"), {"1g.20gb": 2, "2g.20gb": 1, "1g.10gb": 2})
    assert ("1g.20gb", 6) in [(p.profile, p.start) for p in a80.placements]
    gh200 = check_layout(geometry("GH200-96GB"), {"2g.24gb": 3, "1g.24gb": 1})
    assert [(p.profile, p.start) for p in gh200.placements if p.profile == "1g.24gb"] == [("1g.24gb", 6)]


def test_rtx_pro_12_unit_grid_matches_the_transcript():
    # The RTX PRO 6000 -lgi transcript for {2g.48gb: 1, 1g.24gb: 2}: 0:6, 6:3, 9:3.
    result = check_layout(geometry("RTX-PRO-6000-Blackwell-96GB"), {"2g.48gb": 1, "1g.24gb": 2})
    assert [(p.profile_id, p.start, p.size) for p in result.placements] == [(5, 0, 6), (14, 6, 3), (14, 9, 3)]


def test_profile_names_are_not_portable_across_models():
    # mig.md pitfall 2: 1g.10gb is ID 15 (2 slices, max 4) on A100-40GB but ID 19 (1 slice, max 7) on A100-80GB.
    small, large = geometry("A100-40GB").profile("1g.10gb"), geometry("A100-80GB").profile("1g.10gb")
    assert small is not None and large is not None
    assert (small.id, small.memory_slices, small.max_count) == (15, 2, 4)
    assert (large.id, large.memory_slices, large.max_count) == (19, 1, 7)


@pytest.mark.parametrize(
    ("profile", "resource"),
    [
        ("1g.10gb", "nvidia.com/mig-1g.10gb"),
        ("1g.10gb+me", "nvidia.com/mig-1g.10gb.me"),
        ("1g.24gb+me.all", "nvidia.com/mig-1g.24gb.me.all"),
        ("4g.96gb+gfx", "nvidia.com/mig-4g.96gb.gfx"),
        ("1g.24gb-me", "nvidia.com/mig-1g.24gb-me"),
    ],
)
def test_resource_name(profile, resource):
    assert resource_name(profile) == resource


@pytest.mark.parametrize(
    ("name", "asked", "meant"),
    [
        ("A100-80GB", "3g.20gb", "3g.40gb"),
        ("A100-80GB", "1g.5gb", "1g.10gb"),
        ("A100-80GB", "1g.5gb+me", "1g.10gb+me"),
        ("A100-40GB", "7g.80gb", "7g.40gb"),
        ("H200-141GB", "3g.40gb", "3g.71gb"),
        ("A100-80GB", "3g40gb", "3g.40gb"),
        ("A100-80GB", "3g.40gb", "3g.40gb"),
    ],
)
def test_similar_profile(name, asked, meant):
    profile = similar_profile(geometry(name), asked)
    assert profile is not None and profile.name == meant


def test_similar_profile_gives_up_on_nonsense():
    assert similar_profile(geometry("A100-80GB"), "banana") is None


@pytest.mark.parametrize(("name", "layout", "phrase"), INVALID)
def test_suggestions_are_valid_and_distinct(name, layout, phrase):
    geo = geometry(name)
    suggestions = nearest_valid_layouts(geo, layout, limit=4)
    assert len(suggestions) <= 4
    for suggestion in suggestions:
        assert check_layout(geo, suggestion).valid, suggestion
    for a, b in itertools.permutations(suggestions, 2):
        assert not all(n <= b.get(p, 0) for p, n in a.items()), f"{a} is {b} with instances dropped"


def test_suggestions_stay_close():
    a40 = geometry("A100-40GB")
    assert nearest_valid_layouts(a40, {"1g.5gb": 8})[0] == {"1g.5gb": 7}
    assert nearest_valid_layouts(a40, {"3g.20gb": 2, "1g.5gb": 1})[0] == {"3g.20gb": 2}
    a30 = nearest_valid_layouts(geometry("A30-24GB"), {"1g.6gb+me": 1, "2g.12gb+me": 1})
    assert a30[0] == {"2g.12gb+me": 1, "1g.6gb": 1}  # keeps the bigger +me, drops only the suffix it cannot have
    assert nearest_valid_layouts(geometry("A100-80GB"), {"1g.10gb": 1})[0] == {"1g.10gb": 1}  # valid: itself first
    rtx = nearest_valid_layouts(geometry("RTX-PRO-6000-Blackwell-96GB"), {"1g.24gb+me.all": 1, "1g.24gb": 3})
    assert rtx[0] == {"1g.24gb+me.all": 1, "1g.24gb-me": 3}  # +me.all takes every engine: the rest go -me
    assert nearest_valid_layouts(a40, {}) == []


def test_checks_are_fast():
    import time

    a100 = geometry("A100-80GB")
    layouts = [{"1g.10gb": i % 8, "2g.20gb": i % 4, "3g.40gb": i % 3} for i in range(1000)]
    start = time.perf_counter()
    for layout in layouts:
        check_layout(a100, layout)
    assert time.perf_counter() - start < 1.0


# --- geometry data ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(GEOMETRIES))
def test_geometry_data_is_consistent(name):
    geo = geometry(name)
    units_per_slice = geo.placement_units // geo.memory_slices
    assert units_per_slice * geo.memory_slices == geo.placement_units
    assert len({p.name for p in geo.profiles}) == len({p.id for p in geo.profiles}) == len(geo.profiles)
    for p in geo.profiles:
        assert p.size == p.memory_slices * units_per_slice, p.name
        assert all(s >= 0 and s + p.size <= geo.placement_units for s in p.placements), p.name
        assert p.name.startswith(f"{p.compute}g.{p.memory_gb}gb"), p.name
        # A profile's cap is how many of it fit side by side, unless a group allows only one.
        side_by_side = _most_side_by_side(p.placements, p.size)
        assert p.max_count == (1 if p.exclusive_group else side_by_side), p.name
        assert (p.engines is None) == (geo.engine_totals is None), p.name


@pytest.mark.parametrize("name", sorted(GEOMETRIES))
def test_profile_memory_follows_go_nvlib_naming(name):
    # GB = round(ceil(fraction * 8) / 8 * total GiB), rounding halves up like Go's math.Round.
    geo = geometry(name)
    for p in geo.profiles:
        eighths = -(-p.memory_slices * 8 // geo.memory_slices)
        assert p.memory_gb == int(eighths / 8 * geo.memory_gib + 0.5), p.name


def _most_side_by_side(starts: tuple[int, ...], size: int) -> int:
    best, end = 0, -1
    for start in sorted(starts):
        if start > end:
            best, end = best + 1, start + size - 1
    return best


# --- properties ------------------------------------------------------------------------------


def _signature(geo: MigGeometry) -> tuple[object, ...]:
    profiles = tuple(
        (p.compute, p.memory_slices, p.max_count, p.placements, p.size, p.exclusive_group) for p in geo.profiles
    )
    return (geo.compute_slices, geo.memory_slices, geo.placement_units, geo.engine_totals, profiles)


DISTINCT_TABLES = sorted({_signature(g): name for name, g in GEOMETRIES.items()}.values())


@pytest.mark.parametrize("name", DISTINCT_TABLES)
def test_placement_agrees_with_the_slice_sums(name):
    """mig.md's finding: once caps, groups and engines hold, a placement exists iff the slice sums fit.

    Exhaustive over every layout within the memory: more memory than the GPU has never places.
    """
    geo = geometry(name)
    checked = 0
    for counts in itertools.product(*(range(p.max_count + 1) for p in geo.profiles)):
        layout = {p.name: n for p, n in zip(geo.profiles, counts, strict=True) if n}
        memory = sum(p.memory_slices * n for p, n in zip(geo.profiles, counts, strict=True))
        if not layout or memory > geo.memory_slices or _breaks_group_or_engines(geo, layout):
            continue
        compute = sum(p.compute * n for p, n in zip(geo.profiles, counts, strict=True))
        assert (place(geo, layout) is not None) == (compute <= geo.compute_slices), layout
        assert check_layout(geo, layout).valid == (compute <= geo.compute_slices), layout
        checked += 1
    assert checked > 10


def _breaks_group_or_engines(geo: MigGeometry, layout: dict[str, int]) -> bool:
    profiles = [(geo.profile(name), n) for name, n in layout.items()]
    if sum(n for p, n in profiles if p is not None and p.exclusive_group) > 1:
        return True
    totals = geo.engine_totals or {}
    return any(
        sum((p.engines or {}).get(e, 0) * n for p, n in profiles if p is not None) > t for e, t in totals.items()
    )


@st.composite
def layouts(draw: st.DrawFn) -> tuple[str, dict[str, int]]:
    name = draw(st.sampled_from(sorted(GEOMETRIES)))
    names = [p.name for p in GEOMETRIES[name].profiles] + ["3g.20gb", "1g.5gb", "banana"]
    chosen = draw(st.lists(st.sampled_from(names), max_size=5, unique=True))
    return name, {n: draw(st.integers(min_value=0, max_value=8)) for n in chosen}


@settings(max_examples=250, deadline=None)
@given(layouts())
def test_any_layout_gets_a_witness_or_reasons(case):
    name, layout = case
    geo = geometry(name)
    result = check_layout(geo, layout)
    if result.valid:
        assert result.problems == ()
        assert_witness(geo, {k: v for k, v in layout.items() if v}, result)
    else:
        assert result.problems and result.placements == ()
        for suggestion in nearest_valid_layouts(geo, layout):
            assert check_layout(geo, suggestion).valid

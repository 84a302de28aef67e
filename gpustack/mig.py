"""MIG layouts: whether a GPU can be cut the way a blueprint asks, where each instance goes, and what is close.

A layout is a multiset of profile names for one GPU ({"3g.40gb": 2}). The rules (mig.md section 4):
every profile exists on the model, counts stay within each profile's cap, exclusive groups and
engine totals hold, and the instances fit side by side in the placement space: NVML rejects a
GPU instance whose [start, start+size) overlaps one that exists.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from gpustack.catalog import MigGeometry, MigProfile

_PROFILE_NAME = re.compile(r"(?:\d+c\.)?(?P<compute>\d+)g\.(?P<gb>\d+)gb(?P<attributes>[+-][a-z.]+)?", re.IGNORECASE)
_GROUP_WORDS = {"media_extensions": "with media extensions (+me, +me.all)"}
_ENGINE_WORDS = {"nvdec": "NVDEC", "nvenc": "NVENC", "jpeg": "JPEG", "ofa": "OFA"}


@dataclass(frozen=True)
class Placement:
    """One GPU instance at a start index: `nvidia-smi mig -cgi <profile_id>:<start>`."""

    profile: str
    profile_id: int
    start: int
    size: int


@dataclass(frozen=True)
class LayoutCheck:
    valid: bool
    problems: tuple[str, ...]
    placements: tuple[Placement, ...]  # a witness when valid, largest first


Counts = tuple[tuple[MigProfile, int], ...]  # profile -> instances, in the geometry's profile order


def layout_text(instances: Mapping[str, int]) -> str:
    """A layout as a blueprint writes it, in flow style: {3g.40gb: 2, 1g.10gb: 1}."""
    return "{" + ", ".join(f"{profile}: {count}" for profile, count in instances.items()) + "}"


def index_ranges(indexes: Iterable[int]) -> str:
    """GPU indexes as ranges: [0, 1, 2, 3, 6] -> '0-3, 6'."""
    ordered = sorted(set(indexes))
    parts: list[str] = []
    start = previous = None
    for index in ordered:
        if previous is not None and index == previous + 1:
            previous = index
            continue
        if start is not None:
            parts.append(str(start) if start == previous else f"{start}-{previous}")
        start = previous = index
    if start is not None:
        parts.append(str(start) if start == previous else f"{start}-{previous}")
    return ", ".join(parts)


def resource_name(profile: str) -> str:
    """The extended resource the device plugin's mixed strategy advertises for a profile."""
    return "nvidia.com/mig-" + profile.replace("+", ".")


def check_layout(geometry: MigGeometry, layout: Mapping[str, int]) -> LayoutCheck:
    """Every reason the layout cannot be made on one GPU of this geometry, or a placement that makes it."""
    return _check(geometry, tuple(sorted((name, count) for name, count in layout.items() if count != 0)))


@functools.lru_cache(maxsize=4096)
def _check(geometry: MigGeometry, wanted: tuple[tuple[str, int], ...]) -> LayoutCheck:
    if not wanted:
        return LayoutCheck(False, ("a MIG-enabled GPU needs at least one instance",), ())
    problems: list[str] = []
    counts: dict[MigProfile, int] = {}
    for name, count in wanted:
        if count < 0:
            problems.append(f"{name}: {count} is not a number of instances")
            continue
        profile = geometry.profile(name)
        if profile is None:
            problems.append(_unknown_profile(geometry, name))
            # Go on with the same-size profile, so the answer also says whether the count could fit.
            profile = _same_compute_profile(geometry, name)
            if profile is None:
                continue
        counts[profile] = counts.get(profile, 0) + count
    ordered = _ordered(geometry, counts)
    problems += _rule_problems(geometry, ordered)
    if problems:
        return LayoutCheck(False, tuple(problems), ())
    placements = place(geometry, dict((p.name, n) for p, n in ordered))
    if placements is None:
        return LayoutCheck(False, (_no_placement(geometry, ordered),), ())
    return LayoutCheck(True, (), placements)


def _rule_problems(geometry: MigGeometry, counts: Counts) -> list[str]:
    """Everything but placement: caps, exclusive groups, engines and the slice totals."""
    problems = [
        f"at most {p.max_count} instance{_s(p.max_count)} of {p.name} fit{'s' if p.max_count == 1 else ''} "
        f"on one GPU, the layout asks for {n}"
        for p, n in counts
        if n > p.max_count
    ]
    problems += _group_problems(counts)
    problems += _engine_problems(geometry, counts)
    problems += _total_problems(geometry, counts)
    return problems


def _group_problems(counts: Counts) -> Iterator[str]:
    groups: dict[str, list[tuple[MigProfile, int]]] = {}
    for profile, n in counts:
        if profile.exclusive_group is not None:
            groups.setdefault(profile.exclusive_group, []).append((profile, n))
    for group, members in groups.items():
        total = sum(n for _, n in members)
        if total <= 1 or (len(members) == 1 and members[0][0].max_count <= 1):
            continue  # fine, or already reported as that profile's cap
        words = _GROUP_WORDS.get(group, f"of exclusive group {group}")
        names = ", ".join(f"{n} x {p.name}" for p, n in members)
        yield f"at most one instance {words} fits on one GPU, the layout asks for {total} ({names})"


def _engine_problems(geometry: MigGeometry, counts: Counts) -> Iterator[str]:
    if geometry.engine_totals is None:
        return
    short = []
    for engine, available in geometry.engine_totals.items():
        needed = sum((p.engines or {}).get(engine, 0) * n for p, n in counts)
        if needed > available:
            short.append(f"{needed} {_ENGINE_WORDS.get(engine, engine)} of {available}")
    if short:
        yield "the instances need more media engines than the GPU has: " + ", ".join(short)


def _total_problems(geometry: MigGeometry, counts: Counts) -> Iterator[str]:
    instances = sum(n for _, n in counts)
    if instances > geometry.max_instances:
        yield f"at most {geometry.max_instances} instances fit on one GPU, the layout asks for {instances}"
    memory = sum(p.memory_slices * n for p, n in counts)
    if memory > geometry.memory_slices:
        yield f"the instances need {memory} memory slices, the GPU has {geometry.memory_slices}"
    compute = sum(p.compute * n for p, n in counts)
    if compute > geometry.compute_slices:
        yield f"the instances need {compute} compute slices, the GPU has {geometry.compute_slices}"


def place(geometry: MigGeometry, layout: Mapping[str, int]) -> tuple[Placement, ...] | None:
    """Non-overlapping placements for the instances, largest first, or None when none exists.

    Only the placement rule: profiles must exist, caps and totals are check_layout's business.
    """
    instances = [geometry.profile(name) for name, n in layout.items() for _ in range(n)]
    if any(p is None for p in instances):
        raise ValueError(f"{geometry.name} has no profile named {[n for n in layout if geometry.profile(n) is None]}")
    # Biggest and least flexible first: they have the fewest places to go, so dead ends show early.
    ordered = sorted((p for p in instances if p is not None), key=lambda p: (-p.size, len(p.placements), p.name))
    chosen: list[tuple[MigProfile, int]] = []
    if not _search(ordered, geometry.placement_units, 0, chosen):
        return None
    placements = (Placement(p.name, p.id, start, p.size) for p, start in chosen)
    return tuple(sorted(placements, key=lambda pl: (-pl.size, pl.start)))


def _search(instances: list[MigProfile], units: int, occupied: int, chosen: list[tuple[MigProfile, int]]) -> bool:
    """Backtracking over allowed starts; `occupied` is a bitmask of taken placement units."""
    index = len(chosen)
    if index == len(instances):
        return True
    profile = instances[index]
    # Instances of one profile are interchangeable: take their starts in increasing order only.
    floor = chosen[-1][1] if index and instances[index - 1] is profile else -1
    block = (1 << profile.size) - 1
    for start in profile.placements:
        mask = block << start
        if start <= floor or start + profile.size > units or occupied & mask:
            continue
        chosen.append((profile, start))
        if _search(instances, units, occupied | mask, chosen):
            return True
        chosen.pop()
    return False


def _no_placement(geometry: MigGeometry, counts: Counts) -> str:
    starts = "; ".join(f"{n} x {p.name} (size {p.size}, starts {', '.join(map(str, p.placements))})" for p, n in counts)
    return f"no placement puts them side by side in the {geometry.placement_units} placement units: {starts}"


def similar_profile(geometry: MigGeometry, name: str) -> MigProfile | None:
    """The profile a name probably means on this geometry: same compute slices (and suffix), else the closest name."""
    exact = geometry.profile(name)
    if exact is not None:
        return exact
    same = _same_compute_profile(geometry, name)
    if same is not None:
        return same
    names = [p.name for p in geometry.profiles]
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.5)
    return geometry.profile(close[0]) if close else None


def _same_compute_profile(geometry: MigGeometry, name: str) -> MigProfile | None:
    shape = _PROFILE_NAME.fullmatch(name)
    if shape is None:
        return None
    compute, gb, attributes = int(shape["compute"]), int(shape["gb"]), (shape["attributes"] or "").lower()
    candidates = [p for p in geometry.profiles if p.compute == compute]
    if not candidates:
        return None
    return min(candidates, key=lambda p: (_attributes(p.name) != attributes, abs(p.memory_gb - gb), p.name))


def _unknown_profile(geometry: MigGeometry, name: str) -> str:
    return f"{name} is not a MIG profile of {geometry.name} ({_profile_hint(geometry, name)})"


def _profile_hint(geometry: MigGeometry, name: str) -> str:
    plain = [p for p in geometry.profiles if not _attributes(p.name)]
    shape = _PROFILE_NAME.fullmatch(name)
    if shape is None:
        # A garbled name gets a did-you-mean; a well-formed one of a size this GPU lacks gets the menu.
        guess = similar_profile(geometry, name)
        if guess is not None:
            return f"did you mean {guess.name}?"
    else:
        compute = int(shape["compute"])
        same = [p.name for p in plain if p.compute == compute]
        if len(same) == 1:
            return f"its {compute}-slice profile is {same[0]}"
        if same:
            return f"its {compute}-slice profiles are {', '.join(same)}"
    return "its profiles are " + ", ".join(p.name for p in plain)


def _attributes(profile: str) -> str:
    match = _PROFILE_NAME.fullmatch(profile)
    return (match["attributes"] or "").lower() if match else ""


def _ordered(geometry: MigGeometry, counts: Mapping[MigProfile, int]) -> Counts:
    return tuple((p, counts[p]) for p in geometry.profiles if counts.get(p))


def _s(n: int) -> str:
    return "" if n == 1 else "s"


# --- nearest valid layouts -------------------------------------------------------------------


@dataclass(frozen=True)
class _Shape:
    """What an instance is, for closeness: compute slices, memory (in memory slices) and suffix."""

    compute: float
    memory: float
    attributes: str


def nearest_valid_layouts(geometry: MigGeometry, layout: Mapping[str, int], limit: int = 3) -> list[dict[str, int]]:
    """Valid layouts close to the asked one, best first.

    The closest by distance, then the asked profiles with as many instances as fit, then the
    asked number of instances with at least the asked memory each, then the rest by distance.
    No suggestion is another one with instances added or dropped.
    """
    asked = _asked_shapes(geometry, layout)
    if not asked:
        return []
    attributes = {s.attributes for s in asked} | {""}
    if "+me.all" in attributes:
        attributes.add("-me")  # +me.all takes every media engine: the others must be -me variants
    candidates = [c for c in _valid_layouts(geometry) if all(_attributes(p.name) in attributes for p, _ in c)]
    scored = sorted(candidates, key=lambda c: (_distance(geometry, asked, c), len(c), _canonical(c)))
    if not scored:
        return []
    picks = (_same_profiles(geometry, layout, candidates), _same_count(geometry, asked, scored))
    chosen: list[Counts] = []
    for candidate in (scored[0], *(p for p in picks if p), *scored[1:]):
        if len(chosen) == limit:
            break
        # Each suggestion a different idea: not an earlier one with instances added or dropped.
        if not any(_within(candidate, c) or _within(c, candidate) for c in chosen):
            chosen.append(candidate)
    return [_as_layout(c) for c in chosen]


def _asked_shapes(geometry: MigGeometry, layout: Mapping[str, int]) -> list[_Shape]:
    """The asked instances, largest first, at most a GPU's worth (more cannot change the ranking)."""
    shapes: list[_Shape] = []
    for name, count in layout.items():
        if count <= 0:
            continue
        shape = _shape_of_name(geometry, name)
        if shape is not None:
            shapes += [shape] * min(count, geometry.max_instances + 1)
    return sorted(shapes, key=lambda s: (-s.compute, -s.memory))


def _shape_of_name(geometry: MigGeometry, name: str) -> _Shape | None:
    profile = geometry.profile(name)
    if profile is not None:
        return _shape(geometry, profile)
    match = _PROFILE_NAME.fullmatch(name)
    if match is not None:
        memory = int(match["gb"]) / geometry.memory_gib * geometry.memory_slices if geometry.memory_gib else 0.0
        return _Shape(int(match["compute"]), memory, (match["attributes"] or "").lower())
    guess = similar_profile(geometry, name)
    return _shape(geometry, guess) if guess else None


def _shape(geometry: MigGeometry, profile: MigProfile) -> _Shape:
    memory = profile.memory_gb / geometry.memory_gib * geometry.memory_slices if geometry.memory_gib else 0.0
    return _Shape(profile.compute, memory, _attributes(profile.name))


def _distance(geometry: MigGeometry, asked: list[_Shape], candidate: Counts) -> float:
    """How far a layout is from the ask: per instance (paired largest to largest) plus missing or extra ones.

    Less than asked costs more than more than asked: a bigger slice still runs the workload. So
    does losing an asked suffix (+me) next to getting one that was not asked for (-me).
    """
    offered = _sorted_shapes(geometry, candidate)
    cost = sum(_gap(w.compute, g.compute) + _gap(w.memory, g.memory) for w, g in zip(asked, offered, strict=False))
    cost += 1.0 * max(0, len(asked) - len(offered)) + 0.25 * max(0, len(offered) - len(asked))
    wanted, got = Counter(s.attributes for s in asked), Counter(s.attributes for s in offered)
    cost += 1.0 * sum(n for a, n in (wanted - got).items() if a) + 0.25 * sum(n for a, n in (got - wanted).items() if a)
    return cost


def _gap(want: float, got: float) -> float:
    return (want - got) if got < want else 0.25 * (got - want)


def _same_profiles(geometry: MigGeometry, layout: Mapping[str, int], candidates: list[Counts]) -> Counts | None:
    """The most instances of the asked profiles (same-size stand-ins for foreign names) that fit."""
    wanted: dict[str, int] = {}
    for name, count in layout.items():
        profile = geometry.profile(name) or _same_compute_profile(geometry, name)
        if profile is not None and count > 0:
            wanted[profile.name] = wanted.get(profile.name, 0) + count
    fitting = [c for c in candidates if all(n <= wanted.get(p.name, 0) for p, n in c)]
    return max(fitting, key=lambda c: (_instances(c), _memory(c), _canonical(c)), default=None)


def _same_count(geometry: MigGeometry, asked: list[_Shape], scored: list[Counts]) -> Counts | None:
    """As many instances as asked, each with at least the asked memory; the simplest such layout."""
    if len(asked) > geometry.max_instances:
        return None
    roomy = [
        c
        for c in scored
        if _instances(c) == len(asked)
        and all(got.memory >= want.memory - 1e-9 for want, got in zip(asked, _sorted_shapes(geometry, c), strict=True))
    ]
    distinct = len({(s.compute, s.memory, s.attributes) for s in asked})
    return min(roomy, key=lambda c: abs(len(c) - distinct), default=None)  # `scored` is by distance: stable min


def _sorted_shapes(geometry: MigGeometry, counts: Counts) -> list[_Shape]:
    shapes = [_shape(geometry, p) for p, n in counts for _ in range(n)]
    return sorted(shapes, key=lambda s: (-s.compute, -s.memory))


def valid_layouts(geometry: MigGeometry) -> tuple[dict[str, int], ...]:
    """Every layout one GPU of the geometry can be cut into (caps, groups, engines and placement hold)."""
    return tuple(_as_layout(counts) for counts in _valid_layouts(geometry))


@functools.cache
def _valid_layouts(geometry: MigGeometry) -> tuple[Counts, ...]:
    """Every valid non-empty layout of the geometry (hundreds at most: <= 7 instances in <= 12 units)."""
    found: list[Counts] = []

    def extend(index: int, counts: list[tuple[MigProfile, int]], compute: int, memory: int, total: int) -> None:
        if index == len(geometry.profiles):
            layout = tuple(counts)
            if layout and not _rule_problems(geometry, layout) and place(geometry, _as_layout(layout)) is not None:
                found.append(layout)
            return
        profile = geometry.profiles[index]
        extend(index + 1, counts, compute, memory, total)
        for n in range(1, profile.max_count + 1):
            if (
                compute + n * profile.compute > geometry.compute_slices
                or memory + n * profile.memory_slices > geometry.memory_slices
                or total + n > geometry.max_instances
            ):
                break
            extend(
                index + 1,
                [*counts, (profile, n)],
                compute + n * profile.compute,
                memory + n * profile.memory_slices,
                total + n,
            )

    extend(0, [], 0, 0, 0)
    return tuple(found)


def _within(smaller: Counts, larger: Counts) -> bool:
    """Whether `smaller` only drops instances from `larger` (or equals it)."""
    have = dict(larger)
    return all(n <= have.get(p, 0) for p, n in smaller)


def _instances(counts: Counts) -> int:
    return sum(n for _, n in counts)


def _memory(counts: Counts) -> int:
    return sum(p.memory_slices * n for p, n in counts)


def _canonical(counts: Counts) -> tuple[tuple[str, int], ...]:
    return tuple((p.name, n) for p, n in counts)


def _as_layout(counts: Counts) -> dict[str, int]:
    """A plain layout, largest profile first (the order to create them in)."""
    ordered = sorted(counts, key=lambda item: (-item[0].compute, -item[0].memory_slices, item[0].name))
    return {p.name: n for p, n in ordered}

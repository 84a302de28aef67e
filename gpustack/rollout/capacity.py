"""What each pool offers while each wave is out, against the quota its tenants were guaranteed before the change.

A node counts with its old offers until its wave, with nothing while a draining wave has it, and with its new
offers after. The guarantee during the rollout is the old quota: raises apply before the waves but promise
capacity only the converted nodes give; cuts apply after the last wave, so the old quota holds until then.

A wave changes the figures of a few (pool, resource) pairs only: those its nodes offer. So the planner keeps one
running total (`Tracker`) and each wave records what it changes, not every pool's figures again: planning stays
linear in nodes, and a wave's full table (`Timeline.at`) is rebuilt only when an output asks for it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping

from gpustack.offers import full_resource_name
from gpustack.review.snapshot import Snapshot
from gpustack.rollout.model import Availability
from gpustack.rollout.nodes import NodeState

Key = tuple[str, str]  # (pool, resource)
Supply = dict[Key, int]  # (pool, resource) -> units
Promised = dict[Key, dict[str, int]]  # (pool, resource) -> tenant -> quota
Rows = dict[Key, Availability | None]  # None: the pair has no row at that moment


def guarantees(snapshot: Snapshot) -> Promised:
    """(pool, resource) -> tenant -> quota, from one side of the change."""
    found: Promised = defaultdict(dict)
    for tenant in snapshot.tenants.values():
        for pool in tenant.pools:
            for short, amount in tenant.quota_for(pool).items():
                found[(pool, full_resource_name(short))][tenant.name] = amount
    return dict(found)


def supply(states: Iterable[NodeState]) -> Supply:
    total: Supply = defaultdict(int)
    for state in states:
        for resource, units in state.offers:
            total[(state.pool, resource)] += units
    return dict(total)


def availability(offered: Supply, guaranteed: Promised) -> tuple[Availability, ...]:
    """One row per (pool, resource) offered or guaranteed, in a stable order."""
    keys = sorted(set(offered) | set(guaranteed))
    return tuple(
        Availability(
            pool,
            resource,
            offered.get((pool, resource), 0),
            sum(guaranteed.get((pool, resource), {}).values()),
            tuple(sorted(guaranteed.get((pool, resource), {}))),
        )
        for pool, resource in keys
    )


class Timeline:
    """Every wave's rows, kept as the rows each wave changes: `at(wave)` rebuilds one wave's full table.

    Outputs read the waves in order, so the table of the last wave asked for is kept and walked forward."""

    def __init__(self, initial: Rows) -> None:
        self._initial = initial
        self._during: list[Rows] = []  # per wave: rows that differ while its nodes are out
        self._after: list[Rows] = []  # per wave: rows that differ once its nodes are changed
        self._cursor: tuple[int, Rows] = (0, dict(initial))

    def add(self, during: Rows, after: Rows) -> None:
        self._during.append(during)
        self._after.append(after)

    def at(self, wave: int) -> tuple[Availability, ...]:
        """The rows of every pool while wave number `wave` (from 0) is out, ordered by pool and resource."""
        index, base = self._cursor
        if wave < index:
            index, base = 0, dict(self._initial)
        while index < wave:
            base.update(self._after[index])
            index += 1
        self._cursor = (index, base)
        rows = {**base, **self._during[wave]}
        return tuple(row for _, row in sorted(rows.items()) if row is not None)


class Tracker:
    """The running supply of every (pool, resource) as waves go by, and what each wave leaves available."""

    def __init__(self, states: Mapping[str, NodeState], promised: Promised) -> None:
        self.states = dict(states)
        self.units: dict[Key, int] = defaultdict(int)
        self.count: dict[Key, int] = defaultdict(int)  # node offers behind each pair: none left, no row
        for state in self.states.values():
            self._count(state, 1)
        self.promised = {key: (sum(by.values()), tuple(sorted(by))) for key, by in promised.items()}
        keys = sorted({key for key, count in self.count.items() if count} | set(self.promised))
        self.rows: dict[Key, Availability] = {}
        for key in keys:
            row = self._row(key, self.units[key], self.count[key])
            assert row is not None
            self.rows[key] = row
        self.timeline = Timeline(dict(self.rows))
        self.pool_keys: dict[str, set[Key]] = defaultdict(set)  # every pair a pool has had a row for
        for key in self.rows:
            self.pool_keys[key[0]].add(key)
        self.short = {key for key, row in self.rows.items() if row.short > 0}
        self.lowest: dict[Key, tuple[int, Availability]] = {}  # (wave from 0, row) of each pair's lowest figure
        self._unseen: set[Key] = set(self.rows)  # rows changed since a wave last showed them
        self._waves = 0

    def _count(self, state: NodeState, sign: int) -> set[Key]:
        keys = set()
        for resource, units in state.offers:
            key = (state.pool, resource)
            self.units[key] += sign * units
            self.count[key] += sign
            keys.add(key)
        return keys

    def _row(self, key: Key, units: int, count: int) -> Availability | None:
        promised = self.promised.get(key)
        if count <= 0 and promised is None:
            return None
        guaranteed, tenants = promised or (0, ())
        return Availability(key[0], key[1], units if count > 0 else 0, guaranteed, tenants)

    def wave(
        self, pool: str, out: Iterable[str], changes: Iterable[tuple[str, NodeState | None]], shown: bool = True
    ) -> tuple[tuple[Availability, ...], tuple[Availability, ...]]:
        """Take the `out` nodes away while the wave runs, then give each changed node its new state (None: it
        leaves). Returns the rows of `pool` during the wave and those below their guarantee, each ordered by pool
        and resource. A wave not `shown` (it has no step) does not count towards each pair's lowest figure."""
        units: dict[Key, int] = defaultdict(int)
        count: dict[Key, int] = defaultdict(int)
        for node in out:
            state = self.states.get(node)
            for resource, offered in state.offers if state is not None else ():
                units[(state.pool, resource)] += offered  # type: ignore[union-attr]
                count[(state.pool, resource)] += 1  # type: ignore[union-attr]
        during: Rows = {
            key: self._row(key, self.units[key] - units[key], self.count[key] - count[key]) for key in sorted(units)
        }
        if shown:
            self._see(during)
        short = (self.short - set(during)) | {key for key, row in during.items() if row is not None and row.short > 0}
        dips = tuple(self._during_row(key, during) for key in sorted(short))
        own = tuple(self._during_row(key, during) for key in sorted(self.pool_keys.get(pool, ())))
        changed: set[Key] = set()
        for node, new in changes:
            old = self.states.pop(node, None)
            if old is not None:
                changed |= self._count(old, -1)
            if new is not None:
                self.states[node] = new
                changed |= self._count(new, 1)
        after: Rows = {}
        for key in sorted(changed):
            row = self._row(key, self.units[key], self.count[key])
            after[key] = row
            if row is None:
                self.rows.pop(key, None)
                self.short.discard(key)
                self._unseen.discard(key)
                continue
            self.rows[key] = row
            self.pool_keys[key[0]].add(key)
            (self.short.add if row.short > 0 else self.short.discard)(key)
            self._unseen.add(key)
        self.timeline.add(during, after)
        self._waves += 1
        return tuple(row for row in own if row is not None), tuple(row for row in dips if row is not None)

    def _during_row(self, key: Key, during: Rows) -> Availability | None:
        return during[key] if key in during else self.rows.get(key)

    def _see(self, during: Rows) -> None:
        """Note each pair's figure as this wave shows it, where it is lower than any wave showed before: the
        pairs this wave changes, and those changed since a wave last showed them."""
        wave = self._waves
        for key, row in during.items():
            self._note(key, row, wave)
        for key in sorted(self._unseen - set(during)):
            self._note(key, self.rows.get(key), wave)
        self._unseen &= set(during)  # their figure between waves is still to be shown

    def _note(self, key: Key, row: Availability | None, wave: int) -> None:
        if row is None:
            return
        seen = self.lowest.get(key)
        if seen is None or row.available < seen[1].available:
            self.lowest[key] = (wave, row)

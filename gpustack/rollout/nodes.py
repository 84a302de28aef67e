"""What each node should look like on either side of a change, and what differs between the two.

A node's labels, taints and MIG config are its side's Plan's (`Plan.pools`): exactly what apply puts on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from gpustack.model import NodePool
from gpustack.names import DEVICE_PLUGIN_CONFIG_LABEL
from gpustack.offers import HAMI_CORES, HAMI_MEMORY
from gpustack.review.layouts import gpu_states
from gpustack.review.snapshot import Snapshot

HAMI_COUNTERS = frozenset({HAMI_MEMORY, HAMI_CORES})


class TaintKey(NamedTuple):
    """A taint as a comparable value (the model's Taint fields), so old and new pools' taints can be set-compared."""

    key: str
    value: str | None
    effect: str


@dataclass(frozen=True)
class NodeState:
    pool: str
    labels: tuple[tuple[str, str], ...]
    taints: tuple[TaintKey, ...]
    gpus: tuple[object, ...]  # comparable MIG state of each GPU
    offers: tuple[tuple[str, int], ...]  # resource -> units per node
    advertised: tuple[tuple[str, int], ...]  # those the kubelet lists in status.allocatable
    mig_config: str | None


def node_state(snapshot: Snapshot, pool: NodePool) -> NodeState:
    planned = snapshot.plan.pool(pool.name)
    assert planned is not None  # compile plans every pool of a valid blueprint
    return NodeState(
        pool=pool.name,
        labels=tuple(planned.labels.items()),
        taints=tuple(TaintKey(t.key, t.value, t.effect) for t in planned.taints),
        gpus=tuple(state for _, (state, _) in sorted(gpu_states(pool).items())),
        offers=tuple((o.resource, o.per_node) for o in snapshot.offers(pool.name)),
        # HAMi's memory and core counters live in its scheduler, not in the node's allocatable resources.
        advertised=tuple(
            (o.resource, o.per_node) for o in snapshot.offers(pool.name) if o.resource not in HAMI_COUNTERS
        ),
        mig_config=planned.mig_config,
    )


def node_states(snapshot: Snapshot) -> dict[str, NodeState]:
    if snapshot.blueprint is None:
        return {}
    # Every node of a pool is in the pool's one state (frozen, so shared): worked out once per pool, not per node.
    return {
        node: state
        for pool in snapshot.blueprint.pools
        for state in [node_state(snapshot, pool)]
        for node in pool.nodes
    }


@dataclass(frozen=True)
class NodeChange:
    node: str
    old: NodeState | None  # None: the node joins gpustack's pools
    new: NodeState | None  # None: the node leaves them

    @property
    def pool(self) -> str:
        """The pool whose waves carry the node: where it goes, or where it was when it leaves."""
        state = self.new or self.old
        assert state is not None
        return state.pool

    @property
    def moved(self) -> bool:
        return self.old is not None and self.new is not None and self.old.pool != self.new.pool

    @property
    def mig_changed(self) -> bool:
        return self.old is not None and self.new is not None and self.old.gpus != self.new.gpus

    @property
    def offers_changed(self) -> bool:
        return self.old is not None and self.new is not None and self.old.offers != self.new.offers

    @property
    def evicting_taints(self) -> tuple[TaintKey, ...]:
        """NoExecute taints the node gains: they evict at once, so the wave drains first (a drain honours PDBs)."""
        old = set(self.old.taints) if self.old is not None else set()
        return tuple(t for t in self.added_taints if t[2] == "NoExecute" and t not in old)

    @property
    def added_taints(self) -> tuple[TaintKey, ...]:
        old = set(self.old.taints) if self.old is not None else set()
        return tuple(t for t in (self.new.taints if self.new is not None else ()) if t not in old)

    @property
    def removed_taints(self) -> tuple[TaintKey, ...]:
        """Taints to take off, by key and effect (a taint whose value changed is only overwritten)."""
        new = {(k, e) for k, _, e in (self.new.taints if self.new is not None else ())}
        old = self.old.taints if self.old is not None else ()
        return tuple(t for t in old if (t[0], t[2]) not in new)

    @property
    def set_labels(self) -> tuple[tuple[str, str], ...]:
        old = dict(self.old.labels) if self.old is not None else {}
        return tuple((k, v) for k, v in (self.new.labels if self.new is not None else ()) if old.get(k) != v)

    @property
    def removed_labels(self) -> tuple[str, ...]:
        new = dict(self.new.labels) if self.new is not None else {}
        return tuple(k for k, _ in (self.old.labels if self.old is not None else ()) if k not in new)

    @property
    def plugin_config_changed(self) -> bool:
        old = dict(self.old.labels) if self.old is not None else {}
        new = dict(self.new.labels) if self.new is not None else {}
        both = self.old is not None and self.new is not None
        return both and old.get(DEVICE_PLUGIN_CONFIG_LABEL) != new.get(DEVICE_PLUGIN_CONFIG_LABEL)

    @property
    def disruptive(self) -> bool:
        """Whether running GPU pods must leave the node first: their devices, resources or pool change under them."""
        if self.old is None:
            return False  # joining: nothing of gpustack's runs there yet
        if self.new is None:
            return True
        return (
            self.moved
            or self.mig_changed
            or self.offers_changed
            or self.plugin_config_changed
            or bool(self.evicting_taints)
        )

    @property
    def reasons(self) -> tuple[str, ...]:
        """Why the node is in the rollout, in the operator's words."""
        found: list[str] = []
        if self.old is None:
            found.append("joins the pool")
        elif self.new is None:
            found.append(f"leaves pool {self.old.pool}")
        if self.moved:
            assert self.old is not None and self.new is not None
            found.append(f"moves from pool {self.old.pool} to {self.new.pool}")
        if self.mig_changed:
            found.append("MIG re-layout")
        if self.offers_changed or self.plugin_config_changed:
            found.append("device-plugin config or advertised resources change")
        if self.evicting_taints:
            found.append("gains a NoExecute taint")
        elif (self.added_taints or self.removed_taints) and self.new is not None:
            found.append("taints change")
        if (self.set_labels or self.removed_labels) and not found:
            found.append("labels change")
        return tuple(found)

    @property
    def mig_reconfigures(self) -> bool:
        """The MIG manager must re-cut the GPUs: wait for its state label afterwards."""
        return self.mig_changed and self.new is not None and self.new.mig_config is not None

    @property
    def mig_label_unchanged(self) -> bool:
        """Same config name, new content: the MIG manager acts on label changes only, so the label is toggled."""
        assert self.old is not None and self.new is not None
        return self.old.mig_config == self.new.mig_config


def node_changes(before: Snapshot, after: Snapshot) -> list[NodeChange]:
    """Every node whose desired state differs, in the new blueprint's order, then the nodes that leave."""
    old, new = node_states(before), node_states(after)
    names = [*new, *(n for n in old if n not in new)]
    changes = [NodeChange(n, old.get(n), new.get(n)) for n in names]
    return [c for c in changes if c.old != c.new]

"""Which node classes a pod template could ever land on, decided once per template.

Taints, nodeSelector and required node affinity do not change while pods are placed, and the pods
of one workload share one shape. So each shape's statically feasible classes are found once:
indexes of the classes by hard taint and by label give a superset, then the exact filters
(`filters.statically_fits`) keep those that pass, in class order. The placement loop then visits
only those classes: on a fleet of 1,000 pools, a pod looks at its own pools instead of all of them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from gpustack.simulate.inventory import Node
from gpustack.simulate.node_class import NodeClass
from gpustack.simulate.pods import NO_SCHEDULE_EFFECTS, UNSCHEDULABLE_TAINT, PodShape


class ClassIndex:
    def __init__(self, classes: Sequence[NodeClass]) -> None:
        self._classes = classes
        self._untainted: set[int] = set()  # classes with no NoSchedule/NoExecute taint, not cordoned
        self._by_key: dict[str, set[int]] = {}  # hard taint key -> classes carrying it
        self._by_key_value: dict[tuple[str, str], set[int]] = {}
        self._by_label: dict[tuple[str, str], set[int]] = {}
        for node_class in classes:
            node = node_class.node
            hard = [t for t in node.taints if t.effect in NO_SCHEDULE_EFFECTS]
            if node.unschedulable:
                hard.append(UNSCHEDULABLE_TAINT)
            if not hard:
                self._untainted.add(node_class.index)
            for taint in hard:
                self._by_key.setdefault(taint.key, set()).add(node_class.index)
                self._by_key_value.setdefault((taint.key, taint.value or ""), set()).add(node_class.index)
            for label in node.labels.items():
                self._by_label.setdefault(label, set()).add(node_class.index)
        # id(shape) -> (shape, its feasible classes); holding the shape keeps its id from being reused.
        self._feasible: dict[int, tuple[PodShape, tuple[int, ...]]] = {}

    def feasible(self, shape: PodShape, fits: Callable[[PodShape, Node], bool]) -> tuple[int, ...]:
        """The classes whose nodes pass `fits` (the usage-independent filters) for `shape`, in class order."""
        known = self._feasible.get(id(shape))
        if known is not None and known[0] is shape:
            return known[1]
        found = tuple(i for i in sorted(self._candidates(shape)) if fits(shape, self._classes[i].node))
        self._feasible[id(shape)] = (shape, found)
        return found

    def tolerated(self, shape: PodShape) -> set[int]:
        """The classes without a hard taint (or cordon) and those with one the shape may tolerate (by key and value).

        Every other class refuses the shape at its first hard taint (or its cordon), whatever else the shape says.
        """
        classes = set(self._untainted)
        for toleration in shape.tolerations:
            if not toleration.key:  # an empty key tolerates every key
                return {c.index for c in self._classes}
            if toleration.operator == "Exists":
                classes |= self._by_key.get(toleration.key, set())
            else:
                classes |= self._by_key_value.get((toleration.key, toleration.value or ""), set())
        return classes

    def _candidates(self, shape: PodShape) -> set[int]:
        """A superset of the feasible classes: every hard taint tolerated (by key and value), selector labels held."""
        candidates = self.tolerated(shape)
        for label in shape.node_selector:
            candidates &= self._by_label.get(label, set())
        return candidates

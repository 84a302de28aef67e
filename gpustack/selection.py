"""How a pool's nodes are found: by gpustack's pool label (static pools) or by the pool's label selector.

Everything that selects a pool's nodes (workload affinity, the device plugin's placement, Kueue flavors,
admission, the simulator) asks here, so a selector pool is selected the same way everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpustack.model import LabelRequirement, NodePool
from gpustack.names import POOL_LABEL

Object = dict[str, Any]  # a Kubernetes object fragment; not gpustack.plan's, which sits a layer above
HOSTNAME_LABEL = "kubernetes.io/hostname"  # the kubelet sets it to the node name unless --hostname-override says else


def pool_requirements(pool: NodePool) -> tuple[LabelRequirement, ...]:
    """The label requirements that pick exactly the pool's nodes."""
    if pool.selector is None:
        return (LabelRequirement(POOL_LABEL, "In", (pool.name,)),)
    return pool.selector.requirements()


def selects(pool: NodePool, labels: Mapping[str, str]) -> bool:
    """Whether a node with these labels is one of the pool's, as the scheduler reads the pool's requirements."""
    for requirement in pool_requirements(pool):
        value = labels.get(requirement.key)
        if requirement.operator == "In" and value not in requirement.values:
            return False
        if requirement.operator == "NotIn" and value is not None and value in requirement.values:
            return False
        if requirement.operator == "Exists" and value is None:
            return False
        if requirement.operator == "DoesNotExist" and value is not None:
            return False
    return True


def match_expression(requirement: LabelRequirement) -> Object:
    out: Object = {"key": requirement.key, "operator": requirement.operator}
    if requirement.values:
        out["values"] = list(requirement.values)
    return out


def node_selector_term(pool: NodePool) -> Object:
    """One `nodeSelectorTerms` entry (all of its expressions must hold) for the pool."""
    return {"matchExpressions": [match_expression(r) for r in pool_requirements(pool)]}


def identifying_labels(pool: NodePool) -> tuple[tuple[str, str], ...]:
    """Label pairs that name the pool's nodes: the pool label, and every value a selector's `In` allows.

    Admission lets a tenant select exactly these pairs, so a pod may name its pool by the provider's own label.
    """
    pairs: list[tuple[str, str]] = [(POOL_LABEL, pool.name)]
    if pool.selector is not None:
        pairs += [(r.key, value) for r in pool.selector.requirements() if r.operator == "In" for value in r.values]
    return tuple(dict.fromkeys(pairs))


def pool_node_labels(pool: NodePool) -> list[tuple[str, str]]:
    """The node labels that name the pool: its identifying labels (the provider's node-pool key of a cloud or
    selector pool included), the pool's own labels, its nodes' hostnames. A template may select only its own pool's
    pairs on these keys, as the admission policy allows (compile/grants.collect_pool_labels lists the same)."""
    return [*identifying_labels(pool), *pool.labels, *((HOSTNAME_LABEL, node) for node in pool.nodes)]


def describe_selection(pool: NodePool) -> str:
    """The selector in the words of `kubectl get nodes -l`."""
    if pool.selector is None:
        return f"{POOL_LABEL}={pool.name}"
    parts: list[str] = []
    for r in pool_requirements(pool):
        if r.operator == "In":
            parts.append(f"{r.key}={r.values[0]}" if len(r.values) == 1 else f"{r.key} in ({','.join(r.values)})")
        elif r.operator == "NotIn":
            parts.append(f"{r.key} notin ({','.join(r.values)})")
        elif r.operator == "Exists":
            parts.append(r.key)
        else:
            parts.append(f"!{r.key}")
    return ",".join(parts)

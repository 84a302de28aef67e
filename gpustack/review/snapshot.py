"""One side of a reviewed change: a valid blueprint with its derived facts and compiled Plan, or nothing.

A side is empty when the file did not exist at the base revision: everything in the other side is then added.
A side holds the Context its validation built (`Validation.context`): the review derives no fact again, and its
Plan is compiled from that one.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from gpustack.capacity import Capacity, measure_capacity
from gpustack.context import Context
from gpustack.model import Blueprint, NodePool, Tenant, Workload
from gpustack.needs import Requests
from gpustack.offers import Offer
from gpustack.plan import Plan


@dataclass(frozen=True)
class Snapshot:
    label: str  # what the reader knows the side by: a file, or REV:path
    context: Context | None  # the side's validation's; None: an empty side

    @property
    def blueprint(self) -> Blueprint | None:
        return None if self.context is None else self.context.blueprint

    @cached_property
    def capacity(self) -> Capacity | None:
        """What `gpustack capacity` reports for this side."""
        return None if self.context is None else measure_capacity(self.context)

    @cached_property
    def plan(self) -> Plan:
        # Imported here so that drawing a graph does not load every compile family.
        from gpustack.compile import compile_blueprint

        if self.context is None:
            return Plan(blueprint="", objects=(), releases=(), artifacts=())
        return compile_blueprint(self.context)

    @cached_property  # cached: the review looks pools up once per pool and per change
    def pools(self) -> dict[str, NodePool]:
        return {} if self.blueprint is None else {p.name: p for p in self.blueprint.pools}

    @cached_property
    def tenants(self) -> dict[str, Tenant]:
        return {} if self.blueprint is None else {t.name: t for t in self.blueprint.tenants}

    @cached_property
    def workloads(self) -> dict[str, Workload]:
        return {} if self.blueprint is None else {w.name: w for w in self.blueprint.workloads}

    @cached_property
    def node_pools(self) -> dict[str, NodePool]:
        """Node name -> the pool it belongs to."""
        return {node: pool for pool in self.pools.values() for node in pool.nodes}

    def offers(self, pool: str) -> tuple[Offer, ...]:
        return () if self.context is None else self.context.offers.get(pool, ())

    def requests(self, workload: str) -> Requests | None:
        return None if self.context is None else self.context.requests.get(workload)

    def workloads_on(self, pool: str) -> list[str]:
        return sorted(w.name for w in self.workloads.values() if w.pool == pool)

    def model_name(self, pool: str) -> str | None:
        if self.context is None or pool not in self.pools:
            return None
        model = self.context.models.get(pool)
        gpu = self.pools[pool].gpu
        return model.key if model is not None else gpu.model if gpu is not None else None


def empty_snapshot(label: str) -> Snapshot:
    return Snapshot(label, None)

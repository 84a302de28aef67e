"""A risk flag: what a change will do to the running cluster, how bad it is, and what it touches."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Level(StrEnum):
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"

    @property
    def rank(self) -> int:
        return {Level.LOW: 1, Level.MEDIUM: 2, Level.HIGH: 3}[self]


@dataclass(frozen=True)
class Risk:
    code: str  # stable name of the flag, e.g. mig-repartition
    severity: Level
    title: str  # one line
    message: str  # what will happen, in the reviewer's terms
    advice: str  # how to make the change safely
    nodes: tuple[str, ...] = ()
    workloads: tuple[str, ...] = ()
    pools: tuple[str, ...] = ()
    tenants: tuple[str, ...] = ()
    details: tuple[str, ...] = ()  # one line per affected thing, e.g. a node and its GPUs

    def sort_key(self) -> tuple[int, str, str]:
        return (-self.severity.rank, self.code, self.title)


def at_least(risks: tuple[Risk, ...], threshold: Level) -> bool:
    return any(r.severity.rank >= threshold.rank for r in risks)


def count_by_severity(risks: tuple[Risk, ...]) -> dict[str, int]:
    return {str(level): sum(r.severity is level for r in risks) for level in (Level.HIGH, Level.MEDIUM, Level.LOW)}

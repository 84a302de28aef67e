"""A rollout plan as data: phases of steps, each step one idempotent command; renderers only read it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

from gpustack.diagnostic import Diagnostic

API_VERSION = "gpustack.io/v1alpha1"
KIND = "RolloutPlan"

# How long each bounded wait may take; the plan's duration figures are the sum of these upper bounds.
DRAIN_TIMEOUT_S = 600
MIG_TIMEOUT_S = 900  # the MIG manager stops GPU clients, re-cuts every GPU and may reboot the node
RESOURCES_TIMEOUT_S = 300  # the device plugin restarts and the kubelet re-reads its devices
DEFAULT_PERCENT = 10  # --max-unavailable default: 10 % of a pool's nodes, at least one node


class Action(StrEnum):
    APPLY = "apply"
    APPLY_JOB = "apply-job"  # only when the Job does not exist: a Job's pod template cannot change
    DELETE = "delete"
    HELM_UPGRADE = "helm-upgrade"
    HELM_UNINSTALL = "helm-uninstall"
    CORDON = "cordon"
    DRAIN = "drain"
    LABEL = "label"
    TAINT = "taint"
    UNTAINT = "untaint"
    WAIT_MIG = "wait-mig"
    WAIT_RESOURCE = "wait-resource"
    UNCORDON = "uncordon"


class PhaseKind(StrEnum):
    PREPARE = "prepare"
    WAVE = "wave"
    FINISH = "finish"


@dataclass(frozen=True)
class Step:
    id: str  # stable and unique in the plan: the script's state file records it once done
    action: Action
    description: str
    command: tuple[str, ...]  # argv; UNTAINT runs through the script's check-first helper
    stdin: str | None = None  # an object to apply, as one line of JSON
    timeout_s: int | None = None  # for bounded waits
    node: str | None = None


@dataclass(frozen=True)
class Availability:
    """What a pool offers of one resource while a phase runs, against what its tenants were guaranteed."""

    pool: str
    resource: str
    available: int
    guaranteed: int  # sum of the tenants' quotas before the change (0: no quota names it)
    tenants: tuple[str, ...]  # tenants whose quota names it

    @property
    def short(self) -> int:
        return max(0, self.guaranteed - self.available)


@dataclass(frozen=True)
class Phase:
    id: str
    kind: PhaseKind
    title: str
    steps: tuple[Step, ...]
    pool: str | None = None
    nodes: tuple[str, ...] = ()
    drains: bool = False  # whether the wave takes its nodes out of service
    unprotected: tuple[str, ...] = ()  # workloads drained here that no PodDisruptionBudget protects
    pool_capacity: tuple[Availability, ...] = ()  # the wave's own pool's rows while it runs
    dips: tuple[Availability, ...] = ()  # rows below the tenants' guarantee while it runs
    # Every pool's rows while the wave runs, built when asked: a plan holding them all would hold waves x pools.
    capacity_of: Callable[[], tuple[Availability, ...]] | None = field(default=None, compare=False, repr=False)

    @property
    def capacity(self) -> tuple[Availability, ...]:
        """What every pool offers while the wave runs, ordered by pool and resource."""
        return () if self.capacity_of is None else self.capacity_of()

    @property
    def max_seconds(self) -> int:
        """Upper bound of the phase's waits (commands without a timeout count as instant)."""
        return sum(step.timeout_s or 0 for step in self.steps)


@dataclass(frozen=True)
class RolloutPlan:
    before: str
    after: str
    max_unavailable: str  # as given, or the default's wording
    phases: tuple[Phase, ...]
    capacity_before: tuple[Availability, ...]
    capacity_after: tuple[Availability, ...]
    refusals: tuple[Diagnostic, ...] = field(default=())  # capacity drops below a tenant's guarantee
    lowest: tuple[tuple[str, Availability], ...] = ()  # (wave, row) of each pair's lowest figure, by pool, resource

    @property
    def waves(self) -> tuple[Phase, ...]:
        return tuple(p for p in self.phases if p.kind is PhaseKind.WAVE)

    @property
    def steps(self) -> tuple[Step, ...]:
        return tuple(step for phase in self.phases for step in phase.steps)

    @property
    def max_seconds(self) -> int:
        return sum(phase.max_seconds for phase in self.phases)

    @property
    def dips(self) -> tuple[tuple[Phase, Availability], ...]:
        """Every wave moment where a pool offers less than its tenants were guaranteed."""
        return tuple((phase, a) for phase in self.waves for a in phase.dips)

"""One simulated apply: create every pod (quota admission), then schedule them, highest priority first.

Pure: nodes, pods and quotas in, an Outcome out. The order matches a cluster where everything is
applied at once: the API server admits pods in creation order, and both schedulers take the
highest-priority pod (or Volcano job) first, the older one on a tie.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from gpustack.simulate.claims import holds_claims
from gpustack.simulate.cluster import Cluster
from gpustack.simulate.controllers import failed_create
from gpustack.simulate.demand import Demand, GangSpec, Pod
from gpustack.simulate.gates import Gates, claim_not_found, forbidden
from gpustack.simulate.group import allocate_group
from gpustack.simulate.inventory import Node
from gpustack.simulate.kai import OVER_LIMIT, KaiQueues
from gpustack.simulate.kubelet import admit_by_name
from gpustack.simulate.messages import KubeVersion
from gpustack.simulate.placement import KubeJudge, Rejection, VolcanoJudge
from gpustack.simulate.preemption import PREEMPTED, Preemption, carry_out, find_preemption, preempted_message
from gpustack.simulate.quota import Quota, QuotaLedger
from gpustack.simulate.quota import Rejection as QuotaRejection
from gpustack.simulate.replicas import batchable, place_run
from gpustack.simulate.scheduler import Refusals, Unplaced, schedule_pod
from gpustack.simulate.volcano import allocate_gang

FAILED_CREATE = "FailedCreate"  # the controller's event when the API server refuses the pod
FAILED_SCHEDULING = "FailedScheduling"  # kube-scheduler's event
UNSCHEDULABLE = "Unschedulable"  # Volcano's PodScheduled condition reason
GROUP_INCOMPLETE = "GroupIncomplete"  # gpustack's word: a JobSet or LeaderWorkerSet group that cannot start whole


@dataclass(frozen=True)
class Pending:
    pod: Pod
    event: str
    message: str
    rejections: tuple[Rejection, ...] = ()
    quota: QuotaRejection | None = None
    gang_partial: bool = False  # its Volcano gang found nodes for some members, not for minAvailable


@dataclass(frozen=True)
class Outcome:
    version: KubeVersion
    cluster: Cluster
    placed: tuple[tuple[Pod, int], ...]  # (pod, node index), in creation order
    pending: tuple[Pending, ...]  # in creation order
    gangs: tuple[tuple[GangSpec, str], ...]  # gangs that are not ready, with the PodGroup's message
    quotas: tuple[tuple[Quota, dict[str, int]], ...]  # every quota with what admitted pods use
    running: tuple[tuple[Pod, int], ...] = ()  # pods already bound in the cluster snapshot, with their nodes
    preempted: tuple[tuple[Pod, int, str], ...] = ()  # victims: (pod, node index, the Preempted event's message)
    # Preemptors: (pod, node index it was nominated to, its FailedScheduling message before the victims went).
    nominated: tuple[tuple[Pod, int, str], ...] = ()
    kai: KaiQueues | None = None  # KAI tenants' Queues with what was placed in them (simulate/kai.py)

    @property
    def ok(self) -> bool:
        return not self.pending


def simulate(
    nodes: Sequence[Node],
    demand: Demand,
    quotas: Sequence[Quota],
    version: KubeVersion,
    binpack: bool = False,
    running: Sequence[tuple[Pod, int]] = (),
    kai: KaiQueues | None = None,
    gates: Gates | None = None,
    *,
    runs: bool = True,
) -> Outcome:
    """`binpack`: Volcano scores with its binpack plugin (spec.volcano.binpack), else it spreads.

    `running`: pods a cluster snapshot shows bound (pod, node index); they hold their node's resources and
    pod slots and count toward quota from the start, and lower-priority ones may be preempted.

    `kai`: the compiled KAI Queues; a KAI pod (or gang) over its queue's limit stays pending (OverLimit).

    `gates`: LimitRanges (checked at creation, before quota) and the PersistentVolumeClaims that exist.

    `runs`: place each run of identical replicas in one pass (simulate/replicas.py: the same nodes); False places
    every pod on its own, the reference the tests compare runs with.
    """
    kai = kai.fresh() if kai is not None else None
    cluster = Cluster(nodes)
    ledger = QuotaLedger(tuple(quotas))
    for pod, node in running:
        cluster.bind(pod, node)
        ledger.charge(pod)
    if kai is not None:
        for pod, node in running:
            kai.charge_running(pod, nodes[node].pool)
    state = _Scheduling(cluster, ledger, version, binpack, kai, gates)
    admitted = state.admit(demand.pods)
    # Pods that name their node are bound as they are created: the kubelet admits them before any scheduling.
    for pod in [p for p in admitted if p.shape.node_name is not None]:
        state.bind_by_name(pod)
    queue = _queue([p for p in admitted if p.shape.node_name is None], demand)
    for run in _runs(queue, state) if runs else ([unit] for unit in queue):
        rest = run[len(state.place_run(run)) :] if len(run) > 1 else run
        for unit in rest:
            state.schedule(unit)
    return Outcome(
        version,
        cluster,
        tuple(sorted(state.placed, key=lambda item: item[0].order)),
        tuple(sorted(state.pending, key=lambda item: item.pod.order)),
        tuple(state.gangs),
        tuple((quota, ledger.use(quota)) for quota in ledger.quotas),
        tuple(running),
        tuple(state.preempted),
        tuple(state.nominated),
        kai,
    )


class _Scheduling:
    """One simulated apply's scheduling state: what was placed, what pends and why, and the memories that spare
    judging the same thing twice."""

    def __init__(
        self,
        cluster: Cluster,
        ledger: QuotaLedger,
        version: KubeVersion,
        binpack: bool,
        kai: KaiQueues | None,
        gates: Gates | None,
    ) -> None:
        self.cluster, self.ledger, self.version, self.binpack, self.kai, self.gates = (
            cluster,
            ledger,
            version,
            binpack,
            kai,
            gates,
        )
        self.kube, self.volcano = KubeJudge(version), VolcanoJudge(version)
        self.placed: list[tuple[Pod, int]] = []
        self.pending: list[Pending] = []
        self.gangs: list[tuple[GangSpec, str]] = []
        self.preempted: list[tuple[Pod, int, str]] = []
        self.nominated: list[tuple[Pod, int, str]] = []
        self.refusals: Refusals = {}
        self.no_room: NoRoom = {}

    def admit(self, pods: Sequence[Pod]) -> list[Pod]:
        """Create every pod, in order: LimitRanger, then ResourceQuota; the pods the API server accepts."""
        admitted: list[Pod] = []
        limits: dict[tuple[str, int], str | None] = {}  # (namespace, id(shape)) -> Gates.limit_violations: per workload
        start = 0
        while start < len(pods):
            pod = pods[start]
            end = start + 1  # a stretch of pods alike (a workload's replicas): the ledger admits them at once
            while end < len(pods) and pods[end].shape is pod.shape and pods[end].namespace == pod.namespace:
                end += 1
            key = (pod.namespace, id(pod.shape))  # every pod is held by the demand, so no shape's id is reused
            if self.gates is not None and key not in limits:
                limits[key] = self.gates.limit_violations(pod.namespace, pod.shape)
            violations = limits.get(key)
            if violations is not None:  # LimitRanger runs before ResourceQuota: the pod never counts
                for refused_pod in pods[start:end]:
                    refusal = failed_create(refused_pod, forbidden(refused_pod, violations))
                    self.pending.append(Pending(refused_pod, FAILED_CREATE, refusal))
            else:
                taken = start + self.ledger.admit_alike(pod, end - start)
                admitted += pods[start:taken]
                for refused_pod in pods[taken:end]:
                    refused = self.ledger.admit(refused_pod)
                    assert refused is not None  # a pod alike was refused, and refusals count for nothing
                    message = failed_create(refused_pod, refused.message)
                    self.pending.append(Pending(refused_pod, FAILED_CREATE, message, quota=refused))
            start = end
        return admitted

    def bind_by_name(self, pod: Pod) -> None:
        bound = admit_by_name(self.cluster, pod)
        if isinstance(bound, int):
            self.placed.append((pod, bound))
            return
        self.pending.append(Pending(pod, bound.event, bound.message))
        if bound.failed:
            self.ledger.release(pod)

    def runnable(self, pod: Pod) -> bool:
        """Whether a pod may lead a run of identical replicas (simulate/replicas.py): one kube-scheduler places alone,
        with no KAI queue to charge between replicas and no missing claim to refuse it before any node is judged."""
        if pod.volcano or pod.gang is not None or (self.kai is not None and self.kai.queue_of(pod) is not None):
            return False
        if self.gates is not None and self.gates.missing_claim(pod) is not None:
            return False
        return batchable(self.cluster, pod.shape)

    def place_run(self, run: list[Unit]) -> list[int]:
        """Place the run's first pods at once (`runs` only holds pods that `runnable` let lead): their nodes."""
        pods = [unit for unit in run if isinstance(unit, Pod)]
        nodes = place_run(self.cluster, pods, self.kube)
        self.placed += zip(pods, nodes, strict=False)
        return nodes

    def schedule(self, unit: Unit) -> None:
        """One pod (kube-scheduler), Volcano job or JobSet/LeaderWorkerSet group, as it comes off the queue."""
        job = [unit] if isinstance(unit, Pod) else unit[1]
        over_limit = self.kai.refuse(job) if self.kai is not None else None
        if over_limit is not None:  # KAI judges the job's queue before any node
            self.pending += [Pending(pod, OVER_LIMIT, over_limit.message) for pod in job]
            return
        if isinstance(unit, Pod):
            self._schedule_pod(unit)
            return
        spec, members = unit
        if not members[0].volcano:
            group = allocate_group(self.cluster, spec, members, self.kube, self.version)
            self.placed += group.bound
            if self.kai is not None:
                self.kai.charge([pod for pod, _ in group.bound])
            for pod, text, why, was_refused in group.pending:
                event = FAILED_SCHEDULING if was_refused else GROUP_INCOMPLETE
                self.pending.append(Pending(pod, event, text, why, gang_partial=True))
            if group.message is not None:
                self.gangs.append((spec, group.message))
            return
        outcome = allocate_gang(self.cluster, spec, members, self.volcano, self.binpack)
        self.placed += outcome.bound
        partial = outcome.message is not None and bool(outcome.schedulable)
        self.pending += [
            Pending(pod, UNSCHEDULABLE, text, why, gang_partial=partial) for pod, text, why in outcome.pending
        ]
        if outcome.message is not None:
            self.gangs.append((spec, outcome.message))

    def _schedule_pod(self, pod: Pod) -> None:
        cluster, kai, version = self.cluster, self.kai, self.version
        missing = self.gates.missing_claim(pod) if self.gates is not None and not pod.volcano else None
        if missing is not None:  # VolumeBinding's PreFilter: no node is judged
            text = claim_not_found(version, len(cluster.nodes), missing, holds_claims(pod.shape))
            self.pending.append(Pending(pod, FAILED_SCHEDULING, text))
            return
        result = schedule_pod(cluster, pod, self.kube, version, most_allocated=False, refusals=self.refusals)
        if not isinstance(result, Unplaced):
            self.placed.append((pod, result))
            if kai is not None:
                kai.charge([pod])
            return
        preemption = preempt(cluster, pod, result, version, self.no_room)
        if preemption is None:
            self.pending.append(Pending(pod, FAILED_SCHEDULING, result.message, result.rejections))
            return
        carry_out(cluster, pod, preemption)
        self.placed.append((pod, preemption.node))
        if kai is not None:
            kai.charge([pod])
            kai.release(preemption.victims)
        self.nominated.append((pod, preemption.node, result.message))
        message = preempted_message(pod, cluster.nodes[preemption.node].name)
        for victim in preemption.victims:
            self.preempted.append((victim, preemption.node, message))
            self.ledger.release(victim)
            if any(placed is victim for placed, _ in self.placed):  # one of the plan's own pods: deleted, not running
                self.placed = [(placed, node) for placed, node in self.placed if placed is not victim]
                self.pending.append(Pending(victim, PREEMPTED, message))


# id(refusal) -> the refusal, for those whose preemption dry run found no node (held, so ids stay unique)
NoRoom = dict[int, Unplaced]


def preempt(cluster: Cluster, pod: Pod, refused: Unplaced, version: KubeVersion, no_room: NoRoom) -> Preemption | None:
    """The preemption for a refused pod, dry-run once per refusal: schedule_pod hands the same refusal to the next
    replica only while nothing was bound or unbound, and on the same cluster a pod of the same shape and priority finds
    no node again. Without this, every pending replica of a workload would try every node of its pool."""
    if no_room.get(id(refused)) is refused:
        return None
    preemption = find_preemption(cluster, pod, refused.resolvable, version)
    if preemption is None:
        no_room[id(refused)] = refused
    return preemption


Unit = Pod | tuple[GangSpec, list[Pod]]


def _queue(pods: list[Pod], demand: Demand) -> list[Unit]:
    """Scheduling units by priority, then age: single pods for kube-scheduler, whole jobs for Volcano, whole groups
    for a JobSet or LeaderWorkerSet."""
    units: list[tuple[int, int, Unit]] = []
    members: dict[str, list[Pod]] = {}
    for pod in pods:
        if not pod.volcano and pod.gang is None:
            units.append((-pod.priority, pod.order, pod))
            continue
        key = pod.gang or f"{pod.namespace}/{pod.name}"  # Volcano gives a lone pod a PodGroup of one
        if key not in members:
            members[key] = []
            spec = demand.gangs.get(key) or GangSpec(key, pod.name, pod.namespace, 1, 1)
            units.append((-pod.priority, pod.order, (spec, members[key])))
        members[key].append(pod)
    return [unit for _, _, unit in sorted(units, key=lambda u: (u[0], u[1]))]


def _runs(queue: list[Unit], state: _Scheduling) -> Iterator[list[Unit]]:
    """The queue in runs: consecutive pods of one shape, priority and namespace that `state.runnable` lets lead a run
    (a workload's replicas), and every other unit alone."""
    position = 0
    while position < len(queue):
        first = queue[position]
        end = position + 1
        if isinstance(first, Pod) and state.runnable(first):
            while end < len(queue) and _same(queue[end], first):
                end += 1
        yield queue[position:end]
        position = end


def _same(unit: Unit, first: Pod) -> bool:
    return (
        isinstance(unit, Pod)
        and unit.shape is first.shape
        and unit.priority == first.priority
        and unit.preempt_never == first.preempt_never
        and unit.namespace == first.namespace
    )

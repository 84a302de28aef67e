"""One simulated apply: create every pod (quota admission), then schedule them, highest priority first.

Pure: nodes, pods and quotas in, an Outcome out. The order matches a cluster where everything is
applied at once: the API server admits pods in creation order, and both schedulers take the
highest-priority pod (or Volcano job) first, the older one on a tie.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gpustack.simulate.claims import holds_claims
from gpustack.simulate.cluster import Cluster
from gpustack.simulate.controllers import failed_create
from gpustack.simulate.demand import Demand, GangSpec, Pod
from gpustack.simulate.gates import Gates, claim_not_found
from gpustack.simulate.group import allocate_group
from gpustack.simulate.inventory import Node
from gpustack.simulate.kai import OVER_LIMIT, KaiQueues
from gpustack.simulate.kubelet import admit_by_name
from gpustack.simulate.messages import KubeVersion
from gpustack.simulate.placement import KubeJudge, Rejection, VolcanoJudge
from gpustack.simulate.preemption import PREEMPTED, Preemption, carry_out, find_preemption, preempted_message
from gpustack.simulate.quota import Quota, QuotaLedger
from gpustack.simulate.quota import Rejection as QuotaRejection
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
) -> Outcome:
    """`binpack`: Volcano scores with its binpack plugin (spec.volcano.binpack), else it spreads.

    `running`: pods a cluster snapshot shows bound (pod, node index); they hold their node's resources and
    pod slots and count toward quota from the start, and lower-priority ones may be preempted.

    `kai`: the compiled KAI Queues; a KAI pod (or gang) over its queue's limit stays pending (OverLimit).

    `gates`: LimitRanges (checked at creation, before quota) and the PersistentVolumeClaims that exist.
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
    preempted: list[tuple[Pod, int, str]] = []
    nominated: list[tuple[Pod, int, str]] = []
    pending: list[Pending] = []
    admitted: list[Pod] = []
    for pod in demand.pods:
        limited = gates.limit_refusal(pod) if gates is not None else None
        if limited is not None:  # LimitRanger runs before ResourceQuota: the pod never counts
            pending.append(Pending(pod, FAILED_CREATE, failed_create(pod, limited)))
            continue
        refused = ledger.admit(pod)
        if refused is None:
            admitted.append(pod)
        else:
            pending.append(Pending(pod, FAILED_CREATE, failed_create(pod, refused.message), quota=refused))
    placed: list[tuple[Pod, int]] = []
    gangs: list[tuple[GangSpec, str]] = []
    kube, volcano = KubeJudge(version), VolcanoJudge(version)
    # Pods that name their node are bound as they are created: the kubelet admits them before any scheduling.
    for pod in [p for p in admitted if p.shape.node_name is not None]:
        bound = admit_by_name(cluster, pod)
        if isinstance(bound, int):
            placed.append((pod, bound))
        else:
            pending.append(Pending(pod, bound.event, bound.message))
            if bound.failed:
                ledger.release(pod)
    admitted = [p for p in admitted if p.shape.node_name is None]
    refusals: Refusals = {}
    no_room: NoRoom = {}
    for unit in _queue(admitted, demand):
        job = [unit] if isinstance(unit, Pod) else unit[1]
        over_limit = kai.refuse(job) if kai is not None else None
        if over_limit is not None:  # KAI judges the job's queue before any node
            pending += [Pending(pod, OVER_LIMIT, over_limit.message) for pod in job]
            continue
        if isinstance(unit, Pod):
            missing = gates.missing_claim(unit) if gates is not None and not unit.volcano else None
            if missing is not None:  # VolumeBinding's PreFilter: no node is judged
                text = claim_not_found(version, len(cluster.nodes), missing, holds_claims(unit.shape))
                pending.append(Pending(unit, FAILED_SCHEDULING, text))
                continue
            result = schedule_pod(cluster, unit, kube, version, most_allocated=False, refusals=refusals)
            if not isinstance(result, Unplaced):
                placed.append((unit, result))
                if kai is not None:
                    kai.charge([unit])
                continue
            preemption = preempt(cluster, unit, result, version, no_room)
            if preemption is None:
                pending.append(Pending(unit, FAILED_SCHEDULING, result.message, result.rejections))
                continue
            carry_out(cluster, unit, preemption)
            placed.append((unit, preemption.node))
            if kai is not None:
                kai.charge([unit])
                kai.release(preemption.victims)
            nominated.append((unit, preemption.node, result.message))
            message = preempted_message(unit, cluster.nodes[preemption.node].name)
            for victim in preemption.victims:
                preempted.append((victim, preemption.node, message))
                ledger.release(victim)
                if any(pod is victim for pod, _ in placed):  # one of the plan's own pods: deleted, so not running
                    placed = [(pod, node) for pod, node in placed if pod is not victim]
                    pending.append(Pending(victim, PREEMPTED, message))
            continue
        spec, members = unit
        if not members[0].volcano:
            group = allocate_group(cluster, spec, members, kube, version)
            placed += group.bound
            if kai is not None:
                kai.charge([pod for pod, _ in group.bound])
            for pod, text, why, was_refused in group.pending:
                event = FAILED_SCHEDULING if was_refused else GROUP_INCOMPLETE
                pending.append(Pending(pod, event, text, why, gang_partial=True))
            if group.message is not None:
                gangs.append((spec, group.message))
            continue
        outcome = allocate_gang(cluster, spec, members, volcano, binpack)
        placed += outcome.bound
        partial = outcome.message is not None and bool(outcome.schedulable)
        pending += [Pending(pod, UNSCHEDULABLE, text, why, gang_partial=partial) for pod, text, why in outcome.pending]
        if outcome.message is not None:
            gangs.append((spec, outcome.message))
    return Outcome(
        version,
        cluster,
        tuple(sorted(placed, key=lambda item: item[0].order)),
        tuple(sorted(pending, key=lambda item: item.pod.order)),
        tuple(gangs),
        tuple((quota, ledger.use(quota)) for quota in ledger.quotas),
        tuple(running),
        tuple(preempted),
        tuple(nominated),
        kai,
    )


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

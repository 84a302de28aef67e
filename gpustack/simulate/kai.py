"""KAI Scheduler's queues in the simulation: a pod over its queue's limit pends, one over its quota runs over quota.

A tenant with `scheduler: kai` has, in each of its pools' shards, a parent Queue and a leaf Queue per namespace
(compile/kai.py). The figures are read from the compiled Queue objects (scheduling.run.ai/v2), never worked out again
here; a pod's leaf is the `kai.scheduler/queue` label of its compiled pod template (a scenario's raw pod: its
namespace's leaf on the pool its node selector or required affinity names, the only one gpustack's admission policy
lets it name; a pod the cluster shows running: the leaf on its node's pool). A shard's scheduler sees only its pool's
nodes, as the pods' own pool affinity does here.

What KAI does, from its source (kai-scheduler/KAI-Scheduler, pkg/scheduler/plugins/proportion/capacity_policy/
max_allowed_check.go, `resultsOverLimit`): before a job is placed, for its queue and then each parent in turn,

    if !resource_info.LessOrEqualWithTolerance(resourceShare.Allocated+requestedQty, resourceShare.MaxAllowed) {
        return true, resource

where `MaxAllowed` is the Queue's `limit` (-1: `UnlimitedResourceQuantity`, skipped). The job stays pending with
the PodGroup's unschedulable reason `OverLimit` (pkg/apis/scheduling/v2alpha2: "scheduling it would exceed the
queue's limits") and the message of pkg/scheduler/api/unschedule_info.go, `GetJobOverMaxAllowedMessageForQueue`:

    return fmt.Sprintf("%s quota has reached the allowable limit of %s. %s", queueName, resourceNameStr, details)

with `details` for the gpu resource `"Limit is %s GPUs, currently %s GPUs allocated and workload requested %s GPUs"`
(each number through `HumanizeResource(v, 1)`: up to three decimals, no trailing zeros). A job's request is the sum of
the pods it places at once (a gang's every member), so a JobSet's group is judged whole.

A pod placed while its queue (or a parent) holds more than its `quota` runs over quota: KAI may reclaim it for a queue
that is under its own quota. The simulation places it and says so.

MIG: KAI's `gpu` figure counts a MIG device as the compute slices of its profile (`QuantifyVector`: `totalGPUs +=
float64(gpuPortion) * vec.Get(i)` for every `nvidia.com/mig-*` name), one number for every GPU resource, so the
queue cannot hold a tenant to a number of instances of one profile. Only the ResourceQuota on exact names does: the
API server refuses such a pod (FailedCreate) before KAI sees it, however much room its queue has.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from gpustack.context import Context
from gpustack.names import POOL_LABEL
from gpustack.schedulers import (
    KAI_QUEUE_LABEL,
    KAI_SCHEDULER,
    KAI_UNLIMITED,
    kai_gpu_units,
    kai_leaf_queue,
    kai_tenants,
)
from gpustack.simulate.demand import WORKLOAD_KINDS, WORKLOAD_LABEL, Pod
from gpustack.simulate.pods import PodShape

QUEUE_API_VERSION = "scheduling.run.ai/v2"
# The PodGroup's unschedulable reason for a job over its queue's limit (v2alpha2.OverLimit), shown as the pod's event.
OVER_LIMIT = "OverLimit"


@dataclass
class KaiQueue:
    """One compiled Queue's gpu figures (KAI's GPU units) and what the simulation has placed in it."""

    name: str
    parent: str | None
    quota: int  # deserved; -1: unlimited
    limit: int  # maxAllowed; -1: unlimited
    over_quota_weight: int
    allocated: int = 0
    over_quota: list[Pod] = field(default_factory=list)  # pods placed while this queue held more than its quota

    def over(self) -> bool:
        return self.quota != KAI_UNLIMITED and self.allocated > self.quota


@dataclass(frozen=True)
class OverLimit:
    queue: str
    message: str


@dataclass
class KaiQueues:
    """The compiled Queues, each pod's leaf, and the ledger of GPU units the simulation has placed in them."""

    queues: dict[str, KaiQueue]
    by_workload: dict[tuple[str, str], str]  # (workload, namespace) -> the leaf its pod template names
    by_namespace: dict[tuple[str, str], str]  # (namespace, pool) -> its tenant's leaf there (raw and running pods)
    only_pool: dict[str, str] = field(default_factory=dict)  # namespace -> its tenant's pool, where it has one
    _units: dict[int, tuple[Pod, int]] = field(default_factory=dict, init=False, repr=False)
    # id(pod) -> (pod, the queue it is counted in): what release takes back (holding the pod keeps its id unique)
    _charged: dict[int, tuple[Pod, KaiQueue]] = field(default_factory=dict, init=False, repr=False)

    def fresh(self) -> KaiQueues:
        """The same queues with nothing placed: one ledger per simulated apply."""
        queues = {
            name: KaiQueue(q.name, q.parent, q.quota, q.limit, q.over_quota_weight) for name, q in self.queues.items()
        }
        return KaiQueues(queues, self.by_workload, self.by_namespace, self.only_pool)

    def queue_of(self, pod: Pod) -> KaiQueue | None:
        if pod.shape.scheduler_name != KAI_SCHEDULER:
            return None
        if pod.source.workload is not None:
            name = self.by_workload.get((pod.source.workload.name, pod.namespace))
        else:
            # The pool it selects; one that selects none can be admitted only with its tenant's one pool's label.
            pool = selected_pool(pod.shape) or self.only_pool.get(pod.namespace)
            name = self.by_namespace.get((pod.namespace, pool)) if pool is not None else None
        return self.queues.get(name) if name is not None else None

    def units(self, pod: Pod) -> int:
        """The pod's GPUs as KAI's queues count them (worked out once per pod shape)."""
        known = self._units.get(id(pod.shape))
        if known is None or known[0].shape is not pod.shape:
            count = sum(amount * (kai_gpu_units(resource) or 0) for resource, amount in pod.shape.requests)
            known = self._units[id(pod.shape)] = (pod, count)
        return known[1]

    def chain(self, queue: KaiQueue) -> Iterator[KaiQueue]:
        """The queue, then its parents up to the root (a cycle or a missing parent ends it)."""
        seen: set[str] = set()
        current: KaiQueue | None = queue
        while current is not None and current.name not in seen:
            seen.add(current.name)
            yield current
            current = self.queues.get(current.parent) if current.parent is not None else None

    def refuse(self, pods: Sequence[Pod]) -> OverLimit | None:
        """KAI's limit check for one job (a pod, or a gang's members placed at once): None when it may be placed."""
        if not pods:
            return None
        queue = self.queue_of(pods[0])
        if queue is None:
            return None
        requested = sum(self.units(pod) for pod in pods)
        if requested == 0:
            return None
        for member in self.chain(queue):
            if member.limit != KAI_UNLIMITED and member.allocated + requested > member.limit:
                return OverLimit(member.name, over_limit_message(member, requested))
        return None

    def charge(self, job: Sequence[Pod]) -> None:
        """Count one placed job (a pod, or the pods of a gang placed together) in its queue and every parent. A job
        that leaves a queue past its quota runs over quota, every pod of it: KAI reclaims a gang whole."""
        queue = self.queue_of(job[0]) if job else None
        if queue is not None:
            self._charge(queue, job)

    def _charge(self, queue: KaiQueue, job: Sequence[Pod]) -> None:
        units = sum(self.units(pod) for pod in job)
        if units == 0:
            return
        self._charged.update((id(pod), (pod, queue)) for pod in job)
        marked = False
        for member in self.chain(queue):
            member.allocated += units
            if member.over() and not marked:
                member.over_quota.extend(job)
                marked = True

    def charge_running(self, pod: Pod, pool: str | None) -> None:
        """Count a pod a cluster snapshot shows running on a node of `pool`. The snapshot does not say which scheduler
        bound it; a GPU pod in a KAI tenant's namespace is KAI's (gpustack's admission policy refuses any other), in
        its namespace's leaf in the shard of the pool it runs on."""
        queue = self.queue_of(pod)
        name = self.by_namespace.get((pod.namespace, pool)) if queue is None and pool is not None else None
        name = queue.name if queue is not None else name
        if name is not None and name in self.queues:
            self._charge(self.queues[name], [pod])

    def release(self, pods: Iterable[Pod]) -> None:
        """Stop counting pods that no longer run (preempted)."""
        for pod in pods:
            charged = self._charged.pop(id(pod), None)
            if charged is None or charged[0] is not pod:
                continue
            queue, units = charged[1], self.units(pod)
            for member in self.chain(queue):
                member.allocated -= units
                member.over_quota[:] = [p for p in member.over_quota if p is not pod]


def over_limit_message(queue: KaiQueue, requested: int) -> str:
    """GetJobOverMaxAllowedMessageForQueue for the gpu resource, word for word (see the module's docstring)."""
    return (
        f"{queue.name} quota has reached the allowable limit of GPUs. Limit is {humanize(queue.limit)} GPUs, "
        f"currently {humanize(queue.allocated)} GPUs allocated and workload requested {humanize(requested)} GPUs"
    )


def humanize(value: int | Decimal) -> str:
    """KAI's HumanizeResource(v, 1): humanize.FtoaWithDigits(v, 3), and "Unlimited" for -1."""
    if value == KAI_UNLIMITED:
        return "Unlimited"
    text = f"{Decimal(value).quantize(Decimal('0.001')):f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def kai_queues(context: Context, objects: Iterable[Mapping[str, Any]]) -> KaiQueues | None:
    """The compiled Queues and which pods go to which leaf; None when no tenant uses KAI (nothing to judge)."""
    tenants = kai_tenants(context)
    if not tenants:
        return None
    queues: dict[str, KaiQueue] = {}
    by_workload: dict[tuple[str, str], str] = {}
    for obj in objects:
        kind, metadata = obj.get("kind"), obj.get("metadata") or {}
        if kind == "Queue" and str(obj.get("apiVersion", "")) == QUEUE_API_VERSION:
            queue = read_queue(obj)
            queues[queue.name] = queue
        elif kind in WORKLOAD_KINDS:
            label = _queue_label(obj.get("spec"))
            workload = (metadata.get("labels") or {}).get(WORKLOAD_LABEL, metadata.get("name"))
            if label is not None and workload is not None:
                by_workload.setdefault((str(workload), str(metadata.get("namespace", "default"))), label)
    by_namespace = {
        (ns, pool): kai_leaf_queue(tenant, ns, pool)
        for tenant in tenants
        for ns in tenant.namespaces
        for pool in tenant.pools
    }
    only_pool = {ns: tenant.pools[0] for tenant in tenants if len(tenant.pools) == 1 for ns in tenant.namespaces}
    return KaiQueues(queues, by_workload, by_namespace, only_pool)


def selected_pool(shape: PodShape) -> str | None:
    """The one pool a pod's nodeSelector or required node affinity names by gpustack's pool label (the shard KAI
    would take it in); None where it names none, or several."""
    named = {value for key, value in shape.node_selector if key == POOL_LABEL}
    for term in shape.required or ():
        for requirement in term.requirements:
            if requirement.key == POOL_LABEL and requirement.operator == "In" and not requirement.field:
                named.update(requirement.values)
    return named.pop() if len(named) == 1 else None


def read_queue(obj: Mapping[str, Any]) -> KaiQueue:
    """A compiled Queue's gpu figures; a figure the object does not give is KAI's default, -1 (unlimited)."""
    spec = obj.get("spec") or {}
    gpu = (spec.get("resources") or {}).get("gpu") or {}
    parent = spec.get("parentQueue")
    return KaiQueue(
        str(obj["metadata"]["name"]),
        str(parent) if parent else None,
        int(gpu.get("quota", KAI_UNLIMITED)),
        int(gpu.get("limit", KAI_UNLIMITED)),
        int(gpu.get("overQuotaWeight", 1)),
    )


def _queue_label(node: Any) -> str | None:
    """The first `kai.scheduler/queue` label on a pod template inside a workload's spec (every template of a gpustack
    workload names the same leaf)."""
    if isinstance(node, Mapping):
        labels = (node.get("metadata") or {}).get("labels") if isinstance(node.get("metadata"), Mapping) else None
        if isinstance(labels, Mapping) and isinstance(labels.get(KAI_QUEUE_LABEL), str):
            return str(labels[KAI_QUEUE_LABEL])
        for value in node.values():
            found = _queue_label(value)
            if found is not None:
                return found
    elif isinstance(node, list):
        for value in node:
            found = _queue_label(value)
            if found is not None:
                return found
    return None

"""Risks to KAI tenants' running jobs: a Queue cut below what runs in it, a Queue removed or renamed, a tenant
moved off KAI.

"Running" is what the old version put on the cluster: its workloads with every pod running, counted in KAI's GPU units
(a whole GPU 1, a MIG device its compute slices) in the leaf Queue of their namespace and in every Queue above it.
Both sides' figures are the Queues each side's Plan holds (scheduling.run.ai/v2), never worked out again.

What KAI does with a cut (kai-scheduler/KAI-Scheduler, pkg/scheduler/plugins/proportion/capacity_policy): a job is
placed only while `Allocated + requested <= MaxAllowed` (the `limit`) for its queue and each parent, so what ends,
restarts or rolls beyond a lowered limit is not placed again (`OverLimit`); what runs beyond a lowered `quota` is over
quota, which KAI reclaims for queues under theirs. KAI v0.17 lets such an update through (a queue webhook that would
refuse or warn on it is proposed upstream: kai-scheduler/KAI-Scheduler pull request 1810, open). A PodGroup whose
queue is gone is unschedulable (`QueueDoesNotExist`), and gpustack's admission policy refuses a pod naming a leaf its
tenant no longer has.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from gpustack.model import Scheduler
from gpustack.names import TENANT_LABEL
from gpustack.review.risk import Level, Risk
from gpustack.review.risks.wording import plural, quoted, sorted_names
from gpustack.review.snapshot import Snapshot
from gpustack.schedulers import KAI_QUEUE_LABEL, KAI_UNLIMITED, kai_gpu_units

QUEUE_API_VERSION = "scheduling.run.ai/v2"
CODE = "kai-queue-stranded"


@dataclass(frozen=True)
class Queue:
    """A compiled Queue's gpu figures in KAI's units (-1: unlimited), its tenant and the queue above it."""

    name: str
    tenant: str | None  # None: a cohort's Queue, above tenants' parents
    parent: str | None
    quota: int
    limit: int


@dataclass(frozen=True)
class Job:
    """One of the old side's workloads, as its KAI queue counts it."""

    workload: str
    tenant: str
    leaf: str
    pods: int
    units: int  # all its pods, in KAI's GPU units


def kai_queue_stranded(before: Snapshot, after: Snapshot) -> list[Risk]:
    """A KAI tenant's Queue is cut below, removed from under or taken away from the jobs the old version runs in it."""
    old = _queues(before)
    if not old or before.context is None:
        return []
    new = _queues(after)
    jobs = list(_jobs(before, old))
    risks: list[Risk] = []
    moved = set()
    for tenant in sorted({q.tenant for q in old.values() if q.tenant is not None}):
        staying = after.tenants.get(tenant)
        mine = [job for job in jobs if job.tenant == tenant and job.units]
        if staying is not None and staying.scheduler is not Scheduler.KAI and mine:
            moved.add(tenant)
            risks.append(_moved_off(tenant, str(staying.scheduler), old, mine))
    for name, queue in sorted(old.items()):
        # A removed tenant is tenant-access-lost's to report (its namespaces and grants go with its queues).
        if queue.tenant is None or queue.tenant in moved or queue.tenant not in after.tenants:
            continue
        inside = [job for job in jobs if name in _chain(old, job.leaf)]
        running = sum(job.units for job in inside)
        if running == 0:
            continue
        replaced = new.get(name)
        if replaced is None:
            risks.append(_removed(queue, inside, running))
        elif _cut(queue.limit, replaced.limit) and replaced.limit < running:
            risks.append(_limit_cut(queue, replaced, inside, running))
        elif _cut(queue.quota, replaced.quota) and replaced.quota < running:
            risks.append(_quota_cut(queue, replaced, inside, running))
    return risks


def _cut(was: int, now: int) -> bool:
    """Whether a figure goes down (-1, unlimited, is above every number)."""
    return now != KAI_UNLIMITED and (was == KAI_UNLIMITED or now < was)


def _figure(value: int) -> str:
    return "no limit" if value == KAI_UNLIMITED else f"{value}"


def _holding(jobs: list[Job]) -> str:
    """'job 'a' holds' or 'jobs 'a', 'b' hold'."""
    names = quoted(j.workload for j in jobs)
    return f"job {names} holds" if len(jobs) == 1 else f"jobs {names} hold"


def _details(jobs: list[Job]) -> tuple[str, ...]:
    return tuple(
        f"{job.workload}: {plural(job.pods, 'pod')}, {job.units} GPU units in queue '{job.leaf}'" for job in jobs
    )


def _removed(queue: Queue, jobs: list[Job], running: int) -> Risk:
    return Risk(
        CODE,
        Level.HIGH,
        f"KAI queue '{queue.name}' of tenant '{queue.tenant}' removed or renamed while {running} GPU units run in it",
        f"{'Job' if len(jobs) == 1 else 'Jobs'} {quoted(j.workload for j in jobs)} run in it. Their PodGroups name "
        "a queue that no longer exists, so "
        "a pod that ends, restarts or is rescheduled is not placed again (KAI: QueueDoesNotExist), and the "
        "tenant's admission policy refuses new pods that name it.",
        "Move the jobs to the new queue (roll them in the same change) or keep the queue until they have finished.",
        workloads=sorted_names(j.workload for j in jobs),
        tenants=(str(queue.tenant),),
        details=_details(jobs),
    )


def _limit_cut(queue: Queue, new: Queue, jobs: list[Job], running: int) -> Risk:
    return Risk(
        CODE,
        Level.MEDIUM,
        f"KAI queue '{queue.name}' limit cut to {new.limit} GPU units, below the {running} its running jobs hold",
        f"The queue's gpu limit goes from {_figure(queue.limit)} to {new.limit} while {_holding(jobs)} {running} "
        "units in it. KAI places a job only while the queue stays within its limit, so of the pods that end, restart "
        f"or roll, {running - new.limit} units' worth are not placed again "
        f"(OverLimit: '{queue.name} quota has reached the allowable limit of GPUs').",
        f"Scale the jobs down to {new.limit} units first, or cut the tenant's quota once they have finished.",
        workloads=sorted_names(j.workload for j in jobs),
        tenants=(str(queue.tenant),),
        details=_details(jobs),
    )


def _quota_cut(queue: Queue, new: Queue, jobs: list[Job], running: int) -> Risk:
    return Risk(
        CODE,
        Level.LOW,
        f"KAI queue '{queue.name}' quota cut to {new.quota} GPU units, below the {running} its running jobs hold",
        f"The queue's guaranteed gpu quota goes from {_figure(queue.quota)} to {new.quota} while {_holding(jobs)} "
        f"{running} units in it: {running - new.quota} of them run over quota, and KAI reclaims (evicts) over-quota "
        "pods when another queue needs its own quota back.",
        "Scale the jobs down first if they must not be reclaimed.",
        workloads=sorted_names(j.workload for j in jobs),
        tenants=(str(queue.tenant),),
        details=_details(jobs),
    )


def _moved_off(tenant: str, scheduler: str, old: dict[str, Queue], jobs: list[Job]) -> Risk:
    queues = sorted(name for name, q in old.items() if q.tenant == tenant)
    running = sum(job.units for job in jobs)
    return Risk(
        CODE,
        Level.HIGH,
        f"Tenant '{tenant}' moves off KAI to {scheduler} while {running} GPU units run in its queues",
        f"Its KAI queues {quoted(queues)} go, and {'job' if len(jobs) == 1 else 'jobs'} "
        f"{quoted(j.workload for j in jobs)} run in them under kai-scheduler. Their pods are re-created under the "
        "new scheduler as each workload rolls; until then a pod of the old version that ends or restarts names a "
        "queue that no longer exists and is not placed again.",
        "Roll the tenant's workloads in the same change, with room for both versions, or drain them first.",
        workloads=sorted_names(j.workload for j in jobs),
        tenants=(tenant,),
        details=_details(jobs),
    )


def _queues(side: Snapshot) -> dict[str, Queue]:
    """The side's KAI Queues, read from its Plan."""
    if side.context is None:
        return {}
    out = {}
    for manifest in side.plan.objects:
        obj = manifest.obj
        if manifest.kind != "Queue" or obj.get("apiVersion") != QUEUE_API_VERSION:
            continue
        spec = obj.get("spec") or {}
        gpu = (spec.get("resources") or {}).get("gpu") or {}
        tenant = (obj["metadata"].get("labels") or {}).get(TENANT_LABEL)
        parent = spec.get("parentQueue")
        out[manifest.name] = Queue(
            manifest.name,
            None if tenant is None else str(tenant),
            None if parent is None else str(parent),
            int(gpu.get("quota", KAI_UNLIMITED)),
            int(gpu.get("limit", KAI_UNLIMITED)),
        )
    return out


def _jobs(side: Snapshot, queues: dict[str, Queue]) -> Iterator[Job]:
    """The side's KAI workloads: the leaf their compiled pod template names, and their GPU units with every pod up."""
    leaves = _leaf_labels(side)
    for name, workload in sorted(side.workloads.items()):
        leaf = leaves.get(name)
        requests = side.requests(name)
        if leaf is None or leaf not in queues or requests is None:
            continue
        per_pod = sum(n * (kai_gpu_units(resource) or 0) for resource, n in requests.items)
        yield Job(name, workload.tenant, leaf, workload.pods, per_pod * workload.pods)


def _leaf_labels(side: Snapshot) -> dict[str, str]:
    """Workload name -> the `kai.scheduler/queue` label on its compiled pod template."""
    out: dict[str, str] = {}
    for manifest in side.plan.objects:
        if manifest.name in side.workloads and manifest.name not in out:
            label = _find_label(manifest.obj)
            if label is not None:
                out[manifest.name] = label
    return out


def _find_label(node: object) -> str | None:
    if isinstance(node, dict):
        labels = node.get("labels")
        if isinstance(labels, dict) and isinstance(labels.get(KAI_QUEUE_LABEL), str):
            return str(labels[KAI_QUEUE_LABEL])
        for value in node.values():
            found = _find_label(value)
            if found is not None:
                return found
    elif isinstance(node, list):
        for value in node:
            found = _find_label(value)
            if found is not None:
                return found
    return None


def _chain(queues: dict[str, Queue], leaf: str) -> list[str]:
    """The leaf and every Queue above it."""
    out: list[str] = []
    current: str | None = leaf
    while current is not None and current in queues and current not in out:
        out.append(current)
        current = queues[current].parent
    return out

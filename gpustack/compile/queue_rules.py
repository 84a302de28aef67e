"""Volcano queues as CEL (N3): a tenant's Volcano Jobs, PodGroups and pods stay in its own queue.

A Volcano tenant's queue (compile/volcano.py) carries the blueprint's weight, reclaimable flag and capability. A job
in another tenant's queue is scheduled on that tenant's share and capability; one in Volcano's own `default` queue
(no capability, reclaimable, shared by every workload outside gpustack's tenants) escapes its own. Where Volcano
decides a job's queue, and what the policies read:

- a Volcano Job names its queue in `spec.queue`; Volcano's admission webhook fills an empty one with `default`
  before any validating policy runs, so the policy sees `default` and refuses it;
- a PodGroup names its queue in `spec.queue`. Every Volcano-scheduled pod runs in one: the Job controller makes the
  Job's, and Volcano's PodGroup controller makes one for a pod outside a Job, in the queue of the pod's
  `scheduling.volcano.sh/queue-name` annotation or else `default`. PodGroups are created in the pod's namespace, so
  the tenant's policy sees every one of them, whoever creates it: this is the guarantee;
- the annotation, on a pod, a pod template, or the object itself (Volcano's PodGroup controller can inherit an
  owner's annotations), is checked too, so a wrong queue is refused when the workload is applied.

A tenant may name only its own queue; namespaces without a tenant may name any queue but a tenant's. An empty
queue counts as `default`, as Volcano reads it.
"""

from __future__ import annotations

from gpustack.compile.cel import Cel, build_message, build_validation, declare, quote_cel, quote_cel_list
from gpustack.names import VOLCANO_DEFAULT_QUEUE, VOLCANO_QUEUE_ANNOTATION

_TEMPLATE = "has({path}) && has({path}.metadata) ? [{path}.metadata] : []"

# Every metadata a queue annotation can sit on: the object's own, and each (job and pod) template's.
QUEUE_METADATA = f"""\
[object.metadata] + (
  request.resource.resource == 'pods' ? [] : (
  request.resource.resource == 'cronjobs' ? (
    ({_TEMPLATE.format(path="object.spec.jobTemplate")})
    + (has(object.spec.jobTemplate.spec) ? ({_TEMPLATE.format(path="object.spec.jobTemplate.spec.template")}) : [])
  ) : (
  request.resource.group == 'batch.volcano.sh' ? (
    has(object.spec.tasks)
      ? object.spec.tasks.filter(t, has(t.template) && has(t.template.metadata)).map(t, t.template.metadata)
      : []
  ) : (
  request.resource.group == 'jobset.x-k8s.io' ? (
    has(object.spec.replicatedJobs)
      ? object.spec.replicatedJobs.filter(r, has(r.template) && has(r.template.metadata)).map(r, r.template.metadata)
        + object.spec.replicatedJobs.filter(r, has(r.template) && has(r.template.spec)
            && has(r.template.spec.template) && has(r.template.spec.template.metadata))
          .map(r, r.template.spec.template.metadata)
      : []
  ) : (
  request.resource.group == 'leaderworkerset.x-k8s.io' ? (
    has(object.spec.leaderWorkerTemplate) ? (
      ({_TEMPLATE.format(path="object.spec.leaderWorkerTemplate.leaderTemplate")})
      + ({_TEMPLATE.format(path="object.spec.leaderWorkerTemplate.workerTemplate")})
    ) : []
  ) : (
    {_TEMPLATE.format(path="object.spec.template")}
  )))))
)"""

# The queues the object names (an empty name is Volcano's default queue): its Job's or PodGroup's `spec.queue`, and
# every queue annotation. A Job or PodGroup without the field names none here: Volcano's webhook writes `default`
# into it before the policy runs.
_ANNOTATION = quote_cel(VOLCANO_QUEUE_ANNOTATION)
_DEFAULT = quote_cel(VOLCANO_DEFAULT_QUEUE)
NAMED_QUEUES = f"""\
(
  variables.queueMetadata.filter(m, has(m.annotations) && {_ANNOTATION} in m.annotations)
    .map(m, m.annotations[{_ANNOTATION}])
  + ((request.resource.group == 'batch.volcano.sh' || request.resource.group == 'scheduling.volcano.sh')
      && has(object.spec.queue) ? [object.spec.queue] : [])
).map(q, q == '' ? {_DEFAULT} : q)"""

VOLCANO_OBJECTS = (
    "its Volcano Jobs (spec.queue), PodGroups (spec.queue) and pods (the scheduling.volcano.sh/queue-name annotation)"
)


def add_own_queue_rule(
    words: str, who: Cel, queues: tuple[str, ...], variables: list[dict[str, str]], validations: list[dict[str, str]]
) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """A Volcano tenant's policy: every queue its objects name is its own (`default` is not)."""
    own = ", ".join(queues)
    variables = [
        *variables,
        declare("queueMetadata", QUEUE_METADATA),
        declare("namedQueues", NAMED_QUEUES),
        declare("queues", quote_cel_list(queues)),
        declare("foreignQueues", "variables.namedQueues.filter(q, !(q in variables.queues))"),
    ]
    why = (
        f"{VOLCANO_OBJECTS} may name only its own queue {own}: in another tenant's queue a job runs on that "
        f"tenant's share and capability, in Volcano's {VOLCANO_DEFAULT_QUEUE} queue (where an empty queue goes) "
        "outside its own"
    )
    validation = build_validation(
        "size(variables.foreignQueues) == 0",
        f"{words}: {why}",
        build_message(who, " may not use Volcano queue ", Cel("variables.foreignQueues[0]"), f": {why}"),
    )
    return variables, [*validations, validation]


def add_reserved_queues_rule(
    queues: tuple[str, ...],
    nobody: tuple[str | Cel, ...],
    variables: list[dict[str, str]],
    validations: list[dict[str, str]],
    scheduler: str = "Volcano",
    named_queues: str = NAMED_QUEUES,
    held: str = "shares and capabilities",
) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """Namespaces without a tenant: no queue of a tenant's (Volcano's, or KAI's with its own `named_queues`).

    The CEL variables take the scheduler's name as a prefix after the first (`queueMetadata`, `kaiQueueMetadata`),
    so a policy holding both rules declares each once.
    """
    names = ", ".join(queues)
    prefix = "" if scheduler == "Volcano" else scheduler.lower()

    def var(name: str) -> str:
        return f"{prefix}{name[0].upper()}{name[1:]}" if prefix else name

    variables = [
        *variables,
        declare(var("queueMetadata"), QUEUE_METADATA),
        declare(var("namedQueues"), named_queues),
        declare(var("tenantQueues"), quote_cel_list(queues)),
        declare(var("takenQueues"), f"variables.{var('namedQueues')}.filter(q, q in variables.{var('tenantQueues')})"),
    ]
    why = f"the {scheduler} queues of tenants ({names}) schedule only their tenants' jobs, on their {held}"
    validation = build_validation(
        f"size(variables.{var('takenQueues')}) == 0",
        f"a namespace without a tenant may not name a tenant's {scheduler} queue: {why}",
        build_message(
            *nobody, f"it may not use {scheduler} queue ", Cel(f"variables.{var('takenQueues')}[0]"), f": {why}"
        ),
    )
    return variables, [*validations, validation]

"""KAI Scheduler queues as CEL: a KAI tenant's pods and PodGroups stay in its own leaf Queues.

KAI lets any pod name any Queue (KAI issue #2068): the `kai.scheduler/queue` label is read by its pod grouper,
which puts the pod in a PodGroup of that queue, and a PodGroup's `spec.queue` is what KAI schedules by. A pod in
another tenant's leaf runs on that tenant's quota; one in the chart's `default-queue` (where a pod naming no queue
goes) is capped by nothing. Where KAI decides a pod's queue, and what the policies read:

- a PodGroup names its queue in `spec.queue`. Every KAI-scheduled pod runs in one: the pod grouper makes it in the
  pod's namespace (or the user does, and joins pods to it by the `pod-group-name` annotation), so the tenant's policy
  sees every one of them, whoever creates it: this is the guarantee;
- the label, on a pod, a pod template, or the workload object (the pod grouper reads the top owner's label first),
  is checked too, so a wrong queue is refused when the workload is applied; a pod KAI schedules must carry it,
  naming one of the tenant's own leaves;
- a pod that asks for GPUs must be KAI's: on kube-scheduler it would use them outside every queue (the namespace's
  ResourceQuota still caps it). The tenant's pods that ask for no GPU may stay on kube-scheduler, and no other
  scheduler is allowed (the tenant's scheduler list, admission.py);
- each pool is a KAI shard that reads only what carries the pool's label (compile/kai.py), and its leaves sit in
  that shard: an object that names a leaf must carry the leaf's pool label itself (a PodGroup is the shard's by its
  own label, which the pod grouper copies from the workload object). The shard's scheduler sees only its pool's
  nodes and Queues, so a job in a leaf is charged to that pool's Queue and placed on that pool's nodes alone: the
  label is what keeps a tenant's per-pool limit, and a mismatch is refused rather than left pending.

Namespaces without a tenant may name any queue but a tenant's (leaf or parent).
"""

from __future__ import annotations

from collections.abc import Mapping

from gpustack.compile.cel import Cel, build_message, build_validation, declare, quote_cel, quote_cel_list
from gpustack.compile.queue_rules import QUEUE_METADATA, add_reserved_queues_rule
from gpustack.plan import Object
from gpustack.schedulers import KAI_FRACTION_ANNOTATIONS, KAI_NODE_POOL_LABEL, KAI_QUEUE_LABEL, KAI_SCHEDULER

PODGROUP_GROUP = "scheduling.run.ai"
PODGROUP_RULE = {
    "apiGroups": [PODGROUP_GROUP],
    "apiVersions": ["v2alpha2"],
    "operations": ["CREATE", "UPDATE"],
    "resources": ["podgroups"],
}

_LABEL = quote_cel(KAI_QUEUE_LABEL)
_GROUP = quote_cel(PODGROUP_GROUP)
# The queues the object names: every queue label (object and templates), and a KAI PodGroup's spec.queue.
NAMED_QUEUES = f"""\
variables.kaiQueueMetadata.filter(m, has(m.labels) && {_LABEL} in m.labels).map(m, m.labels[{_LABEL}])
+ (request.resource.group == {_GROUP} && has(object.spec.queue) ? [object.spec.queue] : [])"""
_SCHEDULER = quote_cel(KAI_SCHEDULER)
# A pod KAI schedules, or a KAI PodGroup, that names no queue: KAI would put it in the chart's default-queue.
NAMES_NO_QUEUE = f"""\
(request.resource.resource == 'pods' && has(object.spec.schedulerName) && object.spec.schedulerName == {_SCHEDULER}
  && !(has(object.metadata.labels) && {_LABEL} in object.metadata.labels))
|| (request.resource.group == {_GROUP} && !(has(object.spec.queue) && object.spec.queue != ''))"""
# A pod spec that asks for GPUs (the device rules' `requestsAnyGpu`) and is not KAI's.
GPU_OFF_KAI = f"""\
variables.requestsAnyGpu
&& variables.specs.exists(s, !has(s.schedulerName) || s.schedulerName != {_SCHEDULER})"""

ASKS_FOR_A_FRACTION = f"""\
variables.kaiQueueMetadata.exists(m, has(m.annotations)
  && {quote_cel_list(KAI_FRACTION_ANNOTATIONS)}.exists(a, a in m.annotations))"""
_POOL = quote_cel(KAI_NODE_POOL_LABEL)
# The object's own pool label ('' without one): what puts it, or the PodGroup made from it, in a pool's shard.
OBJECT_POOL = f"""\
has(object.metadata.labels) && {_POOL} in object.metadata.labels ? object.metadata.labels[{_POOL}] : ''"""

KAI_OBJECTS = f"its pods (the {KAI_QUEUE_LABEL} label, on the pod or a pod template) and KAI PodGroups (spec.queue)"


def add_podgroup_rule(policy: Object) -> Object:
    """Match KAI's PodGroups too (only where a blueprint has KAI tenants: no other policy changes).

    The policy's match constraints are new ones: those it was built with are every policy's (cel.shared_part)."""
    spec = policy["spec"]
    rules = spec["matchConstraints"]["resourceRules"]
    if PODGROUP_RULE not in rules:
        spec["matchConstraints"] = {**spec["matchConstraints"], "resourceRules": [*rules, dict(PODGROUP_RULE)]}
    return policy


def add_own_kai_queue_rule(
    words: str,
    who: Cel,
    leaves: Mapping[str, str],
    variables: list[dict[str, str]],
    validations: list[dict[str, str]],
) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """A KAI tenant's policy: every queue its objects name is one of its leaves (leaf -> its pool's shard), an object
    naming a leaf carries that pool's label, every KAI pod names a leaf, and every GPU pod is KAI's. Needs the device
    rules' `specs` and `requestsAnyGpu` variables (admission.py declares them)."""
    own = ", ".join(leaves)
    pool_of = "{" + ", ".join(f"{quote_cel(leaf)}: {quote_cel(pool)}" for leaf, pool in leaves.items()) + "}"
    variables = [
        *variables,
        declare("kaiQueueMetadata", QUEUE_METADATA),
        declare("kaiNamedQueues", NAMED_QUEUES),
        declare("kaiQueues", quote_cel_list(leaves)),
        declare("foreignKaiQueues", "variables.kaiNamedQueues.filter(q, !(q in variables.kaiQueues))"),
        declare("kaiLeafPools", pool_of),
        declare("kaiObjectPool", OBJECT_POOL),
        declare(
            "kaiOtherShard",
            "variables.kaiNamedQueues.filter(q, q in variables.kaiLeafPools "
            "&& variables.kaiLeafPools[q] != variables.kaiObjectPool)",
        ),
    ]
    why = (
        f"{KAI_OBJECTS} may name only its own leaf queues {own}: in another tenant's queue a job runs on that "
        "tenant's quota, in KAI's default-queue or a parent queue outside its own"
    )
    missing = (
        f"{KAI_OBJECTS} must name one of its leaf queues {own}: without one KAI puts the pod in its default-queue, "
        "outside the tenant's quota"
    )
    off_kai = (
        f"a pod that asks for GPUs must set schedulerName: {KAI_SCHEDULER}: on another scheduler it would use them "
        "outside the tenant's KAI queues"
    )
    fraction = (
        f"its pods may not ask KAI for a share of a GPU ({', '.join(KAI_FRACTION_ANNOTATIONS)} annotations): KAI "
        "would hand the pod its GPU as NVIDIA_VISIBLE_DEVICES from a ConfigMap the tenant can write, with no memory "
        "isolation from the pods of other namespaces on the device; share a pool's GPUs by its time-slicing or MIG"
    )
    shard = (
        f"an object that names a KAI leaf queue must carry that queue's pool in its own {KAI_NODE_POOL_LABEL} label: "
        "each pool is a KAI shard that reads only objects labelled with it (a PodGroup takes the workload object's "
        "labels), and holds the tenant's quota on that pool"
    )
    return variables, [
        *validations,
        build_validation(
            "size(variables.foreignKaiQueues) == 0",
            f"{words}: {why}",
            build_message(who, " may not use KAI queue ", Cel("variables.foreignKaiQueues[0]"), f": {why}"),
        ),
        build_validation(f"!({NAMES_NO_QUEUE})", f"{words}: {missing}", build_message(who, f": {missing}")),
        build_validation(f"!({GPU_OFF_KAI})", f"{words}: {off_kai}", build_message(who, f": {off_kai}")),
        build_validation(f"!({ASKS_FOR_A_FRACTION})", f"{words}: {fraction}", build_message(who, f": {fraction}")),
        build_validation(
            "size(variables.kaiOtherShard) == 0",
            f"{words}: {shard}",
            build_message(
                *(who, ": KAI queue ", Cel("variables.kaiOtherShard[0]"), " is in the shard of pool "),
                Cel("variables.kaiLeafPools[variables.kaiOtherShard[0]]"),
                f", but the object's {KAI_NODE_POOL_LABEL} label is '",
                Cel("variables.kaiObjectPool"),
                f"': {shard}",
            ),
        ),
    ]


def add_tenant_kai_queues_rule(
    queues: tuple[str, ...],
    nobody: tuple[str | Cel, ...],
    variables: list[dict[str, str]],
    validations: list[dict[str, str]],
) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """Namespaces without a tenant: no KAI queue of a tenant's."""
    return add_reserved_queues_rule(queues, nobody, variables, validations, "KAI", NAMED_QUEUES, "quotas")

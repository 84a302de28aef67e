"""Tenant isolation that holds: ValidatingAdmissionPolicies that keep each tenant's pods on the pools it is granted.

Taints and tolerations keep polite pods in their lane, but any pod can copy a toleration. These policies
check every pod, and the pod templates of the workload kinds that create pods, at admission:

- one policy per tenant, bound to the tenant's namespaces BY NAME (the `kubernetes.io/metadata.name` label,
  which the API server sets and nobody can change), so a tenant that can edit its namespace's labels can neither
  step out of its policy nor into another tenant's grants. On the keys pool taints use, its pods may tolerate only
  the taints of its pools; they may not use a wildcard toleration; on the node label keys pools use, they may select
  (nodeSelector, or `In` in required node affinity) only values its pools carry; they may not set `spec.nodeName`,
  and may name only its schedulers. Both are allow-lists: the policy lists the tenant's own pools and the distinct
  keys, never the other pools, so its size does not grow with the cluster (a value no pool has is refused too);
- one policy for namespaces labelled with a tenant the blueprint does not have (a removed tenant's namespace, a
  typo): the same rules with nothing granted;
- one policy for every other namespace but the system ones: no toleration of a granted pool's taint (a pool
  granted to any tenant, shared or not: a namespace without a tenant has no grant, and would skip Kueue and quota),
  and no wildcard toleration on a pod that asks for a granted pool's GPUs. Pools granted to no tenant stay open.

The per-tenant facts (its taints, labels, schedulers) are written into each policy as CEL literals in `variables`;
the validations read only those variables, so every tenant's policy has the same rules (less any that cannot fail
for it) and a reviewer diffs grants, not logic. Expressions stay within portable CEL (no Kubernetes extension
libraries, no optional types, no trailing commas), so the tests evaluate every one of them with cel-python. Pod
validation is the guarantee (every controller creates pods through the API); the templates are checked too, so a
bad Deployment is refused when it is applied, not when its pods fail to appear. docs/admission.md says what is
enforced and what is not.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpustack.context import Context
from gpustack.model import NodePool, Scheduler, SharingStrategy, Taint, Tenant
from gpustack.names import (
    ADMISSION_POLICY_MINOR,
    DEVICE_ENV,
    DEVICE_MOUNT_ROOT,
    GPU_ONLY_ENV,
    MANAGED_BY,
    TENANT_LABEL,
    VOLCANO_SCHEDULER,
)
from gpustack.plan import FamilyOutput, Manifest, Object
from gpustack.selection import identifying_labels
from gpustack.taints import taint_text
from gpustack.workload_templates import allowed_priority_classes

FAMILY = "admission"
FILE = "admission/tenant-isolation.yaml"
API_VERSION = "admissionregistration.k8s.io/v1"
NAME_PREFIX = "gpustack-"
UNKNOWN_TENANT_POLICY = "gpustack-unknown-tenant"
NON_TENANT_POLICY = "gpustack-granted-pools"
# Set by the API server on every namespace since 1.21 and immutable: a selector on it cannot be forged.
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
HOSTNAME_LABEL = "kubernetes.io/hostname"  # the kubelet sets it to the node name unless --hostname-override says else
DEFAULT_SCHEDULER = "default-scheduler"
REASON = "Forbidden"
OPERATIONS = ["CREATE", "UPDATE"]
# Every kind whose objects carry pod specs. Pods are the guarantee; the others fail early and clearly.
RESOURCE_RULES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("", "v1", ("pods", "replicationcontrollers")),
    ("apps", "v1", ("daemonsets", "deployments", "replicasets", "statefulsets")),
    ("batch", "v1", ("cronjobs", "jobs")),
    ("batch.volcano.sh", "v1alpha1", ("jobs",)),
    ("jobset.x-k8s.io", "v1alpha2", ("jobsets",)),
    ("leaderworkerset.x-k8s.io", "v1", ("leaderworkersets",)),
)

# --- CEL, shared by every policy ------------------------------------------------------------------------------------

# An UPDATE that leaves `spec` alone (a controller removing its finalizer, a label change) is never refused, so objects
# admitted under an older blueprint can still be cleaned up; one that changes the spec is checked like a CREATE.
CREATED_OR_SPEC_CHANGED = "request.operation == 'CREATE' || object.spec != oldObject.spec"

# The pod specs of the object, whatever its kind: the pod itself, a CronJob's job template, each Volcano task, each
# JobSet replicated job's, a LeaderWorkerSet's leader and worker templates.
POD_SPECS = """\
request.resource.resource == 'pods' ? [object.spec] : (
  request.resource.resource == 'cronjobs' ? [object.spec.jobTemplate.spec.template.spec] : (
    request.resource.group == 'batch.volcano.sh' ? (
      has(object.spec.tasks)
        ? object.spec.tasks.filter(t, has(t.template) && has(t.template.spec)).map(t, t.template.spec)
        : []
    ) : (
    request.resource.group == 'jobset.x-k8s.io' ? (
      has(object.spec.replicatedJobs)
        ? object.spec.replicatedJobs.filter(r, has(r.template) && has(r.template.spec)
            && has(r.template.spec.template) && has(r.template.spec.template.spec))
          .map(r, r.template.spec.template.spec)
        : []
    ) : (
    request.resource.group == 'leaderworkerset.x-k8s.io' ? (
      has(object.spec.leaderWorkerTemplate) ? (
        (has(object.spec.leaderWorkerTemplate.leaderTemplate)
          && has(object.spec.leaderWorkerTemplate.leaderTemplate.spec)
          ? [object.spec.leaderWorkerTemplate.leaderTemplate.spec] : [])
        + (has(object.spec.leaderWorkerTemplate.workerTemplate)
          && has(object.spec.leaderWorkerTemplate.workerTemplate.spec)
          ? [object.spec.leaderWorkerTemplate.workerTemplate.spec] : [])
      ) : []
    ) : (
      has(object.spec.template) && has(object.spec.template.spec) ? [object.spec.template.spec] : []
    )))
  )
)"""

# Per pod spec, the terms of its required node affinity (ORed by the scheduler; a term's expressions are ANDed).
REQUIRED_TERMS = """\
variables.specs.map(s,
  has(s.affinity) && has(s.affinity.nodeAffinity)
    && has(s.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution)
    && has(s.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms)
  ? s.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms
  : []
)"""

# Kubernetes' ToleratesTaint for a toleration `t` with a key and a taint record `f`: an empty effect matches every
# effect, Exists matches every value, Equal (the default operator) matches the taint's value ('' when it has none).
# Wildcard tolerations (no key) have their own rule, with their own message.
_TOLERATES = """\
has(t.key) && t.key == f.key
      && (!has(t.effect) || t.effect == '' || t.effect == f.effect)
      && ((has(t.operator) && t.operator == 'Exists') || (has(t.value) ? t.value : '') == f.value)"""


def _filter_tolerated(taints_variable: str) -> str:
    return f"""\
variables.{taints_variable}.filter(f,
  variables.specs.exists(s,
    has(s.tolerations) && s.tolerations.exists(t,
      {_TOLERATES}
    )
  )
)"""


# A tenant's toleration of a key some pool's taint uses is refused unless all it tolerates is its own pools' taints:
# Equal with an effect names one (key, value, effect), which must be one of its pools' taints; Equal without an effect
# tolerates every effect of (key, value), Exists every value (of one effect, or of all), so every pool taint of that
# kind must be its own. Keys no pool taint uses (node.kubernetes.io/not-ready...) stay open; wildcards have their own
# rule. The facts are the tenant's own taints and the distinct pool taint keys: the policy does not list other pools.
_EXISTS = "(has(t.operator) && t.operator == 'Exists')"
_HAS_EFFECT = "(has(t.effect) && t.effect != '')"
_VALUE = "(has(t.value) ? t.value : '')"
_REFUSED_TOLERATION = f"""\
has(t.key) && t.key in variables.poolTaintKeys && !(
        {_EXISTS}
          ? ({_HAS_EFFECT} ? t.key + ':' + t.effect in variables.ownKeyEffects : t.key in variables.ownKeys)
          : ({_HAS_EFFECT}
            ? t.key + '=' + {_VALUE} + ':' + t.effect in variables.ownTaints
            : t.key + '=' + {_VALUE} in variables.ownKeyValues)
      )"""
# How a refused toleration is named: as taint_text names a taint, with what it leaves open.
_DESCRIBE_TOLERATION = f"""\
t.key + ({_EXISTS} || {_VALUE} == '' ? '' : '=' + t.value) + ({_HAS_EFFECT} ? ':' + t.effect : '')
          + ({_EXISTS} ? ' (operator Exists: every value)' : '') + ({_HAS_EFFECT} ? '' : ' (every effect)')"""
REFUSED_TOLERATIONS = f"""\
variables.specs.map(s,
  has(s.tolerations)
    ? s.tolerations.filter(t,
      {_REFUSED_TOLERATION}
    ).map(t,
      {_DESCRIBE_TOLERATION}
    )
    : []
).filter(found, size(found) > 0)"""


NO_WILDCARD = "variables.specs.all(s, !has(s.tolerations) || s.tolerations.all(t, has(t.key) && t.key != ''))"


# The `key=value` pairs a pod spec names: its nodeSelector entries (one list per spec), and the values listed under
# `In` in its required terms, with matchFields `metadata.name In [...]` as the hostname label (one list per spec,
# term and expression: portable CEL has no flatten).
SELECTOR_PAIRS = "variables.specs.map(s, has(s.nodeSelector) ? s.nodeSelector.map(k, k + '=' + s.nodeSelector[k]) : [])"
REQUIRED_PAIRS = f"""\
variables.requiredTerms.map(terms, terms.map(term,
  (has(term.matchExpressions)
    ? term.matchExpressions.filter(e, e.operator == 'In' && has(e.values)).map(e, e.values.map(v, e.key + '=' + v))
    : [])
  + (has(term.matchFields)
    ? term.matchFields.filter(e, e.key == 'metadata.name' && e.operator == 'In' && has(e.values))
        .map(e, e.values.map(v, '{HOSTNAME_LABEL}=' + v))
    : [])
))"""


# A `key=value` pair is refused when its key is one pools' node labels use (gpustack.io/pool, the pools' own label
# keys, kubernetes.io/hostname) and the pair is not carried by one of the tenant's pools. Per spec, the refused pairs
# of its nodeSelector; per spec, term and expression, the refused values of its required terms (lists of lists:
# portable CEL has no flatten), empty lists dropped, so the first refused pair is at [0]...[0].
_REFUSED_PAIR = "variables.poolLabelKeys.exists(k, p.startsWith(k + '=')) && !(p in variables.ownLabels)"
REFUSED_SELECTOR_PAIRS = (
    f"variables.selectorPairs.map(pairs, pairs.filter(p, {_REFUSED_PAIR})).filter(found, size(found) > 0)"
)
REFUSED_REQUIRED_PAIRS = f"""\
variables.requiredPairs.map(terms,
  terms.map(expressions,
    expressions.map(pairs, pairs.filter(p, {_REFUSED_PAIR})).filter(found, size(found) > 0)
  ).filter(found, size(found) > 0)
).filter(found, size(found) > 0)"""
FIRST_REFUSED_PAIR = (
    "(size(variables.refusedSelectorPairs) > 0 ? variables.refusedSelectorPairs[0][0]"
    " : variables.refusedRequiredPairs[0][0][0][0])"
)


# A Volcano Job names its scheduler on the Job too; the controller copies it into the pods.
FOREIGN_SCHEDULERS = """\
(
  variables.specs.filter(s, has(s.schedulerName)).map(s, s.schedulerName)
  + (request.resource.group == 'batch.volcano.sh' && has(object.spec.schedulerName) ? [object.spec.schedulerName] : [])
).filter(name, !(name in variables.schedulers))"""

# nodeName is immutable on a pod and set by the scheduler's binding: only a CREATE can carry a user's choice. A
# template is checked on every change, since every pod it creates would carry it.
NO_NODE_NAME = """\
(request.resource.resource == 'pods' && request.operation != 'CREATE')
|| variables.specs.all(s, !has(s.nodeName) || s.nodeName == '')"""
PINNED_NODE = "variables.specs.filter(s, has(s.nodeName) && s.nodeName != '')[0].nodeName"

REQUESTS_GPU = """\
variables.specs.exists(s,
  (s.containers + (has(s.initContainers) ? s.initContainers : [])).exists(c,
    has(c.resources) && (
      (has(c.resources.requests) && c.resources.requests.exists(r, r in variables.gpuResources))
      || (has(c.resources.limits) && c.resources.limits.exists(r, r in variables.gpuResources))
    )
  )
)"""
WILDCARD_ON_GPU_POD = f"!variables.requestsGpu || {NO_WILDCARD}"

# Containers that can ask for devices: init containers run on the node with the same runtime. A quantity of "0" is
# what the namespace's LimitRange defaults every container to, so only a non-zero amount is a request.
_CONTAINERS = "(s.containers + (has(s.initContainers) ? s.initContainers : []))"
_NONZERO = "{side}.filter(r, r in variables.{names} && string({side}[r]) != '0')"


def _requested(names: str) -> str:
    """Per spec and container, the names of `names` it asks a non-zero amount of (empty lists dropped)."""
    requests = _NONZERO.format(side="c.resources.requests", names=names)
    limits = _NONZERO.format(side="c.resources.limits", names=names)
    return f"""\
variables.specs.map(s,
  {_CONTAINERS}.map(c,
    (has(c.resources) && has(c.resources.requests) ? {requests} : [])
    + (has(c.resources) && has(c.resources.limits) ? {limits} : [])
  ).filter(found, size(found) > 0)
).filter(found, size(found) > 0)"""


# Any NVIDIA resource at a non-zero amount: what decides whether driver-capability env has a use.
# A DRA pod's container gets its GPUs through `resources.claims` (its claims are held to granted classes by
# admission/dra-claims.yaml), so a claim counts as a GPU request too.
REQUESTS_ANY_GPU = f"""\
variables.specs.exists(s,
  {_CONTAINERS}.exists(c,
    has(c.resources) && (
      (has(c.resources.requests) && c.resources.requests.exists(r,
        r.startsWith('nvidia.com/') && string(c.resources.requests[r]) != '0'))
      || (has(c.resources.limits) && c.resources.limits.exists(r,
        r.startsWith('nvidia.com/') && string(c.resources.limits[r]) != '0'))
      || (has(c.resources.claims) && size(c.resources.claims) > 0)
    )
  )
)"""

# Env and mounts the NVIDIA container toolkit reads as a device request (H4): per spec and container, what it sets.
RUNTIME_REQUESTS = f"""\
variables.specs.map(s,
  {_CONTAINERS}.map(c,
    (has(c.env)
      ? c.env.filter(e, e.name in variables.deviceEnv || (!variables.requestsAnyGpu && e.name in variables.gpuOnlyEnv))
        .map(e, 'env ' + e.name)
      : [])
    + (has(c.volumeMounts)
      ? c.volumeMounts.filter(m, m.mountPath == variables.deviceMountRoot
          || m.mountPath.startsWith(variables.deviceMountRoot + '/')).map(m, 'a mount at ' + m.mountPath)
      : [])
  ).filter(found, size(found) > 0)
).filter(found, size(found) > 0)"""

PRIORITY_ALLOWED = """\
variables.specs.all(s, !has(s.priorityClassName) || s.priorityClassName == ''
  || s.priorityClassName in variables.priorityClasses)"""
REFUSED_PRIORITY = """\
variables.specs.filter(s, has(s.priorityClassName) && s.priorityClassName != ''
  && !(s.priorityClassName in variables.priorityClasses))[0].priorityClassName"""
NO_SYSTEM_PRIORITY_ON_GPU_POD = """\
!variables.requestsGpu
  || variables.specs.all(s, !has(s.priorityClassName) || !s.priorityClassName.startsWith('system-'))"""


def _count_more(variable: str, one: str, many: str) -> str:
    """A CEL suffix that counts the findings after the first one, which the message names."""
    count = f"size(variables.{variable}) - 1"
    return (
        f"(size(variables.{variable}) > 1 ? ' (and ' + string({count}) + ' more '"
        f" + ({count} == 1 ? {quote_cel(one)} : {quote_cel(many)}) + ')' : '')"
    )


# --- the facts each policy is written from --------------------------------------------------------------------------


@dataclass(frozen=True)
class Grants:
    """What the policy of one tenant (or of a tenant the blueprint does not know) lets its pods reach.

    Only its own pools' facts and the distinct keys pools use: never a list of the other pools, so a policy's size
    does not grow with the number of pools or tenants.
    """

    pools: tuple[str, ...]
    taint_keys: tuple[str, ...]  # every key a pool taint uses
    own_taints: tuple[str, ...]  # 'key=value:effect' of its pools' taints ('' for no value)
    own_taint_texts: tuple[str, ...]  # the same, as taint_text writes them, for messages
    own_key_values: tuple[str, ...]  # 'key=value' whose every pool taint (any effect) is its own
    own_key_effects: tuple[str, ...]  # 'key:effect' whose every pool taint (any value) is its own
    own_keys: tuple[str, ...]  # keys whose every pool taint is its own
    label_keys: tuple[str, ...]  # every node label key that names pools
    own_labels: tuple[str, ...]  # 'key=value' its pools' nodes carry
    schedulers: tuple[str, ...]
    foreign_resources: tuple[str, ...] = ()  # GPU resource names only pools it is not granted advertise
    priority_classes: tuple[str, ...] = ()  # the PriorityClasses its pods may name


@dataclass(frozen=True)
class PoolFacts:
    """The facts about every pool that the tenants' policies are written from, gathered once per blueprint."""

    taints: tuple[tuple[str, str, str], ...]  # distinct (key, value, effect), in blueprint order
    texts: Mapping[tuple[str, str, str], str]
    label_keys: tuple[str, ...]
    # Indexes for resolve_grants, so that each tenant costs its own pools rather than the fleet's.
    taint_keys: tuple[str, ...] = ()  # distinct taint keys, in blueprint order
    pool_order: Mapping[str, int] = field(default_factory=dict)  # pool name -> position in the blueprint
    # How many distinct taints share a key, a key and value, a key and effect: a tenant owns one of these when it
    # owns that many of them, found without walking the other pools' taints.
    taints_per: Mapping[tuple[str, ...], int] = field(default_factory=dict)


def gather_pool_facts(ctx: Context) -> PoolFacts:
    texts: dict[tuple[str, str, str], str] = {}
    for pool in ctx.blueprint.pools:
        for taint in pool.taints:
            texts.setdefault(_identify_taint(taint), taint_text(taint))
    label_keys = dict.fromkeys(key for pool in ctx.blueprint.pools for key, _ in collect_pool_labels(pool))
    order = {pool.name: index for index, pool in reversed(list(enumerate(ctx.blueprint.pools)))}
    return PoolFacts(
        tuple(texts),
        texts,
        tuple(label_keys),
        tuple(dict.fromkeys(key for key, _, _ in texts)),
        order,
        Counter(share for taint in texts for share in _taint_shares(taint)),
    )


def _taint_shares(taint: tuple[str, str, str]) -> tuple[tuple[str, ...], ...]:
    """The groups one toleration can cover that hold this taint: its key, its key and value, its key and effect."""
    key, value, effect = taint
    return ("key", key), ("value", key, value), ("effect", key, effect)


def _describe_owners(pools: Sequence[str]) -> str:
    return f"pool {pools[0]}" if len(pools) == 1 else f"pools {', '.join(pools[:-1])} and {pools[-1]}"


def _identify_taint(taint: Taint) -> tuple[str, str, str]:
    return (taint.key, taint.value or "", taint.effect)


def _collect_taints(
    pools: Iterable[NodePool], skip: set[tuple[str, str, str]]
) -> dict[tuple[str, str, str], tuple[str, list[str]]]:
    """Taint (key, value, effect) -> (display text, pool names carrying it), in blueprint order, minus `skip`."""
    found: dict[tuple[str, str, str], tuple[str, list[str]]] = {}
    for pool in pools:
        for taint in pool.taints:
            key = _identify_taint(taint)
            if key in skip:
                continue
            found.setdefault(key, (taint_text(taint), []))[1].append(pool.name)
    return found


def collect_pool_labels(pool: NodePool) -> list[tuple[str, str]]:
    """The node labels that name the pool: gpustack's pool label, a selector's values, the pool's own labels, its
    nodes' hostnames.

    Not the device-plugin and MIG config labels: they name a configuration that pools share, and the GPU Operator
    puts `nvidia.com/mig.config=all-disabled` on nodes outside any pool.
    """
    return [*identifying_labels(pool), *pool.labels, *((HOSTNAME_LABEL, node) for node in pool.nodes)]


def list_schedulers(ctx: Context, tenant: Tenant | None) -> tuple[str, ...]:
    """default-scheduler always (Kueue tenants too: Kueue admits, kube-scheduler places); Volcano and HAMi when used."""
    names = [DEFAULT_SCHEDULER]
    if tenant is not None and tenant.scheduler is Scheduler.VOLCANO:
        names.append(VOLCANO_SCHEDULER)
    if tenant is not None and any(
        ctx.pools[name].sharing.strategy is SharingStrategy.HAMI for name in tenant.pools if name in ctx.pools
    ):
        names.append(ctx.blueprint.hami.scheduler_name)
    return tuple(dict.fromkeys(names))  # a HAMi scheduler renamed to one of the others is listed once


def resolve_grants(ctx: Context, tenant: Tenant | None, facts: PoolFacts | None = None) -> Grants:
    """What `tenant` may reach; None: a tenant the blueprint does not know, which is granted nothing."""
    facts = facts or gather_pool_facts(ctx)
    granted_names = {name for name in tenant.pools if name in facts.pool_order} if tenant is not None else set()
    granted = [
        ctx.blueprint.pools[facts.pool_order[name]] for name in sorted(granted_names, key=facts.pool_order.__getitem__)
    ]
    own = list(dict.fromkeys(_identify_taint(taint) for pool in granted for taint in pool.taints))
    # A taint one of its own pools carries stays tolerable, even if other pools carry it too (pools that share a
    # taint are told apart by labels). A toleration that covers several taints (a key, a key and value, a key and
    # effect) is allowed if all of them are its own: if it owns as many of that group as the fleet has.
    owned = Counter(share for taint in own for share in _taint_shares(taint))
    mine = [share for share, count in owned.items() if count == facts.taints_per.get(share, 0)]
    keys = [share[1] for share in mine if share[0] == "key"]
    key_values = [f"{share[1]}={share[2]}" for share in mine if share[0] == "value"]
    key_effects = [f"{share[1]}:{share[2]}" for share in mine if share[0] == "effect"]
    labels = dict.fromkeys(f"{key}={value}" for pool in granted for key, value in collect_pool_labels(pool))
    return Grants(
        pools=tuple(pool.name for pool in granted),
        taint_keys=facts.taint_keys,
        own_taints=tuple(f"{k}={v}:{e}" for k, v, e in own),
        own_taint_texts=tuple(facts.texts[taint] for taint in own),
        own_key_values=tuple(key_values),
        own_key_effects=tuple(key_effects),
        own_keys=tuple(keys),
        label_keys=facts.label_keys,
        own_labels=tuple(labels),
        schedulers=list_schedulers(ctx, tenant),
        # Advertised only by pools not granted: every name some pool advertises, less the tenant's own.
        foreign_resources=tuple(sorted(ctx.advertised_resources - _advertised(ctx, granted))),
        priority_classes=tuple(allowed_priority_classes(ctx, tenant.name)) if tenant is not None else (),
    )


def _advertised(ctx: Context, pools: Iterable[NodePool]) -> set[str]:
    return {offer.resource for pool in pools for offer in ctx.offers.get(pool.name, ())}


def find_granted_pools(ctx: Context) -> list[tuple[NodePool, list[str]]]:
    """(pool, the tenants granted it) for every pool granted to at least one tenant, in blueprint order.

    Shared pools too: a namespace without a tenant is granted none of them, and a pod of its that reached one would
    take GPUs outside every tenant's quota and queue.
    """
    return [(pool, users) for pool in ctx.blueprint.pools if (users := ctx.tenants_by_pool.get(pool.name, []))]


def _describe_tenants(tenants: Sequence[str]) -> str:
    if len(tenants) == 1:
        return f"tenant {tenants[0]}"
    return f"tenants {', '.join(tenants[:-1])} and {tenants[-1]}"


# --- CEL literals ---------------------------------------------------------------------------------------------------


def quote_cel(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("'", "\\'")
    return f"'{escaped}'"


def quote_cel_list(items: Iterable[str]) -> str:
    return "[" + ", ".join(quote_cel(item) for item in items) + "]"


def write_cel_records(records: Sequence[Mapping[str, str]]) -> str:
    """A list of string-to-string maps, one per line: homogeneous, so any CEL type checker accepts it."""
    if not records:
        return "[]"
    # No trailing comma: the CEL grammar allows one, but not every implementation (cel-python) does.
    lines = [
        "  {" + ", ".join(f"{quote_cel(k)}: {quote_cel(v)}" for k, v in record.items()) + "}" for record in records
    ]
    return "[\n" + ",\n".join(lines) + "\n]"


@dataclass(frozen=True)
class Cel:
    """A CEL expression inside a message; every other part of a message is literal text."""

    expression: str


def build_message(*parts: str | Cel) -> str:
    """A messageExpression: literal text and CEL expressions concatenated, the text quoted for CEL."""
    merged: list[str | Cel] = []
    for part in parts:
        last = merged[-1] if merged else None
        if isinstance(part, str) and isinstance(last, str):
            merged[-1] = last + part  # one literal, not 'a' + 'b'
        else:
            merged.append(part)
    return " + ".join(part.expression if isinstance(part, Cel) else quote_cel(part) for part in merged)


# --- objects --------------------------------------------------------------------------------------------------------


def _build_metadata(name: str) -> dict[str, Any]:
    return {"name": name, "labels": dict(MANAGED_BY)}


def build_match_constraints() -> dict[str, Any]:
    return {
        "resourceRules": [
            {"apiGroups": [group], "apiVersions": [version], "operations": list(OPERATIONS), "resources": list(names)}
            for group, version, names in RESOURCE_RULES
        ]
    }


def _declare(name: str, expression: str) -> dict[str, str]:
    return {"name": name, "expression": expression}


def _build_validation(expression: str, message: str, message_expression: str) -> dict[str, str]:
    return {"expression": expression, "message": message, "messageExpression": message_expression, "reason": REASON}


def build_policy(name: str, variables: list[dict[str, str]], validations: list[dict[str, str]]) -> Object:
    return {
        "apiVersion": API_VERSION,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": _build_metadata(name),
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": build_match_constraints(),
            "matchConditions": [{"name": "created-or-spec-changed", "expression": CREATED_OR_SPEC_CHANGED}],
            "variables": variables,
            "validations": validations,
        },
    }


def build_binding(name: str, selector: dict[str, Any]) -> Object:
    return {
        "apiVersion": API_VERSION,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": _build_metadata(name),
        "spec": {
            "policyName": name,
            "validationActions": ["Deny"],
            "matchResources": {"namespaceSelector": selector},
        },
    }


def _select_names(operator: str, names: Iterable[str], key: str = NAMESPACE_NAME_LABEL) -> dict[str, Any]:
    return {"key": key, "operator": operator, "values": sorted(set(names))}


def build_isolation_policy(name: str, tenant_expression: str, tenant_words: str, grants: Grants) -> Object:
    """The rules every tenant's pods follow; `grants` are the only per-tenant part.

    A rule that cannot fail (no pool has a taint, or a label) is left out rather than emitted with empty lists:
    every expression in the policy can then be exercised, and is, by the tests.
    """
    tenant = Cel("variables.tenant")
    pools = f"(granted: {', '.join(grants.pools) or 'no pool'})"
    schedulers = ", ".join(grants.schedulers)
    variables = [_declare("tenant", tenant_expression), _declare("specs", POD_SPECS)]
    wildcard = "a wildcard toleration (no key, operator Exists): it tolerates every taint, including those of pools"
    validations = [
        _build_validation(
            NO_WILDCARD,
            f"{tenant_words} may not use {wildcard} the tenant is not granted",
            build_message("tenant ", tenant, f" may not use {wildcard} tenant ", tenant, f" is not granted {pools}"),
        )
    ]
    if grants.taint_keys:
        own = ", ".join(grants.own_taint_texts) or "none"
        variables += [
            _declare("poolTaintKeys", quote_cel_list(grants.taint_keys)),
            _declare("ownTaints", quote_cel_list(grants.own_taints)),
            _declare("ownKeyValues", quote_cel_list(grants.own_key_values)),
            _declare("ownKeyEffects", quote_cel_list(grants.own_key_effects)),
            _declare("ownKeys", quote_cel_list(grants.own_keys)),
            _declare("refusedTolerations", REFUSED_TOLERATIONS),
        ]
        more = "size(variables.refusedTolerations[0]) - 1"
        validations.append(
            _build_validation(
                "size(variables.refusedTolerations) == 0",
                f"{tenant_words} may only tolerate, of the taint keys pools use ({', '.join(grants.taint_keys)}), "
                f"the taints of its pools {pools}: {own}",
                build_message(
                    *("tenant ", tenant, " may not tolerate ", Cel("variables.refusedTolerations[0][0]")),
                    Cel(
                        f"({more} > 0 ? ' (and ' + string({more}) + ' more such toleration'"
                        f" + ({more} == 1 ? '' : 's') + ')' : '')"
                    ),
                    *(": on the taint keys pools use, tenant ", tenant, " may only tolerate the taints of its pools "),
                    f"{pools}: {own}",
                ),
            )
        )
    if grants.label_keys:
        own = ", ".join(grants.own_labels) or "none"
        variables += [
            _declare("requiredTerms", REQUIRED_TERMS),
            _declare("selectorPairs", SELECTOR_PAIRS),
            _declare("requiredPairs", REQUIRED_PAIRS),
            _declare("poolLabelKeys", quote_cel_list(grants.label_keys)),
            _declare("ownLabels", quote_cel_list(grants.own_labels)),
            _declare("refusedSelectorPairs", REFUSED_SELECTOR_PAIRS),
            _declare("refusedRequiredPairs", REFUSED_REQUIRED_PAIRS),
        ]
        validations.append(
            _build_validation(
                "size(variables.refusedSelectorPairs) == 0 && size(variables.refusedRequiredPairs) == 0",
                f"{tenant_words} may only select or require, of the node label keys pools use "
                f"({', '.join(grants.label_keys)}), the labels of its pools {pools}: {own}",
                build_message(
                    *("tenant ", tenant, " may not select ", Cel(FIRST_REFUSED_PAIR)),
                    *(": on the node label keys pools use, tenant ", tenant, " may only select the labels of its "),
                    f"pools {pools}: {own}",
                ),
            )
        )
    variables += [
        _declare("schedulers", quote_cel_list(grants.schedulers)),
        _declare("foreignSchedulers", FOREIGN_SCHEDULERS),
    ]
    validations += [
        _build_validation(
            NO_NODE_NAME,
            f"{tenant_words} may not set spec.nodeName: it bypasses the scheduler and every NoSchedule taint",
            build_message(
                *("tenant ", tenant, " may not set spec.nodeName (", Cel(PINNED_NODE), "): a pod bound by name "),
                "skips the scheduler and every NoSchedule taint; let the scheduler place it on the pools of tenant ",
                *(tenant, f" {pools}"),
            ),
        ),
        _build_validation(
            "size(variables.foreignSchedulers) == 0",
            f"{tenant_words} may only use the schedulers {schedulers}",
            build_message(
                *("tenant ", tenant, " may not use scheduler ", Cel("variables.foreignSchedulers[0]")),
                f": its pods may only name {schedulers}",
            ),
        ),
    ]
    variables, validations = _add_device_rules(
        tenant_words, Cel("'tenant ' + variables.tenant"), variables, validations
    )
    if grants.foreign_resources:
        variables += [
            _declare("foreignGpuResources", quote_cel_list(grants.foreign_resources)),
            _declare("foreignRequests", _requested("foreignGpuResources")),
        ]
        validations.append(
            _build_validation(
                "size(variables.foreignRequests) == 0",
                f"{tenant_words} may not request the GPU resources of pools it is not granted: "
                f"{', '.join(grants.foreign_resources)}",
                build_message(
                    *("tenant ", tenant, " may not request ", Cel("variables.foreignRequests[0][0][0]")),
                    f": only pools it is not granted advertise it {pools}",
                ),
            )
        )
    classes = ", ".join(grants.priority_classes) or "none"
    variables.append(_declare("priorityClasses", quote_cel_list(grants.priority_classes)))
    validations.append(
        _build_validation(
            PRIORITY_ALLOWED,
            f"{tenant_words} may only use the PriorityClasses {classes} (or none): a higher class preempts other "
            "tenants' pods",
            build_message(
                *("tenant ", tenant, " may not use PriorityClass ", Cel(REFUSED_PRIORITY)),
                f": its pods may name only {classes}, or none; a higher class would preempt other tenants' pods",
            ),
        )
    )
    return build_policy(name, variables, validations)


def _add_device_rules(
    words: str, who: Cel, variables: list[dict[str, str]], validations: list[dict[str, str]]
) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """No env or mount the NVIDIA container toolkit reads as a device request (H4), in any policy."""
    variables = [
        *variables,
        _declare("deviceEnv", quote_cel_list(DEVICE_ENV)),
        _declare("gpuOnlyEnv", quote_cel_list(GPU_ONLY_ENV)),
        _declare("deviceMountRoot", quote_cel(DEVICE_MOUNT_ROOT)),
        _declare("requestsAnyGpu", REQUESTS_ANY_GPU),
        _declare("runtimeRequests", RUNTIME_REQUESTS),
    ]
    what = (
        f"{', '.join(DEVICE_ENV)} (env), {', '.join(GPU_ONLY_ENV)} without a GPU request, or a mount under "
        f"{DEVICE_MOUNT_ROOT}: the NVIDIA container toolkit can read them as a device request and hand the "
        "container GPUs outside the device plugin and every quota"
    )
    validation = _build_validation(
        "size(variables.runtimeRequests) == 0",
        f"{words} may not set {what}",
        build_message(who, " may not set ", Cel("variables.runtimeRequests[0][0][0]"), f": {what}"),
    )
    return variables, [*validations, validation]


def build_tenant_objects(ctx: Context, tenant: Tenant, facts: PoolFacts | None = None) -> list[Object]:
    # A system namespace is never checked, even one a blueprint hands to a tenant: the device plugin living there
    # tolerates every pool's taint, and refusing it would take the GPUs off every node.
    namespaces = [namespace for namespace in tenant.namespaces if namespace not in list_system_namespaces(ctx)]
    if not namespaces:
        return []
    name = f"{NAME_PREFIX}tenant-{tenant.name}"
    words = f"tenant {tenant.name}"
    selector = {"matchExpressions": [_select_names("In", namespaces)]}
    grants = resolve_grants(ctx, tenant, facts)
    return [build_isolation_policy(name, quote_cel(tenant.name), words, grants), build_binding(name, selector)]


def build_unknown_tenant_objects(ctx: Context, facts: PoolFacts | None = None) -> list[Object]:
    """Namespaces labelled with a tenant the blueprint does not have: the tenant rules, with nothing granted."""
    tenant_namespaces = [namespace for tenant in ctx.blueprint.tenants for namespace in tenant.namespaces]
    expressions = [
        {"key": TENANT_LABEL, "operator": "Exists"},
        _select_names("NotIn", [*list_system_namespaces(ctx), *tenant_namespaces]),
    ]
    # The binding only selects namespaces that carry the label, so the lookup cannot miss.
    label = f"namespaceObject.metadata.labels[{quote_cel(TENANT_LABEL)}]"
    words = "a tenant this blueprint does not have"
    grants = resolve_grants(ctx, None, facts)
    return [
        build_isolation_policy(UNKNOWN_TENANT_POLICY, label, words, grants),
        build_binding(UNKNOWN_TENANT_POLICY, {"matchExpressions": expressions}),
    ]


def list_system_namespaces(ctx: Context) -> list[str]:
    return list(ctx.system_namespaces)


def build_non_tenant_objects(ctx: Context) -> list[Object]:
    """Every other namespace: no granted pool's taint; no wildcard toleration on a pod that asks for their GPUs.

    A pool granted to any tenant, shared or not, is closed to a namespace without a tenant: it is granted nothing, and
    a pod of its on a granted pool would use GPUs outside every tenant's quota and queue. Pools granted to no tenant
    stay open. Wildcard tolerations are how cluster-wide node agents (log shippers, exporters, CNI) run on every node,
    in namespaces gpustack cannot list; refusing them would break the cluster the day the policy is applied. A pod
    that also asks for a granted pool's GPUs has no such excuse.
    """
    granted = find_granted_pools(ctx)
    owners = {pool.name: tenants for pool, tenants in granted}
    found = _collect_taints((pool for pool, _ in granted), set())
    taints = tuple(
        {
            "key": key,
            "value": value,
            "effect": effect,
            "taint": text,
            "owner": _describe_owners([f"{name} (granted to {_describe_tenants(owners[name])})" for name in pools]),
        }
        for (key, value, effect), (text, pools) in found.items()
    )
    granted_pools = [pool for pool, _ in granted]
    resources = sorted(_advertised(ctx, granted_pools))
    # Resource names only granted pools advertise: whatever the taints, a pod without a tenant cannot ask for them.
    granted_names = {pool.name for pool in granted_pools}  # a set: the pools are compared by name, once each
    others = (p for p in ctx.blueprint.pools if p.name not in granted_names)
    exclusive = sorted(set(resources) - _advertised(ctx, others))
    described = "; ".join(f"pool {pool.name}: {_describe_tenants(tenants)}" for pool, tenants in granted if pool.taints)
    nobody = ("namespace ", Cel("request.namespace"), " belongs to no tenant: ")
    taint = "variables.toleratedGrantedTaints[0]"
    variables = [_declare("specs", POD_SPECS)]
    validations: list[dict[str, str]] = []
    if found:
        wildcard = (
            "a pod that requests GPUs may not use a wildcard toleration (no key, operator Exists): it tolerates the "
            f"taints of pools granted to tenants ({described})"
        )
        variables += [
            _declare("grantedTaints", write_cel_records(taints)),
            _declare("toleratedGrantedTaints", _filter_tolerated("grantedTaints")),
        ]
        validations += [
            _build_validation(
                "size(variables.toleratedGrantedTaints) == 0",
                f"a namespace without a tenant may not tolerate the taint of a pool granted to a tenant ({described})",
                build_message(
                    *nobody,
                    "it may not tolerate ",
                    Cel(f"{taint}.taint"),
                    ", the taint of ",
                    Cel(f"{taint}.owner"),
                    Cel(_count_more("toleratedGrantedTaints", "such taint", "such taints")),
                ),
            ),
            _build_validation(
                WILDCARD_ON_GPU_POD, f"in a namespace without a tenant, {wildcard}", build_message(*nobody, wildcard)
            ),
        ]
    if resources:
        variables += [_declare("gpuResources", quote_cel_list(resources)), _declare("requestsGpu", REQUESTS_GPU)]
        validations.append(
            _build_validation(
                NO_SYSTEM_PRIORITY_ON_GPU_POD,
                "in a namespace without a tenant, a pod that requests the GPUs of pools granted to tenants may not "
                "use a system-* PriorityClass: it would preempt the tenants' pods",
                build_message(
                    *nobody,
                    "a pod that requests the GPUs of pools granted to tenants may not use a system-* PriorityClass: "
                    "it would preempt the tenants' pods",
                ),
            )
        )
    if exclusive:
        variables += [
            _declare("grantedOnlyResources", quote_cel_list(exclusive)),
            _declare("grantedOnlyRequests", _requested("grantedOnlyResources")),
        ]
        validations.append(
            _build_validation(
                "size(variables.grantedOnlyRequests) == 0",
                "a namespace without a tenant may not request GPU resources only pools granted to tenants "
                f"advertise: {', '.join(exclusive)}",
                build_message(
                    *nobody,
                    "it may not request ",
                    Cel("variables.grantedOnlyRequests[0][0][0]"),
                    ": only pools granted to tenants advertise it",
                ),
            )
        )
    variables, validations = _add_device_rules(
        "a namespace without a tenant", Cel("'namespace ' + request.namespace"), variables, validations
    )
    excluded = [*list_system_namespaces(ctx), *(ns for tenant in ctx.blueprint.tenants for ns in tenant.namespaces)]
    selector = {
        "matchExpressions": [{"key": TENANT_LABEL, "operator": "DoesNotExist"}, _select_names("NotIn", excluded)]
    }
    return [build_policy(NON_TENANT_POLICY, variables, validations), build_binding(NON_TENANT_POLICY, selector)]


def build_admission_objects(ctx: Context) -> list[Object]:
    facts = gather_pool_facts(ctx)
    objects = [obj for tenant in ctx.blueprint.tenants for obj in build_tenant_objects(ctx, tenant, facts)]
    return [*objects, *build_unknown_tenant_objects(ctx, facts), *build_non_tenant_objects(ctx)]


def compile_admission(ctx: Context) -> FamilyOutput:
    if ctx.blueprint.kubernetes_minor < ADMISSION_POLICY_MINOR:
        return FamilyOutput()  # no admissionregistration.k8s.io/v1 policies; GS803 says what is lost
    return FamilyOutput(objects=[Manifest(FAMILY, FILE, obj) for obj in build_admission_objects(ctx)])

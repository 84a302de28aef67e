"""Pod-level rules as CEL: what a pod spec may carry, read from every pod spec of any object that carries them.

Each expression reads `variables.specs` (the pod specs of the object, whatever its kind) and the per-policy facts
declared beside it (`variables.poolTaintKeys`, `variables.ownLabels`, ...); none names a tenant or a pool, so every
policy holds the same rules and a reviewer diffs grants, not logic (compile/admission.py assembles them).
"""

from __future__ import annotations

HOSTNAME_LABEL = "kubernetes.io/hostname"  # the kubelet sets it to the node name unless --hostname-override says else

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


def filter_tolerated(taints_variable: str) -> str:
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


def requested(names: str) -> str:
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

# The PriorityClasses an object names: each pod spec's, and a Volcano Job's or PodGroup's own (N3): Volcano orders and
# preempts jobs by the Job-level class, whatever its pods name.
PRIORITY_NAMES = """\
variables.specs.filter(s, has(s.priorityClassName) && s.priorityClassName != '').map(s, s.priorityClassName)
+ ((request.resource.group == 'batch.volcano.sh' || request.resource.group == 'scheduling.volcano.sh')
    && has(object.spec.priorityClassName) && object.spec.priorityClassName != ''
  ? [object.spec.priorityClassName] : [])"""
PRIORITY_ALLOWED = "variables.priorityNames.all(p, p in variables.priorityClasses)"
REFUSED_PRIORITY = "variables.priorityNames.filter(p, !(p in variables.priorityClasses))[0]"
NO_SYSTEM_PRIORITY_ON_GPU_POD = "!variables.requestsGpu || variables.priorityNames.all(p, !p.startsWith('system-'))"

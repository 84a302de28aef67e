"""Tenant isolation that holds: ValidatingAdmissionPolicies that keep each tenant's pods on the pools it is granted.

Taints and tolerations keep polite pods in their lane, but any pod can copy a toleration. These policies
check every pod, and the pod templates of the workload kinds that create pods, at admission:

- one policy per tenant, bound to the tenant's namespaces BY NAME (the `kubernetes.io/metadata.name` label,
  which the API server sets and nobody can change), so a tenant that can edit its namespace's labels can neither
  step out of its policy nor into another tenant's grants. Its pods may tolerate only the taints of its pools,
  may not use a wildcard toleration, may select (nodeSelector, or `In` in required node affinity) no node label
  that only pools it is not granted carry, may not set `spec.nodeName`, and may name only its schedulers;
- one policy for namespaces labelled with a tenant the blueprint does not have (a removed tenant's namespace, a
  typo): the same rules with nothing granted;
- one policy for every other namespace but the system ones: no toleration of a granted pool's taint (a pool
  granted to any tenant, shared or not: a namespace without a tenant has no grant, and would skip Kueue and quota),
  and no wildcard toleration on a pod that asks for a granted pool's GPUs. Pools granted to no tenant stay open.

The per-tenant facts (taints, labels, schedulers) are written into each policy as CEL literals in `variables`;
the validations read only those variables, so every tenant's policy has the same rules (less any that cannot fail
for it) and a reviewer diffs grants, not logic. Expressions stay within portable CEL (no Kubernetes extension
libraries, no optional types, no trailing commas), so the tests evaluate every one of them with cel-python. Pod
validation is the guarantee (every controller creates pods through the API); the templates are checked too, so a
bad Deployment is refused when it is applied, not when its pods fail to appear. docs/admission.md says what is
enforced and what is not.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpustack.checks.cluster import ADMISSION_POLICY_MINOR
from gpustack.compile.labels import MANAGED_BY, POOL_LABEL, TENANT_LABEL, VOLCANO_SCHEDULER
from gpustack.compile.plan import FamilyOutput, Manifest, Object
from gpustack.context import Context
from gpustack.model import NodePool, Scheduler, SharingStrategy, Taint, Tenant

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
)

# --- CEL, shared by every policy ------------------------------------------------------------------------------------

# An UPDATE that leaves `spec` alone (a controller removing its finalizer, a label change) is never refused, so objects
# admitted under an older blueprint can still be cleaned up; one that changes the spec is checked like a CREATE.
CREATED_OR_SPEC_CHANGED = "request.operation == 'CREATE' || object.spec != oldObject.spec"

# The pod specs of the object, whatever its kind: the pod itself, a CronJob's job template, each Volcano task.
POD_SPECS = """\
request.resource.resource == 'pods' ? [object.spec] : (
  request.resource.resource == 'cronjobs' ? [object.spec.jobTemplate.spec.template.spec] : (
    request.resource.group == 'batch.volcano.sh' ? (
      has(object.spec.tasks)
        ? object.spec.tasks.filter(t, has(t.template) && has(t.template.spec)).map(t, t.template.spec)
        : []
    ) : (
      has(object.spec.template) && has(object.spec.template.spec) ? [object.spec.template.spec] : []
    )
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


def _names_pair(test: str) -> str:
    """Whether any list of pairs the pod names passes `test` (a CEL predicate on the list `pairs`)."""
    return (
        f"variables.selectorPairs.exists(pairs, {test})\n"
        f"|| variables.requiredPairs.exists(terms, terms.exists(expressions, expressions.exists(pairs, {test})))"
    )


NAMES_FOREIGN_LABEL = _names_pair("pairs.exists(p, p in variables.foreignLabels)")
# Only for the message, so only evaluated once a pod is refused: which foreign pairs it names. (cel-go iterates a
# map in no fixed order: with several, the message may name any one of them; the count is the same.)
SELECTED_FOREIGN_LABELS = (
    "variables.foreignLabels.filter(pair,\n  " + _names_pair("pair in pairs").replace("\n", "\n  ") + "\n)"
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
    """What the policy of one tenant (or of a tenant the blueprint does not know) lets its pods reach."""

    pools: tuple[str, ...]
    foreign_taints: tuple[dict[str, str], ...]
    foreign_labels: tuple[tuple[str, str], ...]  # ('key=value', the pools that carry it)
    schedulers: tuple[str, ...]


def describe_taint(taint: Taint) -> str:
    return f"{taint.key}={taint.value}:{taint.effect}" if taint.value is not None else f"{taint.key}:{taint.effect}"


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
            found.setdefault(key, (describe_taint(taint), []))[1].append(pool.name)
    return found


def collect_pool_labels(pool: NodePool) -> list[tuple[str, str]]:
    """The node labels that name the pool: gpustack's pool label, the pool's own labels, its nodes' hostnames.

    Not the device-plugin and MIG config labels: they name a configuration that pools share, and the GPU Operator
    puts `nvidia.com/mig.config=all-disabled` on nodes outside any pool.
    """
    return [(POOL_LABEL, pool.name), *pool.labels, *((HOSTNAME_LABEL, node) for node in pool.nodes)]


def list_schedulers(ctx: Context, tenant: Tenant | None) -> tuple[str, ...]:
    """default-scheduler always (Kueue tenants too: Kueue admits, kube-scheduler places); Volcano and HAMi when used."""
    names = [DEFAULT_SCHEDULER]
    if tenant is not None and tenant.scheduler is Scheduler.VOLCANO:
        names.append(VOLCANO_SCHEDULER)
    if tenant is not None and any(
        pool.sharing.strategy is SharingStrategy.HAMI for pool in ctx.blueprint.pools if pool.name in tenant.pools
    ):
        names.append(ctx.blueprint.hami.scheduler_name)
    return tuple(dict.fromkeys(names))  # a HAMi scheduler renamed to one of the others is listed once


def resolve_grants(ctx: Context, tenant: Tenant | None) -> Grants:
    """What `tenant` may reach; None: a tenant the blueprint does not know, which is granted nothing."""
    granted_names = set(tenant.pools) if tenant is not None else set()
    granted = [pool for pool in ctx.blueprint.pools if pool.name in granted_names]
    foreign = [pool for pool in ctx.blueprint.pools if pool.name not in granted_names]
    # A taint one of its own pools carries must stay tolerable; pools that share a taint are told apart by labels.
    own_taints = {_identify_taint(taint) for pool in granted for taint in pool.taints}
    taints = tuple(
        {"key": key, "value": value, "effect": effect, "taint": text, "owner": _describe_owners(owners)}
        for (key, value, effect), (text, owners) in _collect_taints(foreign, own_taints).items()
    )
    own_labels = {pair for pool in granted for pair in collect_pool_labels(pool)}
    label_owners: dict[tuple[str, str], list[str]] = {}
    for pool in foreign:
        for pair in collect_pool_labels(pool):
            if pair not in own_labels and pool.name not in label_owners.setdefault(pair, []):
                label_owners[pair].append(pool.name)
    labels = tuple((f"{key}={value}", _describe_owners(owners)) for (key, value), owners in label_owners.items())
    return Grants(tuple(pool.name for pool in granted), taints, labels, list_schedulers(ctx, tenant))


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


def write_cel_map(entries: Sequence[tuple[str, str]]) -> str:
    """A string-to-string map, one entry per line (keys unique: they come from a dict)."""
    lines = [f"  {quote_cel(key)}: {quote_cel(value)}" for key, value in entries]
    return "{\n" + ",\n".join(lines) + "\n}"


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

    A rule that cannot fail (no pool the tenant is not granted has a taint, or a label) is left out rather than
    emitted with an empty list: every expression in the policy can then be exercised, and is, by the tests.
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
    if grants.foreign_taints:
        taint = "variables.toleratedForeignTaints[0]"
        variables += [
            _declare("foreignTaints", write_cel_records(grants.foreign_taints)),
            _declare("toleratedForeignTaints", _filter_tolerated("foreignTaints")),
        ]
        validations.append(
            _build_validation(
                "size(variables.toleratedForeignTaints) == 0",
                f"{tenant_words} may only tolerate the taints of its pools {pools}",
                build_message(
                    *("tenant ", tenant, " may not tolerate ", Cel(f"{taint}.taint"), ": that taint belongs to "),
                    *(Cel(f"{taint}.owner"), ", which tenant ", tenant, " is not granted"),
                    Cel(_count_more("toleratedForeignTaints", "such taint", "such taints")),
                ),
            )
        )
    if grants.foreign_labels:
        label = "variables.selectedForeignLabels[0]"
        variables += [
            _declare("requiredTerms", REQUIRED_TERMS),
            _declare("selectorPairs", SELECTOR_PAIRS),
            _declare("requiredPairs", REQUIRED_PAIRS),
            _declare("foreignLabels", write_cel_map(grants.foreign_labels)),
            _declare("selectedForeignLabels", SELECTED_FOREIGN_LABELS),
        ]
        validations.append(
            _build_validation(
                "!(\n  " + NAMES_FOREIGN_LABEL.replace("\n", "\n  ") + "\n)",
                f"{tenant_words} may only select or require nodes of its pools {pools}",
                build_message(
                    *("tenant ", tenant, " may not select ", Cel(label), ": that node label belongs to "),
                    *(Cel(f"variables.foreignLabels[{label}]"), ", which tenant ", tenant, " is not granted"),
                    Cel(_count_more("selectedForeignLabels", "such label", "such labels")),
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
    return build_policy(name, variables, validations)


def build_tenant_objects(ctx: Context, tenant: Tenant) -> list[Object]:
    # A system namespace is never checked, even one a blueprint hands to a tenant: the device plugin living there
    # tolerates every pool's taint, and refusing it would take the GPUs off every node.
    namespaces = [namespace for namespace in tenant.namespaces if namespace not in list_system_namespaces(ctx)]
    if not namespaces:
        return []
    name = f"{NAME_PREFIX}tenant-{tenant.name}"
    words = f"tenant {tenant.name}"
    selector = {"matchExpressions": [_select_names("In", namespaces)]}
    grants = resolve_grants(ctx, tenant)
    return [build_isolation_policy(name, quote_cel(tenant.name), words, grants), build_binding(name, selector)]


def build_unknown_tenant_objects(ctx: Context) -> list[Object]:
    """Namespaces labelled with a tenant the blueprint does not have: the tenant rules, with nothing granted."""
    tenant_namespaces = [namespace for tenant in ctx.blueprint.tenants for namespace in tenant.namespaces]
    expressions = [
        {"key": TENANT_LABEL, "operator": "Exists"},
        _select_names("NotIn", [*list_system_namespaces(ctx), *tenant_namespaces]),
    ]
    # The binding only selects namespaces that carry the label, so the lookup cannot miss.
    label = f"namespaceObject.metadata.labels[{quote_cel(TENANT_LABEL)}]"
    words = "a tenant this blueprint does not have"
    grants = resolve_grants(ctx, None)
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
    if not found:
        return []  # no granted pool is tainted: there is nothing a toleration could open
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
    resources = sorted({offer.resource for pool, _ in granted for offer in ctx.offers.get(pool.name, ())})
    described = "; ".join(f"pool {pool.name}: {_describe_tenants(tenants)}" for pool, tenants in granted if pool.taints)
    nobody = ("namespace ", Cel("request.namespace"), " belongs to no tenant: ")
    taint = "variables.toleratedGrantedTaints[0]"
    variables = [
        _declare("specs", POD_SPECS),
        _declare("grantedTaints", write_cel_records(taints)),
        _declare("toleratedGrantedTaints", _filter_tolerated("grantedTaints")),
        _declare("gpuResources", quote_cel_list(resources)),
        _declare("requestsGpu", REQUESTS_GPU),
    ]
    wildcard = (
        "a pod that requests GPUs may not use a wildcard toleration (no key, operator Exists): it tolerates the "
        f"taints of pools granted to tenants ({described})"
    )
    validations = [
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
    excluded = [*list_system_namespaces(ctx), *(ns for tenant in ctx.blueprint.tenants for ns in tenant.namespaces)]
    selector = {
        "matchExpressions": [{"key": TENANT_LABEL, "operator": "DoesNotExist"}, _select_names("NotIn", excluded)]
    }
    return [build_policy(NON_TENANT_POLICY, variables, validations), build_binding(NON_TENANT_POLICY, selector)]


def build_admission_objects(ctx: Context) -> list[Object]:
    objects = [obj for tenant in ctx.blueprint.tenants for obj in build_tenant_objects(ctx, tenant)]
    return [*objects, *build_unknown_tenant_objects(ctx), *build_non_tenant_objects(ctx)]


def compile_admission(ctx: Context) -> FamilyOutput:
    if ctx.blueprint.kubernetes_minor < ADMISSION_POLICY_MINOR:
        return FamilyOutput()  # no admissionregistration.k8s.io/v1 policies; GS803 says what is lost
    return FamilyOutput(objects=[Manifest(FAMILY, FILE, obj) for obj in build_admission_objects(ctx)])

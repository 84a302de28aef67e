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

The parts live beside this module: `cel` (CEL literals, messages, the policy and binding objects), `pod_rules` (the
pod-level rules as CEL), `grants` (the facts each tenant's policy is written from) and `queue_rules` (Volcano queues
and the Job-level priority).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from gpustack.compile.cel import (
    Cel,
    build_binding,
    build_message,
    build_policy,
    build_validation,
    count_more,
    declare,
    quote_cel,
    quote_cel_list,
    select_names,
    write_cel_records,
)
from gpustack.compile.grants import (
    Grants,
    PoolFacts,
    advertised,
    collect_taints,
    describe_owners,
    describe_tenants,
    find_granted_pools,
    gather_pool_facts,
    resolve_grants,
)
from gpustack.compile.kai_rules import add_own_kai_queue_rule, add_podgroup_rule, add_tenant_kai_queues_rule
from gpustack.compile.pod_rules import (
    FIRST_REFUSED_PAIR,
    FOREIGN_SCHEDULERS,
    NO_NODE_NAME,
    NO_SYSTEM_PRIORITY_ON_GPU_POD,
    NO_WILDCARD,
    PINNED_NODE,
    POD_SPECS,
    PRIORITY_ALLOWED,
    PRIORITY_NAMES,
    REFUSED_PRIORITY,
    REFUSED_REQUIRED_PAIRS,
    REFUSED_SELECTOR_PAIRS,
    REFUSED_TOLERATIONS,
    REQUESTS_ANY_GPU,
    REQUESTS_GPU,
    REQUIRED_PAIRS,
    REQUIRED_TERMS,
    RUNTIME_REQUESTS,
    SELECTOR_PAIRS,
    WILDCARD_ON_GPU_POD,
    filter_tolerated,
    requested,
)
from gpustack.compile.queue_rules import add_own_queue_rule, add_reserved_queues_rule
from gpustack.context import Context
from gpustack.model import Scheduler, Tenant
from gpustack.names import ADMISSION_POLICY_MINOR, DEVICE_ENV, DEVICE_MOUNT_ROOT, GPU_ONLY_ENV, TENANT_LABEL
from gpustack.plan import FamilyOutput, Manifest, Object
from gpustack.schedulers import (
    KAI_SCHEDULER,
    kai_cohort_queue,
    kai_leaf_pools,
    kai_leaf_queue,
    kai_parent_queue,
    kai_pools,
    kai_tenants,
    queue_name,
    volcano_tenants,
)

FAMILY = "admission"
FILE = "admission/tenant-isolation.yaml"
NAME_PREFIX = "gpustack-"
UNKNOWN_TENANT_POLICY = "gpustack-unknown-tenant"
NON_TENANT_POLICY = "gpustack-granted-pools"


def build_isolation_policy(
    name: str,
    tenant_expression: str,
    tenant_words: str,
    grants: Grants,
    kai_leaves: Mapping[str, str] | None = None,
) -> Object:
    """The rules every tenant's pods follow; `grants` are the only per-tenant part.

    A rule that cannot fail (no pool has a taint, or a label) is left out rather than emitted with empty lists:
    every expression in the policy can then be exercised, and is, by the tests.
    """
    tenant = Cel("variables.tenant")
    pools = f"(granted: {', '.join(grants.pools) or 'no pool'})"
    schedulers = ", ".join(grants.schedulers)
    variables = [declare("tenant", tenant_expression), declare("specs", POD_SPECS)]
    wildcard = "a wildcard toleration (no key, operator Exists): it tolerates every taint, including those of pools"
    validations = [
        build_validation(
            NO_WILDCARD,
            f"{tenant_words} may not use {wildcard} the tenant is not granted",
            build_message("tenant ", tenant, f" may not use {wildcard} tenant ", tenant, f" is not granted {pools}"),
        )
    ]
    if grants.taint_keys:
        own = ", ".join(grants.own_taint_texts) or "none"
        variables += [
            declare("poolTaintKeys", quote_cel_list(grants.taint_keys)),
            declare("ownTaints", quote_cel_list(grants.own_taints)),
            declare("ownKeyValues", quote_cel_list(grants.own_key_values)),
            declare("ownKeyEffects", quote_cel_list(grants.own_key_effects)),
            declare("ownKeys", quote_cel_list(grants.own_keys)),
            declare("refusedTolerations", REFUSED_TOLERATIONS),
        ]
        more = "size(variables.refusedTolerations[0]) - 1"
        validations.append(
            build_validation(
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
            declare("requiredTerms", REQUIRED_TERMS),
            declare("selectorPairs", SELECTOR_PAIRS),
            declare("requiredPairs", REQUIRED_PAIRS),
            declare("poolLabelKeys", quote_cel_list(grants.label_keys)),
            declare("ownLabels", quote_cel_list(grants.own_labels)),
            declare("refusedSelectorPairs", REFUSED_SELECTOR_PAIRS),
            declare("refusedRequiredPairs", REFUSED_REQUIRED_PAIRS),
        ]
        validations.append(
            build_validation(
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
        declare("schedulers", quote_cel_list(grants.schedulers)),
        declare("foreignSchedulers", FOREIGN_SCHEDULERS),
    ]
    validations += [
        build_validation(
            NO_NODE_NAME,
            f"{tenant_words} may not set spec.nodeName: it bypasses the scheduler and every NoSchedule taint",
            build_message(
                *("tenant ", tenant, " may not set spec.nodeName (", Cel(PINNED_NODE), "): a pod bound by name "),
                "skips the scheduler and every NoSchedule taint; let the scheduler place it on the pools of tenant ",
                *(tenant, f" {pools}"),
            ),
        ),
        build_validation(
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
            declare("foreignGpuResources", quote_cel_list(grants.foreign_resources)),
            declare("foreignRequests", requested("foreignGpuResources")),
        ]
        validations.append(
            build_validation(
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
    variables += [
        declare("priorityNames", PRIORITY_NAMES),
        declare("priorityClasses", quote_cel_list(grants.priority_classes)),
    ]
    validations.append(
        build_validation(
            PRIORITY_ALLOWED,
            f"{tenant_words} may only use the PriorityClasses {classes} (or none): a higher class preempts other "
            "tenants' pods",
            build_message(
                *("tenant ", tenant, " may not use PriorityClass ", Cel(REFUSED_PRIORITY)),
                f": its pods may name only {classes}, or none; a higher class would preempt other tenants' pods",
            ),
        )
    )
    if grants.queues:  # only Volcano tenants may name the volcano scheduler: for the others no queue is ever read
        variables, validations = add_own_queue_rule(
            tenant_words, Cel("'tenant ' + variables.tenant"), grants.queues, variables, validations
        )
    if kai_leaves:  # a KAI tenant: its GPU pods go to KAI's scheduler, and name only its own leaves
        variables, validations = add_own_kai_queue_rule(
            tenant_words, Cel("'tenant ' + variables.tenant"), kai_leaves, variables, validations
        )
        return add_podgroup_rule(build_policy(name, variables, validations))
    return build_policy(name, variables, validations)


def _add_device_rules(
    words: str, who: Cel, variables: list[dict[str, str]], validations: list[dict[str, str]]
) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """No env or mount the NVIDIA container toolkit reads as a device request (H4), in any policy."""
    variables = [
        *variables,
        declare("deviceEnv", quote_cel_list(DEVICE_ENV)),
        declare("gpuOnlyEnv", quote_cel_list(GPU_ONLY_ENV)),
        declare("deviceMountRoot", quote_cel(DEVICE_MOUNT_ROOT)),
        declare("requestsAnyGpu", REQUESTS_ANY_GPU),
        declare("runtimeRequests", RUNTIME_REQUESTS),
    ]
    what = (
        f"{', '.join(DEVICE_ENV)} (env), {', '.join(GPU_ONLY_ENV)} without a GPU request, or a mount under "
        f"{DEVICE_MOUNT_ROOT}: the NVIDIA container toolkit can read them as a device request and hand the "
        "container GPUs outside the device plugin and every quota"
    )
    validation = build_validation(
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
    selector = {"matchExpressions": [select_names("In", namespaces)]}
    grants = resolve_grants(ctx, tenant, facts)
    leaves: dict[str, str] = {}
    if tenant.scheduler is Scheduler.KAI:
        # KAI's scheduler beside kube-scheduler, which keeps the tenant's pods that ask for no GPU (kai_rules.py
        # sends every GPU pod to KAI's queues); a leaf per namespace in each pool's shard.
        grants = replace(grants, schedulers=(*grants.schedulers, KAI_SCHEDULER))
        leaves = kai_leaf_pools(tenant)
    policy = build_isolation_policy(name, quote_cel(tenant.name), words, grants, leaves)
    return [policy, build_binding(name, selector)]


def build_unknown_tenant_objects(ctx: Context, facts: PoolFacts | None = None) -> list[Object]:
    """Namespaces labelled with a tenant the blueprint does not have: the tenant rules, with nothing granted."""
    tenant_namespaces = [namespace for tenant in ctx.blueprint.tenants for namespace in tenant.namespaces]
    expressions = [
        {"key": TENANT_LABEL, "operator": "Exists"},
        select_names("NotIn", [*list_system_namespaces(ctx), *tenant_namespaces]),
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
    found = collect_taints((pool for pool, _ in granted), set())
    taints = tuple(
        {
            "key": key,
            "value": value,
            "effect": effect,
            "taint": text,
            "owner": describe_owners([f"{name} (granted to {describe_tenants(owners[name])})" for name in pools]),
        }
        for (key, value, effect), (text, pools) in found.items()
    )
    granted_pools = [pool for pool, _ in granted]
    resources = sorted(advertised(ctx, granted_pools))
    # Resource names only granted pools advertise: whatever the taints, a pod without a tenant cannot ask for them.
    granted_names = {pool.name for pool in granted_pools}  # a set: the pools are compared by name, once each
    others = (p for p in ctx.blueprint.pools if p.name not in granted_names)
    exclusive = sorted(set(resources) - advertised(ctx, others))
    described = "; ".join(f"pool {pool.name}: {describe_tenants(tenants)}" for pool, tenants in granted if pool.taints)
    nobody = ("namespace ", Cel("request.namespace"), " belongs to no tenant: ")
    taint = "variables.toleratedGrantedTaints[0]"
    variables = [declare("specs", POD_SPECS)]
    validations: list[dict[str, str]] = []
    if found:
        wildcard = (
            "a pod that requests GPUs may not use a wildcard toleration (no key, operator Exists): it tolerates the "
            f"taints of pools granted to tenants ({described})"
        )
        variables += [
            declare("grantedTaints", write_cel_records(taints)),
            declare("toleratedGrantedTaints", filter_tolerated("grantedTaints")),
        ]
        validations += [
            build_validation(
                "size(variables.toleratedGrantedTaints) == 0",
                f"a namespace without a tenant may not tolerate the taint of a pool granted to a tenant ({described})",
                build_message(
                    *nobody,
                    "it may not tolerate ",
                    Cel(f"{taint}.taint"),
                    ", the taint of ",
                    Cel(f"{taint}.owner"),
                    Cel(count_more("toleratedGrantedTaints", "such taint", "such taints")),
                ),
            ),
            build_validation(
                WILDCARD_ON_GPU_POD, f"in a namespace without a tenant, {wildcard}", build_message(*nobody, wildcard)
            ),
        ]
    if resources:
        variables += [
            declare("gpuResources", quote_cel_list(resources)),
            declare("requestsGpu", REQUESTS_GPU),
            declare("priorityNames", PRIORITY_NAMES),
        ]
        validations.append(
            build_validation(
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
            declare("grantedOnlyResources", quote_cel_list(exclusive)),
            declare("grantedOnlyRequests", requested("grantedOnlyResources")),
        ]
        validations.append(
            build_validation(
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
    queues = tuple(queue_name(tenant) for tenant in volcano_tenants(ctx))
    if queues:
        variables, validations = add_reserved_queues_rule(queues, nobody, variables, validations)
    kai = tuple(
        dict.fromkeys(  # a cohort's Queue (above its tenants' parents) once
            name
            for tenant in kai_tenants(ctx)
            for pool in kai_pools(tenant)
            for name in (
                *filter(None, (kai_cohort_queue(tenant, pool),)),
                kai_parent_queue(tenant, pool),
                *(kai_leaf_queue(tenant, ns, pool) for ns in tenant.namespaces),
            )
        )
    )
    if kai:
        variables, validations = add_tenant_kai_queues_rule(kai, nobody, variables, validations)
    excluded = [*list_system_namespaces(ctx), *(ns for tenant in ctx.blueprint.tenants for ns in tenant.namespaces)]
    selector = {
        "matchExpressions": [{"key": TENANT_LABEL, "operator": "DoesNotExist"}, select_names("NotIn", excluded)]
    }
    policy = build_policy(NON_TENANT_POLICY, variables, validations)
    return [add_podgroup_rule(policy) if kai else policy, build_binding(NON_TENANT_POLICY, selector)]


def build_admission_objects(ctx: Context) -> list[Object]:
    # The policy for namespaces without a tenant is built first, though listed last: what it is written from (every
    # granted pool's taints and owners, 1 MB at many-pools 10x) is freed before the tenants' policies exist, and so
    # stays out of compile's peak memory. The Plan orders objects by kind and name, not by when they were built.
    non_tenant = build_non_tenant_objects(ctx)
    facts = gather_pool_facts(ctx)
    objects = [obj for tenant in ctx.blueprint.tenants for obj in build_tenant_objects(ctx, tenant, facts)]
    return [*objects, *build_unknown_tenant_objects(ctx, facts), *non_tenant]


def compile_admission(ctx: Context) -> FamilyOutput:
    if ctx.blueprint.kubernetes_minor < ADMISSION_POLICY_MINOR:
        return FamilyOutput()  # no admissionregistration.k8s.io/v1 policies; GS803 says what is lost
    return FamilyOutput(objects=[Manifest(FAMILY, FILE, obj) for obj in build_admission_objects(ctx)])

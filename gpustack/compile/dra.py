"""Pools with allocation: dra as objects: their DeviceClasses, the NVIDIA DRA driver's Helm release, tenants' device
quotas and the admission policies that keep each tenant's claims on the classes of its granted pools.

Why each part:
- the driver's kubelet plugin runs only on DRA pools (required affinity: the pool label, or a selector pool's
  selector): on a node the device plugin also serves, both would hand out the same GPUs (the chart refuses that
  without gpuResourcesEnabledOverride, which gpustack sets only because the affinity keeps them apart);
- ResourceQuota counts claimed devices per class (`<class>.deviceclass.resource.k8s.io/devices`), so a tenant's pool
  quota becomes its classes' device counts; classes it is not granted (another tenant's pool's, or a class of its own
  pool its quota on the pool does not name: N4), and the chart's catch-all classes, get 0;
- claims are namespaced and name their class freely: without a policy any tenant could claim `gpu.nvidia.com` (every
  GPU of every DRA node) or another tenant's class, or set adminAccess and reach devices in use by others.
"""

from __future__ import annotations

from typing import Any

from gpustack.compile.device_plugin import build_affinity
from gpustack.context import Context
from gpustack.dra import (
    DeviceClassFact,
    api_version,
    claim_name,
    device_classes,
    dra_pools,
    load_facts,
    pool_classes,
    shares_across_pods,
    sharing_gates,
)
from gpustack.model import Tenant
from gpustack.names import ADMISSION_POLICY_MINOR, MANAGED_BY, POOL_LABEL, TENANT_LABEL, WORKLOAD_LABEL
from gpustack.offers import full_resource_name
from gpustack.plan import FamilyOutput, HelmRelease, Manifest, Object

FAMILY = "dra"
ADMISSION_FAMILY = "dra-admission"
CLASSES_FILE = "dra/device-classes.yaml"
POLICY_FILE = "admission/dra-claims.yaml"
RELEASE_NAME = "nvidia-dra-driver-gpu"
VALUES_FILE = "dra/values.yaml"
QUOTA_NAME = "gpustack-dra-devices"
ADMISSION_API = "admissionregistration.k8s.io/v1"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
UNOWNED_POLICY = "gpustack-dra-unowned"
ADMIN_ACCESS_MESSAGE = "adminAccess reaches devices allocated to other claims: gpustack's tenants may not set it"
# The claim (or the claim a template stamps out) and its requests, whichever of the two kinds was sent.
CLAIM_SPEC = "request.resource.resource == 'resourceclaimtemplates' ? object.spec.spec : object.spec"
REQUESTS = "has(variables.spec.devices) && has(variables.spec.devices.requests) ? variables.spec.devices.requests : []"
# Every class a request can name: `exactly` (v1, v1beta2), the request itself (v1beta1), and each firstAvailable
# alternative; admin access in either place.
NAMES_ONLY = (
    "variables.requests.all(r, (!has(r.exactly) || r.exactly.deviceClassName in variables.classes)"
    " && (!has(r.deviceClassName) || r.deviceClassName in variables.classes)"
    " && (!has(r.firstAvailable) || r.firstAvailable.all(s, s.deviceClassName in variables.classes)))"
)
NAMES_NONE_OF = (
    "variables.requests.all(r, (!has(r.exactly) || !(r.exactly.deviceClassName in variables.classes))"
    " && (!has(r.deviceClassName) || !(r.deviceClassName in variables.classes))"
    " && (!has(r.firstAvailable) || r.firstAvailable.all(s, !(s.deviceClassName in variables.classes))))"
)
# A tenant's claim on the driver's own classes (an upstream example's `deviceClassName: gpu.nvidia.com`): refused by
# its own rule, whose message names the classes of the tenant's pools, so the tenant-class rule allows them through.
NO_UPSTREAM = NAMES_NONE_OF.replace("variables.classes", "variables.upstream")
NAMES_ALLOWED = NAMES_ONLY.replace("variables.classes", "variables.allowed")
# A pod may hold a ResourceClaim by name only as its own workload's shared claim (`<workload>-gpu`, written by
# gpustack for `share: pods`, listed per tenant as `namespace/name`): not another workload's, which would share
# devices its quota counted once, nor a claim no gpustack workload owns.
POD_SHARED_CLAIMS = (
    "!has(object.spec.resourceClaims) || object.spec.resourceClaims.all(c, !has(c.resourceClaimName)"
    " || (request.namespace + '/' + c.resourceClaimName in variables.shared"
    " && has(object.metadata.labels) && '{label}' in object.metadata.labels"
    " && object.metadata.labels['{label}'] + '-gpu' == c.resourceClaimName))"
)
NO_ADMIN_ACCESS = (
    "variables.requests.all(r, (!has(r.exactly) || !has(r.exactly.adminAccess) || r.exactly.adminAccess == false)"
    " && (!has(r.adminAccess) || r.adminAccess == false))"
)


def compile_dra(ctx: Context) -> FamilyOutput:
    if not dra_pools(ctx.blueprint):
        return FamilyOutput()
    output = FamilyOutput(releases=[driver_release(ctx)])
    output.objects.extend(Manifest(FAMILY, CLASSES_FILE, device_class(ctx, c)) for c in device_classes(ctx))
    for tenant in ctx.blueprint.tenants:
        hard = device_quota(ctx, tenant)
        file = f"tenants/{tenant.name}.yaml"
        output.objects.extend(Manifest("tenants", file, quota_object(tenant, ns, hard)) for ns in tenant.namespaces)
    if ctx.blueprint.kubernetes_minor >= ADMISSION_POLICY_MINOR:
        # A family of their own: admission.py's pod policies keep their invariants, and these theirs.
        output.objects.extend(Manifest(ADMISSION_FAMILY, POLICY_FILE, obj) for obj in admission_objects(ctx))
    return output


def device_class(ctx: Context, fact: DeviceClassFact) -> Object:
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": fact.expression}}]}
    if fact.extended_resource is not None:
        spec["extendedResourceName"] = fact.extended_resource
    return {
        "apiVersion": api_version(ctx.blueprint),
        "kind": "DeviceClass",
        "metadata": {"name": fact.name, "labels": {**MANAGED_BY, POOL_LABEL: fact.pool}},
        "spec": spec,
    }


def driver_release(ctx: Context) -> HelmRelease:
    settings = ctx.blueprint.dra
    facts = load_facts()
    return HelmRelease(
        name=RELEASE_NAME,
        chart=facts.chart,
        repository=facts.chart_repository,
        version=settings.chart_version,
        namespace=settings.namespace,
        values=driver_values(ctx),
        values_file=VALUES_FILE,
    )


def driver_values(ctx: Context) -> Object:
    pools = dra_pools(ctx.blueprint)
    dra = {pool.name for pool in pools}
    gates = sharing_gates(w for w in ctx.blueprint.workloads if w.pool in dra)
    tolerations: list[Object] = []
    for pool in pools:
        for taint in pool.taints:
            toleration = {"key": taint.key, "operator": "Exists", "effect": taint.effect}
            if toleration not in tolerations:
                tolerations.append(toleration)
    return {
        "nvidiaDriverRoot": ctx.blueprint.dra.nvidia_driver_root,
        # The chart's validation refuses GPU allocation without it, lest the plugin share nodes with a device plugin;
        # the affinity below is what keeps them apart (checks/dra.py proves no node is in both kinds of pool).
        "gpuResourcesEnabledOverride": True,
        "resources": {"gpus": {"enabled": True}, "computeDomains": {"enabled": False}},
        "resourceApiVersion": api_version(ctx.blueprint),
        # Only the alpha gates a workload's claim sharing needs (checks/dra.py refuses a chart that lacks them).
        **({"featureGates": {gate: True for gate in gates}} if gates else {}),
        "kubeletPlugin": {
            # Static pools by gpustack's pool label, selector pools by their own selector, as the plugin's.
            "affinity": build_affinity(list(pools)),
            "tolerations": tolerations,
        },
    }


def granted_classes(ctx: Context, tenant: Tenant) -> list[str]:
    return [c.name for pool in tenant.pools for c in pool_classes(ctx, pool)]


def device_quota(ctx: Context, tenant: Tenant) -> dict[str, int]:
    """`<class>.deviceclass.resource.k8s.io/devices` -> devices per namespace: the tenant's quota on its DRA pools,
    and 0 on every class it is not granted and on the driver's catch-all classes (which reach every DRA node).

    A class of a granted pool is granted by the pool's quota naming its unit; a pool whose quota is `unlimited` is
    granted whole (no line), one granted with no quota entry is closed (0, GS610). Classes are per pool, so no other
    pool's quota can grant it.
    """
    hard: dict[str, int] = {}
    suffix = load_facts().quota_suffix
    for name in load_facts().chart_classes:
        hard[name + suffix] = 0
    granted = set(tenant.pools)
    for fact in device_classes(ctx):
        if fact.pool not in granted:
            hard[fact.quota_key] = 0
            continue
        quota = {full_resource_name(short): n for short, n in tenant.quota_for(fact.pool).items()}
        if fact.resource in quota:
            hard[fact.quota_key] = quota[fact.resource]
        elif not tenant.unlimited_on(fact.pool):
            hard[fact.quota_key] = 0  # the pool's quota does not name this unit, or it has none: not granted (N4)
    return dict(sorted(hard.items()))


def quota_object(tenant: Tenant, namespace: str, hard: dict[str, int]) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {
            "name": QUOTA_NAME,
            "namespace": namespace,
            "labels": {**MANAGED_BY, TENANT_LABEL: tenant.name},
        },
        "spec": {"hard": {key: str(amount) for key, amount in hard.items()}},
    }


def _cel_list(items: list[str]) -> str:
    return "[" + ", ".join("'" + item + "'" for item in items) + "]"


def _tenant_policy(ctx: Context, tenant: Tenant) -> Object:
    """The tenant's claims name only its granted pools' classes; a claim on the driver's own classes (what the
    upstream examples write) is told which class of its pools to name instead."""
    name = f"gpustack-dra-{tenant.name}"
    classes = granted_classes(ctx, tenant)
    upstream = list(load_facts().chart_classes)
    message = (
        f"tenant {tenant.name} may claim devices only of the DeviceClasses of its granted pools: "
        f"{', '.join(classes) or 'none'}"
    )
    policy = _policy(name, classes, NAMES_ALLOWED, message)
    spec = policy["spec"]
    spec["variables"][1:1] = [
        {"name": "upstream", "expression": _cel_list(upstream)},
        {"name": "allowed", "expression": "variables.classes + variables.upstream"},
    ]
    spec["validations"].insert(
        0,
        {"expression": NO_UPSTREAM, "message": upstream_message(ctx, tenant), "reason": "Forbidden"},
    )
    return policy


def upstream_message(ctx: Context, tenant: Tenant) -> str:
    """Why a claim on the driver's catch-all class is refused, naming each granted pool's classes."""
    pools = [
        f"{pool}: {', '.join(c.name + ' (' + (c.profile or 'whole GPUs') + ')' for c in pool_classes(ctx, pool))}"
        for pool in tenant.pools
        if pool_classes(ctx, pool)
    ]
    where = "; ".join(pools) if pools else "none: tenant has no DRA pool"
    return (
        f"{', '.join(load_facts().chart_classes)} are the DRA driver's classes for every device of every DRA node, "
        f"outside any tenant's quota: name the class of tenant {tenant.name}'s pool instead ({where})"
    )


def _pod_policy(ctx: Context, tenant: Tenant) -> Object | None:
    """A tenant with shared claims (`share: pods`): its pods hold a ResourceClaim by name only as their own
    workload's shared claim, so no other workload (whose quota never counted those devices) rides on one. None for a
    tenant without any: its pods' hand-written claims stay under the class rules and the device quota."""
    shared = sorted(
        f"{ctx.namespace_of(w)}/{claim_name(w.name)}"
        for w in ctx.blueprint.workloads
        if w.tenant == tenant.name and shares_across_pods(w) and w.pool in {p.name for p in dra_pools(ctx.blueprint)}
    )
    if not shared:
        return None
    listed = ", ".join(shared)
    return {
        "apiVersion": ADMISSION_API,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": f"gpustack-dra-pods-{tenant.name}", "labels": dict(MANAGED_BY)},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": ["pods"],
                    }
                ]
            },
            "variables": [{"name": "shared", "expression": _cel_list(shared)}],
            "validations": [
                {
                    "expression": POD_SHARED_CLAIMS.replace("{label}", WORKLOAD_LABEL),
                    "message": (
                        f"a pod of tenant {tenant.name} may hold a ResourceClaim by name only as its own workload's "
                        f"shared claim (<{WORKLOAD_LABEL}>-gpu, written by gpustack for gpu.claim.share: pods): "
                        f"{listed}"
                    ),
                    "reason": "Forbidden",
                }
            ],
        },
    }


def _policy(name: str, classes: list[str], rule: str, message: str) -> Object:
    return {
        "apiVersion": ADMISSION_API,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name, "labels": dict(MANAGED_BY)},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": ["resource.k8s.io"],
                        "apiVersions": ["*"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": ["resourceclaims", "resourceclaimtemplates"],
                    }
                ]
            },
            "variables": [
                {"name": "classes", "expression": _cel_list(classes)},
                {"name": "spec", "expression": CLAIM_SPEC},
                {"name": "requests", "expression": REQUESTS},
            ],
            "validations": [
                {"expression": rule, "message": message, "reason": "Forbidden"},
                {
                    "expression": NO_ADMIN_ACCESS,
                    "message": ADMIN_ACCESS_MESSAGE,
                    "reason": "Forbidden",
                },
            ],
        },
    }


def _binding(name: str, operator: str, namespaces: list[str]) -> Object:
    return {
        "apiVersion": ADMISSION_API,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name, "labels": dict(MANAGED_BY)},
        "spec": {
            "policyName": name,
            "validationActions": ["Deny"],
            "matchResources": {
                "namespaceSelector": {
                    "matchExpressions": [
                        {"key": NAMESPACE_NAME_LABEL, "operator": operator, "values": sorted(set(namespaces))}
                    ]
                }
            },
        },
    }


def admission_objects(ctx: Context) -> list[Object]:
    """Per tenant an allow-list of its granted pools' classes (bound to its namespaces by name, which nobody can
    relabel); for every other namespace but the system ones a deny-list of the granted pools' classes and the
    driver's catch-all classes."""
    objects: list[Object] = []
    for tenant in ctx.blueprint.tenants:
        name = f"gpustack-dra-{tenant.name}"
        objects += [_tenant_policy(ctx, tenant), _binding(name, "In", list(tenant.namespaces))]
        pods = _pod_policy(ctx, tenant)
        if pods is not None:
            objects += [pods, _binding(pods["metadata"]["name"], "In", list(tenant.namespaces))]
    granted = {pool for tenant in ctx.blueprint.tenants for pool in tenant.pools}
    closed = [*load_facts().chart_classes, *(c.name for c in device_classes(ctx) if c.pool in granted)]
    owned = [ns for tenant in ctx.blueprint.tenants for ns in tenant.namespaces]
    skipped = [*owned, *ctx.system_namespaces, ctx.blueprint.dra.namespace]
    message = (
        "a namespace of no gpustack tenant may not claim the DeviceClasses of pools granted to tenants, "
        f"nor the driver's classes that reach every DRA node: {', '.join(closed)}"
    )
    objects += [_policy(UNOWNED_POLICY, closed, NAMES_NONE_OF, message), _binding(UNOWNED_POLICY, "NotIn", skipped)]
    return objects

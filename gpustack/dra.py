"""Dynamic Resource Allocation facts: which pools use it, their DeviceClasses, and what each Kubernetes version serves.

Written once here and read by the checks, the DRA compile family, the workloads, admission and the simulator, so a
class name, its CEL selector and its quota key exist in exactly one place. The driver's and Kubernetes' facts are
data (gpustack/data/dra.yaml, with sources).

A DRA pool gets one DeviceClass per unit it offers: its GPU model (whole GPUs), or each MIG profile its layout makes.
Classes are per pool, not per model, so a tenant's grant and quota name exactly the pool's devices. A class selects
devices by the driver's attributes only (CEL sees no node), so two DRA pools of one model select each other's
devices: the pods' pool affinity and taints keep them apart, as for device-plugin pools.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml

from gpustack.catalog import GpuModel
from gpustack.context import Context
from gpustack.model import Allocation, Blueprint, ClaimShare, ClaimSharing, NodePool, Workload
from gpustack.names import WORKLOAD_LABEL
from gpustack.needs import Requests
from gpustack.offers import Offer
from gpustack.plan import Object

V1 = "resource.k8s.io/v1"
V1BETA2 = "resource.k8s.io/v1beta2"
V1BETA1 = "resource.k8s.io/v1beta1"
CLASS_SUFFIX = "gpustack.io"
REQUEST_NAME = "gpu"  # the one request of each claim, and the pod's name for its claim
ALL_MODE_DEVICES = 32  # what quota counts for allocationMode: All (AllocationResultsMaxSize)


@dataclass(frozen=True)
class SharingFeature:
    """A claim-level sharing strategy of the driver: the feature gate that turns it on and the first chart version
    that has the gate."""

    gate: str
    since: str


@dataclass(frozen=True)
class DraFacts:
    driver: str
    chart: str
    chart_repository: str
    attributes: tuple[str, ...]
    chart_classes: tuple[str, ...]
    feature_gates: Mapping[str, str]
    api_minor: Mapping[str, int]  # resource.k8s.io version -> the first Kubernetes minor that serves it
    extended_resource_minor: int
    quota_suffix: str
    config_api: str  # the apiVersion of the driver's opaque claim configs (GpuConfig)
    claim_sharing: Mapping[str, SharingFeature]  # GpuConfig sharing strategy -> its gate and first chart version


@functools.cache
def load_facts() -> DraFacts:
    text = resources.files("gpustack").joinpath("data/dra.yaml").read_text(encoding="utf-8")
    data: dict[str, Any] = yaml.safe_load(text)
    driver, kube = data["driver"], data["kubernetes"]
    return DraFacts(
        driver=driver["name"],
        chart=driver["chart"],
        chart_repository=driver["chart_repository"],
        attributes=tuple(driver["attributes"]),
        chart_classes=tuple(driver["chart_classes"]),
        feature_gates=dict(driver["feature_gates"]),
        api_minor=dict(kube["api_versions"]),
        extended_resource_minor=kube["extended_resource_minor"],
        quota_suffix=kube["quota_suffix"],
        config_api=driver["config_api"],
        claim_sharing={
            strategy: SharingFeature(feature["gate"], str(feature["since"]))
            for strategy, feature in driver["claim_sharing"].items()
        },
    )


def is_dra(pool: NodePool) -> bool:
    return pool.allocation is Allocation.DRA


def dra_pools(blueprint: Blueprint) -> list[NodePool]:
    return [pool for pool in blueprint.pools if is_dra(pool)]


def api_version(blueprint: Blueprint) -> str:
    """The resource.k8s.io version every DRA object uses: v1 unless the blueprint opted in to a beta."""
    return blueprint.dra.api_version or V1


def first_minor(version: str) -> int:
    """The Kubernetes minor that first serves a resource.k8s.io version."""
    return load_facts().api_minor[version]


def extended_resources_served(blueprint: Blueprint) -> bool:
    """DeviceClass.extendedResourceName: only in resource.k8s.io/v1, on by default from 1.36 (DRAExtendedResource)."""
    return api_version(blueprint) == V1 and blueprint.kubernetes_minor >= load_facts().extended_resource_minor


@dataclass(frozen=True)
class DeviceClassFact:
    """One gpustack DeviceClass: the devices of one unit (a whole GPU of the pool's model, or one MIG profile)."""

    name: str
    pool: str
    resource: str  # the extended resource the same unit is on a device-plugin pool (nvidia.com/gpu, ...mig-3g.40gb)
    profile: str | None
    expression: str
    extended_resource: str | None  # set where the version serves it and no other DRA class maps the same name

    @property
    def quota_key(self) -> str:
        return self.name + load_facts().quota_suffix


def class_name(pool: str, profile: str | None) -> str:
    """`gpu.<pool>.gpustack.io`, or `mig-<profile>.<pool>.gpustack.io` ('+' of `1g.10gb+me` becomes '-')."""
    unit = "gpu" if profile is None else "mig-" + profile.replace("+", "-")
    return f"{unit}.{pool}.{CLASS_SUFFIX}"


def quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def selector(model: GpuModel, profile: str | None) -> str:
    """The CEL selecting the driver's devices of `model` (and MIG `profile`): NVML's product names from the catalog,
    and for whole GPUs at least the smallest memory any driver reports for the model (bytes, as the driver
    publishes it), so a 40 GB board of the same name never passes for the 80 GB one."""
    driver = load_facts().driver
    attributes = f"device.attributes[{quote(driver)}]"
    names = ", ".join(quote(name) for name in model.nvml_names)
    parts = [f"device.driver == {quote(driver)}"]
    if profile is None:
        parts.append(f"{attributes}.type == 'gpu'")
    else:
        parts.append(f"{attributes}.type == 'mig'")
        parts.append(f"{attributes}.profile == {quote(profile)}")
    parts.append(f"{attributes}.productName in [{names}]")
    if profile is None and model.memory_mib:
        least = min(model.memory_mib)
        parts.append(f"device.capacity[{quote(driver)}].memory.compareTo(quantity('{least}Mi')) >= 0")
    return " && ".join(parts)


def _classes(ctx: Context) -> tuple[DeviceClassFact, ...]:
    drafts: list[tuple[NodePool, Offer, GpuModel]] = []
    for pool in dra_pools(ctx.blueprint):
        model = ctx.models.get(pool.name)
        if model is None:
            continue
        drafts.extend((pool, offer, model) for offer in ctx.offers.get(pool.name, ()))
    mapped = extended_resources_served(ctx.blueprint)
    wanted: dict[str, int] = {}
    for _pool, offer, _model in drafts:
        wanted[offer.resource] = wanted.get(offer.resource, 0) + 1
    return tuple(
        DeviceClassFact(
            name=class_name(pool.name, offer.profile),
            pool=pool.name,
            resource=offer.resource,
            profile=offer.profile,
            expression=selector(model, offer.profile),
            # Two classes mapping one extended resource leave the scheduler to pick either: map none of them.
            extended_resource=offer.resource if mapped and wanted[offer.resource] == 1 else None,
        )
        for pool, offer, model in drafts
    )


def device_classes(ctx: Context) -> tuple[DeviceClassFact, ...]:
    """Every gpustack DeviceClass, in blueprint order of pools and offers; computed once per context."""
    return ctx.derive("dra.classes", _classes)


def class_for(ctx: Context, pool: str, resource: str) -> DeviceClassFact | None:
    """The class a DRA pool's unit `resource` (as `Context.requests` resolved it) is claimed from."""
    return next((c for c in device_classes(ctx) if c.pool == pool and c.resource == resource), None)


def pool_classes(ctx: Context, pool: str) -> list[DeviceClassFact]:
    return [c for c in device_classes(ctx) if c.pool == pool]


def device_request(blueprint: Blueprint, device_class: str, count: int) -> dict[str, Any]:
    """One claim request for `count` devices of a class, in the shape of the blueprint's resource.k8s.io version
    (v1beta1 puts the class on the request; v1beta2 and v1 under `exactly`)."""
    exact = {"deviceClassName": device_class, "allocationMode": "ExactCount", "count": count}
    if api_version(blueprint) == V1BETA1:
        return {"name": REQUEST_NAME, **exact}
    return {"name": REQUEST_NAME, "exactly": exact}


def claim_template_name(workload: str) -> str:
    return f"{workload}-gpu"


def claim_name(workload: str) -> str:
    """The ResourceClaim gpustack writes for a `share: pods` workload (the same name a template would have: one
    workload has one or the other)."""
    return f"{workload}-gpu"


def share_of(workload: Workload) -> ClaimShare:
    claim = workload.gpu.claim
    return ClaimShare.CONTAINERS if claim is None else claim.share


def shares_across_pods(workload: Workload) -> bool:
    return share_of(workload) is ClaimShare.PODS


def sharing_gates(workloads: Iterable[Workload]) -> list[str]:
    """The driver feature gates the workloads' claim sharing needs, sorted (the chart's `featureGates`)."""
    facts = load_facts().claim_sharing
    gates = {
        facts[w.gpu.claim.sharing.strategy].gate
        for w in workloads
        if w.gpu.claim is not None and w.gpu.claim.sharing is not None
    }
    return sorted(gates)


def claim_config(sharing: ClaimSharing) -> dict[str, Any]:
    """The claim's opaque GpuConfig for the driver (its configapi: `sharing.strategy` with timeSlicingConfig or
    mpsConfig), applied to the claim's one request."""
    facts = load_facts()
    options: dict[str, Any] = {}
    if sharing.strategy == "TimeSlicing":
        if sharing.interval is not None:
            options = {"timeSlicingConfig": {"interval": sharing.interval}}
    else:
        mps: dict[str, Any] = {}
        if sharing.active_thread_percentage is not None:
            mps["defaultActiveThreadPercentage"] = sharing.active_thread_percentage
        if sharing.pinned_memory_limit is not None:
            mps["defaultPinnedDeviceMemoryLimit"] = sharing.pinned_memory_limit
        if mps:
            options = {"mpsConfig": mps}
    return {
        "requests": [REQUEST_NAME],
        "opaque": {
            "driver": facts.driver,
            "parameters": {
                "apiVersion": facts.config_api,
                "kind": "GpuConfig",
                "sharing": {"strategy": sharing.strategy, **options},
            },
        },
    }


def claim_object(ctx: Context, workload: Workload, namespace: str, pool: str, requests: Requests) -> Object | None:
    """What a DRA workload's pods claim their devices from: a ResourceClaimTemplate (`share: containers`, one claim
    per pod) or one ResourceClaim (`share: pods`); None where the unit has no class."""
    resource, count = requests.items[0]
    fact = class_for(ctx, pool, resource)
    if fact is None:
        return None
    devices: dict[str, Any] = {"requests": [device_request(ctx.blueprint, fact.name, count)]}
    claim = workload.gpu.claim
    if claim is not None and claim.sharing is not None:
        devices["config"] = [claim_config(claim.sharing)]
    metadata = {"namespace": namespace, "labels": {WORKLOAD_LABEL: workload.name}}
    if shares_across_pods(workload):
        return {
            "apiVersion": api_version(ctx.blueprint),
            "kind": "ResourceClaim",
            "metadata": {"name": claim_name(workload.name), **metadata},
            "spec": {"devices": devices},
        }
    return {
        "apiVersion": api_version(ctx.blueprint),
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": claim_template_name(workload.name), **metadata},
        "spec": {"spec": {"devices": devices}},
    }


def pod_claim(workload: Workload) -> dict[str, str]:
    """The pod's one entry in `resourceClaims`: its own claim from the workload's template, or the workload's
    shared ResourceClaim by name."""
    if shares_across_pods(workload):
        return {"name": REQUEST_NAME, "resourceClaimName": claim_name(workload.name)}
    return {"name": REQUEST_NAME, "resourceClaimTemplateName": claim_template_name(workload.name)}


def claim_devices(pod_spec: dict[str, Any], workload: Workload, requests: Requests) -> None:
    """Make a pod claim its GPUs through the workload's claim instead of requesting extended resources; every
    container of the pod holds it (the driver shares one claim's devices between the containers that list it).

    The GPU units leave requests and limits: on a DRA node nothing advertises them, so a pod asking for both a claim
    and `nvidia.com/gpu` would never fit (or, with an extendedResourceName class, get twice the devices).
    """
    gpu = {resource for resource, _amount in requests.items}
    pod_spec["resourceClaims"] = [pod_claim(workload)]
    for container in pod_spec["containers"]:
        resources = container.get("resources", {})
        for which in ("requests", "limits"):
            if which in resources:
                resources[which] = {k: v for k, v in resources[which].items() if k not in gpu}
        resources["claims"] = [{"name": REQUEST_NAME}]


def claim_problems(ctx: Context, workload: Workload, spec: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(problem, hint) for a rendered pod spec whose `resourceClaims` are not exactly gpustack's: on a DRA pool the
    one claim from the workload's template (without it the pods get no GPU, or wait for `nvidia.com/*` that DRA
    nodes do not advertise), elsewhere none. A claim gpustack did not write (another workload's template, a
    ResourceClaim by name) would hand the pod devices its pool, quota and affinity checks never saw."""
    pool = ctx.pools.get(workload.pool)
    if pool is None:
        return []
    claims = spec.get("resourceClaims")
    listed = claims if isinstance(claims, list) else ([] if claims is None else [claims])
    expected = [pod_claim(workload)]
    if not is_dra(pool):
        if not listed:
            return []
        return [
            (
                f"pod spec has resourceClaims, and pool '{pool.name}' hands out its GPUs through the device plugin: "
                "a claim would take devices no quota or pool check of gpustack's sees",
                "drop resourceClaims from the pod spec; request GPUs as gpustack's manifest does",
            )
        ]
    if listed == expected:
        return []
    what = _claim_words(workload)
    if expected[0] not in listed:
        return [
            (
                f"pod spec claims no devices from {what}, and pool '{pool.name}' hands out its GPUs only through DRA "
                "claims",
                "keep the pod's claim: `resourceClaims: {{ resourceClaims | toyaml }}` in the pod spec and "
                "`claims: [{name: gpu}]` in the resources of each container that uses the GPUs",
            )
        ]
    return [
        (
            f"pod spec has resourceClaims other than gpustack's one claim from {what}: a claim gpustack did not "
            "write (another workload's or another tenant's) takes devices its checks never saw",
            "keep exactly `resourceClaims: {{ resourceClaims | toyaml }}` in the pod spec; to share one claim "
            "between pods, write `gpu.claim: {share: pods}` on the workload",
        )
    ]


def _claim_words(workload: Workload) -> str:
    if shares_across_pods(workload):
        return f"ResourceClaim {claim_name(workload.name)}"
    return f"ResourceClaimTemplate {claim_template_name(workload.name)}"

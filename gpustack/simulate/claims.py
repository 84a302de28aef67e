"""DRA claims as the DynamicResources scheduler plugin sees them: devices per class on each node, and per pod.

A DRA pool's nodes advertise no `nvidia.com/*` resource; the driver publishes each GPU (or MIG device) in a
ResourceSlice, and gpustack's DeviceClasses select them per pool unit (gpustack/dra.py). The simulator keeps those
device counts beside the node's resources under a name no Kubernetes resource can have (`claim:<class>`), and a pod
that claims devices from a ResourceClaimTemplate asks for them there. The plugin's Filter runs after
NodeResourcesFit and refuses a node whose devices cannot satisfy every claim with `cannot allocate all claims`,
as UnschedulableAndUnresolvable (evicting pods frees no device in its dry run); its PostFilter then says
`still not schedulable` for a pod whose claims hold nothing it could deallocate.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from gpustack.context import Context
from gpustack.dra import load_facts, pool_classes
from gpustack.model import NodePool
from gpustack.simulate.pods import PodShape

PREFIX = "claim:"


def claim_resource(device_class: str) -> str:
    return PREFIX + device_class


def is_claim(resource: str) -> bool:
    return resource.startswith(PREFIX)


def display_name(resource: str) -> str:
    """How a report names a resource: a claim resource as the devices of its DeviceClass."""
    return f"devices of DeviceClass {resource.removeprefix(PREFIX)}" if is_claim(resource) else resource


def device_quota_key(resource: str) -> str:
    """The ResourceQuota key that counts a claim resource's devices: `<class>.deviceclass.resource.k8s.io/devices`."""
    return resource.removeprefix(PREFIX) + load_facts().quota_suffix


def node_devices(ctx: Context, pool: NodePool) -> dict[str, int]:
    """Devices one node of a DRA pool publishes, per gpustack DeviceClass."""
    per_node = {offer.resource: offer.per_node for offer in ctx.offers.get(pool.name, ())}
    return {claim_resource(c.name): per_node[c.resource] for c in pool_classes(ctx, pool.name)}


def templates_by_key(objects: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], Mapping[str, Any]]:
    return {
        (str(o["metadata"].get("namespace", "")), str(o["metadata"]["name"])): o
        for o in objects
        if o.get("kind") == "ResourceClaimTemplate"
    }


def claimed_devices(
    spec: Mapping[str, Any], namespace: str, templates: Mapping[tuple[str, str], Mapping[str, Any]]
) -> dict[str, int]:
    """Devices per class the pod's template claims ask for (ExactCount requests; v1 or the betas' shape).

    KeyError for a template the plan does not hold: the pod would wait for it forever."""
    wanted: dict[str, int] = {}
    for claim in spec.get("resourceClaims") or ():
        name = claim.get("resourceClaimTemplateName")
        if name is None:
            continue
        template = templates[(namespace, str(name))]
        for request in template["spec"]["spec"]["devices"].get("requests") or ():
            exact = request.get("exactly", request)
            if exact.get("allocationMode", "ExactCount") != "ExactCount":
                raise ValueError(f"claim template {name}: only ExactCount requests are simulated")
            resource = claim_resource(str(exact["deviceClassName"]))
            wanted[resource] = wanted.get(resource, 0) + int(exact.get("count", 1))
    return wanted


def with_claims(shape: PodShape, devices: Mapping[str, int]) -> PodShape:
    if not devices:
        return shape
    merged = dict(shape.requests)
    for resource, count in devices.items():
        merged[resource] = merged.get(resource, 0) + count
    return dataclasses.replace(shape, requests=tuple(sorted(merged.items())))


def holds_claims(shape: PodShape) -> bool:
    return any(is_claim(resource) for resource, _ in shape.requests)

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
    """The plan's ResourceClaimTemplates by (namespace, name), and its shared ResourceClaims by (namespace,
    `claim/<name>`): one lookup for both ways a pod holds a claim."""
    found: dict[tuple[str, str], Mapping[str, Any]] = {}
    for o in objects:
        if o.get("kind") in ("ResourceClaimTemplate", "ResourceClaim"):
            prefix = "claim/" if o["kind"] == "ResourceClaim" else ""
            found[(str(o["metadata"].get("namespace", "")), prefix + str(o["metadata"]["name"]))] = o
    return found


def shared_claim(spec: Mapping[str, Any], namespace: str) -> str | None:
    """`namespace/name` of the ResourceClaim the pod holds by name (shared with the other pods that name it)."""
    for claim in spec.get("resourceClaims") or ():
        name = claim.get("resourceClaimName") if isinstance(claim, Mapping) else None
        if name is not None:
            return f"{namespace}/{name}"
    return None


def claimed_devices(
    spec: Mapping[str, Any], namespace: str, templates: Mapping[tuple[str, str], Mapping[str, Any]]
) -> dict[str, int]:
    """Devices per class the pod's claims ask for (ExactCount requests; v1 or the betas' shape): its own from a
    template, and a shared ResourceClaim's (which the caller charges once, to the first pod holding it).

    KeyError for a template or claim the plan does not hold: the pod would wait for it forever."""
    wanted: dict[str, int] = {}
    for claim in spec.get("resourceClaims") or ():
        template_name, claim_name = claim.get("resourceClaimTemplateName"), claim.get("resourceClaimName")
        if template_name is not None:
            devices = templates[(namespace, str(template_name))]["spec"]["spec"]["devices"]
        elif claim_name is not None:
            devices = templates[(namespace, f"claim/{claim_name}")]["spec"]["devices"]
        else:
            continue
        for request in devices.get("requests") or ():
            exact = request.get("exactly", request)
            if exact.get("allocationMode", "ExactCount") != "ExactCount":
                raise ValueError(f"claim {template_name or claim_name}: only ExactCount requests are simulated")
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

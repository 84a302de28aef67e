"""DRA-backed extended resources (KEP-5004, DeviceClass.spec.extendedResourceName), by Kubernetes version.

A pod asking plain `nvidia.com/gpu` lands on a DRA pool's node only where kube-scheduler serves that request from
a DeviceClass: the class names the extended resource, the node does not advertise it (no device plugin there), and
the DRAExtendedResource feature gate is on: alpha and off in 1.34 and 1.35, beta and on from 1.36, GA in 1.37
(gpustack/data/dra.yaml, with its sources). The scheduler then claims that many devices of the class on the node
(a claim it writes for the pod), so the request takes the class's devices beside the claims of template pods; where
the devices run short the DynamicResources filter refuses the node (`cannot allocate all claims`). Before 1.36, or
without the field (compile writes it only for a 1.36+ blueprint on resource.k8s.io/v1), the node simply lacks the
resource: `Insufficient nvidia.com/gpu`, as docs/dra.md says.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from gpustack.dra import load_facts
from gpustack.simulate.claims import claim_resource
from gpustack.simulate.inventory import Node
from gpustack.simulate.messages import KubeVersion


def served_resources(objects: Iterable[Mapping[str, Any]], version: KubeVersion) -> dict[str, str]:
    """Extended resource name -> the claim resource of the DeviceClass that serves it, where the version does."""
    if version.minor < load_facts().extended_resource_minor:
        return {}
    out: dict[str, str] = {}
    for obj in objects:
        spec = obj.get("spec") if obj.get("kind") == "DeviceClass" else None
        name = spec.get("extendedResourceName") if isinstance(spec, Mapping) else None
        if isinstance(name, str) and isinstance(obj.get("metadata"), Mapping):
            # Two classes naming one resource: the cluster picks the newer one; gpustack never writes two.
            out.setdefault(name, claim_resource(str(obj["metadata"]["name"])))
    return out


def serve_extended(
    nodes: Sequence[Node], objects: Iterable[Mapping[str, Any]], version: KubeVersion
) -> tuple[Node, ...]:
    """The nodes, those that publish a mapped class's devices knowing which extended resources the devices serve."""
    served = served_resources(objects, version)
    if not served:
        return tuple(nodes)
    out = []
    for node in nodes:
        mine = {name: claim for name, claim in served.items() if claim in node.allocatable}
        out.append(replace(node, served=mine) if mine else node)
    return tuple(out)

"""The cloud half of `GpuCluster`: each cloud pool's node-pool resource (GKE, EKS, AKS) or Karpenter NodePool.

Pulumi-only, beside `gpustack.deploy`. What to register is `gpustack.compile.cloud.node_pool_specs` (pure data); this
module adds what only the stack knows (`CloudCluster`: which cluster, where, its node role and subnets) and imports a
provider's package only when a pool uses that provider: `pip install -e '.[gke]'` (pulumi-gcp), `.[eks]`
(pulumi-aws), `.[aks]` (pulumi-azure-native). Karpenter NodePools need only pulumi-kubernetes.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi_kubernetes.apiextensions import CustomResource

from gpustack.compile.cloud import NodePoolSpec

EXTRAS = {
    "gke": ("pulumi_gcp.container", "gke"),
    "eks": ("pulumi_aws.eks", "eks"),
    "aks": ("pulumi_azure_native.containerservice", "aks"),
}


class MissingCloudPackage(pulumi.RunError):
    """A pool needs a provider package that is not installed: said as the pip command that installs it."""


@dataclass(frozen=True)
class CloudCluster:
    """The cluster the cloud pools join, as the stack knows it (Pulumi inputs: strings or outputs)."""

    cluster: Any = None
    """GKE: the cluster's name or id; EKS: the cluster name; AKS: the managed cluster's name."""
    location: Any = None
    """GKE: the cluster's region or zone."""
    project: Any = None
    """GKE: the project (None: the provider's)."""
    node_role_arn: Any = None
    """EKS: the IAM role the nodes run as."""
    subnet_ids: Any = None
    """EKS: the subnets the node groups launch into."""
    resource_group_name: Any = None
    """AKS: the resource group of the managed cluster."""
    depends_on: Sequence[pulumi.Resource] = ()
    """What the node pools wait for: typically the cluster resource itself."""
    provider: pulumi.ProviderResource | None = None
    """The gcp, aws or azure-native provider (None: the default one)."""


def _module(provider: str) -> Any:
    name, extra = EXTRAS[provider]
    try:
        return importlib.import_module(name)
    except ImportError:
        raise MissingCloudPackage(
            f"a {provider} pool needs {name.split('.')[0]}: pip install 'gpustack[{extra}]'"
        ) from None


def require_packages(specs: Sequence[NodePoolSpec]) -> None:
    """Import every provider package the specs need, before anything is registered: a missing one stops `pulumi up`
    with the pip command, not halfway through the component."""
    for provider in sorted({spec.provider for spec in specs} & set(EXTRAS)):
        _module(provider)


def cluster_inputs(spec: NodePoolSpec, target: CloudCluster) -> dict[str, Any]:
    """The inputs from the stack each provider's node pool needs beside gpustack's spec."""
    given = {
        "gke": {"cluster": target.cluster, "location": target.location, "project": target.project},
        "eks": {"cluster_name": target.cluster, "node_role_arn": target.node_role_arn, "subnet_ids": target.subnet_ids},
        "aks": {"resource_name_": target.cluster, "resource_group_name": target.resource_group_name},
    }.get(spec.provider, {})
    return {key: value for key, value in given.items() if value is not None}


def register_node_pool(
    name: str, spec: NodePoolSpec, target: CloudCluster, opts: Callable[..., pulumi.ResourceOptions]
) -> pulumi.Resource:
    """One spec as its Pulumi resource, a child of the component."""
    if spec.provider == "karpenter":
        doc = spec.args
        return CustomResource(
            name,
            api_version=doc["apiVersion"],
            kind=doc["kind"],
            metadata=doc["metadata"],
            spec=doc["spec"],
            opts=opts(target.depends_on, None, True),
        )
    module = _module(spec.provider)
    resource: Callable[..., pulumi.Resource] = {
        "gke": lambda: module.NodePool,
        "eks": lambda: module.NodeGroup,
        "aks": lambda: module.AgentPool,
    }[spec.provider]()
    options = opts(target.depends_on, target.provider, False)
    if spec.provider == "eks" and "scaling_config" in spec.args:
        # The cluster autoscaler moves desired_size; Pulumi must not set it back on every `up`.
        options = pulumi.ResourceOptions.merge(
            options, pulumi.ResourceOptions(ignore_changes=["scalingConfig.desiredSize"])
        )
    return resource(name, **spec.args, **cluster_inputs(spec, target), opts=options)

"""`GpuCluster`: a Pulumi component that applies exactly what `gpustack compile` writes.

This is the only gpustack module that imports pulumi or pulumi_kubernetes (the `pulumi` extra);
`gpustack validate` and `gpustack compile` never load it. The stack in `stacks/` and teams with their
own Pulumi programs both use it.

What it registers, in what order and after what, is decided in `gpustack.registration` as plain data (see its
docstring for the stages); this module only turns each `Registration` into its Pulumi resource. Cloud pools
(the Plan's `node_pools`, as compile made them) become their provider's node pool: pulumi-gcp, -aws or
-azure-native (extras gke, eks, aks) imported only when a pool needs it, or a Karpenter NodePool through
pulumi-kubernetes.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi_kubernetes.apiextensions import CustomResource
from pulumi_kubernetes.core.v1 import Namespace, Node, NodePatch
from pulumi_kubernetes.helm import v3 as helm_v3
from pulumi_kubernetes.helm.v4 import Chart, RepositoryOptsArgs
from pulumi_kubernetes.provider import Provider
from pulumi_kubernetes.yaml.v2 import ConfigGroup

from gpustack.diagnostic import Diagnostic
from gpustack.model import Blueprint
from gpustack.plan import HelmRelease, NodePoolSpec
from gpustack.registration import (
    FIELD_MANAGER_ANNOTATION,
    PATCH_FORCE_ANNOTATION,
    ChartInstall,
    InvalidBlueprint,
    NodeLabels,
    ObjectGroup,
    Registration,
    RegistrationOptions,
    ReleaseNamespace,
    deploy_plan,
    group_of,
    load_blueprint,
    pool_outputs,
    registrations,
    release_outputs,
    tenant_outputs,
)
from gpustack.report import format_text

# The pure names tests and Pulumi programs have imported from here.
__all__ = [
    "FIELD_MANAGER_ANNOTATION",
    "PATCH_FORCE_ANNOTATION",
    "TYPE",
    "BlueprintError",
    "CloudCluster",
    "GpuCluster",
    "GpuClusterArgs",
    "MissingCloudCluster",
    "MissingCloudPackage",
    "deploy_plan",
    "group_of",
]

TYPE = "gpustack:index:GpuCluster"


class BlueprintError(pulumi.RunError):
    """The blueprint is invalid: the message is what `gpustack validate` prints, so Pulumi shows it without a
    traceback (a RunError ends the program cleanly)."""

    def __init__(self, message: str, diagnostics: Sequence[Diagnostic]) -> None:
        super().__init__(message)
        self.diagnostics = tuple(diagnostics)


# Cloud node pools: what to register is gpustack.compile.cloud's (pure data); the provider's package is imported
# only when a pool uses it (extras gke, eks, aks), so Kubernetes-only programs never need one.
EXTRAS = {
    "gke": ("pulumi_gcp.container", "gke"),
    "eks": ("pulumi_aws.eks", "eks"),
    "aks": ("pulumi_azure_native.containerservice", "aks"),
}


class MissingCloudPackage(pulumi.RunError):
    """A pool needs a provider package that is not installed: said as the pip command that installs it."""


class MissingCloudCluster(pulumi.RunError):
    """A cloud pool's node pool needs an input only the stack knows (the cluster it joins, EKS's node role and
    subnets, AKS's resource group), and `GpuClusterArgs.cloud` does not give it: said before anything is registered,
    where the provider SDK would stop `pulumi up` with a TypeError traceback halfway through the component."""


# The CloudCluster fields each provider's SDK requires (pulumi-gcp NodePool: cluster; pulumi-aws NodeGroup:
# clusterName, nodeRoleArn, subnetIds; pulumi-azure-native AgentPool: resourceName, resourceGroupName).
REQUIRED_CLUSTER_FIELDS = {
    "gke": ("cluster",),
    "eks": ("cluster", "node_role_arn", "subnet_ids"),
    "aks": ("cluster", "resource_group_name"),
}


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


def require_cluster_inputs(specs: Sequence[NodePoolSpec], target: CloudCluster) -> None:
    """Every input the specs' providers require from the stack is given, or `pulumi up` stops naming what is missing."""
    for spec in specs:
        missing = [field for field in REQUIRED_CLUSTER_FIELDS.get(spec.provider, ()) if getattr(target, field) is None]
        if missing:
            raise MissingCloudCluster(
                f"pool '{spec.pool}' is a {spec.provider} pool and GpuClusterArgs.cloud gives no "
                f"{', '.join(missing)}: pass CloudCluster({', '.join(f'{field}=...' for field in missing)}) "
                "(the stack's gpustack:cloud config, docs/cloud.md)"
            )


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
        # The EC2NodeClass (AMI, role, subnets, disks) is the stack's: read, not made. A missing one stops `pulumi up`
        # here with its name, instead of a NodePool whose NodeClaims never launch.
        node_class = CustomResource.get(
            f"{name}-node-class",
            api_version="karpenter.k8s.aws/v1",
            kind="EC2NodeClass",
            id=doc["spec"]["template"]["spec"]["nodeClassRef"]["name"],
            opts=opts(target.depends_on, None, True),
        )
        return CustomResource(
            name,
            api_version=doc["apiVersion"],
            kind=doc["kind"],
            metadata=doc["metadata"],
            spec=doc["spec"],
            opts=opts([*target.depends_on, node_class], None, True),
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


@dataclass(frozen=True)
class GpuClusterArgs:
    """What to apply, and how far gpustack may reach into objects others also manage."""

    blueprint: str | os.PathLike[str] | Blueprint
    """A blueprint file (relative paths are relative to the working directory, which for `pulumi up` is
    the project directory), or a Blueprint built in code: it goes through the same checks as a file, and an error
    refuses it (its diagnostics name their JSON paths, as it has no text)."""
    provider: Provider | None = None
    """The Kubernetes provider every child uses; None: the default provider, configured by the stack's
    `kubernetes:*` settings (context, renderYamlToDirectory, upsertExistingObjects, ...)."""
    retain_node_labels_on_delete: bool = True
    """Keep gpustack's labels (and owned taints) on nodes when a node patch is deleted: by `pulumi destroy`,
    or when a node leaves the blueprint. Deleting a patch relinquishes its fields, which removes them, and
    removing `nvidia.com/mig.config` or the device-plugin config label from a live node can make the GPU
    Operator re-partition its GPUs under running pods. Kept labels are removed by hand with
    `kubectl label node NODE gpustack.io/pool- nvidia.com/device-plugin.config- nvidia.com/mig.config-`."""
    own_node_taints: bool = False
    """Also apply each pool's taints. `spec.taints` is an atomic list under server-side apply, so the patch
    makes the pool's taints the node's whole list (forced, as the `gpustack` field manager): taints set by
    others (control-plane, cloud provider, autoscaler, `kubectl taint`) are dropped, and turning it off later
    removes the taints it applied. Off, gpustack never touches taints: taint with `nodes/label-nodes.sh`
    from `gpustack compile`, one taint at a time."""
    object_field_manager: str | None = None
    """Server-side-apply field manager for the compiled objects (not the node patches, which always use
    `gpustack`). None: Pulumi's own per-resource manager, and the objects are applied exactly as compiled.
    "gpustack": the manager `kubectl apply --server-side --field-manager=gpustack -k` used, for adopting a
    cluster set up from `gpustack compile` output, so Pulumi takes over kubectl's ownership instead of
    sharing it (adds the `pulumi.com/patchFieldManager` annotation to every object)."""
    await_workloads: bool = True
    """Wait for Deployments, StatefulSets and Jobs to become ready. Off: `pulumi up` returns once they are
    accepted; useful when model downloads outlast pulumi-kubernetes' default 10-minute await."""
    cloud: CloudCluster | None = None
    """The cluster cloud pools join (its name, location, node role, subnets, resource group) and what they wait
    for. None: only Karpenter pools can be registered; a GKE, EKS or AKS pool stops `pulumi up` naming the fields its
    provider requires (MissingCloudCluster)."""


class GpuCluster(pulumi.ComponentResource):
    """A gpustack blueprint, compiled and applied. Children: ConfigGroups per stage, Helm Charts and Releases,
    NodePatches."""

    pools: list[dict[str, Any]]
    tenants: list[dict[str, Any]]
    releases: list[dict[str, str]]
    nodes: list[str]
    outputs: dict[str, Any]
    config_groups: dict[str, ConfigGroup]
    charts: dict[str, Chart | helm_v3.Release]  # by release name; a Release where the chart needs hooks
    node_patches: dict[str, NodePatch]
    namespaces: dict[str, Namespace]
    node_pools: dict[str, pulumi.Resource]  # by pool name: the provider's node pool or Karpenter NodePool

    def __init__(self, name: str, args: GpuClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        # Validate and compile before registering anything: an invalid blueprint leaves no half-made component.
        try:
            loaded = load_blueprint(args.blueprint)
            deploy = deploy_plan(
                loaded.context,
                own_node_taints=args.own_node_taints,
                warnings=loaded.diagnostics,
                source_line=loaded.source_line,
            )
        except InvalidBlueprint as invalid:
            raise BlueprintError(str(invalid), invalid.diagnostics) from None
        if deploy.warnings:
            # Warnings do not stop `pulumi up`, as they do not stop `gpustack compile`; they show in its output.
            pulumi.log.warn(format_text(deploy.warnings, loaded.source_line))
        node_pools = deploy.plan.node_pools
        require_packages(node_pools)
        require_cluster_inputs(node_pools, args.cloud or CloudCluster())
        super().__init__(TYPE, name, None, opts)
        self._args = args

        self.config_groups, self.namespaces, self.node_patches, self.charts = {}, {}, {}, {}
        options = RegistrationOptions(
            args.retain_node_labels_on_delete, args.object_field_manager, args.await_workloads
        )
        # Node pools first and on their own: they depend on the cloud cluster, not on anything in it.
        self.node_pools = {
            spec.pool: register_node_pool(
                f"{name}-node-pool-{spec.pool}", spec, args.cloud or CloudCluster(), self._cloud_opts
            )
            for spec in node_pools
        }
        made: dict[str, pulumi.Resource] = {}
        for step in registrations(deploy, name, options):
            made[step.name] = self._register(step, [made[dependency] for dependency in step.depends_on])

        blueprint = loaded.blueprint
        self.pools = pool_outputs(loaded.context)
        self.tenants = tenant_outputs(blueprint, deploy.plan)
        self.releases = release_outputs(deploy.plan.releases)
        self.nodes = [spec.node for spec in deploy.node_patches]
        self.outputs = {
            "blueprint": blueprint.name,
            "pools": self.pools,
            "tenants": self.tenants,
            "releases": self.releases,
            "nodes": self.nodes,
            "objects": {group: len(objects) for group, objects in deploy.groups.items()},
        }
        self.register_outputs(self.outputs)

    def _register(self, step: Registration, depends_on: Sequence[pulumi.Resource]) -> pulumi.Resource:
        if isinstance(step, ObjectGroup):
            self.config_groups[step.group] = ConfigGroup(
                step.name,
                objs=list(step.objects),
                skip_await=True if step.skip_await else None,
                opts=self._component_opts(depends_on),
            )
            return self.config_groups[step.group]
        if isinstance(step, ReleaseNamespace):
            # retain_on_delete: like `helm --create-namespace`, which `helm uninstall` leaves behind; the
            # namespace may hold more than the chart, and deleting a namespace deletes everything in it.
            self.namespaces[step.namespace] = Namespace(
                step.name, metadata={"name": step.namespace}, opts=self._custom_opts(retain_on_delete=True)
            )
            return self.namespaces[step.namespace]
        if isinstance(step, NodeLabels):
            # A server-side-apply patch of a Node that does not exist creates an empty one (pulumi-kubernetes #2194):
            # read the node first, so a misspelt or not-yet-created node fails the update instead.
            existing = Node.get(f"{step.name}-exists", step.node, opts=self._custom_opts(depends_on))
            # The plan's metadata and spec are plain dicts; pulumi types them as TypedDicts (ObjectMetaPatchArgsDict),
            # which no dict[str, Any] matches, so no overload does.
            self.node_patches[step.node] = NodePatch(  # type: ignore[call-overload]
                step.name,
                metadata=step.metadata,
                spec=step.spec,
                opts=self._custom_opts([*depends_on, existing], retain_on_delete=step.retain_on_delete),
            )
            return self.node_patches[step.node]
        if isinstance(step, ChartInstall):
            install = self._release if step.as_release else self._chart
            self.charts[step.release.name] = install(step.name, step.release, depends_on)
            return self.charts[step.release.name]
        raise TypeError(f"no Pulumi resource for {type(step).__name__}")

    # Custom resources take `provider`; components (ConfigGroup, Chart) take `providers`, which they hand
    # to the children the kubernetes provider creates for them.
    def _custom_opts(
        self, depends_on: Sequence[pulumi.Resource] = (), *, retain_on_delete: bool = False
    ) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(
            parent=self,
            provider=self._args.provider,
            depends_on=list(depends_on),
            retain_on_delete=retain_on_delete or None,
        )

    def _cloud_opts(
        self, depends_on: Sequence[pulumi.Resource], cloud_provider: pulumi.ProviderResource | None, kubernetes: bool
    ) -> pulumi.ResourceOptions:
        # A Karpenter NodePool is a Kubernetes object (the Kubernetes provider); a node pool takes the cloud's.
        if kubernetes:
            return self._custom_opts(depends_on)
        return pulumi.ResourceOptions(parent=self, provider=cloud_provider, depends_on=list(depends_on))

    def _component_opts(self, depends_on: Sequence[pulumi.Resource]) -> pulumi.ResourceOptions:
        providers: list[pulumi.ProviderResource] | None = (
            [self._args.provider] if self._args.provider is not None else None
        )
        return pulumi.ResourceOptions(parent=self, providers=providers, depends_on=list(depends_on))

    def _chart(self, name: str, release: HelmRelease, depends_on: Sequence[pulumi.Resource]) -> Chart:
        return Chart(
            name,
            # The release name the compiled README's `helm upgrade --install` uses, so object names match.
            name=release.name,
            # An OCI chart is named by its full oci:// reference and has no repository to add (helm/v4 Chart pulls
            # it from the registry); a chart of an HTTP(S) repository is named by its chart name in that repository.
            chart=release.chart_ref,
            version=release.version,
            namespace=release.namespace,
            repository_opts=None if release.oci else RepositoryOptsArgs(repo=release.repository),
            values=release.values,
            opts=self._component_opts(depends_on),
        )

    def _release(self, name: str, release: HelmRelease, depends_on: Sequence[pulumi.Resource]) -> helm_v3.Release:
        """A chart whose install relies on Helm hooks (webhook certificate jobs), as a real Helm release: Helm
        itself installs it, hooks included, and `helm list` shows it. Pulumi diffs the release, not each object."""
        return helm_v3.Release(
            name,
            # Exactly the README's `helm upgrade --install` release name (no Pulumi auto-naming suffix).
            name=release.name,
            chart=release.chart_ref,
            version=release.version,
            # Stage 0 creates the namespace (kept on destroy), so Helm must not.
            namespace=release.namespace,
            repository_opts=None if release.oci else helm_v3.RepositoryOptsArgs(repo=release.repository),
            values=release.values,
            disable_openapi_validation=True if release.skip_openapi_validation else None,
            # skip_await stays off: like `helm --wait`, the release is done once its pods are ready and hooks
            # have run, so the custom resources after it meet a serving admission webhook.
            opts=self._custom_opts(depends_on),
        )

"""`GpuCluster`: a Pulumi component that applies exactly what `gpustack compile` writes.

This is the only gpustack module that imports pulumi or pulumi_kubernetes (the `pulumi` extra);
`gpustack validate` and `gpustack compile` never load it. The stack in `stacks/` and teams with their
own Pulumi programs both use it.

What is registered, in dependency order (each stage waits for every earlier one):

0. `<name>-namespaces`: the Plan's Namespaces, as a `yaml/v2` ConfigGroup, and a `core/v1` Namespace for
   each Helm release namespace the Plan lacks (what `helm --create-namespace` would do).
1. `<name>-cluster` (PriorityClasses, the MIG ConfigMap, admission policies: built-in non-workload kinds)
   and `<name>-tenancy` (ResourceQuotas, LimitRanges: admission reads them, so they must exist before any
   pod in their namespace, or that pod escapes the quota and the defaults).
2. One `core/v1` NodePatch per node of a static pool: gpustack's labels, and the pool's taints only with
   `own_node_taints`. Each waits for a read of its Node (`Node.get`), which fails on a node that does not exist:
   a patch alone would create it. Selector pools get no patch: their provider labels their nodes.
   After the MIG ConfigMap, because the GPU Operator acts on a node's `nvidia.com/mig.config` at once.
3. Every Helm release of the Plan (the GPU Operator or the NVIDIA device plugin; HAMi, Volcano or Kueue where
   used) with the compiled values: as a `helm/v4` Chart, or as a `helm/v3` Release where the chart needs its Helm
   hooks (GPU Operator, HAMi, Volcano: `HelmRelease.needs_hooks`), which a v4 Chart skips. Both wait for their
   resources to be ready (neither sets skipAwait), as `helm --wait` does. After the labels, so the device
   plugin starts on nodes that already name their config.
4. `<name>-custom-resources`: custom resources that are not workloads (Kueue flavors and queues,
   Volcano queues). After the charts, which install their CRDs (the Volcano and Kueue releases come
   with the tenants that use them).
5. `<name>-workloads` (built-in kinds) and `<name>-custom-workloads` (e.g. Volcano Jobs).

Group membership depends only on an object's kind and API group, never on its neighbours: a
ConfigGroup's name prefixes its children's Pulumi names, so an object moving between groups would be
deleted and re-created.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pulumi
from pulumi_kubernetes.core.v1 import Namespace, Node, NodePatch
from pulumi_kubernetes.helm import v3 as helm_v3
from pulumi_kubernetes.helm.v4 import Chart, RepositoryOptsArgs
from pulumi_kubernetes.provider import Provider
from pulumi_kubernetes.yaml.v2 import ConfigGroup

from gpustack.catalog import Catalog, load_catalog
from gpustack.compile import KIND_RANK, WORKLOAD_RANK, compile_blueprint
from gpustack.compile.nodes import FAMILY as NODES_FAMILY
from gpustack.compile.nodes import TAINTS_FAMILY
from gpustack.context import Context
from gpustack.diagnostic import Diagnostic, Severity, sort_diagnostics
from gpustack.model import Blueprint
from gpustack.names import FIELD_MANAGER
from gpustack.plan import HelmRelease, Manifest, Object, Plan
from gpustack.report import SourceLine, format_text
from gpustack.selection import describe_selection
from gpustack.validation import validate_path

TYPE = "gpustack:index:GpuCluster"
# pulumi-kubernetes reads these annotations from a resource's own metadata (and writes them to the object).
FIELD_MANAGER_ANNOTATION = "pulumi.com/patchFieldManager"
PATCH_FORCE_ANNOTATION = "pulumi.com/patchForce"
# Namespaces that exist in every cluster: creating one fails, and owning one would let `pulumi destroy` delete it.
SYSTEM_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})
# API groups served by kube-apiserver itself; anything else is a custom resource whose CRD must come first.
BUILTIN_API_GROUPS = frozenset(
    {
        "",
        "admissionregistration.k8s.io",
        "apiextensions.k8s.io",
        "apiregistration.k8s.io",
        "apps",
        "autoscaling",
        "batch",
        "certificates.k8s.io",
        "coordination.k8s.io",
        "discovery.k8s.io",
        "events.k8s.io",
        "flowcontrol.apiserver.k8s.io",
        "networking.k8s.io",
        "node.k8s.io",
        "policy",
        "rbac.authorization.k8s.io",
        "resource.k8s.io",
        "scheduling.k8s.io",
        "storage.k8s.io",
    }
)
TENANCY_KINDS = frozenset({"ResourceQuota", "LimitRange"})
NODE_FAMILIES = frozenset({NODES_FAMILY, TAINTS_FAMILY})

# ConfigGroup names (suffixes of the component's name), in apply order. Renaming one re-creates its objects.
NAMESPACES = "namespaces"
CLUSTER = "cluster"
TENANCY = "tenancy"
CUSTOM_RESOURCES = "custom-resources"
WORKLOADS = "workloads"
CUSTOM_WORKLOADS = "custom-workloads"
GROUPS = (NAMESPACES, CLUSTER, TENANCY, CUSTOM_RESOURCES, WORKLOADS, CUSTOM_WORKLOADS)
WORKLOAD_GROUPS = frozenset({WORKLOADS, CUSTOM_WORKLOADS})


class BlueprintError(pulumi.RunError):
    """The blueprint is invalid: the message is what `gpustack validate` prints, so Pulumi shows it without a
    traceback (a RunError ends the program cleanly)."""

    def __init__(self, message: str, diagnostics: Sequence[Diagnostic]) -> None:
        super().__init__(message)
        self.diagnostics = tuple(diagnostics)


@dataclass(frozen=True)
class GpuClusterArgs:
    """What to apply, and how far gpustack may reach into objects others also manage."""

    blueprint: str | os.PathLike[str] | Blueprint
    """A blueprint file (relative paths are relative to the working directory, which for `pulumi up` is
    the project directory), or a Blueprint that validated without errors."""
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


@dataclass(frozen=True)
class NodePatchSpec:
    """One node's patch: the labels of the `nodes` family and, when owned, the taints of `node-taints`."""

    node: str
    labels: Mapping[str, str]
    taints: Sequence[Object] | None  # None: the patch leaves spec.taints alone


@dataclass(frozen=True)
class DeployPlan:
    """The Plan cut into what GpuCluster registers; pure data, so it can be checked without Pulumi."""

    blueprint: Blueprint
    plan: Plan
    groups: dict[str, list[Object]]  # ConfigGroup suffix -> objects in Plan (apply) order; empty groups omitted
    node_patches: list[NodePatchSpec]
    release_namespaces: list[str]  # Namespaces to create for Helm releases (absent from the Plan)
    warnings: tuple[Diagnostic, ...] = field(default=())


def api_group(api_version: str) -> str:
    return api_version.rpartition("/")[0]


def group_of(manifest: Manifest) -> str:
    """The ConfigGroup a (non-node) object belongs to: decided by its kind and API group alone."""
    builtin = api_group(str(manifest.obj["apiVersion"])) in BUILTIN_API_GROUPS
    workload = KIND_RANK.get(manifest.kind, WORKLOAD_RANK) >= WORKLOAD_RANK
    if not builtin:
        return CUSTOM_WORKLOADS if workload else CUSTOM_RESOURCES
    if manifest.kind == "Namespace":
        return NAMESPACES
    if manifest.kind in TENANCY_KINDS:
        return TENANCY
    return WORKLOADS if workload else CLUSTER


def node_patch_specs(plan: Plan, own_node_taints: bool) -> list[NodePatchSpec]:
    """One spec per node, in Plan order. Labels and taints go in one patch because both are applied by the
    one `gpustack` field manager: two patches under one manager would each drop what the other applied."""
    labels: dict[str, dict[str, str]] = {}
    taints: dict[str, list[Object]] = {}
    for manifest in plan.objects:
        if manifest.family == NODES_FAMILY:
            labels[manifest.name] = dict(manifest.obj["metadata"].get("labels", {}))
        elif manifest.family == TAINTS_FAMILY:
            taints[manifest.name] = list(manifest.obj["spec"]["taints"])
    nodes = list(dict.fromkeys([*labels, *taints]))
    return [
        NodePatchSpec(node, labels.get(node, {}), taints.get(node) if own_node_taints and node in taints else None)
        for node in nodes
    ]


def deploy_plan(
    blueprint: Blueprint,
    *,
    own_node_taints: bool = False,
    catalog: Catalog | None = None,
    warnings: Iterable[Diagnostic] = (),
    source_line: SourceLine | None = None,
) -> DeployPlan:
    """Compile and cut the Plan; raises BlueprintError when compile reports an error."""
    plan = compile_blueprint(blueprint, catalog)
    diagnostics = sort_diagnostics([*warnings, *plan.diagnostics])
    if any(d.severity is Severity.ERROR for d in diagnostics):
        raise BlueprintError(failure_text(blueprint.source, diagnostics, source_line), diagnostics)
    groups: dict[str, list[Object]] = {name: [] for name in GROUPS}
    for manifest in plan.objects:
        if manifest.family not in NODE_FAMILIES:
            groups[group_of(manifest)].append(manifest.obj)
    namespaces = {m.name for m in plan.objects if m.kind == "Namespace"}
    return DeployPlan(
        blueprint=blueprint,
        plan=plan,
        groups={name: objects for name, objects in groups.items() if objects},
        node_patches=node_patch_specs(plan, own_node_taints),
        release_namespaces=sorted({r.namespace for r in plan.releases} - namespaces - SYSTEM_NAMESPACES),
        warnings=tuple(diagnostics),
    )


def _no_source(file: str, line: int) -> str:
    return ""


def failure_text(file: str, diagnostics: Sequence[Diagnostic], source_line: SourceLine | None = None) -> str:
    """What `gpustack compile` prints for an invalid blueprint: every diagnostic with its source line."""
    errors = sum(d.severity is Severity.ERROR for d in diagnostics)
    text = format_text(diagnostics, source_line or _no_source)
    return f"{text}\n\n{file}: {errors} error(s); nothing applied"


@dataclass(frozen=True)
class LoadedBlueprint:
    blueprint: Blueprint
    diagnostics: tuple[Diagnostic, ...]  # warnings only: errors raise
    source_line: SourceLine  # the blueprint's text by line, for diagnostics with a caret


def load_blueprint(blueprint: str | os.PathLike[str] | Blueprint) -> LoadedBlueprint:
    """A valid Blueprint and its warnings, or BlueprintError with `gpustack validate`'s text."""
    if isinstance(blueprint, Blueprint):
        return LoadedBlueprint(blueprint, (), _no_source)
    validation = validate_path(Path(blueprint))
    lines = validation.document.text.splitlines() if validation.document is not None else []

    def source_line(file: str, line: int) -> str:
        return lines[line - 1] if file == validation.file and 0 < line <= len(lines) else ""

    diagnostics = tuple(sort_diagnostics(validation.diagnostics))
    if not validation.ok or validation.blueprint is None:
        raise BlueprintError(failure_text(validation.file, diagnostics, source_line), diagnostics)
    return LoadedBlueprint(validation.blueprint, diagnostics, source_line)


def _number(value: Decimal | None) -> int | float | None:
    if value is None:
        return None
    return int(value) if value == value.to_integral_value() else float(value)


def pool_outputs(blueprint: Blueprint, catalog: Catalog) -> list[dict[str, Any]]:
    """Per pool: the GPU, the nodes, and each advertised resource with its capacity and isolation."""
    context = Context(blueprint, catalog)
    pools = []
    for pool in blueprint.pools:
        model = context.models.get(pool.name)
        nodes = pool.node_count
        pools.append(
            {
                "name": pool.name,
                "gpu": {"model": model.key if model is not None else pool.gpu.model, "perNode": pool.gpu.count},
                "sharing": str(pool.sharing.strategy),
                "nodes": list(pool.nodes),
                # A selector pool's nodes are its provider's: how they are found instead of their names.
                **({"selector": describe_selection(pool)} if pool.selector is not None else {}),
                "resources": [
                    {
                        "resource": offer.resource,
                        "perNode": offer.per_node,
                        "nodes": nodes,
                        "total": offer.per_node * nodes,
                        "isolation": str(offer.isolation),
                        "memoryGiB": _number(offer.memory_gib),
                        "sharedBy": offer.shared_by,
                        **({"profile": offer.profile} if offer.profile is not None else {}),
                    }
                    for offer in context.offers[pool.name]
                ],
            }
        )
    return pools


def tenant_outputs(blueprint: Blueprint, plan: Plan) -> list[dict[str, Any]]:
    """Per tenant: its namespaces, pools, and the quota (`spec.hard`) applied in each namespace."""
    quotas = {m.namespace: dict(m.obj["spec"].get("hard", {})) for m in plan.objects if m.kind == "ResourceQuota"}
    return [
        {
            "name": tenant.name,
            "namespaces": list(tenant.namespaces),
            "pools": list(tenant.pools),
            "priority": tenant.priority,
            "scheduler": str(tenant.scheduler),
            "quotas": {namespace: quotas.get(namespace, {}) for namespace in tenant.namespaces},
        }
        for tenant in blueprint.tenants
    ]


def release_outputs(releases: Iterable[HelmRelease]) -> list[dict[str, str]]:
    return [
        {"name": r.name, "chart": r.chart, "version": r.version, "repository": r.repository, "namespace": r.namespace}
        for r in releases
    ]


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

    def __init__(self, name: str, args: GpuClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        # Validate and compile before registering anything: an invalid blueprint leaves no half-made component.
        loaded = load_blueprint(args.blueprint)
        blueprint = loaded.blueprint
        catalog = load_catalog()
        deploy = deploy_plan(
            blueprint,
            own_node_taints=args.own_node_taints,
            catalog=catalog,
            warnings=loaded.diagnostics,
            source_line=loaded.source_line,
        )
        if deploy.warnings:
            # Warnings do not stop `pulumi up`, as they do not stop `gpustack compile`; they show in its output.
            pulumi.log.warn(format_text(deploy.warnings, loaded.source_line))
        super().__init__(TYPE, name, None, opts)
        self._args = args

        # Stage 0: namespaces, the Plan's and those of Helm releases; nothing to wait for.
        self.config_groups = {}
        self.namespaces = {}
        done: list[pulumi.Resource] = []
        if NAMESPACES in deploy.groups:
            done.append(self._config_group(name, NAMESPACES, deploy.groups[NAMESPACES], []))
        for namespace in deploy.release_namespaces:
            # retain_on_delete: like `helm --create-namespace`, which `helm uninstall` leaves behind; the
            # namespace may hold more than the chart, and deleting a namespace deletes everything in it.
            self.namespaces[namespace] = Namespace(
                f"{name}-namespace-{namespace}",
                metadata={"name": namespace},
                opts=self._custom_opts(retain_on_delete=True),
            )
            done.append(self.namespaces[namespace])

        # Stage 1: cluster-wide config and tenancy (quotas, limit ranges) before any chart or pod.
        done += [
            self._config_group(name, group, deploy.groups[group], done)
            for group in (CLUSTER, TENANCY)
            if group in deploy.groups
        ]

        # Stage 2: node labels, after the MIG config they name (the GPU Operator acts on the label at once).
        self.node_patches = {spec.node: self._node_patch(name, spec, done) for spec in deploy.node_patches}
        done += self.node_patches.values()

        # Stage 3: Helm charts, with the values `gpustack compile` writes to their values files; after the
        # labels, so the device plugin starts with each node's config label in place.
        self.charts = {
            release.name: (self._release if release.needs_hooks else self._chart)(name, release, done)
            for release in deploy.plan.releases
        }
        done += self.charts.values()

        # Stages 4 and 5: custom resources after the charts that bring their CRDs, then workloads.
        if CUSTOM_RESOURCES in deploy.groups:
            done.append(self._config_group(name, CUSTOM_RESOURCES, deploy.groups[CUSTOM_RESOURCES], done))
        for group in (WORKLOADS, CUSTOM_WORKLOADS):
            if group in deploy.groups:
                self._config_group(name, group, deploy.groups[group], done)

        self.pools = pool_outputs(blueprint, catalog)
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

    def _component_opts(self, depends_on: Sequence[pulumi.Resource]) -> pulumi.ResourceOptions:
        providers = [self._args.provider] if self._args.provider is not None else None
        return pulumi.ResourceOptions(parent=self, providers=providers, depends_on=list(depends_on))

    def _config_group(
        self, name: str, group: str, objects: list[Object], depends_on: Sequence[pulumi.Resource]
    ) -> ConfigGroup:
        manager = self._args.object_field_manager
        objs = objects if manager is None else [_with_field_manager(obj, manager) for obj in objects]
        skip_await = group in WORKLOAD_GROUPS and not self._args.await_workloads
        config_group = ConfigGroup(
            f"{name}-{group}",
            objs=objs,
            skip_await=True if skip_await else None,
            opts=self._component_opts(depends_on),
        )
        self.config_groups[group] = config_group
        return config_group

    def _chart(self, name: str, release: HelmRelease, depends_on: Sequence[pulumi.Resource]) -> Chart:
        return Chart(
            f"{name}-{release.name}",
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
            f"{name}-{release.name}",
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

    def _node_patch(self, name: str, spec: NodePatchSpec, depends_on: Sequence[pulumi.Resource]) -> NodePatch:
        metadata: dict[str, Any] = {
            "name": spec.node,
            "labels": dict(spec.labels),
            "annotations": {
                # The same manager as `kubectl apply --server-side --field-manager=gpustack` from the compiled
                # README, so either tool can take over from the other without conflicts.
                FIELD_MANAGER_ANNOTATION: FIELD_MANAGER,
                # The blueprint is the source of truth for these keys: take them over from whoever set them
                # before (`kubectl label`, the GPU Operator's default mig.config) instead of failing.
                PATCH_FORCE_ANNOTATION: "true",
            },
        }
        spec_fields = {"taints": list(spec.taints)} if spec.taints is not None else None
        # A server-side-apply patch of a Node that does not exist creates an empty one (pulumi-kubernetes #2194):
        # read the node first, so a misspelt or not-yet-created node fails the update instead.
        existing = Node.get(f"{name}-node-{spec.node}-exists", spec.node, opts=self._custom_opts(depends_on))
        return NodePatch(
            f"{name}-node-{spec.node}",
            metadata=metadata,
            spec=spec_fields,
            opts=self._custom_opts([*depends_on, existing], retain_on_delete=self._args.retain_node_labels_on_delete),
        )


def _with_field_manager(obj: Object, manager: str) -> Object:
    metadata = dict(obj["metadata"])
    metadata["annotations"] = {**metadata.get("annotations", {}), FIELD_MANAGER_ANNOTATION: manager}
    return {**obj, "metadata": metadata}

"""What `GpuCluster` registers, as plain data: resources, Helm releases, their order and their dependencies.

Pure (no pulumi import): `gpustack.deploy` is a thin loop that turns each `Registration` into its Pulumi
resource, so everything that decides what reaches the cluster is tested here without Pulumi.

What is registered, in dependency order (each stage waits for every earlier one):

0. `<name>-namespaces`: the Plan's Namespaces, as a `yaml/v2` ConfigGroup, and a `core/v1` Namespace for
   each Helm release namespace the Plan lacks (what `helm --create-namespace` would do).
1. `<name>-cluster` (PriorityClasses, the MIG ConfigMap, admission policies: built-in non-workload kinds)
   and `<name>-tenancy` (ResourceQuotas, LimitRanges: admission reads them, so they must exist before any
   pod in their namespace, or that pod escapes the quota and the defaults).
2. One `core/v1` NodePatch per node of a static pool: gpustack's labels, and the pool's taints only with
   `own_node_taints` (both read from the Plan's `PoolNodes`, never derived again). Each waits for a read of its
   Node (`Node.get`), which fails on a node that does not exist: a patch alone would create it. Selector pools
   get no patch: their provider labels their nodes. After the MIG ConfigMap, because the GPU Operator acts on a
   node's `nvidia.com/mig.config` at once.
3. Every Helm release of the Plan (the GPU Operator or the NVIDIA device plugin; HAMi, Volcano, Kueue or KAI where
   used) with the compiled values: as a `helm/v4` Chart, or as a `helm/v3` Release where the chart needs its Helm
   hooks (GPU Operator, HAMi, Volcano, KAI: `HelmRelease.needs_hooks`), which a v4 Chart skips. Both wait for their
   resources to be ready (neither sets skipAwait), as `helm --wait` does. After the labels, so the device
   plugin starts on nodes that already name their config.
4. `<name>-custom-resources`: custom resources that are not workloads (Kueue flavors and queues,
   Volcano and KAI queues, KAI shards). After the charts, which install their CRDs (the Volcano, Kueue and KAI
   releases come with the tenants that use them).
5. `<name>-workloads` (built-in kinds) and `<name>-custom-workloads` (e.g. Volcano Jobs).

Group membership depends only on an object's kind and API group, never on its neighbours: a
ConfigGroup's name prefixes its children's Pulumi names, so an object moving between groups would be
deleted and re-created.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpustack.codes import MIG_LAYOUT_AUTO
from gpustack.compile import KIND_RANK, WORKLOAD_RANK, compile_blueprint
from gpustack.context import Context
from gpustack.diagnostic import Diagnostic, Severity, sort_diagnostics
from gpustack.model import Blueprint
from gpustack.names import FIELD_MANAGER
from gpustack.plan import NODE_TAINTS_FAMILY, NODES_FAMILY, HelmRelease, Manifest, Object, Plan
from gpustack.quantity import json_number
from gpustack.report import SourceLine, format_text, stop_summary
from gpustack.selection import describe_selection
from gpustack.taints import taint_object
from gpustack.validation import source_lines, validate_blueprint, validate_path

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
NODE_FAMILIES = frozenset({NODES_FAMILY, NODE_TAINTS_FAMILY})

# ConfigGroup names (suffixes of the component's name), in apply order. Renaming one re-creates its objects.
NAMESPACES = "namespaces"
CLUSTER = "cluster"
TENANCY = "tenancy"
CUSTOM_RESOURCES = "custom-resources"
WORKLOADS = "workloads"
CUSTOM_WORKLOADS = "custom-workloads"
GROUPS = (NAMESPACES, CLUSTER, TENANCY, CUSTOM_RESOURCES, WORKLOADS, CUSTOM_WORKLOADS)
WORKLOAD_GROUPS = frozenset({WORKLOADS, CUSTOM_WORKLOADS})


class InvalidBlueprint(Exception):
    """The blueprint is invalid: the message is what `gpustack validate` prints, every diagnostic with its line."""

    def __init__(self, message: str, diagnostics: Sequence[Diagnostic]) -> None:
        super().__init__(message)
        self.diagnostics = tuple(diagnostics)


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


CLAIM_KINDS = ("ResourceClaimTemplate", "ResourceClaim")


def api_group(api_version: str) -> str:
    return api_version.rpartition("/")[0]


def group_of(manifest: Manifest) -> str:
    """The ConfigGroup a (non-node) object belongs to: decided by its kind and API group alone."""
    builtin = api_group(str(manifest.obj["apiVersion"])) in BUILTIN_API_GROUPS
    # A ResourceClaimTemplate (or a workload's shared ResourceClaim) is applied just before its workload (rank), in
    # its workload's stage: it is the pods'.
    workload = KIND_RANK.get(manifest.kind, WORKLOAD_RANK) >= WORKLOAD_RANK or manifest.kind in CLAIM_KINDS
    if not builtin:
        return CUSTOM_WORKLOADS if workload else CUSTOM_RESOURCES
    if manifest.kind == "Namespace":
        return NAMESPACES
    if manifest.kind in TENANCY_KINDS:
        return TENANCY
    return WORKLOADS if workload else CLUSTER


def node_patch_specs(plan: Plan, own_node_taints: bool) -> list[NodePatchSpec]:
    """One spec per node of a static pool, by node name (the Plan's order of Node patches), from the Plan's pools.
    Labels and taints go in one patch because both are applied by the one `gpustack` field manager: two patches
    under one manager would each drop what the other applied."""
    specs: dict[str, NodePatchSpec] = {}
    for pool in plan.pools:
        taints = [taint_object(taint) for taint in pool.taints] if own_node_taints and pool.taints else None
        for node in pool.nodes:
            specs[node] = NodePatchSpec(node, pool.labels, taints)
    return [specs[node] for node in sorted(specs)]


def deploy_plan(
    context: Context,
    *,
    own_node_taints: bool = False,
    warnings: Iterable[Diagnostic] = (),
    source_line: SourceLine | None = None,
) -> DeployPlan:
    """Compile (from the blueprint's one Context, its validation's) and cut the Plan; raises InvalidBlueprint when
    compile reports an error."""
    blueprint = context.blueprint
    plan = compile_blueprint(context)
    # layout: auto (GS310) warns in validate and stops here, as compile stops on it: no layout nobody chose is applied.
    refused = (d.as_error() if d.code == MIG_LAYOUT_AUTO else d for d in warnings)
    diagnostics = sort_diagnostics([*refused, *plan.diagnostics])
    if any(d.severity is Severity.ERROR for d in diagnostics):
        raise InvalidBlueprint(failure_text(blueprint.source, diagnostics, source_line), diagnostics)
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


def failure_text(file: str, diagnostics: Sequence[Diagnostic], source_line: SourceLine | None = None) -> str:
    """What `gpustack compile` prints for an invalid blueprint (the shared reporter's text and closing line)."""
    text = format_text(diagnostics, source_line) if source_line is not None else format_text(diagnostics)
    return f"{text}\n\n{stop_summary([file], diagnostics, 'nothing applied')}"


@dataclass(frozen=True)
class LoadedBlueprint:
    context: Context  # the blueprint's one Context: its validation's, which compile and the outputs take
    diagnostics: tuple[Diagnostic, ...]  # warnings only: errors raise
    source_line: SourceLine  # the blueprint's text by line, for diagnostics with a caret

    @property
    def blueprint(self) -> Blueprint:
        return self.context.blueprint


def load_blueprint(blueprint: str | os.PathLike[str] | Blueprint) -> LoadedBlueprint:
    """A valid blueprint and its warnings, or InvalidBlueprint with `gpustack validate`'s text.

    A file, or a Blueprint built in code: both go through the same checks (the gate a file goes through), and an
    error refuses either.
    """
    validation = validate_blueprint(blueprint) if isinstance(blueprint, Blueprint) else validate_path(Path(blueprint))
    source_line = source_lines([validation])
    diagnostics = tuple(sort_diagnostics(validation.diagnostics))
    if not validation.ok or validation.context is None:
        raise InvalidBlueprint(failure_text(validation.file, diagnostics, source_line), diagnostics)
    return LoadedBlueprint(validation.context, diagnostics, source_line)


def pool_outputs(context: Context) -> list[dict[str, Any]]:
    """Per pool: the GPU, the nodes, and each advertised resource with its capacity and isolation."""
    blueprint = context.blueprint
    pools = []
    for pool in blueprint.pools:
        model = context.models.get(pool.name)
        nodes = pool.node_count
        pools.append(
            {
                "name": pool.name,
                "gpu": {
                    "model": model.key if model is not None else pool.gpu.model if pool.gpu is not None else None,
                    "perNode": pool.gpus_per_node,
                },
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
                        "memoryGiB": json_number(offer.memory_gib),
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


# --- what to register, in order -----------------------------------------------------------------


@dataclass(frozen=True)
class Registration:
    """One resource `GpuCluster` registers: its Pulumi name, and the names of the registrations it waits for."""

    name: str
    depends_on: tuple[str, ...]


@dataclass(frozen=True)
class ObjectGroup(Registration):
    """A `yaml/v2` ConfigGroup of compiled objects."""

    group: str
    objects: tuple[Object, ...]
    skip_await: bool  # do not wait for the objects to become ready


@dataclass(frozen=True)
class ReleaseNamespace(Registration):
    """A `core/v1` Namespace for a Helm release, kept on delete (as `helm uninstall` keeps `--create-namespace`'s)."""

    namespace: str


@dataclass(frozen=True)
class NodeLabels(Registration):
    """A `core/v1` NodePatch: gpustack's labels on one node, and its pool's taints where owned."""

    node: str
    metadata: Object
    spec: Object | None  # None: the patch leaves spec.taints alone
    retain_on_delete: bool


@dataclass(frozen=True)
class ChartInstall(Registration):
    """A Helm release: a `helm/v4` Chart, or a `helm/v3` Release where the chart needs its hooks."""

    release: HelmRelease

    @property
    def as_release(self) -> bool:
        return self.release.needs_hooks


@dataclass(frozen=True)
class RegistrationOptions:
    """The pure half of `GpuClusterArgs` (see there for what each means)."""

    retain_node_labels_on_delete: bool = True
    object_field_manager: str | None = None
    await_workloads: bool = True


def registrations(
    deploy: DeployPlan, component: str, options: RegistrationOptions = RegistrationOptions()
) -> tuple[Registration, ...]:
    """Every resource to register, in order; each waits for every resource of the earlier stages."""
    done: list[Registration] = []

    def after() -> tuple[str, ...]:
        return tuple(r.name for r in done)

    def group(name: str, depends_on: tuple[str, ...]) -> ObjectGroup:
        manager = options.object_field_manager
        objects = deploy.groups[name]
        return ObjectGroup(
            f"{component}-{name}",
            depends_on,
            name,
            tuple(objects if manager is None else (_with_field_manager(obj, manager) for obj in objects)),
            name in WORKLOAD_GROUPS and not options.await_workloads,
        )

    # Stage 0: namespaces, the Plan's and those of Helm releases; nothing to wait for.
    if NAMESPACES in deploy.groups:
        done.append(group(NAMESPACES, ()))
    done += [ReleaseNamespace(f"{component}-namespace-{ns}", (), ns) for ns in deploy.release_namespaces]
    # Stage 1: cluster-wide config and tenancy (quotas, limit ranges) before any chart or pod.
    stage_0 = after()
    done += [group(name, stage_0) for name in (CLUSTER, TENANCY) if name in deploy.groups]
    # Stage 2: node labels, after the MIG config they name (the GPU Operator acts on the label at once).
    stage_1 = after()
    done += [_node_labels(component, spec, stage_1, options) for spec in deploy.node_patches]
    # Stage 3: Helm charts, with the values `gpustack compile` writes to their values files; after the labels,
    # so the device plugin starts with each node's config label in place.
    stage_2 = after()
    done += [ChartInstall(f"{component}-{release.name}", stage_2, release) for release in deploy.plan.releases]
    # Stages 4 and 5: custom resources after the charts that bring their CRDs, then workloads.
    if CUSTOM_RESOURCES in deploy.groups:
        done.append(group(CUSTOM_RESOURCES, after()))
    stage_4 = after()
    done += [group(name, stage_4) for name in (WORKLOADS, CUSTOM_WORKLOADS) if name in deploy.groups]
    return tuple(done)


def _node_labels(
    component: str, spec: NodePatchSpec, depends_on: tuple[str, ...], options: RegistrationOptions
) -> NodeLabels:
    metadata: Object = {
        "name": spec.node,
        "labels": dict(spec.labels),
        "annotations": {
            # The same manager as `kubectl apply --server-side --field-manager=gpustack` from the compiled README,
            # so either tool can take over from the other without conflicts.
            FIELD_MANAGER_ANNOTATION: FIELD_MANAGER,
            # The blueprint is the source of truth for these keys: take them over from whoever set them before
            # (`kubectl label`, the GPU Operator's default mig.config) instead of failing.
            PATCH_FORCE_ANNOTATION: "true",
        },
    }
    return NodeLabels(
        f"{component}-node-{spec.node}",
        depends_on,
        spec.node,
        metadata,
        {"taints": list(spec.taints)} if spec.taints is not None else None,
        options.retain_node_labels_on_delete,
    )


def _with_field_manager(obj: Object, manager: str) -> Object:
    metadata = dict(obj["metadata"])
    metadata["annotations"] = {**metadata.get("annotations", {}), FIELD_MANAGER_ANNOTATION: manager}
    return {**obj, "metadata": metadata}

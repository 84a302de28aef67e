"""Cloud pools against hardware facts: the machine type carries the pool's GPUs (GS307), a selector given with a
cloud block selects the nodes that provider pool makes (GS308), and the GPU Operator's driver and toolkit agree with
what each cloud pool's node image already has (GS313, the recipes in gpustack.cloud)."""

from __future__ import annotations

from collections.abc import Iterator

from gpustack.cloud import (
    EKS_DEFAULT_IMAGES,
    GKE_COS,
    GKE_UBUNTU,
    RECIPE_SOURCES,
    blueprint_node_image,
    blueprint_operator_parts,
    gke_initial_per_zone,
    gke_zone_split,
    gpu_cloud_pools,
    image_arch,
    machines,
    machines_named,
    matching_machines,
    node_resources,
    pool_arch,
    pool_machine,
)
from gpustack.codes import (
    AKS_DISK_TYPE,
    BOTTLEROCKET_DEVICE_PLUGIN,
    CLOUD_DRIVER_CONFLICT,
    CLOUD_SELECTOR_ELSEWHERE,
    GKE_ZONE_COUNT,
    IMAGE_ARCH_MISMATCH,
    KARPENTER_DISK_IGNORED,
    MACHINE_TYPE_MISMATCH,
    MACHINE_TYPE_UNLISTED,
    POD_EXCEEDS_MACHINE,
)
from gpustack.context import Context
from gpustack.diagnostic import Diagnostic
from gpustack.model import NodePool, Stack
from gpustack.names import CLOUD_POOL_LABELS, POOL_LABEL
from gpustack.quantity import parse_quantity
from gpustack.selection import describe_selection, selects


def _listed(names: list[str], shown: int = 6) -> str:
    more = f" (and {len(names) - shown} more)" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def _hint(ctx: Context, pool: NodePool, provider: str) -> str:
    found = [m.name for m in matching_machines(provider, ctx.catalog, pool)]
    if found:
        return f"machine types with {pool.gpus_per_node} x {pool.gpu.model if pool.gpu else ''}: {_listed(found)}"
    model = ctx.models.get(pool.name)
    counts = sorted({m.count for m in machines(provider) if model is not None and m.gpu == model.key})
    if counts:
        return (
            f"{provider} offers {model.key if model else ''} only {' or '.join(map(str, counts))} per machine: "
            "set gpu.count to one of those"
        )
    return f"{provider} has no machine type with this GPU in gpustack's table; pick another gpu.model or provider"


def check_cloud_machines(ctx: Context) -> Iterator[Diagnostic]:
    for pool in ctx.blueprint.pools:
        cloud = pool.cloud
        if cloud is None or (pool.gpu is not None and ctx.models[pool.name] is None):
            continue  # GS301 already says the GPU model is unknown
        provider = cloud.provider
        if cloud.machine_type is None:
            if pool.gpu is None:
                yield ctx.error(
                    MACHINE_TYPE_MISMATCH,
                    (*cloud.path, "provider"),
                    f"cloud pool '{pool.name}' has no gpu and no machineType; expected a machineType",
                    "a CPU-only cloud pool names its machine type (gpustack only picks GPU machines)",
                    key=True,
                )
            elif not matching_machines(provider, ctx.catalog, pool):
                yield ctx.error(
                    MACHINE_TYPE_MISMATCH,
                    (*pool.gpu.path, "count"),
                    f"no {provider} machine type has {pool.gpu.count} x {pool.gpu.model} (pool '{pool.name}')",
                    _hint(ctx, pool, provider),
                )
            continue
        if pool.gpu is None:
            continue  # a CPU machine: the table lists only GPU machines
        rows = machines_named(provider, cloud.machine_type)
        model = ctx.models[pool.name]
        stated = pool.node_resources is not None and None not in (pool.node_resources.cpu, pool.node_resources.memory)
        if not rows and stated:
            # The escape hatch: gpustack trusts the pool's gpu and nodeResources for a machine it does not list.
            yield ctx.warning(
                MACHINE_TYPE_UNLISTED,
                (*cloud.path, "machineType"),
                f"'{cloud.machine_type}' is not in gpustack's {provider} machine table: pool '{pool.name}' is planned "
                f"on what it states ({pool.gpu.count} x {pool.gpu.model}, nodeResources), unchecked",
                "check the figures against the provider's machine type page",
            )
        elif not rows:
            matches = matching_machines(provider, ctx.catalog, pool)
            yield ctx.error(
                MACHINE_TYPE_MISMATCH,
                (*cloud.path, "machineType"),
                f"'{cloud.machine_type}' is not a {provider} GPU machine type gpustack knows (pool '{pool.name}')",
                _hint(ctx, pool, provider)
                + ("; or leave machineType out and gpustack picks the smallest" if matches else "")
                + "; or, for a machine type gpustack does not list, state its node's nodeResources (cpu and memory)",
            )
        elif model is not None and not any(m.gpu == model.key and m.count == pool.gpu.count for m in rows):
            takes = " or ".join(f"{m.count} x {m.gpu}" for m in rows)
            yield ctx.error(
                MACHINE_TYPE_MISMATCH,
                (*cloud.path, "machineType"),
                f"{cloud.machine_type} has {takes}, but pool '{pool.name}' says {pool.gpu.count} x {model.key}",
                _hint(ctx, pool, provider),
            )


def check_cloud_selectors(ctx: Context) -> Iterator[Diagnostic]:
    for pool in ctx.blueprint.pools:
        if pool.cloud is None or pool.selector is None:
            continue
        # The labels every node of the provider's pool carries: its node-pool label, and what gpustack sets on it.
        labels = {CLOUD_POOL_LABELS[pool.cloud.provider]: pool.name, POOL_LABEL: pool.name, **dict(pool.labels)}
        if not selects(pool, labels):
            yield ctx.error(
                CLOUD_SELECTOR_ELSEWHERE,
                pool.selector.path,
                f"the selector of cloud pool '{pool.name}' ({describe_selection(pool)}) does not select the nodes "
                f"of the {pool.cloud.provider} pool gpustack makes for it",
                f"drop the selector (gpustack selects {CLOUD_POOL_LABELS[pool.cloud.provider]}={pool.name}), or "
                "select on that label or on the pool's labels",
            )


_IMAGE_WORDS = {
    "gke": "GKE's {image} image",
    "eks": "EKS's {image} AMI",
    "karpenter": "the EC2NodeClass's NVIDIA AMI",
    "aks": "AKS's GPU image",
}


def _installed_twice(ctx: Context, pool: NodePool, part: str, thing: str, words: str, source: str) -> Diagnostic:
    """The image already brings `thing` and the GPU Operator would install its own `part` (driver or toolkit)."""
    operator = ctx.blueprint.gpu_operator
    written = getattr(operator, part) is not None
    assert pool.cloud is not None  # gpu_cloud_pools yields only cloud pools
    return ctx.error(
        CLOUD_DRIVER_CONFLICT,
        (*operator.path, part) if written else (*pool.cloud.path, "provider"),
        f"pool '{pool.name}': {words} already has the {thing}, and the GPU Operator would install another"
        + ("" if written else " (another GPU pool's nodes need its own)"),
        f"gpuOperator.{part}: false ({source})"
        if written
        else f"gpuOperator.{part}: false if every GPU node brings its own {part} (cluster-wide; {source})",
    )


def check_cloud_driver(ctx: Context) -> Iterator[Diagnostic]:
    """The operator's driver and toolkit against each GPU cloud pool's image: never two drivers or toolkits on a
    node, never none."""
    blueprint = ctx.blueprint
    if blueprint.stack is not Stack.GPU_OPERATOR:
        return
    operator = blueprint.gpu_operator
    parts = blueprint_operator_parts(blueprint)
    for pool in gpu_cloud_pools(blueprint.pools):
        assert pool.cloud is not None
        provider, image = pool.cloud.provider, blueprint_node_image(blueprint, pool)
        source = RECIPE_SOURCES[provider]
        words = _IMAGE_WORDS[provider].format(image=image.image)
        if provider == "gke" and pool.cloud.image_type == GKE_COS and operator.driver:
            yield ctx.error(
                CLOUD_DRIVER_CONFLICT,
                (*pool.cloud.path, "imageType"),
                f"pool '{pool.name}': the GPU Operator's driver cannot run on GKE's {GKE_COS} image "
                "(spec.gpuOperator.driver is true)",
                f"imageType: {GKE_UBUNTU} for the operator's driver, or gpuOperator.driver: false for Google's "
                f"driver ({source})",
                related=[(*operator.path, "driver")],
            )
            continue
        if parts.driver and image.has_driver:
            yield _installed_twice(ctx, pool, "driver", "NVIDIA driver", words, source)
        if parts.toolkit and image.has_toolkit:
            yield _installed_twice(ctx, pool, "toolkit", "NVIDIA container toolkit", words, source)
        elif not parts.toolkit and not image.has_toolkit:
            written = operator.toolkit is not None
            yield ctx.error(
                CLOUD_DRIVER_CONFLICT,
                (*operator.path, "toolkit") if written else (*pool.cloud.path, "provider"),
                f"pool '{pool.name}': {words} has no NVIDIA container toolkit, and the GPU Operator would not install "
                "one: no container would see a GPU",
                f"gpuOperator.toolkit: true, or leave it out ({source})",
            )
        if not parts.driver and not image.has_driver:
            yield ctx.error(
                CLOUD_DRIVER_CONFLICT,
                (*operator.path, "driver") if operator.driver is not None else (*pool.cloud.path, "provider"),
                f"pool '{pool.name}': {words} has no NVIDIA driver, and the GPU Operator would not install one",
                f"gpuOperator.driver: true, or leave it out ({source})",
            )


def check_gke_counts(ctx: Context) -> Iterator[Diagnostic]:
    """GKE counts per zone: a blueprint's totals must turn into per-zone figures exactly (gpustack.cloud). Named
    zones that cannot share a fixed count evenly are an error; unnamed zones (the cluster's: three in a regional
    cluster) multiply the per-zone figure gpustack must write, which is said as a warning."""
    for pool in ctx.blueprint.pools:
        cloud = pool.cloud
        if cloud is None or cloud.provider != "gke":
            continue
        zones = len(cloud.zones)
        if pool.count is not None and zones and gke_zone_split(pool) is None:
            yield ctx.error(
                GKE_ZONE_COUNT,
                (*pool.path, "count"),
                f"GKE counts nodes per zone: pool '{pool.name}' cannot have {pool.count} nodes over {zones} zones "
                "evenly",
                f"make count a multiple of {zones}, or use minNodes/maxNodes (GKE's total counts)",
            )
        elif not zones and (pool.count is not None or gke_initial_per_zone(pool) is None):
            field, figure = ("count", pool.count) if pool.count is not None else ("minNodes", pool.min_nodes)
            yield ctx.warning(
                GKE_ZONE_COUNT,
                (*pool.path, field),
                f"GKE counts nodes per zone and pool '{pool.name}' names no zones: it gets {field} {figure} in "
                "every zone of the cluster (three times as many in a regional cluster) while gpustack plans for "
                f"{figure}",
                "name cloud.zones (the pool's total is then divided over them), or use minNodes: 0",
            )


def check_pods_fit_the_machine(ctx: Context) -> Iterator[Diagnostic]:
    """A workload's stated CPU or memory per pod within one node of its cloud pool's machine (its allocatable)."""
    for workload in ctx.blueprint.workloads:
        pool = ctx.blueprint.pool(workload.pool)
        if pool is None or pool.cloud is None or pool.node_resources is not None:
            continue
        node = node_resources(pool, ctx.catalog)
        machine = pool_machine(pool, ctx.catalog)
        if node is None or machine is None or node.cpu is None or node.memory is None:
            continue
        for field, asked, room in (("cpu", workload.cpu, node.cpu), ("memory", workload.memory, node.memory)):
            if asked is None or parse_quantity(asked) <= parse_quantity(room):
                continue
            yield ctx.error(
                POD_EXCEEDS_MACHINE,
                (*workload.path, "resources", field),
                f"workload '{workload.name}' asks {field} {asked} per pod, but a {machine.name} node of pool "
                f"'{pool.name}' leaves {room} to pods ({machine.vcpus} vCPUs, {machine.memory_gib} GiB less the "
                f"kubelet's and system reserve): the pod would stay Pending",
                f"ask at most {room}, or give pool '{pool.name}' a larger machine type",
            )


def check_karpenter_disks(ctx: Context) -> Iterator[Diagnostic]:
    """A Karpenter NodePool has no disk fields: its EC2NodeClass's blockDeviceMappings size the disks
    (https://karpenter.sh/docs/concepts/nodeclasses/), so diskGb and diskType would not reach the cloud."""
    for pool in ctx.blueprint.pools:
        cloud = pool.cloud
        if cloud is None or cloud.provider != "karpenter":
            continue
        for field, value in (("diskGb", cloud.disk_gb), ("diskType", cloud.disk_type)):
            if value is None:
                continue
            yield ctx.error(
                KARPENTER_DISK_IGNORED,
                (*cloud.path, field),
                f"Karpenter pool '{pool.name}': a NodePool has no disk settings, so {field} {value} would never reach "
                f"AWS; the disks are EC2NodeClass '{cloud.node_class}''s, which gpustack reads but does not write",
                f"remove {field} and set blockDeviceMappings in EC2NodeClass '{cloud.node_class}'",
            )


# An agent pool's osDiskType (https://learn.microsoft.com/en-us/rest/api/aks/agent-pools/create-or-update#osdisktype).
AKS_DISK_TYPES = ("Managed", "Ephemeral")


def check_aks_disk_type(ctx: Context) -> Iterator[Diagnostic]:
    """AKS's diskType is the agent pool's osDiskType: Managed or Ephemeral, nothing else reaches Azure."""
    for pool in ctx.blueprint.pools:
        cloud = pool.cloud
        if cloud is None or cloud.provider != "aks" or cloud.disk_type is None or cloud.disk_type in AKS_DISK_TYPES:
            continue
        yield ctx.error(
            AKS_DISK_TYPE,
            (*cloud.path, "diskType"),
            f"AKS pool '{pool.name}': diskType {cloud.disk_type} is not an agent pool OS disk type "
            f"({' or '.join(AKS_DISK_TYPES)}); Azure would refuse the agent pool",
            "use diskType: Managed or diskType: Ephemeral, or leave it out",
        )


def check_bottlerocket_device_plugin(ctx: Context) -> Iterator[Diagnostic]:
    """Bottlerocket's NVIDIA AMIs bring a device plugin; gpustack's stack brings another (GS318)."""
    for pool in ctx.blueprint.pools:
        cloud = pool.cloud
        if cloud is None or cloud.provider != "eks" or pool.gpu is None or cloud.image_type is None:
            continue
        if not cloud.image_type.startswith("BOTTLEROCKET_"):
            continue
        yield ctx.error(
            BOTTLEROCKET_DEVICE_PLUGIN,
            (*cloud.path, "imageType"),
            f"EKS pool '{pool.name}': {cloud.image_type} runs Bottlerocket's own NVIDIA device plugin, and "
            "gpustack's stack runs one on the pool too: two device plugins would advertise the same GPUs",
            "imageType: AL2023_x86_64_NVIDIA (AL2023_ARM_64_NVIDIA on Graviton): driver and toolkit, no plugin",
        )


def check_image_arch(ctx: Context) -> Iterator[Diagnostic]:
    """An EKS GPU pool's AMI is built for its machine's CPU architecture (GS319)."""
    for pool in ctx.blueprint.pools:
        cloud = pool.cloud
        if cloud is None or cloud.provider != "eks" or pool.gpu is None or cloud.image_type is None:
            continue
        arch, image = pool_arch(pool, ctx.catalog), image_arch(cloud.image_type)
        if arch != image:
            yield ctx.error(
                IMAGE_ARCH_MISMATCH,
                (*cloud.path, "imageType"),
                f"EKS pool '{pool.name}': {cloud.image_type} is an {image} AMI, and the pool's machines are {arch} "
                "hosts: its nodes would not boot",
                f"imageType: {EKS_DEFAULT_IMAGES[arch]}, or leave it out",
            )


RULES = (
    check_cloud_machines,
    check_cloud_selectors,
    check_cloud_driver,
    check_gke_counts,
    check_pods_fit_the_machine,
    check_karpenter_disks,
    check_aks_disk_type,
    check_bottlerocket_device_plugin,
    check_image_arch,
)

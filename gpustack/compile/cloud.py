"""Cloud node pools as plain data: what `pulumi up` registers per cloud pool, and the same spec as a file.

Pure: `node_pool_specs(ctx)` gives, per pool with a `cloud` block, the provider's node-pool resource and its inputs
(Pulumi's Python argument names), with the labels and taints gpustack derives for the pool's nodes (`nodes.py`), so
every node starts with its pool label, device-plugin config and MIG layout. They reach the Plan as
`Plan.node_pools`: `gpustack.deploy` turns each spec into its Pulumi resource, adding what only the stack knows (the
cluster, its location, node role, subnets), and review compares two versions' specs.
`compile_cloud` writes `cloud/<pool>.<provider>.yaml` in the provider's own API shape for users who provision with
something else; none of them is in the kustomization.

GKE: gpustack's device plugin (or the GPU Operator's) serves every GPU pool, so the sharing a blueprint sets means
the same on every provider and one plugin runs per node: GKE's own plugin is switched off with the
`gke-no-default-nvidia-gpu-device-plugin=true` node label, and `gpu_sharing_config` (which only GKE's plugin reads)
is not set. A MIG pool with one profile on every GPU gets `gpu_partition_size`, so GKE partitions the GPUs at boot;
the MIG manager then finds the layout it would make. AKS likewise gets `gpu_instance_profile` (MIG1g..MIG7g).
"""

from __future__ import annotations

from gpustack.cloud import (
    ARM64,
    blueprint_node_image,
    gke_zone_sizing,
    machines,
    matching_machines,
    pool_accelerator,
    pool_arch,
)
from gpustack.cloud import machine_type as pool_machine_type
from gpustack.compile.mig import uses_mig
from gpustack.compile.nodes import node_labels
from gpustack.context import Context
from gpustack.model import NodePool, Taint
from gpustack.names import MANAGED_BY
from gpustack.plan import Artifact, FamilyOutput, NodePoolSpec, Object
from gpustack.taints import taint_object, taint_text
from gpustack.yamlout import dump_yaml

GKE_NO_DEVICE_PLUGIN_LABEL = "gke-no-default-nvidia-gpu-device-plugin"
GKE_EFFECTS = {"NoSchedule": "NO_SCHEDULE", "PreferNoSchedule": "PREFER_NO_SCHEDULE", "NoExecute": "NO_EXECUTE"}
EKS_EFFECTS = GKE_EFFECTS


def _uniform_mig_profile(pool: NodePool) -> str | None:
    """The one MIG profile every GPU of the pool is cut into, if there is exactly one (e.g. 1g.10gb)."""
    if not uses_mig(pool) or pool.sharing.mig is None:
        return None
    profiles = {profile for group in pool.sharing.mig.groups for profile in group.instances}
    whole = all(group.devices is None for group in pool.sharing.mig.groups)
    return next(iter(profiles)) if len(profiles) == 1 and whole else None


def _size(pool: NodePool) -> tuple[int, int]:
    """(min, max) nodes: a fixed-size pool's count both ways."""
    if pool.count is not None:
        return pool.count, pool.count
    return pool.min_nodes or 0, pool.max_nodes or 0


def _own_taints(pool: NodePool) -> list[Taint]:
    """The taints gpustack asks the provider for: not those the cloud adds by itself (Taint.by_cloud)."""
    return [taint for taint in pool.taints if not taint.by_cloud]


def _without_none(data: Object) -> Object:
    return {key: value for key, value in data.items() if value is not None and value != [] and value != {}}


def _gke(ctx: Context, pool: NodePool, labels: dict[str, str]) -> Object:
    assert pool.cloud is not None
    image = blueprint_node_image(ctx.blueprint, pool) if pool.gpu is not None else None
    accelerators: list[Object] = []
    if pool.gpu is not None and image is not None:
        # Google's driver (installed by GKE, LATEST) where the image brings the driver; the GPU Operator's
        # otherwise, which runs only on Ubuntu (gpustack.cloud, NVIDIA's GKE page).
        accelerators.append(
            _without_none(
                {
                    "type": pool_accelerator(pool, ctx.catalog),
                    "count": pool.gpu.count,
                    "gpu_driver_installation_config": {
                        "gpu_driver_version": "LATEST" if image.has_driver else "INSTALLATION_DISABLED"
                    },
                    "gpu_partition_size": _uniform_mig_profile(pool),
                }
            )
        )
        labels = {**labels, GKE_NO_DEVICE_PLUGIN_LABEL: "true"}
    node_config = _without_none(
        {
            "machine_type": pool_machine_type(pool, ctx.catalog),
            "image_type": None if image is None else image.image,
            "spot": pool.cloud.spot or None,
            "disk_size_gb": pool.cloud.disk_gb,
            "disk_type": pool.cloud.disk_type,
            "labels": labels,
            "taints": [
                {"key": t.key, "value": t.value or "", "effect": GKE_EFFECTS[t.effect]} for t in _own_taints(pool)
            ],
            "guest_accelerators": accelerators,
        }
    )
    return _without_none(
        {
            "name": pool.name,
            "node_locations": list(pool.cloud.zones),
            **gke_zone_sizing(pool),
            "node_config": node_config,
        }
    )


def _eks(ctx: Context, pool: NodePool, labels: dict[str, str]) -> Object:
    assert pool.cloud is not None
    low, high = _size(pool)
    return _without_none(
        {
            "node_group_name": pool.name,
            "instance_types": [pool_machine_type(pool, ctx.catalog)],
            # EKS's accelerated AMI: NVIDIA driver and container toolkit preinstalled.
            "ami_type": blueprint_node_image(ctx.blueprint, pool).image
            if pool.gpu is not None
            else "AL2023_x86_64_STANDARD",
            "capacity_type": "SPOT" if pool.cloud.spot else "ON_DEMAND",
            "disk_size": pool.cloud.disk_gb,
            "labels": labels,
            "taints": [
                _without_none({"key": t.key, "value": t.value, "effect": EKS_EFFECTS[t.effect]})
                for t in _own_taints(pool)
            ],
            # EKS wants max_size >= 1; desired_size is only the starting point (the autoscaler moves it).
            "scaling_config": {"desired_size": low, "min_size": low, "max_size": max(high, 1)},
        }
    )


def _aks(ctx: Context, pool: NodePool, labels: dict[str, str]) -> Object:
    assert pool.cloud is not None
    low, high = _size(pool)
    profile = _uniform_mig_profile(pool)
    autoscaled = pool.count is None
    aks_skips_driver = pool.gpu is not None and not blueprint_node_image(ctx.blueprint, pool).has_driver
    return _without_none(
        {
            "agent_pool_name": pool.name,
            "vm_size": pool_machine_type(pool, ctx.catalog),
            "mode": "User",
            "os_type": "Linux",
            "count": low,
            "enable_auto_scaling": True if autoscaled else None,
            "min_count": low if autoscaled else None,
            "max_count": high if autoscaled else None,
            "availability_zones": list(pool.cloud.zones),
            "scale_set_priority": "Spot" if pool.cloud.spot else "Regular",
            "os_disk_size_gb": pool.cloud.disk_gb,
            "os_disk_type": pool.cloud.disk_type,
            "gpu_instance_profile": None if profile is None else "MIG" + profile.split(".")[0],
            # The GPU Operator's driver asked for: AKS installs none (az aks nodepool add --gpu-driver none).
            "gpu_profile": {"driver": "None"} if aks_skips_driver else None,
            "node_labels": labels,
            "node_taints": [taint_text(t) for t in _own_taints(pool)],
        }
    )


def karpenter_node_pool(ctx: Context, pool: NodePool, labels: dict[str, str]) -> Object:
    """The karpenter.sh/v1 NodePool that launches the pool's nodes (on AWS, through its EC2NodeClass)."""
    assert pool.cloud is not None
    _, high = _size(pool)
    # Spot first, on-demand when spot has none: with both allowed Karpenter launches spot and falls back
    # (https://karpenter.sh/docs/concepts/nodepools/#capacity-type).
    capacity = ["spot", "on-demand"] if pool.cloud.spot else ["on-demand"]
    requirements = [
        *_karpenter_machines(ctx, pool),
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": capacity},
    ]
    if pool.cloud.zones:
        requirements.append({"key": "topology.kubernetes.io/zone", "operator": "In", "values": list(pool.cloud.zones)})
    if pool_arch(pool, ctx.catalog) == ARM64:  # Grace hosts (GB200): the EC2NodeClass's AMI alias resolves arm64
        requirements.append({"key": "kubernetes.io/arch", "operator": "In", "values": [ARM64]})
    spec: Object = {
        "template": {
            "metadata": {"labels": labels},
            "spec": _without_none(
                {
                    "nodeClassRef": {
                        "group": "karpenter.k8s.aws",
                        "kind": "EC2NodeClass",
                        "name": pool.cloud.node_class,
                    },
                    "requirements": requirements,
                    "taints": [taint_object(t) for t in _own_taints(pool)],
                    # Karpenter's default expires every node after 720 h, draining GPU jobs that run for weeks;
                    # a GPU pool's nodes live until they are empty (expiry is forceful: no budget holds it).
                    "expireAfter": "Never" if pool.gpu is not None else None,
                }
            ),
        },
        # GPU nodes are consolidated only when empty: moving a running training or inference pod costs more
        # than the node. A drifted GPU node (new AMI, changed EC2NodeClass) is not replaced under running pods
        # either (budget 0 for Drifted); empty ones go as before (https://karpenter.sh/docs/concepts/disruption/).
        "disruption": _without_none(
            {
                "consolidationPolicy": "WhenEmpty",
                "consolidateAfter": "5m",
                "budgets": [{"nodes": "0", "reasons": ["Drifted"]}] if pool.gpu is not None else None,
            }
        ),
    }
    if pool.gpu is not None:
        # Karpenter has no node count; the pool's maxNodes is a ceiling on the GPUs it may launch.
        spec["limits"] = {"nvidia.com/gpu": str(high * pool.gpu.count)}
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": pool.name, "labels": dict(MANAGED_BY)},
        "spec": spec,
    }


def _karpenter_machines(ctx: Context, pool: NodePool) -> list[Object]:
    """The NodePool's machine requirements: the instance type named; else by GPU (karpenter.k8s.aws/instance-gpu-*
    labels: https://karpenter.sh/docs/reference/instance-types/) where the GPU's name is one model's alone in the
    EC2 table, so Karpenter may pick any instance with those GPUs; else every instance type with them."""
    assert pool.cloud is not None
    if pool.cloud.machine_type is not None:
        return [{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": [pool.cloud.machine_type]}]
    found = matching_machines(pool.cloud.provider, ctx.catalog, pool)
    names = {m.accelerator for m in found}
    models = {m.gpu for m in machines(pool.cloud.provider) if m.accelerator in names}
    if pool.gpu is not None and len(names) == 1 and len(models) == 1 and None not in names:
        return [
            {"key": "karpenter.k8s.aws/instance-gpu-manufacturer", "operator": "In", "values": ["nvidia"]},
            {"key": "karpenter.k8s.aws/instance-gpu-name", "operator": "In", "values": sorted(names)},
            {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "In", "values": [str(pool.gpu.count)]},
        ]
    return [{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": [m.name for m in found]}]


def _document(spec_args: Object, pool: NodePool, provider: str) -> Object:
    """The spec in one dialect per file: a Terraform `google_container_node_pool` for GKE (Terraform's names: its
    repeated blocks are singular, `taint` and `guest_accelerator`, where Pulumi says `taints`, `guest_accelerators`),
    an eksctl managed node group (eksctl's spellings: `NoSchedule`, amiFamily), an AKS agentPool (ARM, camelCase),
    the Karpenter NodePool itself."""
    if provider == "gke":
        return {"google_container_node_pool": _terraform_gke(spec_args)}
    if provider == "eks":
        scaling = spec_args["scaling_config"]
        return {
            "managedNodeGroups": [
                _without_none(
                    {
                        "name": spec_args["node_group_name"],
                        "instanceTypes": spec_args["instance_types"],
                        "amiFamily": _EKSCTL_AMI_FAMILIES[str(spec_args["ami_type"]).split("_")[0]],
                        "spot": True if spec_args["capacity_type"] == "SPOT" else None,
                        "volumeSize": spec_args.get("disk_size"),
                        "minSize": scaling["min_size"],
                        "maxSize": scaling["max_size"],
                        "desiredCapacity": scaling["desired_size"],
                        "labels": spec_args["labels"],
                        # eksctl spells effects as Kubernetes does (https://eksctl.io/usage/nodegroup-taints/).
                        "taints": [{**t, "effect": _EKSCTL_EFFECTS[t["effect"]]} for t in spec_args.get("taints", [])],
                    }
                )
            ]
        }
    if provider == "aks":
        rest = {_camel(k): v for k, v in spec_args.items() if k != "agent_pool_name"}
        rest = {("osDiskSizeGB" if k == "osDiskSizeGb" else k): v for k, v in rest.items()}
        return {"name": spec_args["agent_pool_name"], "properties": rest}
    return spec_args


_EKSCTL_AMI_FAMILIES = {"AL2023": "AmazonLinux2023", "BOTTLEROCKET": "Bottlerocket"}
_EKSCTL_EFFECTS = {api: kube for kube, api in EKS_EFFECTS.items()}
# Pulumi's plural list names -> Terraform's singular nested block names (google provider, container_node_pool).
_TERRAFORM_BLOCKS = {"taints": "taint", "guest_accelerators": "guest_accelerator"}


def _terraform_gke(spec_args: Object) -> Object:
    config = {_TERRAFORM_BLOCKS.get(k, k): v for k, v in spec_args.get("node_config", {}).items()}
    return {**spec_args, "node_config": config} if "node_config" in spec_args else dict(spec_args)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def node_pool_specs(ctx: Context) -> list[NodePoolSpec]:
    """One spec per cloud pool, in blueprint order."""
    specs: list[NodePoolSpec] = []
    for pool in ctx.blueprint.pools:
        if pool.cloud is None:
            continue
        provider = pool.cloud.provider
        labels = dict(node_labels(ctx, pool))  # each provider's inputs own their copy
        build = {"gke": _gke, "eks": _eks, "aks": _aks, "karpenter": karpenter_node_pool}[provider]
        args = build(ctx, pool, labels)
        specs.append(
            NodePoolSpec(
                pool.name, provider, args, f"cloud/{pool.name}.{provider}.yaml", _document(args, pool, provider)
            )
        )
    return specs


# What each file is, in its one dialect.
DIALECTS = {
    "gke": "the Terraform google_container_node_pool arguments (Terraform's names)",
    "eks": "an eksctl ClusterConfig managedNodeGroups entry (eksctl's names)",
    "aks": "the ARM agentPool (Azure REST names)",
    "karpenter": "the karpenter.sh/v1 NodePool manifest",
}


# eksctl installs its own NVIDIA device plugin for a GPU node group unless told not to
# (https://docs.aws.amazon.com/eks/latest/eksctl/gpu-support.html); gpustack's stack runs one on every GPU pool.
EKSCTL_NO_PLUGIN = (
    "# With eksctl: `eksctl create nodegroup --install-nvidia-plugin=false ...`: gpustack's stack runs the NVIDIA "
    "device plugin, and eksctl's own would be a second one on these GPUs.\n"
)


def _header(ctx: Context, spec: NodePoolSpec) -> str:
    pool = ctx.blueprint.pool(spec.pool)
    gpus = pool is not None and pool.gpu is not None
    return (
        f"# Generated by gpustack from blueprint '{ctx.blueprint.name}': {DIALECTS[spec.provider]} for pool "
        f"'{spec.pool}'.\n# `pulumi up` with gpustack's stack registers the same as {spec.resource}; not applied "
        "by kustomize.\n" + (EKSCTL_NO_PLUGIN if spec.provider == "eks" and gpus else "")
    )


def compile_cloud(ctx: Context) -> FamilyOutput:
    specs = node_pool_specs(ctx)
    artifacts = [
        Artifact(
            spec.file,
            _header(ctx, spec) + dump_yaml(spec.document),
            f"the {spec.provider} node pool for pool `{spec.pool}` (machine type, GPUs, labels, taints, autoscaling)",
        )
        for spec in specs
    ]
    return FamilyOutput(objects=[], artifacts=artifacts, node_pools=specs)

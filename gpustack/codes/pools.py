"""Codes of the rules on names and node pools (gpustack/checks/): references, hardware, cloud, sharing, DRA."""

from __future__ import annotations

from gpustack.codes.record import Stage

_references = Stage("names and references", "gpustack/checks/references.py")
_hardware = Stage("hardware", "gpustack/checks/hardware.py")
_cloud = Stage("cloud node pools", "gpustack/checks/cloud.py")
_recommend = Stage("MIG layouts left to `gpustack recommend`", "gpustack/checks/hardware.py, gpustack/recommend/")
_sharing = Stage("sharing", "gpustack/checks/sharing.py")
_dra = Stage("DRA pools (`allocation: dra`)", "gpustack/checks/dra.py")

DUPLICATE_NAME = _references(
    "GS201",
    "a name is defined twice",
    "Two pools, tenants or workloads have the same name.",
    "Give each its own name.",
)

NAMESPACE_IN_TWO_TENANTS = _references(
    "GS202",
    "a namespace belongs to two tenants",
    "Two tenants list the same namespace; its quota and admission policy cannot serve both.",
    "Give each tenant namespaces of its own.",
)

NODE_IN_TWO_POOLS = _references(
    "GS203",
    "a node is in two pools",
    "A node is listed in two pools; a node carries one pool's labels, taints and device-plugin config.",
    "List the node in one pool.",
)

UNKNOWN_POOL = _references(
    "GS204",
    "a reference to a pool that does not exist",
    "A tenant or workload names a pool that is not defined.",
    "Fix the name (see the hint) or add the pool.",
)

UNKNOWN_TENANT = _references(
    "GS205",
    "a reference to a tenant (or tenant namespace) that does not exist",
    "A workload names a tenant or a namespace that no tenant owns.",
    "Fix the name (see the hint) or add the tenant or namespace.",
)

SYSTEM_NAMESPACE = _references(
    "GS206",
    "a tenant claims a system namespace",
    "A tenant claims a namespace of the cluster's own components (kube-system, the device plugin's, the GPU "
    "Operator's, KAI Scheduler's where a tenant uses KAI): admission policies leave those alone, so the tenant "
    "would be unconfined.",
    "Give the tenant a namespace of its own.",
)

CORDONED_NOT_IN_POOL = _references(
    "GS207",
    "a cordoned node that is not one of its pool's nodes",
    "A pool's `cordoned` list names a node that is not in the pool's `nodes`.",
    "List only the pool's own nodes under `cordoned` (check the spelling).",
)

UNKNOWN_MODEL = _hardware(
    "GS301",
    "unknown GPU model",
    "`gpu.model` names no GPU in the catalog.",
    "Use a catalog key (`A100-SXM4-80GB`), the `nvidia.com/gpu.product` label your nodes carry, or a GKE accelerator "
    "name (`nvidia-tesla-t4`); `gpustack models TEXT` lists the matches.",
)

MIG_UNSUPPORTED = _hardware(
    "GS302",
    "MIG on a GPU model without MIG",
    "A pool asks for MIG on a GPU that cannot be partitioned (only A30, A100, H100, H200, GH200, B200, GB200 and RTX "
    "PRO 6000 Blackwell can).",
    "Share the GPU with time-slicing or MPS, or move the pool to a MIG-capable model.",
)

MIG_LAYOUT_IMPOSSIBLE = _hardware(
    "GS303",
    "a MIG layout the GPU cannot make",
    "A MIG layout the GPU cannot make: an unknown profile, too many instances, more memory or compute slices than the "
    "GPU has, or instances that cannot be placed side by side; or MIG groups that all leave their GPUs `whole: true`, "
    "so no GPU is MIG-enabled.",
    "Use one of the valid layouts the hint lists; `gpustack models MODEL` shows each profile. Give at least one MIG "
    "group a layout, or use `sharing.strategy: none` for whole GPUs.",
)

MIG_SINGLE_MIXED = _hardware(
    "GS304",
    "single MIG strategy with more than one profile, GPUs left whole, or time-slicing",
    "The `single` MIG strategy with a layout of several profiles, or with a MIG group left `whole: true` (MIG-enabled "
    "and whole GPUs on one node): the device plugin refuses the node and GFD labels it `-MIG-INVALID`. Or "
    "`mig.timeSlicing` under `single`, where the plugin would replicate the instances as `nvidia.com/gpu`, a name "
    "that cannot be told from whole GPUs.",
    "Use one profile on every GPU, or `strategy: mixed` (which advertises whole GPUs as `nvidia.com/gpu` and each "
    "profile, time-sliced or not, as `nvidia.com/mig-<profile>`).",
)

MIG_GROUPS_UNEVEN = _hardware(
    "GS305",
    "MIG groups that do not cover each GPU exactly once",
    "MIG groups that leave a GPU out, or list one twice.",
    "Make the groups' GPU indexes cover 0..count-1 exactly once.",
)

SHARING_ON_CPU_POOL = _hardware(
    "GS306",
    "GPU sharing on a CPU-only pool",
    "A pool without `gpu` (a CPU-only pool) sets a GPU sharing strategy.",
    "Remove `sharing` from the CPU-only pool, or give it a `gpu` block.",
)

MACHINE_TYPE_MISMATCH = _cloud(
    "GS307",
    "a cloud pool's machine type does not carry the pool's GPUs",
    "A pool's `cloud.machineType` is not a GPU machine type of its provider gpustack knows, or has another GPU model "
    "or count than the pool's `gpu`; or the pool leaves machineType out and no machine type has its GPUs.",
    "Pick a machine type from the hint (they carry exactly the pool's GPUs), fix `gpu`, or leave machineType out and "
    "gpustack picks the smallest matching one (`gpustack/data/cloud-machines.yaml` lists them).",
)

CLOUD_SELECTOR_ELSEWHERE = _cloud(
    "GS308",
    "a cloud pool's selector does not select the nodes of its provider pool",
    "A cloud pool gives a `selector` that the nodes of its provider pool would not match: they carry the provider's "
    "node-pool label valued with the pool's name, gpustack's pool label and the pool's labels.",
    "Drop the selector (gpustack selects the provider's node-pool label), or select on one of those labels.",
)

MIG_LAYOUT_AUTO = _recommend(
    "GS310",
    "a MIG layout or a sharing strategy left to gpustack recommend (auto), which compile refuses",
    "A MIG pool says `layout: auto`, or a pool says `sharing.strategy: auto`: its layouts (or its sharing: whole "
    "GPUs, MIG or time-slicing) are for `gpustack recommend` to choose. `validate` accepts it (as a warning, checking "
    "needs and quotas against whole GPUs and every profile the GPU has); `compile` and `validate --strict` refuse it, "
    "so no layout nobody reviewed reaches a cluster.",
    "Run `gpustack recommend BLUEPRINT --write`, review what it writes in place of auto, then compile.",
)

RECOMMEND_NO_FIT = _recommend(
    "GS311",
    "gpustack recommend finds no layouts (or no sharing) that fit a pool's demand within its nodes",
    "`gpustack recommend` found no MIG layouts under which a pool's workloads (and its tenants' quotas) fit on the "
    "nodes the pool may have: its listed nodes, `count`, or `maxNodes`; for a `sharing.strategy: auto` pool, no "
    "sharing (whole GPUs, MIG or time-slicing) that does. The message names the resource that does not fit and how "
    "many nodes it would take, and for a sharing pool why each sharing is ruled out or too small (at the strategy "
    "where no sharing is a candidate at all).",
    "Raise `maxNodes` (or `count`, or list more nodes), give the pool more GPUs per node, or shrink the workloads' "
    "replicas or the tenants' quotas on the pool; for a sharing pool no sharing is a candidate for, choose the "
    "sharing yourself or change the workloads or quotas the message names.",
)

GKE_ZONE_COUNT = _cloud(
    "GS309",
    "a GKE pool's node count cannot be turned exactly into GKE's per-zone count",
    "GKE counts a node pool's fixed size and its starting size per zone (`node_count`, `initial_node_count`): "
    "gpustack writes the pool's `count` as count / zones per zone, an error where the named zones cannot share it "
    "evenly. Without named zones the pool gets the figure in every zone of the cluster (three in a regional one) "
    "while capacity, quotas and simulate plan for one: a warning. Autoscaled pools bound the whole pool with GKE's "
    "total counts (`total_min_node_count`, `total_max_node_count`).",
    "Name the pool's `cloud.zones` and make `count` a multiple of their number, or use `minNodes`/`maxNodes`.",
)

CLOUD_DRIVER_CONFLICT = _cloud(
    "GS313",
    "the GPU Operator's driver or toolkit contradicts a cloud pool's node image",
    "The GPU Operator's `driver` or `toolkit` setting contradicts what a cloud pool's node image already has, "
    "following NVIDIA's page for that cloud: EKS and Karpenter NVIDIA AMIs and AKS GPU images carry the driver and "
    "toolkit; GKE's COS image runs Google's driver (the operator's cannot run there) and no GKE image has the "
    "toolkit. Two drivers fight over the node; none leaves the GPUs unusable.",
    "Follow the hint: set `gpuOperator.driver`/`toolkit` as the cloud's recipe says, or leave them out and gpustack "
    "decides from the pools' images; on GKE pick `imageType: UBUNTU_CONTAINERD` for the operator's driver.",
)

POD_EXCEEDS_MACHINE = _cloud(
    "GS314",
    "a workload's pod asks more CPU or memory than its cloud pool's machine leaves to pods",
    "A workload's pod asks more CPU or memory (`resources`) than one node of its cloud pool can give: the machine "
    "type's vCPUs and memory less what the kubelet and system reserve (each cloud's published formula, "
    "`gpustack/cloud.py`). The pod would stay Pending forever.",
    "Lower the workload's `resources`, or give the pool a larger machine type.",
)

MACHINE_TYPE_UNLISTED = _cloud(
    "GS315",
    "a cloud pool's machine type is not in gpustack's table; its stated resources are trusted",
    "A cloud pool names a machine type gpustack's table (`gpustack/data/cloud-machines.yaml`) does not list, and "
    "states its node's `nodeResources` (cpu and memory): gpustack plans the pool on its `gpu` and those figures, "
    "which it cannot check.",
    "Check the figures against the provider's machine type page, or ask for the machine type to be added to the table.",
)

KARPENTER_DISK_IGNORED = _cloud(
    "GS316",
    "a Karpenter pool's diskGb or diskType, which its NodePool cannot carry",
    "A Karpenter pool sets `cloud.diskGb` or `cloud.diskType`, but a karpenter.sh/v1 NodePool has no disk fields: the "
    "EC2NodeClass it names (`nodeClass`) sizes its nodes' disks with `blockDeviceMappings`, and gpustack references "
    "that EC2NodeClass by name without writing it, so the value would never reach AWS. Refused, as EKS's is, rather "
    "than dropped: a disk the blueprint states must be the disk the nodes get.",
    "Remove the field and set `blockDeviceMappings` in the EC2NodeClass the pool names.",
)

AKS_DISK_TYPE = _cloud(
    "GS317",
    "an AKS pool's diskType that an agent pool cannot take",
    "An AKS pool sets `cloud.diskType` to something other than `Managed` or `Ephemeral`: it becomes the agent pool's "
    "`osDiskType`, which takes only those two (the ARM API's OSDiskType enum, pulumi-azure-native's `OSDiskType`), so "
    "Azure would refuse the agent pool at `pulumi up`. A disk SKU such as Premium_LRS is not an agent pool setting.",
    "Use `diskType: Managed` or `diskType: Ephemeral`, or leave it out for AKS's default.",
)

BOTTLEROCKET_DEVICE_PLUGIN = _cloud(
    "GS318",
    "an EKS GPU pool on a Bottlerocket NVIDIA AMI, which runs its own device plugin",
    "An EKS GPU pool sets `cloud.imageType` to a `BOTTLEROCKET_*_NVIDIA` AMI. Bottlerocket's NVIDIA variants run the "
    "NVIDIA device plugin they bundle (https://docs.aws.amazon.com/eks/latest/userguide/ml-eks-optimized-ami.html; "
    "eksctl skips its own plugin on Bottlerocket for that reason), and gpustack's stack runs one on every GPU pool "
    "(the device plugin chart, or the GPU Operator's): two plugins would advertise the same GPUs, and only one of "
    "them would apply the sharing the blueprint sets. Turning Bottlerocket's off takes a node setting (user data) "
    "that a managed node group without a launch template cannot carry.",
    "Use `imageType: AL2023_x86_64_NVIDIA` (`AL2023_ARM_64_NVIDIA` on Graviton): the driver and toolkit preinstalled, "
    "no device plugin.",
)

IMAGE_ARCH_MISMATCH = _cloud(
    "GS319",
    "an EKS pool's NVIDIA AMI is built for another CPU architecture than its machine type",
    "An EKS GPU pool's `cloud.imageType` is an AMI for one CPU architecture (`AL2023_x86_64_NVIDIA`: amd64; "
    "`AL2023_ARM_64_NVIDIA`: arm64) and its machine type is a host of the other (GB200's `p6e-gb200.36xlarge` has "
    "Grace Arm CPUs): EKS refuses the node group, or its nodes never boot. Left out, gpustack picks the AMI of the "
    "machine's architecture.",
    "Leave `imageType` out, or write the AMI of the machine's architecture (`AL2023_ARM_64_NVIDIA` on Arm hosts).",
)

MPS_WITH_MIG = _sharing(
    "GS401",
    "MPS combined with MIG",
    "MPS and MIG on one pool: the device plugin refuses MPS on MIG devices.",
    "Choose MIG or MPS.",
)

TOO_FEW_REPLICAS = _sharing(
    "GS402",
    "time-slicing or MPS with fewer than 2 replicas",
    "Time-slicing or MPS with `replicas` below 2: the device plugin fails to start.",
    "Use 2 or more replicas, or `strategy: none` for whole GPUs.",
)

MPS_TOO_MANY_CLIENTS = _sharing(
    "GS403",
    "MPS replicas above the per-GPU client cap",
    "More MPS replicas than the GPU's MPS server takes clients (48 from compute capability 7.5, else 16).",
    "Lower `replicas` to the cap.",
)

MEMORY_OVERSUBSCRIBED = _sharing(
    "GS404",
    "time-slicing lets workloads oversubscribe GPU memory",
    "A time-sliced pool where the pods that can land on one GPU (or one time-sliced MIG instance) ask for more memory "
    "than it has: time-slicing shares compute, not memory.",
    "Lower `timeSlicing.replicas` (or `mig.timeSlicing.replicas`), lower the workload's memory, or use MIG or HAMi "
    "for memory isolation.",
)

MPS_WITHOUT_GFD = _sharing(
    "GS405",
    "MPS without GPU Feature Discovery",
    "An MPS pool with GPU Feature Discovery off: the MPS daemon only runs where GFD labels the node.",
    "Set `devicePlugin.gfd: true`.",
)

OWNED_LABEL = _sharing(
    "GS406",
    "a pool sets a label gpustack or the kubelet owns",
    "A pool sets a label gpustack derives from the blueprint (its pool label, `nvidia.com/mig.config`, the "
    "device-plugin config label).",
    "Remove the label: gpustack writes it from the pool's sharing.",
)

GFD_LABEL = _sharing(
    "GS407",
    "a pool sets a label GPU Feature Discovery writes (and overwrites)",
    "A pool sets a label GPU Feature Discovery writes from the hardware (`nvidia.com/gpu.product`, "
    "`nvidia.com/gpu.memory`, `nvidia.com/cuda.*`, `nvidia.com/mig-<profile>.*`, ...): GFD overwrites it on its next "
    "pass, so the value in the blueprint never holds. Only while GFD is on.",
    "Remove the label; select the pool's nodes by gpustack's `gpustack.io/pool` label.",
)

HAMI_SETTINGS_DIFFER = _sharing(
    "GS409",
    "HAMi pools with different HAMi settings",
    "HAMi pools with different HAMi settings: gpustack installs one HAMi release, which takes one value.",
    "Give every HAMi pool the same settings.",
)

DRA_SHARING = _dra(
    "GS420",
    "a DRA pool with sharing the NVIDIA DRA driver cannot give to separate pods",
    "A pool with `allocation: dra` uses time-slicing, MPS or HAMi sharing, or time-slices its MIG instances "
    "(`mig.timeSlicing`). The NVIDIA DRA driver shares a GPU only between the containers of one claim, so replicas of "
    "a GPU (or MIG device) cannot be handed to separate pods.",
    "Use `sharing: none` or `mig` (pre-made MIG devices) on the DRA pool, or keep the pool on `allocation: "
    "device-plugin`.",
)

DRA_AND_DEVICE_PLUGIN = _dra(
    "GS421",
    "a node in a DRA pool and in a pool a device plugin serves",
    "A node is listed in a DRA pool and in a pool a device plugin (NVIDIA's or HAMi's) serves. The DRA driver and the "
    "plugin would both hand out its GPUs, so pods of each could get the same GPU.",
    "List each node in one pool only; to change a node's allocation, move it from one pool to the other.",
)

DRA_API_UNAVAILABLE = _dra(
    "GS422",
    "DRA's resource.k8s.io API version is not served at the blueprint's Kubernetes version",
    "The blueprint's Kubernetes version does not serve the resource.k8s.io API its DRA objects need: "
    "resource.k8s.io/v1 arrives in 1.34, v1beta2 in 1.33, v1beta1 in 1.32.",
    "Target Kubernetes 1.34 or newer, or opt in to a beta API served at your version with `spec.dra.apiVersion`, or "
    "keep the pools on `allocation: device-plugin`.",
)

DRA_BETA_API = _dra(
    "GS423",
    "DRA through a beta resource.k8s.io API (explicit opt-in before Kubernetes 1.34)",
    "A warning: DRA objects use a beta resource.k8s.io API (`spec.dra.apiVersion`). Before 1.34 DRA is off unless its "
    "feature gate and API are turned on everywhere; from 1.34 the betas are deprecated, and DeviceClass "
    "`extendedResourceName` exists only in v1.",
    "Target Kubernetes 1.34 or newer and drop `spec.dra.apiVersion` to use resource.k8s.io/v1.",
)

DRA_SCHEDULER = _dra(
    "GS424",
    "a DRA pool used through Kueue, Volcano or a VolcanoJob, which count extended resources",
    "A tenant that queues through Kueue or Volcano is granted a DRA pool, or a VolcanoJob runs on one. Their quotas "
    "and gangs count extended resources, which a pod claiming devices does not request, so the queue would admit "
    "without limit.",
    "Give the tenant `scheduler: default` on DRA pools (its quota becomes device counts per DeviceClass in a "
    "ResourceQuota), use a Job instead of a VolcanoJob, or keep the pool on `allocation: device-plugin`.",
)

MIG_TIME_SLICING_UNKNOWN_PROFILE = _sharing(
    "GS425",
    "time-slicing replicas for a MIG profile the pool's layout does not make, or for whole GPUs it does not leave",
    "`mig.timeSlicing.replicas` gives a count to a profile that no layout of the pool makes, or to `whole` where no "
    "group leaves GPUs whole. The device plugin replicates only resources the node advertises and ignores any other "
    "name without a word, so the count would share nothing.",
    "Name only profiles of the pool's layouts (and `whole` only beside a `whole: true` group); fix a misspelt "
    "profile, or remove the entry.",
)

MIG_TIME_SLICING_AUTO_LAYOUT = _sharing(
    "GS426",
    "time-slicing replicas per MIG profile on a pool whose layout is left to `gpustack recommend`",
    "`mig.timeSlicing.replicas` gives a count per profile on a pool with `layout: auto`: no layout says yet which "
    "profiles the pool makes, so the counts cannot be checked, and recommend sizes the pool by one count for every "
    "instance.",
    "Give one count (`replicas: 2`) until `gpustack recommend --write` has chosen the layouts, then name a count per "
    "profile.",
)

"""Every diagnostic code gpustack emits, with a one-line summary (the reference users search for)."""

from __future__ import annotations

# Each code as a named constant: raise sites and tests use the name, users read the code.
FILE_UNREADABLE = "GS001"
FILE_TOO_LARGE = "GS002"
NOT_UTF8 = "GS003"
YAML_SYNTAX = "GS004"
DUPLICATE_KEY = "GS005"
ALIAS = "GS006"
CUSTOM_TAG = "GS007"
SEVERAL_DOCUMENTS = "GS008"
NON_STRING_KEY = "GS009"
TOO_DEEP = "GS010"
EMPTY_DOCUMENT = "GS011"
SNAPSHOT_MALFORMED = "GS020"
SNAPSHOT_UNKNOWN_PRODUCT = "GS021"
SNAPSHOT_NO_PRODUCT_LABEL = "GS022"
SNAPSHOT_MIG_UNREADABLE = "GS023"
DEVICE_PLUGIN_CONFIG_NAME_SHARED = "GS024"
MIG_CONFIG_NAME_SHARED = "GS025"
FLEET_FILE_UNREADABLE = "GS030"
FLEET_CLUSTER_NAME = "GS031"
FLEET_CLUSTER_SOURCE = "GS032"
FLEET_SNAPSHOT_MISSING = "GS033"
FLEET_OVERLAY_OWNED = "GS034"
UNKNOWN_FIELD = "GS101"
MISSING_FIELD = "GS102"
WRONG_TYPE = "GS103"
NOT_ALLOWED_VALUE = "GS104"
BAD_FORMAT = "GS105"
OUT_OF_RANGE = "GS106"
DUPLICATE_ITEM = "GS107"
COMBINATION = "GS108"
DUPLICATE_NAME = "GS201"
NAMESPACE_IN_TWO_TENANTS = "GS202"
NODE_IN_TWO_POOLS = "GS203"
UNKNOWN_POOL = "GS204"
UNKNOWN_TENANT = "GS205"
SYSTEM_NAMESPACE = "GS206"
CORDONED_NOT_IN_POOL = "GS207"
UNKNOWN_MODEL = "GS301"
MIG_UNSUPPORTED = "GS302"
MIG_LAYOUT_IMPOSSIBLE = "GS303"
MIG_SINGLE_MIXED = "GS304"
MIG_GROUPS_UNEVEN = "GS305"
SHARING_ON_CPU_POOL = "GS306"
MACHINE_TYPE_MISMATCH = "GS307"
CLOUD_SELECTOR_ELSEWHERE = "GS308"
GKE_ZONE_COUNT = "GS309"
MIG_LAYOUT_AUTO = "GS310"
RECOMMEND_NO_FIT = "GS311"
CLOUD_DRIVER_CONFLICT = "GS313"
POD_EXCEEDS_MACHINE = "GS314"
MACHINE_TYPE_UNLISTED = "GS315"
KARPENTER_DISK_IGNORED = "GS316"
MPS_WITH_MIG = "GS401"
TOO_FEW_REPLICAS = "GS402"
MPS_TOO_MANY_CLIENTS = "GS403"
MEMORY_OVERSUBSCRIBED = "GS404"
MPS_WITHOUT_GFD = "GS405"
OWNED_LABEL = "GS406"
GFD_LABEL = "GS407"
HAMI_SETTINGS_DIFFER = "GS409"
DRA_SHARING = "GS420"
DRA_AND_DEVICE_PLUGIN = "GS421"
DRA_API_UNAVAILABLE = "GS422"
DRA_BETA_API = "GS423"
DRA_SCHEDULER = "GS424"
QUOTA_ABOVE_POOL = "GS501"
QUOTA_ON_UNKNOWN_RESOURCE = "GS502"
QUOTA_ON_UNGRANTED_POOL = "GS503"
WORKLOAD_ON_UNGRANTED_POOL = "GS504"
DEMAND_ABOVE_QUOTA = "GS505"
QUOTA_ON_SHARED_RESOURCE = "GS506"
QUOTA_PER_NAMESPACE = "GS507"
KUEUE_NO_NODE_RESOURCES = "GS508"
VOLCANO_RESERVED_QUEUE = "GS509"
KUEUE_TOO_MANY_TAINTS = "GS510"
KUEUE_LENDING_ABOVE_QUOTA = "GS511"
GANG_NEVER_FITS = "GS512"
KAI_QUEUE_NAME = "GS513"
KAI_UNCOUNTED_SHARING = "GS514"
NEED_UNMET = "GS601"
DEVICE_ENV_SET = "GS602"
SHARED_REQUEST_ABOVE_ONE = "GS603"
VOLCANO_JOB_WITHOUT_VOLCANO = "GS604"
TEMPLATE_UNREADABLE = "GS605"
TEMPLATE_ERROR = "GS606"
VOLCANO_JOB_ON_HAMI = "GS607"
MEMORY_BELOW_GPU_MEMORY = "GS608"
TORCHRUN_SHAPE = "GS609"
GPU_TAINT_ON_DEDICATED_POOL = "GS701"
NO_EXECUTE_TAINT = "GS702"
HAMI_POOL_SHARED = "GS703"
SHARED_TAINT = "GS704"
SOFT_ISOLATION = "GS705"
UNPINNED_CHART = "GS801"
UNSUPPORTED_KUBERNETES = "GS802"
NO_ADMISSION_POLICIES = "GS803"
MIG_WITHOUT_OPERATOR = "GS804"
SELECTOR_RANGE = "GS805"
OPERATOR_CHART_SERIES = "GS806"
OUTPUT_UNSAFE = "GS901"
DIAGNOSTICS_LEFT_OUT = "GS902"
ROLLOUT_CAPACITY_DROP = "GS951"
ROLLOUT_UNSAFE_WORD = "GS952"

CODES: dict[str, str] = {
    # loading (gpustack.load)
    FILE_UNREADABLE: "the blueprint file cannot be read",
    FILE_TOO_LARGE: "the file is larger than the size cap",
    NOT_UTF8: "the file is not UTF-8 text",
    YAML_SYNTAX: "YAML syntax error",
    DUPLICATE_KEY: "duplicate mapping key",
    ALIAS: "YAML alias expansion over budget, or a merge key",
    CUSTOM_TAG: "custom YAML tags are not allowed",
    SEVERAL_DOCUMENTS: "more than one YAML document",
    NON_STRING_KEY: "a mapping key that is not a string",
    TOO_DEEP: "nested deeper than the depth cap",
    EMPTY_DOCUMENT: "empty document",
    # cluster snapshots (gpustack.cluster.snapshot, gpustack.cluster.importer)
    SNAPSHOT_MALFORMED: "a cluster snapshot object is malformed",
    SNAPSHOT_UNKNOWN_PRODUCT: "a node's GPU product is not in the catalog",
    SNAPSHOT_NO_PRODUCT_LABEL: "a GPU node without a nvidia.com/gpu.product label",
    SNAPSHOT_MIG_UNREADABLE: "a node's MIG layout cannot be read from the snapshot",
    DEVICE_PLUGIN_CONFIG_NAME_SHARED: "pools of one devicePlugin.configName differ in sharing or flags",
    MIG_CONFIG_NAME_SHARED: "pools of one mig.configName differ in layout, or it names all-disabled",
    # fleets (gpustack.fleet)
    FLEET_FILE_UNREADABLE: "a file the fleet names cannot be read or lies outside the fleet's folder",
    FLEET_CLUSTER_NAME: "two clusters of a fleet share a name, or a cluster takes a reserved name",
    FLEET_CLUSTER_SOURCE: "a cluster's blueprint is not said exactly once",
    FLEET_SNAPSHOT_MISSING: "no snapshot for a cluster of the fleet",
    FLEET_OVERLAY_OWNED: "an overlay sets what the fleet owns",
    # shape (gpustack.schema)
    UNKNOWN_FIELD: "unknown field",
    MISSING_FIELD: "missing required field",
    WRONG_TYPE: "wrong type",
    NOT_ALLOWED_VALUE: "value not allowed",
    BAD_FORMAT: "value has the wrong format",
    OUT_OF_RANGE: "value out of range",
    DUPLICATE_ITEM: "duplicate items",
    COMBINATION: "fields that do not go together",
    # names and references (gpustack.checks.references)
    DUPLICATE_NAME: "a name is defined twice",
    NAMESPACE_IN_TWO_TENANTS: "a namespace belongs to two tenants",
    NODE_IN_TWO_POOLS: "a node is in two pools",
    UNKNOWN_POOL: "a reference to a pool that does not exist",
    UNKNOWN_TENANT: "a reference to a tenant (or tenant namespace) that does not exist",
    SYSTEM_NAMESPACE: "a tenant claims a system namespace",
    CORDONED_NOT_IN_POOL: "a cordoned node that is not one of its pool's nodes",
    # hardware (gpustack.checks.hardware)
    UNKNOWN_MODEL: "unknown GPU model",
    MIG_UNSUPPORTED: "MIG on a GPU model without MIG",
    MIG_LAYOUT_IMPOSSIBLE: "a MIG layout the GPU cannot make",
    MIG_SINGLE_MIXED: "single MIG strategy with more than one profile, GPUs left whole, or time-slicing",
    MIG_GROUPS_UNEVEN: "MIG groups that do not cover each GPU exactly once",
    SHARING_ON_CPU_POOL: "GPU sharing on a CPU-only pool",
    MACHINE_TYPE_MISMATCH: "a cloud pool's machine type does not carry the pool's GPUs",
    CLOUD_SELECTOR_ELSEWHERE: "a cloud pool's selector does not select the nodes of its provider pool",
    MIG_LAYOUT_AUTO: "a MIG layout left to gpustack recommend (layout: auto), which compile refuses",
    RECOMMEND_NO_FIT: "gpustack recommend finds no layouts that fit a pool's demand within its nodes",
    GKE_ZONE_COUNT: "a GKE pool's node count cannot be turned exactly into GKE's per-zone count",
    CLOUD_DRIVER_CONFLICT: "the GPU Operator's driver or toolkit contradicts a cloud pool's node image",
    POD_EXCEEDS_MACHINE: "a workload's pod asks more CPU or memory than its cloud pool's machine leaves to pods",
    MACHINE_TYPE_UNLISTED: "a cloud pool's machine type is not in gpustack's table; its stated resources are trusted",
    KARPENTER_DISK_IGNORED: "a Karpenter pool's diskGb or diskType, which its NodePool cannot carry",
    # sharing (gpustack.checks.sharing)
    MPS_WITH_MIG: "MPS combined with MIG",
    TOO_FEW_REPLICAS: "time-slicing or MPS with fewer than 2 replicas",
    MPS_TOO_MANY_CLIENTS: "MPS replicas above the per-GPU client cap",
    MEMORY_OVERSUBSCRIBED: "time-slicing lets workloads oversubscribe GPU memory",
    MPS_WITHOUT_GFD: "MPS without GPU Feature Discovery",
    OWNED_LABEL: "a pool sets a label gpustack or the kubelet owns",
    GFD_LABEL: "a pool sets a label GPU Feature Discovery writes (and overwrites)",
    HAMI_SETTINGS_DIFFER: "HAMi pools with different HAMi settings",
    DRA_SHARING: "a DRA pool with sharing the NVIDIA DRA driver cannot give to separate pods",
    DRA_AND_DEVICE_PLUGIN: "a node in a DRA pool and in a pool a device plugin serves",
    DRA_API_UNAVAILABLE: "DRA's resource.k8s.io API version is not served at the blueprint's Kubernetes version",
    DRA_BETA_API: "DRA through a beta resource.k8s.io API (explicit opt-in before Kubernetes 1.34)",
    DRA_SCHEDULER: "a DRA pool used through Kueue, Volcano or a VolcanoJob, which count extended resources",
    # tenancy (gpustack.checks.tenancy, gpustack.compile.tenants)
    QUOTA_ABOVE_POOL: "a tenant quota above what the pool has",
    QUOTA_ON_UNKNOWN_RESOURCE: "a quota on a resource the pool does not advertise",
    QUOTA_ON_UNGRANTED_POOL: "a quota on a pool the tenant is not allowed on",
    WORKLOAD_ON_UNGRANTED_POOL: "a workload on a pool its tenant is not allowed on",
    DEMAND_ABOVE_QUOTA: "a tenant's templates need more than its quota (plus what a Kueue tenant may borrow)",
    QUOTA_ON_SHARED_RESOURCE: "quotas on pools that advertise the same resource name",
    QUOTA_PER_NAMESPACE: "a per-namespace quota repeated across a tenant's namespaces",
    KUEUE_NO_NODE_RESOURCES: "a Kueue tenant's pool without nodeResources for the ClusterQueue's cpu and memory",
    VOLCANO_RESERVED_QUEUE: "a Volcano tenant named like a queue Volcano owns (default, root)",
    KUEUE_TOO_MANY_TAINTS: "a Kueue tenant's pool with more taints than a ResourceFlavor holds",
    KUEUE_LENDING_ABOVE_QUOTA: "a Kueue lending limit above the tenant's nominal quota",
    GANG_NEVER_FITS: "a gang (all its pods or none) that its pool or its tenant's quota can never hold whole",
    KAI_QUEUE_NAME: "a KAI tenant whose Queue name clashes with KAI's own queues or is too long for the queue label",
    KAI_UNCOUNTED_SHARING: "a KAI tenant on a pool whose GPU sharing KAI's queues cannot count or schedule",
    # workloads (gpustack.checks.workloads, gpustack.workloads)
    NEED_UNMET: "a GPU need the workload's pool cannot meet",
    DEVICE_ENV_SET: "CUDA_VISIBLE_DEVICES or NVIDIA_VISIBLE_DEVICES-style device env set by hand",
    SHARED_REQUEST_ABOVE_ONE: "more than one shared GPU per pod where the pool forbids it",
    VOLCANO_JOB_WITHOUT_VOLCANO: "a VolcanoJob for a tenant that does not use Volcano",
    TEMPLATE_UNREADABLE: "a workload template file cannot be read, or its path leads out of the blueprint's folder",
    TEMPLATE_ERROR: "a workload template does not render to a valid object",
    VOLCANO_JOB_ON_HAMI: "a VolcanoJob on a HAMi pool",
    MEMORY_BELOW_GPU_MEMORY: "a workload's memory below the GPU memory its pods hold",
    TORCHRUN_SHAPE: "a torchrun command that contradicts the job's shape (nodes, GPUs per node, rank)",
    # isolation (gpustack.checks.isolation)
    GPU_TAINT_ON_DEDICATED_POOL: "an nvidia.com/gpu taint on a tenant-dedicated pool",
    NO_EXECUTE_TAINT: "a NoExecute taint",
    HAMI_POOL_SHARED: "a HAMi pool shared by tenants: its isolation is bypassable",
    SHARED_TAINT: "pools of different tenants share a taint",
    SOFT_ISOLATION: "a pool granted to a tenant without a NoSchedule or NoExecute taint",
    # cluster (gpustack.checks.cluster)
    UNPINNED_CHART: "an unpinned chart version",
    UNSUPPORTED_KUBERNETES: "a Kubernetes version outside the supported range",
    NO_ADMISSION_POLICIES: "a Kubernetes version without ValidatingAdmissionPolicy",
    MIG_WITHOUT_OPERATOR: "a MIG pool with stack: device-plugin (needs an existing GPU Operator's MIG manager)",
    SELECTOR_RANGE: "a selector pool's minNodes above its maxNodes",
    OPERATOR_CHART_SERIES: "a GPU Operator chart outside the v26.7.x line gpustack's values are checked against",
    # output (gpustack.write)
    OUTPUT_UNSAFE: "the output directory cannot be replaced safely",
    # reporting (gpustack.report)
    DIAGNOSTICS_LEFT_OUT: "more diagnostics in one file than a report lists",
    # rollout (gpustack.rollout)
    ROLLOUT_CAPACITY_DROP: "a rollout wave leaves tenants below their guaranteed quota",
    ROLLOUT_UNSAFE_WORD: "plan data the rollout script cannot carry as it is (a NUL byte, a name starting with '-')",
}

DOCS_FOLDER = "docs/codes"


def docs_page(code: str) -> str:
    """The page that explains a code, relative to the repository root (docs/codes/GS303.md)."""
    return f"{DOCS_FOLDER}/{code}.md"


# Per code: what triggers it and how to fix it, for docs/codes/GSnnn.md (scripts/code_docs.py) and SARIF help.
EXPLANATIONS: dict[str, tuple[str, str]] = {
    FILE_UNREADABLE: (
        "The blueprint path does not exist, is a directory, a device or a pipe, or cannot be opened.",
        "Check the path (it is relative to where you run gpustack); pass `-` to read standard input.",
    ),
    FILE_TOO_LARGE: (
        "The file is larger than gpustack reads (a blueprint is a few kilobytes; the cap protects CI from "
        "runaway input).",
        "Check that the path names the blueprint and not a generated or binary file; split a huge blueprint.",
    ),
    NOT_UTF8: (
        "The file holds bytes that are not UTF-8, or control characters YAML does not allow.",
        "Save the file as UTF-8 text, and remove control characters (NUL, escape codes) pasted into it.",
    ),
    YAML_SYNTAX: (
        "The YAML parser stopped: bad indentation, a tab used for indentation, an unclosed quote or bracket, "
        "or a `: ` inside an unquoted value.",
        "Fix the text at the position shown; the hint names the usual cause. Quote values that contain `: ` or `#`.",
    ),
    DUPLICATE_KEY: (
        "A mapping has the same key twice. Plain YAML keeps the last one silently; gpustack refuses.",
        "Keep one of the two keys (the note shows where the first one is).",
    ),
    ALIAS: (
        "Anchors (`&a`) and aliases (`*a`) are allowed, but an alias would make the aliased nodes more than the "
        "budget go-yaml (and so the Kubernetes API server) allows: once past 100 aliased and 1,000 nodes in all, "
        "aliases may add at most 99% of a document's nodes (falling to 10% for a document of 4 million nodes). "
        "A billion-laughs file is refused at its first alias over budget, before it is expanded. Or the blueprint "
        "uses a merge key (`<<`), which YAML 1.2 does not have.",
        "Alias smaller values, or write the value out in full; the note shows where the anchor is. For a merge "
        "key, alias the whole mapping or write its keys out.",
    ),
    CUSTOM_TAG: (
        "A value carries a YAML tag (`!Ref`, `!!python/object`, or a standard tag on a value that does not fit it).",
        "Remove the tag; quote the value if it should be a string.",
    ),
    SEVERAL_DOCUMENTS: (
        "The file holds a second YAML document after `---`.",
        "Put each blueprint in a file of its own.",
    ),
    NON_STRING_KEY: (
        "A mapping key is not a string: `true:`, `1:`, `null:` or a complex key.",
        'Quote the key (`"true":`) or give it a name.',
    ),
    TOO_DEEP: ("Collections are nested deeper than any blueprint needs.", "Flatten the structure."),
    EMPTY_DOCUMENT: (
        "The file has no content, only comments, or only `null`.",
        "Start from blueprints/quickstart.yaml: a blueprint is a mapping with apiVersion, kind, metadata and spec.",
    ),
    UNKNOWN_FIELD: (
        "A field the schema does not know, usually a typo or a field at the wrong level.",
        "Use the field the hint suggests; `gpustack schema` and docs/blueprint-format.md list every field.",
    ),
    MISSING_FIELD: ("A required field is missing.", "Add the field; the hint says what it means."),
    WRONG_TYPE: (
        "A value has the wrong type: a number where a string is needed (`version: 1.30` is a float), a mapping "
        "where a list is needed, and so on.",
        "Write the type the message expects; quote versions and numbers meant as text.",
    ),
    NOT_ALLOWED_VALUE: (
        "A value is not one of the values the field allows (an enum or a constant).",
        "Use one of the allowed values; the hint suggests the nearest.",
    ),
    BAD_FORMAT: (
        "A value does not have the field's format: a Kubernetes name, a quantity, a label key, a version.",
        "Write it in the format the message describes; the hint suggests a fixed spelling where it can.",
    ),
    OUT_OF_RANGE: ("A number or a list length is outside the field's range.", "Use a value within the range shown."),
    DUPLICATE_ITEM: ("A list that must hold distinct items holds one twice.", "Remove the repeated item."),
    COMBINATION: (
        "Two fields that exclude each other, or a field that needs another (e.g. `hami` without `strategy: hami`).",
        "Keep the fields that match the chosen mode; the hint names the rule.",
    ),
    DUPLICATE_NAME: ("Two pools, tenants or workloads have the same name.", "Give each its own name."),
    NAMESPACE_IN_TWO_TENANTS: (
        "Two tenants list the same namespace; its quota and admission policy cannot serve both.",
        "Give each tenant namespaces of its own.",
    ),
    NODE_IN_TWO_POOLS: (
        "A node is listed in two pools; a node carries one pool's labels, taints and device-plugin config.",
        "List the node in one pool.",
    ),
    UNKNOWN_POOL: (
        "A tenant or workload names a pool that is not defined.",
        "Fix the name (see the hint) or add the pool.",
    ),
    UNKNOWN_TENANT: (
        "A workload names a tenant or a namespace that no tenant owns.",
        "Fix the name (see the hint) or add the tenant or namespace.",
    ),
    SYSTEM_NAMESPACE: (
        "A tenant claims a namespace of the cluster's own components (kube-system, the device plugin's, the GPU "
        "Operator's): admission policies leave those alone, so the tenant would be unconfined.",
        "Give the tenant a namespace of its own.",
    ),
    UNKNOWN_MODEL: (
        "`gpu.model` names no GPU in the catalog.",
        "Use a catalog key (`A100-SXM4-80GB`), the `nvidia.com/gpu.product` label your nodes carry, or a GKE "
        "accelerator name (`nvidia-tesla-t4`); `gpustack models TEXT` lists the matches.",
    ),
    MIG_UNSUPPORTED: (
        "A pool asks for MIG on a GPU that cannot be partitioned (only A30, A100, H100, H200, GH200, B200, GB200 and "
        "RTX PRO 6000 Blackwell can).",
        "Share the GPU with time-slicing or MPS, or move the pool to a MIG-capable model.",
    ),
    MIG_LAYOUT_IMPOSSIBLE: (
        "A MIG layout the GPU cannot make: an unknown profile, too many instances, more memory or compute "
        "slices than the GPU has, or instances that cannot be placed side by side; or MIG groups that all leave "
        "their GPUs `whole: true`, so no GPU is MIG-enabled.",
        "Use one of the valid layouts the hint lists; `gpustack models MODEL` shows each profile. Give at least one "
        "MIG group a layout, or use `sharing.strategy: none` for whole GPUs.",
    ),
    MIG_SINGLE_MIXED: (
        "The `single` MIG strategy with a layout of several profiles, or with a MIG group left `whole: true` "
        "(MIG-enabled and whole GPUs on one node): the device plugin refuses the node and GFD labels it "
        "`-MIG-INVALID`. Or `mig.timeSlicing` under `single`, where the plugin would replicate the instances as "
        "`nvidia.com/gpu`, a name that cannot be told from whole GPUs.",
        "Use one profile on every GPU, or `strategy: mixed` (which advertises whole GPUs as `nvidia.com/gpu` and each "
        "profile, time-sliced or not, as `nvidia.com/mig-<profile>`).",
    ),
    MIG_GROUPS_UNEVEN: (
        "MIG groups that leave a GPU out, or list one twice.",
        "Make the groups' GPU indexes cover 0..count-1 exactly once.",
    ),
    MPS_WITH_MIG: ("MPS and MIG on one pool: the device plugin refuses MPS on MIG devices.", "Choose MIG or MPS."),
    TOO_FEW_REPLICAS: (
        "Time-slicing or MPS with `replicas` below 2: the device plugin fails to start.",
        "Use 2 or more replicas, or `strategy: none` for whole GPUs.",
    ),
    MPS_TOO_MANY_CLIENTS: (
        "More MPS replicas than the GPU's MPS server takes clients (48 from compute capability 7.5, else 16).",
        "Lower `replicas` to the cap.",
    ),
    MEMORY_OVERSUBSCRIBED: (
        "A time-sliced pool where the pods that can land on one GPU (or one time-sliced MIG instance) ask for more "
        "memory than it has: time-slicing shares compute, not memory.",
        "Lower `timeSlicing.replicas` (or `mig.timeSlicing.replicas`), lower the workload's memory, or use MIG or "
        "HAMi for memory isolation.",
    ),
    MPS_WITHOUT_GFD: (
        "An MPS pool with GPU Feature Discovery off: the MPS daemon only runs where GFD labels the node.",
        "Set `devicePlugin.gfd: true`.",
    ),
    OWNED_LABEL: (
        "A pool sets a label gpustack derives from the blueprint (its pool label, `nvidia.com/mig.config`, "
        "the device-plugin config label).",
        "Remove the label: gpustack writes it from the pool's sharing.",
    ),
    GFD_LABEL: (
        "A pool sets a label GPU Feature Discovery writes from the hardware (`nvidia.com/gpu.product`, "
        "`nvidia.com/gpu.memory`, `nvidia.com/cuda.*`, `nvidia.com/mig-<profile>.*`, ...): GFD overwrites it on "
        "its next pass, so the value in the blueprint never holds. Only while GFD is on.",
        "Remove the label; select the pool's nodes by gpustack's `gpustack.io/pool` label.",
    ),
    HAMI_SETTINGS_DIFFER: (
        "HAMi pools with different HAMi settings: gpustack installs one HAMi release, which takes one value.",
        "Give every HAMi pool the same settings.",
    ),
    DRA_SHARING: (
        "A pool with `allocation: dra` uses time-slicing, MPS or HAMi sharing, or time-slices its MIG instances "
        "(`mig.timeSlicing`). The NVIDIA DRA driver shares a GPU only between the containers of one claim, so replicas "
        "of a GPU (or MIG device) cannot be handed to separate pods.",
        "Use `sharing: none` or `mig` (pre-made MIG devices) on the DRA pool, or keep the pool on "
        "`allocation: device-plugin`.",
    ),
    DRA_AND_DEVICE_PLUGIN: (
        "A node is listed in a DRA pool and in a pool a device plugin (NVIDIA's or HAMi's) serves. The DRA driver "
        "and the plugin would both hand out its GPUs, so pods of each could get the same GPU.",
        "List each node in one pool only; to change a node's allocation, move it from one pool to the other.",
    ),
    DRA_API_UNAVAILABLE: (
        "The blueprint's Kubernetes version does not serve the resource.k8s.io API its DRA objects need: "
        "resource.k8s.io/v1 arrives in 1.34, v1beta2 in 1.33, v1beta1 in 1.32.",
        "Target Kubernetes 1.34 or newer, or opt in to a beta API served at your version with `spec.dra.apiVersion`, "
        "or keep the pools on `allocation: device-plugin`.",
    ),
    DRA_BETA_API: (
        "A warning: DRA objects use a beta resource.k8s.io API (`spec.dra.apiVersion`). Before 1.34 DRA is off "
        "unless its feature gate and API are turned on everywhere; from 1.34 the betas are deprecated, and "
        "DeviceClass `extendedResourceName` exists only in v1.",
        "Target Kubernetes 1.34 or newer and drop `spec.dra.apiVersion` to use resource.k8s.io/v1.",
    ),
    DRA_SCHEDULER: (
        "A tenant that queues through Kueue or Volcano is granted a DRA pool, or a VolcanoJob runs on one. Their "
        "quotas and gangs count extended resources, which a pod claiming devices does not request, so the queue "
        "would admit without limit.",
        "Give the tenant `scheduler: default` on DRA pools (its quota becomes device counts per DeviceClass in a "
        "ResourceQuota), use a Job instead of a VolcanoJob, or keep the pool on `allocation: device-plugin`.",
    ),
    QUOTA_ABOVE_POOL: (
        "A tenant's quota on a pool is more than the pool has.",
        "Lower the quota, or add nodes to the pool.",
    ),
    QUOTA_ON_UNKNOWN_RESOURCE: (
        "A quota or limit names a resource the pool does not advertise (e.g. a MIG profile on a time-sliced pool).",
        "Use a resource the pool advertises (the hint lists them).",
    ),
    QUOTA_ON_UNGRANTED_POOL: (
        "A tenant has a quota on a pool it may not use.",
        "Add the pool to the tenant's pools, or drop the quota.",
    ),
    WORKLOAD_ON_UNGRANTED_POOL: (
        "A workload runs on a pool its tenant may not use: admission would refuse its pods.",
        "Move the workload, or grant the pool to the tenant.",
    ),
    DEMAND_ABOVE_QUOTA: (
        "A tenant's workload templates request more than its quota (plus what a Kueue tenant may borrow): pods "
        "beyond it are refused with `exceeded quota`.",
        "Raise the quota, or lower the templates' replicas or requests.",
    ),
    QUOTA_ON_SHARED_RESOURCE: (
        "Quotas on several pools that advertise the same resource name: one ResourceQuota counts them together.",
        "Use distinct resource names (sharing modes) per pool, or Kueue for per-pool quota.",
    ),
    QUOTA_PER_NAMESPACE: (
        "A tenant with several namespaces gets its quota repeated in each one: a per-namespace ResourceQuota "
        "cannot cap the tenant as a whole.",
        "Use one namespace per tenant, or Kueue, whose ClusterQueue caps all of a tenant's namespaces together.",
    ),
    KUEUE_NO_NODE_RESOURCES: (
        "A pool a Kueue tenant uses gives no `nodeResources` cpu and memory; Kueue admits a workload only when its "
        "ClusterQueue covers every resource the pods request.",
        "Add `nodeResources: {cpu: ..., memory: ...}` (allocatable per node) to the pool.",
    ),
    VOLCANO_RESERVED_QUEUE: (
        "A Volcano tenant named `default` or `root`: its Queue would overwrite a queue Volcano manages.",
        "Rename the tenant.",
    ),
    KUEUE_TOO_MANY_TAINTS: (
        "A Kueue tenant's pool has more taints than a ResourceFlavor holds (8).",
        "Keep at most 8 taints.",
    ),
    KUEUE_LENDING_ABOVE_QUOTA: (
        "A Kueue lending limit above the tenant's nominal quota: Kueue rejects the ClusterQueue.",
        "Lend at most the nominal quota.",
    ),
    KAI_QUEUE_NAME: (
        "A KAI tenant named `default-parent-queue` or `default-queue` (its parent Queue would overwrite the one KAI's "
        "chart creates), or a leaf Queue `<tenant>.<namespace>` longer than 63 characters, too long for the "
        "`kai.scheduler/queue` label that names it.",
        "Rename the tenant, or use a shorter namespace name.",
    ),
    KAI_UNCOUNTED_SHARING: (
        "A KAI tenant is granted a pool whose GPUs KAI cannot honour: a HAMi pool needs HAMi's scheduler, and KAI's "
        "Queue counts only whole GPUs (`nvidia.com/gpu`) and MIG devices, so a renamed time-sliced or MPS resource "
        "(`gpu.shared`) would run outside the tenant's queue.",
        "Use whole GPUs, MIG or time-slicing without `renameByDefault` on the tenant's pools, or another scheduler.",
    ),
    GANG_NEVER_FITS: (
        "A warning: a VolcanoJob's or JobSet's workers (`workers`), or one LeaderWorkerSet group (`size`), start "
        "all together or not at all, and either the pool cannot hold that many such pods at once (a pod cannot span "
        "nodes; an autoscaled pool is counted at `maxNodes`), or the pods together ask for more than the tenant's "
        "quota (plus what a Kueue tenant may borrow) allows. The gang then never starts, however idle the GPUs are; "
        "`gpustack capacity` words the same fact.",
        "Lower `workers` or `size`, ask for fewer GPUs per pod, give the pool more nodes, or raise the tenant's "
        "quota on the pool.",
    ),
    NEED_UNMET: (
        "A workload asks for a GPU, a MIG profile, an amount of memory or compute its pool cannot give.",
        "Change the workload's `gpu` need, or place it on a pool that offers it (the hint says which).",
    ),
    DEVICE_ENV_SET: (
        "A workload sets CUDA_VISIBLE_DEVICES: the device plugin already exposes exactly the allocated GPUs.",
        "Remove the variable.",
    ),
    SHARED_REQUEST_ABOVE_ONE: (
        "A pod asks for more than one shared GPU where the time-slicing config fails such requests.",
        "Ask for 1 shared GPU per pod.",
    ),
    VOLCANO_JOB_WITHOUT_VOLCANO: (
        "A VolcanoJob for a tenant that does not use Volcano.",
        "Set the tenant's `scheduler: volcano`.",
    ),
    TEMPLATE_UNREADABLE: (
        "A workload's template file is missing, not a regular file, too large or not UTF-8.",
        "Fix the path: it is relative to the blueprint's folder.",
    ),
    TEMPLATE_ERROR: (
        "A workload's Jinja2 template fails to render (an undefined name, a syntax error) or renders to something "
        "that is not a Kubernetes object of an allowed kind.",
        "Fix the template at the line shown; the hint lists the variables a template gets.",
    ),
    VOLCANO_JOB_ON_HAMI: (
        "A VolcanoJob on a HAMi pool: only HAMi's scheduler knows which share of which GPU is free.",
        "Run it as a Job or Deployment on the HAMi pool, or as a VolcanoJob on another pool.",
    ),
    MEMORY_BELOW_GPU_MEMORY: (
        "A workload's memory (given, or sized from its pool's nodeResources) is below the GPU memory its pods hold: "
        "loading a model of that size into host memory first fails with OOMKilled.",
        "Give the workload `resources.memory` at least the GPU memory it requests, or nodeResources to size from.",
    ),
    GPU_TAINT_ON_DEDICATED_POOL: (
        "A tenant-dedicated pool tainted `nvidia.com/gpu`: the ExtendedResourceToleration admission plugin adds "
        "that toleration to every GPU pod, so other tenants' pods pass the taint.",
        "Taint with a key of your own, e.g. `gpustack.io/pool=NAME`.",
    ),
    NO_EXECUTE_TAINT: (
        "A NoExecute taint: applying it evicts every running pod on the pool's nodes that does not tolerate it.",
        "Use NoSchedule unless you mean to drain the nodes.",
    ),
    HAMI_POOL_SHARED: (
        "Tenants share a HAMi pool: HAMi's limits are enforced inside each container and can be bypassed.",
        "Give each tenant its own HAMi pool, or use MIG for hardware isolation between tenants.",
    ),
    SHARED_TAINT: (
        "Pools of different tenants share a taint, so a pod that tolerates it for one pool passes the other's too.",
        "Give each pool a taint of its own.",
    ),
    UNPINNED_CHART: (
        "A chart version that floats (`latest`, a range): the same blueprint installs different software over time.",
        "Pin an exact release.",
    ),
    UNSUPPORTED_KUBERNETES: (
        "`kubernetes.version` is outside the range gpustack supports.",
        "Target a supported version.",
    ),
    NO_ADMISSION_POLICIES: (
        "The target Kubernetes has no ValidatingAdmissionPolicy (GA in 1.30): tenant isolation rests on taints alone.",
        "Upgrade to 1.30 or newer.",
    ),
    MIG_WITHOUT_OPERATOR: (
        "A MIG pool with `stack: device-plugin`: the standalone device plugin cannot partition GPUs, so the layout "
        "is applied only by a GPU Operator's MIG manager the cluster already runs.",
        "Set `spec.stack: gpu-operator` so gpustack installs the operator with the layouts, or run the GPU Operator "
        "in the MIG manager's namespace as `mig/README.md` says.",
    ),
    SELECTOR_RANGE: (
        "A selector pool's `minNodes` is above its `maxNodes`: no node count satisfies both.",
        "Give the autoscaled node pool's real range: `minNodes` is the floor, `maxNodes` the ceiling.",
    ),
    OPERATOR_CHART_SERIES: (
        "A GPU Operator chart outside the v26.7.x line: the values gpustack writes are checked against v26.7.0, and "
        "the chart silently ignores keys it does not know.",
        "Pin a v26.7.x release, or compare `gpu-operator/values.yaml` with that chart's values.yaml first.",
    ),
    OUTPUT_UNSAFE: (
        "`compile` cannot replace the output directory safely: it is a file, it holds files gpustack did not write, "
        "or writing failed (the previous output is left as it was).",
        "Point `--out-dir` at an empty or gpustack-made directory, and check the disk.",
    ),
    DIAGNOSTICS_LEFT_OUT: (
        "A file has more than 50 diagnostics. Every output format (text, `--output json`, `--output sarif`) lists "
        "the first 50 of each file and closes with this one, at the first diagnostic left out, saying how many "
        "more there are: a report stays small enough to read, and to upload to GitHub code scanning.",
        "Fix the diagnostics listed (often one mistake repeated) and run again: the next ones are then listed. "
        "`--output json` counts what was left out in each file's `omittedCount`.",
    ),
    ROLLOUT_CAPACITY_DROP: (
        "`gpustack rollout` found a wave that takes enough nodes out at once to leave a tenant with less capacity "
        "than the quota the old blueprint guaranteed it.",
        "Lower `--max-unavailable`, lower the tenant's quota first, or pass `--allow-capacity-drop` if the dip is "
        "accepted.",
    ),
    ROLLOUT_UNSAFE_WORD: (
        "`gpustack rollout --output script` found plan data (an object's name or namespace, a node, a label) holding "
        "a NUL byte, which no command-line argument or here-document can carry, or a name starting with `-`, which "
        "kubectl or helm would read as an option (`kubectl delete ConfigMap --all` deletes every ConfigMap). The "
        "script is not written rather than written with a different meaning. The schema and the template check "
        "refuse such names (GS606); this is the script's own guard.",
        "Find the value in the workload templates or the blueprint and give it a DNS-1123 name.",
    ),
    SNAPSHOT_MALFORMED: (
        "An object in the cluster snapshot given to `import`, `drift` or `simulate --cluster` does not have the shape "
        "`kubectl get ... -o yaml` prints: a field of the wrong type, a missing name, a list where a mapping belongs.",
        "Pass the unedited output of `kubectl get nodes,pods,priorityclasses,resourcequotas,namespaces -A -o yaml`.",
    ),
    SNAPSHOT_UNKNOWN_PRODUCT: (
        "A node's `nvidia.com/gpu.product` label names a GPU the catalog does not know; `import` gives its nodes a "
        "pool of their own without `gpu` (and a `# guessed:` line), instead of dropping them.",
        "Check `gpustack models TEXT` for the product, then set the pool's `gpu.model` to its catalog key.",
    ),
    SNAPSHOT_NO_PRODUCT_LABEL: (
        "A node advertises NVIDIA GPUs but carries no `nvidia.com/gpu.product` label, so `import` cannot tell the "
        "model (GPU Feature Discovery is not running there, or NFD dropped the label).",
        "Run GPU Feature Discovery (the GPU Operator does) and snapshot again, or write the pool's `gpu.model` by "
        "hand.",
    ),
    SNAPSHOT_MIG_UNREADABLE: (
        "A MIG node's GFD counts do not make the same layout on every GPU, and the snapshot has no mig-parted "
        "ConfigMap that says which GPU holds what, so `import` writes the pool without `sharing` (and a `# guessed:` "
        "line).",
        "Include the MIG manager's ConfigMap in the snapshot (`kubectl get cm -n gpu-operator -o yaml`), or write "
        "the pool's `mig.groups` by hand.",
    ),
    DEVICE_PLUGIN_CONFIG_NAME_SHARED: (
        "Two pools name the same `devicePlugin.configName` but differ in `sharing` or `devicePlugin.flags`: one "
        "name selects one config in the device plugin's ConfigMap, so one of the pools would get the other's.",
        "Give the pools different `configName`s (the name their nodes' `nvidia.com/device-plugin.config` label "
        "has), or make their sharing and flags the same.",
    ),
    MIG_CONFIG_NAME_SHARED: (
        "Two MIG pools name the same `sharing.mig.configName` but differ in their layout, or a pool names "
        "`all-disabled`, the config gpustack gives GPUs without MIG: one name selects one mig-parted config, so one "
        "pool's GPUs would be partitioned as the other's.",
        "Give the pools different `configName`s (the name their nodes' `nvidia.com/mig.config` label has), or "
        "the same layout.",
    ),
    FLEET_FILE_UNREADABLE: (
        "The fleet's base, a cluster's overlay or a cluster's blueprint cannot be read (missing, not a regular file, "
        "too large), or its path leaves the fleet file's folder (absolute, '..', a symlink out of it). A fleet reads "
        "only files beside it, so a fleet file from a pull request cannot copy another team's files into its output.",
        "Check the path (it is relative to the fleet file's folder); move or copy the file next to the fleet file.",
    ),
    FLEET_CLUSTER_NAME: (
        "Two clusters have the same name, or a cluster is named `delivery`. A cluster's name is its output folder "
        "and part of its delivery objects' names, so it must be unique; `delivery/` holds the Argo CD or Flux objects.",
        "Rename one of the clusters.",
    ),
    FLEET_CLUSTER_SOURCE: (
        "A cluster names both a `blueprint` and an `overlay`, or has an overlay (or nothing) while the fleet has no "
        "`base`, or its overlay is not a mapping.",
        "Give a cluster either a whole `blueprint`, or an `overlay` on the fleet's `base` (a mapping shaped like a "
        "part of a blueprint).",
    ),
    FLEET_SNAPSHOT_MISSING: (
        "`gpustack fleet drift` found no `CLUSTER.yaml` in the snapshot folder for a cluster of the fleet, so its "
        "drift is unknown.",
        "Save each cluster's snapshot as SNAPSHOT-DIR/CLUSTER.yaml (`kubectl get nodes,pods,resourcequotas,namespaces "
        "-A -o yaml`).",
    ),
    FLEET_OVERLAY_OWNED: (
        "An overlay sets `apiVersion`, `kind` or `metadata.name`. The fleet owns them: every cluster's blueprint "
        "is the base's kind and version, named after the cluster.",
        "Remove the field from the overlay; rename the cluster in the fleet file instead.",
    ),
    CORDONED_NOT_IN_POOL: (
        "A pool's `cordoned` list names a node that is not in the pool's `nodes`.",
        "List only the pool's own nodes under `cordoned` (check the spelling).",
    ),
    SHARING_ON_CPU_POOL: (
        "A pool without `gpu` (a CPU-only pool) sets a GPU sharing strategy.",
        "Remove `sharing` from the CPU-only pool, or give it a `gpu` block.",
    ),
    MACHINE_TYPE_MISMATCH: (
        "A pool's `cloud.machineType` is not a GPU machine type of its provider gpustack knows, or has another GPU "
        "model or count than the pool's `gpu`; or the pool leaves machineType out and no machine type has its GPUs.",
        "Pick a machine type from the hint (they carry exactly the pool's GPUs), fix `gpu`, or leave machineType out "
        "and gpustack picks the smallest matching one (`gpustack/data/cloud-machines.yaml` lists them).",
    ),
    CLOUD_SELECTOR_ELSEWHERE: (
        "A cloud pool gives a `selector` that the nodes of its provider pool would not match: they carry the "
        "provider's node-pool label valued with the pool's name, gpustack's pool label and the pool's labels.",
        "Drop the selector (gpustack selects the provider's node-pool label), or select on one of those labels.",
    ),
    MIG_LAYOUT_AUTO: (
        "A MIG pool says `layout: auto`: its layouts are for `gpustack recommend` to choose. `validate` accepts it "
        "(as a warning, checking needs and quotas against every profile the GPU has); `compile` and `validate "
        "--strict` refuse it, so no layout nobody reviewed reaches a cluster.",
        "Run `gpustack recommend BLUEPRINT --write`, review the layouts it writes in place of auto, then compile.",
    ),
    RECOMMEND_NO_FIT: (
        "`gpustack recommend` found no MIG layouts under which a pool's workloads (and its tenants' quotas) fit on "
        "the nodes the pool may have: its listed nodes, `count`, or `maxNodes`. The message names the resource "
        "that does not fit and how many nodes it would take.",
        "Raise `maxNodes` (or `count`, or list more nodes), give the pool more GPUs per node, or shrink the "
        "workloads' replicas or the tenants' quotas on the pool.",
    ),
    GKE_ZONE_COUNT: (
        "GKE counts a node pool's fixed size and its starting size per zone (`node_count`, `initial_node_count`): "
        "gpustack writes the pool's `count` as count / zones per zone, an error where the named zones cannot share "
        "it evenly. Without named zones the pool gets the figure in every zone of the cluster (three in a regional "
        "one) while capacity, quotas and simulate plan for one: a warning. Autoscaled pools bound the whole pool "
        "with GKE's total counts (`total_min_node_count`, `total_max_node_count`).",
        "Name the pool's `cloud.zones` and make `count` a multiple of their number, or use `minNodes`/`maxNodes`.",
    ),
    CLOUD_DRIVER_CONFLICT: (
        "The GPU Operator's `driver` or `toolkit` setting contradicts what a cloud pool's node image already has, "
        "following NVIDIA's page for that cloud: EKS and Karpenter NVIDIA AMIs and AKS GPU images carry the driver "
        "and toolkit; GKE's COS image runs Google's driver (the operator's cannot run there) and no GKE image has "
        "the toolkit. Two drivers fight over the node; none leaves the GPUs unusable.",
        "Follow the hint: set `gpuOperator.driver`/`toolkit` as the cloud's recipe says, or leave them out and "
        "gpustack decides from the pools' images; on GKE pick `imageType: UBUNTU_CONTAINERD` for the operator's "
        "driver.",
    ),
    POD_EXCEEDS_MACHINE: (
        "A workload's pod asks more CPU or memory (`resources`) than one node of its cloud pool can give: the "
        "machine type's vCPUs and memory less what the kubelet and system reserve (each cloud's published formula, "
        "`gpustack/cloud.py`). The pod would stay Pending forever.",
        "Lower the workload's `resources`, or give the pool a larger machine type.",
    ),
    MACHINE_TYPE_UNLISTED: (
        "A cloud pool names a machine type gpustack's table (`gpustack/data/cloud-machines.yaml`) does not list, and "
        "states its node's `nodeResources` (cpu and memory): gpustack plans the pool on its `gpu` and those "
        "figures, which it cannot check.",
        "Check the figures against the provider's machine type page, or ask for the machine type to be added to the "
        "table.",
    ),
    KARPENTER_DISK_IGNORED: (
        "A Karpenter pool sets `cloud.diskGb` or `cloud.diskType`, but a karpenter.sh/v1 NodePool has no disk "
        "fields: the EC2NodeClass it names (`nodeClass`) sizes its nodes' disks with `blockDeviceMappings`, so the "
        "value would not reach AWS.",
        "Remove the field and set `blockDeviceMappings` in the EC2NodeClass the pool names.",
    ),
    SOFT_ISOLATION: (
        "A pool granted to a tenant, in a blueprint with two or more tenants, has only a `PreferNoSchedule` taint or "
        "none: the scheduler may place any pod there that asks for the resource its GPUs advertise.",
        "Taint the pool with effect `NoSchedule` (gpustack then gives the tenant's workloads the toleration).",
    ),
    TORCHRUN_SHAPE: (
        "A training job's torchrun command states the job's shape itself and gets it wrong: `--nnodes` is not the "
        "number of pods, `--nproc_per_node` is not the GPUs per pod, a fixed `--node_rank` on a multi-node job, or "
        "`--standalone` with more than one node; torchrun would wait for peers that never come.",
        "Remove the flag and let gpustack derive it from the job's shape, or make it match `workers` and `gpu.count`.",
    ),
}

"""The typed blueprint: frozen records with defaults applied, each knowing where it came from.

`path` on each record is the JSON path of its mapping in the source document, so
checks can point diagnostics at the exact line without the model depending on the loader.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from gpustack.defaults import (
    DEVICE_PLUGIN,
    DRA,
    GPU_OPERATOR,
    HAMI_RELEASE,
    HAMI_SHARING,
    KUEUE,
    MIG_MANAGER,
    TENANT_VOLCANO,
    VOLCANO,
    schema_default,
)
from gpustack.diagnostic import JsonPath

# Defaults are written once, in the schema (gpustack/defaults.py reads them); these names are for compile and tests.
DEFAULT_CHART_VERSION: str = schema_default(DEVICE_PLUGIN, "chartVersion")
DEFAULT_CHART_REPOSITORY: str = schema_default(DEVICE_PLUGIN, "repository")
DEFAULT_DEVICE_PLUGIN_NAMESPACE: str = schema_default(DEVICE_PLUGIN, "namespace")
DEFAULT_DEVICE_PLUGIN_RELEASE: str = schema_default(DEVICE_PLUGIN, "releaseName")
DEFAULT_MIG_NAMESPACE: str = schema_default(MIG_MANAGER, "namespace")
DEFAULT_MIG_CONFIGMAP: str = schema_default(MIG_MANAGER, "configMap")
# HAMi v2.10.0 (2026-08-21), the release the chart values gpustack writes were checked against.
DEFAULT_HAMI_CHART_VERSION: str = schema_default(HAMI_RELEASE, "chartVersion")
DEFAULT_HAMI_CHART_REPOSITORY: str = schema_default(HAMI_RELEASE, "repository")
DEFAULT_HAMI_NAMESPACE: str = schema_default(HAMI_RELEASE, "namespace")  # where HAMi's own install guide puts it
DEFAULT_HAMI_SCHEDULER: str = schema_default(HAMI_RELEASE, "schedulerName")  # the chart's `schedulerName` default
# Kueue v0.19.2, the release the Kueue objects were checked against (its CRDs, CEL rules included); its chart is
# published only as an OCI artifact.
DEFAULT_KUEUE_CHART_VERSION: str = schema_default(KUEUE, "chartVersion")
KUEUE_CHART_REPOSITORY = "oci://registry.k8s.io/kueue/charts"
DEFAULT_KUEUE_NAMESPACE: str = schema_default(KUEUE, "namespace")
# Volcano v1.15.1, the release the scheduler configuration and the Queue/Job CRDs were checked against.
DEFAULT_VOLCANO_CHART_VERSION: str = schema_default(VOLCANO, "chartVersion")
VOLCANO_CHART_REPOSITORY = "https://volcano-sh.github.io/helm-charts"
DEFAULT_VOLCANO_NAMESPACE: str = schema_default(VOLCANO, "namespace")
KUEUE_V1BETA2 = "kueue.x-k8s.io/v1beta2"  # served since Kueue v0.15, storage version since v0.16
KUEUE_V1BETA1 = "kueue.x-k8s.io/v1beta1"
DEFAULT_KUEUE_API_VERSION: str = schema_default(KUEUE, "apiVersion")
DEFAULT_VOLCANO_QUEUE_WEIGHT: int = schema_default(TENANT_VOLCANO, "weight")
# GPU Operator v26.7.0 (2026-08-20): the chart whose values.yaml every key gpustack writes is checked against.
DEFAULT_GPU_OPERATOR_CHART_VERSION: str = schema_default(GPU_OPERATOR, "chartVersion")
DEFAULT_GPU_OPERATOR_REPOSITORY: str = schema_default(GPU_OPERATOR, "repository")
DEFAULT_GPU_OPERATOR_NAMESPACE: str = schema_default(GPU_OPERATOR, "namespace")
DEFAULT_GPU_OPERATOR_RELEASE: str = schema_default(GPU_OPERATOR, "releaseName")
# The NVIDIA DRA driver for GPUs (kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1, 2026-06-30: the newest published
# chart), an OCI chart on registry.k8s.io; the chart refuses the `default` namespace.
DEFAULT_DRA_CHART_VERSION: str = schema_default(DRA, "chartVersion")
DRA_CHART_REPOSITORY = "oci://registry.k8s.io/dra-driver-nvidia/charts"
DEFAULT_DRA_NAMESPACE: str = schema_default(DRA, "namespace")
DEFAULT_DRA_DRIVER_ROOT: str = schema_default(DRA, "nvidiaDriverRoot")


class Stack(StrEnum):
    """What runs the GPUs: NVIDIA's GPU Operator (driver, toolkit, plugin, MIG manager) or the standalone plugin."""

    GPU_OPERATOR = "gpu-operator"
    DEVICE_PLUGIN = "device-plugin"


class SharingStrategy(StrEnum):
    NONE = "none"
    TIME_SLICING = "time-slicing"
    MPS = "mps"
    MIG = "mig"
    HAMI = "hami"
    AUTO = "auto"  # left to `gpustack recommend`: whole GPUs, MIG or time-slicing, whichever needs fewest GPUs


class Allocation(StrEnum):
    """How a pool's GPUs reach pods: extended resources from a device plugin, or DRA claims."""

    DEVICE_PLUGIN = "device-plugin"
    DRA = "dra"


AUTO_LAYOUT = "auto"  # sharing.mig.layout: auto, the value `gpustack recommend` replaces
UNLIMITED = "unlimited"  # tenants[].quota.<pool>: unlimited, a granted pool held whole (no quota line)


class MigStrategy(StrEnum):
    SINGLE = "single"
    MIXED = "mixed"


class WorkloadKind(StrEnum):
    DEPLOYMENT = "Deployment"
    STATEFUL_SET = "StatefulSet"
    JOB = "Job"
    VOLCANO_JOB = "VolcanoJob"
    JOB_SET = "JobSet"
    LEADER_WORKER_SET = "LeaderWorkerSet"


class Scheduler(StrEnum):
    DEFAULT = "default"
    VOLCANO = "volcano"
    KUEUE = "kueue"
    KAI = "kai"


PRIORITY_VALUES: dict[str, int] = {"low": 1000, "normal": 10000, "high": 100000, "critical": 1000000}


@dataclass(frozen=True)
class DevicePluginFlags:
    fail_on_init_error: bool | None = None
    nvidia_driver_root: str | None = None
    pass_device_specs: bool | None = None
    device_list_strategy: tuple[str, ...] | None = None
    device_id_strategy: str | None = None

    def merged(self, override: DevicePluginFlags) -> DevicePluginFlags:
        """These flags with every field `override` sets taking precedence."""
        return DevicePluginFlags(
            *(
                getattr(override, name) if getattr(override, name) is not None else getattr(self, name)
                for name in self.__dataclass_fields__
            )
        )


@dataclass(frozen=True)
class DevicePlugin:
    chart_version: str = DEFAULT_CHART_VERSION
    repository: str = DEFAULT_CHART_REPOSITORY
    namespace: str = DEFAULT_DEVICE_PLUGIN_NAMESPACE
    release_name: str = DEFAULT_DEVICE_PLUGIN_RELEASE
    gfd: bool = schema_default(DEVICE_PLUGIN, "gfd")
    flags: DevicePluginFlags = field(default_factory=DevicePluginFlags)
    path: JsonPath = ("spec", "devicePlugin")


@dataclass(frozen=True)
class MigManager:
    namespace: str = DEFAULT_MIG_NAMESPACE
    config_map: str = DEFAULT_MIG_CONFIGMAP


@dataclass(frozen=True)
class GpuOperator:
    """The GPU Operator release (stack: gpu-operator) and which of its parts the cluster already runs."""

    chart_version: str = DEFAULT_GPU_OPERATOR_CHART_VERSION
    repository: str = DEFAULT_GPU_OPERATOR_REPOSITORY
    namespace: str = DEFAULT_GPU_OPERATOR_NAMESPACE
    release_name: str = DEFAULT_GPU_OPERATOR_RELEASE
    driver: bool | None = None  # None: as the cloud pools' node images decide (gpustack.cloud.operator_parts)
    toolkit: bool | None = None
    nfd: bool = schema_default(GPU_OPERATOR, "nfd")
    path: JsonPath = ("spec", "gpuOperator")


@dataclass(frozen=True)
class HamiSettings:
    """The HAMi Helm release, installed when a pool uses sharing.strategy: hami."""

    chart_version: str = DEFAULT_HAMI_CHART_VERSION
    repository: str = DEFAULT_HAMI_CHART_REPOSITORY
    namespace: str = DEFAULT_HAMI_NAMESPACE
    scheduler_name: str = DEFAULT_HAMI_SCHEDULER
    path: JsonPath = ("spec", "hami")


@dataclass(frozen=True)
class KueueSettings:
    """The Kueue objects' API version, and the Kueue Helm release, installed when a tenant uses scheduler: kueue."""

    api_version: str = DEFAULT_KUEUE_API_VERSION
    chart_version: str = DEFAULT_KUEUE_CHART_VERSION
    namespace: str = DEFAULT_KUEUE_NAMESPACE
    path: JsonPath = ("spec", "kueue")


@dataclass(frozen=True)
class VolcanoSettings:
    """The Volcano Helm release, installed when a tenant uses scheduler: volcano or a workload is a VolcanoJob."""

    binpack: bool = schema_default(
        VOLCANO, "binpack"
    )  # weight the binpack plugin towards the GPU resources, to keep whole nodes free
    chart_version: str = DEFAULT_VOLCANO_CHART_VERSION
    namespace: str = DEFAULT_VOLCANO_NAMESPACE
    path: JsonPath = ("spec", "volcano")


@dataclass(frozen=True)
class DraSettings:
    """The NVIDIA DRA driver's Helm release and the resource.k8s.io version, for pools with allocation: dra."""

    api_version: str | None = None  # None: resource.k8s.io/v1; an older one only as an explicit opt-in
    chart_version: str = DEFAULT_DRA_CHART_VERSION
    namespace: str = DEFAULT_DRA_NAMESPACE
    nvidia_driver_root: str = DEFAULT_DRA_DRIVER_ROOT
    path: JsonPath = ("spec", "dra")


@dataclass(frozen=True)
class Taint:
    key: str
    value: str | None
    effect: str
    path: JsonPath
    by_cloud: bool = False  # put on the nodes by their cloud itself (gpustack.taints.CLOUD_TAINTS), not by gpustack


# mig.timeSlicing.replicas' key for the GPUs a mixed pool leaves whole (MIG off), beside the profiles' keys.
WHOLE_GPUS = "whole"


@dataclass(frozen=True)
class Replication:
    """Time-slicing or MPS: one physical GPU advertised as `replicas` schedulable units."""

    replicas: int  # with per_profile: the largest of its counts
    rename_by_default: bool
    fail_requests_greater_than_one: bool
    path: JsonPath
    # mig.timeSlicing.replicas written per profile, as NVIDIA's time-slicing page writes it: (profile or WHOLE_GPUS,
    # replicas) in blueprint order; what it leaves out is not shared. Empty: `replicas` for every MIG instance, and
    # GPUs left whole stay whole (the one-count form, as before).
    per_profile: tuple[tuple[str, int], ...] = ()

    def replicas_for(self, profile: str | None) -> int:
        """How many times one instance of `profile` (None: a GPU left whole) is advertised; 1: not shared."""
        if not self.per_profile:
            return 1 if profile is None else self.replicas
        return dict(self.per_profile).get(WHOLE_GPUS if profile is None else profile, 1)

    def shares(self, profile: str | None) -> bool:
        """Whether the device plugin replicates `profile`'s instances (None: the GPUs left whole) at all."""
        if not self.per_profile:
            return profile is not None
        return (WHOLE_GPUS if profile is None else profile) in dict(self.per_profile)

    @property
    def counts_text(self) -> str:
        """The replica counts as report prose: `x2`, or `whole x8, 1g.5gb x2` per profile."""
        if not self.per_profile:
            return f"x{self.replicas}"
        return ", ".join(f"{profile} x{count}" for profile, count in self.per_profile)


@dataclass(frozen=True)
class MigGroup:
    devices: tuple[int, ...] | None  # None: every GPU of the node
    layout: tuple[tuple[str, int], ...]  # profile -> instances per GPU, in blueprint order; empty when whole
    path: JsonPath  # the layout mapping (the group itself when whole)
    whole: bool = False  # MIG off on these GPUs: advertised as whole GPUs beside the other groups' instances

    @property
    def instances(self) -> dict[str, int]:
        return {profile: count for profile, count in self.layout if count > 0}


@dataclass(frozen=True)
class MigSharing:
    strategy: MigStrategy
    groups: tuple[MigGroup, ...]
    path: JsonPath
    time_slicing: Replication | None = None  # MIG instances (per_profile: and whole GPUs) advertised replicas times
    # layout: auto: `gpustack recommend` chooses the layouts; until then the pool offers every profile (so needs and
    # quotas can be checked) and compile refuses it (GS310). Its one group has an empty layout.
    auto: bool = False
    config_name: str | None = None  # configName: the cluster's own mig-parted config name, kept by import

    @property
    def whole_groups(self) -> tuple[MigGroup, ...]:
        return tuple(group for group in self.groups if group.whole)

    @property
    def cut_groups(self) -> tuple[MigGroup, ...]:
        return tuple(group for group in self.groups if not group.whole)


@dataclass(frozen=True)
class HamiSharing:
    split_count: int = schema_default(HAMI_SHARING, "splitCount")
    memory_scaling: float = float(schema_default(HAMI_SHARING, "memoryScaling"))
    core_scaling: float = float(schema_default(HAMI_SHARING, "coreScaling"))
    path: JsonPath = ()


@dataclass(frozen=True)
class Sharing:
    strategy: SharingStrategy = SharingStrategy.NONE
    replication: Replication | None = None  # time-slicing or mps
    mig: MigSharing | None = None
    hami: HamiSharing | None = None
    path: JsonPath = ()


@dataclass(frozen=True)
class Topology:
    policy: str
    scope: str
    path: JsonPath


@dataclass(frozen=True)
class GpuRef:
    model: str  # as written: a catalog key or a GFD product label
    count: int
    path: JsonPath


@dataclass(frozen=True)
class NodeResources:
    cpu: str | None
    memory: str | None


@dataclass(frozen=True)
class LabelRequirement:
    key: str
    operator: str  # In, NotIn, Exists, DoesNotExist
    values: tuple[str, ...]


@dataclass(frozen=True)
class NodeSelector:
    """A label selector over nodes: every pair and every requirement must hold."""

    match_labels: tuple[tuple[str, str], ...]
    match_expressions: tuple[LabelRequirement, ...]
    path: JsonPath

    def requirements(self) -> tuple[LabelRequirement, ...]:
        """matchLabels as In requirements, then matchExpressions: the form node affinity takes."""
        pairs = tuple(LabelRequirement(key, "In", (value,)) for key, value in self.match_labels)
        return pairs + self.match_expressions


@dataclass(frozen=True)
class CloudPool:
    """The provider's node pool that holds a pool's nodes: gpustack provisions it (`pulumi up`) or writes its spec."""

    provider: str  # gke, eks, aks, karpenter
    machine_type: str | None  # None: the smallest machine type with the pool's GPUs (gpustack.cloud)
    zones: tuple[str, ...]
    spot: bool
    disk_gb: int | None
    disk_type: str | None
    node_class: str  # Karpenter's EC2NodeClass
    path: JsonPath
    image_type: str | None = None  # GKE/EKS node image; None: the one gpustack.cloud picks


@dataclass(frozen=True)
class NodePool:
    name: str
    gpu: GpuRef | None  # None: a CPU-only pool
    nodes: tuple[str, ...]  # static pools: the node names; empty for a selector pool
    labels: tuple[tuple[str, str], ...]
    taints: tuple[Taint, ...]
    sharing: Sharing
    topology: Topology | None
    flags: DevicePluginFlags
    node_resources: NodeResources | None
    description: str | None
    path: JsonPath
    allocation: Allocation = Allocation.DEVICE_PLUGIN
    max_pods: int | None = None  # the kubelet's maxPods (None: its default)
    cordoned: tuple[str, ...] = ()  # nodes with spec.unschedulable, for simulate
    selector: NodeSelector | None = None  # selector pools: nodes chosen by labels their provider sets
    count: int | None = None  # selector pools of fixed size
    min_nodes: int | None = None  # autoscaled selector pools
    max_nodes: int | None = None
    cloud: CloudPool | None = None  # cloud pools: selector pools whose provider node pool gpustack provisions
    config_name: str | None = None  # devicePlugin.configName: the cluster's own device-plugin config name, kept

    @property
    def gpus_per_node(self) -> int:
        return self.gpu.count if self.gpu is not None else 0

    @property
    def node_count(self) -> int:
        """How many nodes the pool can hold: its listed nodes, or a selector pool's count or maxNodes.

        Quotas, flavors and simulations plan for the most the pool offers; `guaranteed_nodes` is the floor.
        """
        if self.selector is None:
            return len(self.nodes)
        return self.count if self.count is not None else self.max_nodes or 0

    @property
    def guaranteed_nodes(self) -> int:
        """The nodes that are always there: a static or fixed-size pool's all, an autoscaled pool's minNodes."""
        if self.selector is None or self.count is not None:
            return self.node_count
        return self.min_nodes or 0


PoolAmounts = tuple[tuple[str, tuple[tuple[str, int], ...]], ...]  # pool -> resource short name -> amount


def amounts_for(amounts: PoolAmounts, pool: str) -> dict[str, int]:
    return dict(next((items for name, items in amounts if name == pool), ()))


@dataclass(frozen=True)
class KueueCohort:
    """The Kueue cohort a tenant's ClusterQueue shares unused quota in, and how much it may borrow and lend."""

    name: str
    borrowing_limit: PoolAmounts
    lending_limit: PoolAmounts
    path: JsonPath


@dataclass(frozen=True)
class KueueTenant:
    cohort: KueueCohort | None
    path: JsonPath


@dataclass(frozen=True)
class VolcanoTenant:
    weight: int
    reclaimable: bool
    path: JsonPath


@dataclass(frozen=True)
class Tenant:
    name: str
    namespaces: tuple[str, ...]
    pools: tuple[str, ...]
    priority: str
    scheduler: Scheduler
    quota: PoolAmounts  # an `unlimited` pool is an entry with no amounts, and is named in `unlimited` too
    path: JsonPath
    kueue: KueueTenant | None = None  # only with scheduler: kueue
    volcano: VolcanoTenant | None = None  # only with scheduler: volcano
    unlimited: tuple[str, ...] = ()  # pools whose quota is `unlimited`: granted whole, no quota line
    kai: KueueTenant | None = None  # only with scheduler: kai: Kueue's cohort words, compiled into KAI Queues

    def quota_for(self, pool: str) -> dict[str, int]:
        return amounts_for(self.quota, pool)

    def unlimited_on(self, pool: str) -> bool:
        """Whether the tenant holds the pool whole (`quota: {<pool>: unlimited}`). A granted pool with no quota entry
        is closed: every resource of it at 0 (GS610 says so)."""
        return pool in self.unlimited

    @property
    def cohort(self) -> KueueCohort | None:
        settings = self.kueue or self.kai
        return settings.cohort if settings is not None else None


class ClaimShare(StrEnum):
    """Who holds one DRA claim: the containers of each pod (a ResourceClaimTemplate) or every pod of the workload
    (one ResourceClaim)."""

    CONTAINERS = "containers"
    PODS = "pods"


@dataclass(frozen=True)
class ClaimSharing:
    """How the NVIDIA DRA driver shares a claimed GPU between its holders (the claim's GpuConfig)."""

    strategy: str  # TimeSlicing or MPS, as the driver spells them
    path: JsonPath
    interval: str | None = None  # TimeSlicing: Default, Short, Medium or Long
    active_thread_percentage: int | None = None  # MPS
    pinned_memory_limit: str | None = None  # MPS: a quantity


@dataclass(frozen=True)
class GpuClaim:
    """A DRA workload's claim as written (`gpu.claim`)."""

    share: ClaimShare
    path: JsonPath
    sharing: ClaimSharing | None = None


@dataclass(frozen=True)
class GpuNeed:
    count: int
    profile: str | None
    memory: str | None  # Kubernetes quantity
    path: JsonPath
    cores: int | None = None  # HAMi: percent of each GPU's compute
    shareable: bool = False  # tolerates an unisolated shared GPU: recommend may time-slice it on an auto pool
    claim: GpuClaim | None = None  # DRA pools: who shares the claim, and the driver's sharing config


@dataclass(frozen=True)
class Serve:
    port: int
    path: str
    startup_seconds: int


@dataclass(frozen=True)
class Preference:
    weight: int
    labels: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Nccl:
    socket_ifname: str | None
    ib_disable: bool | None
    debug: str | None
    p2p_level: str | None


@dataclass(frozen=True)
class EnvRef:
    """An env value read when the pod starts from one key of a Secret or ConfigMap. It has no namespace: like
    Kubernetes' own references it names an object of the workload's namespace, so a tenant reads only its own."""

    kind: str  # "secretKeyRef" or "configMapKeyRef", as Kubernetes' valueFrom spells it
    name: str
    key: str
    optional: bool | None = None

    def value_from(self) -> dict[str, Any]:
        ref: dict[str, Any] = {"name": self.name, "key": self.key}
        if self.optional is not None:
            ref["optional"] = self.optional
        return {self.kind: ref}

    def __str__(self) -> str:
        source = "Secret" if self.kind == "secretKeyRef" else "ConfigMap"
        return f"from {source} {self.name}, key {self.key}"


@dataclass(frozen=True)
class Workload:
    name: str
    tenant: str
    pool: str
    kind: WorkloadKind
    namespace: str | None  # None: the tenant's first namespace
    replicas: int
    workers: int | None
    image: str
    command: tuple[str, ...]
    args: tuple[str, ...]
    env: tuple[tuple[str, str | EnvRef], ...]
    gpu: GpuNeed
    cpu: str | None
    memory: str | None
    serve: Serve | None
    prefer: tuple[Preference, ...]
    nccl: Nccl | None
    template: str | None
    path: JsonPath
    size: int | None = None  # LeaderWorkerSet: pods per group, the leader included
    ephemeral_storage: str | None = None  # a quantity, requested and limited
    shm_size: str | None = None  # the sizeLimit of the in-memory /dev/shm

    @property
    def pods(self) -> int:
        """How many pods the template stands for."""
        if self.size is not None:
            return self.replicas * self.size
        return self.workers if self.workers is not None else self.replicas

    @property
    def gang(self) -> int | None:
        """How many pods start together or not at all (a VolcanoJob or JobSet, one LeaderWorkerSet group)."""
        if self.size is not None:
            return self.size
        return self.workers


@dataclass(frozen=True)
class Blueprint:
    name: str
    description: str | None
    kubernetes_version: str
    device_plugin: DevicePlugin
    mig_manager: MigManager
    pools: tuple[NodePool, ...]
    tenants: tuple[Tenant, ...]
    workloads: tuple[Workload, ...]
    source: str = "<blueprint>"  # the file it was read from, for templates resolved relative to it
    # Workload templates (path as written -> text), read by the edge that read the blueprint so compile stays pure.
    templates: tuple[tuple[str, str], ...] = ()
    hami: HamiSettings = field(default_factory=HamiSettings)
    kueue: KueueSettings = field(default_factory=KueueSettings)
    volcano: VolcanoSettings = field(default_factory=VolcanoSettings)
    dra: DraSettings = field(default_factory=DraSettings)
    stack: Stack = Stack.GPU_OPERATOR
    gpu_operator: GpuOperator = field(default_factory=GpuOperator)

    def template_text(self, path: str) -> str | None:
        return dict(self.templates).get(path)

    def pool(self, name: str) -> NodePool | None:
        return self._by_name[0].get(name)

    def tenant(self, name: str) -> Tenant | None:
        return self._by_name[1].get(name)

    @functools.cached_property
    def _by_name(self) -> tuple[dict[str, NodePool], dict[str, Tenant]]:
        """The first pool and tenant of each name, found once (every workload asks for its pool: 1,000 x 1,000 at fleet
        size). cached_property writes the instance's __dict__, not a field: the record stays frozen."""
        return {p.name: p for p in reversed(self.pools)}, {t.name: t for t in reversed(self.tenants)}

    @property
    def kubernetes_minor(self) -> int:
        return int(self.kubernetes_version.split(".")[1])

"""The typed blueprint: frozen records with defaults applied, each knowing where it came from.

`path` on each record is the JSON path of its mapping in the source document, so
checks can point diagnostics at the exact line without the model depending on the loader.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from gpustack.diagnostic import JsonPath

DEFAULT_CHART_VERSION = "0.20.0"
DEFAULT_CHART_REPOSITORY = "https://nvidia.github.io/k8s-device-plugin"
DEFAULT_DEVICE_PLUGIN_NAMESPACE = "nvidia-device-plugin"
DEFAULT_MIG_NAMESPACE = "gpu-operator"
DEFAULT_MIG_CONFIGMAP = "gpustack-mig-parted-config"
# HAMi v2.10.0 (2026-08-21), the release the chart values gpustack writes were checked against.
DEFAULT_HAMI_CHART_VERSION = "2.10.0"
DEFAULT_HAMI_CHART_REPOSITORY = "https://project-hami.github.io/HAMi"
DEFAULT_HAMI_NAMESPACE = "kube-system"  # where HAMi's own install guide puts it
DEFAULT_HAMI_SCHEDULER = "hami-scheduler"  # the chart's `schedulerName` default
# Kueue v0.19.2, the release the Kueue objects were checked against (its CRDs, CEL rules included); its chart is
# published only as an OCI artifact.
DEFAULT_KUEUE_CHART_VERSION = "0.19.2"
KUEUE_CHART_REPOSITORY = "oci://registry.k8s.io/kueue/charts"
DEFAULT_KUEUE_NAMESPACE = "kueue-system"
# Volcano v1.15.1, the release the scheduler configuration and the Queue/Job CRDs were checked against.
DEFAULT_VOLCANO_CHART_VERSION = "1.15.1"
VOLCANO_CHART_REPOSITORY = "https://volcano-sh.github.io/helm-charts"
DEFAULT_VOLCANO_NAMESPACE = "volcano-system"
KUEUE_V1BETA2 = "kueue.x-k8s.io/v1beta2"  # served since Kueue v0.15, storage version since v0.16
KUEUE_V1BETA1 = "kueue.x-k8s.io/v1beta1"
DEFAULT_VOLCANO_QUEUE_WEIGHT = 1
# The NVIDIA DRA driver for GPUs (kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1, 2026-06-30: the newest published
# chart), an OCI chart on registry.k8s.io; the chart refuses the `default` namespace.
DEFAULT_DRA_CHART_VERSION = "0.4.1"
DRA_CHART_REPOSITORY = "oci://registry.k8s.io/dra-driver-nvidia/charts"
DEFAULT_DRA_NAMESPACE = "nvidia-dra-driver-gpu"
DEFAULT_DRA_DRIVER_ROOT = "/"


class SharingStrategy(StrEnum):
    NONE = "none"
    TIME_SLICING = "time-slicing"
    MPS = "mps"
    MIG = "mig"
    HAMI = "hami"


class Allocation(StrEnum):
    """How a pool's GPUs reach pods: extended resources from a device plugin, or DRA claims."""

    DEVICE_PLUGIN = "device-plugin"
    DRA = "dra"


class MigStrategy(StrEnum):
    SINGLE = "single"
    MIXED = "mixed"


class WorkloadKind(StrEnum):
    DEPLOYMENT = "Deployment"
    STATEFUL_SET = "StatefulSet"
    JOB = "Job"
    VOLCANO_JOB = "VolcanoJob"


class Scheduler(StrEnum):
    DEFAULT = "default"
    VOLCANO = "volcano"
    KUEUE = "kueue"


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
    gfd: bool = True
    flags: DevicePluginFlags = field(default_factory=DevicePluginFlags)
    path: JsonPath = ("spec", "devicePlugin")


@dataclass(frozen=True)
class MigManager:
    namespace: str = DEFAULT_MIG_NAMESPACE
    config_map: str = DEFAULT_MIG_CONFIGMAP


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

    api_version: str = KUEUE_V1BETA2
    chart_version: str = DEFAULT_KUEUE_CHART_VERSION
    namespace: str = DEFAULT_KUEUE_NAMESPACE
    path: JsonPath = ("spec", "kueue")


@dataclass(frozen=True)
class VolcanoSettings:
    """The Volcano Helm release, installed when a tenant uses scheduler: volcano or a workload is a VolcanoJob."""

    binpack: bool = False  # weight the binpack plugin towards the GPU resources, to keep whole nodes free
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


@dataclass(frozen=True)
class Replication:
    """Time-slicing or MPS: one physical GPU advertised as `replicas` schedulable units."""

    replicas: int
    rename_by_default: bool
    fail_requests_greater_than_one: bool
    path: JsonPath


@dataclass(frozen=True)
class MigGroup:
    devices: tuple[int, ...] | None  # None: every GPU of the node
    layout: tuple[tuple[str, int], ...]  # profile -> instances per GPU, in blueprint order
    path: JsonPath  # the layout mapping

    @property
    def instances(self) -> dict[str, int]:
        return {profile: count for profile, count in self.layout if count > 0}


@dataclass(frozen=True)
class MigSharing:
    strategy: MigStrategy
    groups: tuple[MigGroup, ...]
    path: JsonPath


@dataclass(frozen=True)
class HamiSharing:
    split_count: int = 10
    memory_scaling: float = 1.0
    core_scaling: float = 1.0
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
class NodePool:
    name: str
    gpu: GpuRef
    nodes: tuple[str, ...]
    labels: tuple[tuple[str, str], ...]
    taints: tuple[Taint, ...]
    sharing: Sharing
    topology: Topology | None
    flags: DevicePluginFlags
    node_resources: NodeResources | None
    description: str | None
    path: JsonPath
    allocation: Allocation = Allocation.DEVICE_PLUGIN


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
    quota: PoolAmounts
    path: JsonPath
    kueue: KueueTenant | None = None  # only with scheduler: kueue
    volcano: VolcanoTenant | None = None  # only with scheduler: volcano

    def quota_for(self, pool: str) -> dict[str, int]:
        return amounts_for(self.quota, pool)

    @property
    def cohort(self) -> KueueCohort | None:
        return self.kueue.cohort if self.kueue is not None else None


@dataclass(frozen=True)
class GpuNeed:
    count: int
    profile: str | None
    memory: str | None  # Kubernetes quantity
    path: JsonPath
    cores: int | None = None  # HAMi: percent of each GPU's compute


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
    env: tuple[tuple[str, str], ...]
    gpu: GpuNeed
    cpu: str | None
    memory: str | None
    serve: Serve | None
    prefer: tuple[Preference, ...]
    nccl: Nccl | None
    template: str | None
    path: JsonPath

    @property
    def pods(self) -> int:
        """How many pods the template stands for."""
        return self.workers if self.workers is not None else self.replicas


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

    def template_text(self, path: str) -> str | None:
        return dict(self.templates).get(path)

    def pool(self, name: str) -> NodePool | None:
        return next((p for p in self.pools if p.name == name), None)

    def tenant(self, name: str) -> Tenant | None:
        return next((t for t in self.tenants if t.name == name), None)

    @property
    def kubernetes_minor(self) -> int:
        return int(self.kubernetes_version.split(".")[1])

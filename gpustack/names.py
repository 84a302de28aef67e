"""Label keys and object names gpustack owns, shared by every output family."""

from __future__ import annotations

import hashlib

# On nodes: the pool they belong to. Workloads require it rather than GFD's product label, which changes with sharing.
POOL_LABEL = "gpustack.io/pool"
TENANT_LABEL = "gpustack.io/tenant"  # on namespaces: the tenant that owns them; admission policies select on it
WORKLOAD_LABEL = "gpustack.io/workload"
MANAGED_BY = {"app.kubernetes.io/managed-by": "gpustack"}
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
MIG_DISABLED_CONFIG = "all-disabled"
FIELD_MANAGER = "gpustack"
# The cluster snapshot import, drift and simulate --cluster read (docs/import.md adds the operator's objects and the
# schedulers' queues): the one spelling every hint and help text gives.
SNAPSHOT_COMMAND = (
    "kubectl get nodes,pods,priorityclasses,resourcequotas,limitranges,namespaces,persistentvolumeclaims,"
    "validatingadmissionpolicybindings -A -o yaml"
)
MAX_LABEL_VALUE = 63
# The Kubernetes minor where ValidatingAdmissionPolicy is GA: older clusters get no policies (GS803 warns).
ADMISSION_POLICY_MINOR = 30
# Kueue: the label that sends a workload to a LocalQueue, and the LocalQueue gpustack makes in each tenant
# namespace. Named `default` on purpose: Kueue (LocalQueueDefaulting, on by default since v0.12) sends
# workloads that carry no queue label to the namespace's LocalQueue named `default`.
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
KUEUE_LOCAL_QUEUE = "default"
# Volcano: the scheduler name its chart installs, and the pod annotation that picks a Queue for pods that are
# not part of a Volcano Job (Volcano makes each such pod a PodGroup of one in that queue).
VOLCANO_SCHEDULER = "volcano"
VOLCANO_DEFAULT_QUEUE = "default"
VOLCANO_QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
# KAI Scheduler's chart: its release namespace, the binder's GPU-reservation pods (global.resourceReservation) and the
# node-scale-adjuster's scaling pods (nodescaleadjuster.scalingPodNamespace). Their pods hold GPUs, never a tenant's.
KAI_NAMESPACES = ("kai-scheduler", "kai-resource-reservation", "kai-scale-adjust")
# HAMi: its device plugin runs on nodes labelled gpu=on (the chart's nvidiaNodeSelector default); gpustack adds
# a label of its own that only HAMi pools carry, so a stray gpu=on elsewhere never starts a second plugin there.
HAMI_DEVICE_PLUGIN_LABEL = "gpustack.io/device-plugin"
HAMI_DEVICE_PLUGIN = "hami"  # its value on a HAMi pool's nodes
HAMI_NODE_LABELS: dict[str, str] = {"gpu": "on", HAMI_DEVICE_PLUGIN_LABEL: HAMI_DEVICE_PLUGIN}
# The node labels gpustack derives from the blueprint and writes itself: a pool may not set them (GS406), and
# `import` and `drift` never take them for a pool's own.
OWNED_NODE_LABELS = (DEVICE_PLUGIN_CONFIG_LABEL, MIG_CONFIG_LABEL, POOL_LABEL, HAMI_DEVICE_PLUGIN_LABEL)
# GPU Feature Discovery's label with the GPU's product name (e.g. NVIDIA-H100-80GB-HBM3, with -SHARED or -MIG-<profile>
# appended under sharing); the catalog matches models by it, the simulator writes it, import and drift read it.
GFD_PRODUCT_LABEL = "nvidia.com/gpu.product"


def priority_class_name(level: str) -> str:
    return f"gpustack-{level}"


def mig_config_name(pool: str) -> str:
    """The mig-parted config a MIG pool's nodes select; also a label value, so at most 63 characters."""
    name = f"gpustack-{pool}"
    if len(name) <= MAX_LABEL_VALUE:
        return name
    # A pool name is up to 63 characters itself: cut it, and keep two long names apart with a digest of the whole.
    digest = hashlib.sha256(pool.encode()).hexdigest()[:8]
    return f"{name[: MAX_LABEL_VALUE - len(digest) - 1].rstrip('-')}-{digest}"


# Env the NVIDIA container toolkit reads to choose devices: a container that sets it can get GPUs (or MIG control)
# without a GPU request, outside the device plugin and every quota, wherever the toolkit honours env (H4).
DEVICE_ENV = ("NVIDIA_VISIBLE_DEVICES", "NVIDIA_MIG_CONFIG_DEVICES", "NVIDIA_MIG_MONITOR_DEVICES")
# Env only a GPU container has a use for: the toolkit mounts driver libraries on what it names.
GPU_ONLY_ENV = ("NVIDIA_DRIVER_CAPABILITIES",)
# The toolkit's volume-mounts device list strategy reads container mounts under this folder as device requests.
DEVICE_MOUNT_ROOT = "/var/run/nvidia-container-devices"
# The GPU Operator deploys its device plugin wherever this label is not "false"; it fills in only missing values.
OPERATOR_DEVICE_PLUGIN_LABEL = "nvidia.com/gpu.deploy.device-plugin"


# Cloud node pools: the label each provider sets on every node of a node pool, valued with the pool's name.
# gpustack names the provider's pool after the blueprint's pool, so a cloud pool's selector is this label.
CLOUD_POOL_LABELS: dict[str, str] = {
    "gke": "cloud.google.com/gke-nodepool",
    "eks": "eks.amazonaws.com/nodegroup",
    "aks": "kubernetes.azure.com/agentpool",
    "karpenter": "karpenter.sh/nodepool",
}

"""Codes of the rules on tenants and what runs (gpustack/checks/): quotas, schedulers, workloads."""

from __future__ import annotations

from gpustack.codes.record import Stage

_tenancy = Stage("tenancy", "gpustack/checks/tenancy.py")
_schedulers = Stage("schedulers and queues", "gpustack/checks/schedulers.py")
_workloads = Stage("workloads", "gpustack/checks/workloads.py")
_templates = Stage("workload templates", "gpustack/validation.py, gpustack/workload_templates.py")
_isolation = Stage("isolation", "gpustack/checks/isolation.py")
_cluster = Stage("cluster settings", "gpustack/checks/cluster.py")
_dra_claims = Stage("DRA claims", "gpustack/checks/dra.py")

QUOTA_ABOVE_POOL = _tenancy(
    "GS501",
    "a tenant quota above what the pool has",
    "A tenant's quota on a pool is more than the pool has.",
    "Lower the quota, or add nodes to the pool.",
)

QUOTA_ON_UNKNOWN_RESOURCE = _tenancy(
    "GS502",
    "a quota on a resource the pool does not advertise",
    "A quota or limit names a resource the pool does not advertise (e.g. a MIG profile on a time-sliced pool).",
    "Use a resource the pool advertises (the hint lists them).",
)

QUOTA_ON_UNGRANTED_POOL = _tenancy(
    "GS503",
    "a quota on a pool the tenant is not allowed on",
    "A tenant has a quota on a pool it may not use.",
    "Add the pool to the tenant's pools, or drop the quota.",
)

WORKLOAD_ON_UNGRANTED_POOL = _tenancy(
    "GS504",
    "a workload on a pool its tenant is not allowed on",
    "A workload runs on a pool its tenant may not use: admission would refuse its pods.",
    "Move the workload, or grant the pool to the tenant.",
)

DEMAND_ABOVE_QUOTA = _tenancy(
    "GS505",
    "a tenant's templates need more than its quota (plus what a Kueue tenant may borrow)",
    "A tenant's workload templates request more than its quota (plus what a Kueue tenant may borrow): pods beyond it "
    "are refused with `exceeded quota`.",
    "Raise the quota, or lower the templates' replicas or requests.",
)

QUOTA_ON_SHARED_RESOURCE = _tenancy(
    "GS506",
    "quotas on pools that advertise the same resource name",
    "Quotas on several pools that advertise the same resource name: one ResourceQuota counts them together.",
    "Use distinct resource names (sharing modes) per pool, or Kueue for per-pool quota.",
)

QUOTA_PER_NAMESPACE = _schedulers(
    "GS507",
    "a per-namespace quota repeated across a tenant's namespaces",
    "A tenant with several namespaces gets its quota repeated in each one: a per-namespace ResourceQuota cannot cap "
    "the tenant as a whole.",
    "Use one namespace per tenant, or Kueue, whose ClusterQueue caps all of a tenant's namespaces together.",
)

KUEUE_NO_NODE_RESOURCES = _schedulers(
    "GS508",
    "a Kueue tenant's pool without nodeResources for the ClusterQueue's cpu and memory",
    "A pool a Kueue tenant uses gives no `nodeResources` cpu and memory; Kueue admits a workload only when its "
    "ClusterQueue covers every resource the pods request.",
    "Add `nodeResources: {cpu: ..., memory: ...}` (allocatable per node) to the pool.",
)

VOLCANO_RESERVED_QUEUE = _schedulers(
    "GS509",
    "a Volcano tenant named like a queue Volcano owns (default, root)",
    "A Volcano tenant named `default` or `root`: its Queue would overwrite a queue Volcano manages.",
    "Rename the tenant.",
)

KUEUE_TOO_MANY_TAINTS = _schedulers(
    "GS510",
    "a Kueue tenant's pool with more taints than a ResourceFlavor holds",
    "A Kueue tenant's pool has more taints than a ResourceFlavor holds (8).",
    "Keep at most 8 taints.",
)

KUEUE_LENDING_ABOVE_QUOTA = _schedulers(
    "GS511",
    "a Kueue lending limit above the tenant's nominal quota",
    "A Kueue lending limit above the tenant's nominal quota: Kueue rejects the ClusterQueue.",
    "Lend at most the nominal quota.",
)

GANG_NEVER_FITS = _schedulers(
    "GS512",
    "a gang (all its pods or none) that its pool or its tenant's quota can never hold whole",
    "A warning: a VolcanoJob's or JobSet's workers (`workers`), or one LeaderWorkerSet group (`size`), start all "
    "together or not at all, and either the pool cannot hold that many such pods at once (a pod cannot span nodes; an "
    "autoscaled pool is counted at `maxNodes`), or the pods together ask for more than the tenant's quota (plus what "
    "a Kueue tenant may borrow) allows. The gang then never starts, however idle the GPUs are; `gpustack capacity` "
    "words the same fact.",
    "Lower `workers` or `size`, ask for fewer GPUs per pod, give the pool more nodes, or raise the tenant's quota on "
    "the pool.",
)

KAI_QUEUE_NAME = _schedulers(
    "GS513",
    "a KAI shard or leaf Queue name KAI cannot take",
    "A pool named `default` granted to a KAI tenant (each pool KAI schedules is a SchedulingShard named after it, and "
    "`default` is the shard KAI's chart makes for everything outside a pool), or a leaf Queue "
    "`<tenant>.<pool>.<namespace>` longer than 63 characters, too long for the `kai.scheduler/queue` label that "
    "names it.",
    "Rename the pool, or use shorter tenant, pool or namespace names.",
)

KAI_UNCOUNTED_SHARING = _schedulers(
    "GS514",
    "a KAI tenant on a pool whose GPU sharing KAI's queues cannot count or schedule",
    "A KAI tenant is granted a pool whose GPUs KAI cannot honour: a HAMi pool needs HAMi's scheduler, and KAI's Queue "
    "counts only whole GPUs (`nvidia.com/gpu`) and MIG devices, so a renamed time-sliced or MPS resource "
    "(`gpu.shared`) would run outside the tenant's queue.",
    "Use whole GPUs, MIG or time-slicing without `renameByDefault` on the tenant's pools, or another scheduler.",
)

KAI_LENDING_LIMIT = _schedulers(
    "GS515",
    "a KAI tenant's cohort lends other than all of its quota, which KAI cannot hold",
    "A `kai.cohort.lendingLimit` amount on a KAI tenant that is not its quota there. A KAI Queue has a guaranteed "
    "quota, a hard limit and an over-quota weight, and nothing that keeps part of its unused quota from others: KAI "
    "lends all of it and takes it back by reclaiming (evicting what other queues run over their quota) when the "
    "queue's own jobs need it.",
    "Remove `lendingLimit` or lend the whole quota (the quota stays guaranteed: KAI reclaims it when the tenant "
    "needs it), or use `scheduler: kueue`, whose ClusterQueue can keep part of it unlent.",
)

KAI_COHORT_NAME = _schedulers(
    "GS516",
    "a KAI cohort named like a KAI tenant",
    "A KAI tenant's `kai.cohort.name` is also a KAI tenant's name: the cohort's Queue in each pool's shard, "
    "`<cohort>.<pool>`, would be the same cluster-scoped Queue as that tenant's parent Queue there.",
    "Rename the cohort (or the tenant).",
)

NEED_UNMET = _workloads(
    "GS601",
    "a GPU need the workload's pool cannot meet",
    "A workload asks for a GPU, a MIG profile, an amount of memory or compute its pool cannot give.",
    "Change the workload's `gpu` need, or place it on a pool that offers it (the hint says which).",
)

DEVICE_ENV_SET = _workloads(
    "GS602",
    "CUDA_VISIBLE_DEVICES or NVIDIA_VISIBLE_DEVICES-style device env set by hand",
    "A workload sets CUDA_VISIBLE_DEVICES: the device plugin already exposes exactly the allocated GPUs.",
    "Remove the variable.",
)

SHARED_REQUEST_ABOVE_ONE = _workloads(
    "GS603",
    "more than one shared GPU per pod where the pool forbids it",
    "A pod asks for more than one shared GPU where the time-slicing config fails such requests.",
    "Ask for 1 shared GPU per pod.",
)

VOLCANO_JOB_WITHOUT_VOLCANO = _workloads(
    "GS604",
    "a VolcanoJob for a tenant that does not use Volcano",
    "A VolcanoJob for a tenant that does not use Volcano.",
    "Set the tenant's `scheduler: volcano`.",
)

TEMPLATE_UNREADABLE = _templates(
    "GS605",
    "a workload template file cannot be read, or its path leads out of the blueprint's folder",
    "A workload's template file is missing, not a regular file, too large or not UTF-8.",
    "Fix the path: it is relative to the blueprint's folder.",
)

TEMPLATE_ERROR = _templates(
    "GS606",
    "a workload template does not render to a valid object",
    "A workload's Jinja2 template fails to render (an undefined name, a syntax error) or renders something a tenant "
    "may not apply: not one object of an allowed kind; a name, label or annotation outside Kubernetes' syntax for "
    "its kind; another tenant's Volcano or KAI queue, or a priority class the tenant may not use (pod or Job level); "
    "node selection, tolerations or a scheduler that leave the workload's pool; `envFrom` of a ConfigMap in the "
    "output that holds device env keys; a Secret or ConfigMap of another namespace; or what the Pod Security "
    "baseline forbids (host namespaces, hostPort, hostPath, privileged, added capabilities, procMount, Unconfined "
    "seccomp or AppArmor, unsafe sysctls, a runtimeClassName).",
    "Fix the template at the line shown (the message names the field); the hint lists the variables a template gets "
    "and what gpustack sets for you.",
)

VOLCANO_JOB_ON_HAMI = _workloads(
    "GS607",
    "a VolcanoJob on a HAMi pool",
    "A VolcanoJob on a HAMi pool: only HAMi's scheduler knows which share of which GPU is free.",
    "Run it as a Job or Deployment on the HAMi pool, or as a VolcanoJob on another pool.",
)

MEMORY_BELOW_GPU_MEMORY = _workloads(
    "GS608",
    "a workload's memory below the GPU memory its pods hold",
    "A workload's memory (given, or sized from its pool's nodeResources) is below the GPU memory its pods hold: "
    "loading a model of that size into host memory first fails with OOMKilled.",
    "Give the workload `resources.memory` at least the GPU memory it requests, or nodeResources to size from.",
)

TORCHRUN_SHAPE = _workloads(
    "GS609",
    "a torchrun command that contradicts the job's shape (nodes, GPUs per node, rank)",
    "A training job's torchrun command states the job's shape itself and gets it wrong: `--nnodes` is not the number "
    "of pods, `--nproc_per_node` is not the GPUs per pod, a fixed `--node_rank` on a multi-node job, or "
    "`--standalone` with more than one node; torchrun would wait for peers that never come.",
    "Remove the flag and let gpustack derive it from the job's shape, or make it match `workers` and `gpu.count`.",
)

POOL_WITHOUT_QUOTA = _tenancy(
    "GS610",
    "a granted pool with no quota entry: closed to the tenant",
    "A tenant's `pools` lists a GPU pool its `quota` has no entry for. gpustack closes it: every resource the pool "
    "advertises is 0 in the tenant's ResourceQuota, ClusterQueue, Volcano queue and KAI queue, so none of its pods "
    "can take a GPU there. (Before, such a pool was silently unlimited.)",
    "Say what the tenant gets: `quota: {<pool>: unlimited}` to let it take every GPU of the pool, amounts "
    "(`<pool>: {gpu: 4}`), or `<pool>: {}` to keep it closed on purpose (a Kueue tenant that only borrows).",
)

DRA_CLAIM_OFF_DRA = _dra_claims(
    "GS613",
    "a workload's gpu.claim on a pool that hands out GPUs through a device plugin",
    "A workload writes `gpu.claim` (who shares its DRA claim, and the driver's sharing config) and its pool has "
    "`allocation: device-plugin`: its pods request extended resources and hold no claim, so nothing would share.",
    "Drop `gpu.claim`, or place the workload on a pool with `allocation: dra`.",
)

DRA_CLAIM_SHARING = _dra_claims(
    "GS614",
    "claim sharing config the DRA driver cannot apply",
    "A workload's `gpu.claim.sharing` asks for a strategy the pinned driver chart predates (its feature gate arrives "
    "in a later release), sets an option of the other strategy (`interval` is TimeSlicing's, "
    "`activeThreadPercentage` and `pinnedMemoryLimit` are MPS's), or claims MIG devices, which the driver gives to "
    "one claim unshared (GpuConfig applies to whole GPUs).",
    "Pin `spec.dra.chartVersion` to a release with the gate, keep the options of the strategy you chose, or claim "
    "whole GPUs on the pool.",
)

DRA_SHARED_CLAIM_SPREAD = _dra_claims(
    "GS615",
    "a multi-node workload shares one claim between its pods",
    "A JobSet or LeaderWorkerSet writes `gpu.claim: {share: pods}`: one claim's devices are on one node, so every pod "
    "holding it runs there, and the workers the job spreads across nodes would wait forever (or all crowd one node).",
    "Use `share: containers` (each pod its own devices), or a Deployment, StatefulSet or Job for pods that share a "
    "node's GPUs.",
)

GPU_TAINT_ON_DEDICATED_POOL = _isolation(
    "GS701",
    "an nvidia.com/gpu taint on a tenant-dedicated pool",
    "A tenant-dedicated pool tainted `nvidia.com/gpu`: the ExtendedResourceToleration admission plugin adds that "
    "toleration to every GPU pod, so other tenants' pods pass the taint.",
    "Taint with a key of your own, e.g. `gpustack.io/pool=NAME`.",
)

NO_EXECUTE_TAINT = _isolation(
    "GS702",
    "a NoExecute taint",
    "A NoExecute taint: applying it evicts every running pod on the pool's nodes that does not tolerate it.",
    "Use NoSchedule unless you mean to drain the nodes.",
)

HAMI_POOL_SHARED = _isolation(
    "GS703",
    "a HAMi pool shared by tenants: its isolation is bypassable",
    "Tenants share a HAMi pool: HAMi's limits are enforced inside each container and can be bypassed.",
    "Give each tenant its own HAMi pool, or use MIG for hardware isolation between tenants.",
)

SHARED_TAINT = _isolation(
    "GS704",
    "pools of different tenants share a taint",
    "Pools of different tenants share a taint, so a pod that tolerates it for one pool passes the other's too.",
    "Give each pool a taint of its own.",
)

SOFT_ISOLATION = _isolation(
    "GS705",
    "a pool granted to a tenant without a NoSchedule or NoExecute taint",
    "A pool granted to a tenant, in a blueprint with two or more tenants, has only a `PreferNoSchedule` taint or "
    "none: the scheduler may place any pod there that asks for the resource its GPUs advertise.",
    "Taint the pool with effect `NoSchedule` (gpustack then gives the tenant's workloads the toleration).",
)

UNPINNED_CHART = _cluster(
    "GS801",
    "an unpinned chart version",
    "A chart version that floats (`latest`, a range): the same blueprint installs different software over time.",
    "Pin an exact release.",
)

UNSUPPORTED_KUBERNETES = _cluster(
    "GS802",
    "a Kubernetes version outside the supported range",
    "`kubernetes.version` is outside the range gpustack supports.",
    "Target a supported version.",
)

NO_ADMISSION_POLICIES = _cluster(
    "GS803",
    "a Kubernetes version without ValidatingAdmissionPolicy",
    "The target Kubernetes has no ValidatingAdmissionPolicy (GA in 1.30): tenant isolation rests on taints alone.",
    "Upgrade to 1.30 or newer.",
)

MIG_WITHOUT_OPERATOR = _cluster(
    "GS804",
    "a MIG pool with stack: device-plugin (needs an existing GPU Operator's MIG manager)",
    "A MIG pool with `stack: device-plugin`: the standalone device plugin cannot partition GPUs, so the layout is "
    "applied only by a GPU Operator's MIG manager the cluster already runs.",
    "Set `spec.stack: gpu-operator` so gpustack installs the operator with the layouts, or run the GPU Operator in "
    "the MIG manager's namespace as `mig/README.md` says.",
)

SELECTOR_RANGE = _cluster(
    "GS805",
    "a selector pool's minNodes above its maxNodes",
    "A selector pool's `minNodes` is above its `maxNodes`: no node count satisfies both.",
    "Give the autoscaled node pool's real range: `minNodes` is the floor, `maxNodes` the ceiling.",
)

OPERATOR_CHART_SERIES = _cluster(
    "GS806",
    "a GPU Operator chart outside the v26.7.x line gpustack's values are checked against",
    "A GPU Operator chart outside the v26.7.x line: the values gpustack writes are checked against v26.7.0, and the "
    "chart silently ignores keys it does not know.",
    "Pin a v26.7.x release, or compare `gpu-operator/values.yaml` with that chart's values.yaml first.",
)

SHM_ABOVE_MEMORY = _workloads(
    "GS807",
    "a workload's /dev/shm larger than its pods' memory",
    "A workload's `shmSize` is above its pods' memory (given, or sized by gpustack): /dev/shm is an in-memory "
    "emptyDir, and what it holds counts against the pod's memory limit, so the pod is OOM-killed before /dev/shm "
    "reaches its size (NCCL and DataLoader workers fill it under load).",
    "Make `shmSize` smaller than `resources.memory`, leaving room for the process itself, or raise the memory.",
)

"""Every diagnostic code gpustack emits, with a one-line summary (the reference users search for)."""

from __future__ import annotations

CODES: dict[str, str] = {
    # loading (gpustack.load)
    "GS001": "the blueprint file cannot be read",
    "GS002": "the file is larger than the size cap",
    "GS003": "the file is not UTF-8 text",
    "GS004": "YAML syntax error",
    "GS005": "duplicate mapping key",
    "GS006": "YAML anchors and aliases are not allowed",
    "GS007": "custom YAML tags are not allowed",
    "GS008": "more than one YAML document",
    "GS009": "a mapping key that is not a string",
    "GS010": "nested deeper than the depth cap",
    "GS011": "empty document",
    # shape (gpustack.schema)
    "GS101": "unknown field",
    "GS102": "missing required field",
    "GS103": "wrong type",
    "GS104": "value not allowed",
    "GS105": "value has the wrong format",
    "GS106": "value out of range",
    "GS107": "duplicate items",
    "GS108": "fields that do not go together",
    # names and references (gpustack.checks.references)
    "GS201": "a name is defined twice",
    "GS202": "a namespace belongs to two tenants",
    "GS203": "a node is in two pools",
    "GS204": "a reference to a pool that does not exist",
    "GS205": "a reference to a tenant (or tenant namespace) that does not exist",
    "GS206": "a tenant claims a system namespace",
    # hardware (gpustack.checks.hardware)
    "GS301": "unknown GPU model",
    "GS302": "MIG on a GPU model without MIG",
    "GS303": "a MIG layout the GPU cannot make",
    "GS304": "single MIG strategy with more than one profile",
    "GS305": "MIG groups that do not cover each GPU exactly once",
    # sharing (gpustack.checks.sharing)
    "GS401": "MPS combined with MIG",
    "GS402": "time-slicing or MPS with fewer than 2 replicas",
    "GS403": "MPS replicas above the per-GPU client cap",
    "GS404": "time-slicing lets workloads oversubscribe GPU memory",
    "GS405": "MPS without GPU Feature Discovery",
    "GS406": "a pool sets a label gpustack owns",
    "GS409": "HAMi pools with different HAMi settings",
    "GS420": "a DRA pool with sharing the NVIDIA DRA driver cannot give to separate pods",
    "GS421": "a node in a DRA pool and in a pool a device plugin serves",
    "GS422": "DRA's resource.k8s.io API version is not served at the blueprint's Kubernetes version",
    "GS423": "DRA through a beta resource.k8s.io API (explicit opt-in before Kubernetes 1.34)",
    "GS424": "a DRA pool used through Kueue, Volcano or a VolcanoJob, which count extended resources",
    # tenancy (gpustack.checks.tenancy, gpustack.compile.tenants)
    "GS501": "a tenant quota above what the pool has",
    "GS502": "a quota on a resource the pool does not advertise",
    "GS503": "a quota on a pool the tenant is not allowed on",
    "GS504": "a workload on a pool its tenant is not allowed on",
    "GS505": "a tenant's templates need more than its quota (plus what a Kueue tenant may borrow)",
    "GS506": "quotas on pools that advertise the same resource name",
    "GS507": "a per-namespace quota repeated across a tenant's namespaces",
    "GS508": "a Kueue tenant's pool without nodeResources for the ClusterQueue's cpu and memory",
    "GS509": "a Volcano tenant named like a queue Volcano owns (default, root)",
    "GS510": "a Kueue tenant's pool with more taints than a ResourceFlavor holds",
    "GS511": "a Kueue lending limit above the tenant's nominal quota",
    # workloads (gpustack.checks.workloads, gpustack.compile.workloads)
    "GS601": "a GPU need the workload's pool cannot meet",
    "GS602": "CUDA_VISIBLE_DEVICES set by hand",
    "GS603": "more than one shared GPU per pod where the pool forbids it",
    "GS604": "a VolcanoJob for a tenant that does not use Volcano",
    "GS605": "a workload template file cannot be read, or its path leads out of the blueprint's folder",
    "GS606": "a workload template does not render to a valid object",
    "GS607": "a VolcanoJob on a HAMi pool",
    # isolation (gpustack.checks.isolation)
    "GS701": "an nvidia.com/gpu taint on a tenant-dedicated pool",
    "GS702": "a NoExecute taint",
    "GS703": "a HAMi pool shared by tenants: its isolation is bypassable",
    "GS704": "pools of different tenants share a taint",
    # cluster (gpustack.checks.cluster)
    "GS801": "an unpinned chart version",
    "GS802": "a Kubernetes version outside the supported range",
    "GS803": "a Kubernetes version without ValidatingAdmissionPolicy",
    # output (gpustack.write)
    "GS901": "the output directory cannot be replaced safely",
    # rollout (gpustack.rollout)
    "GS951": "a rollout wave leaves tenants below their guaranteed quota",
}

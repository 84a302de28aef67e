"""The Kubernetes-limit shape: the largest cluster Kubernetes documents (5,000 nodes, 150,000 pods) at 10x.

Kubernetes' "Considerations for large clusters" caps a cluster at 5,000 nodes, 150,000 pods in all and 110 pods
per node. `kube_limit(scale)` writes a blueprint and a cluster snapshot (as `kubectl get nodes,pods -A -o yaml`
prints it) that reach those limits at scale 10, for `gpustack simulate BP --cluster SNAP`:

- 25 * scale pools of 20 nodes (10x: 250 pools, 5,000 nodes), five kinds in turn, ten of each per 1x:
  H100 whole GPUs (two Deployments that ask for 180 GPUs of 160: 20 pods stay pending, FailedScheduling and its
  hints in the figure), H100 Volcano gangs (two VolcanoJobs of 10 eight-GPU workers), A100 MIG (1g.10gb x 7 per
  GPU: two Deployments of 560 pods fill the pool's 1,120 slices), time-sliced L4 (8 replicas per GPU: a Deployment
  and a StatefulSet of 320 pods each) and time-sliced L40S (the same, on the other product);
- 50 * scale tenants (10x: 500), two per pool, each with a quota on its pool's GPUs (the whole pool's count on
  whole-GPU pools, `unlimited` on shared ones);
- the snapshot: every node as the cluster shows it (allocatable cpu, memory, 110 pod slots) with 4 running
  CPU pods bound to it (logging, metrics, the GPU operator's validator, a node agent): 20,000 at 10x.

Pods: 2,600 per 100 nodes from the blueprint plus 400 bound by the snapshot, so 3,000 per 100 nodes: 150,000 at
10x, 15,000 at 1x, linear in scale. The text is written by hand, not by gpustack's writer, so the benchmark does
not depend on the code it times.
"""

from __future__ import annotations

NODES_PER_POOL = 20
POOLS_PER_SCALE = 25
RUNNING_PER_NODE = 4
# kind, model, gpus per node, sharing ("" for none), per workload: (kind, replicas or workers, request); each pod's
# memory is its GPU memory (GS608 warns below it)
POOL_KINDS = (
    ("h100", "H100-SXM5-80GB", 8, "", (("Deployment", 90, "{count: 1}"), ("Deployment", 90, "{count: 1}"))),
    ("gang", "H100-SXM5-80GB", 8, "", (("VolcanoJob", 10, "{count: 8}"), ("VolcanoJob", 10, "{count: 8}"))),
    (
        "mig",
        "A100-SXM4-80GB",
        8,
        "{strategy: mig, mig: {strategy: single, layout: {1g.10gb: 7}}}",
        (("Deployment", 560, "{profile: 1g.10gb}"), ("Deployment", 560, "{profile: 1g.10gb}")),
    ),
    (
        "l4",
        "L4",
        4,
        "{strategy: time-slicing, timeSlicing: {replicas: 8}}",
        (("Deployment", 320, "{count: 1}"), ("StatefulSet", 320, "{count: 1}")),
    ),
    (
        "l40s",
        "L40S",
        4,
        "{strategy: time-slicing, timeSlicing: {replicas: 8}}",
        (("Deployment", 320, "{count: 1}"), ("StatefulSet", 320, "{count: 1}")),
    ),
)
MEMORY = {"h100": "80Gi", "gang": "640Gi", "mig": "10Gi", "l4": "24Gi", "l40s": "48Gi"}  # a pod's GPU memory
AGENTS = (  # the pods every node runs before any workload: name, namespace, cpu, memory
    ("fluent-bit", "logging", "100m", "128Mi"),
    ("node-exporter", "monitoring", "100m", "64Mi"),
    ("gpu-validator", "gpu-operator", "50m", "64Mi"),
    ("node-agent", "kube-system", "200m", "256Mi"),
)


def pool_name(pool: int) -> str:
    return f"{POOL_KINDS[pool % len(POOL_KINDS)][0]}-{pool:04d}"


def node_name(pool: int, index: int) -> str:
    return f"{pool_name(pool)}-{index:02d}"


def kube_limit(scale: int) -> tuple[str, str]:
    """The blueprint and the cluster snapshot at `scale` (10: 5,000 nodes, 150,000 pods, 500 tenants)."""
    return kube_limit_blueprint(scale), kube_limit_snapshot(scale)


def kube_limit_blueprint(scale: int) -> str:
    pools = POOLS_PER_SCALE * scale
    lines = [
        "apiVersion: gpustack.io/v1alpha1",
        "kind: ClusterBlueprint",
        f"metadata: {{name: kube-limit-{scale}x}}",
        "spec:",
        '  kubernetes: {version: "1.33"}',
        "  nodePools:",
    ]
    for pool in range(pools):
        _, model, gpus, sharing, _ = POOL_KINDS[pool % len(POOL_KINDS)]
        name = pool_name(pool)
        lines += [
            f"    - name: {name}",
            f"      gpu: {{model: {model}, count: {gpus}}}",
            f"      nodes: [{', '.join(node_name(pool, n) for n in range(NODES_PER_POOL))}]",
            "      nodeResources: {cpu: '192', memory: 2000Gi}",
            f"      labels: {{zone: zone-{pool % 3}}}",
            f"      taints: [{{key: gpustack.io/pool, value: {name}, effect: NoSchedule}}]",
        ]
        if sharing:
            lines.append(f"      sharing: {sharing}")
    lines.append("  tenants:")
    for pool in range(pools):
        kind, _, gpus, sharing, _ = POOL_KINDS[pool % len(POOL_KINDS)]
        scheduler = ", scheduler: volcano" if kind == "gang" else ""
        for half in range(2):
            tenant = f"t-{pool:04d}-{half}"
            # Each tenant may take the pool's whole GPU count: the pool's own size is what keeps pods pending. A shared
            # pool's tenants take it unlimited (a granted pool with no quota entry is closed to its tenant: GS610).
            amount = "unlimited" if sharing else f"{{gpu: {gpus * NODES_PER_POOL}}}"
            lines.append(
                f"    - {{name: {tenant}, namespaces: [{tenant}], pools: [{pool_name(pool)}]{scheduler}, "
                f"quota: {{{pool_name(pool)}: {amount}}}}}"
            )
    lines.append("  workloads:")
    for pool in range(pools):
        kind_name, _, _, _, workloads = POOL_KINDS[pool % len(POOL_KINDS)]
        for half, (kind, count, request) in enumerate(workloads):
            tenant = f"t-{pool:04d}-{half}"
            size = f"workers: {count}" if kind == "VolcanoJob" else f"replicas: {count}"
            cpu = "8" if kind == "VolcanoJob" else "1"
            memory = MEMORY[kind_name]
            lines.append(
                f"    - {{name: w-{pool:04d}-{half}, tenant: {tenant}, pool: {pool_name(pool)}, kind: {kind}, "
                f"{size}, image: bench/{kind_name}:1, gpu: {request}, resources: {{cpu: '{cpu}', memory: {memory}}}}}"
            )
    return "\n".join(lines) + "\n"


def kube_limit_snapshot(scale: int) -> str:
    """Every blueprint node as the cluster lists it, each with its agents' pods running."""
    rows = ["apiVersion: v1\nkind: List\nitems:\n"]
    for pool in range(POOLS_PER_SCALE * scale):
        _, _, gpus, _, _ = POOL_KINDS[pool % len(POOL_KINDS)]
        for index in range(NODES_PER_POOL):
            name = node_name(pool, index)
            rows.append(
                f"- {{kind: Node, apiVersion: v1, metadata: {{name: {name}, "
                f"labels: {{kubernetes.io/hostname: {name}}}}}, "
                f'status: {{allocatable: {{cpu: "190", memory: 1990Gi, pods: "110", nvidia.com/gpu: "{gpus}"}}}}}}\n'
            )
            for agent, namespace, cpu, memory in AGENTS:
                rows.append(
                    f"- {{kind: Pod, apiVersion: v1, metadata: {{name: {agent}-{name}, namespace: {namespace}}}, "
                    f"spec: {{nodeName: {name}, containers: [{{name: main, resources: {{requests: {{cpu: {cpu}, "
                    f"memory: {memory}}}}}}}]}}, status: {{phase: Running}}}}\n"
                )
    return "".join(rows)


def kube_nodes(scale: int) -> int:
    return POOLS_PER_SCALE * scale * NODES_PER_POOL


def kube_pods(scale: int) -> int:
    """Pods in the shape at `scale`: the blueprint's replicas and workers and the snapshot's running pods."""
    nodes = kube_nodes(scale)
    per_cycle = sum(count for *_, workloads in POOL_KINDS for _, count, _ in workloads)
    return per_cycle * POOLS_PER_SCALE * scale // len(POOL_KINDS) + RUNNING_PER_NODE * nodes

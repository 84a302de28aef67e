"""Cluster snapshots for bench/run.py's `cluster` stage: what `kubectl get nodes,pods,resourcequotas,namespaces -A
-o yaml` prints for a large GPU cluster, at 10x just under the 8 MiB snapshot cap.

Per 1x: 100 pools of 13 nodes (1,300 nodes, one running GPU pod each) and 5 tenants with a quota. Half the pools
are GKE node pools (import makes selector pools of them); the other half carry only GFD's labels and a taint of
their own, so import tells them apart by taint and names them all after one hint (`h100`, `h100-2`, ...): the
review's N7 shape, where import was quadratic in pools.
"""

from __future__ import annotations

NODES_PER_POOL = 13
POOLS_PER_SCALE = 100
TENANTS_PER_SCALE = 5


def cluster_snapshot(scale: int) -> str:
    pools, tenants = POOLS_PER_SCALE * scale, TENANTS_PER_SCALE * scale
    rows = ["apiVersion: v1\nkind: List\nitems:\n"]
    for tenant in range(tenants):
        rows.append(f"- {{kind: Namespace, apiVersion: v1, metadata: {{name: team-{tenant}}}}}\n")
        rows.append(
            f"- {{kind: ResourceQuota, apiVersion: v1, metadata: {{name: gpu, namespace: team-{tenant}}}, "
            f'spec: {{hard: {{requests.nvidia.com/gpu: "{8 * NODES_PER_POOL * pools // tenants}"}}}}}}\n'
        )
    for pool in range(pools):
        cloud = pool % 2 == 0
        for index in range(NODES_PER_POOL):
            name = f"p{pool}-{index}"
            labels = f"cloud.google.com/gke-nodepool: gke-{pool}, " if cloud else ""
            taints = "" if cloud else f", spec: {{taints: [{{key: dedicated, value: p{pool}, effect: NoSchedule}}]}}"
            rows.append(
                f"- {{kind: Node, apiVersion: v1, metadata: {{name: {name}, labels: {{{labels}"
                f"kubernetes.io/hostname: {name}, nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3, "
                'nvidia.com/gpu.count: "8", '
                "nvidia.com/mig.config: all-disabled}}" + taints + ", status: {allocatable: {cpu: 200, memory: 2000Gi, "
                'pods: "110", nvidia.com/gpu: "8"}, nodeInfo: {kubeletVersion: v1.33.2}}}\n'
            )
            tolerations = "" if cloud else f", tolerations: [{{key: dedicated, value: p{pool}, effect: NoSchedule}}]"
            rows.append(
                f"- {{kind: Pod, apiVersion: v1, metadata: {{name: w-{name}, namespace: team-{pool % tenants}}}, "
                f"spec: {{nodeName: {name}{tolerations}, containers: [{{name: main, resources: {{limits: "
                '{nvidia.com/gpu: "4"}}}]}, status: {phase: Running}}\n'
            )
    return "".join(rows)

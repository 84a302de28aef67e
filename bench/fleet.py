"""Generated blueprints in the shapes real fleets have, for the benchmarks.

- `many_pools(scale)`: 100 pools of 10 nodes, 50 tenants that each own two pools and run one workload,
  times `scale` (1x: 100 pools, 1,000 nodes, 50 tenants, 50 workloads; 10x: 1,000 / 10,000 / 500 / 500).
  Pods equal nodes; one workload in ten asks for 38 pods of 48 CPUs from 10 nodes of 96 CPUs, so the failure
  path (FailedScheduling histograms, hints) is part of every figure. `many_pools(scale, oversubscribed=False)`
  is the same fleet with every pod placed (the `many-pools-fit` shape).
- `few_pools(scale)`: today's few-large-pools shape, 10 pools of 100 nodes times `scale`
  (bench_simulate.POOLS), with a Volcano tenant's gangs.

The text is written by hand, not by gpustack's writer, so the benchmarks do not depend on the code they time.
"""

from __future__ import annotations

SHARINGS = (  # model, gpus per node, sharing flow mapping ("" for none), request
    ("H100-SXM5-80GB", 8, "", "{count: 1}"),
    (
        "A100-SXM4-80GB",
        8,
        "{strategy: mig, mig: {strategy: mixed, layout: {3g.40gb: 1, 2g.20gb: 1, 1g.10gb: 2}}}",
        "{profile: 1g.10gb}",
    ),
    ("L4", 4, "{strategy: time-slicing, timeSlicing: {replicas: 4}}", "{count: 1}"),
    ("L40S", 4, "{strategy: mps, mps: {replicas: 4}}", "{count: 1}"),
)
NODES_PER_POOL = 10
PODS_PER_WORKLOAD = 18
OVERSUBSCRIBED_EVERY = 10  # one workload in ten asks for more than its pool holds
OVERSUBSCRIBED_PODS = 38  # 9 * 18 + 38 = 200 pods per 10 workloads: as many pods as nodes


def many_pools(scale: int, oversubscribed: bool = True) -> str:
    """100 * scale pools of 10 nodes, 50 * scale tenants owning two pools each, one workload per tenant.

    oversubscribed=False: no workload asks for more than its pool holds, so every pod is placed (many-pools-fit).
    """
    pools, tenants = 100 * scale, 50 * scale
    lines = [
        "apiVersion: gpustack.io/v1alpha1",
        "kind: ClusterBlueprint",
        f"metadata: {{name: fleet-{scale}x}}",
        "spec:",
        '  kubernetes: {version: "1.31"}',
        "  nodePools:",
    ]
    for p in range(pools):
        model, gpus, sharing, _ = SHARINGS[p % len(SHARINGS)]
        nodes = ", ".join(f"node-{p:04d}-{n:02d}" for n in range(NODES_PER_POOL))
        lines += [
            f"    - name: pool-{p:04d}",
            f"      gpu: {{model: {model}, count: {gpus}}}",
            f"      nodes: [{nodes}]",
            "      nodeResources: {cpu: '96', memory: 1Ti}",
            f"      labels: {{team: team-{p % 7}, zone: zone-{p % 3}}}",
            f"      taints: [{{key: gpustack.io/pool, value: pool-{p:04d}, effect: NoSchedule}}]",
        ]
        if sharing:
            lines.append(f"      sharing: {sharing}")
    lines.append("  tenants:")
    for t in range(tenants):
        owned = [f"pool-{2 * t + i:04d}" for i in range(2)]
        quota = f"{owned[0]}: {{gpu: 80}}"  # pools sharing one resource name cannot have separate quotas
        lines.append(
            f"    - {{name: tenant-{t:04d}, namespaces: [ns-{t:04d}], pools: [{', '.join(owned)}], quota: {{{quota}}}}}"
        )
    lines.append("  workloads:")
    for t in range(tenants):
        pool = f"pool-{2 * t:04d}"
        _, _, _, request = SHARINGS[(2 * t) % len(SHARINGS)]
        replicas, cpu = PODS_PER_WORKLOAD, 4
        if (
            oversubscribed and t % OVERSUBSCRIBED_EVERY == OVERSUBSCRIBED_EVERY - 2
        ):  # an H100 pool: room for 20 such pods
            replicas, cpu = OVERSUBSCRIBED_PODS, 48
        lines.append(
            f"    - {{name: serve-{t:04d}, tenant: tenant-{t:04d}, pool: {pool}, kind: Deployment, "
            f"replicas: {replicas}, image: example/model:1, gpu: {request}, "
            f"resources: {{cpu: '{cpu}', memory: 16Gi}}, serve: {{port: 8080}}}}"
        )
    return "\n".join(lines) + "\n"


POOLS = (  # name, model, gpus per node, sharing block, pods per 100 nodes, request, kind
    ("h100-a", "H100-SXM5-80GB", 8, "", 150, "{count: 4}", "Deployment"),
    ("h100-b", "H100-SXM5-80GB", 8, "", 220, "{count: 4}", "Deployment"),  # asks for 110%: pending pods
    ("h100-c", "H100-SXM5-80GB", 8, "", 50, "{count: 8}", "VolcanoJob"),
    ("h100-d", "H100-SXM5-80GB", 8, "", 120, "{count: 8}", "VolcanoJob"),  # a gang that fits only partly
    (
        "a100-mig-a",
        "A100-SXM4-80GB",
        8,
        "{strategy: mig, mig: {strategy: mixed, layout: {3g.40gb: 2}}}",
        100,
        "{profile: 3g.40gb}",
        "Deployment",
    ),
    (
        "a100-mig-b",
        "A100-SXM4-80GB",
        8,
        "{strategy: mig, mig: {strategy: mixed, layout: {3g.40gb: 2}}}",
        100,
        "{profile: 3g.40gb}",
        "Deployment",
    ),
    ("l4-ts-a", "L4", 4, "{strategy: time-slicing, timeSlicing: {replicas: 4}}", 60, "{count: 1}", "Deployment"),
    ("l4-ts-b", "L4", 4, "{strategy: time-slicing, timeSlicing: {replicas: 4}}", 60, "{count: 1}", "StatefulSet"),
    ("l40s-mps-a", "L40S", 4, "{strategy: mps, mps: {replicas: 4}}", 70, "{count: 1}", "Deployment"),
    ("l40s-mps-b", "L40S", 4, "{strategy: mps, mps: {replicas: 4}}", 70, "{count: 1}", "Deployment"),
)  # pods per 100 nodes sum to 1,000: at every scale, as many pods as nodes


def few_pools(scale: int) -> str:
    """Today's shape: 10 pools of 100 * scale nodes, one tenant per pool, as many pods as nodes."""
    nodes_per_pool = 100 * scale
    lines = [
        "apiVersion: gpustack.io/v1alpha1",
        "kind: ClusterBlueprint",
        f"metadata: {{name: bench-{scale}x}}",
        "spec:",
        '  kubernetes: {version: "1.34"}',
        "  nodePools:",
    ]
    for name, model, gpus, sharing, _, _, _ in POOLS:
        nodes = ", ".join(f"{name}-{i:05d}" for i in range(nodes_per_pool))
        lines += [
            f"    - name: {name}",
            f"      gpu: {{model: {model}, count: {gpus}}}",
            f"      nodes: [{nodes}]",
            "      nodeResources: {cpu: '96', memory: 1Ti}",
            f"      taints: [{{key: gpustack.io/pool, value: {name}, effect: NoSchedule}}]",
        ]
        if sharing:
            lines.append(f"      sharing: {sharing}")
    lines.append("  tenants:")
    for name, _, _, _, _, _, kind in POOLS:
        scheduler = "volcano" if kind == "VolcanoJob" else "default"
        lines.append(f"    - {{name: t-{name}, namespaces: [t-{name}], pools: [{name}], scheduler: {scheduler}}}")
    lines.append("  workloads:")
    for name, _, _, _, pods, request, kind in POOLS:
        count = pods * scale
        size = f"workers: {count}" if kind == "VolcanoJob" else f"replicas: {count}"
        lines.append(
            f"    - {{name: w-{name}, tenant: t-{name}, pool: {name}, kind: {kind}, {size}, "
            f"image: bench/{name}:1, gpu: {request}, resources: {{cpu: '4', memory: 32Gi}}}}"
        )
    return "\n".join(lines) + "\n"


def grown(text: str) -> str:
    """The same blueprint with one more node in its first pool: what `gpustack diff` reviews."""
    first = text.index("      nodes: [") + len("      nodes: [")
    return text[:first] + "added-node-0, " + text[first:]

"""A large, valid blueprint for benchmarks: `pools` pools of 10 nodes, `tenants` tenants, 2 workloads each."""

from __future__ import annotations

from gpustack.yamlout import dump_yaml

MODELS = [
    (
        "A100-SXM4-80GB",
        {"strategy": "mig", "mig": {"strategy": "mixed", "layout": {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2}}},
    ),
    ("H100-SXM5-80GB", {"strategy": "none"}),
    ("L4", {"strategy": "time-slicing", "timeSlicing": {"replicas": 4}}),
    ("L40S", {"strategy": "mps", "mps": {"replicas": 4}}),
]


def blueprint(pools: int = 1000, tenants: int = 500, nodes_per_pool: int = 10) -> str:
    node_pools = []
    for p in range(pools):
        model, sharing = MODELS[p % len(MODELS)]
        node_pools.append(
            {
                "name": f"pool-{p}",
                "gpu": {"model": model, "count": 8},
                "nodes": [f"node-{p}-{n}" for n in range(nodes_per_pool)],
                "labels": {"gpu-pool": f"pool-{p}"},
                "taints": [{"key": "gpustack.io/pool", "value": f"pool-{p}", "effect": "NoSchedule"}],
                "sharing": sharing,
            }
        )
    tenant_list = []
    workloads = []
    for t in range(tenants):
        owned = [f"pool-{(2 * t + i) % pools}" for i in range(2)]
        quota: dict[str, dict[str, int]] = {}
        for pool_name in owned:
            model, sharing = MODELS[int(pool_name.split("-")[1]) % len(MODELS)]
            quota[pool_name] = {"mig-1g.10gb": 4} if sharing["strategy"] == "mig" else {"gpu": 8}
        tenant_list.append({"name": f"tenant-{t}", "namespaces": [f"ns-{t}"], "pools": owned, "quota": quota})
        for i, pool_name in enumerate(owned):
            _, sharing = MODELS[int(pool_name.split("-")[1]) % len(MODELS)]
            gpu = {"profile": "1g.10gb"} if sharing["strategy"] == "mig" else {"count": 1}
            workloads.append(
                {
                    "name": f"w-{t}-{i}",
                    "tenant": f"tenant-{t}",
                    "pool": pool_name,
                    "kind": "Deployment",
                    "replicas": 2,
                    "image": "example/model:1",
                    "gpu": gpu,
                    "resources": {"cpu": "4", "memory": "16Gi"},
                    "serve": {"port": 8080},
                }
            )
    document = {
        "apiVersion": "gpustack.io/v1alpha1",
        "kind": "ClusterBlueprint",
        "metadata": {"name": "bench"},
        "spec": {
            "kubernetes": {"version": "1.31"},
            "nodePools": node_pools,
            "tenants": tenant_list,
            "workloads": workloads,
        },
    }
    return dump_yaml(document)

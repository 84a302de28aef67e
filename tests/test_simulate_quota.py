"""ResourceQuota admission in the API server's own words."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gpustack.model import WorkloadKind
from gpustack.simulate.demand import Pod, Source
from gpustack.simulate.pods import PodShape
from gpustack.simulate.quota import QuotaLedger, format_quantity, quotas_from
from gpustack.simulate.simulation import failed_create


def quota(hard: dict[str, str], namespace: str = "ml", name: str = "gpustack-gpu-quota", **spec: object) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"hard": hard, **spec},
    }


def pod(name: str, requests: dict[str, int], namespace: str = "ml", priority_class: str | None = None) -> Pod:
    shape = PodShape(requests=tuple(sorted(requests.items())), priority_class=priority_class)
    return Pod(name, namespace, shape, 0, False, Source(None))


def test_exceeded_quota_wording() -> None:
    ledger = QuotaLedger(quotas_from([quota({"requests.nvidia.com/gpu": "8"})]))
    for index in range(8):
        assert ledger.admit(pod(f"p-{index}", {"nvidia.com/gpu": 1})) is None
    refused = ledger.admit(pod("p-8", {"nvidia.com/gpu": 1}))
    assert refused is not None
    assert refused.message == (
        'pods "p-8" is forbidden: exceeded quota: gpustack-gpu-quota, requested: requests.nvidia.com/gpu=1, '
        "used: requests.nvidia.com/gpu=8, limited: requests.nvidia.com/gpu=8"
    )


def test_only_exceeded_resources_are_listed_sorted_and_comma_joined() -> None:
    hard = {"requests.nvidia.com/gpu": "1", "requests.cpu": "4", "requests.memory": "64Gi", "pods": "10"}
    ledger = QuotaLedger(quotas_from([quota(hard)]))
    refused = ledger.admit(pod("big", {"nvidia.com/gpu": 2, "cpu": 16000, "memory": 2**30}))
    assert refused is not None
    assert refused.message == (
        'pods "big" is forbidden: exceeded quota: gpustack-gpu-quota, '
        "requested: requests.cpu=16,requests.nvidia.com/gpu=2, used: requests.cpu=0,requests.nvidia.com/gpu=0, "
        "limited: requests.cpu=4,requests.nvidia.com/gpu=1"
    )


def test_a_refused_pod_uses_nothing() -> None:
    ledger = QuotaLedger(quotas_from([quota({"requests.nvidia.com/gpu": "1"})]))
    assert ledger.admit(pod("a", {"nvidia.com/gpu": 2})) is not None
    assert ledger.admit(pod("b", {"nvidia.com/gpu": 1})) is None


def test_other_namespaces_and_resources_are_not_counted() -> None:
    ledger = QuotaLedger(quotas_from([quota({"requests.nvidia.com/gpu": "0"})]))
    assert ledger.admit(pod("a", {"nvidia.com/gpu": 1}, namespace="other")) is None
    assert ledger.admit(pod("b", {"nvidia.com/mig-1g.10gb": 1})) is None


def test_priority_class_scope() -> None:
    scoped = quota(
        {"requests.nvidia.com/gpu": "0"},
        scopeSelector={"matchExpressions": [{"scopeName": "PriorityClass", "operator": "In", "values": ["gpu-prod"]}]},
    )
    ledger = QuotaLedger(quotas_from([scoped]))
    assert ledger.admit(pod("a", {"nvidia.com/gpu": 1}, priority_class="gpu-dev")) is None
    assert ledger.admit(pod("b", {"nvidia.com/gpu": 1}, priority_class="gpu-prod")) is not None


def test_canonical_quantities() -> None:
    assert format_quantity("requests.cpu", 500) == "500m"
    assert format_quantity("limits.cpu", 8000) == "8"
    assert format_quantity("requests.memory", 64 * 2**30) == "64Gi"
    assert format_quantity("memory", 1536 * 2**20) == "1536Mi"
    assert format_quantity("requests.memory", 1000) == "1000"
    assert format_quantity("requests.nvidia.com/gpu", 3) == "3"


def test_failed_create_is_worded_by_the_pods_creator() -> None:
    refusal = 'pods "p-0" is forbidden: exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1'

    class Stub:
        def __init__(self, kind: WorkloadKind) -> None:
            self.kind, self.name = kind, "w"

    raw = pod("p-0", {"nvidia.com/gpu": 1})
    assert failed_create(raw, refusal) == refusal, "a pod created directly: the API server's words"
    # A ReplicaSet's pod is named `<replicaset>-<suffix>` (the hash unknown without a snapshot); a StatefulSet words
    # its own event (tests/test_simulate_cluster_fidelity.py has the cases).
    deployment = raw._replace(source=Source(Stub(WorkloadKind.DEPLOYMENT)))  # type: ignore[arg-type]
    assert failed_create(deployment, refusal) == "Error creating: " + refusal.replace('"p-0"', '"p-<hash>-0"')
    job = raw._replace(source=Source(Stub(WorkloadKind.JOB)))  # type: ignore[arg-type]
    assert failed_create(job, refusal) == f"Error creating: {refusal}"
    statefulset = raw._replace(source=Source(Stub(WorkloadKind.STATEFUL_SET)))  # type: ignore[arg-type]
    assert failed_create(statefulset, refusal) == f"create Pod p-0 in StatefulSet p failed error: {refusal}"
    volcano = raw._replace(source=Source(Stub(WorkloadKind.VOLCANO_JOB)))  # type: ignore[arg-type]
    assert failed_create(volcano, refusal) == refusal


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["requests.nvidia.com/gpu", "requests.cpu", "pods", "limits.memory"]),
        st.integers(0, 40),
        min_size=1,
    ),
    st.lists(st.integers(0, 6), min_size=0, max_size=3),
    st.integers(1, 4),
    st.integers(0, 30),
)
def test_pods_alike_are_admitted_at_once_as_one_after_another(
    hard: dict[str, int], earlier: list[int], gpus: int, count: int
) -> None:
    """simulate admits a workload's replicas at once (`admit_alike`): the same pods admitted, the same use counted,
    as admitting them one by one, whatever the quota already holds."""
    quotas = quotas_from([quota({key: str(limit) for key, limit in hard.items()})])
    alike, one_by_one = QuotaLedger(quotas), QuotaLedger(quotas)
    for index, amount in enumerate(earlier):  # what other workloads hold already
        for ledger in (alike, one_by_one):
            ledger.admit(pod(f"before-{index}", {"nvidia.com/gpu": amount, "cpu": 500}))
    shape = pod("p", {"nvidia.com/gpu": gpus, "cpu": 1000}).shape
    replicas = [Pod(f"p-{index}", "ml", shape, 0, False, Source(None)) for index in range(count)]
    admitted = alike.admit_alike(replicas[0], count) if replicas else 0
    expected = sum(1 for replica in replicas if one_by_one.admit(replica) is None)
    assert admitted == expected
    assert alike.used == one_by_one.used
    assert all(one_by_one.admit(replica) is not None for replica in replicas[admitted:])

"""The planner's rules on their own: wave sizes, bridge chart values, quota cuts, capacity arithmetic."""

from __future__ import annotations

import pytest

from gpustack.plan import Manifest
from gpustack.rollout.objects import bridge_values, shrinks
from gpustack.rollout.planner import MaxUnavailableError, wave_size


@pytest.mark.parametrize(
    ("given", "nodes", "size"),
    [
        (None, 1, 1),
        (None, 9, 1),  # 10 % of 9 rounds down to 0: still one node
        (None, 25, 2),
        (None, 100, 10),
        ("3", 2, 3),
        ("25%", 10, 2),  # rounded down, like a Deployment's maxUnavailable
        ("100%", 7, 7),
        ("1%", 5, 1),
    ],
)
def test_wave_size(given: str | None, nodes: int, size: int) -> None:
    assert wave_size(given, nodes) == size


@pytest.mark.parametrize("given", ["0", "0%", "101%", "-2", "2.5", "ten", ""])
def test_bad_wave_size(given: str) -> None:
    with pytest.raises(MaxUnavailableError):
        wave_size(given, 10)


def test_bridge_values_serve_old_and_new_nodes() -> None:
    def values(configs: dict[str, str], pools: list[str], tolerations: list[dict[str, str]]) -> dict[str, object]:
        terms = {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "gpustack.io/pool", "operator": "In", "values": pools}]}
            ]
        }
        return {
            "config": {"map": configs, "default": "default"},
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": terms}},
            "tolerations": tolerations,
        }

    old = values({"default": "a", "time-slicing-2": "b"}, ["l4", "gone"], [{"key": "x", "operator": "Exists"}])
    new = values({"default": "a", "time-slicing-4": "c"}, ["l4"], [{"key": "y", "operator": "Exists"}])
    bridged = bridge_values(old, new)
    assert bridged["config"] == {
        "map": {"default": "a", "time-slicing-4": "c", "time-slicing-2": "b"},
        "default": "default",
    }
    pools = bridged["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]  # type: ignore[index]
    assert pools["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == ["l4", "gone"]
    assert bridged["tolerations"] == [{"key": "y", "operator": "Exists"}, {"key": "x", "operator": "Exists"}]
    assert new["config"] == {"map": {"default": "a", "time-slicing-4": "c"}, "default": "default"}  # not mutated


def quota(hard: dict[str, str]) -> Manifest:
    obj = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "q", "namespace": "n"},
        "spec": {"hard": hard},
    }
    return Manifest("tenants", "tenants/q.yaml", obj)


def test_a_quota_shrinks_when_an_amount_drops_or_goes() -> None:
    base = quota({"requests.nvidia.com/gpu": "4", "requests.memory": "64Gi"})
    assert not shrinks(base, quota({"requests.nvidia.com/gpu": "8", "requests.memory": "64Gi"}))
    assert shrinks(base, quota({"requests.nvidia.com/gpu": "2", "requests.memory": "64Gi"}))
    assert shrinks(base, quota({"requests.nvidia.com/gpu.shared": "16", "requests.memory": "64Gi"}))
    assert shrinks(base, quota({"requests.nvidia.com/gpu": "4", "requests.memory": "32Gi"}))

"""A Kueue tenant's ResourceQuota is a ceiling behind its ClusterQueue: it never refuses what Kueue admits on borrowed
quota, and GS505 and `gpustack capacity` count what the tenant may borrow."""

from __future__ import annotations

from typing import Any

from builders import blueprint, context, sourceless

from gpustack.capacity import measure_capacity
from gpustack.checks import run_checks
from gpustack.codes import DEMAND_ABOVE_QUOTA
from gpustack.compile.tenants import quota_hard
from gpustack.model import Blueprint

GPU = "requests.nvidia.com/gpu"
A100: dict[str, Any] = {
    "name": "a100",
    "gpu": {"model": "A100-SXM4-80GB", "count": 8},
    "nodes": ["a1", "a2"],
    "nodeResources": {"cpu": "96", "memory": "1Ti"},
}
H100: dict[str, Any] = {
    "name": "h100",
    "gpu": {"model": "H100-SXM5-80GB", "count": 8},
    "nodes": ["h1", "h2"],
    "nodeResources": {"cpu": "192", "memory": "2Ti"},
}


def tenant(name: str, quota: dict[str, Any], cohort: dict[str, Any] | None, scheduler: str = "kueue") -> dict:
    data: dict[str, Any] = {"name": name, "namespaces": [name], "pools": ["a100", "h100"], "quota": quota}
    if scheduler != "default":
        data["scheduler"] = scheduler
    if cohort is not None:
        data["kueue"] = {"cohort": {"name": "gpu-org", **cohort}}
    return data


def job(tenant_name: str, pool: str, pods: int) -> dict[str, Any]:
    return {
        "name": f"{tenant_name}-{pool}",
        "tenant": tenant_name,
        "pool": pool,
        "kind": "Job",
        "replicas": pods,
        "image": "train:1",
        "gpu": {"count": 4},
    }


def sample(*tenants: dict[str, Any], workloads: tuple[dict[str, Any], ...] = ()) -> Blueprint:
    return blueprint(A100, H100, tenants=list(tenants), workloads=list(workloads))


def hard(bp: Blueprint, name: str) -> dict[str, int]:
    tenant = bp.tenant(name)
    assert tenant is not None
    return quota_hard(context(bp), tenant)


def codes(bp: Blueprint, code: str) -> list[str]:
    return [d.message for d in run_checks(sourceless(bp)) if d.code == code]


def test_a_borrowing_kueue_tenants_quota_is_nominal_plus_its_borrowing_limits() -> None:
    limited = {"borrowingLimit": {"a100": {"gpu": 2}, "h100": {"gpu": 4}}}
    bp = sample(tenant("team-a", {"a100": {"gpu": 8}, "h100": {"gpu": 0}}, limited))
    assert hard(bp, "team-a") == {GPU: (8 + 2) + (0 + 4)}


def test_unlimited_borrowing_lets_the_tenant_reach_the_whole_pool() -> None:
    # No borrowingLimit on a100: Kueue lets the tenant borrow all the cohort has unused there, up to the pool's 16.
    bp = sample(tenant("team-a", {"a100": {"gpu": 8}, "h100": {"gpu": 0}}, {"borrowingLimit": {"h100": {"gpu": 4}}}))
    assert hard(bp, "team-a") == {GPU: 16 + 4}


def test_without_a_cohort_or_kueue_the_quota_is_the_nominal_amount() -> None:
    bp = sample(
        tenant("solo", {"a100": {"gpu": 8}, "h100": {"gpu": 2}}, None),
        tenant("plain", {"a100": {"gpu": 8}, "h100": {"gpu": 2}}, None, scheduler="default"),
    )
    assert hard(bp, "solo") == {GPU: 10}
    assert hard(bp, "plain") == {GPU: 10}


def test_a_kueue_pool_whose_quota_is_unlimited_counts_in_full() -> None:
    # The ClusterQueue gives an unlimited pool's resource the whole pool: the shared nvidia.com/gpu quota must leave
    # room for it. A pool with no quota entry is closed: its nominal 0 adds nothing.
    bp = sample(tenant("solo", {"a100": {"gpu": 8}, "h100": "unlimited"}, None))
    assert hard(bp, "solo") == {GPU: 8 + 16}
    assert hard(sample(tenant("solo", {"a100": {"gpu": 8}}, None)), "solo") == {GPU: 8}


def test_gs505_is_silent_when_nominal_plus_borrowing_covers_the_templates() -> None:
    borrowing = {"borrowingLimit": {"h100": {"gpu": 4}}}
    covered = sample(
        tenant("team-a", {"a100": {"gpu": 8}, "h100": {"gpu": 0}}, borrowing), workloads=(job("team-a", "h100", 1),)
    )
    assert codes(covered, DEMAND_ABOVE_QUOTA) == []
    over = sample(
        tenant("team-a", {"a100": {"gpu": 8}, "h100": {"gpu": 0}}, borrowing), workloads=(job("team-a", "h100", 2),)
    )
    [message] = codes(over, DEMAND_ABOVE_QUOTA)
    assert "request 8 nvidia.com/gpu in pool 'h100', its quota allows 4 (nominal 0 + borrowing 4)" in message


def test_gs505_still_warns_a_tenant_without_a_cohort() -> None:
    bp = sample(tenant("solo", {"a100": {"gpu": 8}, "h100": {"gpu": 0}}, None), workloads=(job("solo", "h100", 1),))
    assert len(codes(bp, DEMAND_ABOVE_QUOTA)) == 1


def test_capacity_counts_what_a_kueue_tenant_may_borrow() -> None:
    bp = sample(
        tenant("team-a", {"a100": {"gpu": 8}, "h100": {"gpu": 0}}, {"borrowingLimit": {"h100": {"gpu": 4}}}),
        workloads=(job("team-a", "h100", 1),),
    )
    [team] = measure_capacity(context(bp)).tenants
    grants = {g.pool: g for g in team.grants}
    assert (grants["h100"].quota, grants["h100"].ceiling, grants["h100"].demand) == (0, 4, 4)
    assert grants["h100"].status == "ok, borrowing from the cohort"
    assert (grants["a100"].quota, grants["a100"].ceiling) == (8, 16)

"""`gpustack capacity`'s model: units, memory and compute per unit, isolation, tenant standing, warnings."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from gpustack.capacity import Capacity, capacity_data, measure_capacity
from gpustack.capacity_chart import chart_rows, render_chart
from gpustack.catalog import load_catalog
from gpustack.context import Context, unplaced
from gpustack.validation import validate_path

BLUEPRINTS = Path(__file__).resolve().parents[1] / "blueprints"
CASES = Path(__file__).parent / "cases" / "simulate"


def measure(path: Path) -> Capacity:
    result = validate_path(path)
    assert result.ok and result.blueprint is not None
    return measure_capacity(Context(result.blueprint, load_catalog(), unplaced))


@pytest.fixture(scope="module")
def seed() -> Capacity:
    return measure(BLUEPRINTS / "seed-article.yaml")


def test_mig_pool_units(seed: Capacity) -> None:
    pool = next(p for p in seed.pools if p.name == "a100-inference")
    assert pool.physical_gpus == 16
    units = {u.resource: u for u in pool.units}
    big = units["nvidia.com/mig-3g.40gb"]
    assert (big.per_node, big.total, big.memory_gb, str(big.isolation)) == (8, 16, 40, "hardware")
    assert big.compute is not None and round(big.compute, 3) == Decimal("0.429")  # 3 of 7 compute slices
    assert units["nvidia.com/mig-1g.10gb"].total == 32
    assert big.demand == 2  # llm-inference: 2 replicas x 1 slice


def test_sharing_pools(seed: Capacity) -> None:
    mps = next(p for p in seed.pools if p.name == "l40s-mps").units[0]
    assert (mps.resource, mps.total, mps.memory_gb, str(mps.isolation)) == ("nvidia.com/gpu", 16, 12, "mps-limits")
    sliced = next(p for p in seed.pools if p.name == "t4-dev").units[0]
    assert (sliced.resource, str(sliced.isolation)) == ("nvidia.com/gpu.shared", "none")
    assert sliced.memory_gb == 16  # each time-sliced pod may touch the whole card
    whole = next(p for p in seed.pools if p.name == "h100-training").units[0]
    assert (whole.total, whole.compute, str(whole.isolation)) == (32, 1, "exclusive")


def test_time_slicing_warns_about_memory(seed: Capacity) -> None:
    assert [pool for pool, _ in seed.warnings] == ["t4-dev"]
    assert "64 GiB" in seed.warnings[0][1]


def test_tenant_grants(seed: Capacity) -> None:
    search = next(t for t in seed.tenants if t.name == "search")
    grants = {(g.pool, g.resource): g for g in search.grants}
    grant = grants[("a100-inference", "nvidia.com/mig-3g.40gb")]
    assert (grant.quota, grant.capacity, grant.demand, grant.status) == (2, 16, 2, "ok")
    assert grants[("l40s-mps", "nvidia.com/gpu")].demand == 4


def test_templates_over_quota_are_flagged() -> None:
    capacity = measure(CASES / "quota-exceeded" / "blueprint.yaml")
    grant = capacity.tenants[0].grants[0]
    assert (grant.quota, grant.capacity, grant.demand) == (2, 8, 3)
    assert grant.status == "templates need more than the quota"


def test_no_quota_means_the_whole_pool() -> None:
    capacity = measure(CASES / "gang-partial" / "blueprint.yaml")
    grant = capacity.tenants[0].grants[0]
    assert grant.quota is None and grant.capacity == 16 and grant.demand == 20
    assert grant.status == "templates need more than the pool has"


def test_data_and_chart_are_deterministic(seed: Capacity) -> None:
    data = capacity_data(seed, "seed.yaml")
    assert data == capacity_data(seed, "seed.yaml")
    assert render_chart(data) == render_chart(capacity_data(measure(BLUEPRINTS / "seed-article.yaml"), "seed.yaml"))
    assert len(chart_rows(data)) == sum(len(p["units"]) for p in data["pools"]) + sum(
        len(t["grants"]) for t in data["tenants"]
    )


def test_chart_escapes_text() -> None:
    data = {"blueprint": "a<b", "pools": [], "tenants": []}
    assert "a&lt;b" in render_chart(data)


def test_a_gang_the_pool_or_quota_cannot_hold_whole_is_flagged() -> None:
    # Three 8-GPU workers of a JobSet: two eight-GPU nodes and a 16-GPU quota each hold only two at once.
    gang = measure(CASES / "jobset-gang" / "blueprint.yaml")
    assert [message for _, message in gang.warnings] == [
        "workload 'pretrain' starts 3 pods together (all or none), each asking 8 nvidia.com/gpu; pool 'h100' holds "
        "at most 2 such pods at once, so it never starts",
        "workload 'pretrain' starts 3 pods together (all or none), 24 nvidia.com/gpu in all; tenant 'research' may "
        "hold at most 16, so it is never admitted whole",
    ]
    # A LeaderWorkerSet's gang is one group (2 pods), not all its groups: one group fits on three nodes.
    groups = measure(CASES / "lws-groups" / "blueprint.yaml")
    assert groups.warnings == ()
    # The seed article's VolcanoJob (4 x 2 H100s on four 8-GPU nodes, 32 GPUs of quota) fits whole.
    assert not any("all or none" in message for _, message in measure(BLUEPRINTS / "seed-article.yaml").warnings)

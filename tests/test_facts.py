"""Each derived fact exists once: tenant demand, quota ceilings and GS404's oversubscription live on the Context, and
`gpustack capacity`, the checks and `gpustack diff` all read them from there."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from builders import blueprint, context, sourceless

from gpustack.capacity import measure_capacity
from gpustack.checks import run_checks
from gpustack.codes import MEMORY_OVERSUBSCRIBED
from gpustack.review.capacity import capacity_deltas
from gpustack.review.snapshot import Snapshot

PACKAGE = Path(__file__).resolve().parents[1] / "gpustack"
T4: dict[str, Any] = {
    "name": "t4",
    "gpu": {"model": "T4", "count": 1},
    "nodes": ["t1", "t2"],
    "sharing": {"strategy": "time-slicing", "timeSlicing": {"replicas": 4}},
}
A100: dict[str, Any] = {"name": "a100", "gpu": {"model": "A100-SXM4-80GB", "count": 8}, "nodes": ["a1"]}


def workload(name: str, tenant: str, pool: str, pods: int, gpu: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "tenant": tenant,
        "pool": pool,
        "kind": "Deployment",
        "replicas": pods,
        "image": "x:1",
        "gpu": gpu,
    }


def tenant(name: str, pools: list[str], quota: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"name": name, "namespaces": [name], "pools": pools, **({"quota": quota} if quota else {})}


def sample() -> Any:
    return blueprint(
        T4,
        A100,
        tenants=[tenant("dev", ["t4", "a100"], {"a100": {"gpu": 2}}), tenant("ml", ["a100"])],
        workloads=[
            workload("big", "dev", "t4", 1, {"count": 1, "memory": "8Gi"}),  # 4 x 8 GiB > 16 GiB: GS404
            workload("small", "dev", "t4", 3, {"count": 1, "memory": "2Gi"}),  # 4 x 2 GiB fits
            workload("train", "dev", "a100", 2, {"count": 2}),
            workload("serve", "ml", "a100", 3, {"count": 1}),
        ],
    )


def test_tenant_demand_is_the_sum_over_the_tenants_workloads_and_pods() -> None:
    ctx = context(sample())
    assert ctx.tenant_demand("dev") == {("t4", "nvidia.com/gpu"): 4, ("a100", "nvidia.com/gpu"): 4}
    assert ctx.tenant_demand("ml") == {("a100", "nvidia.com/gpu"): 3}
    assert ctx.tenant_demand("nobody") == {}
    ctx.tenant_demand("ml")[("a100", "nvidia.com/gpu")] = 99  # a caller's copy cannot change the fact
    assert ctx.tenant_demand("ml") == {("a100", "nvidia.com/gpu"): 3}


def test_the_capacity_report_shows_the_contexts_demand() -> None:
    ctx = context(sample())
    capacity = measure_capacity(ctx)
    for tenant_capacity in capacity.tenants:
        shown = {(g.pool, g.resource): g.demand for g in tenant_capacity.grants if g.demand}
        assert shown == ctx.tenant_demand(tenant_capacity.name)
    a100 = next(p for p in capacity.pools if p.name == "a100")
    assert [(u.resource, u.demand) for u in a100.units] == [("nvidia.com/gpu", 4 + 3)]


def test_the_capacity_report_warns_exactly_where_gs404_does() -> None:
    bp = sample()
    gs404 = [d.message for d in run_checks(sourceless(bp)) if d.code == MEMORY_OVERSUBSCRIBED]
    assert len(gs404) == 1 and "workload 'big'" in gs404[0]
    warnings = [message for pool, message in measure_capacity(context(bp)).warnings if "workload" in message]
    assert warnings == ["workload 'big' needs 8 GiB: 4 of its pods on one GPU ask for 32 GiB of 16 GiB"]


def test_diff_compares_the_capacity_reports_of_both_versions() -> None:
    bp = sample()
    before, after = Snapshot("before", sourceless(bp)), Snapshot("after", sourceless(bp))
    report = measure_capacity(context(bp))
    deltas = capacity_deltas(before, after)
    assert [p.capacity.after for p in deltas.pools] == list(report.pools)
    assert not any(p.changed for p in deltas.pools) and not any(t.changed for t in deltas.tenants)
    dev = next(t for t in deltas.tenants if t.tenant == "dev")
    needs = {(r.pool, r.resource): r.need.after for r in dev.resources}
    assert needs[("a100", "nvidia.com/gpu")] == 4 and needs[("t4", "nvidia.com/gpu")] == 4


def test_a_change_in_demand_alone_changes_tenant_rows_not_pool_rows() -> None:
    bp = sample()
    more = blueprint(
        T4,
        A100,
        tenants=[tenant("dev", ["t4", "a100"], {"a100": {"gpu": 2}}), tenant("ml", ["a100"])],
        workloads=[workload("serve", "ml", "a100", 5, {"count": 1})],
    )
    deltas = capacity_deltas(Snapshot("before", sourceless(bp)), Snapshot("after", sourceless(more)))
    assert not any(p.changed for p in deltas.pools)
    ml = next(t for t in deltas.tenants if t.tenant == "ml")
    assert ml.changed and ml.resources[0].need.before == 3 and ml.resources[0].need.after == 5


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}


def test_review_and_capacity_take_their_facts_from_the_context_not_the_checks() -> None:
    for module in ("capacity.py", "review/capacity.py", "review/risks/tenants.py"):
        assert not any(m.startswith("gpustack.checks") for m in _imports(PACKAGE / module)), module
    assert not (PACKAGE / "quota.py").exists()

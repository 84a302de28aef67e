"""Honest quotas (issue 32 item 4): a granted pool without a quota entry is closed, and `unlimited` says otherwise.

Before, a tenant whose `pools` listed a pool its `quota` did not mention got no quota line for the pool's resources
and could take every GPU of it, silently. Now such a pool is closed (0 of every name it advertises) everywhere a
tenant's quota reaches: the ResourceQuota and LimitRange, Kueue's ClusterQueue, Volcano's queue, KAI's queue, the
DRA device quota, `simulate`, `capacity`; one GS610 warning says so at the grant and how to open it. `quota:
{<pool>: unlimited}` keeps the old meaning, explicitly; `<pool>: {}` closes it on purpose, without a warning.
`import` writes `unlimited` for a pool a tenant holds whole, and `review` flags unlimited -> closed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from builders import sourceless
from click.testing import CliRunner
from cluster_from import snapshot_text
from conftest import BLUEPRINTS, CASES

from gpustack.cli import group
from gpustack.cluster.drift import compare
from gpustack.cluster.importer import import_snapshot
from gpustack.cluster.snapshot import parse_snapshot
from gpustack.codes import DEMAND_ABOVE_QUOTA, POOL_WITHOUT_QUOTA, QUOTA_ON_SHARED_RESOURCE
from gpustack.compile import compile_blueprint
from gpustack.validation import validate_path, validate_text

HERE = CASES / "quota-unlimited"
BASE = (HERE / "blueprint.yaml").read_text()
DRA = (HERE / "dra.yaml").read_text()
SCHEDULERS = ("default", "volcano", "kueue", "kai")
L4_ENTRY = "        l4: {gpu: 4}\n"
MIG = ("nvidia.com/mig-3g.40gb", "nvidia.com/mig-1g.10gb")
HEADLINE = re.compile(
    r"^(?P<file>\S+?):(?P<line>\d+):(?P<column>\d+): (?P<severity>error|warning)\[(?P<code>GS\d{3})\]"
)


def variant(scheduler: str = "default", a100: str | None = None) -> str:
    """The case blueprint with the tenant's scheduler, and `a100: <a100>` under its quota when given."""
    text = BASE.replace("      scheduler: default\n", f"      scheduler: {scheduler}\n")
    return text if a100 is None else text.replace(L4_ENTRY, f"{L4_ENTRY}        a100: {a100}\n")


def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *args: str, text: str) -> tuple[int, str]:
    """A command on `b.yaml` (holding `text`) run from its folder, as a user types it."""
    (tmp_path / "b.yaml").write_text(text)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(group, [args[0], "b.yaml", *args[1:]])
    return result.exit_code, result.output


def compiled(tmp_path: Path, text: str) -> list[dict[str, Any]]:
    (tmp_path / "c.yaml").write_text(text)
    result = CliRunner().invoke(group, ["compile", str(tmp_path / "c.yaml"), "-d", "-"])
    assert result.exit_code == 0, result.output
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def one(objects: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    found = [o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    assert len(found) == 1, (kind, name, len(found))
    return found[0]


def gpu_lines(objects: list[dict[str, Any]]) -> dict[str, str]:
    return dict(one(objects, "ResourceQuota")["spec"]["hard"])


# --- the one diagnostic -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_a_pool_without_a_quota_entry_is_exactly_one_warning_at_the_grant(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scheduler: str
) -> None:
    code, output = run(tmp_path, monkeypatch, "validate", text=variant(scheduler))
    headlines = [m for m in map(HEADLINE.match, output.splitlines()) if m is not None]
    assert code == 0, output
    # The pool in `pools: [l4, a100]` (line 34 of the case), not a GS505 about the demand it closes as well.
    assert [(m["code"], m["severity"], m["line"], m["column"]) for m in headlines] == [
        (POOL_WITHOUT_QUOTA, "warning", "34", "19")
    ], output
    assert "tenant 'ml' is granted pool 'a100' but its quota has no entry for it" in output
    assert "closes it to the tenant (0 nvidia.com/mig-3g.40gb, nvidia.com/mig-1g.10gb)" in output
    assert "its workload templates request 2 nvidia.com/mig-3g.40gb there" in output
    # The way to open it, and the amounts its templates need, in the hint.
    assert "write `a100: unlimited` under the tenant's quota" in output and "`a100: {mig-3g.40gb: 2}`" in output
    strict, _ = run(tmp_path, monkeypatch, "validate", "--strict", text=variant(scheduler))
    assert strict == 1


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_unlimited_and_an_empty_entry_say_the_choice_and_silence_the_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scheduler: str
) -> None:
    code, output = run(tmp_path, monkeypatch, "validate", "--strict", text=variant(scheduler, "unlimited"))
    assert code == 0 and "1 file valid" in output, output
    # `{}` closes the pool on purpose: no GS610; what its templates ask is then GS505's, at the entry.
    _, output = run(tmp_path, monkeypatch, "validate", text=variant(scheduler, "{}"))
    codes = [m["code"] for m in map(HEADLINE.match, output.splitlines()) if m is not None]
    assert codes == [DEMAND_ABOVE_QUOTA], output


def test_a_kueue_tenant_in_a_cohort_is_told_it_may_still_borrow(tmp_path: Path) -> None:
    text = variant("kueue").replace(L4_ENTRY, L4_ENTRY + "      kueue:\n        cohort: {name: gpu-org}\n")
    [found] = [d for d in validate_text(text, "b.yaml").diagnostics if d.code == POOL_WITHOUT_QUOTA]
    assert "it may still borrow from its Kueue cohort" in found.message


def test_a_closed_pool_sharing_a_name_with_a_limited_one_says_the_namespace_quota_counts_them_together() -> None:
    text = (CASES / "invalid" / "pool-without-quota.yaml").read_text()
    shared = text.replace("l4: {gpu.shared: 8}", "l4: {gpu: 4}").replace(
        "      sharing:\n        strategy: time-slicing\n        timeSlicing: {replicas: 2, renameByDefault: true}\n",
        "",
    )
    [found] = validate_text(shared, "b.yaml").diagnostics
    assert found.code == POOL_WITHOUT_QUOTA
    assert "count against the quota lines its other pools' entries write for nvidia.com/gpu" in found.message


def test_a_misspelt_or_mistyped_unlimited_is_a_schema_error_at_the_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, output = run(tmp_path, monkeypatch, "validate", text=variant(a100="unlimted"))
    assert code == 1 and "error[GS104]" in output and "expected 'unlimited'" in output, output
    code, output = run(tmp_path, monkeypatch, "validate", text=variant(a100="8"))
    assert code == 1 and "error[GS103]" in output and "expected a mapping or a string" in output, output


def test_unlimited_beside_an_amount_on_the_same_name_is_gs506_and_only_then() -> None:
    # hami.yaml: h100 unlimited, l40s-vgpu limited by gpumem/gpucores only: no line on nvidia.com/gpu, no clash.
    assert [d.code for d in validate_path(BLUEPRINTS / "hami.yaml").diagnostics] == []
    # An L4 pool limited on nvidia.com/gpu beside an unlimited whole-GPU pool: one ResourceQuota line caps both.
    text = (CASES / "invalid" / "pool-without-quota.yaml").read_text()
    text = text.replace("l4: {gpu.shared: 8}", "l4: {gpu: 4}\n        h100: unlimited").replace(
        "      sharing:\n        strategy: time-slicing\n        timeSlicing: {replicas: 2, renameByDefault: true}\n",
        "",
    )
    assert [d.code for d in validate_text(text, "b.yaml").diagnostics] == [QUOTA_ON_SHARED_RESOURCE]


# --- every place a tenant's quota reaches -----------------------------------------------------------------------------


def test_the_resource_quota_and_limit_range_close_every_name_of_the_pool(tmp_path: Path) -> None:
    closed = compiled(tmp_path, variant())
    assert gpu_lines(closed) == {"requests.nvidia.com/gpu": "4", **{f"requests.{name}": "0" for name in MIG}}
    limits = one(closed, "LimitRange")["spec"]["limits"][0]["max"]
    assert all(limits[name] == "0" for name in MIG)
    assert compiled(tmp_path, variant(a100="{}")) == closed  # `{}` writes the same, on purpose
    opened = compiled(tmp_path, variant(a100="unlimited"))
    assert gpu_lines(opened) == {"requests.nvidia.com/gpu": "4"}  # no line: the whole pool, as asked
    assert one(opened, "LimitRange")["spec"]["limits"][0]["max"] == {
        "nvidia.com/gpu": "4",
        "nvidia.com/mig-1g.10gb": "28",
        "nvidia.com/mig-3g.40gb": "8",
    }


def _flavor(objects: list[dict[str, Any]], pool: str) -> dict[str, Any]:
    flavors = one(objects, "ClusterQueue")["spec"]["resourceGroups"][0]["flavors"]
    [flavor] = [f for f in flavors if f["name"] == pool]
    return {r["name"]: r["nominalQuota"] for r in flavor["resources"]}


def test_kueue_gives_a_closed_pool_a_nominal_quota_of_zero_and_an_unlimited_one_the_pool(tmp_path: Path) -> None:
    closed, opened = compiled(tmp_path, variant("kueue")), compiled(tmp_path, variant("kueue", "unlimited"))
    assert [_flavor(closed, "a100")[name] for name in MIG] == [0, 0]
    assert [_flavor(opened, "a100")[name] for name in MIG] == [8, 28]
    # The namespace ResourceQuota behind the ClusterQueue: 0 where closed, no ceiling below the pool where unlimited.
    assert [gpu_lines(closed)[f"requests.{name}"] for name in MIG] == ["0", "0"]
    assert not any(f"requests.{name}" in gpu_lines(opened) for name in MIG)


def test_volcano_caps_a_closed_pool_at_zero_and_leaves_an_unlimited_one_open(tmp_path: Path) -> None:
    closed = one(compiled(tmp_path, variant("volcano")), "Queue", "ml")["spec"]["capability"]
    opened = one(compiled(tmp_path, variant("volcano", "unlimited")), "Queue", "ml")["spec"]["capability"]
    assert closed == {"nvidia.com/gpu": "4", **dict.fromkeys(MIG, "0")}
    assert opened == {"nvidia.com/gpu": "4"}


def test_kai_writes_minus_one_only_for_unlimited(tmp_path: Path) -> None:
    def gpu(text: str, pool: str) -> tuple[int, int]:
        figures = one(compiled(tmp_path, text), "Queue", f"ml.{pool}")["spec"]["resources"]["gpu"]
        return figures["quota"], figures["limit"]

    # each pool is its own KAI shard: the closed A100 pool's Queue is 0 (it was -1: the pool held whole)
    assert (gpu(variant("kai"), "l4"), gpu(variant("kai"), "a100")) == ((4, 4), (0, 0))
    assert (gpu(variant("kai", "unlimited"), "l4"), gpu(variant("kai", "unlimited"), "a100")) == ((4, 4), (0, -1))


def test_the_dra_device_quota_closes_a_pool_without_an_entry(tmp_path: Path) -> None:
    def devices(text: str) -> dict[str, str]:
        return dict(one(compiled(tmp_path, text), "ResourceQuota", "gpustack-dra-devices")["spec"]["hard"])

    closed = {k: v for k, v in devices(DRA).items() if ".a100-mig." in k}
    assert sorted(closed.values()) == ["0", "0"] and len(closed) == 2  # no line before: both classes open
    opened = DRA.replace("      pools: [a100-mig]\n", "      pools: [a100-mig]\n      quota: {a100-mig: unlimited}\n")
    assert not [k for k in devices(opened) if ".a100-mig." in k]


def test_simulate_refuses_the_closed_pool_s_pods_and_places_the_unlimited_one_s(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, output = run(tmp_path, monkeypatch, "simulate", text=variant())
    assert "serve (ml, default-scheduler): 0/2 placed" in output, output
    assert "maximum nvidia.com/mig-3g.40gb usage per Container is 0" in output
    _, output = run(tmp_path, monkeypatch, "simulate", text=variant(a100="unlimited"))
    assert "serve (ml, default-scheduler): 2/2 placed" in output, output


def test_capacity_shows_zero_for_a_closed_pool_and_no_quota_for_an_unlimited_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def grants(text: str) -> dict[str, tuple[int | None, str]]:
        _, output = run(tmp_path, monkeypatch, "capacity", "-o", "json", text=text)
        [tenant] = json.loads(output)["tenants"]
        return {g["resource"]: (g["quota"], g["status"]) for g in tenant["grants"] if g["pool"] == "a100"}

    assert grants(variant())["nvidia.com/mig-3g.40gb"] == (0, "templates need more than the quota")
    assert grants(variant(a100="unlimited"))["nvidia.com/mig-3g.40gb"] == (None, "ok")
    _, text = run(tmp_path, monkeypatch, "capacity", text=variant(a100="unlimited"))
    assert "- where unlimited" in text and re.search(r"a100\s+nvidia\.com/mig-3g\.40gb\s+- /", text), text


def test_review_flags_a_pool_going_from_unlimited_to_closed(tmp_path: Path) -> None:
    (tmp_path / "before.yaml").write_text(variant(a100="unlimited"))
    (tmp_path / "after.yaml").write_text(variant())
    result = CliRunner().invoke(group, ["diff", str(tmp_path / "before.yaml"), str(tmp_path / "after.yaml")])
    assert "[HIGH] Tenant 'ml' quota on pool 'a100' goes from unlimited to closed (0) (quota-closed)" in result.output
    assert "quota.a100: unlimited -> -" in result.output
    # the other way is a raise: no risk
    back = CliRunner().invoke(group, ["diff", str(tmp_path / "after.yaml"), str(tmp_path / "before.yaml")])
    assert "quota-closed" not in back.output and "quota-below-need" not in back.output


def test_import_writes_unlimited_for_a_pool_held_whole_and_drift_stays_empty() -> None:
    original = validate_path(BLUEPRINTS / "hami.yaml")
    assert original.blueprint is not None
    snapshot = parse_snapshot(snapshot_text(original.blueprint, "v1.31.4"), "cluster.yaml")
    result = import_snapshot(snapshot, "round-trip")
    [apps] = result.data["spec"]["tenants"]
    assert apps["quota"]["h100"] == "unlimited" and "h100" in apps["pools"]
    check = validate_text(result.text, "imported.yaml")
    assert check.ok and check.context is not None, [d.message for d in check.diagnostics]
    assert check.diagnostics == ()  # no GS610: the choice is written
    drift = compare(check.context, compile_blueprint(check.context), snapshot, "imported.yaml")
    assert [d.message for d in drift.differences] == []
    # and the imported quota is the example's own
    ours = compile_blueprint(sourceless(original.blueprint))
    theirs = compile_blueprint(check.context)
    assert [m.obj for m in theirs.objects if m.kind == "ResourceQuota"] == [
        m.obj for m in ours.objects if m.kind == "ResourceQuota"
    ]

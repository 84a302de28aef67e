"""`gpustack capacity` shows each KAI tenant's Queues (in each pool's shard: quota, limit, over-quota weight) beside
its quota, read from the Queues compile writes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import gpustack.compile.kai as compile_kai
from gpustack.capacity import capacity_data, format_text, measure_capacity
from gpustack.cli import group
from gpustack.context import Context
from gpustack.model import Tenant
from gpustack.validation import validate_path, validate_text

BLUEPRINTS = Path(__file__).parent.parent / "blueprints"
KAI = BLUEPRINTS / "kai.yaml"


def context(path: Path = KAI) -> Context:
    result = validate_path(path)
    assert result.context is not None
    return result.context


def tenants(path: Path = KAI) -> dict[str, dict[str, Any]]:
    return {t["name"]: t for t in capacity_data(measure_capacity(context(path)), path.name)["tenants"]}


def queue(name: str, pool: str, parent: str | None, quota: int, limit: int, leaf: bool) -> dict[str, Any]:
    return {
        "name": name,
        "pool": pool,
        "parent": parent,
        "leaf": leaf,
        "gpuQuota": quota,
        "gpuLimit": limit,
        "overQuotaWeight": 1,
    }


def test_every_queue_of_a_kai_tenant_with_its_pool_and_weight() -> None:
    assert tenants()["training"]["kaiQueues"] == [
        queue("training.h100", "h100", None, 12, 12, False),
        queue("training.h100.training", "h100", "training.h100", 6, 12, True),
        queue("training.h100.training-dev", "h100", "training.h100", 6, 12, True),
    ]


def test_text_shows_the_queues_beside_the_quota() -> None:
    text = format_text(capacity_data(measure_capacity(context()), "kai.yaml"))
    assert (
        "  training (scheduler kai; KAI queues in each pool's shard, in GPU units, a MIG device counting its compute "
        "slices)\n"
        "    h100               nvidia.com/gpu                  12 /    16 /     8  ok\n"
        "    KAI queue training.h100 (shard h100): 12 GPU units guaranteed, limit 12, over-quota weight 1\n"
        "    KAI leaf queue training.h100.training: 6 GPU units guaranteed, limit 12, over-quota weight 1\n"
        "    KAI leaf queue training.h100.training-dev: 6 GPU units guaranteed, limit 12, over-quota weight 1\n"
    ) in text


def test_figures_are_the_compiled_queues(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever compile writes is what capacity shows: nothing is summed again from the blueprint."""
    written = compile_kai.tenant_queues

    def heavier(tenant: Tenant) -> list[dict[str, Any]]:
        queues = [dict(q) for q in written(tenant)]
        spec = dict(queues[0]["spec"])
        spec["resources"] = {**spec["resources"], "gpu": {"quota": 7, "limit": -1, "overQuotaWeight": 3}}
        queues[0] = {**queues[0], "spec": spec}
        return queues

    monkeypatch.setattr(compile_kai, "tenant_queues", heavier)
    serving = tenants()["serving"]
    assert serving["kaiQueues"][0] == {**queue("serving.h100", "h100", None, 7, -1, False), "overQuotaWeight": 3}
    text = format_text(capacity_data(measure_capacity(context()), "kai.yaml"))
    assert "KAI queue serving.h100 (shard h100): 7 GPU units guaranteed, limit none, over-quota weight 3" in text


def test_other_schedulers_have_no_queue() -> None:
    for tenant in tenants(BLUEPRINTS / "kueue.yaml").values():
        assert "kaiQueues" not in tenant


def test_cli_json() -> None:
    result = CliRunner().invoke(group, ["capacity", str(KAI), "-o", "json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    serving = next(t for t in document["tenants"] if t["name"] == "serving")
    assert serving["kaiQueues"] == [
        queue("serving.h100", "h100", None, 4, 4, False),
        queue("serving.h100.serving", "h100", "serving.h100", 4, 4, True),
        queue("serving.a100-mig", "a100-mig", None, 26, 26, False),
        queue("serving.a100-mig.serving", "a100-mig", "serving.a100-mig", 26, 26, True),
    ]


def test_a_tenant_in_a_cohort_shows_the_queue_above_it() -> None:
    text = KAI.read_text(encoding="utf-8").replace(
        "      scheduler: kai\n      quota:\n        h100: {gpu: 12}",
        "      scheduler: kai\n      kai:\n        cohort:\n          name: gpu-org\n"
        "          borrowingLimit: {h100: {gpu: 2}}\n      quota:\n        h100: {gpu: 12}",
    )
    result = validate_text(text, "kai-cohort.yaml")
    assert result.ok and result.context is not None, [d.message for d in result.diagnostics]
    data = capacity_data(measure_capacity(result.context), "kai-cohort.yaml")
    training = next(t for t in data["tenants"] if t["name"] == "training")
    assert training["kaiQueues"][0] == queue("training.h100", "h100", "gpu-org.h100", 12, 14, False)
    assert (
        "KAI queue training.h100 (shard h100): 12 GPU units guaranteed, limit 14, over-quota weight 1, under queue "
        "gpu-org.h100\n"
    ) in format_text(data)

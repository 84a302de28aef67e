"""Borrowing and lending for KAI tenants (issue 30 item 2): Kueue's cohort words, compiled into KAI's Queues.

A KAI Queue has a guaranteed `quota`, a hard `limit` and an `overQuotaWeight` (KAI docs/queues/README.md); what a
queue does not use goes to the others over their quota, and KAI takes it back by reclaiming (docs/fairness). So:
in each pool's shard the cohort is a Queue `<cohort>.<pool>` above its tenants' parents there, holding their quotas'
sum on the pool (borrowing stays inside it), a tenant's `borrowingLimit` on the pool raises its Queue's `limit` there
(in GPU units) and its ResourceQuota (per exact name), and a `lendingLimit`, which KAI cannot hold, is refused at its
line (GS515).
"""

from __future__ import annotations

from typing import Any

import manifest_schemas
from admission_cel import Admission, Request
from conftest import BLUEPRINTS

from gpustack.capacity import capacity_data, format_text, measure_capacity
from gpustack.codes import KAI_COHORT_NAME, KAI_LENDING_LIMIT
from gpustack.compile import compile_blueprint
from gpustack.compile.admission import build_admission_objects
from gpustack.names import TENANT_LABEL
from gpustack.plan import Object
from gpustack.schedulers import kai_gpu_quota
from gpustack.validation import validate_text

SOURCE = (BLUEPRINTS / "kai.yaml").read_text(encoding="utf-8")
TRAINING = "      scheduler: kai\n      quota:\n        h100: {gpu: 12}"
SERVING = "      priority: high\n      scheduler: kai\n"


def _with_cohorts(training: str, serving: str, text: str = SOURCE) -> str:
    """kai.yaml with a `kai:` block on each tenant (an empty string leaves it out)."""
    assert TRAINING in text and SERVING in text
    text = text.replace(TRAINING, "      scheduler: kai\n" + training + "      quota:\n        h100: {gpu: 12}")
    return text.replace(SERVING, SERVING + serving)


ORG = "      kai:\n        cohort:\n          name: gpu-org\n"
TRAINING_BORROWS = ORG + "          borrowingLimit: {h100: {gpu: 2}}\n"
SERVING_BORROWS = (
    ORG
    + "          borrowingLimit:\n            h100: {gpu: 1}\n"
    + "            a100-mig: {mig-3g.40gb: 1, mig-1g.10gb: 2}\n"
)


def _compiled(text: str) -> tuple[dict[str, Object], dict[tuple[str, str], dict[str, Any]]]:
    result = validate_text(text, "kai.yaml")
    assert result.ok and result.context is not None, [d.message for d in result.diagnostics]
    plan = compile_blueprint(result.context)
    queues = {m.obj["metadata"]["name"]: m.obj for m in plan.objects if m.obj["kind"] == "Queue"}
    quotas = {
        (m.obj["metadata"]["namespace"], m.obj["metadata"]["name"]): m.obj["spec"]["hard"]
        for m in plan.objects
        if m.obj["kind"] == "ResourceQuota"
    }
    return queues, quotas


def _gpu(queue: Object) -> tuple[int, int]:
    gpu = queue["spec"]["resources"]["gpu"]
    return gpu["quota"], gpu["limit"]


def _errors(text: str) -> list[tuple[str, int]]:
    result = validate_text(text, "kai.yaml")
    return [(d.code, d.span.start.line if d.span else 0) for d in result.diagnostics if d.severity == "error"]


def test_a_cohort_is_a_queue_per_pool_above_its_tenants_holding_their_quotas_sum() -> None:
    queues, _ = _compiled(_with_cohorts(TRAINING_BORROWS, SERVING_BORROWS))
    assert queues["training.h100"]["spec"]["parentQueue"] == "gpu-org.h100"
    assert queues["serving.h100"]["spec"]["parentQueue"] == "gpu-org.h100"
    assert queues["serving.a100-mig"]["spec"]["parentQueue"] == "gpu-org.a100-mig"
    assert "parentQueue" not in queues["gpu-org.h100"]["spec"]
    # H100: 12 + 4 units guaranteed, and capped there: the cohort never takes another tenant's idle GPUs; A100: 26
    assert _gpu(queues["gpu-org.h100"]) == (16, 16)
    assert _gpu(queues["gpu-org.a100-mig"]) == (26, 26)
    assert queues["gpu-org.h100"]["metadata"]["labels"] == {
        "app.kubernetes.io/managed-by": "gpustack",
        "gpustack.io/pool": "h100",
    }
    # the leaves still hang under their tenant's parent
    assert queues["training.h100.training-dev"]["spec"]["parentQueue"] == "training.h100"


def test_borrowing_limit_raises_the_queue_limit_in_kai_units_and_the_resource_quota_per_name() -> None:
    queues, quotas = _compiled(_with_cohorts(TRAINING_BORROWS, SERVING_BORROWS))
    assert _gpu(queues["training.h100"]) == (12, 14)
    assert _gpu(queues["training.h100.training"]) == (6, 14)  # each leaf guaranteed its part, capped at the tenant's
    # serving borrows 1 H100 (1 unit) in the H100 shard, 1 mig-3g.40gb (3 units) and 2 mig-1g.10gb (2) in the A100's
    assert _gpu(queues["serving.h100"]) == (4, 5)
    assert _gpu(queues["serving.a100-mig"]) == (26, 31)
    tenant = _tenant(_with_cohorts(TRAINING_BORROWS, SERVING_BORROWS), "serving")
    assert (kai_gpu_quota(tenant, "h100"), kai_gpu_quota(tenant, "a100-mig")) == ((4, 5), (26, 31))
    # KAI's one gpu number cannot tell a pool's names apart: the ResourceQuota holds each at quota + its borrowing
    assert quotas[("serving", "gpustack-gpu-quota")] == {
        "requests.nvidia.com/gpu": "5",
        "requests.nvidia.com/mig-1g.10gb": "16",
        "requests.nvidia.com/mig-3g.40gb": "5",
    }
    assert quotas[("training", "gpustack-gpu-quota")]["requests.nvidia.com/gpu"] == "14"


def test_without_a_borrowing_limit_the_tenant_may_borrow_what_the_cohort_has() -> None:
    queues, quotas = _compiled(_with_cohorts(ORG, ORG))
    assert _gpu(queues["training.h100"]) == (12, -1)  # no cap of its own: the cohort's 16 H100s cap it
    assert _gpu(queues["gpu-org.h100"]) == (16, 16)
    # as Kueue reads an unset borrowingLimit: up to the whole pool (2 nodes x 8 H100s) per name
    assert quotas[("training", "gpustack-gpu-quota")]["requests.nvidia.com/gpu"] == "16"


def test_a_tenant_outside_every_cohort_keeps_its_limit_at_its_quota() -> None:
    queues, quotas = _compiled(_with_cohorts(TRAINING_BORROWS, ""))
    assert _gpu(queues["serving.h100"]) == (4, 4) and _gpu(queues["serving.a100-mig"]) == (26, 26)
    assert "parentQueue" not in queues["serving.h100"]["spec"]
    assert _gpu(queues["gpu-org.h100"]) == (12, 12)  # a cohort of one lends to nobody
    assert "gpu-org.a100-mig" not in queues  # no member on that pool
    assert quotas[("serving", "gpustack-gpu-quota")]["requests.nvidia.com/gpu"] == "4"


def test_cohort_queues_are_valid_against_the_upstream_crd() -> None:
    queues, _ = _compiled(_with_cohorts(TRAINING_BORROWS, SERVING_BORROWS))
    errors = [error for queue in queues.values() for error in manifest_schemas.validate_any(queue, "1.33")]
    assert errors == []


def test_lending_part_of_the_quota_is_refused_at_its_line_all_of_it_is_what_kai_does() -> None:
    text = _with_cohorts(ORG + "          lendingLimit:\n            h100: {gpu: 4}\n", ORG)
    line = text.splitlines().index("            h100: {gpu: 4}") + 1
    assert (KAI_LENDING_LIMIT, line) in _errors(text)
    result = validate_text(text, "kai.yaml")
    (found,) = [d for d in result.diagnostics if d.code == KAI_LENDING_LIMIT]
    assert "reclaim" in found.message and "scheduler: kueue" in (found.hint or "")
    # lending all of its quota is what a KAI Queue does: accepted, and compiled as without it
    lend_all = _with_cohorts(ORG + "          lendingLimit: {h100: {gpu: 12}}\n", ORG)
    assert _errors(lend_all) == []
    assert _compiled(lend_all) == _compiled(_with_cohorts(ORG, ORG))


def test_cohort_named_like_a_tenant_is_refused_at_its_name() -> None:
    text = _with_cohorts(ORG.replace("gpu-org", "serving"), "")
    line = text.splitlines().index("          name: serving") + 1
    assert (KAI_COHORT_NAME, line) in _errors(text)
    # `default-queue.h100` is no queue of KAI's chart: a cohort may take the name
    assert KAI_COHORT_NAME not in [
        code for code, _ in _errors(_with_cohorts(ORG.replace("gpu-org", "default-queue"), ""))
    ]


def test_a_namespace_without_a_tenant_may_not_name_the_cohort_queue() -> None:
    """Evaluated with cel-python on the compiled policies (tests/admission_cel.py), as tests/test_kai_admission.py."""
    result = validate_text(_with_cohorts(ORG, ORG), "kai.yaml")
    assert result.context is not None
    admission = Admission(build_admission_objects(result.context))
    name_label = "kubernetes.io/metadata.name"
    namespace: dict[str, Any] = {"apiVersion": "v1", "kind": "Namespace"}
    namespace["metadata"] = {"name": "scratch", "labels": {name_label: "scratch"}}
    group: dict[str, Any] = {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "pg", "namespace": "scratch"},
        "spec": {"minMember": 1, "queue": "gpu-org.h100"},
    }
    verdict = admission.review(Request("CREATE", group, namespace))
    assert verdict.not_evaluated == [] and not verdict.admitted
    assert any("may not use KAI queue gpu-org.h100" in d for d in verdict.denials), verdict.denials
    # and a tenant's own policy: only its leaves, never the cohort above them
    namespace["metadata"] = {"name": "training", "labels": {name_label: "training", TENANT_LABEL: "training"}}
    group["metadata"]["namespace"] = "training"
    assert not admission.review(Request("CREATE", group, namespace)).admitted


def test_kai_block_only_with_scheduler_kai() -> None:
    text = SOURCE.replace(TRAINING, "      scheduler: volcano\n" + ORG + "      quota:\n        h100: {gpu: 12}")
    result = validate_text(text, "kai.yaml")
    assert any("kai is only allowed when scheduler is kai" in (d.message + (d.hint or "")) for d in result.diagnostics)


def _tenant(text: str, name: str) -> Any:
    result = validate_text(text, "kai.yaml")
    assert result.blueprint is not None
    return next(t for t in result.blueprint.tenants if t.name == name)


def test_a_cohort_with_a_tenant_holding_a_pool_whole_is_uncapped() -> None:
    text = _with_cohorts(ORG, ORG).replace("        h100: {gpu: 12}", "        h100: unlimited")
    queues, quotas = _compiled(text)
    assert _gpu(queues["training.h100"]) == (0, -1)  # nothing guaranteed, no cap, as its ResourceQuota has no line
    assert _gpu(queues["gpu-org.h100"]) == (4, -1)
    assert _gpu(queues["gpu-org.a100-mig"]) == (26, 26)  # the pool nobody holds whole keeps its cap
    assert "requests.nvidia.com/gpu" not in quotas[("training", "gpustack-gpu-quota")]


def test_capacity_shows_the_limit_with_borrowing_and_the_cohort_queue() -> None:
    result = validate_text(_with_cohorts(TRAINING_BORROWS, ORG), "kai.yaml")
    assert result.context is not None
    text = format_text(capacity_data(measure_capacity(result.context), "kai.yaml"))
    assert "KAI queue training.h100 (shard h100): 12 GPU units guaranteed, limit 14" in text
    assert "under queue gpu-org.h100" in text

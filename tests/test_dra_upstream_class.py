"""Claims written from the NVIDIA DRA driver's upstream examples (`deviceClassName: gpu.nvidia.com`, the chart's own
classes: NVIDIA/k8s-dra-driver-gpu demo/specs/quickstart/gpu-test1.yaml ... gpu-test5.yaml) in a tenant's namespace:
refused by admission (real CEL) with one message that names the class of each of the tenant's DRA pools to write
instead; the tenant's own classes still admitted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from admission_cel import Admission, Request
from conftest import BLUEPRINTS

from gpustack.compile import compile_blueprint
from gpustack.dra import V1, V1BETA1, V1BETA2
from gpustack.validation import validate_path

H100 = "gpu.h100-train.gpustack.io"
MIG = "mig-3g.40gb.a100-mig.gpustack.io"
UPSTREAM_WORDS = "are the DRA driver's classes for every device of every DRA node, outside any tenant's quota"


def admission(tmp_path: Path, text: str | None = None) -> Admission:
    path = tmp_path / "blueprint.yaml"
    path.write_text(text or (BLUEPRINTS / "dra.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    result = validate_path(path)
    assert result.context is not None, [d.message for d in result.diagnostics]
    return Admission([m.obj for m in compile_blueprint(result.context).by_family("dra-admission")])


def namespace(name: str) -> dict[str, Any]:
    labels = {"kubernetes.io/metadata.name": name, "gpustack.io/tenant": name}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def upstream_claim(ns: str, device_class: str, *, api: str = V1, template: bool = False) -> dict[str, Any]:
    """gpu-test1's shape: one request, the class alone (allocationMode and count left to their defaults)."""
    request: dict[str, Any] = {"name": "gpu"}
    if api == V1BETA1:
        request["deviceClassName"] = device_class
    else:
        request["exactly"] = {"deviceClassName": device_class}
    spec = {"devices": {"requests": [request]}}
    kind = "ResourceClaimTemplate" if template else "ResourceClaim"
    return {
        "apiVersion": api,
        "kind": kind,
        "metadata": {"name": "single-gpu", "namespace": ns},
        "spec": {"spec": spec} if template else spec,
    }


def review(admit: Admission, obj: dict[str, Any], ns: str) -> Any:
    verdict = admit.review(Request("CREATE", obj, namespace(ns)))
    assert verdict.not_evaluated == []
    return verdict


@pytest.mark.parametrize("api", [V1, V1BETA2, V1BETA1])
@pytest.mark.parametrize("template", [False, True])
def test_the_upstream_class_is_refused_naming_the_pools_class(tmp_path: Path, api: str, template: bool) -> None:
    admit = admission(tmp_path)
    verdict = review(admit, upstream_claim("research", "gpu.nvidia.com", api=api, template=template), "research")
    [denial] = verdict.denials  # one message for one mistake, not the class rule's as well
    assert UPSTREAM_WORDS in denial
    assert f"name the class of tenant research's pool instead (h100-train: {H100} (whole GPUs))" in denial


def test_a_mig_tenant_is_told_its_profiles_class(tmp_path: Path) -> None:
    admit = admission(tmp_path)
    [denial] = review(admit, upstream_claim("inference", "mig.nvidia.com"), "inference").denials
    assert f"(a100-mig: {MIG} (3g.40gb))" in denial
    assert "l4-serve" not in denial  # a device-plugin pool has no class to name


def test_the_upstream_class_as_a_first_available_alternative_is_refused(tmp_path: Path) -> None:
    admit = admission(tmp_path)
    obj = upstream_claim("research", H100)
    request = obj["spec"]["devices"]["requests"][0]
    del request["exactly"]
    request["firstAvailable"] = [
        {"name": "mine", "deviceClassName": H100},
        {"name": "any", "deviceClassName": "gpu.nvidia.com"},
    ]
    [denial] = review(admit, obj, "research").denials
    assert UPSTREAM_WORDS in denial


def test_the_recipe_with_the_pools_class_is_admitted(tmp_path: Path) -> None:
    """What the message says to do works: the upstream claim with the pool's class in place of gpu.nvidia.com."""
    admit = admission(tmp_path)
    assert review(admit, upstream_claim("research", H100), "research").admitted
    assert review(admit, upstream_claim("inference", MIG, template=True), "inference").admitted


def test_another_tenants_class_keeps_the_tenant_rule(tmp_path: Path) -> None:
    admit = admission(tmp_path)
    [denial] = review(admit, upstream_claim("inference", H100), "inference").denials
    assert "tenant inference may claim devices only of the DeviceClasses of its granted pools" in denial
    assert UPSTREAM_WORDS not in denial


def test_a_tenant_with_no_dra_pool_is_told_so(tmp_path: Path) -> None:
    text = (BLUEPRINTS / "dra.yaml").read_text(encoding="utf-8")
    text = text.replace(
        "  workloads:\n",
        "    - name: web\n      namespaces: [web]\n      pools: [l4-serve]\n      priority: normal\n"
        "      quota:\n        l4-serve: {gpu: 2}\n  workloads:\n",
    )
    admit = admission(tmp_path, text)
    [denial] = review(admit, upstream_claim("web", "gpu.nvidia.com"), "web").denials
    assert "(none: tenant has no DRA pool)" in denial


def test_a_namespace_of_no_tenant_still_gets_the_unowned_rule(tmp_path: Path) -> None:
    admit = admission(tmp_path)
    [denial] = review(admit, upstream_claim("sandbox", "gpu.nvidia.com"), "sandbox").denials
    assert "a namespace of no gpustack tenant may not claim" in denial

"""Volcano and Kueue are installed as pinned Helm releases of the Plan, Kueue's as an OCI chart, wherever a release
is used: the compiled README's helm commands, Pulumi's Chart inputs and GS801."""

from __future__ import annotations

import json
from typing import Any

from builders import blueprint, sourceless

from gpustack.codes import UNPINNED_CHART
from gpustack.compile import compile_blueprint
from gpustack.outputs import render_files
from gpustack.plan import HelmRelease, Plan
from gpustack.validation import validate_text

POOL: dict[str, Any] = {
    "name": "h100",
    "gpu": {"model": "H100-SXM5-80GB", "count": 8},
    "nodes": ["h1"],
    "nodeResources": {"cpu": "96", "memory": "1Ti"},
}


def tenant(name: str, scheduler: str) -> dict[str, Any]:
    return {"name": name, "namespaces": [name], "pools": ["h100"], "scheduler": scheduler}


def releases(plan: Plan) -> dict[str, HelmRelease]:
    return {r.name: r for r in plan.releases}


def test_kueue_tenants_bring_the_pinned_kueue_oci_chart() -> None:
    plan = compile_blueprint(sourceless(blueprint(POOL, tenants=[tenant("team", "kueue")])))
    kueue = releases(plan)["kueue"]
    assert kueue.oci and kueue.chart_ref == "oci://registry.k8s.io/kueue/charts/kueue"
    assert (kueue.version, kueue.namespace) == ("0.19.2", "kueue-system")
    assert "volcano" not in releases(plan)


def test_settings_choose_version_and_namespace() -> None:
    bp = blueprint(
        POOL,
        tenants=[tenant("a", "kueue"), tenant("b", "volcano")],
        kueue={"chartVersion": "0.20.0", "namespace": "queues"},
        volcano={"chartVersion": "1.14.0", "namespace": "batch"},
    )
    found = releases(compile_blueprint(sourceless(bp)))
    assert (found["kueue"].version, found["kueue"].namespace) == ("0.20.0", "queues")
    assert (found["volcano"].version, found["volcano"].namespace) == ("1.14.0", "batch")


def test_a_volcano_job_alone_brings_volcano() -> None:
    job = {"name": "train", "tenant": "t", "pool": "h100", "kind": "VolcanoJob", "workers": 2, "image": "i:1"}
    job["gpu"] = {"count": 1}
    plan = compile_blueprint(sourceless(blueprint(POOL, tenants=[tenant("t", "default")], workloads=[job])))
    assert set(releases(plan)) == {"nvidia-device-plugin", "volcano"}
    plain = compile_blueprint(sourceless(blueprint(POOL, tenants=[tenant("t", "default")])))
    assert set(releases(plain)) == {"nvidia-device-plugin"}


def test_the_readme_installs_oci_charts_without_a_repo_add() -> None:
    plan = compile_blueprint(sourceless(blueprint(POOL, tenants=[tenant("a", "kueue"), tenant("b", "volcano")])))
    readme = render_files(plan)["README.md"]
    assert "helm upgrade --install kueue oci://registry.k8s.io/kueue/charts/kueue \\\n     --version 0.19.2" in readme
    assert "helm repo add kueue" not in readme
    assert "helm repo add volcano https://volcano-sh.github.io/helm-charts" in readme
    assert "helm upgrade --install volcano volcano/volcano" in readme


def gs801(**spec: Any) -> dict[str, str]:
    data = {
        "apiVersion": "gpustack.io/v1alpha1",
        "kind": "ClusterBlueprint",
        "metadata": {"name": "test"},
        "spec": {"kubernetes": {"version": "1.31"}, **spec, "nodePools": [POOL]},
    }
    result = validate_text(json.dumps(data), "test.json")
    return {d.json_path: d.message for d in result.diagnostics if d.code == UNPINNED_CHART}


def test_gs801_refuses_unpinned_scheduler_charts() -> None:
    found = gs801(
        tenants=[tenant("a", "kueue"), tenant("b", "volcano")],
        kueue={"chartVersion": "latest"},
        volcano={"chartVersion": "1.x"},
    )
    assert found == {
        "$.spec.kueue.chartVersion": "Kueue chart version 'latest' is not pinned",
        "$.spec.volcano.chartVersion": "Volcano chart version '1.x' is not pinned",
    }
    # Unused, an unpinned version installs nothing and is not reported.
    assert gs801(tenants=[tenant("a", "default")], kueue={"chartVersion": "latest"}) == {}


def test_only_charts_whose_webhook_certificates_come_from_hooks_need_hooks() -> None:
    # Volcano's and HAMi's charts make their webhook certificates in hook jobs, which Pulumi's helm/v4 Chart
    # skips; Kueue's controller makes its own, and the NVIDIA device plugin has no webhook.
    hami_pool = {**POOL, "name": "shared", "nodes": ["s1"], "sharing": {"strategy": "hami"}}
    tenants = [tenant("batch", "volcano"), tenant("queued", "kueue")]
    plan = compile_blueprint(sourceless(blueprint(POOL, hami_pool, tenants=tenants)))
    assert {name: r.needs_hooks for name, r in releases(plan).items()} == {
        "nvidia-device-plugin": False,
        "hami": True,
        "volcano": True,
        "kueue": False,
    }


def test_gs801_refuses_an_unpinned_gpu_operator_chart_and_ignores_the_unused_plugin_chart() -> None:
    found = gs801(stack="gpu-operator", gpuOperator={"chartVersion": "v26.x"}, devicePlugin={"chartVersion": "latest"})
    assert found == {"$.spec.gpuOperator.chartVersion": "GPU Operator chart version 'v26.x' is not pinned"}

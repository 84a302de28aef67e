"""Shared DRA claims (`gpu.claim`): the NVIDIA DRA driver quickstart's shared-claim cases written as a blueprint
(tests/cases/dra-shared), compiled and compared field by field with the recipes (tests/cases/dra-shared/upstream,
from NVIDIA/k8s-dra-driver-gpu demo/specs/quickstart/gpu-test2.yaml ... gpu-test5.yaml); the shared claim admitted
only for its own workload's pods (real CEL); the checks GS613-GS615; GS606 on a template that swaps the claim.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from admission_cel import Admission, Request
from manifest_schemas import validate_any

from gpustack.codes import (
    DRA_CLAIM_OFF_DRA,
    DRA_CLAIM_SHARING,
    DRA_SHARED_CLAIM_SPREAD,
    TEMPLATE_ERROR,
)
from gpustack.compile import compile_blueprint
from gpustack.plan import Plan
from gpustack.validation import validate_path

CASES = Path(__file__).parent / "cases" / "dra-shared"
UPSTREAM = CASES / "upstream"
CLASS = "gpu.h100.gpustack.io"
WORKLOAD_LABEL = "gpustack.io/workload"


def upstream(name: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all((UPSTREAM / f"{name}.yaml").read_text(encoding="utf-8")) if doc]


def copy_case(tmp_path: Path, text: str | None = None) -> Path:
    for name in ("blueprint.yaml", "gpu-test2.yaml.j2"):
        shutil.copy(CASES / name, tmp_path / name)
    path = tmp_path / "blueprint.yaml"
    if text is not None:
        path.write_text(text, encoding="utf-8")
    return path


def blueprint_text() -> str:
    return (CASES / "blueprint.yaml").read_text(encoding="utf-8")


def compiled(tmp_path: Path, text: str | None = None) -> Plan:
    result = validate_path(copy_case(tmp_path, text))
    assert result.context is not None, [d.message for d in result.diagnostics]
    assert [d.message for d in result.diagnostics] == []
    return compile_blueprint(result.context)


def find(plan: Plan, kind: str, name: str, namespace: str) -> dict[str, Any]:
    found = plan.find(kind, name, namespace)
    assert found is not None, f"{kind} {namespace}/{name} not compiled"
    return found.obj


def pod_spec(deployment: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = deployment["spec"]["template"]["spec"]
    return spec


def request_of(claim_spec: dict[str, Any]) -> dict[str, Any]:
    [request] = claim_spec["devices"]["requests"]
    return dict(request)


def diagnostics(tmp_path: Path, text: str, code: str) -> list[Any]:
    return [d for d in validate_path(copy_case(tmp_path, text)).diagnostics if d.code == code]


# --- the quickstart as a blueprint ---------------------------------------------------------------------------------


def test_the_quickstart_blueprint_is_valid_without_a_warning(tmp_path: Path) -> None:
    compiled(tmp_path)


def test_gpu_test2_two_containers_share_the_pods_one_claim(tmp_path: Path) -> None:
    """gpu-test2: a ResourceClaimTemplate of one GPU, one pod whose containers ctr0 and ctr1 both list its claim."""
    plan = compiled(tmp_path)
    theirs_template, theirs_pod = upstream("gpu-test2")
    template = find(plan, "ResourceClaimTemplate", "gpu-test2-gpu", "alpha")
    ours, theirs = request_of(template["spec"]["spec"]), request_of(theirs_template["spec"]["spec"])
    assert ours["name"] == theirs["name"] == "gpu"
    # Upstream leaves allocationMode and count to their defaults (ExactCount, 1): gpustack writes them out.
    assert ours["exactly"]["allocationMode"] == "ExactCount" and ours["exactly"]["count"] == 1
    # The one difference: the pool's own class in place of the driver's catch-all one.
    assert theirs["exactly"]["deviceClassName"] == "gpu.nvidia.com" and ours["exactly"]["deviceClassName"] == CLASS
    spec, upstream_spec = pod_spec(find(plan, "Deployment", "gpu-test2", "alpha")), theirs_pod["spec"]
    assert [c["name"] for c in spec["containers"]] == [c["name"] for c in upstream_spec["containers"]]
    for key in ("image", "command", "args"):
        assert [c[key] for c in spec["containers"]] == [c[key] for c in upstream_spec["containers"]]
    [claim] = spec["resourceClaims"]
    [upstream_claim] = upstream_spec["resourceClaims"]
    assert set(claim) == set(upstream_claim) == {"name", "resourceClaimTemplateName"}
    assert claim["resourceClaimTemplateName"] == template["metadata"]["name"]
    # Every container holds the pod's one claim, as upstream's both hold shared-gpu.
    assert [c["resources"]["claims"] for c in spec["containers"]] == [[{"name": claim["name"]}]] * 2
    assert [c["resources"]["claims"] for c in upstream_spec["containers"]] == [[{"name": upstream_claim["name"]}]] * 2
    # No extended resource beside the claim: nothing on a DRA node advertises one.
    assert all(not any(k.startswith("nvidia.com/") for k in c["resources"]["limits"]) for c in spec["containers"])


def test_gpu_test3_two_pods_share_one_resource_claim(tmp_path: Path) -> None:
    """gpu-test3: one ResourceClaim in the namespace, two pods holding it by name."""
    plan = compiled(tmp_path)
    theirs_claim, *theirs_pods = upstream("gpu-test3")
    claim = find(plan, "ResourceClaim", "gpu-test3-gpu", "alpha")
    assert plan.find("ResourceClaimTemplate", "gpu-test3-gpu", "alpha") is None
    ours, theirs = request_of(claim["spec"]), request_of(theirs_claim["spec"])
    assert ours["name"] == theirs["name"] and ours["exactly"]["count"] == 1
    assert ours["exactly"]["deviceClassName"] == CLASS
    # The claim is the tenant's: in its namespace, labelled with its tenant and workload.
    labels = claim["metadata"]["labels"]
    assert labels["gpustack.io/tenant"] == "alpha" and labels[WORKLOAD_LABEL] == "gpu-test3"
    deployment = find(plan, "Deployment", "gpu-test3", "alpha")
    assert deployment["spec"]["replicas"] == len(theirs_pods) == 2
    spec = pod_spec(deployment)
    [held] = spec["resourceClaims"]
    for pod in theirs_pods:
        [their_held] = pod["spec"]["resourceClaims"]
        assert set(held) == set(their_held) == {"name", "resourceClaimName"}
        assert their_held["resourceClaimName"] == theirs_claim["metadata"]["name"]
    assert held["resourceClaimName"] == claim["metadata"]["name"]
    assert spec["containers"][0]["resources"]["claims"] == [{"name": held["name"]}]


@pytest.mark.parametrize(("workload", "kind", "recipe"), [("gpu-test4", "ResourceClaim", "gpu-test4")])
def test_gpu_test4_time_slicing_config_is_upstreams(tmp_path: Path, workload: str, kind: str, recipe: str) -> None:
    plan = compiled(tmp_path)
    ours = find(plan, kind, f"{workload}-gpu", "beta")["spec"]["devices"]["config"]
    [theirs] = upstream(recipe)
    [config], [their_config] = ours, theirs["spec"]["devices"]["config"]
    assert config == their_config  # the same request name (gpu), driver and GpuConfig


def test_gpu_test5_mps_config_is_upstreams(tmp_path: Path) -> None:
    plan = compiled(tmp_path)
    ours = find(plan, "ResourceClaimTemplate", "gpu-test5-gpu", "beta")["spec"]["spec"]["devices"]
    [theirs] = upstream("gpu-test5")
    theirs_devices = theirs["spec"]["spec"]["devices"]
    [config], [their_config] = ours["config"], theirs_devices["config"]
    assert config["opaque"] == their_config["opaque"]
    # Upstream names its request mps-gpu, gpustack always gpu: each config applies to its claim's one request.
    assert config["requests"] == [request_of({"devices": ours})["name"]]
    assert their_config["requests"] == [request_of({"devices": theirs_devices})["name"]]
    # Two containers of the pod are MPS clients of the one claim, as upstream's.
    spec = pod_spec(find(plan, "Deployment", "gpu-test5", "beta"))
    assert [c["resources"]["claims"] for c in spec["containers"]] == [[{"name": "gpu"}]] * 2


def test_the_driver_gets_exactly_the_gates_the_claims_need(tmp_path: Path) -> None:
    plan = compiled(tmp_path)
    [release] = [r for r in plan.releases if r.chart == "dra-driver-nvidia-gpu"]
    assert release.values["featureGates"] == {"MPSSupport": True, "TimeSlicingSettings": True}
    without = blueprint_text().replace(
        "sharing: {strategy: MPS, activeThreadPercentage: 50, pinnedMemoryLimit: 10Gi}", ""
    )
    without = without.replace("sharing: {strategy: TimeSlicing, interval: Long}", "")
    plan = compiled(tmp_path, without.replace("          \n", ""))
    [release] = [r for r in plan.releases if r.chart == "dra-driver-nvidia-gpu"]
    assert "featureGates" not in release.values


@pytest.mark.parametrize(
    ("kubernetes", "api"),
    [("1.36", None), ("1.34", None), ("1.33", "resource.k8s.io/v1beta2"), ("1.32", "resource.k8s.io/v1beta1")],
)
def test_every_claim_object_is_valid_for_the_kubernetes_version(
    tmp_path: Path, kubernetes: str, api: str | None
) -> None:
    text = blueprint_text().replace('version: "1.36"', f'version: "{kubernetes}"')
    if api is not None:
        text = text.replace('    chartVersion: "0.4.1"\n', f'    chartVersion: "0.4.1"\n    apiVersion: {api}\n')
    result = validate_path(copy_case(tmp_path, text))
    assert result.context is not None and not [d for d in result.diagnostics if d.severity == "error"]
    plan = compile_blueprint(result.context)
    kinds = {"ResourceClaim", "ResourceClaimTemplate", "Deployment", "ValidatingAdmissionPolicy"}
    objects = [m.obj for m in plan.objects if m.kind in kinds]
    assert {o["kind"] for o in objects} >= {"ResourceClaim", "ResourceClaimTemplate"}
    for obj in objects:
        assert validate_any(obj, kubernetes) == [], obj["metadata"]["name"]
    claim = find(plan, "ResourceClaim", "gpu-test4-gpu", "beta")
    assert claim["apiVersion"] == (api or "resource.k8s.io/v1")
    if api == "resource.k8s.io/v1beta1":  # the class on the request itself, as v1beta1 has it
        assert request_of(claim["spec"])["deviceClassName"] == CLASS


def test_claims_go_before_the_pods_that_hold_them(tmp_path: Path) -> None:
    plan = compiled(tmp_path)
    order = [(m.kind, m.name) for m in plan.objects]
    assert order.index(("ResourceClaim", "gpu-test3-gpu")) < order.index(("Deployment", "gpu-test3"))


# --- admission: a shared claim is its own workload's ---------------------------------------------------------------


def admission(tmp_path: Path) -> Admission:
    return Admission([m.obj for m in compiled(tmp_path).by_family("dra-admission")])


def namespace(name: str) -> dict[str, Any]:
    labels = {"kubernetes.io/metadata.name": name, "gpustack.io/tenant": name}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def pod(namespace_name: str, workload: str | None, claim: dict[str, str]) -> dict[str, Any]:
    labels = {} if workload is None else {WORKLOAD_LABEL: workload}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": namespace_name, "labels": labels},
        "spec": {
            "containers": [{"name": "c", "image": "i", "resources": {"claims": [{"name": "gpu"}]}}],
            "resourceClaims": [{"name": "gpu", **claim}],
        },
    }


def review(admit: Admission, obj: dict[str, Any], ns: str) -> Any:
    verdict = admit.review(Request("CREATE", obj, namespace(ns)))
    assert verdict.not_evaluated == []
    return verdict


def test_a_pod_of_the_workload_holds_its_shared_claim(tmp_path: Path) -> None:
    admit = admission(tmp_path)
    assert review(admit, pod("alpha", "gpu-test3", {"resourceClaimName": "gpu-test3-gpu"}), "alpha").admitted
    assert review(admit, pod("beta", "gpu-test4", {"resourceClaimName": "gpu-test4-gpu"}), "beta").admitted
    # A pod claiming its own devices from a template is no concern of this rule.
    assert review(admit, pod("beta", "gpu-test5", {"resourceClaimTemplateName": "gpu-test5-gpu"}), "beta").admitted


def test_attack_another_tenants_shared_claim_is_refused(tmp_path: Path) -> None:
    """Tenant beta names alpha's shared claim (with alpha's workload label too): refused, naming beta's own."""
    admit = admission(tmp_path)
    verdict = review(admit, pod("beta", "gpu-test3", {"resourceClaimName": "gpu-test3-gpu"}), "beta")
    assert not verdict.admitted
    [denial] = verdict.denials
    assert "a pod of tenant beta may hold a ResourceClaim by name only as its own workload's" in denial
    assert "beta/gpu-test4-gpu" in denial and "alpha/" not in denial


def test_attack_another_workloads_shared_claim_is_refused(tmp_path: Path) -> None:
    """Within one tenant: gpu-test2's pod riding on gpu-test3's claim would use devices its quota counted once."""
    admit = admission(tmp_path)
    assert not review(admit, pod("alpha", "gpu-test2", {"resourceClaimName": "gpu-test3-gpu"}), "alpha").admitted
    assert not review(admit, pod("alpha", None, {"resourceClaimName": "gpu-test3-gpu"}), "alpha").admitted
    # A claim gpustack never wrote, named by a pod that claims to be the workload.
    assert not review(admit, pod("alpha", "gpu-test3", {"resourceClaimName": "mine"}), "alpha").admitted


def test_attack_relabelling_a_running_pod_onto_another_claim_is_refused(tmp_path: Path) -> None:
    admit = admission(tmp_path)
    old = pod("alpha", "gpu-test3", {"resourceClaimName": "gpu-test3-gpu"})
    new = pod("alpha", "gpu-test2", {"resourceClaimName": "gpu-test3-gpu"})
    verdict = admit.review(Request("UPDATE", new, namespace("alpha"), old_object=old))
    assert verdict.not_evaluated == [] and not verdict.admitted


def test_a_shared_claim_with_sharing_config_is_admitted_on_the_tenants_class(tmp_path: Path) -> None:
    admit = admission(tmp_path)
    [theirs] = upstream("gpu-test4")
    mine = yaml.safe_load(yaml.safe_dump(theirs))
    mine["metadata"]["namespace"] = "beta"
    mine["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = CLASS
    assert review(admit, mine, "beta").admitted
    theirs["metadata"]["namespace"] = "beta"  # the recipe as written: the driver's class
    assert not review(admit, theirs, "beta").admitted


def test_every_pod_policy_expression_is_evaluated(tmp_path: Path) -> None:
    admit = admission(tmp_path)
    requests = [
        (pod("alpha", "gpu-test3", {"resourceClaimName": "gpu-test3-gpu"}), "alpha"),
        (pod("beta", "gpu-test3", {"resourceClaimName": "gpu-test3-gpu"}), "beta"),
        (pod("alpha", "gpu-test2", {"resourceClaimName": "gpu-test3-gpu"}), "alpha"),
        (pod("beta", "gpu-test4", {"resourceClaimName": "gpu-test4-gpu"}), "beta"),
        (upstream("gpu-test4")[0] | {"metadata": {"name": "c", "namespace": "beta"}}, "beta"),
    ]
    evaluated = {f for obj, ns in requests for f in review(admit, obj, ns).evaluated}
    pods = {(name, path) for name, path in admit.expressions() if name.startswith("gpustack-dra-pods-")}
    assert {name for name, _ in pods} == {"gpustack-dra-pods-alpha", "gpustack-dra-pods-beta"}
    assert pods - evaluated == set()
    # The tenant policy's rule for the driver's classes, too.
    assert ("gpustack-dra-beta", "spec.validations[0].expression") in evaluated


def test_a_tenant_without_shared_claims_gets_no_pod_policy(tmp_path: Path) -> None:
    text = blueprint_text().replace("claim: {share: pods}", "claim: {share: containers}")
    plan = compiled(tmp_path, text)
    names = {m.name for m in plan.by_family("dra-admission")}
    assert "gpustack-dra-pods-alpha" not in names and "gpustack-dra-pods-beta" in names


# --- checks ---------------------------------------------------------------------------------------------------------


def test_a_claim_on_a_device_plugin_pool_is_gs613(tmp_path: Path) -> None:
    text = blueprint_text().replace("      allocation: dra\n", "")
    [found] = diagnostics(tmp_path, text, DRA_CLAIM_OFF_DRA)[:1]
    assert "writes gpu.claim and pool 'h100' hands out its GPUs through the device plugin" in found.message
    line = text.splitlines().index("      gpu: {count: 1, claim: {share: containers}}") + 1
    assert found.span is not None and found.span.start.line == line  # gpu-test2's `claim` key


@pytest.mark.parametrize(
    ("old", "new", "words"),
    [
        ("interval: Long", "activeThreadPercentage: 20", "activeThreadPercentage is an option of MPS sharing"),
        ("strategy: MPS, activeThreadPercentage", "strategy: MPS, interval: Short, activeThreadPercentage", "interval"),
    ],
)
def test_options_of_the_other_strategy_are_gs614(tmp_path: Path, old: str, new: str, words: str) -> None:
    [found] = diagnostics(tmp_path, blueprint_text().replace(old, new), DRA_CLAIM_SHARING)
    assert words in found.message and found.hint is not None


def test_a_chart_that_predates_the_gate_is_gs614(tmp_path: Path) -> None:
    text = blueprint_text().replace('chartVersion: "0.4.1"', 'chartVersion: "0.1.0"')
    found = diagnostics(tmp_path, text, DRA_CLAIM_SHARING)
    assert len(found) == 2  # gpu-test4's TimeSlicing and gpu-test5's MPS
    assert "TimeSlicingSettings feature gate from chart 0.2.0; spec.dra.chartVersion pins 0.1.0" in found[0].message
    assert "MPSSupport" in found[1].message


def test_sharing_config_on_mig_devices_is_gs614(tmp_path: Path) -> None:
    text = (
        blueprint_text()
        .replace(
            "        - {key: gpustack.io/pool, value: h100, effect: NoSchedule}\n",
            "        - {key: gpustack.io/pool, value: h100, effect: NoSchedule}\n"
            '      sharing:\n        strategy: mig\n        mig: {strategy: mixed, layout: {"3g.40gb": 2}}\n',
        )
        .replace("h100: {gpu: 8}", "h100: {mig-3g.40gb: 16}")
    )
    text = text.replace("NVIDIA-H100-80GB-HBM3", "A100-SXM4-80GB").replace(
        "gpu: {count: 1, claim", "gpu: {profile: 3g.40gb, claim"
    )
    text = text.replace("        count: 1\n", "        profile: 3g.40gb\n")
    found = diagnostics(tmp_path, text, DRA_CLAIM_SHARING)
    assert [d.message.split(":")[0] for d in found] == [
        "workload 'gpu-test4' claims MIG devices (3g.40gb) with TimeSlicing sharing",
        "workload 'gpu-test5' claims MIG devices (3g.40gb) with MPS sharing",
    ]


@pytest.mark.parametrize("kind", ["JobSet", "LeaderWorkerSet"])
def test_a_multi_node_workload_sharing_one_claim_is_gs615(tmp_path: Path, kind: str) -> None:
    extra = "      workers: 2\n" if kind == "JobSet" else "      size: 2\n"
    text = blueprint_text().replace(
        "      kind: Deployment\n      replicas: 2\n      image: ubuntu:22.04\n",
        f"      kind: {kind}\n{extra}      image: ubuntu:22.04\n",
        1,
    )
    [found] = diagnostics(tmp_path, text, DRA_SHARED_CLAIM_SPREAD)
    assert f"{kind} 'gpu-test3' shares one claim between its pods" in found.message


def test_a_shared_claim_counts_once_against_the_tenants_quota(tmp_path: Path) -> None:
    """Eight pods of gpu-test3 hold one device: within alpha's quota of 8 with gpu-test2's, no GS505 (quota below
    demand), as the ResourceQuota counts the claim once; eight pods with their own claims would be 9."""
    text = blueprint_text().replace("      replicas: 2\n", "      replicas: 8\n", 1)
    assert [d.message for d in validate_path(copy_case(tmp_path, text)).diagnostics] == []
    own = text.replace("claim: {share: pods}", "claim: {share: containers}")
    [found] = [d for d in validate_path(copy_case(tmp_path, own)).diagnostics if d.code == "GS505"]
    assert "request 9 nvidia.com/gpu in pool 'h100', its quota allows 8" in found.message


# --- templates (GS606) ----------------------------------------------------------------------------------------------


def with_template(tmp_path: Path, body: str) -> list[str]:
    text = blueprint_text().replace(
        "      gpu: {count: 1, claim: {share: pods}}\n",
        "      gpu: {count: 1, claim: {share: pods}}\n      template: swap.yaml.j2\n",
    )
    path = copy_case(tmp_path, text)
    (tmp_path / "swap.yaml.j2").write_text(body, encoding="utf-8")
    return [d.message for d in validate_path(path).diagnostics if d.code == TEMPLATE_ERROR]


def test_a_template_keeping_the_shared_claim_passes(tmp_path: Path) -> None:
    assert with_template(tmp_path, "{{ manifest | toyaml }}\n") == []


def test_attack_a_template_naming_another_workloads_claim_is_gs606(tmp_path: Path) -> None:
    swap = (
        "{%- set _ = manifest.spec.template.spec.resourceClaims[0].update({'resourceClaimName': 'gpu-test4-gpu'}) -%}"
        "\n{{ manifest | toyaml }}\n"
    )
    [message] = with_template(tmp_path, swap)
    assert "claims no devices from ResourceClaim gpu-test3-gpu" in message


def test_a_template_adding_a_second_claim_is_gs606(tmp_path: Path) -> None:
    extra = (
        "{%- set _ = manifest.spec.template.spec.resourceClaims.append("
        "{'name': 'more', 'resourceClaimName': 'gpu-test4-gpu'}) -%}\n{{ manifest | toyaml }}\n"
    )
    [message] = with_template(tmp_path, extra)
    assert "resourceClaims other than gpustack's one claim from ResourceClaim gpu-test3-gpu" in message


# --- simulate: a shared claim is allocated once, on one node -------------------------------------------------------


def simulate_json(tmp_path: Path, text: str | None = None) -> dict[str, Any]:
    import json

    from click.testing import CliRunner

    from gpustack.cli import group

    result = CliRunner().invoke(group, ["simulate", str(copy_case(tmp_path, text)), "--output", "json"])
    data: dict[str, Any] = json.loads(result.output)
    return data


def test_simulate_places_the_pods_of_a_shared_claim_on_its_node_and_counts_it_once(tmp_path: Path) -> None:
    data = simulate_json(tmp_path)
    assert data["pending"] == []
    nodes = {w["name"]: {p["node"] for p in w["placements"]} for w in data["workloads"]}
    assert len(nodes["gpu-test3"]) == 1 and len(nodes["gpu-test4"]) == 1  # both holders beside the claim's devices
    pools = {p["name"]: {r["resource"]: r for r in p["resources"]} for p in data["pools"]}
    # One device per workload: gpu-test3's and gpu-test4's two pods hold one claim each.
    assert pools["h100"][f"claim:{CLASS}"]["requested"] == "4"
    quota = next(q for q in data["quotas"] if q["namespace"] == "alpha" and q["quota"] == "gpustack-dra-devices")
    used = {r["resource"]: r["used"] for r in quota["resources"]}
    assert used[f"{CLASS}.deviceclass.resource.k8s.io/devices"] == "2"


def test_simulate_keeps_holders_on_the_claims_node_when_it_fills(tmp_path: Path) -> None:
    """Eight holders of one claim, each asking 32 CPUs: the claim's node takes what its CPUs allow and the rest wait,
    though the other node is empty (its devices are not the claim's)."""
    text = blueprint_text().replace("      replicas: 2\n", "      replicas: 8\n", 1)
    text = text.replace(
        'gpu: {count: 1, claim: {share: pods}}\n      resources: {cpu: "1", memory: 80Gi}',
        'gpu: {count: 1, claim: {share: pods}}\n      resources: {cpu: "32", memory: 80Gi}',
    )
    text = text.replace(
        "      allocation: dra\n", '      allocation: dra\n      nodeResources: {cpu: "100", memory: 2Ti}\n'
    )
    data = simulate_json(tmp_path, text)
    [workload] = [w for w in data["workloads"] if w["name"] == "gpu-test3"]
    assert len({p["node"] for p in workload["placements"]}) == 1
    assert 0 < workload["placed"] < 8 and workload["pending"] == 8 - workload["placed"]

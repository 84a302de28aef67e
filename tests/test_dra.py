"""DRA pools: DeviceClasses judged by a real CEL engine against devices as the NVIDIA driver publishes them, every DRA
object strictly valid at each Kubernetes version that serves it, claims admitted for their own tenant only, device
quotas, and version gating."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import celpy
import pytest
import yaml
from admission_cel import Admission, Request
from builders import sourceless
from celpy import celtypes
from conftest import BLUEPRINTS
from manifest_schemas import validate_any

from gpustack.catalog import load_catalog
from gpustack.codes import DRA_API_UNAVAILABLE, DRA_BETA_API, TEMPLATE_ERROR
from gpustack.compile import compile_blueprint
from gpustack.context import Context, unplaced
from gpustack.dra import V1, V1BETA1, V1BETA2, class_name, selector
from gpustack.outputs import render_files
from gpustack.plan import Plan
from gpustack.simulate.claims import claim_resource
from gpustack.simulate.cluster import Cluster
from gpustack.simulate.demand import Pod, Source
from gpustack.simulate.inventory import Node
from gpustack.simulate.messages import KubeVersion
from gpustack.simulate.placement import KubeJudge
from gpustack.simulate.pods import PODS, PodShape
from gpustack.simulate.scheduler import Refusals, Unplaced, schedule_pod
from gpustack.validation import validate_path

DRA_BLUEPRINT = BLUEPRINTS / "dra.yaml"
DRIVER = "gpu.nvidia.com"
NAME_LABEL = "kubernetes.io/metadata.name"

# --- a CEL engine with the two Kubernetes library functions the selectors use ---------------------------------------

_SUFFIX = {"": 1, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "k": 10**3, "M": 10**6, "G": 10**9}
_QUANTITY = re.compile(r"^([0-9]+)(Ki|Mi|Gi|Ti|k|M|G)?$")


class Quantity(celtypes.StringType):
    """Kubernetes' quantity type, as much of it as device capacities need (whole numbers with a suffix)."""

    @property
    def value(self) -> int:
        match = _QUANTITY.match(str(self))
        assert match is not None, f"not a quantity: {self}"
        return int(match[1]) * _SUFFIX[match[2] or ""]


def _quantity(text: celtypes.StringType) -> Quantity:
    return Quantity(str(text))


def _compare_to(left: Quantity, right: Quantity) -> celtypes.IntType:
    a, b = Quantity(str(left)).value, Quantity(str(right)).value
    return celtypes.IntType((a > b) - (a < b))


def select(expression: str, device: dict[str, Any]) -> bool:
    """Evaluate a DeviceClass selector with cel-python the way the scheduler does for one published device."""
    environment = celpy.Environment()
    program = environment.program(
        environment.compile(expression), functions={"quantity": _quantity, "compareTo": _compare_to}
    )
    capacity = {domain: {k: Quantity(v) for k, v in values.items()} for domain, values in device["capacity"].items()}
    activation = celpy.json_to_cel({**device, "capacity": {}})
    activation["capacity"] = celtypes.MapType(
        {
            celtypes.StringType(d): celtypes.MapType({celtypes.StringType(k): v for k, v in c.items()})
            for d, c in capacity.items()
        }
    )
    result = program.evaluate({"device": activation})
    assert isinstance(result, celtypes.BoolType), f"{expression} -> {result!r}"
    return bool(result)


def gpu(product: str, memory_mib: int) -> dict[str, Any]:
    """A full GPU as dra-driver-nvidia-gpu publishes it (deviceinfo.go): type gpu, NVML's productName, bytes."""
    return {
        "driver": DRIVER,
        "attributes": {
            DRIVER: {
                "type": "gpu",
                "uuid": "GPU-4cf8db2d-06c0-7d70-1a51-e59b25b2c16c",
                "productName": product,
                "brand": "Nvidia",
                "architecture": "Hopper" if "H100" in product else "Ampere",
                "cudaComputeCapability": "9.0.0",
                "driverVersion": "570.158.1",
            }
        },
        "capacity": {DRIVER: {"memory": str(memory_mib * 2**20)}},
    }


def mig(product: str, profile: str, memory_mib: int) -> dict[str, Any]:
    """A pre-made MIG device (mig.go): type mig, the parent's productName, its profile, its own memory."""
    device = gpu(product, memory_mib)
    device["attributes"][DRIVER].update({"type": "mig", "profile": profile, "parentUUID": "GPU-4cf8db2d"})
    return device


# --- the example ----------------------------------------------------------------------------------------------------


def compile_text(tmp_path: Path, text: str) -> tuple[Plan, Context]:
    path = tmp_path / "blueprint.yaml"
    path.write_text(text, encoding="utf-8")
    result = validate_path(path)
    errors = [d for d in result.diagnostics if d.severity == "error"]
    assert result.blueprint is not None and not errors, [d.message for d in result.diagnostics]
    return compile_blueprint(sourceless(result.blueprint)), Context(result.blueprint, load_catalog(), unplaced)


def example_text(version: str = "1.36", api: str | None = None) -> str:
    text = DRA_BLUEPRINT.read_text(encoding="utf-8").replace('version: "1.36"', f'version: "{version}"')
    if api is not None:
        text = text.replace('    chartVersion: "0.4.1"\n', f'    chartVersion: "0.4.1"\n    apiVersion: {api}\n')
    return text


def dra_objects(plan: Plan) -> list[dict[str, Any]]:
    kinds = {"DeviceClass", "ResourceClaimTemplate", "ResourceQuota", "ValidatingAdmissionPolicy"}
    return [m.obj for m in plan.objects if m.kind in kinds or "resourceClaims" in str(m.obj)]


def classes_of(plan: Plan) -> dict[str, dict[str, Any]]:
    return {m.name: m.obj for m in plan.objects if m.kind == "DeviceClass"}


# --- DeviceClass selectors against the driver's devices ---------------------------------------------------------------


def test_whole_gpu_class_selects_exactly_its_model(tmp_path: Path) -> None:
    plan, _ = compile_text(tmp_path, example_text())
    expression = classes_of(plan)["gpu.h100-train.gpustack.io"]["spec"]["selectors"][0]["cel"]["expression"]
    assert select(expression, gpu("NVIDIA H100 80GB HBM3", 81559))
    # Another model, a MIG device of the same GPU, and a device of another driver are not the pool's GPUs.
    assert not select(expression, gpu("NVIDIA A100-SXM4-80GB", 81920))
    assert not select(expression, mig("NVIDIA H100 80GB HBM3", "3g.40gb", 40448))
    other = gpu("NVIDIA H100 80GB HBM3", 81559)
    other["driver"] = "gpu.example.com"
    assert not select(expression, other)


def test_whole_gpu_class_refuses_a_smaller_board_of_the_same_name(tmp_path: Path) -> None:
    plan, _ = compile_text(tmp_path, example_text())
    expression = classes_of(plan)["gpu.h100-train.gpustack.io"]["spec"]["selectors"][0]["cel"]["expression"]
    assert not select(expression, gpu("NVIDIA H100 80GB HBM3", 40960))


def test_mig_class_selects_its_profile_on_its_model_only(tmp_path: Path) -> None:
    plan, _ = compile_text(tmp_path, example_text())
    expression = classes_of(plan)["mig-3g.40gb.a100-mig.gpustack.io"]["spec"]["selectors"][0]["cel"]["expression"]
    assert select(expression, mig("NVIDIA A100-SXM4-80GB", "3g.40gb", 40192))
    assert select(expression, mig("A100-SXM-80GB", "3g.40gb", 40192))  # the R450/R460 drivers' NVML name
    assert not select(expression, mig("NVIDIA A100-SXM4-80GB", "1g.10gb", 9728))
    assert not select(expression, mig("NVIDIA H100 80GB HBM3", "3g.40gb", 40448))
    assert not select(expression, gpu("NVIDIA A100-SXM4-80GB", 81920))


def test_every_catalog_model_class_selects_its_own_nvml_names() -> None:
    """For every GPU model gpustack knows, the whole-GPU selector takes each of its NVML names at its smallest reported
    memory, and refuses every other model's names."""
    catalog = load_catalog()
    models = list(catalog.models.values()) if isinstance(catalog.models, dict) else list(catalog.models)
    for model in models:
        expression = selector(model, None)
        for name in model.nvml_names:
            assert select(expression, gpu(name, min(model.memory_mib))), (model.key, name)
        for other in models:
            foreign = [n for n in other.nvml_names if n not in model.nvml_names]
            for name in foreign:
                assert not select(expression, gpu(name, max(other.memory_mib))), (model.key, name)


# --- strict schemas at every version that serves the API ----------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "api"),
    [("1.34", None), ("1.35", None), ("1.36", None), ("1.37", None), ("1.33", V1BETA2), ("1.32", V1BETA1)],
)
def test_every_dra_object_is_valid_at_the_version(tmp_path: Path, version: str, api: str | None) -> None:
    plan, _ = compile_text(tmp_path, example_text(version, api))
    objects = dra_objects(plan)
    kinds = {obj["kind"] for obj in objects}
    assert {"DeviceClass", "ResourceClaimTemplate", "ResourceQuota", "Deployment", "Job"} <= kinds
    assert all(
        obj["apiVersion"] == (api or V1) for obj in objects if obj["kind"] in ("DeviceClass", "ResourceClaimTemplate")
    )
    errors = [error for obj in objects for error in validate_any(obj, version)]
    assert errors == []


def test_extended_resource_name_only_where_the_version_serves_it(tmp_path: Path) -> None:
    at_136 = classes_of(compile_text(tmp_path, example_text("1.36"))[0])
    at_135 = classes_of(compile_text(tmp_path, example_text("1.35"))[0])
    assert at_136["gpu.h100-train.gpustack.io"]["spec"]["extendedResourceName"] == "nvidia.com/gpu"
    assert at_136["mig-3g.40gb.a100-mig.gpustack.io"]["spec"]["extendedResourceName"] == "nvidia.com/mig-3g.40gb"
    assert all("extendedResourceName" not in c["spec"] for c in at_135.values())


def test_two_dra_pools_mapping_one_extended_resource_map_none(tmp_path: Path) -> None:
    text = example_text().replace(
        "    - name: l4-serve\n      gpu: {model: L4, count: 4}\n",
        "    - name: l4-serve\n      allocation: dra\n      gpu: {model: L4, count: 4}\n",
    )
    classes = classes_of(compile_text(tmp_path, text)[0])
    assert "extendedResourceName" not in classes["gpu.h100-train.gpustack.io"]["spec"]
    assert "extendedResourceName" not in classes["gpu.l4-serve.gpustack.io"]["spec"]
    assert classes["mig-3g.40gb.a100-mig.gpustack.io"]["spec"]["extendedResourceName"] == "nvidia.com/mig-3g.40gb"


# --- where the driver runs, and what the device plugin no longer serves ----------------------------------------------


def node_labels_of(plan: Plan) -> dict[str, dict[str, str]]:
    """Each static node's labels, as nodes.yaml patches them (and label-nodes.sh sets them)."""
    nodes: dict[str, dict[str, str]] = {}
    for m in plan.objects:
        if m.kind == "Node":
            nodes.setdefault(m.name, {}).update(m.obj["metadata"].get("labels", {}))
    return nodes


def _matches(labels: dict[str, str], terms: list[dict[str, Any]]) -> bool:
    """Whether a node with these labels passes required node affinity (the operators gpustack writes)."""

    def one(requirement: dict[str, Any]) -> bool:
        value, operator = labels.get(requirement["key"]), requirement["operator"]
        if operator == "In":
            return value in requirement["values"]
        if operator == "NotIn":
            return value not in requirement["values"]
        if operator == "Exists":
            return value is not None
        assert operator == "DoesNotExist", operator
        return value is None

    return any(all(one(r) for r in term.get("matchExpressions", [])) for term in terms)


def plugin_nodes(plan: Plan, nodes: dict[str, dict[str, str]]) -> set[str]:
    """The nodes an NVIDIA device plugin runs on, as the chart or the GPU Operator decides it from labels."""
    releases = {r.name: r for r in plan.releases}
    if "gpu-operator" in releases:
        # The operator deploys its plugin on every GPU node unless nvidia.com/gpu.deploy.device-plugin is "false".
        return {n for n, labels in nodes.items() if labels.get("nvidia.com/gpu.deploy.device-plugin") != "false"}
    affinity = releases["nvidia-device-plugin"].values["affinity"]["nodeAffinity"]
    terms = affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    return {n for n, labels in nodes.items() if _matches(labels, terms)}


@pytest.mark.parametrize("stack", ["gpu-operator", "device-plugin"])
def test_driver_release_runs_only_on_dra_pools_and_the_plugin_only_elsewhere(tmp_path: Path, stack: str) -> None:
    text = example_text().replace("spec:\n  kubernetes:", f"spec:\n  stack: {stack}\n  kubernetes:", 1)
    plan, _ = compile_text(tmp_path, text)
    releases = {r.name: r for r in plan.releases}
    assert ("gpu-operator" in releases) is (stack == "gpu-operator")
    driver = releases["nvidia-dra-driver-gpu"]
    assert driver.chart_ref == "oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu"
    assert driver.values["gpuResourcesEnabledOverride"] is True
    terms = driver.values["kubeletPlugin"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == ["h100-train", "a100-mig"]
    nodes = node_labels_of(plan)
    driver_nodes = {n for n, labels in nodes.items() if _matches(labels, terms["nodeSelectorTerms"])}
    # Never a device plugin and the DRA driver on one node, whichever stack runs the plugin.
    assert driver_nodes == {"h100-a", "h100-b", "a100-a"}
    assert plugin_nodes(plan, nodes) == {"l4-a", "l4-b"}
    assert "nvidia.com/device-plugin.config" not in nodes["h100-a"]
    assert "nvidia.com/device-plugin.config" in nodes["l4-a"]
    if stack == "gpu-operator":
        assert nodes["h100-a"]["nvidia.com/gpu.deploy.device-plugin"] == "false"
        assert "nvidia.com/gpu.deploy.device-plugin" not in nodes["l4-a"]
        # The operator's plugin gets a config for the plugin's pools only (and the default), none for a DRA pool.
        configs = releases["gpu-operator"].values["devicePlugin"]["config"]["data"]
        assert nodes["l4-a"]["nvidia.com/device-plugin.config"] in configs
        assert not [key for key in configs if "h100" in key or "a100" in key]


def test_no_release_and_no_classes_without_dra_pools() -> None:
    result = validate_path(BLUEPRINTS / "multi-tenant.yaml")
    assert result.blueprint is not None
    plan = compile_blueprint(sourceless(result.blueprint))
    assert not [m for m in plan.objects if m.kind in ("DeviceClass", "ResourceClaimTemplate")]
    assert "nvidia-dra-driver-gpu" not in {r.name for r in plan.releases}


# --- quotas ----------------------------------------------------------------------------------------------------------


def test_tenant_quota_becomes_device_counts_per_class(tmp_path: Path) -> None:
    plan, _ = compile_text(tmp_path, example_text())
    research = plan.find("ResourceQuota", "gpustack-dra-devices", "research")
    inference = plan.find("ResourceQuota", "gpustack-dra-devices", "inference")
    assert research is not None and inference is not None
    assert research.obj["spec"]["hard"] == {
        "gpu.h100-train.gpustack.io.deviceclass.resource.k8s.io/devices": "16",
        "gpu.nvidia.com.deviceclass.resource.k8s.io/devices": "0",
        "mig-3g.40gb.a100-mig.gpustack.io.deviceclass.resource.k8s.io/devices": "0",
        "mig.nvidia.com.deviceclass.resource.k8s.io/devices": "0",
        "vfio.gpu.nvidia.com.deviceclass.resource.k8s.io/devices": "0",
    }
    hard = inference.obj["spec"]["hard"]
    assert hard["mig-3g.40gb.a100-mig.gpustack.io.deviceclass.resource.k8s.io/devices"] == "16"
    assert hard["gpu.h100-train.gpustack.io.deviceclass.resource.k8s.io/devices"] == "0"


# --- admission: own vs foreign claims -------------------------------------------------------------------------------


def namespace(name: str, tenant: str | None = None) -> dict[str, Any]:
    labels = {NAME_LABEL: name}
    if tenant is not None:
        labels["gpustack.io/tenant"] = tenant
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def claim(ns: str, device_class: str, *, template: bool = False, api: str = V1, **extra: Any) -> dict[str, Any]:
    request: dict[str, Any] = {"name": "gpu"}
    exact = {"deviceClassName": device_class, "allocationMode": "ExactCount", "count": 1, **extra}
    if api == V1BETA1:
        request.update(exact)
    else:
        request["exactly"] = exact
    spec = {"devices": {"requests": [request]}}
    kind = "ResourceClaimTemplate" if template else "ResourceClaim"
    body = {"spec": spec} if template else spec
    return {"apiVersion": api, "kind": kind, "metadata": {"name": "c", "namespace": ns}, "spec": body}


def admission(tmp_path: Path) -> Admission:
    plan, _ = compile_text(tmp_path, example_text())
    return Admission([m.obj for m in plan.by_family("dra-admission")])


def review(admit: Admission, obj: dict[str, Any], ns: dict[str, Any]) -> Any:
    verdict = admit.review(Request("CREATE", obj, ns))
    assert verdict.not_evaluated == []
    return verdict


H100 = class_name("h100-train", None)
MIG = class_name("a100-mig", "3g.40gb")


@pytest.mark.parametrize("template", [False, True])
def test_a_tenant_may_claim_its_own_pools_classes(tmp_path: Path, template: bool) -> None:
    admit = admission(tmp_path)
    assert review(admit, claim("research", H100, template=template), namespace("research", "research")).admitted
    assert review(admit, claim("inference", MIG, template=template), namespace("inference", "inference")).admitted


@pytest.mark.parametrize("template", [False, True])
def test_a_tenant_may_not_claim_another_tenants_class(tmp_path: Path, template: bool) -> None:
    admit = admission(tmp_path)
    verdict = review(admit, claim("inference", H100, template=template), namespace("inference", "inference"))
    assert not verdict.admitted
    assert any("tenant inference may claim devices only of the DeviceClasses" in d for d in verdict.denials)


def test_a_tenant_may_not_claim_the_drivers_catch_all_class(tmp_path: Path) -> None:
    admit = admission(tmp_path)
    assert not review(admit, claim("research", "gpu.nvidia.com"), namespace("research", "research")).admitted


def test_first_available_alternatives_are_checked_too(tmp_path: Path) -> None:
    admit = admission(tmp_path)
    obj = claim("research", H100)
    request = obj["spec"]["devices"]["requests"][0]
    del request["exactly"]
    request["firstAvailable"] = [{"name": "mine", "deviceClassName": H100}, {"name": "theirs", "deviceClassName": MIG}]
    assert not review(admit, obj, namespace("research", "research")).admitted
    request["firstAvailable"] = [{"name": "mine", "deviceClassName": H100}]
    assert review(admit, obj, namespace("research", "research")).admitted


def test_admin_access_is_refused(tmp_path: Path) -> None:
    admit = admission(tmp_path)
    verdict = review(admit, claim("research", H100, adminAccess=True), namespace("research", "research"))
    assert any("adminAccess" in d for d in verdict.denials)


def test_a_v1beta1_claim_is_judged_the_same(tmp_path: Path) -> None:
    admit = admission(tmp_path)
    assert review(admit, claim("research", H100, api=V1BETA1), namespace("research", "research")).admitted
    assert not review(admit, claim("research", MIG, api=V1BETA1), namespace("research", "research")).admitted


def test_a_namespace_of_no_tenant_may_not_claim_granted_pools(tmp_path: Path) -> None:
    admit = admission(tmp_path)
    stray = namespace("sandbox")
    assert not review(admit, claim("sandbox", H100), stray).admitted
    assert not review(admit, claim("sandbox", "gpu.nvidia.com"), stray).admitted
    # Another driver's classes stay open to it: gpustack governs GPUs only.
    assert review(admit, claim("sandbox", "nic.example.com"), stray).admitted


def test_the_driver_namespace_is_left_alone(tmp_path: Path) -> None:
    admit = admission(tmp_path)
    assert review(admit, claim("nvidia-dra-driver-gpu", "gpu.nvidia.com"), namespace("nvidia-dra-driver-gpu")).admitted


# --- version gating ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "api", "code", "words"),
    [
        ("1.33", None, DRA_API_UNAVAILABLE, "arrives in Kubernetes 1.34"),
        ("1.31", None, DRA_API_UNAVAILABLE, "arrives in Kubernetes 1.34"),
        ("1.33", V1, DRA_API_UNAVAILABLE, "served from Kubernetes 1.34"),
        ("1.32", V1BETA2, DRA_API_UNAVAILABLE, "served from Kubernetes 1.33"),
        ("1.33", V1BETA2, DRA_BETA_API, "a beta API"),
        ("1.35", V1BETA1, DRA_BETA_API, "deprecated"),
    ],
)
def test_version_gating(tmp_path: Path, version: str, api: str | None, code: str, words: str) -> None:
    path = tmp_path / "blueprint.yaml"
    path.write_text(example_text(version, api), encoding="utf-8")
    found = [d for d in validate_path(path).diagnostics if d.code == code]
    assert len(found) == 1 and words in found[0].message, [d.message for d in validate_path(path).diagnostics]
    assert found[0].hint


def test_compile_output_is_deterministic(tmp_path: Path) -> None:
    first, _ = compile_text(tmp_path, example_text())
    second, _ = compile_text(tmp_path, example_text())
    assert [m.obj for m in first.objects] == [m.obj for m in second.objects]
    assert copy.deepcopy(first.releases) == second.releases


def test_every_dra_policy_expression_is_evaluated(tmp_path: Path) -> None:
    """The cases above, together, evaluate every expression of every DRA policy (none passes unexamined)."""
    admit = admission(tmp_path)
    requests = [
        (claim("research", H100), namespace("research", "research")),
        (claim("research", H100, template=True, adminAccess=False), namespace("research", "research")),
        (claim("inference", H100), namespace("inference", "inference")),
        (claim("sandbox", H100), namespace("sandbox")),
    ]
    evaluated = {f for obj, ns in requests for f in review(admit, obj, ns).evaluated}
    assert admit.expressions() - evaluated == set()


# --- workload templates on DRA pools --------------------------------------------------------------------------------


def with_template(text: str) -> str:
    return text.replace(
        "      image: research/pretrain:1.4.0\n",
        "      image: research/pretrain:1.4.0\n      template: job.yaml.j2\n",
    )


def test_a_template_that_keeps_gpustacks_job_keeps_its_claim(tmp_path: Path) -> None:
    (tmp_path / "job.yaml.j2").write_text(
        "{%- set _ = manifest.spec.update({'activeDeadlineSeconds': 600}) -%}\n{{ manifest | toyaml }}\n"
    )
    plan, _ = compile_text(tmp_path, with_template(example_text()))
    job = plan.find("Job", "pretrain", "research")
    assert job is not None and job.obj["spec"]["activeDeadlineSeconds"] == 600
    assert job.obj["spec"]["template"]["spec"]["resourceClaims"] == [
        {"name": "gpu", "resourceClaimTemplateName": "pretrain-gpu"}
    ]


def test_a_template_that_drops_the_claim_is_refused(tmp_path: Path) -> None:
    (tmp_path / "job.yaml.j2").write_text(
        "{%- set _ = manifest.spec.template.spec.pop('resourceClaims') -%}\n{{ manifest | toyaml }}\n"
    )
    path = tmp_path / "blueprint.yaml"
    path.write_text(with_template(example_text()), encoding="utf-8")
    found = [d for d in validate_path(path).diagnostics if d.code == TEMPLATE_ERROR]
    assert len(found) == 1
    assert "claims no devices from ResourceClaimTemplate pretrain-gpu" in found[0].message
    assert found[0].hint is not None and "resourceClaims" in found[0].hint


def template_errors(tmp_path: Path, template: str, text: str | None = None) -> list[str]:
    (tmp_path / "job.yaml.j2").write_text(template, encoding="utf-8")
    path = tmp_path / "blueprint.yaml"
    path.write_text(with_template(text or example_text()), encoding="utf-8")
    return [d.message for d in validate_path(path).diagnostics if d.code == TEMPLATE_ERROR]


def test_a_template_may_not_render_a_claim_or_claim_template_itself(tmp_path: Path) -> None:
    """Only gpustack writes ResourceClaimTemplates (on its pool's class, under the tenant's device quota): a
    template's own would pick any class, the driver's catch-all gpu.nvidia.com included."""
    for kind in ("ResourceClaimTemplate", "ResourceClaim"):
        own = (
            f"apiVersion: resource.k8s.io/v1\nkind: {kind}\nmetadata: {{name: mine}}\nspec:\n"
            "  devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.nvidia.com}}]}\n"
        )
        [message] = template_errors(tmp_path, own)
        assert f"renders {kind} (resource.k8s.io/v1), which a tenant's template may not emit" in message


def test_a_template_may_not_add_a_claim_of_its_own(tmp_path: Path) -> None:
    extra = (
        "{%- set _ = manifest.spec.template.spec.resourceClaims.append("
        "{'name': 'more', 'resourceClaimTemplateName': 'embedder-gpu'}) -%}\n{{ manifest | toyaml }}\n"
    )
    [message] = template_errors(tmp_path, extra)
    assert "resourceClaims other than gpustack's one claim from ResourceClaimTemplate pretrain-gpu" in message


def test_a_template_on_a_device_plugin_pool_may_not_claim_devices(tmp_path: Path) -> None:
    text = example_text().replace("nodes: [h100-a, h100-b]\n      allocation: dra\n", "nodes: [h100-a, h100-b]\n")
    claim = (
        "{%- set _ = manifest.spec.template.spec.update({'resourceClaims': "
        "[{'name': 'gpu', 'resourceClaimTemplateName': 'embedder-gpu'}]}) -%}\n{{ manifest | toyaml }}\n"
    )
    [message] = template_errors(tmp_path, claim, text)
    assert "pod spec has resourceClaims, and pool 'h100-train' hands out its GPUs through the device plugin" in message
    assert template_errors(tmp_path, "{{ manifest | toyaml }}\n", text) == []


def test_a_selector_pool_on_dra_gets_the_driver_and_devices_for_each_node_it_may_hold(tmp_path: Path) -> None:
    """A DRA pool chosen by labels: the driver follows its selector, the quota check and simulate count devices
    for its node count (count: 3 nodes of 8 H100s = 24), and no device plugin is told to serve it."""
    text = example_text().replace(
        "      nodes: [h100-a, h100-b]\n      allocation: dra\n",
        "      selector: {matchLabels: {cloud.google.com/gke-nodepool: h100}}\n      count: 3\n      allocation: dra\n",
    )
    text = text.replace("h100-train: {gpu: 16}", "h100-train: {gpu: 24}")
    plan, _ = compile_text(tmp_path, text)
    driver = {r.name: r for r in plan.releases}["nvidia-dra-driver-gpu"]
    affinity = driver.values["kubeletPlugin"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    terms = affinity["nodeSelectorTerms"]
    assert {
        "matchExpressions": [{"key": "cloud.google.com/gke-nodepool", "operator": "In", "values": ["h100"]}]
    } in terms
    assert {"matchExpressions": [{"key": "gpustack.io/pool", "operator": "In", "values": ["a100-mig"]}]} in terms
    quota = plan.find("ResourceQuota", "gpustack-dra-devices", "research")
    assert quota is not None
    assert quota.obj["spec"]["hard"]["gpu.h100-train.gpustack.io.deviceclass.resource.k8s.io/devices"] == "24"
    node_pool = yaml.safe_load(render_files(plan)["nodes/h100-train.node-pool.yaml"])
    labels = node_pool["labels"]  # what the provider must set: no plugin config, and the operator's plugin off
    assert "nvidia.com/device-plugin.config" not in labels
    assert labels["nvidia.com/gpu.deploy.device-plugin"] == "false"
    data = simulate_json(tmp_path, text)
    pools = {p["name"]: {r["resource"]: r for r in p["resources"]} for p in data["pools"]}
    devices = pools["h100-train"]["claim:gpu.h100-train.gpustack.io"]
    assert (devices["allocatable"], devices["requested"]) == ("24", "8")
    assert data["pending"] == []


# --- simulate --------------------------------------------------------------------------------------------------------


def simulate_json(tmp_path: Path, text: str) -> dict[str, Any]:
    import json

    from click.testing import CliRunner

    from gpustack.cli import group

    path = tmp_path / "blueprint.yaml"
    path.write_text(text, encoding="utf-8")
    result = CliRunner().invoke(group, ["simulate", str(path), "--output", "json"])
    data: dict[str, Any] = json.loads(result.output)
    return data


def test_simulate_counts_claimed_devices_per_node_and_against_the_device_quota(tmp_path: Path) -> None:
    data = simulate_json(tmp_path, example_text())
    assert data["pending"] == []
    pools = {p["name"]: {r["resource"]: r for r in p["resources"]} for p in data["pools"]}
    devices = pools["a100-mig"]["claim:mig-3g.40gb.a100-mig.gpustack.io"]
    assert (devices["allocatable"], devices["requested"]) == ("16", "4")
    assert not [r for r in pools["h100-train"] if r.startswith("nvidia.com/")], "a DRA node advertises no nvidia.com/*"
    quota = next(q for q in data["quotas"] if q["namespace"] == "inference" and q["quota"] == "gpustack-dra-devices")
    used = {r["resource"]: (r["used"], r["hard"]) for r in quota["resources"]}
    assert used["mig-3g.40gb.a100-mig.gpustack.io.deviceclass.resource.k8s.io/devices"] == ("4", "16")


def test_simulate_refuses_claims_beyond_the_pools_devices_in_the_schedulers_words(tmp_path: Path) -> None:
    text = example_text("1.35").replace(
        "      replicas: 4\n      image: inference/embedder", "      replicas: 17\n      image: inference/embedder"
    )
    text = text.replace("a100-mig: {mig-3g.40gb: 16}", "a100-mig: {mig-3g.40gb: 32}")
    data = simulate_json(tmp_path, text)
    [pending] = data["pending"]
    assert pending["pod"] == "embedder-16"
    assert data["messages"][pending["messageIndex"]] == (
        "0/5 nodes are available: 1 cannot allocate all claims, 4 node(s) had untolerated taint(s). "
        "still not schedulable, preemption: 0/5 nodes are available: 5 Preemption is not helpful for scheduling."
    )


def test_a_remembered_claim_refusal_is_dropped_once_another_pod_frees_the_devices() -> None:
    """h16's per-shape refusal cache: a claim-holding pod refused for want of devices fits as soon as an unbind
    frees them (device allocation goes through Cluster.bind/unbind, so the cluster's generation moves)."""
    version = KubeVersion.parse("1.34")
    devices = claim_resource("gpu.h100.gpustack.io")
    cluster = Cluster([Node("n1", "h100", {"gpustack.io/pool": "h100"}, (), {devices: 8, PODS: 110})])
    shape = PodShape(requests=((devices, 6),))
    holder, waiting = (Pod(name, "team", shape, 0, False, Source(None)) for name in ("holder", "waiting"))
    refusals: Refusals = {}
    assert schedule_pod(cluster, holder, KubeJudge(version), version, False, refusals) == 0
    refused = schedule_pod(cluster, waiting, KubeJudge(version), version, False, refusals)
    assert isinstance(refused, Unplaced) and "1 cannot allocate all claims" in refused.message
    # Nothing changed: the same shape is answered from memory, word for word.
    assert schedule_pod(cluster, waiting, KubeJudge(version), version, False, refusals) is refused
    cluster.unbind(holder, 0)  # the holder ends: its claim is deallocated, its 6 devices free again
    assert schedule_pod(cluster, waiting, KubeJudge(version), version, False, refusals) == 0
    assert cluster.used[0][devices] == 6

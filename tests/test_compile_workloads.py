"""The workloads family: ready-to-use GPU workload objects, valid for real Kubernetes, free of the seed's traps."""

from __future__ import annotations

import dataclasses
import functools
import json
from pathlib import Path
from typing import Any

import manifest_schemas
import pytest
from conftest import BLUEPRINTS, CASES

from gpustack.build import build_blueprint
from gpustack.catalog import load_catalog
from gpustack.codes import TEMPLATE_ERROR
from gpustack.context import Context, unplaced
from gpustack.diagnostic import Severity
from gpustack.model import Blueprint, NodePool
from gpustack.names import MANAGED_BY, POOL_LABEL, TENANT_LABEL, WORKLOAD_LABEL
from gpustack.plan import FamilyOutput
from gpustack.validation import validate_path, validate_text
from gpustack.workloads import compile_workloads
from gpustack.yamlout import dump_all

VERSIONS = ("1.30", "1.31", manifest_schemas.newest_version())
VOLCANO_JOB_CRD = "batch.volcano.sh_jobs.yaml"

POOLS: list[dict[str, Any]] = [
    {
        "name": "a100-mig",
        "gpu": {"model": "A100-SXM4-80GB", "count": 8},
        "nodes": ["a1", "a2"],
        "nodeResources": {"cpu": "96", "memory": "1Ti"},
        "taints": [{"key": "gpustack.io/dedicated", "value": "search", "effect": "NoSchedule"}],
        "sharing": {"strategy": "mig", "mig": {"strategy": "mixed", "layout": {"3g.40gb": 2}}},
    },
    {
        "name": "l4-shared",
        "gpu": {"model": "L4", "count": 4},
        "nodes": ["l1"],
        "taints": [{"key": "gpu-pool", "value": "dev", "effect": "PreferNoSchedule"}],
        "sharing": {"strategy": "time-slicing", "timeSlicing": {"replicas": 4, "renameByDefault": True}},
    },
    {
        "name": "h100",
        "gpu": {"model": "H100-SXM5-80GB", "count": 8},
        "nodes": ["h1", "h2", "h3", "h4"],
        "taints": [
            {"key": "gpu-pool", "value": "training", "effect": "NoSchedule"},
            {"key": "example.com/maintenance", "effect": "NoExecute"},
        ],
    },
    {"name": "l4", "gpu": {"model": "L4", "count": 2}, "nodes": ["l2"]},
    {"name": "hami", "gpu": {"model": "L4", "count": 4}, "nodes": ["v1"], "sharing": {"strategy": "hami"}},
]
TENANTS: list[dict[str, Any]] = [
    {
        "name": "search",
        "namespaces": ["search-prod", "search-dev"],
        "pools": ["a100-mig", "l4-shared"],
        "priority": "high",
    },
    {"name": "research", "namespaces": ["research"], "pools": ["h100", "l4", "hami"], "scheduler": "volcano"},
]
WORKLOADS: list[dict[str, Any]] = [
    {
        "name": "llm",
        "tenant": "search",
        "pool": "a100-mig",
        "kind": "Deployment",
        "replicas": 2,
        "image": "vllm/vllm-openai:v0.6.0",
        "args": ["--port", "8000"],
        "gpu": {"profile": "3g.40gb"},
        "serve": {"port": 8000, "path": "/healthz", "startupSeconds": 900},
        "env": {"HF_HOME": "/models", "NCCL_DEBUG": "INFO"},
        "prefer": [{"weight": 50, "labels": {"topology.kubernetes.io/zone": "zone-a", "example.com/rack": "r1"}}],
    },
    {
        "name": "notebook",
        "tenant": "search",
        "pool": "l4-shared",
        "kind": "StatefulSet",
        "namespace": "search-dev",
        "image": "jupyter/base:2024",
        "gpu": {"count": 1},
        "resources": {"cpu": "3", "memory": "12Gi"},
    },
    {
        "name": "embed",
        "tenant": "search",
        "pool": "a100-mig",
        "kind": "StatefulSet",
        "image": "embed:1",
        "gpu": {"memory": "30Gi"},
        "serve": {"port": 9000},
    },
    {
        "name": "batch",
        "tenant": "research",
        "pool": "l4",
        "kind": "Job",
        "replicas": 3,
        "image": "b:1",
        "gpu": {"count": 2},
    },
    {
        "name": "ddp",
        "tenant": "research",
        "pool": "h100",
        "kind": "VolcanoJob",
        "workers": 4,
        "image": "nvcr.io/nvidia/pytorch:25.08-py3",
        "command": ["torchrun"],
        "args": ["--nproc_per_node=8", "--nnodes=4"],
        "gpu": {"count": 8},
        "nccl": {"socketIfname": "eth0", "ibDisable": True, "p2pLevel": "NVL"},
    },
    {
        "name": "vgpu",
        "tenant": "research",
        "pool": "hami",
        "kind": "Deployment",
        "image": "v:1",
        "gpu": {"memory": "10Gi"},
    },
]


def blueprint(workloads: list[dict[str, Any]] = WORKLOADS, *, check: bool = True) -> Blueprint:
    data = {
        "apiVersion": "gpustack.io/v1alpha1",
        "kind": "ClusterBlueprint",
        "metadata": {"name": "workloads"},
        "spec": {"kubernetes": {"version": "1.31"}, "nodePools": POOLS, "tenants": TENANTS, "workloads": workloads},
    }
    if check:
        result = validate_text(json.dumps(data), "test.json")
        assert result.ok, [d.message for d in result.diagnostics if d.severity is Severity.ERROR]
    return build_blueprint(data)


@functools.cache
def sample() -> Blueprint:
    return blueprint()


def compiled(bp: Blueprint | None = None) -> FamilyOutput:
    return compile_workloads(Context(bp or sample(), load_catalog(), unplaced))


def objects_of(output: FamilyOutput, workload: str) -> list[dict[str, Any]]:
    return [m.obj for m in output.objects if m.obj["metadata"]["labels"].get(WORKLOAD_LABEL) == workload]


def main_object(output: FamilyOutput, workload: str) -> dict[str, Any]:
    return [o for o in objects_of(output, workload) if o["kind"] != "Service"][-1]


def pod_specs(obj: dict[str, Any]) -> list[dict[str, Any]]:
    if obj["apiVersion"] == "batch.volcano.sh/v1alpha1":
        return [task["template"] for task in obj["spec"]["tasks"]]
    return [obj["spec"]["template"]]


def pool_of(name: str) -> NodePool:
    pool = sample().pool(name)
    assert pool is not None
    return pool


def is_crd(obj: dict[str, Any]) -> bool:
    return obj["apiVersion"].split("/")[0].endswith(manifest_schemas.CRD_GROUP_SUFFIXES)


# --- valid for real Kubernetes -------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_every_core_object_is_valid_for_real_kubernetes(version: str) -> None:
    objects = [m.obj for m in compiled().objects if not is_crd(m.obj)]
    assert {o["kind"] for o in objects} == {"Deployment", "StatefulSet", "Job", "Service"}
    errors = [e for obj in objects for e in manifest_schemas.validate_any(obj, version)]
    assert errors == []


@pytest.mark.conformance
def test_the_volcano_job_is_valid_against_volcanos_own_crd() -> None:
    manifest_schemas.skip_without_crds()
    [job] = [m.obj for m in compiled().objects if is_crd(m.obj)]
    assert manifest_schemas.crd_errors(job, VOLCANO_JOB_CRD) == []
    for version in VERSIONS:
        assert manifest_schemas.validate_any(job, version) == []


@pytest.mark.conformance
def test_a_broken_volcano_job_would_be_caught() -> None:
    manifest_schemas.skip_without_crds()
    job = main_object(compiled(), "ddp")
    broken = {**job, "spec": {**job["spec"], "minAvailable": -1}}
    assert any("minAvailable" in e for e in manifest_schemas.crd_errors(broken, VOLCANO_JOB_CRD))


def test_files_and_family() -> None:
    bp = sample()
    for manifest in compiled().objects:
        labels = manifest.obj["metadata"]["labels"]
        assert manifest.family == "workloads"
        assert manifest.file == f"workloads/{labels[TENANT_LABEL]}/{labels[WORKLOAD_LABEL]}.yaml"
        workload = next(w for w in bp.workloads if w.name == labels[WORKLOAD_LABEL])
        assert manifest.namespace == Context(bp, load_catalog(), unplaced).namespace_of(workload)


# --- the seed's traps cannot happen --------------------------------------------------------------------------------


def test_tolerations_are_exactly_the_pools_taints() -> None:
    output = compiled()
    for workload in sample().workloads:
        pool = pool_of(workload.pool)
        expected = [
            {"key": t.key, "operator": "Exists", "effect": t.effect}
            if t.value is None
            else {"key": t.key, "operator": "Equal", "value": t.value, "effect": t.effect}
            for t in pool.taints
        ]
        for template in pod_specs(main_object(output, workload.name)):
            assert template["spec"].get("tolerations", []) == expected, workload.name


def test_every_taint_is_tolerated_and_nothing_else() -> None:
    for workload in sample().workloads:
        taints = {(t.key, t.value, t.effect) for t in pool_of(workload.pool).taints}
        for template in pod_specs(main_object(compiled(), workload.name)):
            tolerated = {(t["key"], t.get("value"), t["effect"]) for t in template["spec"].get("tolerations", [])}
            assert tolerated == taints
            assert all(t["key"] for t in template["spec"].get("tolerations", []))  # no wildcard toleration


def test_required_affinity_is_gpustacks_pool_label() -> None:
    for workload in sample().workloads:
        for template in pod_specs(main_object(compiled(), workload.name)):
            node = template["spec"]["affinity"]["nodeAffinity"]
            terms = node["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
            assert terms == [{"matchExpressions": [{"key": POOL_LABEL, "operator": "In", "values": [workload.pool]}]}]


def test_preferred_terms_come_from_prefer() -> None:
    [template] = pod_specs(main_object(compiled(), "llm"))
    preferred = template["spec"]["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert preferred == [
        {
            "weight": 50,
            "preference": {
                "matchExpressions": [
                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-a"]},
                    {"key": "example.com/rack", "operator": "In", "values": ["r1"]},
                ]
            },
        }
    ]
    [template] = pod_specs(main_object(compiled(), "batch"))
    assert "preferredDuringSchedulingIgnoredDuringExecution" not in template["spec"]["affinity"]["nodeAffinity"]


def test_requested_resources_are_advertised_by_the_pool_and_requests_equal_limits() -> None:
    ctx = Context(sample(), load_catalog(), unplaced)
    for workload in sample().workloads:
        advertised = {o.resource for o in ctx.offers[workload.pool]}
        for template in pod_specs(main_object(compiled(), workload.name)):
            for container in template["spec"]["containers"]:
                requests, limits = container["resources"]["requests"], container["resources"]["limits"]
                extended = {name for name in requests if "/" in name}
                assert extended and extended <= advertised, workload.name
                assert requests == limits  # extended resources must; cpu/memory for Guaranteed QoS
                assert dict(ctx.requests[workload.name].items) == {k: int(requests[k]) for k in extended}


def test_mig_profile_requests_the_mig_resource() -> None:
    [template] = pod_specs(main_object(compiled(), "llm"))
    assert template["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/mig-3g.40gb"] == "1"
    [template] = pod_specs(main_object(compiled(), "embed"))  # 30Gi -> the smallest slice that holds it
    assert template["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/mig-3g.40gb"] == "1"


def test_time_sliced_renamed_pool_requests_gpu_shared() -> None:
    [template] = pod_specs(main_object(compiled(), "notebook"))
    limits = template["spec"]["containers"][0]["resources"]["limits"]
    assert limits["nvidia.com/gpu.shared"] == "1" and "nvidia.com/gpu" not in limits


def test_hami_memory_need_requests_gpumem() -> None:
    [template] = pod_specs(main_object(compiled(), "vgpu"))
    limits = template["spec"]["containers"][0]["resources"]["limits"]
    assert limits["nvidia.com/gpu"] == "1" and limits["nvidia.com/gpumem"] == str(10 * 1024)


def test_never_cuda_visible_devices_and_driver_capabilities_first() -> None:
    for workload in sample().workloads:
        for template in pod_specs(main_object(compiled(), workload.name)):
            env = template["spec"]["containers"][0]["env"]
            assert env[0] == {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"}
            assert "CUDA_VISIBLE_DEVICES" not in {e["name"] for e in env}


def test_user_env_follows_in_order_and_wins() -> None:
    [template] = pod_specs(main_object(compiled(), "llm"))
    env = template["spec"]["containers"][0]["env"]
    assert env == [
        {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"},
        {"name": "HF_HOME", "value": "/models"},
        {"name": "NCCL_DEBUG", "value": "INFO"},
    ]


def test_cuda_visible_devices_is_dropped_even_if_validation_was_skipped() -> None:
    workloads = [{**WORKLOADS[3], "env": {"CUDA_VISIBLE_DEVICES": "0", "A": "1"}}]
    [template] = pod_specs(main_object(compiled(blueprint(workloads, check=False)), "batch"))
    assert [e["name"] for e in template["spec"]["containers"][0]["env"]] == ["NVIDIA_DRIVER_CAPABILITIES", "A"]


# --- kinds -----------------------------------------------------------------------------------------------------------


def test_serving_deployment_has_probes_port_and_service() -> None:
    output = compiled()
    service, deployment = objects_of(output, "llm")
    assert service["kind"] == "Service" and service["spec"]["type"] == "ClusterIP"
    assert service["spec"]["ports"] == [{"name": "http", "port": 8000, "targetPort": "http", "protocol": "TCP"}]
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    assert deployment["spec"]["replicas"] == 2
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["ports"] == [{"name": "http", "containerPort": 8000, "protocol": "TCP"}]
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"] == {"path": "/healthz", "port": "http"}
    startup = container["startupProbe"]
    assert startup["periodSeconds"] == 10 and startup["failureThreshold"] == 90  # 900 s to load the model


def test_non_serving_workloads_have_no_probes_and_deployment_rolls_without_surge() -> None:
    for name in ("notebook", "batch", "ddp", "vgpu"):
        for template in pod_specs(main_object(compiled(), name)):
            container = template["spec"]["containers"][0]
            assert not {"startupProbe", "readinessProbe", "livenessProbe", "ports"} & set(container)
    assert main_object(compiled(), "vgpu")["spec"]["strategy"]["rollingUpdate"]["maxSurge"] == 0
    assert [o["kind"] for o in objects_of(compiled(), "vgpu")] == ["Deployment"]


def test_stateful_set_gets_a_headless_service_it_names() -> None:
    service, stateful_set = objects_of(compiled(), "embed")
    assert service["spec"]["clusterIP"] == "None"
    assert stateful_set["spec"]["serviceName"] == service["metadata"]["name"]
    assert service["spec"]["selector"] == stateful_set["spec"]["selector"]["matchLabels"]
    assert stateful_set["metadata"]["namespace"] == "search-prod"  # the tenant's first namespace
    notebook = main_object(compiled(), "notebook")
    assert notebook["metadata"]["namespace"] == "search-dev"


def test_service_names_are_dns_1035_labels() -> None:
    workloads = [{**WORKLOADS[2], "name": "7b-embed"}]
    service, stateful_set = objects_of(compiled(blueprint(workloads)), "7b-embed")
    assert service["metadata"]["name"] == stateful_set["spec"]["serviceName"] == "svc-7b-embed"
    assert stateful_set["metadata"]["name"] == "7b-embed"
    for version in VERSIONS:
        assert manifest_schemas.validate_any(service, version) == []


def test_job_runs_replicas_in_parallel_and_never_restarts_in_place() -> None:
    job = main_object(compiled(), "batch")
    assert job["apiVersion"] == "batch/v1"
    assert job["spec"]["parallelism"] == job["spec"]["completions"] == 3
    assert 0 < job["spec"]["backoffLimit"] <= 6
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"


def test_volcano_job_gangs_all_workers() -> None:
    job = main_object(compiled(), "ddp")
    spec = job["spec"]
    assert (job["apiVersion"], job["kind"]) == ("batch.volcano.sh/v1alpha1", "Job")
    assert spec["schedulerName"] == "volcano" and spec["queue"] == "research"  # the tenant's Queue
    assert spec["minAvailable"] == 4
    master, worker = spec["tasks"]
    assert (master["name"], master["replicas"], worker["name"], worker["replicas"]) == ("master", 1, "worker", 3)
    assert set(spec["plugins"]) >= {"svc", "env", "pytorch"}
    assert {"event": "PodEvicted", "action": "RestartJob"} in spec["policies"]
    assert master["template"]["spec"]["restartPolicy"] == worker["template"]["spec"]["restartPolicy"] == "Never"


def test_torchrun_gets_the_rendezvous_the_command_leaves_out() -> None:
    # ddp writes --nproc_per_node and --nnodes in args (right): gpustack adds only the rendezvous, after torchrun.
    for template in pod_specs(main_object(compiled(), "ddp")):
        container = template["spec"]["containers"][0]
        assert container["command"] == [
            "torchrun",
            "--node_rank=$(RANK)",
            "--master_addr=$(MASTER_ADDR)",
            "--master_port=$(MASTER_PORT)",
        ]
        assert container["args"] == ["--nproc_per_node=8", "--nnodes=4"]


def test_nccl_environment_for_multi_node_training() -> None:
    template = pod_specs(main_object(compiled(), "ddp"))[0]
    env = {e["name"]: e["value"] for e in template["spec"]["containers"][0]["env"]}
    assert env["NCCL_DEBUG"] == "WARN"
    assert env["NCCL_SOCKET_IFNAME"] == "eth0"
    assert env["NCCL_IB_DISABLE"] == "1"
    assert env["NCCL_P2P_LEVEL"] == "NVL"
    [template] = pod_specs(main_object(compiled(), "batch"))  # single-node, no nccl block
    assert not any(e["name"].startswith("NCCL_") for e in template["spec"]["containers"][0]["env"])


def test_memory_backed_shm_for_multi_gpu_and_nccl_workloads() -> None:
    for name, wanted in (("ddp", True), ("batch", True), ("llm", False), ("notebook", False)):
        template = pod_specs(main_object(compiled(), name))[0]
        volumes = template["spec"].get("volumes", [])
        mounts = template["spec"]["containers"][0].get("volumeMounts", [])
        has_shm = {"name": "dshm", "emptyDir": {"medium": "Memory"}} in volumes and {
            "name": "dshm",
            "mountPath": "/dev/shm",
        } in mounts
        assert has_shm is wanted, name


def test_priority_and_scheduler_come_from_the_tenant() -> None:
    [template] = pod_specs(main_object(compiled(), "llm"))
    assert template["spec"]["priorityClassName"] == "gpustack-high"
    assert "schedulerName" not in template["spec"]
    [template] = pod_specs(main_object(compiled(), "batch"))
    assert template["spec"]["priorityClassName"] == "gpustack-normal"
    assert template["spec"]["schedulerName"] == "volcano"


def test_hardened_security_context() -> None:
    for workload in sample().workloads:
        for template in pod_specs(main_object(compiled(), workload.name)):
            spec = template["spec"]
            assert spec["automountServiceAccountToken"] is False
            assert spec["securityContext"] == {"seccompProfile": {"type": "RuntimeDefault"}}
            for container in spec["containers"]:
                assert container["securityContext"] == {
                    "allowPrivilegeEscalation": False,
                    "capabilities": {"drop": ["ALL"]},
                }


def test_labels_on_objects_and_pods() -> None:
    for manifest in compiled().objects:
        labels = manifest.obj["metadata"]["labels"]
        assert labels.items() >= MANAGED_BY.items()
        assert {"app.kubernetes.io/name", TENANT_LABEL, WORKLOAD_LABEL, POOL_LABEL} <= set(labels)
        if manifest.kind != "Service":
            for template in pod_specs(manifest.obj):
                assert template["metadata"]["labels"] == labels


def test_cpu_and_memory_share_the_node_with_the_gpus() -> None:
    # 1 of 16 slices of a 96-core, 1 TiB node, leaving 10% to DaemonSets: 5 cores, 57 GiB
    [template] = pod_specs(main_object(compiled(), "llm"))
    requests = template["spec"]["containers"][0]["resources"]["requests"]
    assert (requests["cpu"], requests["memory"]) == ("5", "57Gi")
    [template] = pod_specs(main_object(compiled(), "notebook"))  # given in the blueprint
    requests = template["spec"]["containers"][0]["resources"]["requests"]
    assert (requests["cpu"], requests["memory"]) == ("3", "12Gi")


def sized(workload: str) -> tuple[str, str, dict[str, str]]:
    [template] = pod_specs(main_object(compiled(), workload))[:1]
    requests = template["spec"]["containers"][0]["resources"]["requests"]
    limits = template["spec"]["containers"][0]["resources"]["limits"]
    assert (limits["cpu"], limits["memory"]) == (requests["cpu"], requests["memory"])
    return requests["cpu"], requests["memory"], template["metadata"].get("annotations", {})


def test_without_resources_or_node_resources_pods_are_sized_from_their_gpus() -> None:
    # No silent 2 CPU / 8Gi: host memory covers the GPU memory the pod holds, 4 CPUs per GPU unit, and the pod
    # says where the amounts came from.
    cpu, memory, annotations = sized("batch")  # 2 x L4 (24Gi)
    assert (cpu, memory, annotations["gpustack.io/resources-from"]) == ("8", "48Gi", "GPU memory")
    cpu, memory, annotations = sized("ddp")  # 8 x H100 80GB
    assert (cpu, memory) == ("32", "640Gi") and annotations["gpustack.io/resources-from"] == "GPU memory"
    assert sized("vgpu")[1] == "10Gi"  # HAMi: the 10Gi of GPU memory it asked for
    assert sized("notebook")[2] == {}  # given in the blueprint: nothing to explain
    assert sized("llm")[2] == {"gpustack.io/resources-from": "node share"}


def test_workloads_without_resolved_requests_are_skipped() -> None:
    unfit = {**WORKLOADS[3], "name": "too-big", "gpu": {"count": 16}}
    output = compiled(blueprint([WORKLOADS[3], unfit], check=False))
    assert objects_of(output, "too-big") == []
    assert objects_of(output, "batch")


def test_deterministic() -> None:
    first, second = compiled(blueprint()), compiled(blueprint())
    assert [(m.file, m.obj) for m in first.objects] == [(m.file, m.obj) for m in second.objects]
    assert dump_all(m.obj for m in first.objects) == dump_all(m.obj for m in second.objects)


def test_no_yaml_anchors_from_shared_dicts() -> None:
    assert "&id" not in dump_all(m.obj for m in compiled().objects)


# --- user templates --------------------------------------------------------------------------------------------------

GOOD_TEMPLATE = """\
{% set out = manifest %}
apiVersion: {{ manifest.apiVersion }}
kind: {{ manifest.kind }}
metadata:
  name: {{ workload.name }}-custom
  namespace: somewhere-else
  labels:
    team: {{ tenant }}
    gpustack.io/pool: not-the-pool
  annotations:
    example.com/gpus: "{{ resources['nvidia.com/gpu'] }}"
spec:
{{ manifest.spec | toyaml | indent(2, true) }}
"""


def with_template(path: str | None, text: str | None, workload: str = "batch") -> Blueprint:
    bp = sample()
    workloads = tuple(dataclasses.replace(w, template=path) if w.name == workload else w for w in bp.workloads)
    templates = ((path, text),) if path is not None and text is not None else ()
    return dataclasses.replace(bp, workloads=workloads, templates=templates)


def template_error(text: str | None, path: str = "templates/job.yaml.j2") -> tuple[str, str]:
    bp = with_template(path, text)
    output = compile_workloads(Context(bp, load_catalog(), unplaced))
    [diagnostic] = output.diagnostics
    batch = next(w for w in bp.workloads if w.name == "batch")
    assert diagnostic.code == TEMPLATE_ERROR and diagnostic.severity is Severity.ERROR
    assert diagnostic.path == (*batch.path, "template")
    assert path in diagnostic.message and diagnostic.hint
    assert objects_of(output, "batch") == []
    return diagnostic.message, diagnostic.hint or ""


def test_a_good_template_renders_and_is_valid() -> None:
    output = compile_workloads(Context(with_template("templates/job.yaml.j2", GOOD_TEMPLATE), load_catalog(), unplaced))
    assert output.diagnostics == []
    job = main_object(output, "batch")
    generated = main_object(compiled(), "batch")
    assert job["metadata"]["name"] == "batch-custom"
    assert job["metadata"]["annotations"] == {"example.com/gpus": "2"}
    # gpustack's namespace and labels win over the template's
    assert job["metadata"]["namespace"] == "research"
    assert job["metadata"]["labels"] == {"team": "research", **generated["metadata"]["labels"]}
    assert job["spec"] == generated["spec"]
    assert list(job) == ["apiVersion", "kind", "metadata", "spec"]
    for version in VERSIONS:
        assert manifest_schemas.validate_any(job, version) == []


def test_a_template_sees_the_derived_facts() -> None:
    text = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: facts}\ndata:\n"
        "  tolerations: '{{ tolerations | length }}'\n"
        "  pool: {{ pool }}\n  namespace: {{ namespace }}\n"
        "  key: {{ affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
        ".matchExpressions[0].key }}\n"
        "  gpus: '{{ workload.gpu.count }}'\n  label: {{ labels['gpustack.io/workload'] }}\n"
    )
    output = compile_workloads(Context(with_template("t.j2", text, "ddp"), load_catalog(), unplaced))
    assert output.diagnostics == []
    facts = main_object(output, "ddp")["data"]
    assert facts == {
        "tolerations": "2",
        "pool": "h100",
        "namespace": "research",
        "key": POOL_LABEL,
        "gpus": "8",
        "label": "ddp",
    }


def test_a_template_cannot_change_gpustacks_objects() -> None:
    text = "{% set a = manifest.metadata.update({'name': 'hacked'}) %}{% set b = labels.update({'x': 'y'}) %}"
    text += GOOD_TEMPLATE
    output = compile_workloads(Context(with_template("t.j2", text), load_catalog(), unplaced))
    assert output.diagnostics == []
    job = main_object(output, "batch")
    assert "x" not in job["metadata"]["labels"]
    assert main_object(compiled(), "batch")["metadata"]["name"] == "batch"


def test_missing_template_text_is_gs606() -> None:
    message, _ = template_error(None)
    assert "not read" in message


def test_template_syntax_error_names_the_line() -> None:
    message, hint = template_error("apiVersion: v1\nkind: ConfigMap\n{% if %}\n")
    assert "templates/job.yaml.j2:3" in message and "TemplateSyntaxError" in message
    assert "syntax" in hint


def test_undefined_variable_names_the_line() -> None:
    message, hint = template_error("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ workload.nmae }}\n")
    assert "templates/job.yaml.j2:4" in message and "nmae" in message
    assert "manifest" in hint


def test_sandbox_escape_is_refused() -> None:
    message, hint = template_error("x: {{ ''.__class__.__mro__ }}\n")
    assert "SecurityError" in message or "unsafe" in message
    assert "sandbox" in hint
    message, _ = template_error("{{ manifest.__class__.__init__.__globals__ }}\n")
    assert "unsafe" in message


def test_runtime_error_in_a_template_is_a_diagnostic() -> None:
    message, _ = template_error("a: 1\nb: {{ 1 / 0 }}\n")
    assert "templates/job.yaml.j2:2" in message and "ZeroDivisionError" in message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("apiVersion: v1\nkind: [unclosed\n", "not valid YAML"),
        ("a: *x\n", "not valid YAML"),  # the hardened loader: an alias needs its anchor before it
        (  # and aliases stay within go-yaml's expansion budget
            "a: &a [" + ",".join(["x"] * 100) + "]\nb: &b [" + ",".join(["*a"] * 200) + "]\n",
            "would bring the nodes added by aliases",
        ),
        ("a: 1\n---\nb: 2\n", "not valid YAML"),  # exactly one document
        ("- 1\n- 2\n", "not one Kubernetes object"),
        ("apiVersion: v1\nmetadata: {name: x}\n", "without kind"),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n", "without metadata.name"),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, labels: [a]}\n", "labels that is not a mapping"),
        ("", "not valid YAML"),
    ],
)
def test_bad_rendered_output_is_gs606(text: str, expected: str) -> None:
    message, _ = template_error(text)
    assert expected in message


# --- what a rendered template may not do -----------------------------------------------------------------------------

POD_OF = {"batch": "manifest.spec.template.spec", "ddp": "manifest.spec.tasks[0].template.spec"}


def mutated(statement: str, workload: str = "batch") -> str:
    """A template that renders gpustack's own object after one change (`pod`, `c` = its first container)."""
    return (
        f"{{%- set pod = {POD_OF[workload]} -%}}\n{{%- set c = pod.containers[0] -%}}\n"
        f"{{%- set _ = {statement} -%}}\n{{{{ manifest | toyaml }}}}\n"
    )


def render_checked(text: str, workload: str = "batch") -> tuple[list[str], FamilyOutput]:
    bp = with_template("templates/t.yaml.j2", text, workload)
    output = compile_workloads(Context(bp, load_catalog(), unplaced))
    target = next(w for w in bp.workloads if w.name == workload)
    for diagnostic in output.diagnostics:
        assert diagnostic.code == TEMPLATE_ERROR and diagnostic.severity is Severity.ERROR and diagnostic.hint
        assert diagnostic.path == (*target.path, "template")
        assert "templates/t.yaml.j2" in diagnostic.message
    if output.diagnostics:
        assert objects_of(output, workload) == []  # nothing of a broken template is emitted
    return [d.message for d in output.diagnostics], output


RULES = [
    # (workload, statement, fragment of the one expected message, or None: stays silent)
    ("ddp", "pod.update({'tolerations': pod.tolerations[1:]})", "gpu-pool=training:NoSchedule of pool 'h100'"),
    ("ddp", "pod.tolerations.append({'operator': 'Exists'})", "tolerations[2] has no key"),
    ("ddp", "pod.tolerations.append({'key': 'gpustack.io/dedicated', 'operator': 'Exists'})", "pool 'a100-mig'"),
    ("ddp", "pod.update({'tolerations': pod.tolerations[::-1]})", None),
    (
        "ddp",
        "pod.update({'tolerations': [{'key': 'gpu-pool', 'value': 'training'}, "
        "{'key': 'example.com/maintenance', 'operator': 'Exists', 'effect': 'NoExecute'}]})",
        None,
    ),
    (
        "batch",
        "c.resources.limits.update({'nvidia.com/mig-1g.10gb': '1'}) or "
        "c.resources.requests.update({'nvidia.com/mig-1g.10gb': '1'})",
        "asks for nvidia.com/mig-1g.10gb, which pool 'l4' does not advertise",
    ),
    ("batch", "c.resources.limits.update({'nvidia.com/gpu': '3'})", "requests and limits of extended resource"),
    ("batch", "c.resources.requests.update({'example.com/fpga': '1'})", "extended resource example.com/fpga differ"),
    ("batch", "c.resources.limits.update({'nvidia.com/gpu': 2, 'cpu': '100'})", None),
    ("batch", "c.env.append({'name': 'CUDA_VISIBLE_DEVICES', 'value': '0'})", "env sets CUDA_VISIBLE_DEVICES"),
    ("batch", "c.env.append({'name': 'OMP_NUM_THREADS', 'value': '4'})", None),
    ("batch", "c.securityContext.update({'privileged': True})", "securityContext.privileged is true"),
    ("batch", "c.securityContext.update({'allowPrivilegeEscalation': True})", "allowPrivilegeEscalation is true"),
    ("batch", "c.securityContext.update({'capabilities': {'add': ['SYS_ADMIN']}})", "capabilities.add adds"),
    ("batch", "c.securityContext.update({'privileged': False, 'readOnlyRootFilesystem': True})", None),
]


@pytest.mark.parametrize(("workload", "statement", "fragment"), RULES)
def test_rendered_pod_specs_keep_gpustacks_rules(workload: str, statement: str, fragment: str | None) -> None:
    messages, output = render_checked(mutated(statement, workload), workload)
    if fragment is None:
        assert messages == []
        assert main_object(output, workload)["kind"] == main_object(compiled(), workload)["kind"]
    else:
        # One message per pod template that breaks the rule: a VolcanoJob's master and worker tasks share one.
        templates = len(pod_specs(main_object(compiled(), workload)))
        assert len(messages) == templates and all(fragment in message for message in messages), messages


def test_init_containers_are_checked_and_named() -> None:
    statement = (
        "pod.update({'initContainers': [{'name': 'setup', 'image': 'x', 'securityContext': {'privileged': True}}]})"
    )
    [message], _ = render_checked(mutated(statement))
    assert "initContainers[0] ('setup')" in message and "spec.template.spec" in message


def test_every_violation_is_reported() -> None:
    statement = (
        "c.update({'env': [{'name': 'CUDA_VISIBLE_DEVICES', 'value': '0'}], 'securityContext': {'privileged': True}})"
    )
    messages, _ = render_checked(mutated(statement))
    assert len(messages) == 2


CRONJOB = """\
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec:
  schedule: "0 2 * * *"
  jobTemplate:
    spec:
      template:
        metadata: {labels: {{ labels | tojson }}}
        spec:
          restartPolicy: Never
          tolerations: {{ tolerations | tojson }}
          containers:
            - name: main
              image: b:1
              env: [{name: X, value: "{{ extra }}"}]
              resources: {{ manifest.spec.template.spec.containers[0].resources | tojson }}
"""

POD = """\
apiVersion: v1
kind: Pod
metadata: {name: one}
spec:
  tolerations: {{ tolerations | tojson }}
  containers:
    - name: main
      image: b:1
      env: [{name: X, value: "{{ extra }}"}]
      resources: {{ manifest.spec.template.spec.containers[0].resources | tojson }}
"""


@pytest.mark.parametrize("text", [CRONJOB, POD], ids=["CronJob", "Pod"])
def test_cronjob_and_pod_specs_are_checked(text: str) -> None:
    clean, output = render_checked(text.replace("{{ extra }}", "1"))
    assert clean == [] and main_object(output, "batch")["kind"] in ("CronJob", "Pod")
    [message], _ = render_checked(text.replace('X, value: "{{ extra }}"', "CUDA_VISIBLE_DEVICES, value: '0'"))
    assert "CUDA_VISIBLE_DEVICES" in message


def test_the_example_template_compiles_clean() -> None:
    result = validate_path(BLUEPRINTS / "multi-tenant.yaml")
    assert result.ok, [d.message for d in result.diagnostics]
    assert result.blueprint is not None
    output = compile_workloads(Context(result.blueprint, load_catalog(), unplaced))
    assert output.diagnostics == []
    templated = [w.name for w in result.blueprint.workloads if w.template is not None]
    assert templated and all(objects_of(output, name) for name in templated)


def test_validate_renders_templates_and_points_at_the_template_field(tmp_path: Path) -> None:
    (tmp_path / "t.yaml.j2").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ workload.nmae }}\n")
    blueprint_text = (CASES / "invalid" / "template-missing.yaml").read_text()
    (tmp_path / "bp.yaml").write_text(blueprint_text.replace("templates/does-not-exist.yaml.j2", "t.yaml.j2"))
    result = validate_path(tmp_path / "bp.yaml")
    [diagnostic] = result.diagnostics
    assert diagnostic.code == TEMPLATE_ERROR and not result.ok
    assert diagnostic.span is not None and (diagnostic.span.start.line, diagnostic.span.start.column) == (25, 17)
    assert "t.yaml.j2:4" in diagnostic.message and "nmae" in diagnostic.message

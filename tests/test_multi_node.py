"""JobSet (multi-node training) and LeaderWorkerSet (multi-node inference): the same derived scheduling as every other
kind, the environment each pod needs, and objects the upstream CRDs accept."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import manifest_schemas
import pytest
from builders import sourceless
from conftest import BLUEPRINTS

from gpustack.catalog import load_catalog
from gpustack.codes import COMBINATION, TORCHRUN_SHAPE
from gpustack.compile import compile_blueprint
from gpustack.context import Context, unplaced
from gpustack.model import Blueprint
from gpustack.names import KUEUE_QUEUE_LABEL
from gpustack.plan import Plan
from gpustack.validation import validate_path, validate_text
from gpustack.workloads import compile_workloads

EXAMPLE = BLUEPRINTS / "multi-node.yaml"


@functools.cache
def plan() -> Plan:
    result = validate_path(EXAMPLE)
    assert result.blueprint is not None and result.diagnostics == ()
    return compile_blueprint(sourceless(result.blueprint))


def objects(kind: str) -> list[dict[str, Any]]:
    return [m.obj for m in plan().objects if m.obj["kind"] == kind]


def job_set() -> dict[str, Any]:
    [obj] = objects("JobSet")
    return obj


def leader_worker_set() -> dict[str, Any]:
    [obj] = objects("LeaderWorkerSet")
    return obj


def pod_templates(obj: dict[str, Any]) -> list[dict[str, Any]]:
    if obj["kind"] == "JobSet":
        return [job["template"]["spec"]["template"] for job in obj["spec"]["replicatedJobs"]]
    group = obj["spec"]["leaderWorkerTemplate"]
    return [group["leaderTemplate"], group["workerTemplate"]]


@pytest.mark.conformance
@pytest.mark.parametrize("kind", ["JobSet", "LeaderWorkerSet", "Service"])
def test_compiled_objects_pass_the_upstream_crds(kind: str) -> None:
    manifest_schemas.skip_without_crds()
    found = objects(kind)
    assert found
    for obj in found:
        assert manifest_schemas.validate_any(obj, manifest_schemas.newest_version()) == [], obj["metadata"]["name"]


@pytest.mark.conformance
def test_a_broken_job_set_would_be_caught() -> None:
    manifest_schemas.skip_without_crds()
    obj = job_set()
    broken = {**obj, "spec": {**obj["spec"], "network": {"enableDNSHostnames": "yes"}}}
    assert manifest_schemas.validate_any(broken, manifest_schemas.newest_version()) != []


@pytest.mark.parametrize("kind", ["JobSet", "LeaderWorkerSet"])
def test_same_scheduling_as_every_other_kind(kind: str) -> None:
    [obj] = objects(kind)
    assert obj["metadata"]["labels"][KUEUE_QUEUE_LABEL] == "default"  # Kueue reads it on the JobSet / LWS
    for template in pod_templates(obj):
        spec = template["spec"]
        assert spec["tolerations"] == [
            {"key": "gpustack.io/pool", "operator": "Equal", "value": "h100", "effect": "NoSchedule"}
        ]
        terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        assert terms == [{"matchExpressions": [{"key": "gpustack.io/pool", "operator": "In", "values": ["h100"]}]}]
        [container] = spec["containers"]
        resources = container["resources"]
        assert resources["requests"] == resources["limits"] and resources["limits"]["nvidia.com/gpu"] == "8"
        assert spec["priorityClassName"] in ("gpustack-normal", "gpustack-high")
        assert {"name": "dshm", "emptyDir": {"medium": "Memory"}} in spec["volumes"]  # NCCL over /dev/shm
        env = {e["name"]: e.get("value") for e in container["env"]}
        assert env["NCCL_DEBUG"] == "WARN"


def test_job_set_runs_one_indexed_job_behind_a_headless_service() -> None:
    spec = job_set()["spec"]
    assert spec["network"] == {"enableDNSHostnames": True, "subdomain": "pretrain", "publishNotReadyAddresses": True}
    [replicated] = spec["replicatedJobs"]
    job = replicated["template"]["spec"]
    assert (replicated["name"], replicated["replicas"]) == ("workers", 1)
    assert job["parallelism"] == job["completions"] == 2 and job["completionMode"] == "Indexed"
    assert job["template"]["spec"]["restartPolicy"] == "Never"


def test_job_set_pods_carry_what_torchrun_needs() -> None:
    [template] = pod_templates(job_set())
    [container] = template["spec"]["containers"]
    env = {e["name"]: e for e in container["env"]}
    # rank 0 is pod 0 of job 0 of replicated job "workers", reachable under the JobSet's subdomain
    assert env["MASTER_ADDR"]["value"] == "pretrain-workers-0-0.pretrain"
    assert env["MASTER_PORT"]["value"] == "29500"
    assert env["WORLD_SIZE"]["value"] == "2"
    assert env["RANK"]["valueFrom"] == {
        "fieldRef": {"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}
    }
    assert env["NCCL_SOCKET_IFNAME"]["value"] == "eth0"
    assert container["command"] == [
        "torchrun",
        "--nnodes=2",
        "--nproc_per_node=8",
        "--node_rank=$(RANK)",
        "--master_addr=$(MASTER_ADDR)",
        "--master_port=$(MASTER_PORT)",
        "train.py",
    ]


def test_only_the_leaders_serve() -> None:
    obj = leader_worker_set()
    group = obj["spec"]["leaderWorkerTemplate"]
    assert group["size"] == 2 and obj["spec"]["replicas"] == 1
    assert group["restartPolicy"] == "RecreateGroupOnPodRestart" and obj["spec"]["startupPolicy"] == "LeaderCreated"
    [leader] = group["leaderTemplate"]["spec"]["containers"]
    [worker] = group["workerTemplate"]["spec"]["containers"]
    assert leader["ports"] == [{"name": "http", "containerPort": 8000, "protocol": "TCP"}]
    assert {"startupProbe", "readinessProbe", "livenessProbe"} <= set(leader)
    assert not {"ports", "startupProbe", "readinessProbe", "livenessProbe"} & set(worker)
    assert leader["args"] == worker["args"]  # one command; LWS_WORKER_INDEX tells the roles apart
    [svc] = objects("Service")
    assert svc["spec"]["selector"] == {"gpustack.io/workload": "llm", "leaderworkerset.sigs.k8s.io/worker-index": "0"}


BASE = """\
apiVersion: gpustack.io/v1alpha1
kind: ClusterBlueprint
metadata: {name: t}
spec:
  kubernetes: {version: "1.31"}
  nodePools:
    - name: h100
      gpu: {model: H100-SXM5-80GB, count: 8}
      nodes: [n1, n2]
  tenants:
    - {name: ml, namespaces: [ml], pools: [h100], quota: {h100: unlimited}}
  workloads:
    - name: w
      tenant: ml
      pool: h100
      image: i:1
      gpu: {count: 4}
"""


@pytest.mark.parametrize(
    ("extra", "code", "where"),
    [
        ("      kind: JobSet\n      replicas: 2\n", COMBINATION, "replicas"),  # JobSet takes workers
        ("      kind: LeaderWorkerSet\n", COMBINATION, None),  # size is required
        ("      kind: Deployment\n      size: 2\n", COMBINATION, "size"),  # size only for LeaderWorkerSet
        ("      kind: JobSet\n      workers: 2\n      command: [torchrun, --nnodes=4, t.py]\n", TORCHRUN_SHAPE, None),
    ],
)
def test_the_shape_is_checked(extra: str, code: str, where: str | None) -> None:
    result = validate_text(BASE + extra, "t.yaml")
    codes = {d.code for d in result.diagnostics}
    assert code in codes, [d.message for d in result.diagnostics]
    if where is not None:
        assert any(d.path[-1] == where for d in result.diagnostics if d.code == code)


def test_a_single_pod_job_set_and_group_compile() -> None:
    text = BASE + "      kind: LeaderWorkerSet\n      size: 1\n"
    result = validate_text(text, "t.yaml")
    assert result.blueprint is not None and result.diagnostics == ()
    [obj] = [
        m.obj for m in compile_blueprint(sourceless(result.blueprint)).objects if m.obj["kind"] == "LeaderWorkerSet"
    ]
    assert obj["spec"]["leaderWorkerTemplate"]["size"] == 1


def with_template(name: str, text: str) -> Blueprint:
    result = validate_path(EXAMPLE)
    assert result.blueprint is not None
    bp = result.blueprint
    workloads = tuple(dataclasses.replace(w, template="t.yaml.j2") if w.name == name else w for w in bp.workloads)
    return dataclasses.replace(bp, workloads=workloads, templates=(("t.yaml.j2", text),))


@pytest.mark.parametrize(
    ("name", "pod", "fields"),
    [
        ("pretrain", "manifest.spec.replicatedJobs[0].template.spec.template.spec", ["spec.replicatedJobs[0]"]),
        ("llm", "manifest.spec.leaderWorkerTemplate.workerTemplate.spec", ["spec.leaderWorkerTemplate.workerTemplate"]),
        ("llm", "manifest.spec.leaderWorkerTemplate.leaderTemplate.spec", ["spec.leaderWorkerTemplate.leaderTemplate"]),
    ],
)
def test_a_template_cannot_open_other_pools_from_any_pod_template(name: str, pod: str, fields: list[str]) -> None:
    text = (
        f"{{%- set pod = {pod} -%}}\n{{%- set _ = pod.tolerations.append({{'operator': 'Exists'}}) -%}}\n"
        "{{ manifest | toyaml }}\n"
    )
    output = compile_workloads(Context(with_template(name, text), load_catalog(), unplaced))
    messages = [d.message for d in output.diagnostics]
    assert len(messages) == len(fields) and all(
        field in message and "has no key" in message for field, message in zip(fields, messages, strict=True)
    ), messages
    # the template unchanged renders gpustack's own object
    same = compile_workloads(Context(with_template(name, "{{ manifest | toyaml }}\n"), load_catalog(), unplaced))

    def mine(manifests: Any) -> list[dict[str, Any]]:
        return sorted((m.obj for m in manifests if m.obj["metadata"]["name"] == name), key=lambda o: o["kind"])

    assert same.diagnostics == [] and mine(same.objects) == mine(plan().objects)

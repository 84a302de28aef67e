"""KAI lets any pod name any queue (KAI issue #2068): gpustack's admission policies keep each KAI tenant's pods and
PodGroups in its own leaf Queues, and on KAI's scheduler.

Every request is decided by the compiled ValidatingAdmissionPolicies of blueprints/kai.yaml, their CEL evaluated
with cel-python (tests/admission_cel.py), as in tests/test_admission_security.py.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

import pytest
from admission_cel import Admission, Request, Verdict
from conftest import BLUEPRINTS

from gpustack import workloads
from gpustack.compile.admission import build_admission_objects
from gpustack.context import Context
from gpustack.names import TENANT_LABEL
from gpustack.schedulers import KAI_QUEUE_LABEL, KAI_SCHEDULER
from gpustack.validation import validate_path

NAME_LABEL = "kubernetes.io/metadata.name"
CONTAINER = {"name": "main", "image": "busybox"}


@functools.cache
def context() -> Context:
    result = validate_path(BLUEPRINTS / "kai.yaml")
    assert result.ok and result.context is not None, [d.message for d in result.diagnostics]
    return result.context


@functools.cache
def admission() -> Admission:
    return Admission(build_admission_objects(context()))


def namespace(name: str, tenant: str | None) -> dict[str, Any]:
    labels = {NAME_LABEL: name, **({TENANT_LABEL: tenant} if tenant is not None else {})}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def review(obj: dict[str, Any], ns: str, tenant: str | None, operation: str = "CREATE") -> Verdict:
    obj = copy.deepcopy(obj)
    obj["metadata"]["namespace"] = ns
    old = copy.deepcopy(obj) if operation == "UPDATE" else None
    if old is not None:
        old["spec"]["queue"] = "old"  # a spec change: the policy's match condition lets only those through
    verdict = admission().review(Request(operation, obj, namespace(ns, tenant), old_object=old))
    assert verdict.not_evaluated == [], verdict.not_evaluated
    return verdict


def pod(queue: str | None, scheduler: str = KAI_SCHEDULER, gpus: int = 1) -> dict[str, Any]:
    """A pod as the API server hands it to the policies: an empty schedulerName is defaulted to default-scheduler."""
    labels = {KAI_QUEUE_LABEL: queue} if queue is not None else {}
    amount = {"nvidia.com/gpu": str(gpus)}
    container = {**CONTAINER, "resources": {"requests": amount, "limits": amount}} if gpus else CONTAINER
    spec: dict[str, Any] = {"schedulerName": scheduler, "containers": [container]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": labels}, "spec": spec}


def pod_group(queue: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"minMember": 1, **({"queue": queue} if queue is not None else {})}
    return {"apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup", "metadata": {"name": "pg"}, "spec": spec}


def compiled(name: str) -> dict[str, Any]:
    found = [m.obj for m in workloads.compile_workloads(context()).objects if m.obj["metadata"]["name"] == name]
    return copy.deepcopy(next(obj for obj in found if obj["kind"] != "Service"))


def test_own_leaf_queue_is_admitted() -> None:
    assert review(pod("training.training"), "training", "training").admitted
    assert review(pod("training.training-dev"), "training-dev", "training").admitted
    assert review(pod_group("serving.serving"), "serving", "serving").admitted


@pytest.mark.parametrize("name", ["pretrain", "chat", "embedder"])
def test_compiled_workloads_are_admitted(name: str) -> None:
    obj = compiled(name)
    assert review(obj, obj["metadata"]["namespace"], obj["metadata"]["labels"][TENANT_LABEL]).admitted


@pytest.mark.parametrize(
    "queue",
    [
        "serving.serving",  # another tenant's leaf
        "training",  # its own parent: only leaves take jobs, and the parent's guarantee is not a leaf's
        "default-queue",  # KAI's chart queue: no cap
        "serving",  # another tenant's parent
    ],
)
def test_a_pod_naming_another_queue_is_refused(queue: str) -> None:
    verdict = review(pod(queue), "training", "training")
    assert any(f"may not use KAI queue {queue}" in denial for denial in verdict.denials), verdict.denials


def test_a_pod_naming_no_queue_is_refused() -> None:
    verdict = review(pod(None), "training", "training")
    assert any("must name one of its leaf queues training.training" in d for d in verdict.denials), verdict.denials


@pytest.mark.parametrize("scheduler", ["volcano", "my-scheduler"])
def test_a_pod_on_another_scheduler_is_refused(scheduler: str) -> None:
    verdict = review(pod("training.training", scheduler), "training", "training")
    assert any(f"may not use scheduler {scheduler}" in d for d in verdict.denials), verdict.denials


def test_a_gpu_pod_on_kube_scheduler_is_refused_a_cpu_pod_is_not() -> None:
    """kube-scheduler would place a GPU pod outside KAI's queues; a pod that asks for no GPU may stay there."""
    verdict = review(pod(None, "default-scheduler"), "training", "training")
    assert any("must set schedulerName: kai-scheduler" in d for d in verdict.denials), verdict.denials
    assert not review(pod("training.training", "default-scheduler"), "training", "training").admitted
    assert review(pod(None, "default-scheduler", gpus=0), "training", "training").admitted


def test_a_pod_group_in_another_tenants_queue_is_refused() -> None:
    """The PodGroup's spec.queue is what KAI schedules by, whoever creates it: the guarantee."""
    assert not review(pod_group("serving.serving"), "training", "training").admitted
    assert not review(pod_group("serving.serving"), "training", "training", "UPDATE").admitted
    assert not review(pod_group(None), "training", "training").admitted


def test_a_workload_template_in_another_tenants_queue_is_refused() -> None:
    obj = compiled("pretrain")
    template = obj["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    template["metadata"]["labels"][KAI_QUEUE_LABEL] = "serving.serving"
    assert not review(obj, "training", "training").admitted
    deployment = compiled("chat")
    deployment["metadata"]["labels"][KAI_QUEUE_LABEL] = "training.training"  # on the top owner, read first
    assert not review(deployment, "serving", "serving").admitted


def test_a_namespace_without_a_tenant_may_not_take_a_tenants_queue() -> None:
    for queue in ("training.training", "serving"):
        verdict = review(pod(queue, gpus=0), "scratch", None)
        assert any(f"may not use KAI queue {queue}" in d for d in verdict.denials), verdict.denials
        assert not review(pod_group(queue), "scratch", None).admitted
    assert review(pod("default-queue", gpus=0), "scratch", None).admitted
    assert review(pod_group("default-queue"), "scratch", None).admitted

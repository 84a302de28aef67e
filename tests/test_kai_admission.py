"""KAI lets any pod name any queue (KAI issue #2068): gpustack's admission policies keep each KAI tenant's pods and
PodGroups in its own leaf Queues, in the shard of the pool each leaf belongs to, and on KAI's scheduler.

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
from gpustack.names import POOL_LABEL, TENANT_LABEL
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


def pod(queue: str | None, scheduler: str = KAI_SCHEDULER, gpus: int = 1, pool: str | None = "h100") -> dict[str, Any]:
    """A pod as the API server hands it to the policies: an empty schedulerName is defaulted to default-scheduler."""
    labels = {KAI_QUEUE_LABEL: queue} if queue is not None else {}
    labels.update({POOL_LABEL: pool} if pool is not None else {})
    amount = {"nvidia.com/gpu": str(gpus)}
    container = {**CONTAINER, "resources": {"requests": amount, "limits": amount}} if gpus else CONTAINER
    spec: dict[str, Any] = {"schedulerName": scheduler, "containers": [container]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": labels}, "spec": spec}


def pod_group(queue: str | None, pool: str | None = "h100") -> dict[str, Any]:
    """A PodGroup as KAI's pod grouper makes it: the workload object's labels (its pool's among them) copied."""
    spec: dict[str, Any] = {"minMember": 1, **({"queue": queue} if queue is not None else {})}
    metadata: dict[str, Any] = {"name": "pg", "labels": {POOL_LABEL: pool} if pool is not None else {}}
    return {"apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup", "metadata": metadata, "spec": spec}


def compiled(name: str) -> dict[str, Any]:
    found = [m.obj for m in workloads.compile_workloads(context()).objects if m.obj["metadata"]["name"] == name]
    return copy.deepcopy(next(obj for obj in found if obj["kind"] != "Service"))


def test_own_leaf_queue_is_admitted() -> None:
    assert review(pod("training.h100.training"), "training", "training").admitted
    assert review(pod("training.h100.training-dev"), "training-dev", "training").admitted
    assert review(pod_group("serving.h100.serving"), "serving", "serving").admitted
    assert review(pod_group("serving.a100-mig.serving", "a100-mig"), "serving", "serving").admitted


@pytest.mark.parametrize("name", ["pretrain", "chat", "embedder"])
def test_compiled_workloads_are_admitted(name: str) -> None:
    obj = compiled(name)
    assert review(obj, obj["metadata"]["namespace"], obj["metadata"]["labels"][TENANT_LABEL]).admitted


@pytest.mark.parametrize(
    "queue",
    [
        "serving.h100.serving",  # another tenant's leaf, in the same pool's shard
        "training.h100",  # its own parent: only leaves take jobs, and the parent's guarantee is not a leaf's
        "default-queue",  # KAI's chart queue: no cap
        "serving.h100",  # another tenant's parent
        "training.a100-mig.training",  # a leaf it would have on a pool it is not granted: no such Queue
    ],
)
def test_a_pod_naming_another_queue_is_refused(queue: str) -> None:
    verdict = review(pod(queue), "training", "training")
    assert any(f"may not use KAI queue {queue}" in denial for denial in verdict.denials), verdict.denials


def test_a_pod_naming_no_queue_is_refused() -> None:
    verdict = review(pod(None), "training", "training")
    assert any("must name one of its leaf queues training.h100.training" in d for d in verdict.denials), verdict.denials


@pytest.mark.parametrize("scheduler", ["volcano", "my-scheduler"])
def test_a_pod_on_another_scheduler_is_refused(scheduler: str) -> None:
    verdict = review(pod("training.h100.training", scheduler), "training", "training")
    assert any(f"may not use scheduler {scheduler}" in d for d in verdict.denials), verdict.denials


def test_a_gpu_pod_on_kube_scheduler_is_refused_a_cpu_pod_is_not() -> None:
    """kube-scheduler would place a GPU pod outside KAI's queues; a pod that asks for no GPU may stay there."""
    verdict = review(pod(None, "default-scheduler"), "training", "training")
    assert any("must set schedulerName: kai-scheduler" in d for d in verdict.denials), verdict.denials
    assert not review(pod("training.h100.training", "default-scheduler"), "training", "training").admitted
    assert review(pod(None, "default-scheduler", gpus=0), "training", "training").admitted


def test_a_pod_group_in_another_tenants_queue_is_refused() -> None:
    """The PodGroup's spec.queue is what KAI schedules by, whoever creates it: the guarantee."""
    assert not review(pod_group("serving.h100.serving"), "training", "training").admitted
    assert not review(pod_group("serving.h100.serving"), "training", "training", "UPDATE").admitted
    assert not review(pod_group(None), "training", "training").admitted


@pytest.mark.parametrize("pool", ["a100-mig", "l4", None])
def test_attack_a_leaf_moved_to_another_pools_shard_is_refused(pool: str | None) -> None:
    """A PodGroup's (or the workload object's) pool label picks the shard: serving's A100 leaf labelled into the H100
    shard, or an unlabelled one left to the default shard, would be read by a scheduler its Queue is not in."""
    verdict = review(pod_group("serving.h100.serving", pool), "serving", "serving")
    assert any("is in the shard of pool h100, but the object's gpustack.io/pool label is" in d for d in verdict.denials)
    assert not review(pod("serving.h100.serving", pool=pool), "serving", "serving").admitted
    relabelled = review(pod_group("serving.h100.serving", "h100"), "serving", "serving", "UPDATE")
    assert relabelled.admitted
    moved = pod_group("serving.a100-mig.serving", "h100")
    assert not review(moved, "serving", "serving", "UPDATE").admitted  # relabelling a PodGroup: KAI docs allow it


def test_a_workload_template_in_another_tenants_queue_is_refused() -> None:
    obj = compiled("pretrain")
    template = obj["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    template["metadata"]["labels"][KAI_QUEUE_LABEL] = "serving.h100.serving"
    assert not review(obj, "training", "training").admitted
    deployment = compiled("chat")
    deployment["metadata"]["labels"][KAI_QUEUE_LABEL] = "training.h100.training"  # on the top owner, read first
    assert not review(deployment, "serving", "serving").admitted


def test_a_workload_object_without_its_pools_label_is_refused() -> None:
    """The pod grouper copies the workload object's labels to the PodGroup: without the pool's, it would be the
    default shard's, where the tenant's leaf is not."""
    deployment = compiled("chat")
    del deployment["metadata"]["labels"][POOL_LABEL]
    verdict = review(deployment, "serving", "serving")
    assert any("serving.a100-mig.serving is in the shard of pool a100-mig" in d for d in verdict.denials)


def test_a_namespace_without_a_tenant_may_not_take_a_tenants_queue() -> None:
    for queue in ("training.h100.training", "serving.a100-mig", "serving.h100.serving"):
        verdict = review(pod(queue, gpus=0), "scratch", None)
        assert any(f"may not use KAI queue {queue}" in d for d in verdict.denials), verdict.denials
        assert not review(pod_group(queue), "scratch", None).admitted
    assert review(pod("default-queue", gpus=0, pool=None), "scratch", None).admitted
    assert review(pod_group("default-queue", None), "scratch", None).admitted


def fraction_pod(annotation: str) -> dict[str, Any]:
    """A GPU-sharing pod as KAI's admission webhook leaves it (pkg/admission/webhook/v1alpha2/gpusharing): no GPU
    request, the annotation, and NVIDIA_VISIBLE_DEVICES read from a ConfigMap in the pod's own namespace."""
    obj = pod("training.h100.training", gpus=0)
    obj["metadata"]["annotations"] = {annotation: "0.5" if annotation == "gpu-fraction" else "20000"}
    shared = {"name": "training-shared-gpu-0", "key": "NVIDIA_VISIBLE_DEVICES"}
    obj["spec"]["containers"][0]["env"] = [{"name": "NVIDIA_VISIBLE_DEVICES", "valueFrom": {"configMapKeyRef": shared}}]
    return obj


@pytest.mark.parametrize("annotation", ["gpu-fraction", "gpu-memory"])
def test_attack_a_kai_gpu_share_is_refused(annotation: str) -> None:
    """KAI would give the pod its GPU through a ConfigMap the tenant can write (NVIDIA_VISIBLE_DEVICES=all reaches every
    GPU of the node), with no memory isolation from other namespaces' pods on the device: refused twice over."""
    verdict = review(fraction_pod(annotation), "training", "training")
    assert any("may not ask KAI for a share of a GPU (gpu-fraction, gpu-memory" in d for d in verdict.denials)
    assert any("NVIDIA_VISIBLE_DEVICES" in d and "may not set" in d for d in verdict.denials), verdict.denials
    # the annotation alone, before KAI's webhook adds the env, and on a workload's pod template
    bare = pod("training.h100.training", gpus=0)
    bare["metadata"]["annotations"] = {annotation: "1"}
    assert not review(bare, "training", "training").admitted
    deployment = compiled("chat")
    deployment["spec"]["template"]["metadata"]["annotations"] = {annotation: "1"}
    assert not review(deployment, "serving", "serving").admitted

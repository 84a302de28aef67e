"""N3 (security review 3): a Volcano tenant keeps to its own queue and priority, at admission.

Every request is decided by the compiled ValidatingAdmissionPolicies, their CEL evaluated with cel-python
(tests/admission_cel.py), as in tests/test_compile_admission.py. The review's reproduction is a template of tenant
`vision` (blueprints/volcano.yaml) that moves its Volcano Job into tenant `llm`'s queue (`spec.queue`, and the pod
template's `scheduling.volcano.sh/queue-name` annotation) with a Job-level `system-cluster-critical` priority.
Variants it does not try: each field alone, the annotation on the Job itself and on a Deployment's pods, Volcano's
`default` queue (where an empty queue goes), PodGroups (where every Volcano-scheduled pod's queue is finally
decided, whoever creates them), and namespaces without a tenant.
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
from gpustack.names import TENANT_LABEL, VOLCANO_QUEUE_ANNOTATION
from gpustack.validation import validate_path

NAME_LABEL = "kubernetes.io/metadata.name"
CONTAINER = {"name": "main", "image": "busybox"}


@functools.cache
def context(name: str) -> Context:
    result = validate_path(BLUEPRINTS / f"{name}.yaml")
    assert result.ok and result.context is not None, [d.message for d in result.diagnostics]
    return result.context


@functools.cache
def admission(name: str) -> Admission:
    return Admission(build_admission_objects(context(name)))


def namespace(name: str, tenant: str | None) -> dict[str, Any]:
    labels = {NAME_LABEL: name, **({TENANT_LABEL: tenant} if tenant is not None else {})}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def review(obj: dict[str, Any], ns: str, tenant: str | None, blueprint: str = "volcano") -> Verdict:
    obj = copy.deepcopy(obj)
    obj["metadata"]["namespace"] = ns
    verdict = admission(blueprint).review(Request("CREATE", obj, namespace(ns, tenant)))
    assert verdict.not_evaluated == [], verdict.not_evaluated
    return verdict


def denied_with(verdict: Verdict, text: str) -> bool:
    return any(text in denial for denial in verdict.denials)


def compiled_job(name: str = "detector-train") -> dict[str, Any]:
    """The Volcano Job gpustack compiles for the workload, as the review's template receives it."""
    found = [
        m.obj for m in workloads.compile_workloads(context("volcano")).objects if m.obj["metadata"]["name"] == name
    ]
    assert len(found) == 1 and found[0]["apiVersion"].startswith("batch.volcano.sh")
    return copy.deepcopy(found[0])


def job(queue: str | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"schedulerName": "volcano", "minAvailable": 1, **spec}
    if queue is not None:
        body["queue"] = queue
    template = {"spec": {"restartPolicy": "Never", "containers": [CONTAINER]}}
    body["tasks"] = [{"name": "worker", "replicas": 1, "template": template}]
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "j"}, "spec": body}


def pod_group(queue: str | None = None, **spec: Any) -> dict[str, Any]:
    body = {"minMember": 1, **spec, **({"queue": queue} if queue is not None else {})}
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": {"name": "pg"}, "spec": body}


def annotated_pod(queue: str) -> dict[str, Any]:
    metadata = {"name": "p", "annotations": {VOLCANO_QUEUE_ANNOTATION: queue}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"schedulerName": "volcano", "containers": [CONTAINER]},
    }


# --- the review's reproduction ----------------------------------------------------------------------------------------


def the_review_s_template(obj: dict[str, Any]) -> dict[str, Any]:
    """What security-review-3/n3-volcano-queue/templates/q.j2 does to the compiled Job."""
    obj["spec"].update({"queue": "llm", "priorityClassName": "system-cluster-critical"})
    obj["spec"]["tasks"][0]["template"]["metadata"].setdefault("annotations", {})[VOLCANO_QUEUE_ANNOTATION] = "llm"
    return obj


def test_the_compiled_job_is_admitted_and_the_review_s_template_is_refused_twice() -> None:
    assert review(compiled_job(), "vision", "vision").admitted
    verdict = review(the_review_s_template(compiled_job()), "vision", "vision")
    assert denied_with(verdict, "tenant vision may not use Volcano queue llm: its Volcano Jobs (spec.queue)")
    assert denied_with(verdict, "tenant vision may not use PriorityClass system-cluster-critical")


@pytest.mark.parametrize(
    ("what", "change", "message"),
    [
        ("spec.queue", lambda j: j["spec"].update(queue="llm"), "may not use Volcano queue llm"),
        (
            "Job-level priorityClassName",
            lambda j: j["spec"].update(priorityClassName="system-cluster-critical"),
            "may not use PriorityClass system-cluster-critical",
        ),
        (
            "a Job-level class above its own",
            lambda j: j["spec"].update(priorityClassName="gpustack-high"),
            "may not use PriorityClass gpustack-high",
        ),
        (
            "the pod template's annotation",
            lambda j: j["spec"]["tasks"][0]["template"]["metadata"].update(
                annotations={VOLCANO_QUEUE_ANNOTATION: "llm"}
            ),
            "may not use Volcano queue llm",
        ),
        (
            "the Job's own annotation",
            lambda j: j["metadata"].update(annotations={VOLCANO_QUEUE_ANNOTATION: "llm"}),
            "may not use Volcano queue llm",
        ),
        ("Volcano's default queue", lambda j: j["spec"].update(queue="default"), "may not use Volcano queue default"),
    ],
)
def test_each_field_of_the_template_alone_is_refused(what: str, change: Any, message: str) -> None:
    obj = compiled_job()
    change(obj)
    verdict = review(obj, "vision", "vision")
    assert denied_with(verdict, f"tenant vision {message}"), (what, verdict.denials)
    assert len(verdict.denials) == 1, verdict.denials  # the one rule it breaks, nothing else


# --- pods, PodGroups, the default queue -------------------------------------------------------------------------------


def test_a_pod_or_deployment_annotated_with_another_queue_is_refused() -> None:
    assert denied_with(review(annotated_pod("vision"), "llm", "llm"), "tenant llm may not use Volcano queue vision")
    assert review(annotated_pod("llm"), "llm", "llm").admitted
    # An empty annotation is Volcano's default queue, as the PodGroup controller reads it.
    assert denied_with(review(annotated_pod(""), "llm", "llm"), "tenant llm may not use Volcano queue default")
    pod = annotated_pod("vision")
    template = {
        "metadata": {"labels": {"app": "a"}, "annotations": pod["metadata"]["annotations"]},
        "spec": pod["spec"],
    }
    body = {"selector": {"matchLabels": {"app": "a"}}, "template": template}
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": body}
    assert denied_with(review(deployment, "llm", "llm"), "tenant llm may not use Volcano queue vision")


@pytest.mark.parametrize(
    ("queue", "admitted"),
    [("vision", True), ("llm", False), ("default", False), (None, True)],
    ids=["own", "another-tenant-s", "default", "unset-volcano-s-webhook-fills-default"],
)
def test_a_pod_group_is_held_to_the_tenant_s_queue(queue: str | None, admitted: bool) -> None:
    """PodGroups decide the queue of every Volcano-scheduled pod: the Job controller makes the Job's, Volcano's
    PodGroup controller one per pod outside a Job, in the pod's annotated queue or `default`. Both are created in the
    tenant's namespace, so the policy refuses a PodGroup in `default` even when Volcano's own controller makes it."""
    verdict = review(pod_group(queue), "vision", "vision")
    assert verdict.admitted is admitted, verdict.denials
    if not admitted:
        assert denied_with(verdict, f"tenant vision may not use Volcano queue {queue}")


def test_a_pod_group_s_priority_is_held_to_the_tenant_s_classes() -> None:
    verdict = review(pod_group("vision", priorityClassName="system-cluster-critical"), "vision", "vision")
    assert denied_with(verdict, "tenant vision may not use PriorityClass system-cluster-critical")
    assert review(pod_group("vision", priorityClassName="gpustack-normal"), "vision", "vision").admitted


def test_what_gpustack_compiles_and_the_pod_groups_volcano_makes_for_it_are_admitted() -> None:
    for manifest in workloads.compile_workloads(context("volcano")).objects:
        obj, ns = manifest.obj, manifest.obj["metadata"]["namespace"]
        assert review(obj, ns, ns).admitted, obj["metadata"]["name"]
        if obj["apiVersion"].startswith("batch.volcano.sh"):  # the Job controller's PodGroup: the Job's queue
            group = pod_group(obj["spec"]["queue"], priorityClassName=obj["spec"]["priorityClassName"])
        else:  # the PodGroup controller's, for a pod outside a Job: its annotated queue
            annotations = obj["spec"]["template"]["metadata"].get("annotations", {})
            if VOLCANO_QUEUE_ANNOTATION not in annotations:
                continue
            group = pod_group(annotations[VOLCANO_QUEUE_ANNOTATION])
        assert review(group, ns, ns).admitted, obj["metadata"]["name"]


# --- namespaces without a tenant --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("obj", "queue"),
    [(job("llm"), "llm"), (annotated_pod("vision"), "vision"), (pod_group("llm"), "llm")],
    ids=["job", "annotated-pod", "pod-group"],
)
def test_a_plain_namespace_may_not_name_a_tenant_s_queue(obj: dict[str, Any], queue: str) -> None:
    verdict = review(obj, "batch-jobs", None)
    assert denied_with(verdict, f"namespace batch-jobs belongs to no tenant: it may not use Volcano queue {queue}")


@pytest.mark.parametrize("queue", ["default", "nightly", None])
def test_a_plain_namespace_keeps_every_other_queue(queue: str | None) -> None:
    assert review(job(queue), "batch-jobs", None).admitted
    assert review(pod_group(queue), "batch-jobs", None).admitted


def test_a_plain_namespace_in_a_blueprint_without_volcano_tenants_gets_no_queue_rule() -> None:
    """Nothing to protect: no tenant has a queue, so the policy holds no rule that could never fail."""
    policy = next(
        o for o in build_admission_objects(context("multi-tenant")) if o["metadata"]["name"] == "gpustack-granted-pools"
    )
    assert "tenantQueues" not in {v["name"] for v in policy["spec"]["variables"]}
    assert review(job("anything"), "batch-jobs", None, "multi-tenant").admitted


def _template(queue: str) -> dict[str, Any]:
    metadata = {"labels": {"app": "a"}, "annotations": {VOLCANO_QUEUE_ANNOTATION: queue}}
    return {
        "metadata": metadata,
        "spec": {"schedulerName": "volcano", "restartPolicy": "Never", "containers": [CONTAINER]},
    }


def _wrapped(kind: str, queue: str) -> dict[str, Any]:
    """The annotated pod template inside `kind`, where Volcano's PodGroup controller would read it from the pods."""
    metadata = {"name": "w"}
    if kind == "CronJob":
        body = {"schedule": "0 * * * *", "jobTemplate": {"spec": {"template": _template(queue)}}}
        return {"apiVersion": "batch/v1", "kind": kind, "metadata": metadata, "spec": body}
    if kind == "JobSet":
        job_template = {"spec": {"template": _template(queue)}}
        body = {"replicatedJobs": [{"name": "workers", "replicas": 1, "template": job_template}]}
        return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": kind, "metadata": metadata, "spec": body}
    if kind == "LeaderWorkerSet":
        body = {"leaderWorkerTemplate": {"size": 2, "workerTemplate": _template(queue)}}
        return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": kind, "metadata": metadata, "spec": body}
    body = {"serviceName": "w", "selector": {"matchLabels": {"app": "a"}}, "template": _template(queue)}
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": metadata, "spec": body}


@pytest.mark.parametrize("kind", ["CronJob", "JobSet", "LeaderWorkerSet", "StatefulSet"])
def test_the_queue_annotation_is_read_in_every_kind_s_pod_templates(kind: str) -> None:
    assert denied_with(review(_wrapped(kind, "vision"), "llm", "llm"), "tenant llm may not use Volcano queue vision")
    assert review(_wrapped(kind, "llm"), "llm", "llm").admitted

"""The admission family: ValidatingAdmissionPolicies that keep every tenant on its pools, proven with cel-python.

Every CEL expression gpustack generates (matchConditions, variables, validations, messageExpressions) is evaluated
by `admission_cel` against three sets of requests, for every example blueprint and the edge cases in
tests/cases/admission/blueprints:

- the corpus in tests/cases/admission (pods sent as pods and as the template of every workload kind);
- what compile_workloads generates, and the pods its controllers would create from it: all admitted;
- a sweep derived from the blueprint alone (not from the policies): for every tenant, every taint, node label and
  hostname of every pool it is not granted, a value no pool has on every key pool taints and labels use, wildcard
  tolerations, nodeName and foreign schedulers: all denied, naming what is not theirs; and for namespaces without
  a tenant, the taint of every pool granted to any tenant (shared or not), and nothing of a pool granted to no tenant.

No expression may come back "not evaluated", and every expression of every policy must be evaluated at least once.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import manifest_schemas
import pytest
import yaml
from admission_cel import Admission, Request, Verdict, policy_expressions
from builders import sourceless
from conftest import CASES, shipped_examples

from gpustack.build import build_blueprint
from gpustack.catalog import load_catalog
from gpustack.codes import NO_ADMISSION_POLICIES, QUOTA_PER_NAMESPACE, SYSTEM_NAMESPACE
from gpustack.compile import compile_blueprint
from gpustack.compile.admission import FILE, NON_TENANT_POLICY, UNKNOWN_TENANT_POLICY, compile_admission
from gpustack.context import Context, unplaced
from gpustack.model import PRIORITY_VALUES, Blueprint, Scheduler, SharingStrategy
from gpustack.names import DEVICE_ENV, MANAGED_BY, POOL_LABEL, TENANT_LABEL, VOLCANO_SCHEDULER
from gpustack.plan import Plan
from gpustack.taints import taint_text
from gpustack.validation import validate_path, validate_text
from gpustack.workload_templates import allowed_priority_classes

CORPUS = CASES / "admission"
TEST_BLUEPRINTS = CORPUS / "blueprints"
BLUEPRINT_FILES = {p.stem: p for p in [*shipped_examples(), *sorted(TEST_BLUEPRINTS.glob("*.yaml"))]}
NAME_LABEL = "kubernetes.io/metadata.name"
# Kinds a pod spec of the corpus is also sent in, as the template.
WRAPPERS = (
    "Deployment",
    "StatefulSet",
    "ReplicaSet",
    "DaemonSet",
    "Job",
    "CronJob",
    "ReplicationController",
    "VolcanoJob",
    "JobSet",
    "LeaderWorkerSet",
)


# --- blueprints, plans and their policies ---------------------------------------------------------------------------


@functools.cache
def blueprint_named(name: str) -> Blueprint:
    result = validate_path(BLUEPRINT_FILES[name])
    assert result.ok and result.blueprint is not None, [d.message for d in result.diagnostics]
    return result.blueprint


@functools.cache
def plan_named(name: str) -> Plan:
    return compile_blueprint(sourceless(blueprint_named(name)))


@functools.cache
def admission_named(name: str) -> Admission:
    return Admission(m.obj for m in plan_named(name).by_family("admission"))


def context_named(name: str) -> Context:
    return Context(blueprint_named(name), load_catalog(), unplaced)


def namespace_object(blueprint: str, name: str, extra: dict[str, str | None] | None = None) -> dict[str, Any]:
    """The Namespace as the API server holds it: gpustack's own for a tenant namespace, else a bare one."""
    compiled = plan_named(blueprint).find("Namespace", name)
    namespace = copy.deepcopy(compiled.obj) if compiled is not None else {"apiVersion": "v1", "kind": "Namespace"}
    namespace.setdefault("metadata", {})["name"] = name
    labels = namespace["metadata"].setdefault("labels", {})
    labels[NAME_LABEL] = name  # set by the API server on every namespace
    for key, value in (extra or {}).items():
        if value is None:
            labels.pop(key, None)
        else:
            labels[key] = value
    return namespace


# --- requests -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    id: str
    blueprint: str
    namespace: str
    object: dict[str, Any]
    expect: str  # admitted | denied
    message: str | None = None
    operation: str = "CREATE"
    old_object: dict[str, Any] | None = None
    namespace_labels: dict[str, str | None] = field(default_factory=dict)
    wrap: bool = True

    def request(self) -> Request:
        obj = copy.deepcopy(self.object)
        obj["metadata"]["namespace"] = self.namespace
        old = copy.deepcopy(self.old_object)
        if old is not None:
            old["metadata"]["namespace"] = self.namespace
        namespace = namespace_object(self.blueprint, self.namespace, self.namespace_labels)
        return Request(self.operation, obj, namespace, old)


def wrap(kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    """`spec` as the pod template of `kind`, the way a user would write that object."""
    labels = {"app": name}
    template = {"metadata": {"labels": labels}, "spec": copy.deepcopy(spec)}
    if kind in ("Job", "CronJob", "VolcanoJob", "JobSet"):
        template["spec"]["restartPolicy"] = "Never"
    metadata = {"name": name}
    selector = {"matchLabels": labels}
    if kind in ("Deployment", "ReplicaSet", "DaemonSet"):
        body = {"selector": selector, "template": template}
        return {"apiVersion": "apps/v1", "kind": kind, "metadata": metadata, "spec": body}
    if kind == "StatefulSet":
        body = {"serviceName": name, "selector": selector, "template": template}
        return {"apiVersion": "apps/v1", "kind": kind, "metadata": metadata, "spec": body}
    if kind == "Job":
        return {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata, "spec": {"template": template}}
    if kind == "CronJob":
        body = {"schedule": "0 * * * *", "jobTemplate": {"spec": {"template": template}}}
        return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": metadata, "spec": body}
    if kind == "ReplicationController":
        body = {"selector": labels, "template": template}
        return {"apiVersion": "v1", "kind": kind, "metadata": metadata, "spec": body}
    if kind == "JobSet":
        job = {"name": "workers", "replicas": 1, "template": {"spec": {"template": template}}}
        body = {"replicatedJobs": [job]}
        return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": kind, "metadata": metadata, "spec": body}
    if kind == "LeaderWorkerSet":
        # Only the worker template: the leader's defaults to it, so the policy must read it there.
        body = {"leaderWorkerTemplate": {"size": 2, "workerTemplate": template}}
        return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": kind, "metadata": metadata, "spec": body}
    # Volcano's webhook would default the Job's schedulerName to volcano; without it the pods' own scheduler
    # decides, so a wrapped pod keeps the outcome it has alone (schedulers.yaml covers the Job-level name).
    task = {"name": "worker", "replicas": 1, "template": template}
    body = {"minAvailable": 1, "tasks": [task]}
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": metadata, "spec": body}


def read_corpus() -> list[Case]:
    cases = []
    for path in sorted(CORPUS.glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            expect = document["expect"]
            assert expect in ("admitted", "denied"), f"{path.name} {document['case']}: expect {expect!r}"
            assert (expect == "denied") == ("message" in document), f"{path.name} {document['case']}: message"
            case = Case(
                id=f"{path.stem}/{document['case']}",
                blueprint=document["blueprint"],
                namespace=document["namespace"],
                object=document["object"],
                expect=expect,
                message=document.get("message"),
                operation=document.get("operation", "CREATE"),
                old_object=document.get("oldObject"),
                namespace_labels=document.get("namespaceLabels") or {},
                wrap=document.get("wrap", True),
            )
            cases.append(case)
            if case.wrap and case.object["kind"] == "Pod" and case.operation == "CREATE":
                name = case.object["metadata"]["name"]
                for kind in WRAPPERS:
                    cases.append(replace(case, id=f"{case.id}[{kind}]", object=wrap(kind, name, case.object["spec"])))
    return cases


CORPUS_CASES = read_corpus()


VERDICTS: dict[str, tuple[Case, Verdict]] = {}


def verdict(case: Case) -> Verdict:
    """Each request is reviewed once per session; the parametrized tests and the count share the result."""
    if case.id not in VERDICTS:
        VERDICTS[case.id] = (case, admission_named(case.blueprint).review(case.request()))
    seen, result = VERDICTS[case.id]
    assert seen == case, f"two cases are named {case.id}"
    return result


def check(case: Case, result: Verdict) -> None:
    assert result.not_evaluated == [], f"{case.id}: expressions not evaluated: {result.not_evaluated}"
    if case.expect == "admitted":
        assert result.admitted, f"{case.id}: denied: {result.denials}"
    else:
        assert result.denials, f"{case.id}: admitted, expected a denial containing {case.message!r}"
        assert any(case.message in denial for denial in result.denials), f"{case.id}: {result.denials}"


@pytest.mark.parametrize("case", CORPUS_CASES, ids=lambda c: c.id)
def test_corpus(case: Case) -> None:
    check(case, verdict(case))


def corpus_objects(case: Case) -> list[dict[str, Any]]:
    """What the API server validates before admission policies see the request: the object, the old object of an
    update, and (for a Pod) the same pod spec wrapped in every workload kind, in the case's namespace."""
    request = case.request()
    objects = [request.object, *([request.old_object] if request.old_object is not None else [])]
    if case.wrap and request.object["kind"] == "Pod":
        objects += [wrap(kind, "wrapped", request.object["spec"]) for kind in WRAPPERS]
    return [{**obj, "metadata": {**obj["metadata"], "namespace": case.namespace}} for obj in objects]


PLAIN_CASES = [c for c in CORPUS_CASES if "[" not in c.id]


@pytest.mark.parametrize("case", PLAIN_CASES, ids=lambda c: c.id)
def test_corpus_objects_are_valid_kubernetes(case: Case) -> None:
    """The API server validates an object before admission policies see it: the corpus holds only valid ones."""
    version = blueprint_named(case.blueprint).kubernetes_version
    for obj in corpus_objects(case):
        if not manifest_schemas.needs_crd(obj):  # CRD kinds: the conformance test below
            assert manifest_schemas.validate_any(obj, version) == [], f"{case.id} {obj['kind']}"


@pytest.mark.conformance
@pytest.mark.parametrize(
    "case", [c for c in PLAIN_CASES if any(map(manifest_schemas.needs_crd, corpus_objects(c)))], ids=lambda c: c.id
)
def test_corpus_custom_resources_pass_their_upstream_crds(case: Case) -> None:
    """VolcanoJob, JobSet and LeaderWorkerSet wrappers against their own CRDs, CEL rules included."""
    manifest_schemas.skip_without_crds()
    version = blueprint_named(case.blueprint).kubernetes_version
    for obj in corpus_objects(case):
        if manifest_schemas.needs_crd(obj):
            assert manifest_schemas.validate_any(obj, version) == [], f"{case.id} {obj['kind']}"


# --- what gpustack generates is admitted ----------------------------------------------------------------------------


def pods_of(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """The pods a workload's controller would create (Volcano copies the Job's scheduler into each pod)."""
    spec = obj["spec"]
    if obj["apiVersion"].startswith("batch.volcano.sh"):
        templates = [task["template"] for task in spec["tasks"]]
    elif obj["kind"] == "JobSet":
        templates = [job["template"]["spec"]["template"] for job in spec["replicatedJobs"]]
    elif obj["kind"] == "LeaderWorkerSet":
        group = spec["leaderWorkerTemplate"]
        templates = [group[role] for role in ("leaderTemplate", "workerTemplate") if role in group]
    elif "template" in spec:
        templates = [spec["template"]]
    else:
        return []
    pods = []
    for index, template in enumerate(templates):
        pod_spec = copy.deepcopy(template["spec"])
        if obj["apiVersion"].startswith("batch.volcano.sh") and "schedulerName" in spec:
            pod_spec["schedulerName"] = spec["schedulerName"]
        metadata = {
            "name": f"{obj['metadata']['name']}-{index}",
            "labels": template.get("metadata", {}).get("labels", {}),
        }
        pods.append({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": pod_spec})
    return pods


def generated_cases(blueprint: str) -> list[Case]:
    cases = []
    for manifest in plan_named(blueprint).by_family("workloads"):
        obj = manifest.obj
        if not pods_of(obj):
            continue
        namespace = obj["metadata"]["namespace"]
        base = f"generated/{blueprint}/{manifest.kind}/{manifest.name}"
        cases.append(Case(base, blueprint, namespace, obj, "admitted", wrap=False))
        relabelled = copy.deepcopy(obj)
        relabelled["metadata"]["labels"]["audited"] = "true"
        cases.append(Case(f"{base}:update", blueprint, namespace, relabelled, "admitted", None, "UPDATE", obj))
        for pod in pods_of(obj):
            cases.append(Case(f"{base}/pod/{pod['metadata']['name']}", blueprint, namespace, pod, "admitted"))
    return cases


GENERATED_CASES = [case for name in BLUEPRINT_FILES for case in generated_cases(name)]


def test_every_blueprint_has_workloads_to_admit() -> None:
    assert {case.blueprint for case in GENERATED_CASES} == set(BLUEPRINT_FILES)


@pytest.mark.parametrize("case", GENERATED_CASES, ids=lambda c: c.id)
def test_what_gpustack_generates_is_admitted(case: Case) -> None:
    check(case, verdict(case))


# --- a sweep derived from the blueprint, not from the policies ------------------------------------------------------


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {**spec, "containers": [CONTAINER]}}


CONTAINER = {"name": "main", "image": "busybox"}


def taint_toleration(key: str, value: str | None, effect: str) -> dict[str, str]:
    if value is None:
        return {"key": key, "operator": "Exists", "effect": effect}
    return {"key": key, "operator": "Equal", "value": value, "effect": effect}


@dataclass(frozen=True)
class Who:
    """A namespace of a tenant, or of one the blueprint does not have, and what the blueprint grants it."""

    tenant: str
    namespace: str
    pools: frozenset[str]
    schedulers: frozenset[str]
    labels: dict[str, str | None] = field(default_factory=dict, hash=False)

    def case(self, blueprint: str, suffix: str, obj: dict[str, Any], message: str | None = None) -> Case:
        expect = "admitted" if message is None else "denied"
        case_id = f"sweep/{blueprint}/{self.namespace}/{suffix}"
        return Case(case_id, blueprint, self.namespace, obj, expect, message, namespace_labels=self.labels)


def who_is_where(ctx: Context) -> list[Who]:
    found = []
    for tenant in ctx.blueprint.tenants:
        schedulers = {"default-scheduler"}
        if tenant.scheduler is Scheduler.VOLCANO:
            schedulers.add(VOLCANO_SCHEDULER)
        if any(ctx.pools[p].sharing.strategy is SharingStrategy.HAMI for p in tenant.pools if p in ctx.pools):
            schedulers.add(ctx.blueprint.hami.scheduler_name)
        # The first namespace only: the binding lists them all, and the corpus sends requests to second ones.
        found.append(Who(tenant.name, tenant.namespaces[0], frozenset(tenant.pools), frozenset(schedulers)))
    retired = Who("retired", "retired", frozenset(), frozenset({"default-scheduler"}), {TENANT_LABEL: "retired"})
    return [*found, retired]


def required(key: str, values: list[str]) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": key, "operator": "In", "values": values}]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}


def sweep_tenant(ctx: Context, blueprint: str, who: Who) -> Iterator[Case]:
    """Everything of a pool `who` is not granted is refused, naming it; its own pools and schedulers are not."""
    name = who.tenant
    own = [p for p in ctx.blueprint.pools if p.name in who.pools]
    own_taints = {(t.key, t.value, t.effect) for p in own for t in p.taints}
    if own:
        tolerations = [taint_toleration(*key) for key in sorted(own_taints, key=str)]
        yield who.case(
            blueprint,
            "own-pools",
            pod("own", tolerations=tolerations, affinity=required(POOL_LABEL, sorted(who.pools))),
        )
    own_labels = {(POOL_LABEL, p.name) for p in own} | {pair for p in own for pair in p.labels}
    own_labels |= {("kubernetes.io/hostname", node) for p in own for node in p.nodes}
    for foreign in (p for p in ctx.blueprint.pools if p.name not in who.pools):
        for taint in foreign.taints:
            if (taint.key, taint.value, taint.effect) in own_taints:
                continue  # pools that share a taint are told apart by their labels
            text = taint_text(taint)
            message = f"tenant {name} may not tolerate {text}"
            toleration = taint_toleration(taint.key, taint.value, taint.effect)
            yield who.case(blueprint, f"tolerates/{foreign.name}/{text}", pod("t", tolerations=[toleration]), message)
            exists = pod("e", tolerations=[{"key": taint.key, "operator": "Exists"}])  # every value, every effect
            yield who.case(blueprint, f"exists/{foreign.name}/{text}", exists, f"tenant {name} may not tolerate ")
        hostnames = [("kubernetes.io/hostname", node) for node in foreign.nodes]
        for key, value in [(POOL_LABEL, foreign.name), *foreign.labels, *hostnames]:
            if (key, value) in own_labels:
                continue
            message = f"tenant {name} may not select {key}={value}: on the node label keys pools use, tenant {name} "
            obj = pod("s", nodeSelector={key: value})
            yield who.case(blueprint, f"selects/{foreign.name}/{key}={value}", obj, message)
            if key == POOL_LABEL:  # the corpus covers required affinity on other labels and hostnames
                obj = pod("r", affinity=required(key, [value]))
                yield who.case(blueprint, f"requires/{foreign.name}/{key}={value}", obj, message)
    # Stricter than naming foreign pools: on a key that pool taints (node labels) use, a value no pool has is refused.
    all_taints = {(t.key, t.value, t.effect) for p in ctx.blueprint.pools for t in p.taints}
    for key in dict.fromkeys(t.key for p in ctx.blueprint.pools for t in p.taints):
        toleration = taint_toleration(key, "no-such-value", "NoSchedule")
        message = f"tenant {name} may not tolerate {key}=no-such-value:NoSchedule: on the taint keys pools use"
        yield who.case(blueprint, f"tolerates-unknown/{key}", pod("u", tolerations=[toleration]), message)
        toleration = {"key": key, "operator": "Equal", "value": "no-such-value"}  # every effect
        message = f"tenant {name} may not tolerate {key}=no-such-value (every effect)"
        yield who.case(blueprint, f"tolerates-unknown-every-effect/{key}", pod("u", tolerations=[toleration]), message)
        # Exists tolerates every value of the key (of one effect, or of all): admitted only if all of them are its own.
        for effect in ("", "NoSchedule"):
            covered = {t for t in all_taints if t[0] == key and effect in ("", t[2])}
            toleration = {"key": key, "operator": "Exists", **({"effect": effect} if effect else {})}
            message = None if covered <= own_taints else f"tenant {name} may not tolerate {key}"
            obj = pod("u", tolerations=[toleration])
            yield who.case(blueprint, f"tolerates-exists/{key}:{effect or 'every-effect'}", obj, message)
    label_keys = [POOL_LABEL, *(k for p in ctx.blueprint.pools for k, _ in p.labels)]
    label_keys += ["kubernetes.io/hostname"] if any(p.nodes for p in ctx.blueprint.pools) else []
    for key in dict.fromkeys(label_keys):
        message = f"tenant {name} may not select {key}=no-such-value: on the node label keys pools use"
        yield who.case(blueprint, f"selects-unknown/{key}", pod("u", nodeSelector={key: "no-such-value"}), message)
        obj = pod("u", affinity=required(key, ["no-such-value"]))
        yield who.case(blueprint, f"requires-unknown/{key}", obj, message)
    yield who.case(
        blueprint, "wildcard", pod("w", tolerations=[{"operator": "Exists"}]), f"tenant {name} may not use a wildcard"
    )
    node = next((n for p in ctx.blueprint.pools for n in p.nodes), "node-1")
    yield who.case(blueprint, "node-name", pod("n", nodeName=node), f"tenant {name} may not set spec.nodeName ({node})")
    others = {VOLCANO_SCHEDULER, ctx.blueprint.hami.scheduler_name, "custom-scheduler"}
    for scheduler in sorted(others - who.schedulers):
        message = f"tenant {name} may not use scheduler {scheduler}: its pods may only name "
        yield who.case(blueprint, f"scheduler/{scheduler}", pod("x", schedulerName=scheduler), message)
    for scheduler in sorted(who.schedulers):
        yield who.case(blueprint, f"own-scheduler/{scheduler}", pod("x", schedulerName=scheduler))
    yield from sweep_devices(blueprint, who, f"tenant {name}")
    # H3: a resource name only pools it is not granted advertise is refused, whatever the taints; the namespace
    # LimitRange's default of "0" is no request.
    own_resources = {o.resource for p in own for o in ctx.offers[p.name]}
    others = {o.resource for p in ctx.blueprint.pools if p.name not in who.pools for o in ctx.offers[p.name]}
    for resource in sorted(others - own_resources):
        message = f"tenant {name} may not request {resource}: only pools it is not granted advertise it"
        yield who.case(blueprint, f"foreign-resource/{resource}", gpu_pod("f", resource, "1"), message)
        yield who.case(blueprint, f"foreign-resource-zero/{resource}", gpu_pod("f", resource, "0"))
    # M3: its own priority class and lower ones; never a higher one or system-*.
    tenant = ctx.tenants.get(name)
    allowed = allowed_priority_classes(ctx, name) if tenant is not None else []
    for level in PRIORITY_VALUES:
        obj = pod("p", priorityClassName=f"gpustack-{level}")
        refused = (
            None if f"gpustack-{level}" in allowed else f"tenant {name} may not use PriorityClass gpustack-{level}"
        )
        yield who.case(blueprint, f"priority/{level}", obj, refused)
    message = f"tenant {name} may not use PriorityClass system-cluster-critical: its pods may name only"
    yield who.case(blueprint, "priority/system", pod("p", priorityClassName="system-cluster-critical"), message)


def gpu_pod(name: str, resource: str, amount: str, **spec: Any) -> dict[str, Any]:
    obj = pod(name, **spec)
    obj["spec"]["containers"] = [
        {**CONTAINER, "resources": {"requests": {resource: amount}, "limits": {resource: amount}}}
    ]
    return obj


def sweep_devices(blueprint: str, who: Who, words: str) -> Iterator[Case]:
    """H4: env and mounts the NVIDIA container toolkit reads as a device request, wherever gpustack polices pods."""
    for variable in DEVICE_ENV:
        obj = pod("v")
        obj["spec"]["containers"] = [{**CONTAINER, "env": [{"name": variable, "value": "all"}]}]
        yield who.case(blueprint, f"device-env/{variable}", obj, f"{words} may not set env {variable}: ")
        obj = copy.deepcopy(obj)
        obj["spec"]["initContainers"] = obj["spec"].pop("containers")
        obj["spec"]["containers"] = [CONTAINER]
        yield who.case(blueprint, f"device-env-init/{variable}", obj, f"{words} may not set env {variable}: ")
    obj = pod("c")
    obj["spec"]["containers"] = [{**CONTAINER, "env": [{"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "all"}]}]
    yield who.case(
        blueprint, "driver-capabilities-without-gpu", obj, f"{words} may not set env NVIDIA_DRIVER_CAPABILITIES"
    )
    obj = pod("m")
    mount = {"name": "x", "mountPath": "/var/run/nvidia-container-devices/all"}
    obj["spec"]["containers"] = [{**CONTAINER, "volumeMounts": [mount]}]
    message = f"{words} may not set a mount at /var/run/nvidia-container-devices/all"
    yield who.case(blueprint, "device-mount", obj, message)
    obj = pod("ok")
    obj["spec"]["containers"] = [{**CONTAINER, "env": [{"name": "NVIDIA_API_KEY", "value": "x"}]}]
    yield who.case(blueprint, "other-nvidia-env", obj)


def sweep_non_tenant(ctx: Context, blueprint: str) -> Iterator[Case]:
    """A namespace without a tenant: the taint of every pool granted to a tenant (one or several) is refused, and a
    GPU pod's wildcard; a pool granted to no tenant stays open."""
    nobody = Who("", "team-x", frozenset(), frozenset())
    granted = [p for p in ctx.blueprint.pools if ctx.tenants_by_pool.get(p.name)]
    granted_taints = {(t.key, t.value, t.effect) for p in granted for t in p.taints}
    for pool in granted:
        for taint in pool.taints:
            text = taint_text(taint)
            tenants = ctx.tenants_by_pool[pool.name]
            owner = f"tenant {tenants[0]}" if len(tenants) == 1 else f"tenants {', '.join(tenants[:-1])} and "
            message = f"namespace team-x belongs to no tenant: it may not tolerate {text}, the taint of "
            obj = pod("d", tolerations=[taint_toleration(taint.key, taint.value, taint.effect)])
            yield nobody.case(blueprint, f"granted/{pool.name}/{text}", obj, message)
            obj = pod("d", tolerations=[taint_toleration(taint.key, taint.value, taint.effect)])
            yield nobody.case(blueprint, f"owner/{pool.name}/{text}", obj, f"{pool.name} (granted to {owner}")
            exists = pod("e", tolerations=[{"key": taint.key, "operator": "Exists"}])  # every value, every effect
            message = "namespace team-x belongs to no tenant: it may not tolerate "
            yield nobody.case(blueprint, f"exists/{pool.name}/{text}", exists, message)
    for pool in (p for p in ctx.blueprint.pools if not ctx.tenants_by_pool.get(p.name)):
        for taint in pool.taints:
            if (taint.key, taint.value, taint.effect) in granted_taints:
                continue  # a taint it shares with a granted pool stays closed
            obj = pod("o", tolerations=[taint_toleration(taint.key, taint.value, taint.effect)])
            yield nobody.case(blueprint, f"ungranted/{pool.name}/{taint_text(taint)}", obj)
    tainted = [p for p in granted if p.taints]
    if tainted:
        resource = ctx.offers[tainted[0].name][0].resource
        gpu = {**CONTAINER, "resources": {"requests": {resource: "1"}, "limits": {resource: "1"}}}
        obj = pod("g", tolerations=[{"operator": "Exists"}])
        obj["spec"]["containers"] = [gpu]
        message = "namespace team-x belongs to no tenant: a pod that requests GPUs may not use a wildcard toleration"
        yield nobody.case(blueprint, "wildcard-gpu", obj, message)
    yield nobody.case(blueprint, "wildcard-cpu", pod("a", tolerations=[{"operator": "Exists"}]))
    yield from sweep_devices(blueprint, nobody, "namespace team-x")
    others = {o.resource for p in ctx.blueprint.pools if p not in granted for o in ctx.offers[p.name]}
    resources = sorted({o.resource for p in granted for o in ctx.offers[p.name]})
    for resource in resources:
        if resource not in others:
            message = f"namespace team-x belongs to no tenant: it may not request {resource}: only pools granted"
            yield nobody.case(blueprint, f"granted-resource/{resource}", gpu_pod("r", resource, "1"), message)
    if resources:
        obj = gpu_pod("s", resources[0], "1", priorityClassName="system-node-critical")
        message = "a pod that requests the GPUs of pools granted to tenants may not use a system-* PriorityClass"
        yield nobody.case(blueprint, "system-priority-gpu", obj, message)
        yield nobody.case(blueprint, "system-priority-cpu", pod("s", priorityClassName="system-node-critical"))
    yield nobody.case(blueprint, "anything-else", pod("c", nodeName="node-1", schedulerName="custom-scheduler"))


def sweep(blueprint: str) -> Iterator[Case]:
    """Requests whose outcome follows from the blueprint's pools and tenants alone."""
    ctx = context_named(blueprint)
    for who in who_is_where(ctx):
        yield from sweep_tenant(ctx, blueprint, who)
    yield from sweep_non_tenant(ctx, blueprint)


SWEEP_CASES = [case for name in BLUEPRINT_FILES for case in sweep(name)]


@pytest.mark.parametrize("case", SWEEP_CASES, ids=lambda c: c.id)
def test_sweep(case: Case) -> None:
    check(case, verdict(case))


# --- every expression, evaluated; the counts ------------------------------------------------------------------------


def test_every_generated_expression_is_evaluated_and_none_is_left_unevaluated() -> None:
    cases = [*CORPUS_CASES, *GENERATED_CASES, *SWEEP_CASES]
    results = [(case, verdict(case)) for case in cases]
    missing = []
    expressions = 0
    for name in BLUEPRINT_FILES:
        admission = admission_named(name)
        evaluated = {f for case, result in results if case.blueprint == name for f in result.evaluated}
        expressions += len(admission.expressions())
        missing += [f"{name}: {policy} {path}" for policy, path in sorted(admission.expressions() - evaluated)]
    assert missing == [], "expressions never evaluated"
    assert [n for _, result in results for n in result.not_evaluated] == []
    admitted = sum(1 for _, result in results if result.admitted)
    assert admitted == sum(1 for case in cases if case.expect == "admitted")
    evaluations = sum(len(result.evaluated) for _, result in results)
    policies = sum(len(admission_named(name).policies) for name in BLUEPRINT_FILES)
    print(
        f"\nadmission: {len(cases)} requests, {admitted} admitted, {len(cases) - admitted} denied (corpus "
        f"{len(CORPUS_CASES)}, generated {len(GENERATED_CASES)}, sweep {len(SWEEP_CASES)}); {expressions} distinct "
        f"CEL expressions in {policies} policies of {len(BLUEPRINT_FILES)} blueprints, every one evaluated, "
        f"{evaluations} evaluations, 0 not evaluated"
    )


# --- the objects ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(BLUEPRINT_FILES))
def test_objects_pass_strict_kubernetes_schemas(name: str) -> None:
    objects = plan_named(name).by_family("admission")
    assert objects
    for version in sorted({blueprint_named(name).kubernetes_version, manifest_schemas.newest_version()}):
        for manifest in objects:
            assert manifest_schemas.validate_any(manifest.obj, version) == [], f"{manifest.key} on {version}"


@pytest.mark.parametrize("name", sorted(BLUEPRINT_FILES))
def test_policies_deny_fail_closed_and_are_named_and_labelled(name: str) -> None:
    ctx = context_named(name)
    objects = [m.obj for m in plan_named(name).by_family("admission")]
    policies = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ValidatingAdmissionPolicy"}
    bindings = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ValidatingAdmissionPolicyBinding"}
    expected = {f"gpustack-tenant-{t.name}" for t in ctx.blueprint.tenants} | {UNKNOWN_TENANT_POLICY}
    if any(p.taints and ctx.tenants_by_pool[p.name] for p in ctx.blueprint.pools):
        expected.add(NON_TENANT_POLICY)  # only where a granted pool has a taint a toleration could open
    assert set(policies) == set(bindings) == expected
    for manifest in plan_named(name).by_family("admission"):
        assert manifest.file == FILE
        assert manifest.obj["metadata"]["labels"] == MANAGED_BY
        assert manifest.obj["apiVersion"] == "admissionregistration.k8s.io/v1"
    for policy in policies.values():
        assert policy["spec"]["failurePolicy"] == "Fail"
        assert all(
            v["reason"] == "Forbidden" and v["message"] and v["messageExpression"]
            for v in policy["spec"]["validations"]
        )
        assert all("\n" not in v["message"] for v in policy["spec"]["validations"])
    for binding_name, binding in bindings.items():
        assert binding["spec"]["policyName"] == binding_name
        assert binding["spec"]["validationActions"] == ["Deny"]


def test_tenants_are_bound_by_namespace_name_and_system_namespaces_are_left_alone() -> None:
    ctx = context_named("seed-article")
    bindings = {
        m.name: m.obj["spec"]["matchResources"]["namespaceSelector"]
        for m in plan_named("seed-article").by_family("admission")
        if m.kind == "ValidatingAdmissionPolicyBinding"
    }
    for tenant in ctx.blueprint.tenants:
        assert bindings[f"gpustack-tenant-{tenant.name}"] == {
            "matchExpressions": [{"key": NAME_LABEL, "operator": "In", "values": sorted(tenant.namespaces)}]
        }
    tenant_namespaces = sorted(ns for t in ctx.blueprint.tenants for ns in t.namespaces)
    system = ["gpu-operator", "kube-system"]  # the GPU Operator runs the plugin and the MIG manager there
    assert bindings[UNKNOWN_TENANT_POLICY]["matchExpressions"] == [
        {"key": TENANT_LABEL, "operator": "Exists"},
        {"key": NAME_LABEL, "operator": "NotIn", "values": sorted(system + tenant_namespaces)},
    ]
    assert bindings[NON_TENANT_POLICY]["matchExpressions"] == [
        {"key": TENANT_LABEL, "operator": "DoesNotExist"},
        {"key": NAME_LABEL, "operator": "NotIn", "values": sorted(system + tenant_namespaces)},
    ]


def test_a_system_namespace_handed_to_a_tenant_is_still_not_checked() -> None:
    data = yaml.safe_load(BLUEPRINT_FILES["quickstart"].read_text())
    data["spec"]["stack"] = "device-plugin"  # the standalone plugin's namespace is a system one
    data["spec"].pop("gpuOperator")
    data["spec"]["tenants"][0]["namespaces"] = ["ml", "nvidia-device-plugin"]
    result = validate_text(json.dumps(data), "system.json")
    # The validator refuses it (GS206), and warns that the tenant's quota now counts twice (GS507).
    assert sorted(d.code for d in result.diagnostics) == [SYSTEM_NAMESPACE, QUOTA_PER_NAMESPACE]
    # Compile is still safe if handed such a blueprint: the system namespace stays out of the tenant's policy.
    objects = [m.obj for m in compile_blueprint(sourceless(build_blueprint(data))).by_family("admission")]
    binding = next(o for o in objects if o["metadata"]["name"] == "gpustack-tenant-ml" and "policyName" in o["spec"])
    assert binding["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"][0]["values"] == ["ml"]
    device_plugin = {**pod("plugin", tolerations=[{"key": "gpustack.io/pool", "operator": "Exists"}])}
    device_plugin["metadata"]["namespace"] = "nvidia-device-plugin"
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "nvidia-device-plugin"}}
    namespace["metadata"]["labels"] = {NAME_LABEL: "nvidia-device-plugin", TENANT_LABEL: "ml"}
    assert Admission(objects).review(Request("CREATE", device_plugin, namespace)).admitted


def blueprint_text(name: str, **spec: Any) -> str:
    data = yaml.safe_load(BLUEPRINT_FILES[name].read_text())
    data["spec"].update(spec)
    return json.dumps(data)


@pytest.mark.parametrize("version", ["1.25", "1.29"])
def test_kubernetes_without_the_api_gets_no_policies_and_a_warning(version: str) -> None:
    text = blueprint_text("seed-article", kubernetes={"version": version})
    result = validate_text(text, "old.json")
    assert result.ok and result.blueprint is not None
    assert compile_admission(Context(result.blueprint, load_catalog(), unplaced)).objects == []
    assert compile_blueprint(sourceless(result.blueprint)).by_family("admission") == ()
    assert [d.code for d in result.diagnostics if d.code == NO_ADMISSION_POLICIES] == [NO_ADMISSION_POLICIES]


@pytest.mark.parametrize("version", ["1.30", manifest_schemas.newest_version()])
def test_kubernetes_with_the_api_gets_policies_and_no_warning(version: str) -> None:
    result = validate_text(blueprint_text("seed-article", kubernetes={"version": version}), "new.json")
    assert result.ok and result.blueprint is not None
    assert compile_blueprint(sourceless(result.blueprint)).by_family("admission")
    assert NO_ADMISSION_POLICIES not in [d.code for d in result.diagnostics]


def test_a_pool_shared_by_every_tenant_is_still_closed_to_namespaces_without_one() -> None:
    """The kueue blueprint shares both pools between both tenants: no pool is dedicated, every one is granted."""
    ctx = context_named("kueue")
    assert all(len(ctx.tenants_by_pool[p.name]) > 1 for p in ctx.blueprint.pools)
    assert NON_TENANT_POLICY in admission_named("kueue").policies
    toleration = {"key": POOL_LABEL, "operator": "Exists"}
    h100 = {**CONTAINER, "resources": {"limits": {"nvidia.com/gpu": "8"}}}
    obj = {**pod("h100", tolerations=[toleration]), "metadata": {"name": "h100", "namespace": "default"}}
    obj["spec"]["containers"] = [h100]
    result = admission_named("kueue").review(Request("CREATE", obj, namespace_object("kueue", "default")))
    assert result.not_evaluated == []
    assert result.denials == [
        f"ValidatingAdmissionPolicy '{NON_TENANT_POLICY}' with binding '{NON_TENANT_POLICY}' denied request: "
        "namespace default belongs to no tenant: it may not tolerate gpustack.io/pool=a100:NoSchedule, the taint of "
        "pool a100 (granted to tenants team-a and team-b) (and 1 more such taint)",
        f"ValidatingAdmissionPolicy '{NON_TENANT_POLICY}' with binding '{NON_TENANT_POLICY}' denied request: "
        "namespace default belongs to no tenant: it may not request nvidia.com/gpu: only pools granted to tenants "
        "advertise it",
    ]


def test_no_granted_taint_means_no_toleration_rule_for_namespaces_without_a_tenant() -> None:
    """Only pools granted to no tenant carry taints: nothing a namespace without a tenant may not tolerate; the
    device rules (H4) and the granted pools' resource names (H3) still hold."""
    data = yaml.safe_load(BLUEPRINT_FILES["multi-tenant"].read_text())
    for pool in data["spec"]["nodePools"]:
        pool.pop("taints", None)
    spare = {"name": "spare", "gpu": {"model": "L4", "count": 4}, "nodes": ["spare-1"]}
    spare["taints"] = [{"key": POOL_LABEL, "value": "spare", "effect": "NoSchedule"}]
    data["spec"]["nodePools"].append(spare)
    result = validate_text(json.dumps(data), "untainted.json")
    assert result.blueprint is not None, [d.message for d in result.diagnostics]
    objects = compile_blueprint(sourceless(result.blueprint)).by_family("admission")
    policies = {m.name: m.obj for m in objects if m.kind == "ValidatingAdmissionPolicy"}
    assert "gpustack-tenant-payments" in policies
    declared = {v["name"] for v in policies[NON_TENANT_POLICY]["spec"]["variables"]}
    assert "grantedTaints" not in declared and {"runtimeRequests", "grantedOnlyRequests"} <= declared


def test_output_is_deterministic_and_in_apply_order() -> None:
    first = compile_blueprint(sourceless(blueprint_named("edge-cases"))).by_family("admission")
    second = compile_blueprint(sourceless(blueprint_named("edge-cases"))).by_family("admission")
    assert [m.obj for m in first] == [m.obj for m in second]
    kinds = [m.kind for m in first]
    assert kinds == sorted(kinds, key=lambda k: k != "ValidatingAdmissionPolicy")  # policies before their bindings
    assert [m.name for m in first if m.kind == "ValidatingAdmissionPolicy"] == sorted(
        m.name for m in first if m.kind == "ValidatingAdmissionPolicy"
    )


def test_every_expression_is_portable_cel() -> None:
    """No Kubernetes-only library or syntax cel-python lacks; each expression parses on its own."""
    import celpy

    for name in BLUEPRINT_FILES:
        for policy in admission_named(name).policies.values():
            for path, expression in policy_expressions(policy):
                environment = celpy.Environment()
                environment.compile(expression)  # raises on anything cel-python cannot parse
                for banned in ("quantity(", ".join(", "optional", "?.", "authorizer", "params"):
                    assert banned not in expression, f"{name} {policy['metadata']['name']} {path}: {banned}"


# --- the evaluator itself: what it cannot evaluate is never a pass ---------------------------------------------------


def tiny_policy(
    validations: list[dict[str, str]],
    variables: list[dict[str, str]] | None = None,
    conditions: list[dict[str, str]] | None = None,
    actions: tuple[str, ...] = ("Deny",),
) -> list[dict[str, Any]]:
    rules = [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}]
    spec: dict[str, Any] = {"failurePolicy": "Fail", "matchConstraints": {"resourceRules": rules}}
    if conditions:
        spec["matchConditions"] = conditions
    if variables:
        spec["variables"] = variables
    spec["validations"] = validations
    meta = {"name": "p"}
    return [
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": meta,
            "spec": spec,
        },
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": meta,
            "spec": {"policyName": "p", "validationActions": list(actions)},
        },
    ]


def review_tiny(objects: list[dict[str, Any]]) -> Verdict:
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns", "labels": {NAME_LABEL: "ns"}}}
    obj = {**pod("x"), "metadata": {"name": "x", "namespace": "ns"}}
    return Admission(objects).review(Request("CREATE", obj, namespace))


@pytest.mark.parametrize(
    "expression",
    [
        "quantity('1Gi').isGreaterThan(quantity('1Mi'))",  # Kubernetes' quantity library
        "['a', 'b'].join(',') == 'a,b'",  # cel-go's strings extension
        "object.?spec.orValue(null) != null",  # optional types
        "authorizer.requestResource.check('get').allowed()",  # not provided
        "object.spec.nodeName == ''",  # a missing field is an error, as in Kubernetes
    ],
)
def test_an_expression_cel_python_cannot_evaluate_is_reported_never_passed(expression: str) -> None:
    result = review_tiny(tiny_policy([{"expression": expression, "message": "m"}]))
    assert result.not_evaluated and not result.admitted
    assert "not evaluated" in result.denials[0]  # failurePolicy Fail refuses the request, and says why


def test_a_validation_that_returns_no_bool_is_not_evaluated() -> None:
    result = review_tiny(tiny_policy([{"expression": "'yes'"}]))
    assert result.not_evaluated == ["p spec.validations[0].expression: returned StringType, not a bool"]


def test_variables_are_lazy_and_see_only_earlier_variables() -> None:
    broken = {"name": "broken", "expression": "object.spec.nodeName"}  # an error, but never referred to
    early = {"name": "early", "expression": "variables.late"}
    late = {"name": "late", "expression": "true"}
    fine = tiny_policy([{"expression": "true"}], [broken])
    assert review_tiny(fine).admitted and review_tiny(fine).evaluated == [("p", "spec.validations[0].expression")]
    forward = review_tiny(tiny_policy([{"expression": "variables.early"}], [early, late]))
    assert forward.not_evaluated and "undefined variable 'late'" in forward.not_evaluated[0]


def test_a_false_match_condition_skips_the_policy_even_beside_an_error() -> None:
    conditions = [{"name": "no", "expression": "false"}, {"name": "bad", "expression": "object.spec.nodeName == ''"}]
    assert review_tiny(tiny_policy([{"expression": "false"}], conditions=conditions)).admitted
    erring = review_tiny(tiny_policy([{"expression": "true"}], conditions=conditions[1:]))
    assert erring.not_evaluated and not erring.admitted


def test_messages_as_the_api_server_words_them() -> None:
    dynamic = review_tiny(tiny_policy([{"expression": "false", "message": "static", "messageExpression": "'dyn'"}]))
    assert dynamic.denials == ["ValidatingAdmissionPolicy 'p' with binding 'p' denied request: dyn"]
    for bad in ("object.spec.nodeName", "'two\\nlines'", "''"):
        validation = {"expression": "false", "message": "static", "messageExpression": bad}
        result = review_tiny(tiny_policy([validation]))
        assert result.denials == ["ValidatingAdmissionPolicy 'p' with binding 'p' denied request: static"]
        assert result.not_evaluated  # the fallback is the API server's; for the tests it is still a failure
    bare = review_tiny(tiny_policy([{"expression": "1 > 2"}]))
    assert bare.denials == ["ValidatingAdmissionPolicy 'p' with binding 'p' denied request: failed expression: 1 > 2"]


def test_warn_and_audit_do_not_deny() -> None:
    result = review_tiny(tiny_policy([{"expression": "false", "message": "careful"}], actions=("Warn", "Audit")))
    assert result.admitted and result.warnings == ["careful"]


def test_unknown_policy_fields_are_refused_rather_than_ignored() -> None:
    objects = tiny_policy([{"expression": "true"}])
    objects[0]["spec"]["paramKind"] = {"apiVersion": "v1", "kind": "ConfigMap"}
    with pytest.raises(NotImplementedError):
        Admission(objects)

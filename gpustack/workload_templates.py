"""User workload templates: Jinja2 rendered in a sandbox into exactly one Kubernetes object, then checked.

A template starts from what gpustack would generate (`manifest`) and the facts behind it (tolerations, affinity,
GPU resources), so teams can add what gpustack does not model without retyping what it derives. Templates are
user input: they render in the sandbox (template_sandbox.py), the result goes through the same hardened YAML loader
as blueprints, and every problem becomes a GS606 diagnostic naming the template and line, never an exception. The
text was read by the IO edge that read the blueprint (`Blueprint.templates`), so compile stays pure.

What a rendered object may be and do, one module per concern: its kind and where it carries pods
(template_kinds.py), its names and labels (object_names.py), the pod security baseline and device access
(pod_security.py), the tenant's pools, schedulers, priority and queue (template_tenancy.py). `check_rendered`
applies them all to one object; `check_env_sources` reads across the output (a ConfigMap one template writes and
another's `envFrom` reads).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from jinja2 import TemplateSyntaxError

from gpustack import object_names, pod_security, template_tenancy
from gpustack.codes import TEMPLATE_ERROR
from gpustack.context import Context
from gpustack.diagnostic import Diagnostic, DiagnosticError
from gpustack.dra import claim_problems
from gpustack.load import parse_document
from gpustack.model import Workload
from gpustack.names import MANAGED_BY, POOL_LABEL, TENANT_LABEL, WORKLOAD_LABEL
from gpustack.needs import Requests
from gpustack.plan import Object
from gpustack.template_kinds import pod_templates, refuse_kind
from gpustack.template_sandbox import (
    RenderLimitError,
    compiled_template,
    render_bounded,
    render_hint,
    template_line,
)

# compile/grants.py reads the tenant's priority classes here, beside the template rule that uses them.
allowed_priority_classes = template_tenancy.allowed_priority_classes


def workload_fields(ctx: Context, workload: Workload) -> dict[str, Any]:
    """The workload as the blueprint spells it, defaults applied: what a template author reads in the blueprint."""
    fields: dict[str, Any] = {
        "name": workload.name,
        "tenant": workload.tenant,
        "pool": workload.pool,
        "kind": str(workload.kind),
        "namespace": ctx.namespace_of(workload),
        "replicas": workload.replicas,
        "workers": workload.workers,
        "image": workload.image,
        "command": list(workload.command),
        "args": list(workload.args),
        # A Secret's or ConfigMap's key as the blueprint spells it: {"valueFrom": {"secretKeyRef": {...}}}.
        "env": {k: v if isinstance(v, str) else {"valueFrom": v.value_from()} for k, v in workload.env},
        "gpu": {
            "count": workload.gpu.count,
            "profile": workload.gpu.profile,
            "memory": workload.gpu.memory,
            "cores": workload.gpu.cores,
        },
        "resources": {"cpu": workload.cpu, "memory": workload.memory, "ephemeralStorage": workload.ephemeral_storage},
        "shmSize": workload.shm_size,
        "serve": None,
        "prefer": [{"weight": p.weight, "labels": dict(p.labels)} for p in workload.prefer],
        "nccl": None,
        "template": workload.template,
    }
    if workload.serve is not None:
        serve = workload.serve
        fields["serve"] = {"port": serve.port, "path": serve.path, "startupSeconds": serve.startup_seconds}
    if workload.nccl is not None:
        nccl = workload.nccl
        fields["nccl"] = {
            "socketIfname": nccl.socket_ifname,
            "ibDisable": nccl.ib_disable,
            "debug": nccl.debug,
            "p2pLevel": nccl.p2p_level,
        }
    return fields


def _pod_spec(manifest: Object) -> dict[str, Any]:
    spec = manifest.get("spec", {})
    if "tasks" in spec:  # Volcano Job
        return dict(spec["tasks"][0]["template"]["spec"])
    if "replicatedJobs" in spec:  # JobSet
        return dict(spec["replicatedJobs"][0]["template"]["spec"]["template"]["spec"])
    if "leaderWorkerTemplate" in spec:  # LeaderWorkerSet
        return dict(spec["leaderWorkerTemplate"]["leaderTemplate"]["spec"])
    return dict(spec.get("template", {}).get("spec", {}))


def template_variables(ctx: Context, workload: Workload, requests: Requests, manifest: Object) -> dict[str, Any]:
    """What a template sees. Copies, so nothing a template does can reach gpustack's own objects."""
    pod = _pod_spec(manifest)
    return copy.deepcopy(
        {
            "workload": workload_fields(ctx, workload),
            "tenant": workload.tenant,
            "pool": workload.pool,
            "namespace": ctx.namespace_of(workload),
            "resources": {name: amount for name, amount in requests.items},
            "resourceClaims": pod.get("resourceClaims", []),  # DRA pools: the pod's claim on its template
            "tolerations": pod.get("tolerations", []),
            "affinity": pod.get("affinity", {}),
            "labels": manifest["metadata"]["labels"],
            "manifest": manifest,
        }
    )


def render_workload_template(ctx: Context, workload: Workload, variables: dict[str, Any]) -> Object | Diagnostic:
    """The object a workload's template renders, with gpustack's namespace and labels forced; or a GS606 error."""
    assert workload.template is not None
    path = workload.template
    where = (*workload.path, "template")

    def fail(message: str, hint: str) -> Diagnostic:
        return ctx.error(TEMPLATE_ERROR, where, f"workload '{workload.name}': template {message}", hint)

    # Taken before rendering: the sandbox lets a template call methods such as dict.update on its variables.
    forced = {"namespace": variables["namespace"], "labels": copy.deepcopy(variables["labels"])}
    text = ctx.blueprint.template_text(path)
    if text is None:
        return fail(
            f"{path} was not read (missing or unreadable)",
            "the path is relative to the blueprint file; check that it exists and is readable",
        )
    try:
        rendered = render_bounded(ctx, lambda: compiled_template(ctx, path, text), variables)
    except RenderLimitError as error:
        return fail(f"{path}: {error}", "a template renders one object: no long loops, no huge strings")
    except Exception as error:  # template code can raise anything (1/0, bad filter args): report, never crash
        line = template_line(error, path)
        at = f"{path}:{line}" if line is not None else path
        detail = error.message if isinstance(error, TemplateSyntaxError) else str(error)
        return fail(f"{at}: {type(error).__name__}: {detail}", render_hint(error))
    try:
        document = parse_document(rendered, f"{path} (rendered)")
    except DiagnosticError as error:
        first = error.diagnostics[0] if error.diagnostics else None
        at_line = f" line {first.span.start.line}" if first is not None and first.span is not None else ""
        reason = first.message if first is not None else str(error)
        return fail(
            f"{path} rendered text that is not valid YAML (rendered output{at_line}): {reason}",
            "render one YAML document; `{{ manifest | toyaml }}` starts from the object gpustack generates",
        )
    return _shaped(document.data, workload, forced, fail)


def _shaped(
    data: Any, workload: Workload, forced: dict[str, Any], fail: Callable[[str, str], Diagnostic]
) -> Object | Diagnostic:
    path = workload.template
    hint = "render exactly one Kubernetes object: a mapping with apiVersion, kind and metadata.name"
    if not isinstance(data, dict):
        return fail(f"{path} rendered {type(data).__name__}, not one Kubernetes object", hint)
    metadata = data.get("metadata")
    missing = [
        field
        for field, ok in (
            ("apiVersion", isinstance(data.get("apiVersion"), str)),
            ("kind", isinstance(data.get("kind"), str)),
            ("metadata.name", isinstance(metadata, dict) and isinstance(metadata.get("name"), str)),
        )
        if not ok
    ]
    if missing:
        return fail(f"{path} rendered an object without {', '.join(missing)}", hint)
    assert isinstance(metadata, dict)
    labels = metadata.get("labels")
    if labels is not None and not isinstance(labels, dict):
        return fail(f"{path} rendered metadata.labels that is not a mapping", hint)
    # gpustack's namespace and labels win: the tenant's quota, policies and reports select on them.
    owned = {**MANAGED_BY, TENANT_LABEL: workload.tenant, WORKLOAD_LABEL: workload.name, POOL_LABEL: workload.pool}
    meta = {
        "name": metadata["name"],
        "namespace": forced["namespace"],
        "labels": {**(labels or {}), **forced["labels"], **owned},
        **{k: v for k, v in metadata.items() if k not in ("name", "namespace", "labels")},
    }
    head = {"apiVersion": data["apiVersion"], "kind": data["kind"], "metadata": meta}
    return {**head, **{k: v for k, v in data.items() if k not in head}}


# --- what a rendered object may not do -------------------------------------------------------------------------------
# A template may add what gpustack does not model, never undo what makes a GPU pod land safely and stay in its
# tenant: the same rules the generated objects follow (see workloads.py), checked on the object and on every pod
# spec it carries.


def _error(ctx: Context, workload: Workload, message: str, hint: str) -> Diagnostic:
    return ctx.error(
        TEMPLATE_ERROR,
        (*workload.path, "template"),
        f"workload '{workload.name}': template {workload.template} {message}",
        hint,
    )


def check_rendered(ctx: Context, workload: Workload, obj: Object) -> list[Diagnostic]:
    """GS606 errors for every rule a rendered object breaks: one per violation, none when it is safe."""
    refused = refuse_kind(obj)
    if refused is not None:
        return [_error(ctx, workload, *refused)]
    kind = obj.get("kind")
    found = [
        _error(ctx, workload, f"renders {kind} whose {message}", hint)
        for message, hint in [*object_names.name_problems(obj), *object_names.metadata_problems(obj)]
    ]
    found += [
        _error(ctx, workload, f"renders {kind} {message}", hint)
        for message, hint in [
            *pod_security.configmap_problems(obj),
            *template_tenancy.object_problems(ctx, workload, obj),
        ]
    ]
    for template in pod_templates(obj):
        spec = template.spec
        if not isinstance(spec, dict):
            continue
        problems = template_tenancy.pod_problems(ctx, workload, obj, template, spec)
        problems += claim_problems(ctx, workload, spec)
        problems += pod_security.pod_problems(template)
        found += [
            _error(ctx, workload, f"renders {kind} whose {template.spec_path}: {message}", hint)
            for message, hint in problems
        ]
    return found


Built = tuple[Workload, list[Object], list[Diagnostic]]


def check_env_sources(ctx: Context, built: list[Built]) -> list[Built]:
    """`built` with each workload whose rendered pods read device env through `envFrom` of a ConfigMap or Secret of
    the output (another template's, say) refused with GS606 (N11): alone, each object looked harmless."""
    stores: dict[tuple[str, str, str], tuple[Object, str]] = {}
    for workload, objects, _ in built:
        for obj in objects:
            metadata = obj.get("metadata", {})
            if obj.get("apiVersion") == "v1" and obj.get("kind") in ("ConfigMap", "Secret"):
                key = (str(obj["kind"]), str(metadata.get("namespace", "")), str(metadata.get("name")))
                stores.setdefault(key, (obj, workload.name))
    out: list[Built] = []
    for workload, objects, problems in built:
        if workload.template is None or not objects:
            out.append((workload, objects, problems))
            continue
        rendered = objects[-1]
        namespace = str(rendered["metadata"].get("namespace", ""))
        errors = []
        for source in pod_security.env_sources(rendered):
            target = stores.get((source.kind, namespace, source.name))
            if target is None:
                continue  # not in the output: admission cannot read it either (docs/admission.md)
            found = pod_security.env_from_problems(source, *target)
            errors += [_error(ctx, workload, f"renders {rendered['kind']} whose {m}", h) for m, h in found]
        out.append((workload, [], errors) if errors else (workload, objects, problems))
    return out

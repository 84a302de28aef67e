"""User workload templates: Jinja2 rendered in a sandbox into exactly one Kubernetes object.

A template starts from what gpustack would generate (`manifest`) and the facts behind it (tolerations, affinity,
GPU resources), so teams can add what gpustack does not model without retyping what it derives. Templates are
user input: they render in Jinja's SandboxedEnvironment with StrictUndefined (a typo is an error, not an empty
string), the result goes through the same hardened YAML loader as blueprints, and every problem becomes a GS606
diagnostic naming the template and line, never an exception. The text was read by the IO edge that read the
blueprint (`Blueprint.templates`), so compile stays pure.
"""

from __future__ import annotations

import copy
import os
import resource
import signal
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from jinja2 import FunctionLoader, StrictUndefined, Template, TemplateSyntaxError, Undefined, UndefinedError
from jinja2.sandbox import SandboxedEnvironment, SecurityError

from gpustack.codes import TEMPLATE_ERROR
from gpustack.context import Context
from gpustack.diagnostic import Diagnostic, DiagnosticError
from gpustack.dra import claim_problems
from gpustack.load import MAX_BYTES, parse_document
from gpustack.model import PRIORITY_VALUES, Scheduler, SharingStrategy, Workload
from gpustack.names import (
    DEVICE_ENV,
    DEVICE_MOUNT_ROOT,
    GPU_ONLY_ENV,
    MANAGED_BY,
    POOL_LABEL,
    TENANT_LABEL,
    VOLCANO_SCHEDULER,
    WORKLOAD_LABEL,
    priority_class_name,
)
from gpustack.needs import Requests
from gpustack.offers import RESOURCE_PREFIX
from gpustack.plan import Object
from gpustack.quantity import parse_quantity
from gpustack.taints import read_toleration, taint_text
from gpustack.yamlout import dump_yaml

VARIABLES = ("workload", "tenant", "pool", "namespace", "resources", "tolerations", "affinity", "labels", "manifest")


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
        "env": dict(workload.env),
        "gpu": {
            "count": workload.gpu.count,
            "profile": workload.gpu.profile,
            "memory": workload.gpu.memory,
            "cores": workload.gpu.cores,
        },
        "resources": {"cpu": workload.cpu, "memory": workload.memory},
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


def _toyaml(value: Any) -> str:
    if isinstance(value, Undefined):
        str(value)  # StrictUndefined raises here, naming the variable, instead of a YAML representer error
    # No trailing newline (nor the "..." that ends a bare scalar document), so `{{ x | toyaml | indent(4) }}` can
    # sit on its own line.
    return dump_yaml(value).removesuffix("\n...\n").rstrip("\n")


def _environment(path: str, text: str) -> SandboxedEnvironment:
    # The loader names the template after its path, so Jinja's errors and traceback frames carry it.
    env = SandboxedEnvironment(
        loader=FunctionLoader(lambda name: (text, path, lambda: True) if name == path else None),
        undefined=StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
    )
    env.filters["toyaml"] = _toyaml
    return env


def _compiled(ctx: Context, path: str, text: str) -> Template:
    """One compiled template per template text and Context, shared by the workloads that name it: each render gets
    its own variables, and a sandboxed template cannot change its environment. A sandbox per render cost a compile
    each time and left a cycle of Jinja objects per workload for the collector (gpustack/collector.py)."""
    compiled: dict[tuple[str, str], Template] = ctx.__dict__.setdefault("_compiled_templates", {})
    template = compiled.get((path, text))
    if template is None:
        template = compiled[path, text] = _environment(path, text).get_template(path)
    return template


def _template_line(error: BaseException, path: str) -> int | None:
    if isinstance(error, TemplateSyntaxError):
        return error.lineno
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename in (path, "<template>")]
    return frames[-1].lineno if frames else None


def _render_hint(error: BaseException) -> str:
    if isinstance(error, SecurityError):
        return (
            "templates run in a sandbox: attributes starting with '_' and unsafe calls are refused; "
            "use the variables gpustack passes in"
        )
    if isinstance(error, UndefinedError):
        return f"the variables are {', '.join(VARIABLES)}; undefined names are errors, not empty strings"
    if isinstance(error, TemplateSyntaxError):
        return "fix the Jinja2 syntax at that line"
    return "fix the expression at that line"


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
        rendered = render_bounded(ctx, lambda: _compiled(ctx, path, text), variables)
    except RenderLimitError as error:
        return fail(f"{path}: {error}", "a template renders one object: no long loops, no huge strings")
    except Exception as error:  # template code can raise anything (1/0, bad filter args): report, never crash
        line = _template_line(error, path)
        at = f"{path}:{line}" if line is not None else path
        detail = error.message if isinstance(error, TemplateSyntaxError) else str(error)
        return fail(f"{at}: {type(error).__name__}: {detail}", _render_hint(error))
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
# A template may add what gpustack does not model, never undo what makes a GPU pod land safely: the same rules the
# generated objects follow (see workloads.py), checked on every pod spec the rendered object carries.

CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")
POD_TEMPLATE_KINDS = ("Deployment", "StatefulSet", "Job", "DaemonSet", "ReplicaSet", "ReplicationController")
CORE_RESOURCES = ("cpu", "memory", "ephemeral-storage")


def rendered_pod_specs(obj: Object) -> list[tuple[str, Any]]:
    """(field path, pod spec) for every pod spec in a rendered object; unknown kinds carry none."""
    kind, spec = obj.get("kind"), obj.get("spec")
    if not isinstance(spec, dict):
        return []
    if kind == "Pod":
        return [("spec", spec)]
    if kind == "CronJob":
        job = spec.get("jobTemplate")
        job_spec = job.get("spec") if isinstance(job, dict) else None
        template = job_spec.get("template") if isinstance(job_spec, dict) else None
        if isinstance(template, dict) and "spec" in template:
            return [("spec.jobTemplate.spec.template.spec", template["spec"])]
        return []
    if "tasks" in spec and str(obj.get("apiVersion", "")).startswith("batch.volcano.sh/"):
        tasks = spec["tasks"] if isinstance(spec["tasks"], list) else []
        found = []
        for index, task in enumerate(tasks):
            template = task.get("template") if isinstance(task, dict) else None
            if isinstance(template, dict) and "spec" in template:
                found.append((f"spec.tasks[{index}].template.spec", template["spec"]))
        return found
    if kind == "JobSet" and str(obj.get("apiVersion", "")).startswith("jobset.x-k8s.io/"):
        jobs = raw_jobs if isinstance(raw_jobs := spec.get("replicatedJobs"), list) else []
        found = []
        for index, job in enumerate(jobs):
            job_spec = _at(job, "template", "spec")
            if isinstance(_at(job_spec, "template"), dict) and "spec" in job_spec["template"]:
                found.append(
                    (f"spec.replicatedJobs[{index}].template.spec.template.spec", job_spec["template"]["spec"])
                )
        return found
    if kind == "LeaderWorkerSet" and str(obj.get("apiVersion", "")).startswith("leaderworkerset.x-k8s.io/"):
        group = _at(spec, "leaderWorkerTemplate")
        return [
            (f"spec.leaderWorkerTemplate.{role}.spec", group[role]["spec"])
            for role in ("leaderTemplate", "workerTemplate")
            if isinstance(_at(group, role), dict) and "spec" in group[role]
        ]
    template = spec.get("template")
    if kind in POD_TEMPLATE_KINDS and isinstance(template, dict) and "spec" in template:
        return [("spec.template.spec", template["spec"])]
    return []


def _at(value: Any, *keys: str) -> Any:
    """value[k1][k2]..., or None where a level is missing or not a mapping (a template can render anything)."""
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def _quantity_equal(left: Any, right: Any) -> bool:
    try:
        return bool(parse_quantity(str(left)) == parse_quantity(str(right)))
    except (ValueError, ArithmeticError):  # not a quantity: the API server rejects it anyway; compare as written
        return str(left) == str(right)


def _is_extended(resource: str) -> bool:
    domain = resource.split("/", 1)[0] if "/" in resource else ""
    return bool(domain) and domain != "kubernetes.io" and not domain.endswith(".kubernetes.io")


def _containers(spec: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for field_name in CONTAINER_LISTS:
        items = spec.get(field_name)
        for index, container in enumerate(items if isinstance(items, list) else []):
            if isinstance(container, dict):
                name = container.get("name")
                label = f"{field_name}[{index}]" + (f" ('{name}')" if isinstance(name, str) else "")
                found.append((label, container))
    return found


def _toleration_problems(ctx: Context, pool_name: str, spec: dict[str, Any]) -> list[tuple[str, str]]:
    pool = ctx.pools.get(pool_name)
    if pool is None:
        return []
    raw = spec.get("tolerations")
    given = [t for t in raw if isinstance(t, dict)] if isinstance(raw, list) else []
    keyed = [t for t in map(read_toleration, given) if t is not None and t.key]  # wildcards are refused below
    problems = []
    hint_exact = "keep `tolerations` as gpustack derives them: `tolerations: {{ tolerations | toyaml }}`"
    for index, toleration in enumerate(given):
        if not toleration.get("key"):
            problems.append(
                (
                    f"tolerations[{index}] has no key: a wildcard toleration tolerates every pool's taints",
                    hint_exact,
                )
            )
    own = {(t.key, t.value, t.effect) for t in pool.taints}
    for taint in pool.taints:
        if not any(t.tolerates(taint) for t in keyed):
            problems.append(
                (
                    f"tolerations do not tolerate taint {taint_text(taint)} of pool '{pool.name}': "
                    "its pods would stay Pending",
                    hint_exact,
                )
            )
    for other in ctx.blueprint.pools:
        if other.name == pool.name:
            continue
        for taint in other.taints:
            if (taint.key, taint.value, taint.effect) in own:
                continue
            if any(t.tolerates(taint) for t in keyed):
                problems.append(
                    (
                        f"tolerations tolerate taint {taint_text(taint)} of pool '{other.name}': "
                        f"a workload of pool '{pool.name}' may only tolerate its own pool's taints",
                        hint_exact,
                    )
                )
    return problems


def _container_problems(ctx: Context, pool_name: str, label: str, container: dict[str, Any]) -> list[tuple[str, str]]:
    problems = []
    advertised = {offer.resource for offer in ctx.offers.get(pool_name, ())}
    resources = container.get("resources")
    resources = resources if isinstance(resources, dict) else {}
    requests = raw_requests if isinstance(raw_requests := resources.get("requests"), dict) else {}
    limits = raw_limits if isinstance(raw_limits := resources.get("limits"), dict) else {}
    for name in sorted({str(key) for key in (*requests, *limits)}):
        if name.startswith(RESOURCE_PREFIX) and name not in advertised:
            offered = ", ".join(sorted(advertised)) or "none"
            problems.append(
                (
                    f"{label} asks for {name}, which pool '{pool_name}' does not advertise (it offers {offered})",
                    "use the resources gpustack resolved: `{{ resources }}`, or the requests in `manifest`",
                )
            )
        if _is_extended(name) and (
            name not in requests or name not in limits or not _quantity_equal(requests[name], limits[name])
        ):
            problems.append(
                (
                    f"{label} resources: requests and limits of extended resource {name} differ "
                    f"(requests {requests.get(name)!r}, limits {limits.get(name)!r})",
                    "Kubernetes requires requests == limits for extended resources: set both to the same amount",
                )
            )
    env = container.get("env")
    for item in env if isinstance(env, list) else []:
        if isinstance(item, dict) and item.get("name") == "CUDA_VISIBLE_DEVICES":
            problems.append(
                (
                    f"{label} env sets CUDA_VISIBLE_DEVICES, which fights the device plugin's GPU assignment",
                    "drop CUDA_VISIBLE_DEVICES: the device plugin exposes exactly the allocated GPUs",
                )
            )
    security = container.get("securityContext")
    security = security if isinstance(security, dict) else {}
    hardening = "keep gpustack's securityContext (allowPrivilegeEscalation: false, capabilities: {drop: [ALL]})"
    if security.get("privileged") is True:
        problems.append((f"{label} securityContext.privileged is true: a privileged pod sees every GPU", hardening))
    if security.get("allowPrivilegeEscalation") is True:
        problems.append((f"{label} securityContext.allowPrivilegeEscalation is true", hardening))
    capabilities = security.get("capabilities")
    added = capabilities.get("add") if isinstance(capabilities, dict) else None
    if added:
        problems.append((f"{label} securityContext.capabilities.add adds {added}", hardening))
    return problems


def check_rendered(ctx: Context, workload: Workload, obj: Object) -> list[Diagnostic]:
    """GS606 errors for every rule a rendered object breaks: one per violation, none when it is safe."""
    where = (*workload.path, "template")
    found: list[Diagnostic] = []
    refused = refuse_kind(obj)
    if refused is not None:
        message, hint = refused
        return [
            ctx.error(
                TEMPLATE_ERROR, where, f"workload '{workload.name}': template {workload.template} {message}", hint
            )
        ]
    for message, hint in _object_problems(obj):
        found.append(
            ctx.error(
                TEMPLATE_ERROR,
                where,
                f"workload '{workload.name}': template {workload.template} renders {obj.get('kind')} {message}",
                hint,
            )
        )
    for field_path, spec in rendered_pod_specs(obj):
        if not isinstance(spec, dict):
            continue
        problems = _toleration_problems(ctx, workload.pool, spec)
        problems.extend(claim_problems(ctx, workload, spec))
        problems.extend(_pod_problems(ctx, workload, spec))
        gpu_pod = _requests_gpu(spec)
        for label, container in _containers(spec):
            problems.extend(_container_problems(ctx, workload.pool, label, container))
            problems.extend(_runtime_problems(label, container, gpu_pod=gpu_pod))
        for message, hint in problems:
            found.append(
                ctx.error(
                    TEMPLATE_ERROR,
                    where,
                    f"workload '{workload.name}': template {workload.template} renders {obj.get('kind')} "
                    f"whose {field_path}: {message}",
                    hint,
                )
            )
    return found


# --- which objects a template may render (C1) and what their pod specs may not do (M4, H4, M3) ------------------------
# A template is written by a tenant, and whoever applies the output is usually cluster-admin: anything a template
# may emit, the tenant gets. So it renders one namespaced object of a kind that runs the tenant's own pods or serves
# them, never RBAC, admission, quota, cluster-scoped kinds or a List that carries objects the checks cannot see.
# gpustack forces the namespace (its tenant's) and labels; everything else about the object is checked below.

ALLOWED_KINDS: tuple[tuple[str, str], ...] = (
    ("apps/v1", "Deployment"),
    ("apps/v1", "StatefulSet"),
    ("batch/v1", "Job"),
    ("batch/v1", "CronJob"),
    ("batch.volcano.sh/v1alpha1", "Job"),
    ("jobset.x-k8s.io/v1alpha2", "JobSet"),
    ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"),
    ("v1", "Pod"),
    ("v1", "Service"),
    ("v1", "ConfigMap"),
    ("v1", "PersistentVolumeClaim"),
)
DEFAULT_SCHEDULER = "default-scheduler"
HOSTNAME_LABEL = "kubernetes.io/hostname"


def describe_allowed_kinds() -> str:
    return ", ".join(f"{kind} ({api})" for api, kind in ALLOWED_KINDS)


def refuse_kind(obj: Object) -> tuple[str, str] | None:
    """(message, hint) when a template may not render this kind of object at all; None when it may."""
    api, kind = str(obj.get("apiVersion")), str(obj.get("kind"))
    if (api, kind) in ALLOWED_KINDS:
        return None
    hint = f"a template renders exactly one object of these kinds: {describe_allowed_kinds()}"
    if kind.endswith("List"):
        return (
            f"renders a {kind}: a list carries objects into any namespace, past every check; templates may not "
            "render lists",
            hint,
        )
    return (f"renders {kind} ({api}), which a tenant's template may not emit", hint)


def _object_problems(obj: Object) -> list[tuple[str, str]]:
    """Rules on the object itself, outside its pod specs."""
    spec = obj.get("spec")
    spec = spec if isinstance(spec, dict) else {}
    problems = []
    if obj.get("kind") == "Service" and spec.get("externalIPs"):
        problems.append(
            (
                "with spec.externalIPs: it intercepts traffic to those addresses for the whole cluster (CVE-2020-8554)",
                "drop externalIPs; expose the workload with a LoadBalancer or an Ingress the cluster operator owns",
            )
        )
    if str(obj.get("apiVersion", "")).startswith("batch.volcano.sh/"):
        name = spec.get("schedulerName")
        if name not in (None, VOLCANO_SCHEDULER):
            problems.append((f"with spec.schedulerName '{name}'", "a Volcano Job runs under the volcano scheduler"))
    return problems


def _own_labels(ctx: Context, pool_name: str) -> tuple[set[str], set[str]]:
    """(every node label key pools are told apart by, 'key=value' of this pool's nodes)."""
    keys: set[str] = set()
    own: set[str] = set()
    for pool in ctx.blueprint.pools:
        pairs = [(POOL_LABEL, pool.name), *pool.labels, *((HOSTNAME_LABEL, node) for node in pool.nodes)]
        keys.update(key for key, _ in pairs)
        if pool.name == pool_name:
            own.update(f"{key}={value}" for key, value in pairs)
    return keys, own


def _selected_pairs(spec: dict[str, Any]) -> list[tuple[str, str, list[Any]]]:
    """(where, key, values) for every node a pod spec's nodeSelector or required node affinity names."""
    found: list[tuple[str, str, list[Any]]] = []
    selector = spec.get("nodeSelector")
    for key, value in selector.items() if isinstance(selector, dict) else []:
        found.append(("nodeSelector", str(key), [value]))
    affinity = spec.get("affinity")
    node = affinity.get("nodeAffinity") if isinstance(affinity, dict) else None
    required = node.get("requiredDuringSchedulingIgnoredDuringExecution") if isinstance(node, dict) else None
    terms = required.get("nodeSelectorTerms") if isinstance(required, dict) else None
    for term in terms if isinstance(terms, list) else []:
        term = term if isinstance(term, dict) else {}
        for field_name, rename in (("matchExpressions", None), ("matchFields", HOSTNAME_LABEL)):
            expressions = term.get(field_name)
            for expression in expressions if isinstance(expressions, list) else []:
                if not isinstance(expression, dict):
                    continue
                key = (
                    rename if rename is not None and expression.get("key") == "metadata.name" else expression.get("key")
                )
                values = expression.get("values")
                values = values if isinstance(values, list) else []
                found.append((f"required node affinity ({expression.get('operator')})", str(key), values))
    return found


def _allowed_schedulers(ctx: Context, workload: Workload) -> set[Any]:
    names: set[Any] = {None, "", DEFAULT_SCHEDULER}
    tenant = ctx.tenants.get(workload.tenant)
    if tenant is not None and tenant.scheduler is Scheduler.VOLCANO:
        names.add(VOLCANO_SCHEDULER)
    pool = ctx.pools.get(workload.pool)
    if pool is not None and pool.sharing.strategy is SharingStrategy.HAMI:
        names.add(ctx.blueprint.hami.scheduler_name)
    return names


def allowed_priority_classes(ctx: Context, tenant_name: str) -> list[str]:
    """gpustack's classes at or below the tenant's own level: never another tenant's higher one, never system-*."""
    tenant = ctx.tenants.get(tenant_name)
    if tenant is None:
        return []
    ceiling = PRIORITY_VALUES[tenant.priority]
    return [priority_class_name(level) for level, value in PRIORITY_VALUES.items() if value <= ceiling]


def _pod_problems(ctx: Context, workload: Workload, spec: dict[str, Any]) -> list[tuple[str, str]]:
    """The pod-level rules the admission policies apply, checked before anything reaches a cluster."""
    problems = []
    place = "let gpustack place the pod: keep `affinity: {{ affinity | toyaml }}` and drop node pins"
    if spec.get("nodeName"):
        problems.append((f"nodeName pins the pod to node '{spec['nodeName']}', past the scheduler and taints", place))
    keys, own = _own_labels(ctx, workload.pool)
    for where, key, values in _selected_pairs(spec):
        if key not in keys:
            continue
        foreign = [str(v) for v in values if f"{key}={v}" not in own]
        if foreign or (not values and where.startswith("required")):
            problems.append(
                (
                    f"{where} selects {key} {', '.join(foreign) or '(any value)'}, which is not a label of pool "
                    f"'{workload.pool}'",
                    place,
                )
            )
    scheduler = spec.get("schedulerName")
    allowed = _allowed_schedulers(ctx, workload)
    if scheduler not in allowed:
        names = ", ".join(sorted(str(n) for n in allowed if n))
        problems.append((f"schedulerName '{scheduler}' is not one of this tenant's schedulers ({names})", place))
    priority = spec.get("priorityClassName")
    classes = allowed_priority_classes(ctx, workload.tenant)
    if priority not in (None, "") and priority not in classes:
        problems.append(
            (
                f"priorityClassName '{priority}' is not one of tenant '{workload.tenant}''s classes "
                f"({', '.join(classes)}): it could preempt other tenants' pods",
                "drop priorityClassName, or keep the one gpustack sets from the tenant's priority",
            )
        )
    host = "a pod that shares the node's namespaces or files can see and reach every GPU process on it"
    for field_name in ("hostPID", "hostIPC", "hostNetwork"):
        if spec.get(field_name) is True:
            problems.append((f"{field_name} is true: {host}", f"drop {field_name}"))
    volumes = spec.get("volumes")
    for index, volume in enumerate(volumes if isinstance(volumes, list) else []):
        if isinstance(volume, dict) and "hostPath" in volume:
            problems.append((f"volumes[{index}] is a hostPath volume: {host}", "use an emptyDir or a PVC"))
    return problems


def _requests_gpu(spec: dict[str, Any]) -> bool:
    for _label, container in _containers(spec):
        resources = container.get("resources")
        resources = resources if isinstance(resources, dict) else {}
        if isinstance(resources.get("claims"), list) and resources["claims"]:
            return True  # a DRA pool's container gets its GPUs through the pod's claim, not an extended resource
        for side in ("requests", "limits"):
            amounts = resources.get(side)
            if isinstance(amounts, dict) and any(str(name).startswith(RESOURCE_PREFIX) for name in amounts):
                return True
    return False


def _runtime_problems(label: str, container: dict[str, Any], *, gpu_pod: bool) -> list[tuple[str, str]]:
    """Env and mounts the NVIDIA container toolkit reads as a device request (H4)."""
    problems = []
    hint = "drop it: the device plugin hands the container exactly the GPUs it requests"
    env = container.get("env")
    for item in env if isinstance(env, list) else []:
        name = item.get("name") if isinstance(item, dict) else None
        if name in DEVICE_ENV:
            problems.append((f"{label} env sets {name}: it can give the container GPUs it never requested", hint))
        elif name in GPU_ONLY_ENV and not gpu_pod:
            problems.append((f"{label} env sets {name} in a pod that requests no GPU", hint))
    mounts = container.get("volumeMounts")
    for item in mounts if isinstance(mounts, list) else []:
        path = str(item.get("mountPath", "")) if isinstance(item, dict) else ""
        if path.rstrip("/") == DEVICE_MOUNT_ROOT or path.startswith(DEVICE_MOUNT_ROOT + "/"):
            problems.append((f"{label} mounts {path}: the toolkit reads mounts there as a device request", hint))
    return problems


# --- how long and how large a render may get (M1) --------------------------------------------------------------------
# The sandbox stops attribute escapes, not `{% for %}` inside `{% for %}` or `'a' * 10**9`: validate renders
# templates in pre-commit hooks and CI, so a render is bounded in time (a timer), in memory (the address-space limit,
# raised only by the headroom a render may use) and in output (the blueprint's own size cap). Each is a GS606.

RENDER_SECONDS = 2.0  # one template; any real template renders in milliseconds
RENDER_SECONDS_PER_BLUEPRINT = 4.0  # every template of one blueprint together
RENDER_MEMORY = 512 * 1024 * 1024  # address space a render may add


class RenderLimitError(Exception):
    """A render ran past a bound: the message says which."""


def _address_space() -> int | None:
    try:
        with open("/proc/self/statm", encoding="ascii") as handle:
            return int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _spent(ctx: Context) -> list[float]:
    # Seconds spent rendering for this blueprint: kept beside the Context's cached facts, so the budget is per compile.
    return ctx.__dict__.setdefault("_template_render_seconds", [0.0])


def render_bounded(ctx: Context, load: Callable[[], Template], variables: dict[str, Any]) -> str:
    """Compile (Jinja folds constants then: `'a' * 10**9` runs here) and render within the bounds."""
    spent = _spent(ctx)
    seconds = min(RENDER_SECONDS, RENDER_SECONDS_PER_BLUEPRINT - spent[0])
    if seconds <= 0:
        raise RenderLimitError(
            f"not rendered: this blueprint's templates already took {RENDER_SECONDS_PER_BLUEPRINT:g} s together"
        )
    timed = threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")
    used = _address_space()
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    bounded = used is not None and (soft == resource.RLIM_INFINITY or soft > used + RENDER_MEMORY)

    def expire(_signum: int, _frame: object) -> None:
        raise RenderLimitError(f"rendering took longer than {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire) if timed else None
    start = time.monotonic()
    try:
        if bounded:
            assert used is not None
            resource.setrlimit(resource.RLIMIT_AS, (used + RENDER_MEMORY, hard))
        if timed:
            signal.setitimer(signal.ITIMER_REAL, seconds)
        chunks: list[str] = []
        size = 0
        for chunk in load().generate(**variables):
            size += len(chunk)
            if size > MAX_BYTES:
                raise RenderLimitError(f"rendered more than {MAX_BYTES // (1024 * 1024)} MiB")
            chunks.append(chunk)
        return "".join(chunks)
    except MemoryError as error:
        raise RenderLimitError(f"rendering needed more than {RENDER_MEMORY // (1024 * 1024)} MiB") from error
    finally:
        if timed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous if previous is not None else signal.SIG_DFL)
        if bounded:
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        spent[0] += time.monotonic() - start

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
import traceback
from collections.abc import Callable
from typing import Any

from jinja2 import FunctionLoader, StrictUndefined, TemplateSyntaxError, Undefined, UndefinedError
from jinja2.sandbox import SandboxedEnvironment, SecurityError

from gpustack.context import Context
from gpustack.diagnostic import Diagnostic, DiagnosticError
from gpustack.dra import claim_problems
from gpustack.load import parse_document
from gpustack.model import Workload
from gpustack.names import MANAGED_BY, POOL_LABEL, TENANT_LABEL, WORKLOAD_LABEL
from gpustack.needs import Requests
from gpustack.offers import RESOURCE_PREFIX
from gpustack.plan import Object
from gpustack.quantity import parse_quantity
from gpustack.yamlout import dump_yaml

TEMPLATE_ERROR = "GS606"
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
        rendered = _environment(path, text).get_template(path).render(**variables)
    except Exception as error:  # template code can raise anything (1/0, bad filter args): report, never crash
        line = _template_line(error, path)
        at = f"{path}:{line}" if line is not None else path
        detail = error.message if isinstance(error, TemplateSyntaxError) else str(error)
        return fail(f"{at}: {type(error).__name__}: {detail}", _render_hint(error))
    try:
        document = parse_document(rendered, f"{path} (rendered)")
    except DiagnosticError as error:
        first = error.diagnostics[0] if error.diagnostics else None
        line = f" line {first.span.start.line}" if first is not None and first.span is not None else ""
        reason = first.message if first is not None else str(error)
        return fail(
            f"{path} rendered text that is not valid YAML (rendered output{line}): {reason}",
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
    template = spec.get("template")
    if kind in POD_TEMPLATE_KINDS and isinstance(template, dict) and "spec" in template:
        return [("spec.template.spec", template["spec"])]
    return []


def _tolerates(toleration: dict[str, Any], taint: Any) -> bool:
    """Kubernetes' ToleratesTaint, for a toleration that names a key."""
    if toleration.get("key") != taint.key:
        return False
    effect = toleration.get("effect")
    if effect not in (None, "") and effect != taint.effect:
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    return operator == "Equal" and (toleration.get("value") or "") == (taint.value or "")


def _taint_text(taint: Any) -> str:
    value = f"={taint.value}" if taint.value is not None else ""
    return f"{taint.key}{value}:{taint.effect}"


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
        if not any(_tolerates(t, taint) for t in given):
            problems.append(
                (
                    f"tolerations do not tolerate taint {_taint_text(taint)} of pool '{pool.name}': "
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
            if any(t.get("key") and _tolerates(t, taint) for t in given):
                problems.append(
                    (
                        f"tolerations tolerate taint {_taint_text(taint)} of pool '{other.name}': "
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
    requests = resources.get("requests") if isinstance(resources.get("requests"), dict) else {}
    limits = resources.get("limits") if isinstance(resources.get("limits"), dict) else {}
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
    for field_path, spec in rendered_pod_specs(obj):
        if not isinstance(spec, dict):
            continue
        problems = _toleration_problems(ctx, workload.pool, spec)
        problems.extend(claim_problems(ctx, workload, spec))
        for label, container in _containers(spec):
            problems.extend(_container_problems(ctx, workload.pool, label, container))
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

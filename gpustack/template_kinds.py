"""Which objects a workload template may render (C1), and where each kind carries metadata, pod templates and
containers, so every rule reads every place a pod can be described.

A template is written by a tenant, and whoever applies the output is usually cluster-admin: anything a template may
emit, the tenant gets. So it renders one namespaced object of a kind that runs the tenant's own pods or serves them,
never RBAC, admission, quota, cluster-scoped kinds or a List that carries objects the checks cannot see. Everything
here reads a rendered object as data of any shape: a template can render anything, so no level is assumed.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from gpustack.plan import Object

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
VOLCANO_JOB = ("batch.volcano.sh/v1alpha1", "Job")
CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")
POD_TEMPLATE_KINDS = ("Deployment", "StatefulSet", "Job", "DaemonSet", "ReplicaSet", "ReplicationController")


class PodTemplate(NamedTuple):
    """One place a rendered object describes pods: `path` is the template's field path ('' for a Pod itself)."""

    path: str
    metadata: Any
    spec: Any

    @property
    def spec_path(self) -> str:
        return f"{self.path}.spec" if self.path else "spec"

    @property
    def metadata_path(self) -> str:
        return f"{self.path}.metadata" if self.path else "metadata"


def describe_allowed_kinds() -> str:
    return ", ".join(f"{kind} ({api})" for api, kind in ALLOWED_KINDS)


def kind_of(obj: Object) -> tuple[str, str]:
    return str(obj.get("apiVersion")), str(obj.get("kind"))


def refuse_kind(obj: Object) -> tuple[str, str] | None:
    """(message, hint) when a template may not render this kind of object at all; None when it may."""
    api, kind = kind_of(obj)
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


def at(value: Any, *keys: str) -> Any:
    """value[k1][k2]..., or None where a level is missing or not a mapping (a template can render anything)."""
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _template(path: str, template: Any) -> list[PodTemplate]:
    if isinstance(template, dict) and "spec" in template:
        return [PodTemplate(path, template.get("metadata"), template["spec"])]
    return []


def pod_templates(obj: Object) -> list[PodTemplate]:
    """Every pod template a rendered object carries (a Pod is its own); unknown kinds carry none."""
    api, kind = kind_of(obj)
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return []
    if kind == "Pod":
        return [PodTemplate("", obj.get("metadata"), spec)]
    if kind == "CronJob":
        return _template("spec.jobTemplate.spec.template", at(spec, "jobTemplate", "spec", "template"))
    if kind == "Job" and api.startswith("batch.volcano.sh/"):
        return [
            found
            for index, task in enumerate(listed(spec.get("tasks")))
            for found in _template(f"spec.tasks[{index}].template", at(task, "template"))
        ]
    if kind == "JobSet" and api.startswith("jobset.x-k8s.io/"):
        return [
            found
            for index, job in enumerate(listed(spec.get("replicatedJobs")))
            for found in _template(
                f"spec.replicatedJobs[{index}].template.spec.template", at(job, "template", "spec", "template")
            )
        ]
    if kind == "LeaderWorkerSet" and api.startswith("leaderworkerset.x-k8s.io/"):
        group = at(spec, "leaderWorkerTemplate")
        return [
            found
            for role in ("leaderTemplate", "workerTemplate")
            for found in _template(f"spec.leaderWorkerTemplate.{role}", at(group, role))
        ]
    if kind in POD_TEMPLATE_KINDS:
        return _template("spec.template", spec.get("template"))
    return []


def rendered_pod_specs(obj: Object) -> list[tuple[str, Any]]:
    """(field path, pod spec) for every pod spec in a rendered object; unknown kinds carry none."""
    return [(template.spec_path, template.spec) for template in pod_templates(obj)]


def job_templates(obj: Object) -> list[tuple[str, Any]]:
    """(field path, metadata) of the Job templates between an object and its pods: a CronJob's and a JobSet's."""
    api, kind = kind_of(obj)
    spec = obj.get("spec")
    if kind == "CronJob":
        return [("spec.jobTemplate.metadata", at(spec, "jobTemplate", "metadata"))]
    if kind == "JobSet" and api.startswith("jobset.x-k8s.io/") and isinstance(spec, dict):
        return [
            (f"spec.replicatedJobs[{index}].template.metadata", at(job, "template", "metadata"))
            for index, job in enumerate(listed(spec.get("replicatedJobs")))
        ]
    return []


def every_metadata(obj: Object) -> list[tuple[str, Any]]:
    """(field path, metadata) of the object and of every template inside it, outermost first: labels and
    annotations on any of them reach the cluster (the controllers copy them down)."""
    found: list[tuple[str, Any]] = [("metadata", obj.get("metadata"))]
    found += job_templates(obj)
    found += [(t.metadata_path, t.metadata) for t in pod_templates(obj) if t.path]
    return found


def containers(spec: Any) -> list[tuple[str, dict[str, Any]]]:
    """(label for messages, container) for every container of a pod spec: init, regular and ephemeral."""
    found = []
    for field_name in CONTAINER_LISTS:
        for index, container in enumerate(listed(at(spec, field_name))):
            if isinstance(container, dict):
                name = container.get("name")
                label = f"{field_name}[{index}]" + (f" ('{name}')" if isinstance(name, str) else "")
                found.append((label, container))
    return found

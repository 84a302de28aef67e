"""The README written beside compiled manifests: what each file is for and how to apply it."""

from __future__ import annotations

import shlex
from typing import Any

import jinja2

from gpustack.compile.gpu_operator import CHART_NAME as OPERATOR_CHART
from gpustack.names import POOL_LABEL
from gpustack.plan import Manifest, Plan
from gpustack.templating import package_template

FAMILY_DESCRIPTIONS: dict[str, str] = {
    "cluster": "cluster-wide objects",
    "tenants": "tenant namespaces, GPU quotas and limit ranges",
    "device-plugin": "NVIDIA device plugin configuration",
    "mig": "MIG layouts for the GPU Operator's MIG manager",
    "gpu-operator": "the GPU Operator's namespace",
    "nodes": "node labels, for review and Pulumi (not in the kustomization: use nodes/label-nodes.sh)",
    "node-taints": "node taints as patches that own each node's whole taint list (not in the kustomization; "
    "use nodes/label-nodes.sh)",
    "workloads": "ready-to-use workload templates",
    "admission": "admission policies that keep tenants on their pools",
    "kueue": "Kueue queues and flavors",
    "volcano": "Volcano queues",
    "kai": "KAI Scheduler queues",
    "dra": "DeviceClasses of the DRA pools, one per GPU model or MIG profile",
    "dra-admission": "admission policies that keep tenants' DRA claims on their own pools' DeviceClasses",
}


def _template() -> jinja2.Template:
    return package_template("output-readme.md.j2")


def _describe(manifests: list[Manifest]) -> str:
    family = FAMILY_DESCRIPTIONS.get(manifests[0].family, manifests[0].family)
    kinds: dict[str, int] = {}
    for manifest in manifests:
        kinds[manifest.kind] = kinds.get(manifest.kind, 0) + 1
    counted = ", ".join(f"{count} {kind}" for kind, count in kinds.items())
    return f"{family}: {counted}"


# Built-in kinds applied before the charts, as Pulumi's stages 0 and 1 do: namespaces (the GPU Operator's carries
# its Pod Security label before its privileged pods start), priority classes, quotas and limit ranges (a pod
# admitted before its namespace's quota escapes it), admission policies.
BEFORE_CHARTS = frozenset(
    {
        "Namespace",
        "PriorityClass",
        "ConfigMap",
        "ResourceQuota",
        "LimitRange",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "DeviceClass",  # DRA: a built-in, cluster-wide kind that claims name; Pulumi's cluster stage holds it too
    }
)


def files_before_charts(grouped: dict[str, list[Manifest]], applied: set[str]) -> list[str]:
    return [f for f, ms in grouped.items() if f in applied and all(m.kind in BEFORE_CHARTS for m in ms)]


def render_readme(plan: Plan, grouped: dict[str, list[Manifest]], applied: set[str] | None = None) -> str:
    rows: list[dict[str, Any]] = [{"file": file, "description": _describe(ms)} for file, ms in grouped.items()]
    rows += [
        {"file": r.values_file, "description": f"Helm values for `{r.chart}` {r.version} (not applied by kustomize)"}
        for r in plan.releases
    ]
    rows += [{"file": a.path, "description": a.description} for a in plan.artifacts]
    rows.append({"file": "kustomization.yaml", "description": "lists every manifest, for `kubectl apply -k` or GitOps"})
    releases = [
        # Every word of the shell block quoted: people copy and paste it, and values come from the blueprint.
        {
            "name": shlex.quote(r.name),
            "chart": r.chart,
            "repository": shlex.quote(r.repository),
            "oci": r.oci,
            "chart_ref": shlex.quote(r.chart_ref if r.oci else f"{r.name}/{r.chart}"),
            "version": shlex.quote(r.version),
            "namespace": shlex.quote(r.namespace),
            "values_file": shlex.quote(r.values_file),
            "flags": " --disable-openapi-validation" if r.skip_openapi_validation else "",
            "repo_alias": shlex.quote(r.name),
        }
        for r in plan.releases
    ]
    operator = next((r for r in plan.releases if r.chart == OPERATOR_CHART), None)
    # The operator installs the driver and toolkit unless the blueprint says the nodes already have them.
    installs_runtime = operator is not None and all(
        operator.values.get(part, {}).get("enabled", True) for part in ("driver", "toolkit")
    )
    return _template().render(
        blueprint=plan.blueprint,
        installs_runtime=installs_runtime,
        has_operator=operator is not None,
        releases=releases,
        rows=sorted(rows, key=lambda row: row["file"]),
        has_nodes_script=any(a.path == "nodes/label-nodes.sh" for a in plan.artifacts),
        node_pools=[a.path for a in plan.artifacts if a.path.endswith(".node-pool.yaml")],
        prerequisites=plan.prerequisites,
        first_files=files_before_charts(grouped, set(grouped) if applied is None else applied),
        nodes=sorted({m.name for m in plan.objects if m.kind == "Node"}),
        # MIG layouts as the mig family's ConfigMap (stack: device-plugin) or in the GPU Operator's values.
        has_mig=bool(plan.by_family("mig")) or (operator is not None and "migManager" in operator.values),
        has_admission=bool(plan.by_family("admission")),
        pool_label=POOL_LABEL,
    )

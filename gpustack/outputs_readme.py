"""The README written beside compiled manifests: what each file is for and how to apply it."""

from __future__ import annotations

from typing import Any

import jinja2

from gpustack.plan import Manifest, Plan
from gpustack.templating import package_template

FAMILY_DESCRIPTIONS: dict[str, str] = {
    "cluster": "cluster-wide objects",
    "tenants": "tenant namespaces, GPU quotas and limit ranges",
    "device-plugin": "NVIDIA device plugin configuration",
    "mig": "MIG layouts for the GPU Operator's MIG manager",
    "nodes": "node labels (server-side-apply patches)",
    "node-taints": "node taints as patches that own each node's whole taint list (not in the kustomization; "
    "apply deliberately, or use nodes/label-nodes.sh)",
    "workloads": "ready-to-use workload templates",
    "admission": "admission policies that keep tenants on their pools",
    "kueue": "Kueue queues and flavors",
    "volcano": "Volcano queues",
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


def render_readme(plan: Plan, grouped: dict[str, list[Manifest]]) -> str:
    rows: list[dict[str, Any]] = [{"file": file, "description": _describe(ms)} for file, ms in grouped.items()]
    rows += [
        {"file": r.values_file, "description": f"Helm values for `{r.chart}` {r.version} (not applied by kustomize)"}
        for r in plan.releases
    ]
    rows += [{"file": a.path, "description": a.description} for a in plan.artifacts]
    rows.append({"file": "kustomization.yaml", "description": "lists every manifest, for `kubectl apply -k` or GitOps"})
    releases = [
        {
            "name": r.name,
            "chart": r.chart,
            "repository": r.repository,
            "oci": r.oci,
            "chart_ref": r.chart_ref if r.oci else f"{r.name}/{r.chart}",
            "version": r.version,
            "namespace": r.namespace,
            "values_file": r.values_file,
            "repo_alias": r.name,
        }
        for r in plan.releases
    ]
    return _template().render(
        blueprint=plan.blueprint,
        releases=releases,
        rows=sorted(rows, key=lambda row: row["file"]),
        has_nodes_script=any(a.path == "nodes/label-nodes.sh" for a in plan.artifacts),
    )

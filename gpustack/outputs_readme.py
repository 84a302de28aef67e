"""The README written beside compiled manifests: what each file is for and how to apply it."""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import jinja2

from gpustack.compile import controllers, kai, kueue, volcano
from gpustack.compile.gpu_operator import CHART_NAME as OPERATOR_CHART
from gpustack.dra import load_facts as dra_facts
from gpustack.names import POOL_LABEL
from gpustack.plan import HelmRelease, Manifest, Plan
from gpustack.templating import package_template

PREREQUISITES_FILE = "check-prerequisites.sh"
# The chart that serves each custom API group the output uses: its CRDs come with it (helm installs a chart's CRDs).
GROUP_CHARTS: dict[str, str] = {
    "kueue.x-k8s.io": kueue.CHART_NAME,
    "scheduling.volcano.sh": volcano.CHART_NAME,
    "batch.volcano.sh": volcano.CHART_NAME,
    "scheduling.run.ai": kai.CHART_NAME,
    "kai.scheduler": kai.CHART_NAME,
    **{c.group: c.chart for c in controllers.CONTROLLERS},
}
# API groups kube-apiserver serves itself (a subset: those a compiled object can use); any other group is a CRD's.
BUILTIN_GROUPS = frozenset(
    {"", "apps", "batch", "admissionregistration.k8s.io", "scheduling.k8s.io", "policy", "resource.k8s.io"}
)
DRA_GROUP = "resource.k8s.io"

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
    "kai": "KAI Scheduler queues and scheduling shards (one per pool)",
    "dra": "DeviceClasses of the DRA pools, one per GPU model or MIG profile",
    "dra-admission": "admission policies that keep tenants' DRA claims on their own pools' DeviceClasses",
}


@dataclass(frozen=True)
class Requirement:
    """One thing the cluster must serve before `kubectl apply -k`: a CRD, or an API version, and who provides it."""

    check: tuple[str, ...]  # the kubectl words that succeed only when it is there
    what: str  # in words, for the script's output
    fix: str  # what to install, naming the release


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0]


def _crd_name(group: str, kind: str) -> str:
    # Every custom kind gpustack writes or a template may render (template_kinds) is a regular English plural:
    # resourceflavors, clusterqueues, localqueues, queues, jobs, jobsets, leaderworkersets.
    return f"{kind.lower()}s.{group}"


def _install(release: HelmRelease | None, chart: str | None) -> str:
    if release is not None:
        return (
            f"install Helm release {release.name} (chart {release.chart_ref} {release.version}, namespace "
            f"{release.namespace}: README.md step 3) and wait until it is ready"
        )
    if chart is not None:
        return f"install the '{chart}' chart, which serves it"
    return "install the controller that serves it"


def requirements(plan: Plan, objects: Iterable[Manifest]) -> list[Requirement]:
    """What the applied objects need the cluster to serve, in the order first needed: a CRD per custom kind (with the
    release that installs it), and for DRA objects their resource.k8s.io version and the DRA driver."""
    by_chart = {r.chart: r for r in plan.releases}
    out: dict[tuple[str, ...], Requirement] = {}
    for manifest in objects:
        api_version = str(manifest.obj["apiVersion"])
        group = _group(api_version)
        if group == DRA_GROUP:
            check = ("kubectl", "get", "--raw", f"/apis/{api_version}")
            out.setdefault(
                check,
                Requirement(
                    check,
                    f"API {api_version} ({manifest.kind})",
                    f"Dynamic Resource Allocation needs Kubernetes serving {api_version} (spec.dra.apiVersion, "
                    "spec.kubernetes.version)",
                ),
            )
            facts = dra_facts()
            driver = by_chart.get(facts.chart)
            check = ("kubectl", "get", "deviceclass", facts.chart_classes[0])
            if driver is not None:
                out.setdefault(
                    check,
                    Requirement(
                        check,
                        f"DeviceClass {facts.chart_classes[0]} (the NVIDIA DRA driver's chart installs it)",
                        _install(driver, facts.chart),
                    ),
                )
            continue
        if group in BUILTIN_GROUPS:
            continue
        crd = _crd_name(group, manifest.kind)
        check = ("kubectl", "get", "crd", crd)
        chart = GROUP_CHARTS.get(group)
        release = by_chart.get(chart) if chart is not None else None
        out.setdefault(check, Requirement(check, f"CRD {crd} ({manifest.kind})", _install(release, chart)))
    return list(out.values())


def _words(words: Iterable[str]) -> str:
    return " ".join(shlex.quote(word) for word in words)


def render_prerequisite_script(plan: Plan, objects: Iterable[Manifest]) -> str | None:
    """A POSIX sh script that checks, before `kubectl apply -k`, that the cluster serves every CRD and API the
    kustomization's objects use, naming the release that installs each one missing; None where nothing is needed.

    Run by an admin: every word from the blueprint is quoted, and messages go through printf '%s' (dash's echo
    would interpret backslashes)."""
    needed = requirements(plan, objects)
    if not needed:
        return None
    lines = [
        "#!/bin/sh",
        f"# Generated by gpustack from blueprint '{plan.blueprint}': check that the cluster serves every CRD and API",
        "# this output's objects use, before `kubectl apply -k .`. Edit the blueprint, not this file.",
        "set -u",
        "missing=0",
        "need() {",
        "  what=$1; fix=$2; shift 2",
        '  if "$@" >/dev/null 2>&1; then',
        "    printf 'ok: %s\\n' \"$what\"",
        "  else",
        '    printf \'missing: %s: %s\\n\' "$what" "$fix" >&2',
        "    missing=1",
        "  fi",
        "}",
    ]
    lines += [f"need {_words([r.what, r.fix, *r.check])}" for r in needed]
    lines += [
        'if [ "$missing" -ne 0 ]; then',
        "  printf '%s\\n' 'Install what is missing (README.md step 3), then run this script again.' >&2",
        "  exit 1",
        "fi",
    ]
    return "\n".join(lines) + "\n"


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


def applied_objects(grouped: dict[str, list[Manifest]], applied: set[str]) -> list[Manifest]:
    """The kustomization's objects, in apply order."""
    return [m for file, ms in grouped.items() if file in applied for m in ms]


def render_readme(plan: Plan, grouped: dict[str, list[Manifest]], applied: set[str] | None = None) -> str:
    applied = set(grouped) if applied is None else applied
    needed = requirements(plan, applied_objects(grouped, applied))
    rows: list[dict[str, Any]] = [{"file": file, "description": _describe(ms)} for file, ms in grouped.items()]
    if needed:
        rows.append(
            {
                "file": PREREQUISITES_FILE,
                "description": "checks that the cluster serves every CRD and API the kustomization uses, naming the "
                "release that installs each one missing (run before `kubectl apply -k`)",
            }
        )
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
        karpenter_pools=[
            {
                "file": shlex.quote(spec.file),
                "node_class": shlex.quote(str(spec.document["spec"]["template"]["spec"]["nodeClassRef"]["name"])),
            }
            for spec in plan.node_pools
            if spec.provider == "karpenter"
        ],
        prerequisites=plan.prerequisites,
        first_files=files_before_charts(grouped, applied),
        prerequisite_script=PREREQUISITES_FILE if needed else None,
        has_dra=any(_group(str(m.obj["apiVersion"])) == DRA_GROUP for m in plan.objects),
        nodes=sorted({m.name for m in plan.objects if m.kind == "Node"}),
        # MIG layouts as the mig family's ConfigMap (stack: device-plugin) or in the GPU Operator's values.
        has_mig=bool(plan.by_family("mig")) or (operator is not None and "migManager" in operator.values),
        has_admission=bool(plan.by_family("admission")),
        pool_label=POOL_LABEL,
    )

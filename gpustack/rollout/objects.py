"""Where each changed Kubernetes object and Helm release goes in the rollout, so nothing asks for what is not there.

- quota objects that only grow go before the first wave; any that shrink or lose a resource go after the last;
- workload objects (the templates) go after the first wave of their pool is ready: their pods ask for the
  new resources, which only converted nodes offer; removed workloads go first and free their GPUs;
- everything else (configs, charts, policies) goes before the first wave: nodes only act on it when relabelled.
  A chart upgrade first gets bridge values that serve both versions' nodes (the old and the new device-plugin
  configs, tolerations and pools), since nodes keep their old labels until their wave; the exact new values
  follow after the last wave.

Node labels and taints are the waves' business and are left out here.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from gpustack.names import FIELD_MANAGER, POOL_LABEL
from gpustack.plan import HelmRelease, Manifest, Plan
from gpustack.quantity import parse_quantity
from gpustack.rollout.model import Action, Step

NODE_FAMILIES = frozenset({"nodes", "node-taints"})
WORKLOAD_FAMILIES = frozenset({"workloads"})
QUOTA_KINDS = frozenset({"ResourceQuota", "ClusterQueue", "Queue"})


@dataclass(frozen=True)
class ObjectMoves:
    delete_first: tuple[Manifest, ...]  # removed workloads
    prepare: tuple[Manifest, ...]  # configs and quotas that only grow
    templates: tuple[Manifest, ...]  # added or changed workloads, by their pool's first wave
    finish: tuple[Manifest, ...]  # quotas that shrink
    delete_last: tuple[Manifest, ...]  # every other removed object
    upgrades: tuple[HelmRelease, ...]  # with bridge values where the old and the new values differ
    settles: tuple[HelmRelease, ...]  # the exact new values, after the last wave, where a bridge was needed
    uninstalls: tuple[HelmRelease, ...]


def _amounts(value: Any, path: str = "") -> dict[str, Decimal]:
    """Every number-like leaf of an object by its path: quotas are quantities somewhere inside."""
    if isinstance(value, dict):
        found: dict[str, Decimal] = {}
        for key, item in value.items():
            found.update(_amounts(item, f"{path}/{key}"))
        return found
    if isinstance(value, list):
        # Lists of named entries (flavors, resources) are matched by name, not position, so reordering is no change.
        found = {}
        for index, item in enumerate(value):
            name = item.get("name", index) if isinstance(item, dict) else index
            found.update(_amounts(item, f"{path}[{name}]"))
        return found
    if isinstance(value, bool) or value is None:
        return {}
    try:
        return {path: parse_quantity(value)}
    except (ValueError, InvalidOperation, TypeError, ArithmeticError):
        return {}


def shrinks(old: Manifest, new: Manifest) -> bool:
    """Whether any amount of the quota object goes down or away."""
    before, after = _amounts(old.obj), _amounts(new.obj)
    return any(path not in after or after[path] < amount for path, amount in before.items())


def _by_key(plan: Plan) -> dict[str, Manifest]:
    return {m.key + "|" + m.family: m for m in plan.objects if m.family not in NODE_FAMILIES}


def object_moves(before: Plan, after: Plan) -> ObjectMoves:
    old, new = _by_key(before), _by_key(after)
    changed = [m for key, m in new.items() if old.get(key) is None or old[key].obj != m.obj]
    removed = [m for key, m in old.items() if key not in new]
    quotas_down = [
        m for m in changed if m.kind in QUOTA_KINDS and (o := old.get(m.key + "|" + m.family)) and shrinks(o, m)
    ]
    templates = [m for m in changed if m.family in WORKLOAD_FAMILIES]
    # By identity: comparing Manifests compares whole objects, and a fleet-wide change has thousands of them.
    elsewhere = {id(m) for m in templates} | {id(m) for m in quotas_down}
    prepare = [m for m in changed if id(m) not in elsewhere]
    old_releases = {r.name: r for r in before.releases}
    new_names = {r.name for r in after.releases}
    upgrades = [bridge_release(old_releases.get(r.name), r) for r in after.releases if old_releases.get(r.name) != r]
    return ObjectMoves(
        delete_first=tuple(m for m in removed if m.family in WORKLOAD_FAMILIES),
        prepare=tuple(prepare),
        templates=tuple(templates),
        finish=tuple(quotas_down),
        delete_last=tuple(reversed([m for m in removed if m.family not in WORKLOAD_FAMILIES])),
        upgrades=tuple(upgrades),
        settles=tuple(r for r in after.releases if r not in upgrades and old_releases.get(r.name) != r),
        uninstalls=tuple(r for r in before.releases if r.name not in new_names),
    )


def _union(old: list[Any], new: list[Any]) -> list[Any]:
    return [*new, *(item for item in old if item not in new)]


def bridge_values(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """New values that still serve nodes in their old state: old device-plugin configs, tolerations and pools."""
    values = json.loads(json.dumps(new))
    old_map, new_map = old.get("config", {}).get("map"), values.get("config", {}).get("map")
    if isinstance(old_map, dict) and isinstance(new_map, dict):
        values["config"]["map"] = {**old_map, **new_map}
    if isinstance(old.get("tolerations"), list) and isinstance(values.get("tolerations"), list):
        values["tolerations"] = _union(old["tolerations"], values["tolerations"])
    old_terms, new_terms = _pool_terms(old), _pool_terms(values)
    if old_terms is not None and new_terms is not None:
        new_terms["values"] = _union(old_terms["values"], new_terms["values"])
    _bridge_operator(old, values)
    return values


def _at(values: Any, *keys: str) -> Any:
    for key in keys:
        values = values.get(key) if isinstance(values, dict) else None
    return values


def _bridge_operator(old: dict[str, Any], values: dict[str, Any]) -> None:
    """The GPU Operator's values (stack: gpu-operator): its device plugin's per-pool configs and the tolerations of
    its operands and NFD's worker, the old ones kept beside the new until the last wave."""
    old_data, new_data = _at(old, "devicePlugin", "config", "data"), _at(values, "devicePlugin", "config", "data")
    if isinstance(old_data, dict) and isinstance(new_data, dict):
        values["devicePlugin"]["config"]["data"] = {**old_data, **new_data}
    for keys in (("daemonsets",), ("node-feature-discovery", "worker")):
        old_list, holder = _at(old, *keys, "tolerations"), _at(values, *keys)
        if isinstance(old_list, list) and isinstance(holder, dict) and isinstance(holder.get("tolerations"), list):
            holder["tolerations"] = _union(old_list, holder["tolerations"])


def _pool_terms(values: dict[str, Any]) -> dict[str, Any] | None:
    """The affinity expression that picks the chart's nodes by gpustack's pool label, if the values have one."""
    try:
        terms = values["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        expression: dict[str, Any] = terms["nodeSelectorTerms"][0]["matchExpressions"][0]
    except (KeyError, IndexError, TypeError):
        return None
    ok = expression.get("key") == POOL_LABEL and isinstance(expression.get("values"), list)
    return expression if ok else None


def bridge_release(old: HelmRelease | None, new: HelmRelease) -> HelmRelease:
    if old is None:
        return new
    values = bridge_values(old.values, new.values)
    return new if values == new.values else dataclasses.replace(new, values=values)


def workload_pool(manifest: Manifest) -> str | None:
    labels = manifest.obj.get("metadata", {}).get("labels") or {}
    pool = labels.get(POOL_LABEL)
    return pool if isinstance(pool, str) else None


def _what(manifest: Manifest) -> str:
    where = f" in {manifest.namespace}" if manifest.namespace else ""
    return f"{manifest.kind} {manifest.name}{where}"


def apply_step(step_id: str, manifest: Manifest, why: str) -> Step:
    body = json.dumps(manifest.obj, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    if manifest.kind == "Job" and manifest.obj.get("apiVersion") == "batch/v1":
        # The API server refuses a changed pod template on an existing Job; a running one finishes as it is.
        why += "; a Job that already exists keeps its old pod template: delete it to run the new one"
    return Step(
        step_id,
        Action.APPLY_JOB if manifest.kind == "Job" and manifest.obj.get("apiVersion") == "batch/v1" else Action.APPLY,
        f"apply {_what(manifest)} ({why})",
        ("kubectl", "apply", "--server-side", f"--field-manager={FIELD_MANAGER}", "-f", "-"),
        stdin=body,
    )


def delete_step(step_id: str, manifest: Manifest, why: str) -> Step:
    namespace = ("--namespace", manifest.namespace) if manifest.namespace else ()
    kind = (
        f"{manifest.kind}.{manifest.obj['apiVersion'].split('/')[0]}"
        if "/" in manifest.obj["apiVersion"]
        else manifest.kind
    )
    return Step(
        step_id,
        Action.DELETE,
        f"delete {_what(manifest)}{' and everything in it' if manifest.kind == 'Namespace' else ''} ({why})",
        ("kubectl", "delete", kind, manifest.name, *namespace, "--ignore-not-found"),
    )


def helm_upgrade_step(step_id: str, release: HelmRelease, why: str = "with the new values") -> Step:
    repository = () if release.oci else ("--repo", release.repository)
    return Step(
        step_id,
        Action.HELM_UPGRADE,
        f"upgrade Helm release {release.name} to chart {release.chart} {release.version} {why}",
        (
            "helm",
            "upgrade",
            "--install",
            release.name,
            release.chart_ref,
            *repository,
            "--version",
            release.version,
            "--namespace",
            release.namespace,
            "--create-namespace",
            "--values",
            "-",
        ),
        stdin=json.dumps(release.values, sort_keys=True, ensure_ascii=True, separators=(",", ":")),
    )


def helm_uninstall_step(step_id: str, release: HelmRelease) -> Step:
    return Step(
        step_id,
        Action.HELM_UNINSTALL,
        f"uninstall Helm release {release.name} (no longer in the blueprint)",
        ("helm", "uninstall", release.name, "--namespace", release.namespace, "--ignore-not-found"),
    )

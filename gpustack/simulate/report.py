"""The simulation as data (for `--output json`) and as text: placements, utilisation, quota, pending pods.

`report_data` holds every pending pod's message and hint in place, for the text report (which groups runs of
pods that share them). `--output json` writes each distinct message and hint once instead (`json_shape`): at
1,000 pools every pending pod's FailedScheduling message names each pool's taint, and written out per pod they
made a 60 MB document. That is a change of the document's keys, so it is SimulationReport `gpustack.io/v1alpha2`
(docs/json-output.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import jinja2

from gpustack.collector import paused
from gpustack.diagnostic import JsonPath, Span, format_json_path
from gpustack.escapes import json_safe
from gpustack.json_text import pretty_json
from gpustack.simulate import Simulation
from gpustack.simulate.demand import Pod
from gpustack.simulate.hints import PoolRejections, Stock, explain, pool_stock
from gpustack.simulate.messages import EVENT_NOTE_LIMIT, event_note
from gpustack.simulate.pods import DEFAULT_SCHEDULER, PODS
from gpustack.simulate.quota import format_quantity
from gpustack.simulate.simulation import FAILED_CREATE, FAILED_SCHEDULING
from gpustack.templating import package_template

# (document, path) -> where it is: document is "blueprint" or "scenario".
Locate = Callable[[str, JsonPath], Span | None]


def _nowhere(document: str, path: JsonPath) -> Span | None:
    return None


@paused()  # see gpustack/collector.py
def report_data(simulation: Simulation, file: str, locate: Locate = _nowhere) -> dict[str, Any]:
    outcome = simulation.outcome
    context = simulation.context
    placed, pending = len(outcome.placed), len(outcome.pending)
    stock = pool_stock(outcome.cluster)
    in_pool: PoolRejections = {}
    return {
        "blueprint": context.blueprint.name,
        "file": file,
        "scenario": simulation.scenario.file if simulation.scenario is not None else None,
        "kubernetes": str(outcome.version),
        "ok": outcome.ok and not simulation.demand.skipped,
        "summary": {
            "pods": placed + pending,
            "placed": placed,
            "pending": pending,
            "nodes": len(outcome.cluster.nodes),
            "running": len(outcome.running),
            "afterScaleUp": len(simulation.after_scale_up),
        },
        "workloads": _workloads(simulation),
        "pools": _pools(simulation),
        "quotas": _quotas(simulation),
        **_kai_queues(simulation),
        "gangs": [
            {"job": spec.name, "namespace": spec.namespace, "minAvailable": spec.min_available, "message": message}
            for spec, message in outcome.gangs
        ],
        "pending": [_pending(simulation, item, locate, stock, in_pool) for item in outcome.pending],
        "preempted": [
            {"pod": pod.name, "namespace": pod.namespace, "node": outcome.cluster.nodes[node].name, "message": text}
            for pod, node, text in outcome.preempted
        ],
        "nominated": [
            {"pod": pod.name, "namespace": pod.namespace, "node": outcome.cluster.nodes[node].name, "message": text}
            for pod, node, text in outcome.nominated
        ],
        "skipped": [{"workload": w.name, "reason": reason} for w, reason in simulation.demand.skipped],
    }


def _workloads(simulation: Simulation) -> list[dict[str, Any]]:
    nodes = simulation.outcome.cluster.nodes
    rows: dict[str, dict[str, Any]] = {}
    row: dict[str, Any] = {}
    for pod in simulation.demand.pods:
        name = pod.workload
        if row.get("name") != name:  # a workload's pods come one after another: look its row up once per run
            row = rows.get(name) or rows.setdefault(name, _row(pod))
        row["pods"] += 1
    scaled = set(simulation.after_scale_up)
    kai = simulation.outcome.kai
    over = {id(pod): q.name for q in kai.queues.values() for pod in q.over_quota} if kai is not None else {}
    for pod, node in simulation.outcome.placed:
        row = rows[pod.workload]
        row["placed"] += 1
        after = (pod.namespace, pod.name) in scaled if scaled else False
        row["afterScaleUp"] += after
        placement = {"pod": pod.name, "node": nodes[node].name, "afterScaleUp": after}
        if id(pod) in over:  # placed past its KAI queue's quota: KAI may reclaim it (simulate/kai.py)
            placement["kaiOverQuota"] = over[id(pod)]
        row["placements"].append(placement)
    for item in simulation.outcome.pending:
        rows[item.pod.workload]["pending"] += 1
    return list(rows.values())


def _row(pod: Pod) -> dict[str, Any]:
    workload = pod.source.workload
    return {
        "name": pod.workload,
        "namespace": pod.namespace,
        "tenant": workload.tenant if workload is not None else None,
        "pool": workload.pool if workload is not None else None,
        "scheduler": pod.shape.scheduler_name,
        "pods": 0,
        "placed": 0,
        "pending": 0,
        "afterScaleUp": 0,
        "placements": [],
    }


def _pools(simulation: Simulation) -> list[dict[str, Any]]:
    cluster = simulation.outcome.cluster
    out = []
    by_pool: dict[str | None, list[int]] = {}
    for i, n in enumerate(cluster.nodes):
        by_pool.setdefault(n.pool, []).append(i)
    for pool in simulation.context.blueprint.pools:
        members = by_pool.get(pool.name, [])
        totals: dict[str, list[int]] = {}
        for index in members:
            for resource, capacity in cluster.nodes[index].allocatable.items():
                if resource == PODS:
                    continue
                entry = totals.setdefault(resource, [0, 0])
                entry[0] += capacity
                entry[1] += cluster.used[index].get(resource, 0)
        resources = [
            {
                "resource": resource,
                "allocatable": format_quantity(resource, total),
                "requested": format_quantity(resource, used),
                "percent": round(100 * used / total, 1) if total else 0.0,
            }
            for resource, (total, used) in sorted(totals.items())
        ]
        out.append({"name": pool.name, "nodes": len(members), "resources": resources})
    return out


def _quotas(simulation: Simulation) -> list[dict[str, Any]]:
    tenant_of: dict[str, str] = {}
    for owner in simulation.context.blueprint.tenants:
        for namespace in owner.namespaces:
            tenant_of.setdefault(namespace, owner.name)  # the first tenant listing it, as a search in order finds
    out = []
    for quota, used in simulation.outcome.quotas:
        tenant = tenant_of.get(quota.namespace)
        out.append(
            {
                "tenant": tenant,
                "namespace": quota.namespace,
                "quota": quota.name,
                "resources": [
                    {
                        "resource": key,
                        "used": format_quantity(key, used.get(key, 0)),
                        "hard": format_quantity(key, hard),
                    }
                    for key, hard in sorted(quota.hard.items())
                ],
            }
        )
    return out


def _kai_queues(simulation: Simulation) -> dict[str, Any]:
    """KAI tenants' Queues (gpu figures in KAI's units, read from the compiled Queues) and what was placed in them."""
    kai = simulation.outcome.kai
    if kai is None:
        return {}
    return {
        "kaiQueues": [
            {
                "name": queue.name,
                "parent": queue.parent,
                "gpuQuota": queue.quota,
                "gpuLimit": queue.limit,
                "overQuotaWeight": queue.over_quota_weight,
                "gpuAllocated": queue.allocated,
                "overQuota": queue.over(),
                "overQuotaPods": [{"pod": pod.name, "namespace": pod.namespace} for pod in queue.over_quota],
            }
            for queue in sorted(kai.queues.values(), key=lambda q: q.name)
        ]
    }


def _pending(
    simulation: Simulation,
    item: Any,
    locate: Locate,
    stock: dict[str | None, dict[str, Stock]],
    in_pool: PoolRejections,
) -> dict[str, Any]:
    hint = explain(item, simulation.context, simulation.outcome.cluster, stock, in_pool)
    hint_data = None
    if hint is not None:
        span = locate(hint.document, hint.path)
        hint_data = {
            "message": hint.message,
            "document": hint.document,
            "path": format_json_path(hint.path),
            "file": span.file if span is not None else None,
            "line": span.start.line if span is not None else None,
            "column": span.start.column if span is not None else None,
        }
    return {
        "pod": item.pod.name,
        "namespace": item.pod.namespace,
        "workload": item.pod.workload,
        "event": item.event,
        "message": item.message,
        "hint": hint_data,
    }


# v1alpha2: pending pods name their message and hint by index into the top-level `messages` and `hints` lists.
API_VERSION = "gpustack.io/v1alpha2"


def json_shape(data: dict[str, Any]) -> dict[str, Any]:
    """The report as `--output json` writes it: each distinct pending message and hint once, referenced by index.

    A pending pod's `messageIndex` is its message's place in `messages`, its `hintIndex` its hint's place in `hints`
    (null for none); both lists are in order of first use, so the same input gives the same document."""
    messages: dict[str, int] = {}
    hints: dict[tuple[Any, ...], int] = {}
    hint_list: list[dict[str, Any]] = []
    pending = []
    for item in data["pending"]:
        hint = item["hint"]
        hint_index = None
        if hint is not None:
            key = tuple(hint.values())
            hint_index = hints.get(key)
            if hint_index is None:
                hint_index = hints[key] = len(hint_list)
                hint_list.append(hint)
        pending.append(
            {
                "pod": item["pod"],
                "namespace": item["namespace"],
                "workload": item["workload"],
                "event": item["event"],
                "messageIndex": messages.setdefault(item["message"], len(messages)),
                "hintIndex": hint_index,
            }
        )
    shaped = {key: value for key, value in data.items() if key not in ("pending", "preempted", "nominated", "skipped")}
    return {
        **shaped,
        "messages": list(messages),
        "hints": hint_list,
        "pending": pending,
        "preempted": data["preempted"],
        "nominated": data["nominated"],
        "skipped": data["skipped"],
    }


def format_json(data: dict[str, Any]) -> str:
    """The SimulationReport document: `apiVersion` and `kind` first, then `json_shape(data)` (see jsondoc.py)."""
    document = {"apiVersion": API_VERSION, "kind": "SimulationReport", **json_shape(data)}
    return json_safe(pretty_json(document)) + "\n"


def _template() -> jinja2.Template:
    return package_template("simulate-report.txt.j2")


@paused()  # see gpustack/collector.py
def format_text(data: dict[str, Any]) -> str:
    """The text report shows kube-scheduler's messages as its events read in `kubectl describe pod`: cut at 1024
    bytes (`event_note`), with a line saying where the whole message is. At 1,000 pools one names each pool's taint
    (64 kB), and every pending workload's written whole made the report grow with the pools squared."""
    schedulers = {row["name"]: row["scheduler"] for row in data["workloads"]}
    pending = [_as_event(group, schedulers.get(group["workload"])) for group in _grouped(data["pending"])]
    nominated = [_as_event({**row, "event": FAILED_SCHEDULING}, DEFAULT_SCHEDULER) for row in data["nominated"]]
    return _template().render(
        report=data, pending=pending, nominated=nominated, placement_lines=placement_lines, note_limit=EVENT_NOTE_LIMIT
    )


def _as_event(row: dict[str, Any], scheduler: str | None) -> dict[str, Any]:
    """The row with `shown`, its message as the event has it, and `whole`, the message's size where that was cut.

    Only kube-scheduler's FailedScheduling event is cut (schedule_one.go's truncateMessage); other schedulers and
    controllers record their events whole."""
    message = row["message"]
    kube_scheduler = row["event"] == FAILED_SCHEDULING and scheduler in (None, DEFAULT_SCHEDULER)
    shown = event_note(message) if kube_scheduler else message
    return {**row, "shown": shown, "whole": len(message.encode()) if shown is not message else None}


def placement_lines(placements: list[dict[str, Any]]) -> str:
    """A workload's placement lines, `    pod -> node` and what marks it, each ending in a newline.

    Written here rather than as a loop in the template: at 130,000 placements Jinja's loop was most of the text
    report's time, and a join of the same lines a tenth of it."""
    return "".join(_placement_line(p) for p in placements)


def _placement_line(placement: dict[str, Any]) -> str:
    after = " (after scale-up)" if placement["afterScaleUp"] else ""
    queue = placement.get("kaiOverQuota")
    over = f" (over quota in KAI queue {queue})" if queue is not None else ""
    return f"    {placement['pod']} -> {placement['node']}{after}{over}\n"


# Where a FailedCreate message names its pod: `[Error creating: ]pods "<pod>" is forbidden: ...`, or a StatefulSet's
# `create Pod <pod> in StatefulSet <set> failed error: pods "<pod>" is forbidden: ...` (simulate/controllers.py).
_POD_NAMED = re.compile(r'(?<=^create Pod )[^ ]+|(?<=pods ")[^"]*(?=")')


def _grouped(pending: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Runs of pods of one workload with the same event, message and hint, shown once (JSON keeps every pod).

    Only the API server's refusals (FailedCreate) name their pod, as the API server named it (a Deployment's pod
    `<replicaset>-<suffix>`, not the simulated `<deployment>-<index>`): the name is masked there. Other messages are
    compared as they are, unsearched: a FailedScheduling message holds a clause per pool's taint (64 kB at 1,000
    pools), which every pending replica shares."""
    groups: list[dict[str, Any]] = []
    for item in pending:
        message = item["message"]
        if item["event"] == FAILED_CREATE:
            message = _POD_NAMED.sub("*", message, count=2)
        hint = None if item["hint"] is None else tuple(item["hint"].items())
        key = (item["namespace"], item["workload"], item["event"], message, hint)
        if groups and groups[-1]["key"] == key:
            groups[-1]["pods"].append(item["pod"])
        else:
            groups.append({"key": key, "pods": [item["pod"]], **item})
    for group in groups:
        pods = group["pods"]
        group["who"] = pods[0] if len(pods) == 1 else f"{pods[0]} .. {pods[-1]} ({len(pods)} pods)"
    return groups

"""A cluster snapshot: what `kubectl get nodes,pods,... -A -o yaml` prints (names.SNAPSHOT_COMMAND, docs/import.md).

Read with the blueprint loader (size caps, aliases within its expansion budget, no tags, positions kept), or, written
as JSON, by the C json module with positions found only for a diagnostic (cluster/json_document.py), then turned
into small typed records. Only the fields gpustack reasons about are kept; every record knows
its JSON path so a malformed object is reported at its line. The device plugin's / GPU Operator's ConfigMaps and
the operator's ClusterPolicy may ride along in the same List: the ConfigMaps' `data` values are YAML texts, parsed
with the same loader, and the ClusterPolicy says which of them the operator reads (cluster/configs.py).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cached_property
from typing import Any

from gpustack.cluster import shapes
from gpustack.cluster.documents import joined, several_documents
from gpustack.cluster.json_document import json_document
from gpustack.cluster.pod_requests import pod_requests
from gpustack.cluster.queues import SnapshotQueue, read_queue
from gpustack.codes import SNAPSHOT_MALFORMED
from gpustack.collector import paused
from gpustack.diagnostic import Diagnostic, DiagnosticError, JsonPath, Severity, Span
from gpustack.load import Document, parse_document, read_text
from gpustack.names import SNAPSHOT_COMMAND
from gpustack.quantity import parse_quantity

KINDS = (
    "Node",
    "Pod",
    "PriorityClass",
    "ResourceQuota",
    "Namespace",
    "ConfigMap",
    "ClusterPolicy",
    "ValidatingAdmissionPolicyBinding",
    "LocalQueue",
    "Queue",  # KAI's (scheduling.run.ai) and Volcano's (scheduling.volcano.sh): cluster/queues.py
)
TERMINAL_PHASES = ("Succeeded", "Failed")  # pods that hold nothing any more


@dataclass(frozen=True)
class SnapshotTaint:
    key: str
    value: str | None
    effect: str


@dataclass(frozen=True)
class SnapshotNode:
    name: str
    labels: tuple[tuple[str, str], ...]
    taints: tuple[SnapshotTaint, ...]
    unschedulable: bool
    allocatable: tuple[tuple[str, str], ...]  # resource -> quantity, as written
    kubelet_version: str | None
    path: JsonPath

    def label(self, key: str) -> str | None:
        return self.label_map.get(key)

    @cached_property
    def label_map(self) -> Mapping[str, str]:  # import asks each node a dozen labels: one dict, not one per question
        return dict(self.labels)

    @cached_property
    def allocatable_map(self) -> Mapping[str, str]:
        return dict(self.allocatable)

    def allocatable_amount(self, resource: str) -> Decimal:
        text = self.allocatable_map.get(resource)
        return Decimal(0) if text is None else parse_quantity(text)


@dataclass(frozen=True)
class SnapshotPod:
    name: str
    namespace: str
    node_name: str | None
    phase: str | None
    priority: int | None  # spec.priority, which admission resolves from the class; None when not written
    priority_class: str | None
    requests: tuple[tuple[str, str], ...]  # summed over containers, the larger of that and any init container
    path: JsonPath

    @property
    def holds_resources(self) -> bool:
        return self.node_name is not None and self.phase not in TERMINAL_PHASES


@dataclass(frozen=True)
class SnapshotPriorityClass:
    name: str
    value: int
    preemption_policy: str  # PreemptLowerPriority (the default) or Never
    global_default: bool
    path: JsonPath


@dataclass(frozen=True)
class ScopeRequirement:
    """One `spec.scopeSelector.matchExpressions` entry of a ResourceQuota."""

    scope: str  # Terminating, NotTerminating, BestEffort, NotBestEffort, PriorityClass, CrossNamespacePodAffinity
    operator: str  # In, NotIn, Exists, DoesNotExist
    values: tuple[str, ...]

    def text(self) -> str:
        if self.operator in ("In", "NotIn"):
            return f"{self.scope} {self.operator} ({', '.join(self.values)})"
        return f"{self.scope} {self.operator}"


@dataclass(frozen=True)
class SnapshotQuota:
    name: str
    namespace: str
    hard: tuple[tuple[str, str], ...]
    path: JsonPath
    scopes: tuple[str, ...] = ()  # spec.scopes: the quota counts only pods in every one of these
    scope_selector: tuple[ScopeRequirement, ...] = ()  # spec.scopeSelector, ANDed with scopes

    @property
    def scoped(self) -> bool:
        """Whether the quota binds only some of its namespace's pods (an unscoped one binds every pod)."""
        return bool(self.scopes or self.scope_selector)

    def scope_text(self) -> str:
        return ", ".join([*self.scopes, *(requirement.text() for requirement in self.scope_selector)])


@dataclass(frozen=True)
class SnapshotNamespace:
    name: str
    labels: tuple[tuple[str, str], ...]
    path: JsonPath


@dataclass(frozen=True)
class SnapshotConfigMap:
    name: str
    namespace: str
    data: tuple[tuple[str, str], ...]
    path: JsonPath
    release: str | None = None  # the Helm release that made it (meta.helm.sh/release-name), where one did


@dataclass(frozen=True)
class SnapshotClusterPolicy:
    """The GPU Operator's ClusterPolicy (cluster-scoped, so only a cluster admin writes it): where the operator runs
    and which ConfigMaps its device plugin and MIG manager read."""

    name: str
    namespace: str | None  # status.namespace: the namespace the operator is installed in
    state: str | None  # status.state; "ignored" on every ClusterPolicy but the one the operator acts on
    device_plugin_config: str | None  # spec.devicePlugin.config.name
    mig_config: str | None  # spec.migManager.config.name
    path: JsonPath
    release: str | None = None  # the operator chart's Helm release (meta.helm.sh/release-name)


@dataclass(frozen=True)
class SnapshotPolicyBinding:
    """A ValidatingAdmissionPolicyBinding: which policy it binds and what a violation does (Deny, Warn, Audit)."""

    name: str
    policy_name: str | None
    validation_actions: tuple[str, ...]
    path: JsonPath


@dataclass(frozen=True)
class SnapshotLocalQueue:
    """A Kueue LocalQueue: its namespace's pods are queued by Kueue, into the ClusterQueue it names."""

    name: str
    namespace: str
    cluster_queue: str | None
    path: JsonPath


@dataclass(frozen=True)
class ClusterSnapshot:
    file: str
    nodes: tuple[SnapshotNode, ...]
    pods: tuple[SnapshotPod, ...]
    priority_classes: tuple[SnapshotPriorityClass, ...]
    quotas: tuple[SnapshotQuota, ...]
    namespaces: tuple[SnapshotNamespace, ...]
    config_maps: tuple[SnapshotConfigMap, ...]
    document: Document | None = field(default=None, repr=False, compare=False)
    cluster_policies: tuple[SnapshotClusterPolicy, ...] = ()
    policy_bindings: tuple[SnapshotPolicyBinding, ...] = ()
    local_queues: tuple[SnapshotLocalQueue, ...] = ()
    queues: tuple[SnapshotQueue, ...] = ()  # KAI and Volcano Queues, by name
    kinds: frozenset[str] = frozenset()  # the kinds of the objects the file holds: what drift can compare

    def span(self, path: JsonPath) -> Span | None:
        """Where a path of the snapshot file starts, for diagnostics about the cluster."""
        return self.document.span(path) if self.document is not None else None

    def node(self, name: str) -> SnapshotNode | None:
        return self._nodes_by_name.get(name)

    @cached_property
    def _nodes_by_name(self) -> dict[str, SnapshotNode]:  # drift and simulate look up every node: keep it O(1)
        return {node.name: node for node in self.nodes}

    def nodes_labelled(self, key: str, values: Iterable[str]) -> tuple[SnapshotNode, ...]:
        """The nodes whose label `key` has one of `values`, in the snapshot's order: a selector's candidates found
        by lookup, so matching every selector pool costs its own nodes, not the cluster's (N7)."""
        found = sorted({index for value in values for index in self._nodes_by_label.get((key, value), ())})
        return tuple(self.nodes[index] for index in found)

    @cached_property
    def _nodes_by_label(self) -> dict[tuple[str, str], list[int]]:
        out: dict[tuple[str, str], list[int]] = {}
        for index, node in enumerate(self.nodes):
            for pair in node.labels:
                out.setdefault(pair, []).append(index)
        return out


class _Reader:
    """Turns one loaded document into records, collecting a diagnostic for each malformed object."""

    def __init__(self, document: Document) -> None:
        self.document = document
        self.problems: list[Diagnostic] = []
        self._amounts: dict[str, Decimal] = {}  # a quantity as written -> its amount
        self.requests: dict[Hashable, tuple[tuple[str, str], ...]] = {}  # request_key -> a pod's requests

    def fail(self, path: JsonPath, message: str, expected: str, hint: str) -> None:
        span = self.document.span(path)
        self.problems.append(
            Diagnostic(SNAPSHOT_MALFORMED, Severity.ERROR, f"{message}; expected {expected}", span, path, hint)
        )

    def amount(self, text: str) -> Decimal:
        """parse_quantity(text) (ValueError as it raises), once per text: 20,000 pods write a few dozen quantities."""
        known = self._amounts.get(text)
        if known is None:
            known = self._amounts[text] = parse_quantity(text)
        return known

    def mapping(self, value: Any, path: JsonPath, what: str) -> Mapping[str, Any] | None:
        if isinstance(value, dict):
            return value
        if value is not None:
            self.fail(path, f"{what} is {shapes.kind_of(value)}", "a mapping", _KUBECTL_HINT)
        return None

    def string_map(self, value: Any, path: JsonPath, what: str) -> tuple[tuple[str, str], ...]:
        found = self.mapping(value, path, f"the {what} map") or {}
        out = []
        for key, item in found.items():
            if isinstance(item, bool) or not isinstance(item, (str, int, float)):
                self.fail((*path, key), f"{what} {key!r} is {shapes.kind_of(item)}", "a string", _KUBECTL_HINT)
                continue
            out.append((key, str(item)))
        return tuple(sorted(out))

    def name(self, item: Mapping[str, Any], path: JsonPath) -> tuple[str, str | None] | None:
        meta = self.mapping(item.get("metadata"), (*path, "metadata"), "metadata")
        if meta is None or not isinstance(meta.get("name"), str) or not meta["name"]:
            self.fail((*path, "metadata"), "an object without metadata.name", "metadata.name", _KUBECTL_HINT)
            return None
        namespace = meta.get("namespace")
        return meta["name"], namespace if isinstance(namespace, str) else None

    def quantities(self, value: Any, path: JsonPath, what: str) -> tuple[tuple[str, str], ...]:
        """A resource map whose every value must be a Kubernetes quantity (allocatable, quota hard)."""
        out = []
        for name, amount in self.string_map(value, path, what):
            try:
                self.amount(amount)
            except ValueError:
                self.fail(
                    (*path, name), f"{what} {name!r} is {amount!r}", "a Kubernetes quantity", "e.g. 8, 500m, 64Gi"
                )
                continue
            out.append((name, amount))
        return tuple(out)

    def strings(self, value: Any, path: JsonPath, what: str) -> tuple[str, ...]:
        """A list of strings (quota scopes, scope values); anything else in it is reported."""
        if value is None:
            return ()
        if not isinstance(value, list):
            self.fail(path, f"{what} list is {shapes.kind_of(value)}", "a list of strings", _KUBECTL_HINT)
            return ()
        out = []
        for index, item in enumerate(value):
            if not isinstance(item, str):
                self.fail((*path, index), f"{what} is {shapes.kind_of(item)}", "a string", _KUBECTL_HINT)
                continue
            out.append(item)
        return tuple(out)

    def integer(self, value: Any, path: JsonPath, what: str, default: int) -> int:
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(path, f"{what} is {shapes.kind_of(value)}", "an integer", _KUBECTL_HINT)
            return default
        return value


_KUBECTL_HINT = f"give the unedited output of `{SNAPSHOT_COMMAND}`"


def _items(reader: _Reader) -> Iterator[tuple[Mapping[str, Any], JsonPath]]:
    data = reader.document.data
    if isinstance(data, dict) and data.get("kind") != "List" and "items" not in data:
        yield data, ()  # a single object, as `kubectl get node gpu-1 -o yaml` prints
        return
    root = reader.mapping(data, (), "the snapshot")
    items = root.get("items") if root is not None else None
    if not isinstance(items, list):
        reader.fail((), "the snapshot has no items list", "a v1 List with items", _KUBECTL_HINT)
        return
    for index, item in enumerate(items):
        found = reader.mapping(item, ("items", index), "a list item")
        if found is not None:
            yield found, ("items", index)


def _node(reader: _Reader, item: Mapping[str, Any], path: JsonPath) -> SnapshotNode | None:
    named = reader.name(item, path)
    if named is None:
        return None
    meta = item["metadata"]
    spec = reader.mapping(item.get("spec"), (*path, "spec"), "spec") or {}
    status = reader.mapping(item.get("status"), (*path, "status"), "status") or {}
    shapes.check_node(reader, spec, path)
    taints = []
    raw_taints = spec.get("taints") or []
    for index, raw in enumerate(raw_taints if isinstance(raw_taints, list) else []):
        taint = reader.mapping(raw, (*path, "spec", "taints", index), "a taint")
        if taint is None or not isinstance(taint.get("key"), str) or not isinstance(taint.get("effect"), str):
            where = (*path, "spec", "taints", index)
            reader.fail(where, "a taint without key or effect", "key and effect", _KUBECTL_HINT)
            continue
        value = taint.get("value")
        taints.append(SnapshotTaint(taint["key"], None if value in (None, "") else str(value), taint["effect"]))
    info = raw_info if isinstance(raw_info := status.get("nodeInfo"), dict) else {}
    kubelet = info.get("kubeletVersion")
    return SnapshotNode(
        name=named[0],
        labels=reader.string_map(meta.get("labels"), (*path, "metadata", "labels"), "label"),
        taints=tuple(taints),
        unschedulable=spec.get("unschedulable") is True,
        allocatable=reader.quantities(status.get("allocatable"), (*path, "status", "allocatable"), "allocatable"),
        kubelet_version=kubelet if isinstance(kubelet, str) else None,
        path=path,
    )


def _pod(reader: _Reader, item: Mapping[str, Any], path: JsonPath) -> SnapshotPod | None:
    named = reader.name(item, path)
    if named is None:
        return None
    spec = reader.mapping(item.get("spec"), (*path, "spec"), "spec") or {}
    status = reader.mapping(item.get("status"), (*path, "status"), "status") or {}
    shapes.check_pod(reader, item, path)
    node = spec.get("nodeName")
    phase = status.get("phase")
    priority_class = spec.get("priorityClassName")
    return SnapshotPod(
        name=named[0],
        namespace=named[1] or "default",
        node_name=node if isinstance(node, str) and node else None,
        phase=phase if isinstance(phase, str) else None,
        priority=None
        if spec.get("priority") is None
        else reader.integer(spec.get("priority"), (*path, "spec", "priority"), "priority", 0),
        priority_class=priority_class if isinstance(priority_class, str) and priority_class else None,
        requests=pod_requests(reader, spec, path),
        path=path,
    )


def _priority_class(reader: _Reader, item: Mapping[str, Any], path: JsonPath) -> SnapshotPriorityClass | None:
    named = reader.name(item, path)
    if named is None:
        return None
    policy = item.get("preemptionPolicy")
    return SnapshotPriorityClass(
        name=named[0],
        value=reader.integer(item.get("value"), (*path, "value"), "value", 0),
        preemption_policy=policy if policy in ("Never", "PreemptLowerPriority") else "PreemptLowerPriority",
        global_default=item.get("globalDefault") is True,
        path=path,
    )


def _quota(reader: _Reader, item: Mapping[str, Any], path: JsonPath) -> SnapshotQuota | None:
    named = reader.name(item, path)
    if named is None:
        return None
    spec = reader.mapping(item.get("spec"), (*path, "spec"), "spec") or {}
    hard = reader.quantities(spec.get("hard"), (*path, "spec", "hard"), "quota")
    scopes = reader.strings(spec.get("scopes"), (*path, "spec", "scopes"), "a quota scope")
    selector = reader.mapping(spec.get("scopeSelector"), (*path, "spec", "scopeSelector"), "scopeSelector") or {}
    requirements = []
    where = (*path, "spec", "scopeSelector", "matchExpressions")
    expressions = selector.get("matchExpressions")
    for index, raw in enumerate(expressions if isinstance(expressions, list) else []):
        expression = reader.mapping(raw, (*where, index), "a scope expression") or {}
        scope, operator = expression.get("scopeName"), expression.get("operator")
        if not isinstance(scope, str) or not isinstance(operator, str):
            reader.fail((*where, index), "a scope expression without scopeName or operator", "both", _KUBECTL_HINT)
            continue
        values = reader.strings(expression.get("values"), (*where, index, "values"), "a scope value")
        requirements.append(ScopeRequirement(scope, operator, values))
    return SnapshotQuota(named[0], named[1] or "default", hard, path, scopes, tuple(requirements))


def _namespace(reader: _Reader, item: Mapping[str, Any], path: JsonPath) -> SnapshotNamespace | None:
    named = reader.name(item, path)
    if named is None:
        return None
    labels = reader.string_map(item["metadata"].get("labels"), (*path, "metadata", "labels"), "label")
    return SnapshotNamespace(named[0], labels, path)


def _config_map(reader: _Reader, item: Mapping[str, Any], path: JsonPath) -> SnapshotConfigMap | None:
    named = reader.name(item, path)
    if named is None:
        return None
    data = reader.string_map(item.get("data"), (*path, "data"), "data entry")
    return SnapshotConfigMap(named[0], named[1] or "default", data, path, shapes.helm_release(reader, item, path))


def _cluster_policy(reader: _Reader, item: Mapping[str, Any], path: JsonPath) -> SnapshotClusterPolicy | None:
    named = reader.name(item, path)
    if named is None:
        return None
    spec = reader.mapping(item.get("spec"), (*path, "spec"), "spec") or {}
    status = reader.mapping(item.get("status"), (*path, "status"), "status") or {}

    def config_name(component: str) -> str | None:
        part = reader.mapping(spec.get(component), (*path, "spec", component), component) or {}
        config = reader.mapping(part.get("config"), (*path, "spec", component, "config"), "config") or {}
        name = config.get("name")
        return name if isinstance(name, str) and name else None

    namespace, state = status.get("namespace"), status.get("state")
    return SnapshotClusterPolicy(
        name=named[0],
        namespace=namespace if isinstance(namespace, str) and namespace else None,
        state=state if isinstance(state, str) else None,
        device_plugin_config=config_name("devicePlugin"),
        mig_config=config_name("migManager"),
        path=path,
        release=shapes.helm_release(reader, item, path),
    )


def _policy_binding(reader: _Reader, item: Mapping[str, Any], path: JsonPath) -> SnapshotPolicyBinding | None:
    named = reader.name(item, path)
    if named is None:
        return None
    spec = reader.mapping(item.get("spec"), (*path, "spec"), "spec") or {}
    policy = spec.get("policyName")
    actions = reader.strings(spec.get("validationActions"), (*path, "spec", "validationActions"), "a validation action")
    return SnapshotPolicyBinding(named[0], policy if isinstance(policy, str) else None, actions, path)


def _local_queue(reader: _Reader, item: Mapping[str, Any], path: JsonPath) -> SnapshotLocalQueue | None:
    named = reader.name(item, path)
    if named is None:
        return None
    spec = reader.mapping(item.get("spec"), (*path, "spec"), "spec") or {}
    queue = spec.get("clusterQueue")
    return SnapshotLocalQueue(named[0], named[1] or "default", queue if isinstance(queue, str) else None, path)


def snapshot_from(document: Document) -> ClusterSnapshot:
    """The records of a loaded snapshot. Raises DiagnosticError (GS020) when an object is malformed."""
    reader = _Reader(document)
    found: dict[str, list[Any]] = {kind: [] for kind in KINDS}
    builders = {
        "Node": _node,
        "Pod": _pod,
        "PriorityClass": _priority_class,
        "ResourceQuota": _quota,
        "Namespace": _namespace,
        "ConfigMap": _config_map,
        "ClusterPolicy": _cluster_policy,
        "ValidatingAdmissionPolicyBinding": _policy_binding,
        "LocalQueue": _local_queue,
        "Queue": read_queue,
        "LimitRange": shapes.check_limit_range,  # simulate reads these from the document: checked, no record
        "PersistentVolumeClaim": shapes.check_claim,
    }
    kinds: set[str] = set()
    seen: dict[tuple[str, str, str, str], JsonPath] = {}
    for item, path in _items(reader):
        kind = item.get("kind")
        if isinstance(kind, str):
            kinds.add(kind)
        if isinstance(kind, str) and kind in builders:
            shapes.check_unique(reader, seen, item, kind, path)
            record = builders[kind](reader, item, path)
            if record is not None:
                found[kind].append(record)
    if reader.problems:
        raise DiagnosticError(reader.problems)
    return ClusterSnapshot(
        file=document.file,
        nodes=tuple(sorted(found["Node"], key=lambda n: n.name)),
        pods=tuple(found["Pod"]),
        priority_classes=tuple(found["PriorityClass"]),
        quotas=tuple(found["ResourceQuota"]),
        namespaces=tuple(sorted(found["Namespace"], key=lambda n: n.name)),
        config_maps=tuple(found["ConfigMap"]),
        document=document,
        cluster_policies=tuple(sorted(found["ClusterPolicy"], key=lambda p: p.name)),
        policy_bindings=tuple(sorted(found["ValidatingAdmissionPolicyBinding"], key=lambda b: b.name)),
        local_queues=tuple(found["LocalQueue"]),
        queues=tuple(sorted(found["Queue"], key=lambda q: q.name)),
        kinds=frozenset(kinds),
    )


@paused()  # see gpustack/collector.py: records of a 13,000-node snapshot make full passes slow, and no cycles
def read_snapshot(path: str) -> ClusterSnapshot:
    """Read a snapshot file ('-' for standard input). Raises DiagnosticError, and nothing else, on bad input."""
    text = read_text(path)
    document = json_document(text, path)  # None unless json.loads reads it as the loader would
    return snapshot_from(document) if document is not None else _parsed(text, path)


@paused()
def parse_snapshot(text: str, file: str) -> ClusterSnapshot:
    return _parsed(text, file)


def _parsed(text: str, file: str) -> ClusterSnapshot:
    try:
        return snapshot_from(parse_document(text, file, positions_later=True))
    except DiagnosticError as error:
        if not several_documents(error):
            raise
    # `kubectl get ... -o yaml` outputs joined with `---`, or objects one per document: one List of them all.
    return snapshot_from(joined(text, file))


def embedded_yaml(config_map: SnapshotConfigMap, key: str, file: str) -> Any:
    """A ConfigMap value that is itself YAML (a device plugin or mig-parted config), read with the same loader."""
    text = dict(config_map.data).get(key)
    if text is None:
        return None
    try:
        return parse_document(text, f"{file}#{config_map.namespace}/{config_map.name}/{key}").data
    except DiagnosticError:
        return None

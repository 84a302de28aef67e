"""`gpustack import`: a blueprint inferred from a cluster snapshot.

Nodes are grouped into pools by what GPU Feature Discovery and the cloud put on them (the cloud node
pool, the GPU product without its -SHARED/-MIG suffixes, whole-GPU count, sharing, MIG config and taints);
nodes a provider made (a cloud node-pool or Karpenter label) become a selector pool on that label, sized by
the nodes found, since a node list would go stale the next time the provider replaces a node;
tenants come from namespaces with GPU quotas. Every inference that the labels do not pin down is written
as a `# guessed:` comment above the line it concerns, and unknown GPU products are reported (GS021) and
kept, commented out, so no node silently disappears.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gpustack.catalog import Catalog, GpuModel, load_catalog
from gpustack.cluster.configs import read_configs
from gpustack.cluster.labels import (
    COUNT,
    GPU_RESOURCE,
    MIG_STRATEGY,
    POOL_ORIGIN_LABELS,
    PROVIDER_POOL_LABELS,
    REPLICAS,
    SHARING_STRATEGY,
    is_gpu_node,
    is_system_label,
    user_taints,
)
from gpustack.cluster.snapshot import ClusterSnapshot, SnapshotNode
from gpustack.cluster.tenants import dns_label, infer_tenants
from gpustack.codes import OUT_OF_RANGE, SNAPSHOT_MIG_UNREADABLE, SNAPSHOT_NO_PRODUCT_LABEL, SNAPSHOT_UNKNOWN_PRODUCT
from gpustack.collector import paused
from gpustack.diagnostic import Diagnostic, Severity
from gpustack.names import (
    DEVICE_PLUGIN_CONFIG_LABEL,
    GFD_PRODUCT_LABEL,
    HAMI_DEVICE_PLUGIN,
    HAMI_DEVICE_PLUGIN_LABEL,
    MIG_CONFIG_LABEL,
    OPERATOR_DEVICE_PLUGIN_LABEL,
)
from gpustack.quantity import parse_quantity
from gpustack.schema import MAX_ENTRIES
from gpustack.yamlout import dump_yaml

MIG_RESOURCE_PREFIX = "nvidia.com/mig-"
_MIG_COUNT = re.compile(r"^nvidia\.com/mig-(?P<profile>[0-9]+g\.[0-9]+gb(?:\.[a-z0-9.]+)?)\.count$")
_MIG_SUFFIX = re.compile(r"-MIG-(?P<profile>[A-Za-z0-9.+]+?)(?:-SHARED)?$")
_SHARED_SUFFIX = "-SHARED"
DEFAULT_KUBERNETES = "1.33"
KUBELET_MAX_PODS = 110


@dataclass(eq=False)  # a pool is itself: compared by identity, never field by field over its nodes
class _Pool:
    """A pool being inferred: its blueprint mapping, nodes, what it advertises and what was guessed."""

    key: tuple[Any, ...]
    hint: str  # the name it would like
    nodes: list[SnapshotNode]
    gpu: dict[str, Any]
    sharing: dict[str, Any] | None
    guesses: list[str] = field(default_factory=list)
    unknown: bool = False
    name: str = ""
    provider: tuple[str, str] | None = None  # the provider's node-pool label: a selector pool
    dra: bool = False  # the GPU Operator's plugin switched off on a non-HAMi node: the DRA driver's GPUs

    def advertised(self) -> dict[str, int]:
        """nvidia.com resource -> total allocatable over the pool's nodes."""
        total: dict[str, int] = {}
        for node in self.nodes:
            for resource, _ in node.allocatable:
                if resource.startswith("nvidia.com/"):
                    total[resource] = total.get(resource, 0) + int(node.allocatable_amount(resource))
        return total


@dataclass(frozen=True)
class Import:
    text: str  # the blueprint, with comments
    data: dict[str, Any]  # the same blueprint as data (what the comments annotate)
    diagnostics: tuple[Diagnostic, ...]
    # (section, name, note): a pool's or tenant's guesses under nodePools/tenants, the whole blueprint's under ""
    # ("guessed" or "ignored" for the header's), in the order the text shows them
    notes: tuple[tuple[str, str, str], ...] = ()


def _int_label(node: SnapshotNode, key: str) -> int | None:
    value = node.label(key)
    return int(value) if value is not None and value.isdigit() else None


def _base_product(product: str) -> str:
    base = product[: -len(_SHARED_SUFFIX)] if product.upper().endswith(_SHARED_SUFFIX) else product
    return _MIG_SUFFIX.sub("", base)


def _replication(
    node: SnapshotNode, product: str, plugin_config: Mapping[str, Any] | None, guesses: list[str]
) -> dict[str, Any] | None:
    strategy = node.label(SHARING_STRATEGY)
    replicas = _int_label(node, REPLICAS) or 1
    renamed = node.allocatable_map.get(f"{GPU_RESOURCE}.shared") is not None
    sharing_config = plugin_config.get("sharing") if plugin_config is not None else None
    if isinstance(sharing_config, dict):
        for kind in ("timeSlicing", "mps"):
            block = sharing_config.get(kind)
            resources = block.get("resources") if isinstance(block, dict) else None
            if isinstance(block, dict) and isinstance(resources, list) and resources and isinstance(resources[0], dict):
                settings: dict[str, Any] = {"replicas": int(resources[0].get("replicas", replicas))}
                settings["renameByDefault"] = bool(block.get("renameByDefault", False))
                settings["failRequestsGreaterThanOne"] = bool(block.get("failRequestsGreaterThanOne", False))
                return {"strategy": "time-slicing" if kind == "timeSlicing" else "mps", kind: settings}
    if strategy in ("time-slicing", "mps") and replicas > 1:
        kind = "timeSlicing" if strategy == "time-slicing" else "mps"
        guesses.append(
            f"failRequestsGreaterThanOne: not on the node's labels (the device plugin config "
            f"'{node.label(DEVICE_PLUGIN_CONFIG_LABEL) or 'default'}' was not in the snapshot); gpustack's default"
        )
        return {"strategy": strategy, kind: {"replicas": replicas, "renameByDefault": renamed}}
    if product.upper().endswith(_SHARED_SUFFIX) or renamed:
        # GFD before v0.15 wrote no sharing-strategy label; -SHARED alone cannot tell time-slicing from MPS.
        guesses.append("time-slicing: the product ends in -SHARED but no label says time-slicing or MPS")
        return {"strategy": "time-slicing", "timeSlicing": {"replicas": max(replicas, 2), "renameByDefault": renamed}}
    return None


def _mig_groups(entries: list[Any], gpus: int) -> list[dict[str, Any]] | None:
    """mig-parted entries as blueprint MIG groups; None when they cannot be written as groups."""
    groups: list[dict[str, Any]] = []
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        devices = entry.get("devices")
        if entry.get("mig-enabled") is False and isinstance(devices, list):
            groups.append({"devices": devices, "whole": True})  # GPUs left whole beside the MIG ones
            continue
        if entry.get("mig-enabled") is not True:
            continue
        layout = entry.get("mig-devices")
        if not isinstance(layout, dict):
            return None
        indexes = list(range(gpus)) if devices == "all" else devices
        if not isinstance(indexes, list):
            return None
        groups.append({"devices": indexes, "layout": {str(k): int(v) for k, v in layout.items()}})
    return groups if any("layout" in group for group in groups) else None


def _mig_time_slicing(
    node: SnapshotNode, plugin_config: Mapping[str, Any] | None, guesses: list[str]
) -> dict[str, Any] | None:
    """mig.timeSlicing from the plugin config's replicated nvidia.com/mig-* resources, or else GFD's per-profile
    replicas labels; None where the MIG instances are not time-sliced."""
    sharing = plugin_config.get("sharing") if plugin_config is not None else None
    block = sharing.get("timeSlicing") if isinstance(sharing, dict) else None
    resources = block.get("resources") if isinstance(block, dict) else None
    if isinstance(block, dict) and isinstance(resources, list):
        replicas = [
            int(r["replicas"])
            for r in resources
            if isinstance(r, dict)
            and str(r.get("name", "")).startswith(MIG_RESOURCE_PREFIX)
            and isinstance(r.get("replicas"), int)
        ]
        if replicas:
            return {
                "replicas": max(replicas),
                "renameByDefault": bool(block.get("renameByDefault", False)),
                "failRequestsGreaterThanOne": bool(block.get("failRequestsGreaterThanOne", False)),
            }
    labelled = [
        int(value)
        for key, value in node.labels
        if key.startswith(MIG_RESOURCE_PREFIX) and key.endswith(".replicas") and value.isdigit()
    ]
    if not labelled or max(labelled) < 2:
        return None
    renamed = any(name.startswith(MIG_RESOURCE_PREFIX) and name.endswith(".shared") for name, _ in node.allocatable)
    guesses.append(
        f"mig.timeSlicing: from GFD's nvidia.com/mig-*.replicas labels (the device plugin config "
        f"'{node.label(DEVICE_PLUGIN_CONFIG_LABEL) or 'default'}' was not in the snapshot); failRequestsGreaterThanOne "
        "is gpustack's default"
    )
    return {"replicas": max(labelled), "renameByDefault": renamed}


def _mig(
    node: SnapshotNode, model: GpuModel | None, product: str, parted: dict[str, list[Any]], guesses: list[str]
) -> tuple[dict[str, Any] | None, int | None]:
    """MIG sharing and the node's whole-GPU count where MIG decides it (single strategy counts slices)."""
    strategy = node.label(MIG_STRATEGY)
    config = node.label(MIG_CONFIG_LABEL)
    if strategy not in ("single", "mixed") or config == "all-disabled":
        return None, None
    count = _int_label(node, COUNT)
    if strategy == "single":
        match = _MIG_SUFFIX.search(product)
        if match is None:
            return None, None
        profile = match["profile"]
        known = model.mig.profile(profile) if model is not None and model.mig is not None else None
        per_gpu = known.max_count if known is not None else 1
        if config is not None and config in parted and count is not None:
            groups = _mig_groups(parted[config], count)
            if groups is not None and len(groups) == 1 and "layout" in groups[0]:
                per_gpu = groups[0]["layout"].get(profile, per_gpu)
        whole = count // per_gpu if count is not None and per_gpu else None
        guesses.append(
            f"gpu.count: {whole} whole GPUs, from {count} MIG devices of {profile} at {per_gpu} per GPU "
            "(under the single strategy GFD counts slices)"
        )
        return {"strategy": "mig", "mig": {"strategy": "single", "layout": {profile: per_gpu}}}, whole
    if count is not None and config is not None and config in parted:
        groups = _mig_groups(parted[config], count)
        if groups is not None:
            if len(groups) == 1 and "layout" in groups[0] and groups[0]["devices"] == list(range(count)):
                return {"strategy": "mig", "mig": {"strategy": "mixed", "layout": groups[0]["layout"]}}, None
            return {"strategy": "mig", "mig": {"strategy": "mixed", "groups": groups}}, None
    totals = {
        match["profile"]: int(value)
        for key, value in node.labels
        if (match := _MIG_COUNT.match(key)) is not None and value.isdigit()
    }
    if count and totals and all(total % count == 0 for total in totals.values()):
        guesses.append(
            f"MIG layout: the same on every GPU, from the node's MIG device counts divided by its {count} GPUs "
            f"(the mig-parted config '{config}' was not in the snapshot)"
        )
        layout = {profile: total // count for profile, total in sorted(totals.items())}
        return {"strategy": "mig", "mig": {"strategy": "mixed", "layout": layout}}, None
    return {"unreadable-mig": config or "unnamed"}, None


def _node_pool(
    node: SnapshotNode,
    catalog: Catalog,
    plugin_configs: dict[str, Mapping[str, Any]],
    parted: dict[str, list[Any]],
) -> _Pool:
    guesses: list[str] = []
    product = node.label(GFD_PRODUCT_LABEL) or ""
    base = _base_product(product) if product else ""
    model = catalog.resolve(base) if base else None
    count = _int_label(node, COUNT)
    sharing: dict[str, Any] | None
    if node.label(HAMI_DEVICE_PLUGIN_LABEL) == HAMI_DEVICE_PLUGIN:
        sharing = {"strategy": "hami"}
        guesses.append("HAMi settings: not on the node's labels; HAMi's defaults")
    else:
        sharing, whole = _mig(node, model, product, parted, guesses)
        if whole is not None:
            count = whole
        plugin_config = plugin_configs.get(node.label(DEVICE_PLUGIN_CONFIG_LABEL) or "")
        if sharing is None:
            sharing = _replication(node, product, plugin_config, guesses)
        elif isinstance(sharing.get("mig"), dict) and sharing["mig"].get("strategy") == "mixed":
            sliced = _mig_time_slicing(node, plugin_config, guesses)
            if sliced is not None:
                sharing["mig"]["timeSlicing"] = sliced
    if count is None:
        allocatable = int(node.allocatable_amount(GPU_RESOURCE))
        replicas = _int_label(node, REPLICAS) or 1
        count = max(allocatable // replicas, 1)
        guesses.append(f"gpu.count: no {COUNT} label; {count} from the node's allocatable {GPU_RESOURCE}")
    model_name = model.key if model is not None else base
    if not product:
        guesses.append(f"gpu.model: no {GFD_PRODUCT_LABEL} label on {node.name}")
    # gpustack switches the operator's plugin off on HAMi pools (HAMi's label says so) and on DRA pools.
    dra = node.label(OPERATOR_DEVICE_PLUGIN_LABEL) == "false" and sharing != {"strategy": "hami"}
    if dra:
        guesses.append(f"allocation: dra, since {OPERATOR_DEVICE_PLUGIN_LABEL}=false and no HAMi label")
    cloud = next(((key, node.label(key)) for key in POOL_ORIGIN_LABELS if node.label(key)), None)
    provider = next(((key, value) for key in PROVIDER_POOL_LABELS if (value := node.label(key))), None)
    hint = (
        dns_label(cloud[1] or "", "pool")
        if cloud is not None
        else dns_label(model_name or "gpu", "gpu") + _sharing_suffix(sharing)
    )
    key = (
        cloud,
        provider,
        model_name,
        count,
        repr(sharing),
        node.label(MIG_CONFIG_LABEL),
        tuple(user_taints(node)),
        dra,
    )
    return _Pool(
        key=key,
        hint=hint,
        nodes=[node],
        gpu={"model": model_name or "unknown", "count": max(min(count, 16), 1)},
        sharing=sharing,
        guesses=guesses,
        unknown=model is None,
        provider=provider,
        dra=dra,
    )


def _sharing_suffix(sharing: dict[str, Any] | None) -> str:
    if sharing is None:
        return ""
    strategy = sharing.get("strategy")
    if strategy == "time-slicing":
        return f"-ts{sharing['timeSlicing']['replicas']}"
    if strategy == "mps":
        return f"-mps{sharing['mps']['replicas']}"
    return f"-{strategy}" if strategy else "-mig"


def _name_pools(pools: Iterable[_Pool]) -> None:
    """Each pool its hint, or the hint with the next free -N: one pass, each hint's counter only ever goes up, so
    n pools of one hint cost n names tried, not n squared (N7)."""
    taken: set[str] = set()
    counters: dict[str, int] = {}
    for pool in pools:
        name = pool.hint
        counter = counters.get(pool.hint, 2)
        while name in taken:
            suffix = f"-{counter}"
            name = pool.hint[: 63 - len(suffix)] + suffix
            counter += 1
        counters[pool.hint] = counter
        taken.add(name)
        pool.name = name


def _common_labels(nodes: Iterable[SnapshotNode]) -> dict[str, str]:
    nodes = list(nodes)
    common = {k: v for k, v in nodes[0].labels if not is_system_label(k)}
    for node in nodes[1:]:
        theirs = node.label_map
        common = {k: v for k, v in common.items() if theirs.get(k) == v}
    return dict(sorted(common.items()))


def _smallest(nodes: Iterable[SnapshotNode], resource: str) -> str | None:
    found = [(parse_quantity(text), text) for node in nodes if (text := node.allocatable_map.get(resource))]
    return min(found)[1] if found else None


def _pool_data(pool: _Pool) -> dict[str, Any]:
    data: dict[str, Any] = {"name": pool.name, "gpu": pool.gpu}
    if pool.provider is None:
        data["nodes"] = [n.name for n in pool.nodes]
    else:
        data["selector"] = {"matchLabels": dict([pool.provider])}
        data["count"] = len(pool.nodes)
    cpu, memory = _smallest(pool.nodes, "cpu"), _smallest(pool.nodes, "memory")
    if cpu is not None or memory is not None:
        data["nodeResources"] = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    labels = _common_labels(pool.nodes)
    if labels:
        data["labels"] = labels
    taints = user_taints(pool.nodes[0])
    if taints:
        data["taints"] = [
            {"key": t.key, **({"value": t.value} if t.value is not None else {}), "effect": t.effect} for t in taints
        ]
    slots = sorted({int(n.allocatable_amount("pods")) for n in pool.nodes if n.allocatable_map.get("pods")})
    if slots and slots != [KUBELET_MAX_PODS]:
        data["maxPods"] = slots[0]
        if len(slots) > 1:
            pool.guesses.append(f"maxPods: the nodes allow {', '.join(map(str, slots))} pods; the smallest")
    cordoned = [n.name for n in pool.nodes if n.unschedulable]
    if cordoned and pool.provider is None:
        data["cordoned"] = cordoned
    elif cordoned:
        note = f"cordoned now: {', '.join(cordoned)} (a selector pool names no nodes, so none is listed)"
        if note not in pool.guesses:
            pool.guesses.append(note)
    if pool.dra:
        data["allocation"] = "dra"
    if pool.sharing is not None and "unreadable-mig" not in pool.sharing:
        data["sharing"] = pool.sharing
    return data


def _kubernetes_version(snapshot: ClusterSnapshot) -> tuple[str, str | None]:
    minors = sorted(
        (int(m[1]), int(m[2]))
        for node in snapshot.nodes
        if node.kubelet_version and (m := re.match(r"v?(\d+)\.(\d+)", node.kubelet_version))
    )
    if not minors:
        return DEFAULT_KUBERNETES, "kubernetes.version: no node reports its kubelet version"
    return f"{minors[0][0]}.{minors[0][1]}", None


def _stack_guess(pools: list[_Pool], catalog: Catalog) -> str | None:
    """Why the cluster runs the standalone device plugin, not the GPU Operator; None where nothing says so.

    The operator's MIG manager labels every MIG-capable GPU node with a `nvidia.com/mig.config` (its default
    config where none was chosen), so MIG-capable nodes none of which carries one have no MIG manager.
    """
    capable = [
        node
        for pool in pools
        if (model := catalog.resolve(pool.gpu["model"])) is not None and model.mig is not None
        for node in pool.nodes
    ]
    nodes = [node for pool in pools for node in pool.nodes]
    if not capable or any(node.label(MIG_CONFIG_LABEL) is not None for node in nodes):
        return None
    return (
        f"MIG-capable nodes ({', '.join(n.name for n in capable[:3])}) carry no {MIG_CONFIG_LABEL} label, "
        "so no GPU Operator MIG manager runs"
    )


@paused()  # see gpustack/collector.py
def import_snapshot(snapshot: ClusterSnapshot, name: str, catalog: Catalog | None = None) -> Import:
    """The blueprint a snapshot implies, with `# guessed:` comments and GS021/GS022 diagnostics."""
    catalog = catalog if catalog is not None else load_catalog()
    configs = read_configs(snapshot)
    by_key: dict[tuple[Any, ...], _Pool] = {}  # in first-node order: a pool's place is its first node's
    for node in snapshot.nodes:
        if not is_gpu_node(node):
            continue
        candidate = _node_pool(node, catalog, configs.plugin, configs.parted)
        same = by_key.get(candidate.key)
        if same is not None:
            same.nodes.append(node)
        else:
            by_key[candidate.key] = candidate
    pools = list(by_key.values())
    _name_pools(pools)
    diagnostics = [d for pool in pools for d in _pool_diagnostics(pool, snapshot, catalog)]
    known: list[_Pool] = []
    left_out: list[_Pool] = []  # written commented out, after the blueprint
    for pool in pools:
        readable = not pool.unknown and (pool.sharing is None or "unreadable-mig" not in pool.sharing)
        (known if readable else left_out).append(pool)
    if len(known) > MAX_ENTRIES:  # the blueprint would be refused (GS106): say so before writing it all out
        return Import("", {}, (*diagnostics, _too_many_pools(snapshot, len(known))))
    advertised = {p.name: p.advertised() for p in known}
    tenants, tenant_notes = infer_tenants(snapshot, advertised, {p.name: {n.name for n in p.nodes} for p in known})
    version, version_guess = _kubernetes_version(snapshot)
    spec: dict[str, Any] = {"kubernetes": {"version": version}}
    stack_guess = _stack_guess(known, catalog)
    if stack_guess is not None:
        spec["stack"] = "device-plugin"
    spec["nodePools"] = [_pool_data(p) for p in known]
    if tenants:
        spec["tenants"] = tenants
    data = {
        "apiVersion": "gpustack.io/v1alpha1",
        "kind": "ClusterBlueprint",
        "metadata": {"name": dns_label(name, "imported"), "description": f"Imported from {snapshot.file}."},
        "spec": spec,
    }
    notes = {("nodePools", p.name): p.guesses for p in known}
    notes.update({("tenants", t): g for t, g in tenant_notes.items()})
    header = [
        f"# Imported by `gpustack import` from {snapshot.file}: {len(snapshot.nodes)} nodes, "
        f"{sum(len(p.nodes) for p in pools)} with GPUs, in {len(pools)} pools.",
        "# Lines marked 'guessed' were inferred, not read: check them before you apply.",
    ]
    if version_guess:
        header.append(f"# guessed: {version_guess}; {DEFAULT_KUBERNETES}")
    if stack_guess is not None:
        header.append(f"# guessed: stack: device-plugin: {stack_guess}")
    header += [f"# guessed: {note}" for note in configs.guesses]
    header += [f"# ignored: {note}" for note in configs.ignored]
    listed = [
        ("", kind, line.removeprefix(f"# {kind}: "))
        for line in header
        for kind in ("guessed", "ignored")
        if line.startswith(f"# {kind}: ")
    ]
    listed += [(section, name, note) for (section, name), found in notes.items() for note in found]
    if not spec["nodePools"]:
        return Import("", data, tuple(diagnostics), tuple(listed))
    text = _render(data, notes, header, left_out)
    return Import(text, data, tuple(diagnostics), tuple(listed))


def _pool_diagnostics(pool: _Pool, snapshot: ClusterSnapshot, catalog: Catalog) -> list[Diagnostic]:
    node = pool.nodes[0]
    names = ", ".join(n.name for n in pool.nodes)
    if pool.unknown:
        product = node.label(GFD_PRODUCT_LABEL)
        if product is None:
            return [
                _diagnostic(
                    SNAPSHOT_NO_PRODUCT_LABEL,
                    f"node {node.name} has GPUs but no {GFD_PRODUCT_LABEL} label; pool '{pool.name}' ({names}) is "
                    "written commented out",
                    snapshot,
                    (*node.path, "metadata", "labels"),
                    "run GPU Feature Discovery on the node (labels longer than 63 characters are dropped by NFD), "
                    "or set gpu.model by hand and uncomment the pool",
                )
            ]
        suggestions = catalog.suggest(_base_product(product))
        did_you_mean = f"; nearest known: {', '.join(suggestions)}" if suggestions else ""
        return [
            _diagnostic(
                SNAPSHOT_UNKNOWN_PRODUCT,
                f"unknown GPU product '{product}' on {names}: expected a model in gpustack's catalog "
                f"(gpustack models){did_you_mean}; pool '{pool.name}' is written commented out",
                snapshot,
                (*node.path, "metadata", "labels", GFD_PRODUCT_LABEL),
                "set gpu.model to the catalog key of this GPU and uncomment the pool",
            )
        ]
    if pool.sharing is not None and "unreadable-mig" in pool.sharing:
        config = pool.sharing["unreadable-mig"]
        return [
            _diagnostic(
                SNAPSHOT_MIG_UNREADABLE,
                f"the MIG layout of {names} (mig.config '{config}') cannot be read from the labels: expected the "
                f"same layout on every GPU, or the mig-parted ConfigMap; pool '{pool.name}' is left out",
                snapshot,
                (*node.path, "metadata", "labels"),
                "add the mig-parted ConfigMap (kubectl get configmap -n gpu-operator -o yaml) to the snapshot",
            )
        ]
    return []


def _too_many_pools(snapshot: ClusterSnapshot, pools: int) -> Diagnostic:
    return Diagnostic(
        OUT_OF_RANGE,
        Severity.ERROR,
        f"the snapshot's GPU nodes make {pools} pools: a blueprint holds at most {MAX_ENTRIES}",
        snapshot.span(("items",)),
        ("items",),
        "import part of the cluster (kubectl get nodes -l ... for a snapshot of fewer nodes); nodes that differ only "
        "in a taint or label of their own make a pool each",
    )


def _diagnostic(code: str, message: str, snapshot: ClusterSnapshot, path: Any, hint: str) -> Diagnostic:
    return Diagnostic(code, Severity.WARNING, message, snapshot.span(tuple(path)), tuple(path), hint)


def _one_line(text: str) -> str:
    """Comment text from the snapshot, kept on its line: a line break in a label value must not start YAML."""
    return "".join(char if char.isprintable() else "?" for char in text)


def _render(
    data: dict[str, Any], notes: Mapping[tuple[str, str], list[str]], header: list[str], left_out: list[_Pool]
) -> str:
    """The blueprint as YAML, with each pool's and tenant's guesses as comments above its `- name:` line."""
    lines: list[str] = [_one_line(text) for text in header]
    section = ""
    for line in dump_yaml(data).splitlines():
        stripped = line.strip()
        if line.startswith("  ") and not line.startswith("   ") and stripped.endswith(":"):
            section = stripped[:-1]
        if stripped.startswith("- name: "):
            name = stripped.removeprefix("- name: ").strip("'\"")
            indent = line[: len(line) - len(line.lstrip())]
            lines += [f"{indent}# guessed: {_one_line(note)}" for note in notes.get((section, name), [])]
        lines.append(line)
    for pool in left_out:
        lines += ["", f"# pool '{pool.name}' left out (see the import warnings); uncomment once fixed:"]
        lines += [f"#   {line}" for line in dump_yaml([_pool_data(pool)]).splitlines()]
    return "\n".join(lines) + "\n"

"""`gpustack import`: a blueprint inferred from a cluster snapshot.

Nodes are grouped into pools by what GPU Feature Discovery and the cloud put on them (the cloud node
pool, the GPU product without its -SHARED/-MIG suffixes, whole-GPU count, sharing, MIG config and taints);
nodes a provider made (a cloud node-pool or Karpenter label) become a selector pool on that label, sized by
the nodes found, since a node list would go stale the next time the provider replaces a node;
tenants come from namespaces with GPU quotas. Every inference that the labels do not pin down is written
as a `# guessed:` comment above the line it concerns. Names older drivers wrote are read as today's
(data/gfd-legacy.yaml); a node still not understood (an unknown product, GS021; no product label, GS022; an
unreadable MIG layout, GS023) gets a pool of its own without what was not understood, so no node disappears and
one node never stops the import. The blueprint is validated as it is made: a pool the validator refuses loses its
sharing, then its gpu, and only then its place (written commented out).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gpustack.catalog import Catalog, load_catalog
from gpustack.cluster.configs import Configs, operator_namespace, read_configs
from gpustack.cluster.labels import (
    COUNT,
    GPU_RESOURCE,
    POOL_ORIGIN_LABELS,
    PROVIDER_POOL_LABELS,
    REPLICAS,
    is_gpu_node,
    is_system_label,
    model_by_family,
    user_taints,
)
from gpustack.cluster.sharing import (
    base_product,
    int_label,
    mig_sharing,
    mig_time_slicing,
    plugin_flags,
    replication,
)
from gpustack.cluster.snapshot import ClusterSnapshot, SnapshotNode
from gpustack.cluster.tenants import dns_label, infer_tenants
from gpustack.codes import OUT_OF_RANGE, SNAPSHOT_MIG_UNREADABLE, SNAPSHOT_NO_PRODUCT_LABEL, SNAPSHOT_UNKNOWN_PRODUCT
from gpustack.collector import paused
from gpustack.diagnostic import Diagnostic, Severity
from gpustack.model import DEFAULT_DEVICE_PLUGIN_RELEASE, DEFAULT_GPU_OPERATOR_NAMESPACE, DEFAULT_GPU_OPERATOR_RELEASE
from gpustack.names import (
    DEVICE_PLUGIN_CONFIG_LABEL,
    GFD_PRODUCT_LABEL,
    HAMI_DEVICE_PLUGIN,
    HAMI_DEVICE_PLUGIN_LABEL,
    MIG_CONFIG_LABEL,
    OPERATOR_DEVICE_PLUGIN_LABEL,
    TENANT_LABEL,
)
from gpustack.quantity import parse_quantity
from gpustack.schema import MAX_ENTRIES
from gpustack.validation import validate_text
from gpustack.yamlout import dump_yaml

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
    config_name: str | None = None  # the nodes' nvidia.com/device-plugin.config: the cluster's name, kept
    flags: dict[str, Any] = field(default_factory=dict)  # that config's flags, by the blueprint's names: kept

    @property
    def served(self) -> bool:
        """Whether the NVIDIA device plugin (with its config) serves the pool: not HAMi's, not DRA's, understood."""
        return not self.unknown and not self.dra and (self.sharing or {}).get("strategy") != "hami"

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


def _node_pool(
    node: SnapshotNode,
    catalog: Catalog,
    plugin_configs: dict[str, Mapping[str, Any]],
    parted: dict[str, list[Any]],
) -> _Pool:
    guesses: list[str] = []
    product = node.label(GFD_PRODUCT_LABEL) or ""
    base = base_product(product) if product else ""
    model = catalog.resolve(base) if base else model_by_family(catalog, node)
    if not product and model is not None:
        guesses.append(
            f"gpu.model: {model.key}, the one catalog GPU of the node's gpu.family and gpu.memory labels "
            f"(no {GFD_PRODUCT_LABEL} label on {node.name})"
        )
    count = int_label(node, COUNT)
    sharing: dict[str, Any] | None
    flags: dict[str, Any] = {}
    if node.label(HAMI_DEVICE_PLUGIN_LABEL) == HAMI_DEVICE_PLUGIN:
        sharing = {"strategy": "hami"}
        gpus, advertised = int_label(node, COUNT), int(node.allocatable_amount(GPU_RESOURCE))
        if gpus and advertised and advertised % gpus == 0:  # HAMi's plugin advertises count x splitCount
            sharing["hami"] = {"splitCount": advertised // gpus}
            guesses.append("HAMi memoryScaling and coreScaling: not on the node's labels; HAMi's defaults")
        else:
            guesses.append("HAMi settings: not on the node's labels; HAMi's defaults")
    else:
        sharing, whole = mig_sharing(node, model, product, parted, guesses)
        if whole is not None:
            count = whole
        plugin_config = plugin_configs.get(node.label(DEVICE_PLUGIN_CONFIG_LABEL) or "")
        flags = plugin_flags(plugin_config, node.label(DEVICE_PLUGIN_CONFIG_LABEL) or "", guesses)
        if sharing is None:
            sharing = replication(node, product, plugin_config, guesses)
        elif isinstance(sharing.get("mig"), dict) and sharing["mig"].get("strategy") == "mixed":
            sliced = mig_time_slicing(node, plugin_config, guesses, sharing["mig"])
            if sliced is not None:
                sharing["mig"]["timeSlicing"] = sliced
    if count is None:
        allocatable = int(node.allocatable_amount(GPU_RESOURCE))
        replicas = int_label(node, REPLICAS) or 1
        count = max(allocatable // replicas, 1)
        guesses.append(f"gpu.count: no {COUNT} label; {count} from the node's allocatable {GPU_RESOURCE}")
    model_name = model.key if model is not None else base
    if model is None:
        what = f"GPU product '{product}' is not in gpustack's catalog" if product else f"no {GFD_PRODUCT_LABEL} label"
        guesses.append(f"gpu: not understood ({what} on {node.name}); a pool of its own, without gpu, until it is set")
    mig_config = node.label(MIG_CONFIG_LABEL)
    mig = sharing.get("mig") if sharing is not None else None
    if isinstance(mig, dict) and mig_config is not None and mig_config != "all-disabled":
        mig["configName"] = mig_config  # kept: a new name would have the MIG manager act on the node again
    # gpustack switches the operator's plugin off on HAMi pools (HAMi's label says so) and on DRA pools.
    dra = node.label(OPERATOR_DEVICE_PLUGIN_LABEL) == "false" and (sharing or {}).get("strategy") != "hami"
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
        node.label(DEVICE_PLUGIN_CONFIG_LABEL),
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
        config_name=node.label(DEVICE_PLUGIN_CONFIG_LABEL) or None,
        flags=flags,
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


def _pool_data(pool: _Pool, cluster_flags: Mapping[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = {"name": pool.name}
    if not pool.unknown:  # a GPU not understood: its node has a pool, the pool no gpu until one is set by hand
        data["gpu"] = pool.gpu
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
    if pool.dra and not pool.unknown:
        data["allocation"] = "dra"
    if pool.sharing is not None and "unreadable-mig" not in pool.sharing and not pool.unknown:
        data["sharing"] = pool.sharing
    own = {"flags": pool.flags} if pool.flags and pool.flags != cluster_flags else {}
    if pool.served and pool.config_name is not None:
        # kept: a new name, or a config without the flags the nodes run with, would restart the plugin
        data["devicePlugin"] = {**own, "configName": pool.config_name}
    return data


def _cluster_flags(pools: list[_Pool]) -> dict[str, Any]:
    """The flags every pool the device plugin serves with a config shares: written once, as spec.devicePlugin.flags."""
    configured = [pool.flags for pool in pools if pool.served and pool.config_name is not None]
    return configured[0] if configured and all(flags == configured[0] for flags in configured) else {}


def _kubernetes_version(snapshot: ClusterSnapshot) -> tuple[str, str | None]:
    minors = sorted(
        (int(m[1]), int(m[2]))
        for node in snapshot.nodes
        if node.kubelet_version and (m := re.match(r"v?(\d+)\.(\d+)", node.kubelet_version))
    )
    if not minors:
        return DEFAULT_KUBERNETES, "kubernetes.version: no node reports its kubelet version"
    return f"{minors[0][0]}.{minors[0][1]}", None


def _stack_guess(snapshot: ClusterSnapshot, pools: list[_Pool], catalog: Catalog, standalone: str | None) -> str | None:
    """Why the cluster runs the standalone device plugin, not the GPU Operator; None where nothing says so, or where
    a ClusterPolicy says the operator runs (a second plugin beside its own would advertise the same GPUs).

    The standalone chart's configs in its namespace say it is installed (the operator puts nothing there). The
    operator's MIG manager labels every MIG-capable GPU node with a `nvidia.com/mig.config` (its default config where
    none was chosen), so MIG-capable nodes none of which carries one have no MIG manager.
    """
    if snapshot.cluster_policies:
        return None
    if standalone is not None:
        return f"the device plugin's configs are in ConfigMap {standalone}, the standalone chart's namespace"
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
    for pool in pools:
        if pool.sharing is not None and "unreadable-mig" in pool.sharing:
            _degrade(pool, f"the MIG layout (mig.config '{pool.sharing['unreadable-mig']}')")
    if len(pools) > MAX_ENTRIES:  # the blueprint would be refused (GS106): say so before writing it all out
        return Import("", {}, (*diagnostics, _too_many_pools(snapshot, len(pools))))
    known = list(pools)
    left_out: list[_Pool] = []  # the last resort, written commented out after the blueprint
    refused: dict[str, int] = {}  # tenant -> 1: written without its scheduler, 2: left out
    data, tenant_notes, unplaced, stack_guess, version_guess = _assemble(
        snapshot, name, known, catalog, refused, configs
    )
    for _ in range(3):  # a pool that does not validate loses its sharing, then its gpu, then its place
        failing, tenants = _failing(data)
        if not failing and not tenants:
            break
        for tenant in tenants:  # a tenant that does not validate loses its scheduler, then its place
            who = data["spec"]["tenants"][tenant]["name"]
            refused[who] = refused.get(who, 0) + 1
        for pool in [known[index] for index in failing]:
            if pool.sharing is not None:
                _degrade(pool, "the sharing the labels imply")
            elif not pool.unknown:
                pool.unknown = True
                pool.guesses.append(
                    f"gpu: {pool.gpu['count']} x {pool.gpu['model']} does not validate; left unset until it is set"
                )
            else:
                known.remove(pool)
                left_out.append(pool)
        data, tenant_notes, unplaced, stack_guess, version_guess = _assemble(
            snapshot, name, known, catalog, refused, configs
        )
    spec = data["spec"]
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
    header += [f"# ignored: tenant {who}: does not validate; left out" for who, n in refused.items() if n >= 2]
    header += [
        f"# ignored: namespace {namespace}: a tenant's (a GPU quota or the {TENANT_LABEL} label), but no quota "
        "grants it a GPU and no GPU pod runs there, so which pools it holds cannot be told; add the tenant by hand"
        for namespace in unplaced
    ]
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


def _degrade(pool: _Pool, what: str) -> None:
    pool.guesses.append(f"sharing: {what} was not understood; the pool is written without sharing until it is set")
    pool.sharing = None


def _failing(data: dict[str, Any]) -> tuple[list[int], list[int]]:
    """The indexes of the nodePools and of the tenants the blueprint validator refuses."""
    check = validate_text(dump_yaml(data), "<imported blueprint>")
    found: dict[str, set[int]] = {"nodePools": set(), "tenants": set()}
    for diagnostic in check.diagnostics:
        match = re.match(r"\$\.spec\.(nodePools|tenants)\[(\d+)\]", diagnostic.json_path or "")
        if diagnostic.severity is Severity.ERROR and match is not None:
            found[match[1]].add(int(match[2]))
    return sorted(found["nodePools"]), sorted(found["tenants"])


def _assemble(
    snapshot: ClusterSnapshot,
    name: str,
    known: list[_Pool],
    catalog: Catalog,
    refused: Mapping[str, int],
    configs: Configs,
) -> tuple[dict[str, Any], dict[str, list[str]], list[str], str | None, str | None]:
    """The blueprint of these pools, their tenants' guesses, the tenant namespaces nothing places in a pool, and the
    stack and version guesses; a tenant the validator refused once is written without its scheduler, twice not at
    all (a header note says so)."""
    advertised = {p.name: p.advertised() for p in known if not p.unknown}
    tenants, tenant_notes, unplaced = infer_tenants(
        snapshot, advertised, {p.name: {n.name for n in p.nodes} for p in known}
    )
    for tenant in tenants:
        if refused.get(tenant["name"]) == 1 and tenant.pop("scheduler", None) is not None:
            tenant.pop("volcano", None)  # its settings go with it (the schema allows them with volcano only)
            tenant_notes.setdefault(tenant["name"], []).append("scheduler: does not validate; the default")
    tenants = [tenant for tenant in tenants if refused.get(tenant["name"], 0) < 2]
    version, version_guess = _kubernetes_version(snapshot)
    spec: dict[str, Any] = {"kubernetes": {"version": version}}
    stack_guess = _stack_guess(snapshot, known, catalog, configs.standalone)
    if stack_guess is not None:
        spec["stack"] = "device-plugin"
        if configs.standalone_release not in (None, DEFAULT_DEVICE_PLUGIN_RELEASE):
            spec["devicePlugin"] = {"releaseName": configs.standalone_release}  # Helm upgrades it, installs none
    operator = operator_namespace(snapshot)
    if stack_guess is None and operator is not None and operator != DEFAULT_GPU_OPERATOR_NAMESPACE:
        spec["gpuOperator"] = {"namespace": operator}  # where it runs (OpenShift: nvidia-gpu-operator), kept
    if stack_guess is None and configs.operator_release not in (None, DEFAULT_GPU_OPERATOR_RELEASE):
        spec.setdefault("gpuOperator", {})["releaseName"] = configs.operator_release
    flags = _cluster_flags(known)
    if flags:
        spec.setdefault("devicePlugin", {})["flags"] = flags
    spec["nodePools"] = [_pool_data(p, flags) for p in known]
    if tenants:
        spec["tenants"] = tenants
    data = {
        "apiVersion": "gpustack.io/v1alpha1",
        "kind": "ClusterBlueprint",
        "metadata": {"name": dns_label(name, "imported"), "description": f"Imported from {snapshot.file}."},
        "spec": spec,
    }
    return data, tenant_notes, unplaced, stack_guess, version_guess


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
                    "written without gpu",
                    snapshot,
                    (*node.path, "metadata", "labels"),
                    "run GPU Feature Discovery on the node (labels longer than 63 characters are dropped by NFD), "
                    "or set the pool's gpu.model by hand",
                )
            ]
        suggestions = catalog.suggest(base_product(product))
        did_you_mean = f"; nearest known: {', '.join(suggestions)}" if suggestions else ""
        return [
            _diagnostic(
                SNAPSHOT_UNKNOWN_PRODUCT,
                f"unknown GPU product '{product}' on {names}: expected a model in gpustack's catalog "
                f"(gpustack models){did_you_mean}; pool '{pool.name}' is written without gpu",
                snapshot,
                (*node.path, "metadata", "labels", GFD_PRODUCT_LABEL),
                "set the pool's gpu.model to the catalog key of this GPU",
            )
        ]
    if pool.sharing is not None and "unreadable-mig" in pool.sharing:
        config = pool.sharing["unreadable-mig"]
        return [
            _diagnostic(
                SNAPSHOT_MIG_UNREADABLE,
                f"the MIG layout of {names} (mig.config '{config}') cannot be read from the labels: expected the "
                f"same layout on every GPU, or the mig-parted ConfigMap; pool '{pool.name}' is written without sharing",
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
    cluster_flags = data["spec"].get("devicePlugin", {}).get("flags", {})
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
        lines += [f"#   {line}" for line in dump_yaml([_pool_data(pool, cluster_flags)]).splitlines()]
    return "\n".join(lines) + "\n"

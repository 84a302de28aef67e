"""Where a cluster's device-plugin and mig-parted configs live, and reading them from there only.

A tenant may create ConfigMaps in its own namespaces, and kubectl lists them by namespace, so a config that any
ConfigMap could supply would let a namespace that sorts before the operator's replace the operator's (N6). A config
is therefore read only from a namespace the GPU Operator or the standalone device plugin runs in, which only a
cluster admin writes to, and from the ConfigMap those read where the snapshot says which:

- The GPU Operator's ClusterPolicy (cluster-scoped: only an admin writes it) names the operator's namespace
  (`status.namespace`), its device plugin's ConfigMap (`spec.devicePlugin.config.name`) and its MIG manager's
  (`spec.migManager.config.name`; the operator's own `default-mig-parted-config` where unset). With one in the
  snapshot, those ConfigMaps are the operator's configs, and no other ConfigMap of its namespace is.
- Without one, the operator's namespace is gpustack's default (`gpu-operator`, NVIDIA's documented one too), and the
  ConfigMaps gpustack writes there are read as facts (`gpustack-device-plugin-config`, `gpustack-mig-parted-config`,
  and the operator's `default-mig-parted-config`); any other ConfigMap of that namespace is read as a guess, noted.
- The standalone device plugin's chart installs into `nvidia-device-plugin` (gpustack's default and the chart's
  documented namespace) and names its ConfigMap `<release>-configs`: `nvidia-device-plugin-configs` as gpustack
  installs it, read as a fact; any other ConfigMap of that namespace is read as a guess, noted.
- A ConfigMap in any other namespace is never read. One that holds what looks like a config is listed as ignored.

Facts are read before guesses; a key that two ConfigMaps define differently keeps the first and is noted.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from gpustack.cluster.snapshot import ClusterSnapshot, SnapshotClusterPolicy, SnapshotConfigMap, embedded_yaml
from gpustack.model import DEFAULT_DEVICE_PLUGIN_NAMESPACE, DEFAULT_GPU_OPERATOR_NAMESPACE, DEFAULT_MIG_CONFIGMAP

# What the charts and the operator name their ConfigMaps where gpustack installs them (compile/gpu_operator.py's
# devicePlugin.config.name, the standalone chart's `<fullname>-configs` for gpustack's release, the operator's
# default MIG config when its ClusterPolicy names none).
OPERATOR_PLUGIN_CONFIG_MAP = "gpustack-device-plugin-config"
STANDALONE_PLUGIN_CONFIG_MAP = "nvidia-device-plugin-configs"
OPERATOR_DEFAULT_MIG_CONFIG_MAP = "default-mig-parted-config"
SNAPSHOT_HINT = "add `kubectl get clusterpolicies -o yaml` to the snapshot"
_SHOWN = 3  # ignored ConfigMaps named in the note; the rest are counted


@dataclass(frozen=True)
class Configs:
    """The configs the cluster's own device plugin and MIG manager read, and what was guessed or ignored on the way."""

    plugin: dict[str, Mapping[str, Any]]  # config key (the nvidia.com/device-plugin.config value) -> its config
    parted: dict[str, list[Any]]  # mig-parted config name (the nvidia.com/mig.config value) -> its entries
    guesses: tuple[str, ...]  # for the blueprint's header, each a `# guessed:` line
    ignored: tuple[str, ...]  # likewise, `# ignored:` lines
    # Where the standalone device plugin's configs were read, when nothing says a GPU Operator runs (no ClusterPolicy
    # in the snapshot): that chart is installed, so import writes stack: device-plugin
    standalone: str | None = None
    # The Helm releases the charts run as (their objects' meta.helm.sh/release-name): the operator's from its
    # ClusterPolicy, the standalone plugin's from the ConfigMap its configs were read from. Import keeps them.
    operator_release: str | None = None
    standalone_release: str | None = None


@dataclass(frozen=True)
class _Source:
    """A ConfigMap the plugin or MIG manager may read: by name (a fact) or any in an admin's namespace (a guess)."""

    namespace: str
    name: str | None  # None: every ConfigMap of the namespace, as a guess
    reader: str  # who reads it, for notes
    stated: bool = False  # named by the ClusterPolicy: its absence from the snapshot is worth a note


Entries = Callable[[str, Any], Iterator[tuple[str, Any]]]


def _plugin_config(data: Any) -> bool:
    return isinstance(data, dict) and data.get("version") == "v1" and ("sharing" in data or "flags" in data)


def _parted_configs(data: Any) -> dict[str, Any] | None:
    configs = data.get("mig-configs") if isinstance(data, dict) else None
    return configs if isinstance(configs, dict) else None


def _plugin_entries(key: str, data: Any) -> Iterator[tuple[str, Any]]:
    """A device plugin ConfigMap holds one config per key, selected by that key."""
    if _plugin_config(data):
        yield key, data


def _parted_entries(_key: str, data: Any) -> Iterator[tuple[str, Any]]:
    """A mig-parted ConfigMap holds one spec whose `mig-configs` are selected by name."""
    for name, entries in (_parted_configs(data) or {}).items():
        if isinstance(entries, list):
            yield name, entries


def _policy(snapshot: ClusterSnapshot, guesses: list[str]) -> SnapshotClusterPolicy | None:
    """The ClusterPolicy the operator acts on: it marks every other one `ignored`."""
    active = [p for p in snapshot.cluster_policies if p.state != "ignored"] or list(snapshot.cluster_policies)
    if len(active) > 1:
        guesses.append(
            f"GPU Operator: {len(active)} ClusterPolicies, none marked ignored; the configs {active[0].name} names"
        )
    return active[0] if active else None


def operator_namespace(snapshot: ClusterSnapshot) -> str | None:
    """The namespace the GPU Operator runs in, as its ClusterPolicy's status says; None where no ClusterPolicy says
    (import then keeps gpustack's default, which is NVIDIA's documented one)."""
    policy = _policy(snapshot, [])
    return policy.namespace if policy is not None else None


def _sources(snapshot: ClusterSnapshot, guesses: list[str]) -> tuple[list[_Source], list[_Source], set[str]]:
    """Where the device plugin's and the MIG manager's configs may come from, facts first, and the admins'
    namespaces they lie in."""
    policy = _policy(snapshot, guesses)
    operator = DEFAULT_GPU_OPERATOR_NAMESPACE
    if policy is not None and policy.namespace is not None:
        operator = policy.namespace
    elif policy is not None:
        guesses.append(f"GPU Operator: ClusterPolicy {policy.name} has no status.namespace; {operator} taken for it")
    standalone = DEFAULT_DEVICE_PLUGIN_NAMESPACE
    plugin: list[_Source] = []
    parted: list[_Source] = []
    if policy is not None:
        who = f"ClusterPolicy {policy.name}"
        if policy.device_plugin_config is not None:
            plugin.append(_Source(operator, policy.device_plugin_config, f"{who}'s device plugin", stated=True))
        mig_map = policy.mig_config or OPERATOR_DEFAULT_MIG_CONFIG_MAP
        parted.append(_Source(operator, mig_map, f"{who}'s MIG manager", stated=policy.mig_config is not None))
    else:
        plugin.append(_Source(operator, OPERATOR_PLUGIN_CONFIG_MAP, "the GPU Operator's device plugin"))
        for name in (DEFAULT_MIG_CONFIGMAP, OPERATOR_DEFAULT_MIG_CONFIG_MAP):
            parted.append(_Source(operator, name, "the GPU Operator's MIG manager"))
    plugin.append(_Source(standalone, STANDALONE_PLUGIN_CONFIG_MAP, "the standalone device plugin"))
    if policy is None:  # nothing says which ConfigMap of the operator's namespace the operator reads
        plugin.append(_Source(operator, None, "the GPU Operator's device plugin"))
        parted.append(_Source(operator, None, "the GPU Operator's MIG manager"))
    plugin.append(_Source(standalone, None, "the standalone device plugin"))  # its release name is not known
    return plugin, parted, {operator, standalone}


def _place(config_map: SnapshotConfigMap) -> str:
    return f"{config_map.namespace}/{config_map.name}"


def _read(
    by_namespace: Mapping[str, list[SnapshotConfigMap]],
    file: str,
    sources: list[_Source],
    what: str,
    entries: Entries,
    guesses: list[str],
    origin: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Key -> value over the sources in order, each ConfigMap read once; a key defined twice keeps the first (and
    `origin` says which ConfigMap, namespace/name, each key came from)."""
    found: dict[str, Any] = {}
    origin = {} if origin is None else origin
    seen: set[str] = set()
    for source in sources:
        maps = [m for m in by_namespace.get(source.namespace, ()) if source.name in (None, m.name)]
        if source.stated and not maps:
            where = f"{source.namespace}/{source.name}"
            guesses.append(f"{what}s: {source.reader} reads ConfigMap {where}, which is not in the snapshot")
        for config_map in maps:
            place = _place(config_map)
            if place in seen:
                continue
            seen.add(place)
            used = False
            for entry, _ in config_map.data:
                for key, value in entries(entry, embedded_yaml(config_map, entry, file)):
                    if key not in found:
                        found[key], origin[key], used = value, place, True
                    elif found[key] != value:
                        guesses.append(f"{what} '{key}': {origin[key]} and {place} differ; {origin[key]}'s taken")
            if used and source.name is None:
                guesses.append(
                    f"{what}s: read from ConfigMap {place} in the namespace of {source.reader}, which no "
                    f"ClusterPolicy in the snapshot names ({SNAPSHOT_HINT})"
                )
    return found


def _ignored(snapshot: ClusterSnapshot, trusted: set[str]) -> tuple[str, ...]:
    """ConfigMaps outside the admins' namespaces that hold a device plugin or mig-parted config: never read."""
    places = []
    for config_map in snapshot.config_maps:
        if config_map.namespace in trusted:
            continue
        for key, text in config_map.data:
            if ("mig-configs" in text or "version" in text) and (
                _plugin_config(data := embedded_yaml(config_map, key, snapshot.file))
                or _parted_configs(data) is not None
            ):
                places.append(_place(config_map))
                break
    if not places:
        return ()
    places.sort()
    shown = ", ".join(places[:_SHOWN]) + (f" and {len(places) - _SHOWN} more" if len(places) > _SHOWN else "")
    return (
        "device plugin or mig-parted configs in namespaces that are neither the GPU Operator's nor the device "
        f"plugin's (a tenant may write there), never read: {shown}",
    )


def read_configs(snapshot: ClusterSnapshot) -> Configs:
    """The device plugin configs and mig-parted configs the cluster's own plugin and MIG manager read."""
    guesses: list[str] = []
    plugin_sources, parted_sources, trusted = _sources(snapshot, guesses)
    by_namespace: dict[str, list[SnapshotConfigMap]] = {}
    for config_map in sorted(snapshot.config_maps, key=lambda m: (m.namespace, m.name)):
        if config_map.namespace in trusted:
            by_namespace.setdefault(config_map.namespace, []).append(config_map)
    origin: dict[str, str] = {}
    plugin = _read(
        by_namespace, snapshot.file, plugin_sources, "device plugin config", _plugin_entries, guesses, origin
    )
    parted = _read(by_namespace, snapshot.file, parted_sources, "mig-parted config", _parted_entries, guesses)
    places = sorted(place for place in origin.values() if place.startswith(f"{DEFAULT_DEVICE_PLUGIN_NAMESPACE}/"))
    standalone = places[0] if places and not snapshot.cluster_policies else None
    made_by = {_place(config_map): config_map.release for config_map in snapshot.config_maps}
    policy = _policy(snapshot, [])
    operator_release = _release(policy.release if policy is not None else None, guesses)
    standalone_release = _release(made_by.get(standalone) if standalone is not None else None, guesses)
    return Configs(
        plugin, parted, tuple(guesses), _ignored(snapshot, trusted), standalone, operator_release, standalone_release
    )


_RELEASE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")  # Helm's, as the schema's


def _release(name: str | None, guesses: list[str]) -> str | None:
    """A release name the annotation gives, where Helm could have made it (else a note: the default is written)."""
    if name is None or (len(name) <= 53 and _RELEASE.match(name)):
        return name
    guesses.append(f"Helm release: the annotation names {name[:60]!r}, which no Helm release can be called; ignored")
    return None

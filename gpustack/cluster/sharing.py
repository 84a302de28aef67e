"""What a node's GFD labels and the device plugin's / mig-parted's configs say about how its GPUs are shared:
time-slicing or MPS replicas, and MIG layouts (profiles by today's names, cluster/labels.current_profile).

Used by `gpustack import` (cluster/importer.py); each guess is appended to the caller's list as it is made.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from gpustack.catalog import GpuModel
from gpustack.cluster.labels import COUNT, GPU_RESOURCE, MIG_STRATEGY, REPLICAS, SHARING_STRATEGY, current_profile
from gpustack.cluster.snapshot import SnapshotNode
from gpustack.mig import resource_name as mig_resource_name
from gpustack.model import WHOLE_GPUS
from gpustack.names import DEVICE_PLUGIN_CONFIG_LABEL, MIG_CONFIG_LABEL

MIG_RESOURCE_PREFIX = "nvidia.com/mig-"
_MIG_COUNT = re.compile(r"^nvidia\.com/mig-(?P<profile>[0-9]+g\.[0-9]+gb(?:\.[a-z0-9.]+)?)\.count$")
MIG_SUFFIX = re.compile(r"-MIG-(?P<profile>[A-Za-z0-9.+]+?)(?:-SHARED)?$")
SHARED_SUFFIX = "-SHARED"


def int_label(node: SnapshotNode, key: str) -> int | None:
    value = node.label(key)
    return int(value) if value is not None and value.isdigit() else None


def config_count(value: Any) -> int | None:
    """A count a ConfigMap's config writes (replicas, MIG devices per GPU): a positive integer, else None. The config
    is any YAML an admin wrote: a string, a fraction or a boolean there is not understood, never coerced."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def config_flag(block: Mapping[str, Any], key: str) -> bool | None:
    """A boolean a config writes; None where it is absent or not a boolean (YAML's `"false"` is a string: not False)."""
    value = block.get(key)
    return value if isinstance(value, bool) else None


# The device plugin's config flags a blueprint can state (spec.devicePlugin.flags / a pool's devicePlugin.flags):
# (blueprint name, the config's section: flags or flags.plugin); compile/device_plugin.py writes them back there.
PLUGIN_FLAGS = (
    ("failOnInitError", "flags"),
    ("nvidiaDriverRoot", "flags"),
    ("passDeviceSpecs", "plugin"),
    ("deviceListStrategy", "plugin"),
    ("deviceIDStrategy", "plugin"),
)
LIST_STRATEGIES = ("envvar", "volume-mounts", "cdi-annotations", "cdi-cri")


def _flag_value(name: str, value: Any) -> Any:
    """The value as the blueprint's schema takes it; None where it does not."""
    if name in ("failOnInitError", "passDeviceSpecs"):
        return value if isinstance(value, bool) else None
    if name == "nvidiaDriverRoot":
        return value if isinstance(value, str) and value.startswith("/") else None
    if name == "deviceIDStrategy":
        return value if value in ("uuid", "index") else None
    listed = [value] if isinstance(value, str) else value
    understood = isinstance(listed, list) and listed and all(s in LIST_STRATEGIES for s in listed)
    return value if understood and len(set(listed)) == len(listed) else None


def plugin_flags(config: Mapping[str, Any] | None, name: str, guesses: list[str]) -> dict[str, Any]:
    """The flags a device plugin config sets, by the blueprint's names: kept, so the config compile writes for the
    pool is the one its nodes run (a dropped passDeviceSpecs or nvidiaDriverRoot would cost running pods their
    GPUs). A value the schema cannot take is left out with a note."""
    flags = config.get("flags") if config is not None else None
    if not isinstance(flags, dict):
        return {}
    plugin = flags.get("plugin")
    sections: dict[str, Mapping[str, Any]] = {"flags": flags, "plugin": plugin if isinstance(plugin, dict) else {}}
    out: dict[str, Any] = {}
    for key, section in PLUGIN_FLAGS:
        raw = sections[section].get(key)
        if raw is None:
            continue
        value = _flag_value(key, raw)
        if value is None:
            guesses.append(f"devicePlugin.flags.{key}: the device plugin config '{name}' gives {raw!r}; left out")
            continue
        out[key] = value
    return out


def base_product(product: str) -> str:
    base = product[: -len(SHARED_SUFFIX)] if product.upper().endswith(SHARED_SUFFIX) else product
    return MIG_SUFFIX.sub("", base)


def replication(
    node: SnapshotNode, product: str, plugin_config: Mapping[str, Any] | None, guesses: list[str]
) -> dict[str, Any] | None:
    strategy = node.label(SHARING_STRATEGY)
    replicas = int_label(node, REPLICAS) or 1
    renamed = node.allocatable_map.get(f"{GPU_RESOURCE}.shared") is not None
    sharing_config = plugin_config.get("sharing") if plugin_config is not None else None
    if isinstance(sharing_config, dict):
        for kind in ("timeSlicing", "mps"):
            block = sharing_config.get(kind)
            resources = block.get("resources") if isinstance(block, dict) else None
            if isinstance(block, dict) and isinstance(resources, list) and resources and isinstance(resources[0], dict):
                count = config_count(resources[0].get("replicas", replicas))
                if count is None:
                    guesses.append(
                        f"{kind}: the device plugin config '{node.label(DEVICE_PLUGIN_CONFIG_LABEL) or 'default'}' "
                        f"gives replicas {resources[0].get('replicas')!r}, not a count; the node's labels are read"
                    )
                    break
                settings: dict[str, Any] = {"replicas": count}
                settings["renameByDefault"] = config_flag(block, "renameByDefault") or False
                settings["failRequestsGreaterThanOne"] = config_flag(block, "failRequestsGreaterThanOne") or False
                return {"strategy": "time-slicing" if kind == "timeSlicing" else "mps", kind: settings}
    if strategy in ("time-slicing", "mps") and replicas > 1:
        kind = "timeSlicing" if strategy == "time-slicing" else "mps"
        missing = "was not in the snapshot" if plugin_config is None else "could not be read"
        guesses.append(
            f"failRequestsGreaterThanOne: not on the node's labels (the device plugin config "
            f"'{node.label(DEVICE_PLUGIN_CONFIG_LABEL) or 'default'}' {missing}); gpustack's default"
        )
        return {"strategy": strategy, kind: {"replicas": replicas, "renameByDefault": renamed}}
    if product.upper().endswith(SHARED_SUFFIX) or renamed:
        # GFD before v0.15 wrote no sharing-strategy label; -SHARED alone cannot tell time-slicing from MPS.
        guesses.append("time-slicing: the product ends in -SHARED but no label says time-slicing or MPS")
        return {"strategy": "time-slicing", "timeSlicing": {"replicas": max(replicas, 2), "renameByDefault": renamed}}
    return None


def _mig_groups(entries: list[Any], gpus: int, model: GpuModel | None) -> list[dict[str, Any]] | None:
    """mig-parted entries as blueprint MIG groups (profiles by today's names); None when they cannot be written as
    groups."""
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
        counts = {current_profile(model, str(k)): config_count(v) for k, v in layout.items()}
        if not isinstance(indexes, list) or None in counts.values():
            return None  # a count that is not one: the layout is not understood (GS023), never guessed at
        groups.append({"devices": indexes, "layout": counts})
    return groups if any("layout" in group for group in groups) else None


def _sliceable(mig: Mapping[str, Any]) -> tuple[dict[str, str], bool]:
    """The resource name of each profile the pool's layouts make (resource -> profile, in layout order), and whether a
    group leaves GPUs whole: what the device plugin advertises, so all it can time-slice."""
    groups = mig.get("groups")
    layouts = [mig.get("layout")] if not isinstance(groups, list) else [g.get("layout") for g in groups]
    profiles = dict.fromkeys(p for layout in layouts if isinstance(layout, dict) for p in layout)
    whole = isinstance(groups, list) and any(isinstance(g, dict) and g.get("whole") is True for g in groups)
    return {mig_resource_name(str(p)): str(p) for p in profiles}, whole


def _replicas_field(counts: dict[str, int], resources: dict[str, str]) -> int | dict[str, int]:
    """One count where every profile of the layout has the same and whole GPUs none (the form gpustack writes for
    it), else the mapping, whole first and then the profiles in layout order, as NVIDIA's page writes them."""
    values = set(counts.values())
    if WHOLE_GPUS not in counts and set(counts) == set(resources.values()) and len(values) == 1:
        return values.pop()
    order = [WHOLE_GPUS, *resources.values()]
    return {key: counts[key] for key in order if key in counts}


def mig_time_slicing(
    node: SnapshotNode, plugin_config: Mapping[str, Any] | None, guesses: list[str], mig: Mapping[str, Any]
) -> dict[str, Any] | None:
    """mig.timeSlicing from the plugin config's replicated nvidia.com/mig-* (and, beside GPUs left whole,
    nvidia.com/gpu) resources, or else GFD's replicas labels; None where nothing of the pool is time-sliced.

    Only what the pool's layouts advertise counts: NVIDIA's own example config names every profile of the GPU, and
    the plugin ignores the ones a node does not make.
    """
    resources, whole = _sliceable(mig)
    sharing = plugin_config.get("sharing") if plugin_config is not None else None
    block = sharing.get("timeSlicing") if isinstance(sharing, dict) else None
    listed = block.get("resources") if isinstance(block, dict) else None
    if isinstance(block, dict) and isinstance(listed, list):
        counts: dict[str, int] = {}
        unmade: list[str] = []
        for entry in listed:
            if not isinstance(entry, dict) or config_count(entry.get("replicas")) is None:
                continue
            name = str(entry.get("name", ""))
            if name in resources:
                counts[resources[name]] = int(entry["replicas"])
            elif name == GPU_RESOURCE and whole:
                counts[WHOLE_GPUS] = int(entry["replicas"])
            else:
                unmade.append(name)
        if unmade:
            guesses.append(
                f"mig.timeSlicing: the device plugin config '{node.label(DEVICE_PLUGIN_CONFIG_LABEL) or 'default'}' "
                f"also time-slices {', '.join(unmade)}, which the node does not advertise (the plugin ignores them); "
                "left out"
            )
        if counts:
            return {
                "replicas": _replicas_field(counts, resources),
                "renameByDefault": config_flag(block, "renameByDefault") or False,
                "failRequestsGreaterThanOne": config_flag(block, "failRequestsGreaterThanOne") or False,
            }
    labelled = {
        profile: int(value)
        for resource, profile in resources.items()
        if (value := node.label(f"{resource}.replicas")) is not None and value.isdigit() and int(value) > 1
    }
    whole_replicas = int_label(node, REPLICAS) if whole else None
    if whole_replicas is not None and whole_replicas > 1:
        labelled[WHOLE_GPUS] = whole_replicas  # GFD labels the GPUs left whole as full GPUs: gpu.replicas
    if not labelled:
        return None
    renamed = any(name.startswith(MIG_RESOURCE_PREFIX) and name.endswith(".shared") for name, _ in node.allocatable)
    renamed = renamed or node.allocatable_map.get(f"{GPU_RESOURCE}.shared") is not None
    guesses.append(
        f"mig.timeSlicing: from GFD's nvidia.com/mig-*.replicas labels (the device plugin config "
        f"'{node.label(DEVICE_PLUGIN_CONFIG_LABEL) or 'default'}' was not in the snapshot); failRequestsGreaterThanOne "
        "is gpustack's default"
    )
    return {"replicas": _replicas_field(labelled, resources), "renameByDefault": renamed}


def mig_sharing(
    node: SnapshotNode, model: GpuModel | None, product: str, parted: dict[str, list[Any]], guesses: list[str]
) -> tuple[dict[str, Any] | None, int | None]:
    """MIG sharing and the node's whole-GPU count where MIG decides it (single strategy counts slices)."""
    strategy = node.label(MIG_STRATEGY)
    config = node.label(MIG_CONFIG_LABEL)
    if strategy not in ("single", "mixed") or config == "all-disabled":
        return None, None
    count = int_label(node, COUNT)
    if strategy == "single":
        match = MIG_SUFFIX.search(product)
        if match is None:
            return None, None
        profile = current_profile(model, match["profile"])
        known = model.mig.profile(profile) if model is not None and model.mig is not None else None
        per_gpu = known.max_count if known is not None else 1
        if config is not None and config in parted and count is not None:
            groups = _mig_groups(parted[config], count, model)
            if groups is not None and len(groups) == 1 and "layout" in groups[0]:
                per_gpu = groups[0]["layout"].get(profile, per_gpu)
        whole = count // per_gpu if count is not None and per_gpu else None
        guesses.append(
            f"gpu.count: {whole} whole GPUs, from {count} MIG devices of {profile} at {per_gpu} per GPU "
            "(under the single strategy GFD counts slices)"
        )
        return {"strategy": "mig", "mig": {"strategy": "single", "layout": {profile: per_gpu}}}, whole
    if count is not None and config is not None and config in parted:
        groups = _mig_groups(parted[config], count, model)
        if groups is not None:
            if len(groups) == 1 and "layout" in groups[0] and groups[0]["devices"] == list(range(count)):
                return {"strategy": "mig", "mig": {"strategy": "mixed", "layout": groups[0]["layout"]}}, None
            return {"strategy": "mig", "mig": {"strategy": "mixed", "groups": groups}}, None
    totals: dict[str, int] = {}
    for key, value in node.labels:
        if (match := _MIG_COUNT.match(key)) is not None and value.isdigit():
            profile = current_profile(model, match["profile"])  # a 450-series driver's 3g.21gb is 3g.20gb
            totals[profile] = totals.get(profile, 0) + int(value)
    if count and totals and all(total % count == 0 for total in totals.values()):
        missing = "was not in the snapshot" if config not in parted else "could not be read"
        guesses.append(
            f"MIG layout: the same on every GPU, from the node's MIG device counts divided by its {count} GPUs "
            f"(the mig-parted config '{config}' {missing})"
        )
        layout = {profile: total // count for profile, total in sorted(totals.items())}
        return {"strategy": "mig", "mig": {"strategy": "mixed", "layout": layout}}, None
    return {"unreadable-mig": config or "unnamed"}, None

"""Upstream validation rules, restated in Python so tests can hold gpustack's output to them.

Two formats, both read by Go code that gpustack cannot run in tests:
- NVIDIA device-plugin config v1 (k8s-device-plugin v0.20.0, api/config/v1 and cmd/nvidia-device-plugin
  `validateFlags`; research: nvidia-device-plugin.md sections 1.1-1.4).
- mig-parted config v1 (mig-parted v0.15.0 api/spec/v1/spec.go, pkg/types/mig_config.go; profile names
  as go-nvlib `parseMigProfile` reads them).

Each function returns every problem it finds (upstream stops at the first), worded as upstream words it,
so a failing test shows the message an operator would see in the plugin's or MIG manager's log. The
device plugin parses its file non-strictly (unknown keys are silently dropped); the checks marked
"gpustack" below are stricter than upstream on purpose, because a dropped key is a silent misconfiguration.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# --- device-plugin config v1 ---------------------------------------------------------------------------

DP_VERSION = "v1"
MIG_STRATEGIES = ("none", "single", "mixed")
DEVICE_LIST_STRATEGIES = ("envvar", "volume-mounts", "cdi-annotations", "cdi-cri")
DEVICE_ID_STRATEGIES = ("uuid", "index")
RESOURCE_PREFIX = "nvidia.com"
MAX_RESOURCE_NAME_LENGTH = 63
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")

# Field names the plugin's Go structs know (json tags); anything else is ignored by the plugin.
DP_FIELDS: dict[str, frozenset[str]] = {
    "": frozenset({"version", "flags", "resources", "sharing", "imex"}),
    "flags": frozenset(
        {
            "migStrategy",
            "failOnInitError",
            "mpsRoot",
            "nvidiaDriverRoot",
            "nvidiaDevRoot",
            "gdrcopyEnabled",
            "gdsEnabled",
            "mofedEnabled",
            "useNodeFeatureAPI",
            "deviceDiscoveryStrategy",
            "plugin",
            "gfd",
        }
    ),
    "flags.plugin": frozenset(
        {
            "passDeviceSpecs",
            "deviceListStrategy",
            "deviceIDStrategy",
            "cdiAnnotationPrefix",
            "nvidiaCTKPath",
            "containerDriverRoot",
            "sharedDevicesAllocationPolicy",
        }
    ),
    "sharing": frozenset({"timeSlicing", "mps"}),
    "replicated": frozenset({"renameByDefault", "failRequestsGreaterThanOne", "resources"}),
    "resource": frozenset({"name", "rename", "devices", "replicas"}),
}


def _go_type(value: Any) -> str:
    # How encoding/json names a JSON value it cannot decode into the target type.
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _unknown_fields(data: Mapping[str, Any], kind: str, where: str) -> list[str]:
    # gpustack: upstream silently ignores these.
    return [
        f"gpustack: unknown field '{where}{key}' (the device plugin would silently ignore it)"
        for key in data
        if key not in DP_FIELDS[kind]
    ]


def resource_name_errors(name: Any) -> list[str]:
    """NewResourceName: the prefix is added when missing, then length and DNS-subdomain format are checked."""
    if not isinstance(name, str):
        return [f"json: cannot unmarshal {_go_type(name)} into Go value of type string"]
    full = name if name.startswith(RESOURCE_PREFIX + "/") else f"{RESOURCE_PREFIX}/{name}"
    if len(full) > MAX_RESOURCE_NAME_LENGTH:
        return [f"fully-qualified resource name must be {MAX_RESOURCE_NAME_LENGTH} characters or less: {full}"]
    short = full.split("/", 1)[1]
    if len(short) > 253 or not _DNS_SUBDOMAIN.match(short):
        return [f"incorrect format for resource name '{full}': [a lowercase RFC 1123 subdomain ...]"]
    return []


def _replicated_errors(block: Any, where: str) -> list[str]:
    """ReplicatedResources / ReplicatedResource UnmarshalJSON (replicas.go)."""
    if not isinstance(block, Mapping):
        return [f"json: cannot unmarshal {_go_type(block)} into Go value of type v1.ReplicatedResources"]
    errors = _unknown_fields(block, "replicated", where)
    for flag in ("renameByDefault", "failRequestsGreaterThanOne"):
        if flag in block and not isinstance(block[flag], bool):
            errors.append(f"json: cannot unmarshal {_go_type(block[flag])} into Go value of type bool")
    resources = block.get("resources")
    if not resources:
        return [*errors, "no resources specified"]
    if not isinstance(resources, list):
        return [*errors, f"json: cannot unmarshal {_go_type(resources)} into Go value of type []v1.ReplicatedResource"]
    for index, resource in enumerate(resources):
        if not isinstance(resource, Mapping):
            errors.append(f"json: cannot unmarshal {_go_type(resource)} into Go value of type v1.ReplicatedResource")
            continue
        errors += _unknown_fields(resource, "resource", f"{where}resources[{index}].")
        if "name" not in resource:
            errors.append("no resource name specified")
        else:
            errors += resource_name_errors(resource["name"])
        devices = resource.get("devices", "all")
        if isinstance(devices, str) and devices != "all":
            errors.append(f"devices set as '{devices}' but the only valid string input is 'all'")
        if "replicas" not in resource:
            errors.append("no replicas specified")
            continue
        replicas = resource["replicas"]
        if isinstance(replicas, bool) or not isinstance(replicas, int):
            field = "Go struct field ReplicatedResource.replicas of type int"
            errors.append(f"json: cannot unmarshal {_go_type(replicas)} into {field}")
        elif replicas < 2:
            errors.append("number of replicas must be >= 2")
    return errors


def _is_replicated(block: Any) -> bool:
    # sharing.go isReplicated: a strategy is active only if some resource has more than one replica.
    if not isinstance(block, Mapping) or not isinstance(block.get("resources"), list):
        return False
    return any(
        isinstance(r, Mapping) and isinstance(r.get("replicas"), int) and r["replicas"] > 1 for r in block["resources"]
    )


def device_plugin_config_errors(config: Any) -> list[str]:
    """Every reason the device plugin (or GFD) would refuse this config file at start-up."""
    if not isinstance(config, Mapping):
        return [
            f"unmarshal error: error unmarshaling JSON: json: cannot unmarshal {_go_type(config)} into Go value of "
            "type v1.Config"
        ]
    errors = _unknown_fields(config, "", "")
    version = config.get("version") or DP_VERSION  # parseConfigFrom: empty means v1
    if version != DP_VERSION:
        errors.append(f"unknown version: {version}")
    flags = config.get("flags") or {}
    if not isinstance(flags, Mapping):
        return [*errors, f"json: cannot unmarshal {_go_type(flags)} into Go value of type v1.Flags"]
    errors += _unknown_fields(flags, "flags", "flags.")
    mig_strategy = flags.get("migStrategy", "none")
    if mig_strategy not in MIG_STRATEGIES:
        errors.append(f"unknown MIG strategy: {mig_strategy}")
    plugin = flags.get("plugin") or {}
    if isinstance(plugin, Mapping):
        errors += _unknown_fields(plugin, "flags.plugin", "flags.plugin.")
        errors += _device_list_errors(plugin.get("deviceListStrategy", "envvar"))
        device_id = plugin.get("deviceIDStrategy", "uuid")
        if device_id not in DEVICE_ID_STRATEGIES:
            errors.append(f"invalid --device-id-strategy option: {device_id}")
        if "passDeviceSpecs" in plugin and not isinstance(plugin["passDeviceSpecs"], bool):
            errors.append(f"json: cannot unmarshal {_go_type(plugin['passDeviceSpecs'])} into Go value of type bool")
    for flag in ("failOnInitError",):
        if flag in flags and not isinstance(flags[flag], bool):
            errors.append(f"json: cannot unmarshal {_go_type(flags[flag])} into Go value of type bool")
    sharing = config.get("sharing") or {}
    if not isinstance(sharing, Mapping):
        return [*errors, f"json: cannot unmarshal {_go_type(sharing)} into Go value of type v1.Sharing"]
    errors += _unknown_fields(sharing, "sharing", "sharing.")
    for kind in ("timeSlicing", "mps"):
        if kind in sharing:
            errors += _replicated_errors(sharing[kind], f"sharing.{kind}.")
    if "timeSlicing" in sharing and "mps" in sharing:
        errors.append(
            "gpustack: sharing.timeSlicing and sharing.mps are mutually exclusive (the plugin silently uses mps)"
        )
    if _is_replicated(sharing.get("mps")):
        errors += _mps_errors(flags, sharing["mps"])
    return errors


def _device_list_errors(strategy: Any) -> list[str]:
    # NewDeviceListStrategies (strategy.go), wrapped by validateFlags.
    strategies = [strategy] if isinstance(strategy, str) else strategy
    if not isinstance(strategies, list):
        return [f"json: cannot unmarshal {_go_type(strategy)} into Go value of type []string"]
    if not strategies:
        return [
            "invalid --device-list-strategy option: no device list strategy specified; at least one of "
            f"[{' '.join(DEVICE_LIST_STRATEGIES)}] is required"
        ]
    return [
        f"invalid --device-list-strategy option: invalid strategy: {s}"
        for s in strategies
        if s not in DEVICE_LIST_STRATEGIES
    ]


def _mps_errors(flags: Mapping[str, Any], mps: Mapping[str, Any]) -> list[str]:
    errors = []
    mig_strategy = flags.get("migStrategy", "none")
    if mig_strategy == "mixed":
        errors.append("using --mig-strategy=mixed is not supported with MPS")
    elif mig_strategy == "single":
        # internal/plugin/mps.go getMPSOptions: every device is a MIG device under single on a MIG node.
        errors.append("sharing using MPS is not supported for MIG devices")
    if not flags.get("mpsRoot"):
        errors.append("using MPS requires --mps-root to be specified")
    for resource in mps.get("resources", []):
        if isinstance(resource, Mapping) and resource.get("name") not in ("gpu", f"{RESOURCE_PREFIX}/gpu"):
            # README: "the only supported resource available for MPS are nvidia.com/gpu resources".
            errors.append(f"gpustack: MPS only shares full GPUs (nvidia.com/gpu), not {resource.get('name')}")
    return errors


# --- mig-parted config v1 ------------------------------------------------------------------------------

MIG_PARTED_VERSION = "v1"
MIG_ENTRY_FIELDS = frozenset({"device-filter", "devices", "mig-enabled", "mig-devices"})
# go-nvlib profile attributes: +me, +me.all, +gfx, and the negative -me.
MIG_ATTRIBUTES = frozenset({"+me", "+me.all", "+gfx", "-me"})


def _profile_field(text: str, field: str) -> tuple[int, str | None]:
    # parseMigProfileField
    if text.strip() != text:
        return -1, f"leading or trailing spaces on '%d{field}'"
    if not text.endswith(field):
        return -1, f"missing '{field}' from '%d{field}'"
    number = text.removesuffix(field)
    if not re.fullmatch(r"[+-]?\d+", number):
        return -1, f"malformed number in '%d{field}'"
    return int(number), None


def _profile_fields(text: str) -> str | None:
    # parseMigProfileFields: "<c>c.<g>g.<gb>gb" or "<g>g.<gb>gb"
    parts = text.split(".", 2)
    names = {3: ("c", "g", "gb"), 2: ("g", "gb")}.get(len(parts))
    if names is None:
        return "parsed wrong number of fields, expected 2 or 3"
    for part, field in zip(parts, names, strict=True):
        _, error = _profile_field(part, field)
        if error is not None:
            return error
    return None


def _profile_attributes(text: str) -> str | None:
    # parseMigProfileAttributes
    seen: set[str] = set()
    for attribute in text.split(","):
        if attribute in seen:
            return "non unique attribute in list"
        if attribute == "":
            return "empty attribute in list"
        if attribute.strip() != attribute:
            return "leading or trailing spaces in attribute"
        if attribute[0].isdigit():
            return "attribute begins with a number"
        if attribute[0] == "." or attribute[-1] == ".":
            return "attribute begins/ends with a dot"
        if not re.fullmatch(r"[A-Za-z0-9.]+", attribute):
            return "non alpha-numeric character or digit in attribute"
        seen.add(attribute)
    return None


def mig_profile_error(profile: str) -> str | None:
    """go-nvlib parseMigProfile: None when `profile` is well formed."""
    if profile == "":
        return "profile is the empty string"
    plus = profile.split("+", 1)
    minus = profile.split("-", 1)
    if len(plus) == 2 and len(minus) == 2:
        return f"profile '{profile}' contains both '+/-' attributes"
    split = plus if len(plus) == 2 else minus
    error = _profile_fields(split[0])
    if error is not None:
        return f"cannot parse fields of '{profile}': {error}"
    if len(split) == 2:
        error = _profile_attributes(split[1])
        if error is not None:
            return f"cannot parse attributes of '{profile}': {error}"
        sign = "+" if len(plus) == 2 else "-"
        if sign + split[1] not in MIG_ATTRIBUTES:
            # gpustack: parses upstream, but matches no profile NVML reports (+me, +me.all, +gfx, -me).
            return f"gpustack: '{profile}' has an attribute no GPU reports ({sorted(MIG_ATTRIBUTES)})"
    return None


def _mig_devices_errors(devices: Any) -> list[str]:
    # MigConfig.AssertValid, wrapped by MigConfigSpec.UnmarshalJSON.
    prefix = "error validating values in 'mig-devices' field: "
    if not isinstance(devices, Mapping):
        return [f"json: cannot unmarshal {_go_type(devices)} into Go value of type types.MigConfig"]
    errors = []
    for profile, count in devices.items():
        error = mig_profile_error(str(profile))
        if error is not None:
            errors.append(f"{prefix}invalid format for '{profile}': {error}")
        if isinstance(count, bool) or not isinstance(count, int):
            errors.append(f"json: cannot unmarshal {_go_type(count)} into Go value of type int")
        elif count < 0:
            # Upstream formats the count where the profile belongs and a nil error: kept verbatim.
            errors.append(f"{prefix}invalid count for '{count}': <nil>")
    counts = [c for c in devices.values() if isinstance(c, int) and not isinstance(c, bool)]
    if devices and not any(c > 0 for c in counts):
        errors.append(f"{prefix}all counts for all MigProfiles are 0")
    return errors


def _mig_entry_errors(entry: Any) -> list[str]:
    # MigConfigSpec.UnmarshalJSON (strict: unexpected fields are errors upstream too).
    if not isinstance(entry, Mapping):
        return [f"json: cannot unmarshal {_go_type(entry)} into Go value of type v1.MigConfigSpec"]
    errors = [f"missing required field: {field}" for field in ("devices", "mig-enabled") if field not in entry]
    errors += [f"unexpected field: {key}" for key in entry if key not in MIG_ENTRY_FIELDS]
    devices = entry.get("devices", "all")
    if isinstance(devices, str):
        if devices != "all":
            errors.append(f"invalid string input for 'devices': {devices}")
    elif not (isinstance(devices, list) and all(isinstance(d, int) and not isinstance(d, bool) for d in devices)):
        errors.append(
            f"(json: cannot unmarshal {_go_type(devices)} into Go value of type string, json: cannot "
            f"unmarshal {_go_type(devices)} into Go value of type []int)"
        )
    enabled = entry.get("mig-enabled", False)
    if not isinstance(enabled, bool):
        errors.append(f"json: cannot unmarshal {_go_type(enabled)} into Go value of type bool")
    if "mig-devices" in entry:
        errors += _mig_devices_errors(entry["mig-devices"])
    if enabled is True and entry.get("mig-devices") is None:
        errors.append("missing required field 'mig-devices' when 'mig-enabled' is true")
    if enabled is False and entry.get("mig-devices"):
        errors.append("MIG devices included when 'mig-enabled' is false")
    return errors


def mig_parted_config_errors(config: Any) -> list[str]:
    """Every reason mig-parted would refuse to parse this config (Spec.UnmarshalJSON and below)."""
    if not isinstance(config, Mapping):
        return [f"json: cannot unmarshal {_go_type(config)} into Go value of type map[string]json.RawMessage"]
    if "version" not in config and config:
        return ["unable to parse with missing 'version' field"]
    if config.get("version") != MIG_PARTED_VERSION:
        return [f"unknown version: {config.get('version')}"]
    errors = [f"unexpected field: {key}" for key in config if key not in ("version", "mig-configs")]
    configs = config.get("mig-configs")
    if configs is None:
        return errors
    if not isinstance(configs, Mapping):
        return [
            *errors,
            f"json: cannot unmarshal {_go_type(configs)} into Go value of type map[string]v1.MigConfigSpecSlice",
        ]
    if not configs:
        errors.append("at least one entry in 'mig-configs' is required")
    for name, entries in configs.items():
        if not entries:
            errors.append(f"at least one entry in '{name}' is required")
            continue
        if not isinstance(entries, list):
            errors.append(f"json: cannot unmarshal {_go_type(entries)} into Go value of type v1.MigConfigSpecSlice")
            continue
        for entry in entries:
            errors += _mig_entry_errors(entry)
    return errors

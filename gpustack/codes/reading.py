"""Codes of reading input: the YAML loader, cluster snapshots, fleet files and the blueprint's shape."""

from __future__ import annotations

from gpustack.codes.record import Stage
from gpustack.names import SNAPSHOT_COMMAND

_loading = Stage("loading the YAML", "gpustack/load.py, gpustack/event_reader.py")
_snapshots = Stage("reading a cluster snapshot (`import`, `drift`, `simulate --cluster`)", "gpustack/cluster/")
_config_names = Stage("config names a cluster already uses", "gpustack/checks/sharing.py")
_fleets = Stage("reading a fleet file (`gpustack fleet`)", "gpustack/fleet/, gpustack/data/fleet.schema.json")
_shape = Stage("the blueprint's shape (JSON Schema)", "gpustack/schema.py, gpustack/data/blueprint.schema.json")

FILE_UNREADABLE = _loading(
    "GS001",
    "the blueprint file cannot be read",
    "The blueprint path does not exist, is a directory, a device or a pipe, or cannot be opened.",
    "Check the path (it is relative to where you run gpustack); pass `-` to read standard input.",
)

FILE_TOO_LARGE = _loading(
    "GS002",
    "the file is larger than the size cap",
    "The file is larger than gpustack reads (a blueprint is a few kilobytes; the cap protects CI from runaway input).",
    "Check that the path names the blueprint and not a generated or binary file; split a huge blueprint.",
)

NOT_UTF8 = _loading(
    "GS003",
    "the file is not UTF-8 text",
    "The file holds bytes that are not UTF-8, or control characters YAML does not allow.",
    "Save the file as UTF-8 text, and remove control characters (NUL, escape codes) pasted into it.",
)

YAML_SYNTAX = _loading(
    "GS004",
    "YAML syntax error",
    "The YAML parser stopped: bad indentation, a tab used for indentation, an unclosed quote or bracket, or a `: ` "
    "inside an unquoted value.",
    "Fix the text at the position shown; the hint names the usual cause. Quote values that contain `: ` or `#`.",
)

DUPLICATE_KEY = _loading(
    "GS005",
    "duplicate mapping key",
    "A mapping has the same key twice. Plain YAML keeps the last one silently; gpustack refuses.",
    "Keep one of the two keys (the note shows where the first one is).",
)

ALIAS = _loading(
    "GS006",
    "YAML alias expansion over budget, or a merge key",
    "Anchors (`&a`) and aliases (`*a`) are allowed, but an alias would make the aliased nodes more than the budget "
    "go-yaml (and so the Kubernetes API server) allows: once past 100 aliased and 1,000 nodes in all, aliases may add "
    "at most 99% of a document's nodes (falling to 10% for a document of 4 million nodes). A billion-laughs file is "
    "refused at its first alias over budget, before it is expanded. Or the blueprint uses a merge key (`<<`), which "
    "YAML 1.2 does not have.",
    "Alias smaller values, or write the value out in full; the note shows where the anchor is. For a merge key, alias "
    "the whole mapping or write its keys out.",
)

CUSTOM_TAG = _loading(
    "GS007",
    "custom YAML tags are not allowed",
    "A value carries a YAML tag (`!Ref`, `!!python/object`, or a standard tag on a value that does not fit it).",
    "Remove the tag; quote the value if it should be a string.",
)

SEVERAL_DOCUMENTS = _loading(
    "GS008",
    "more than one YAML document",
    "The file holds a second YAML document after `---`.",
    "Put each blueprint in a file of its own.",
)

NON_STRING_KEY = _loading(
    "GS009",
    "a mapping key that is not a string",
    "A mapping key is not a string: `true:`, `1:`, `null:` or a complex key.",
    'Quote the key (`"true":`) or give it a name.',
)

TOO_DEEP = _loading(
    "GS010",
    "nested deeper than the depth cap",
    "Collections are nested deeper than any blueprint needs.",
    "Flatten the structure.",
)

EMPTY_DOCUMENT = _loading(
    "GS011",
    "empty document",
    "The file has no content, only comments, or only `null`.",
    "Start from blueprints/quickstart.yaml: a blueprint is a mapping with apiVersion, kind, metadata and spec.",
)

SNAPSHOT_MALFORMED = _snapshots(
    "GS020",
    "a cluster snapshot object is malformed",
    "An object in the cluster snapshot given to `import`, `drift` or `simulate --cluster` does not have the shape "
    "`kubectl get ... -o yaml` prints: a field of the wrong type, a missing name, a list where a mapping belongs.",
    f"Pass the unedited output of `{SNAPSHOT_COMMAND}` (docs/import.md). An object listed twice is an error too: "
    "two overlapping outputs were joined, and which copy the cluster holds cannot be told.",
)

SNAPSHOT_UNKNOWN_PRODUCT = _snapshots(
    "GS021",
    "a node's GPU product is not in the catalog",
    "A node's `nvidia.com/gpu.product` label names a GPU the catalog does not know; `import` gives its nodes a pool "
    "of their own without `gpu` (and a `# guessed:` line), instead of dropping them.",
    "Check `gpustack models TEXT` for the product, then set the pool's `gpu.model` to its catalog key.",
)

SNAPSHOT_NO_PRODUCT_LABEL = _snapshots(
    "GS022",
    "a GPU node without a nvidia.com/gpu.product label",
    "A node advertises NVIDIA GPUs but carries no `nvidia.com/gpu.product` label, so `import` cannot tell the model "
    "(GPU Feature Discovery is not running there, or NFD dropped the label).",
    "Run GPU Feature Discovery (the GPU Operator does) and snapshot again, or write the pool's `gpu.model` by hand.",
)

SNAPSHOT_MIG_UNREADABLE = _snapshots(
    "GS023",
    "a node's MIG layout cannot be read from the snapshot",
    "A MIG node's GFD counts do not make the same layout on every GPU, and the snapshot has no mig-parted ConfigMap "
    "that says which GPU holds what, so `import` writes the pool without `sharing` (and a `# guessed:` line).",
    "Include the MIG manager's ConfigMap in the snapshot (`kubectl get cm -n gpu-operator -o yaml`), or write the "
    "pool's `mig.groups` by hand.",
)

DEVICE_PLUGIN_CONFIG_NAME_SHARED = _config_names(
    "GS024",
    "pools of one devicePlugin.configName differ in sharing or flags",
    "Two pools name the same `devicePlugin.configName` but differ in `sharing` or `devicePlugin.flags`: one name "
    "selects one config in the device plugin's ConfigMap, so one of the pools would get the other's.",
    "Give the pools different `configName`s (the name their nodes' `nvidia.com/device-plugin.config` label has), or "
    "make their sharing and flags the same.",
)

MIG_CONFIG_NAME_SHARED = _config_names(
    "GS025",
    "pools of one mig.configName differ in layout, or it names all-disabled",
    "Two MIG pools name the same `sharing.mig.configName` but differ in their layout, or a pool names `all-disabled`, "
    "the config gpustack gives GPUs without MIG: one name selects one mig-parted config, so one pool's GPUs would be "
    "partitioned as the other's.",
    "Give the pools different `configName`s (the name their nodes' `nvidia.com/mig.config` label has), or the same "
    "layout.",
)

FLEET_FILE_UNREADABLE = _fleets(
    "GS030",
    "a file the fleet names cannot be read or lies outside the fleet's folder",
    "The fleet's base, a cluster's overlay or a cluster's blueprint cannot be read (missing, not a regular file, too "
    "large), or its path leaves the fleet file's folder (absolute, '..', a symlink out of it). A fleet reads only "
    "files beside it, so a fleet file from a pull request cannot copy another team's files into its output.",
    "Check the path (it is relative to the fleet file's folder); move or copy the file next to the fleet file.",
)

FLEET_CLUSTER_NAME = _fleets(
    "GS031",
    "two clusters of a fleet share a name, or a cluster takes a reserved name",
    "Two clusters have the same name, or a cluster is named `delivery`. A cluster's name is its output folder and "
    "part of its delivery objects' names, so it must be unique; `delivery/` holds the Argo CD or Flux objects.",
    "Rename one of the clusters.",
)

FLEET_CLUSTER_SOURCE = _fleets(
    "GS032",
    "a cluster's blueprint is not said exactly once",
    "A cluster names both a `blueprint` and an `overlay`, or has an overlay (or nothing) while the fleet has no "
    "`base`, or its overlay is not a mapping.",
    "Give a cluster either a whole `blueprint`, or an `overlay` on the fleet's `base` (a mapping shaped like a part "
    "of a blueprint).",
)

FLEET_SNAPSHOT_MISSING = _fleets(
    "GS033",
    "no snapshot for a cluster of the fleet",
    "`gpustack fleet drift` found no `CLUSTER.yaml` in the snapshot folder for a cluster of the fleet, so its drift "
    "is unknown.",
    "Save each cluster's snapshot as SNAPSHOT-DIR/CLUSTER.yaml (`kubectl get nodes,pods,resourcequotas,namespaces -A "
    "-o yaml`).",
)

FLEET_OVERLAY_OWNED = _fleets(
    "GS034",
    "an overlay sets what the fleet owns",
    "An overlay sets `apiVersion`, `kind` or `metadata.name`. The fleet owns them: every cluster's blueprint is the "
    "base's kind and version, named after the cluster.",
    "Remove the field from the overlay; rename the cluster in the fleet file instead.",
)

UNKNOWN_FIELD = _shape(
    "GS101",
    "unknown field",
    "A field the schema does not know, usually a typo or a field at the wrong level.",
    "Use the field the hint suggests; `gpustack schema` and docs/blueprint-format.md list every field.",
)

MISSING_FIELD = _shape(
    "GS102",
    "missing required field",
    "A required field is missing.",
    "Add the field; the hint says what it means.",
)

WRONG_TYPE = _shape(
    "GS103",
    "wrong type",
    "A value has the wrong type: a number where a string is needed (`version: 1.30` is a float), a mapping where a "
    "list is needed, and so on.",
    "Write the type the message expects; quote versions and numbers meant as text.",
)

NOT_ALLOWED_VALUE = _shape(
    "GS104",
    "value not allowed",
    "A value is not one of the values the field allows (an enum or a constant).",
    "Use one of the allowed values; the hint suggests the nearest.",
)

BAD_FORMAT = _shape(
    "GS105",
    "value has the wrong format",
    "A value does not have the field's format: a Kubernetes name, a quantity, a label key, a version.",
    "Write it in the format the message describes; the hint suggests a fixed spelling where it can.",
)

OUT_OF_RANGE = _shape(
    "GS106",
    "value out of range",
    "A number or a list length is outside the field's range.",
    "Use a value within the range shown.",
)

DUPLICATE_ITEM = _shape(
    "GS107",
    "duplicate items",
    "A list that must hold distinct items holds one twice.",
    "Remove the repeated item.",
)

COMBINATION = _shape(
    "GS108",
    "fields that do not go together",
    "Two fields that exclude each other, or a field that needs another (e.g. `hami` without `strategy: hami`).",
    "Keep the fields that match the chosen mode; the hint names the rule.",
)

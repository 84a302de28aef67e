"""gpustack's defaults: the `default` keywords of the blueprint JSON Schema, the one place they are written.

build applies them to what a blueprint leaves out, the model's records and compile's pinned chart versions read
them from here, and `gpustack schema` and editors show the same values, so none of them can drift.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Mapping
from importlib import resources
from typing import Any

# Where each object is defined in the schema, as a JSON pointer.
SPEC = "#/properties/spec"
DEVICE_PLUGIN = "#/properties/spec/properties/devicePlugin"
MIG_MANAGER = "#/properties/spec/properties/migManager"
GPU_OPERATOR = "#/$defs/gpuOperator"
DRA = "#/$defs/draSettings"
HAMI_RELEASE = "#/$defs/hamiRelease"
KUEUE = "#/$defs/kueueSettings"
VOLCANO = "#/$defs/volcanoSettings"
NODE_POOL = "#/$defs/nodePool"
CLOUD = "#/$defs/cloudPool"
REPLICATED_SHARING = "#/$defs/replicatedSharing"
MIG_TIME_SLICING = "#/$defs/migTimeSlicing"
HAMI_SHARING = "#/$defs/hami"
TOPOLOGY = "#/$defs/topology"
TENANT = "#/$defs/tenant"
TENANT_VOLCANO = "#/$defs/tenantVolcano"
WORKLOAD = "#/$defs/workload"
WORKLOAD_GPU = "#/$defs/workloadGpu"
WORKLOAD_CLAIM = "#/$defs/workloadClaim"
SERVE = "#/$defs/workload/properties/serve"


@functools.cache
def _schema() -> dict[str, Any]:
    # Read here rather than through gpustack.schema, which would load jsonschema for every import of the model.
    text = resources.files("gpustack").joinpath("data", "blueprint.schema.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def schema_default(where: str, name: str) -> Any:
    """The schema's default for property `name` of the object at JSON pointer `where`; KeyError where it has none.

    A list or mapping default is a fresh copy (a caller may keep and change it); a scalar, immutable, is the schema's
    own: build asks for thousands of defaults on a fleet-sized blueprint, and copying `false` is not free."""
    schema = _schema()
    found = _FOUND.get((where, name))
    if found is None or found[0] is not schema:  # first asked, or asked of another schema than last time
        node = schema
        for part in where.removeprefix("#/").split("/"):
            node = node[part]
        found = _FOUND[where, name] = (schema, node["properties"][name]["default"])
    value = found[1]
    return copy.deepcopy(value) if isinstance(value, list | dict) else value


# (pointer, name) -> the schema it was found in and the default there: found once per pointer and name, not walked
# again for each pool and workload.
_FOUND: dict[tuple[str, str], tuple[dict[str, Any], Any]] = {}


def value_or_default(data: Mapping[str, Any], where: str, name: str) -> Any:
    """`data[name]`, or the schema's default where the blueprint leaves it out."""
    return data[name] if name in data else schema_default(where, name)

"""verify-nodes.sh for DRA pools: each node's devices as the NVIDIA DRA driver publishes them, in ResourceSlices.

The DRA driver never sets a node's allocatable (that is a device plugin's), so the device-plugin check (an allocatable
column) shows `<none>` on a healthy DRA node. What a DRA pool's node advertises is the devices its ResourceSlices list
for the driver: `kubectl get resourceslices --field-selector spec.driver=...,spec.nodeName=...` (both fields are
ResourceSlice field selectors), counted per unit the pool offers (whole GPUs by the driver's `type` attribute, MIG
devices by `profile`, as the DeviceClasses select them: gpustack/dra.py). A node with none: the driver's kubelet plugin
does not run there (or finds no GPU); fewer than promised: GPUs missing or an unfinished MIG layout.

Every word from the blueprint is quoted (shlex) and messages go through printf '%s' (dash's echo reads backslashes).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable

from gpustack.context import Context
from gpustack.dra import V1BETA1, api_version, load_facts
from gpustack.model import NodePool
from gpustack.offers import Offer
from gpustack.selection import describe_selection


def _words(words: Iterable[str]) -> str:
    return " ".join(shlex.quote(word) for word in words)


def _say(text: str) -> str:
    return f"printf '%s\\n' {shlex.quote(text)}"


def _resource(ctx: Context) -> str:
    """ResourceSlices of the blueprint's resource.k8s.io version, spelt resource.version.group for kubectl."""
    version = api_version(ctx.blueprint).rpartition("/")[2]
    return f"resourceslices.{version}.resource.k8s.io"


def _devices_path(ctx: Context, offer: Offer) -> str:
    """A JSONPath that prints one line per device of the offer's unit (v1beta1 nests attributes under `basic`)."""
    attributes = "@.basic.attributes" if api_version(ctx.blueprint) == V1BETA1 else "@.attributes"
    match = f'{attributes}.profile.string=="{offer.profile}"' if offer.profile else f'{attributes}.type.string=="gpu"'
    return f'jsonpath={{range .items[*].spec.devices[?({match})]}}{{.name}}{{"\\n"}}{{end}}'


# Defined once at the top of a script with DRA pools: node, devices found, devices expected, the unit, the driver's
# namespace. Sets `failed`, so the script exits non-zero when any DRA node lacks what its pool promises.
NO_DEVICES = (
    "  %s: no %s in its ResourceSlices: the DRA driver kubelet plugin does not run on it or finds no GPU"
    " (kubectl get pods -n %s -o wide; the node needs its pool label and the NVIDIA driver)"
)
TOO_FEW = (
    "  %s: %s of %s %s in its ResourceSlices: GPUs missing, or its MIG layout is unfinished"
    " (kubectl get node %s -L nvidia.com/mig.config.state)"
)
TOO_MANY = "  %s: %s %s in its ResourceSlices, more than the %s its pool declares: fix the pool (gpu.count, MIG layout)"
CHECK_FUNCTION = (
    "failed=0",
    "dra_devices() {",
    '  if [ "$2" -eq "$3" ]; then',
    '    printf \'  %s: %s %s: ok\\n\' "$1" "$2" "$4"',
    '  elif [ "$2" -eq 0 ]; then',
    f'    printf \'{NO_DEVICES}\\n\' "$1" "$4" "$5" >&2',
    "    failed=1",
    '  elif [ "$2" -lt "$3" ]; then',
    f'    printf \'{TOO_FEW}\\n\' "$1" "$2" "$3" "$4" "$1" >&2',
    "    failed=1",
    "  else",
    f'    printf \'{TOO_MANY}\\n\' "$1" "$2" "$4" "$3" >&2',
    "    failed=1",
    "  fi",
    "}",
)


NODE_NAMES = "jsonpath={.items[*].metadata.name}"


def has_dra_pools(ctx: Context, pools: Iterable[NodePool]) -> bool:
    return any(ctx.offers.get(pool.name) for pool in pools)


def preamble() -> list[str]:
    return ["", *CHECK_FUNCTION]


def epilogue() -> list[str]:
    return ["", 'exit "$failed"']


def pool_check(ctx: Context, pool: NodePool) -> list[str]:
    """The lines that count each node's devices of every unit the DRA pool offers against what it promises."""
    facts = load_facts()
    selection = describe_selection(pool)
    namespace = ctx.blueprint.dra.namespace
    lines = [""]
    for offer in ctx.offers.get(pool.name, ()):
        unit = f"{facts.driver} devices of MIG profile {offer.profile}" if offer.profile else f"{facts.driver} GPUs"
        lines += [
            _say(f"pool {pool.name} (DRA): every node should publish {offer.per_node} {unit} in its ResourceSlices"),
            f"nodes=$({_words(['kubectl', 'get', 'nodes', '-l', selection, '-o', NODE_NAMES])})",
            'if [ -z "$nodes" ]; then',
            "  "
            + _say(f"  no node matches {selection}: label the nodes of pool {pool.name} (nodes/label-nodes.sh)")
            + " >&2",
            "  failed=1",
            "fi",
            "for node in $nodes; do",
            "  found=$("
            + _words(["kubectl", "get", _resource(ctx), "--field-selector"])
            + f' {shlex.quote(f"spec.driver={facts.driver},spec.nodeName=")}"$node" '
            + _words(["-o", _devices_path(ctx, offer)])
            + " | grep -c . || true)",
            f'  dra_devices "$node" "$found" {offer.per_node} {_words([unit, namespace])}',
            "done",
        ]
    return lines

"""Every input gpustack gives a cloud node pool is one the provider's real SDK declares.

pulumi-gcp, -aws and -azure-native pass a nested key they do not know straight through to the engine (a misspelt
`machine_typo` reaches it as is, next to the translated `machineType`), and check no value's type or enum: under
mocks nothing fails, and the provider would refuse the pool at `pulumi up`. So each registration's inputs, as the
engine receives them (wire names), are walked against the SDK's own input types: every key a field of its Args
class, every required field there, every value of the field's type and, where the SDK types it as an enum (AKS
scaleSetPriority, osDiskType, gpuProfile.driver), one of the enum's values.
"""

from __future__ import annotations

import collections.abc
import copy
import enum
import importlib
import inspect
import json
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pulumi
import pytest
from conftest import BLUEPRINTS
from pulumi import _types as sdk_types  # how the SDK itself reads its input types (names, field types)
from test_deploy import Harness, start_harness

from gpustack.deploy import CloudCluster, GpuCluster, GpuClusterArgs

# Each provider's node-pool resource: its type token and the SDK's Args class for it.
SDK_ARGS = {
    "gcp:container/nodePool:NodePool": ("pulumi_gcp.container", "NodePoolArgs"),
    "aws:eks/nodeGroup:NodeGroup": ("pulumi_aws.eks", "NodeGroupArgs"),
    "azure-native:containerservice:AgentPool": ("pulumi_azure_native.containerservice", "AgentPoolArgs"),
}
# The cluster every pool joins: each provider's required inputs that only the stack knows.
TARGET = {
    "cluster": "c1",
    "location": "us-central1",
    "node_role_arn": "arn:aws:iam::1:role/nodes",
    "subnet_ids": ["subnet-1"],
    "resource_group_name": "rg",
}


def args_class(type_token: str) -> type:
    module, name = SDK_ARGS[type_token]
    cls: type = getattr(importlib.import_module(module), name)
    return cls


def _members(hint: Any) -> list[Any]:
    """The types a value of `hint` may have: unions flattened; None, Awaitable[...] and Output[...] (how Pulumi
    spells Input[T]) dropped."""
    found: list[Any] = []
    pending = [hint]
    while pending:
        current = pending.pop()
        origin = typing.get_origin(current)
        if origin is typing.Union or origin is types.UnionType:
            pending.extend(typing.get_args(current))
        elif current is type(None) or origin in (collections.abc.Awaitable, pulumi.Output) or current is pulumi.Output:
            continue
        else:
            found.append(current)
    return found


def _required(cls: type) -> set[str]:
    """The wire names of the fields the Args class's constructor cannot do without."""
    names = sdk_types.input_type_py_to_pulumi_names(cls)
    parameters = inspect.signature(cls.__init__).parameters  # type: ignore[misc]
    return {
        names[name]
        for name, parameter in parameters.items()
        if name != "__self__" and name != "self" and parameter.default is inspect.Parameter.empty
    }


def _object(value: dict[str, Any], cls: type, path: str) -> list[str]:
    fields = sdk_types.input_type_types(cls)
    problems = [
        f"{path}.{key}: not a field of {cls.__name__} (its fields: {', '.join(sorted(fields))})"
        for key in sorted(set(value) - set(fields))
    ]
    problems += [f"{path}.{key}: required by {cls.__name__}, not given" for key in sorted(_required(cls) - set(value))]
    for key in sorted(set(value) & set(fields)):
        problems += mismatches(value[key], fields[key], f"{path}.{key}")
    return problems


def mismatches(value: Any, hint: Any, path: str) -> list[str]:
    """Where `value` (as the engine receives it) is not what `hint` (the SDK's input type) allows; [] if it is."""
    members = _members(hint)
    if typing.Any in members:
        return []
    origins = {typing.get_origin(member): member for member in members}
    if isinstance(value, dict):
        for member in members:
            if isinstance(member, type) and sdk_types.is_input_type(member):
                return _object(value, member, path)
        mapping = origins.get(collections.abc.Mapping)
        if mapping is not None:
            item = typing.get_args(mapping)[1]
            return [problem for key, v in value.items() for problem in mismatches(v, item, f"{path}.{key}")]
        return [f"{path}: an object where {cls_names(members)} is taken"]
    if isinstance(value, list):
        sequence = origins.get(collections.abc.Sequence)
        if sequence is None:
            return [f"{path}: a list where {cls_names(members)} is taken"]
        (item,) = typing.get_args(sequence)
        return [problem for i, v in enumerate(value) for problem in mismatches(v, item, f"{path}[{i}]")]
    enums = [m for m in members if isinstance(m, type) and issubclass(m, enum.Enum)]
    if isinstance(value, str) and enums:
        allowed = sorted({str(e.value) for m in enums for e in m})
        return [] if value in allowed else [f"{path}: {value!r} is not one of {cls_names(enums)}'s {allowed}"]
    if isinstance(value, bool):
        ok = bool in members
    elif isinstance(value, int | float):  # the wire has one number type: an int arrives as a float
        ok = float in members or (int in members and float(value).is_integer())
    else:
        ok = type(value) in members
    return [] if ok else [f"{path}: {value!r} is not a {cls_names(members)}"]


def cls_names(members: list[Any]) -> str:
    return " | ".join(sorted(getattr(m, "__name__", str(m)) for m in members))


def registration_mismatches(registration: Any) -> list[str]:
    cls = args_class(registration.type)
    return _object(registration.inputs, cls, registration.name)


# --- What is walked: every cloud blueprint, and one pool per branch of gpustack.compile.cloud ----------------------


def blueprint(*pools: dict[str, Any], stack: str = "device-plugin", operator: dict[str, Any] | None = None) -> str:
    spec: dict[str, Any] = {"kubernetes": {"version": "1.33"}, "stack": stack, "nodePools": list(pools)}
    if operator is not None:
        spec["gpuOperator"] = operator
    return json.dumps(
        {"apiVersion": "gpustack.io/v1alpha1", "kind": "ClusterBlueprint", "metadata": {"name": "sdk"}, "spec": spec}
    )


GPU_TAINT = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
MIG = {"strategy": "mig", "mig": {"strategy": "single", "layout": {"3g.40gb": 2}}}
VARIANTS = {
    # GKE: autoscaled over zones (totals), spot, disk, COS with Google's driver, a MIG partition size.
    "gke-autoscaled-spot-disk": blueprint(
        {
            "name": "l4",
            "gpu": {"model": "L4", "count": 1},
            "cloud": {
                "provider": "gke",
                "zones": ["us-central1-a", "us-central1-b"],
                "spot": True,
                "diskGb": 200,
                "diskType": "pd-ssd",
            },
            "minNodes": 2,
            "maxNodes": 8,
            "taints": GPU_TAINT,
        },
        {"name": "cpu", "cloud": {"provider": "gke", "machineType": "n2-standard-8"}, "count": 2},
    ),
    "gke-fixed-ubuntu-operator-driver-mig": blueprint(
        {
            "name": "a100",
            "gpu": {"model": "A100-SXM4-80GB", "count": 8},
            "cloud": {"provider": "gke", "machineType": "a2-ultragpu-8g", "zones": ["us-central1-a"]},
            "count": 2,
            "sharing": MIG,
        },
        stack="gpu-operator",
        operator={"driver": True},
    ),
    "gke-n1-attached-t4": blueprint(
        {
            "name": "t4",
            "gpu": {"model": "T4", "count": 1},
            "cloud": {"provider": "gke", "machineType": "n1-standard-4", "zones": ["us-central1-a"]},
            "minNodes": 0,
            "maxNodes": 3,
        },
        stack="gpu-operator",
    ),
    # EKS: spot, disk size, an image type, a fixed count, a CPU-only group.
    "eks-spot-image": blueprint(
        {
            "name": "l4",
            "gpu": {"model": "L4", "count": 1},
            "cloud": {
                "provider": "eks",
                "machineType": "g6.xlarge",
                "spot": True,
                "diskGb": 100,
                "imageType": "AL2023_x86_64_NVIDIA",
            },
            "minNodes": 0,
            "maxNodes": 4,
            "taints": GPU_TAINT,
        },
        {"name": "cpu", "cloud": {"provider": "eks", "machineType": "m5.xlarge"}, "count": 1},
    ),
    "eks-fixed-operator": blueprint(
        {"name": "h100", "gpu": {"model": "H100-SXM5-80GB", "count": 8}, "cloud": {"provider": "eks"}, "count": 2},
        stack="gpu-operator",
    ),
    # AKS: spot, zones, OS disk, a fixed count, the operator's driver (gpuProfile.driver None), MIG profile.
    "aks-spot-disk": blueprint(
        {
            "name": "t4",
            "gpu": {"model": "T4", "count": 1},
            "cloud": {"provider": "aks", "zones": ["1", "2"], "spot": True, "diskGb": 128, "diskType": "Ephemeral"},
            "minNodes": 0,
            "maxNodes": 3,
        },
    ),
    "aks-operator-driver-mig": blueprint(
        {
            "name": "a100",
            "gpu": {"model": "A100-SXM4-80GB", "count": 8},
            "cloud": {"provider": "aks", "machineType": "Standard_ND96amsr_A100_v4", "diskType": "Managed"},
            "count": 1,
            "sharing": MIG,
        },
        stack="gpu-operator",
        operator={"driver": True},
    ),
}

# GB200 on each cloud: Grace Arm hosts (EKS's ARM NVIDIA AMI, GKE's A4X, AKS's ND GB200 v6).
VARIANTS |= {
    f"{provider}-gb200-arm": blueprint(
        {
            "name": "gb",
            "gpu": {"model": "GB200", "count": 4},
            "cloud": {"provider": provider},
            "minNodes": 0,
            "maxNodes": 2,
        }
    )
    for provider in ("eks", "gke", "aks")
}

CLOUD_BLUEPRINTS = sorted(
    [
        *(BLUEPRINTS / "cloud").glob("*.yaml"),
        BLUEPRINTS / "fleet" / "base.yaml",
    ]
)


@pytest.fixture
def harness(monkeypatch: pytest.MonkeyPatch) -> Iterator[Harness]:
    yield from start_harness(monkeypatch)


def registered_pools(harness: Harness, path: Path) -> list[Any]:
    def program() -> None:
        GpuCluster("gs", GpuClusterArgs(path, cloud=CloudCluster(**TARGET)))

    harness.run(program)
    return [r for r in harness.registrations() if r.type in SDK_ARGS]


@pytest.mark.parametrize("path", CLOUD_BLUEPRINTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_blueprint_s_node_pools_use_only_the_sdk_s_fields_and_types(harness: Harness, path: Path) -> None:
    pools = registered_pools(harness, path)
    assert pools or path.name == "karpenter.yaml", "the blueprint registers provider node pools"
    assert [problem for pool in pools for problem in registration_mismatches(pool)] == []


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_every_branch_of_the_node_pool_args_uses_only_the_sdk_s_fields_and_types(
    harness: Harness, tmp_path: Path, name: str
) -> None:
    path = tmp_path / "bp.yaml"
    path.write_text(VARIANTS[name])
    pools = registered_pools(harness, path)
    assert pools
    assert [problem for pool in pools for problem in registration_mismatches(pool)] == []


def test_the_walk_catches_a_misspelt_nested_key_a_wrong_type_and_an_enum_value(
    harness: Harness, tmp_path: Path
) -> None:
    """The SDKs themselves accept all three (what the walk is for); the walk names each at its path."""
    path = tmp_path / "bp.yaml"
    path.write_text(VARIANTS["gke-autoscaled-spot-disk"])
    (gke, _cpu) = registered_pools(harness, path)
    bad = copy.deepcopy(gke)
    bad.inputs["nodeConfig"]["machine_typo"] = "g2-standard-4"
    bad.inputs["nodeConfig"]["guestAccelerators"][0]["count"] = "1"
    bad.inputs["autoscaling"].pop("totalMaxNodeCount")
    bad.inputs["autoscaling"]["totalMaxNodes"] = 8
    problems = registration_mismatches(bad)
    assert any(
        p.startswith("gs-node-pool-l4.nodeConfig.machine_typo: not a field of NodePoolNodeConfigArgs") for p in problems
    )
    assert "gs-node-pool-l4.nodeConfig.guestAccelerators[0].count: '1' is not a int" in problems
    assert any(
        p.startswith("gs-node-pool-l4.autoscaling.totalMaxNodes: not a field of NodePoolAutoscalingArgs")
        for p in problems
    )
    # An AKS enum: scaleSetPriority and osDiskType take only the SDK's values.
    from pulumi_azure_native.containerservice import AgentPoolArgs

    fields = sdk_types.input_type_types(AgentPoolArgs)
    assert mismatches("Spot", fields["scaleSetPriority"], "p") == []
    assert mismatches("Premium_LRS", fields["osDiskType"], "p") == [
        "p: 'Premium_LRS' is not one of OSDiskType's ['Ephemeral', 'Managed']"
    ]


def test_the_aks_disk_types_gpustack_accepts_are_the_sdk_s_os_disk_types(tmp_path: Path) -> None:
    """GS317's list is pulumi-azure-native's OSDiskType: a diskType outside it (a GKE or EBS name carried over) is
    refused at its line instead of reaching Azure as an osDiskType it refuses."""
    from pulumi_azure_native.containerservice import OSDiskType

    from gpustack.checks.cloud import AKS_DISK_TYPES
    from gpustack.codes import AKS_DISK_TYPE
    from gpustack.validation import validate_path

    assert sorted(AKS_DISK_TYPES) == sorted(str(e.value) for e in OSDiskType)
    path = tmp_path / "bp.yaml"
    for disk, refused in (("Ephemeral", False), ("Managed", False), ("pd-ssd", True), ("gp3", True)):
        path.write_text(VARIANTS["aks-spot-disk"].replace('"Ephemeral"', json.dumps(disk)))
        codes = [d.code for d in validate_path(path).diagnostics]
        assert (AKS_DISK_TYPE in codes) is refused, (disk, codes)

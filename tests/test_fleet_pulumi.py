"""examples/pulumi-fleet/fleet_stacks.py: one Pulumi stack per cluster of a fleet through the Automation API.

Under Pulumi's mocks (as tests/test_deploy.py): each cluster's program registers the GpuCluster of that cluster's
resolved blueprint and its own node pools (through the real pulumi-gcp, so the engine sees wire names). The
Automation API's stacks are stood in for by a recorder (no CLI, no engine, no state here): the driver makes one stack
per cluster, named after it, pointed at the kubeconfig context of the same name, and runs the action on each in the
fleet's order.
"""

from __future__ import annotations

import importlib.util
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from conftest import BLUEPRINTS, CASES, REPO
from test_deploy import Harness, start_harness

EXAMPLE = REPO / "examples" / "pulumi-fleet" / "fleet_stacks.py"
FLEET = str(BLUEPRINTS / "fleet" / "fleet.yaml")
GKE_NODE_POOL = "gcp:container/nodePool:NodePool"


def load_example() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("fleet_stacks", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def harness(monkeypatch: pytest.MonkeyPatch) -> Iterator[Harness]:
    yield from start_harness(monkeypatch)


@pytest.mark.parametrize(
    ("cluster", "pools", "zones"),
    [
        ("train-eu", ["h100", "l4"], ["europe-west4-a"]),
        ("train-us", ["h100", "l4", "a100-mig"], ["us-central1-a"]),
        ("staging-eu", ["h100", "l4"], ["europe-west4-a"]),
    ],
)
def test_each_cluster_s_program_registers_its_resolved_blueprint(
    harness: Harness, cluster: str, pools: list[str], zones: list[str]
) -> None:
    example = load_example()
    (resolved,) = [c for c in example.resolved_clusters(FLEET) if c.name == cluster]
    harness.run(example.cluster_program(cluster, resolved.validation.blueprint))
    (component,) = harness.of_type("gpustack:index:GpuCluster")
    assert component.name == cluster
    node_pools = harness.of_type(GKE_NODE_POOL)
    assert [r.name for r in node_pools] == [f"{cluster}-node-pool-{pool}" for pool in pools]
    assert node_pools[0].inputs["nodeLocations"] == zones, node_pools[0].inputs


@dataclass
class RecordedStack:
    name: str
    project: str
    program: Any
    config: dict[str, str] = field(default_factory=dict)
    ran: list[str] = field(default_factory=list)

    def set_config(self, key: str, value: Any) -> None:
        self.config[key] = value.value

    def preview(self, on_output: Any = None) -> None:
        self.ran.append("preview")

    def up(self, on_output: Any = None) -> None:
        self.ran.append("up")


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> tuple[types.ModuleType, list[RecordedStack]]:
    example = load_example()
    stacks: list[RecordedStack] = []

    def create_or_select_stack(stack_name: str, project_name: str, program: Any) -> RecordedStack:
        stacks.append(RecordedStack(stack_name, project_name, program))
        return stacks[-1]

    monkeypatch.setattr(example.auto, "create_or_select_stack", create_or_select_stack)
    return example, stacks


def test_one_stack_per_cluster_named_after_it(recorded: tuple[types.ModuleType, list[RecordedStack]]) -> None:
    example, stacks = recorded
    assert example.main([FLEET, "preview"]) == 0
    assert [s.name for s in stacks] == ["train-eu", "train-us", "staging-eu"]
    assert {s.project for s in stacks} == {"gpustack-gpu-fleet"}
    assert [s.config for s in stacks] == [{"kubernetes:context": s.name} for s in stacks]
    assert all(s.ran == ["preview"] for s in stacks) and all(callable(s.program) for s in stacks)


def test_one_cluster_only(recorded: tuple[types.ModuleType, list[RecordedStack]]) -> None:
    example, stacks = recorded
    assert example.main([FLEET, "up", "--cluster", "train-us"]) == 0
    assert [(s.name, s.ran) for s in stacks] == [("train-us", ["up"])]


def test_an_invalid_cluster_touches_no_stack(
    recorded: tuple[types.ModuleType, list[RecordedStack]], capsys: pytest.CaptureFixture[str]
) -> None:
    example, stacks = recorded
    assert example.main([str(CASES / "fleet" / "overlay-invalid.yaml"), "up"]) == 1
    assert stacks == []
    assert "error[GS101]: cluster 'typo': unknown field 'nodez'" in capsys.readouterr().err

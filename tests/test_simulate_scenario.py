"""The demand scenario: hardened loading, diagnostics at the right line, and what it changes."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders import sourceless

from gpustack.codes import ALIAS, MISSING_FIELD, OUT_OF_RANGE, UNKNOWN_FIELD, WRONG_TYPE, YAML_SYNTAX
from gpustack.compile import compile_blueprint
from gpustack.diagnostic import DiagnosticError
from gpustack.model import Blueprint
from gpustack.simulate import run_simulation
from gpustack.simulate.pods import SpecError, parse_pod_spec
from gpustack.simulate.scenario import load_scenario
from gpustack.validation import validate_path

CASES = Path(__file__).parent / "cases" / "simulate"


@pytest.fixture(scope="module")
def blueprint() -> Blueprint:
    result = validate_path(CASES / "seed-opening-1.33" / "blueprint.yaml")
    assert result.ok and result.blueprint is not None
    return result.blueprint


def problems(text: str, blueprint: Blueprint) -> list[tuple[str, int, str]]:
    with pytest.raises(DiagnosticError) as error:
        load_scenario(text, "scenario.yaml", blueprint)
    return [(d.code, d.span.start.line if d.span else 0, d.message) for d in error.value.diagnostics]


def test_unknown_workload_has_a_did_you_mean(blueprint: Blueprint) -> None:
    found = problems("workloads:\n  lm:\n    replicas: 2\n", blueprint)
    assert found == [(UNKNOWN_FIELD, 2, "the blueprint has no workload 'lm'")]


def test_unknown_fields_and_bad_counts(blueprint: Blueprint) -> None:
    text = "scale: -1\nworkloads:\n  llm:\n    replicaz: 2\n    replicas: many\n"
    codes = {(code, line) for code, line, _ in problems(text, blueprint)}
    assert codes == {(OUT_OF_RANGE, 1), (UNKNOWN_FIELD, 4), (OUT_OF_RANGE, 5)}


def test_bad_pod_spec_parts_point_at_their_line(blueprint: Blueprint) -> None:
    text = (
        "workloads:\n"
        "  llm:\n"
        "    podSpec:\n"
        "      tolerations:\n"
        "        - {key: gpu, operator: Equals, value: 'true'}\n"
        "    resources: {limits: {nvidia.com/gpu: lots}}\n"
    )
    found = problems(text, blueprint)
    assert [(code, line) for code, line, _ in found] == [(WRONG_TYPE, 5), (WRONG_TYPE, 6)]
    assert "Equal or Exists" in found[0][2]
    assert "lots" in found[1][2]


def test_yaml_is_loaded_hardened(blueprint: Blueprint) -> None:
    found = problems("workloads: &a\n  llm: *a\n", blueprint)  # an alias inside its own anchor
    assert found and found[0][0] == YAML_SYNTAX
    bomb = "a: &a [" + ",".join(["x"] * 100) + "]\nb: [" + ",".join(["*a"] * 200) + "]\n"
    found = problems(bomb, blueprint)
    assert found and found[0][0] == ALIAS


def test_raw_pods_need_name_namespace_and_spec(blueprint: Blueprint) -> None:
    found = problems("pods:\n  - {name: x}\n", blueprint)
    assert {code for code, _, _ in found} == {MISSING_FIELD}


def test_scale_and_replicas(blueprint: Blueprint) -> None:
    objects = [m.obj for m in compile_blueprint(sourceless(blueprint)).objects]
    scaled = load_scenario("scale: 0.5\n", "s.yaml", blueprint)
    assert len(run_simulation(sourceless(blueprint), objects, scaled).demand.pods) == 2  # ceil(4 * 0.5)
    fixed = load_scenario("scale: 3\nworkloads:\n  llm: {replicas: 1}\n", "s.yaml", blueprint)
    assert len(run_simulation(sourceless(blueprint), objects, fixed).demand.pods) == 1  # explicit replicas win


def test_raw_pods_are_scheduled_with_the_rest(blueprint: Blueprint) -> None:
    objects = [m.obj for m in compile_blueprint(sourceless(blueprint)).objects]
    text = (
        "pods:\n"
        "  - name: handmade\n"
        "    namespace: ml\n"
        "    replicas: 2\n"
        "    spec:\n"
        "      containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]\n"
    )
    simulation = run_simulation(sourceless(blueprint), objects, load_scenario(text, "s.yaml", blueprint))
    names = [p.pod.name for p in simulation.outcome.pending]
    # Three nodes, four llm replicas, two raw pods: the raw pods have no toleration for the pool's taint.
    assert names == ["llm-3", "handmade-0", "handmade-1"]
    assert simulation.outcome.pending[1].message.startswith(
        "0/3 nodes are available: 3 node(s) had untolerated taint {gpustack.io/pool: t4}."
    )


def test_pod_spec_parsing() -> None:
    shape = parse_pod_spec(
        {
            "containers": [
                {"resources": {"limits": {"nvidia.com/gpu": "2", "cpu": "1"}, "requests": {"cpu": "500m"}}},
                {"resources": {"requests": {"cpu": "250m", "memory": "1Gi"}}},
            ],
            "initContainers": [{"resources": {"requests": {"cpu": "2"}}}],
            "nodeSelector": {"gpustack.io/pool": "a100"},
            "tolerations": [{"key": "gpu-pool", "operator": "Exists"}],
        }
    )
    assert dict(shape.requests) == {"nvidia.com/gpu": 2, "cpu": 2000, "memory": 2**30}
    assert dict(shape.limits) == {"nvidia.com/gpu": 2, "cpu": 1000}
    assert shape.node_selector == (("gpustack.io/pool", "a100"),)


@pytest.mark.parametrize(
    ("spec", "path"),
    [
        ({"tolerations": "x"}, ("tolerations",)),
        ({"nodeSelector": {"a": 1}}, ("nodeSelector", "a")),
        (
            {"containers": [{"resources": {"limits": {"nvidia.com/gpu": "x"}}}]},
            ("containers", 0, "resources", "limits", "nvidia.com/gpu"),
        ),
        (
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "In"}]}]
                        }
                    }
                }
            },
            (
                "affinity",
                "nodeAffinity",
                "requiredDuringSchedulingIgnoredDuringExecution",
                "nodeSelectorTerms",
                0,
                "matchExpressions",
                0,
                "values",
            ),
        ),
    ],
)
def test_pod_spec_errors_name_their_path(spec: dict, path: tuple) -> None:
    with pytest.raises(SpecError) as error:
        parse_pod_spec(spec)
    assert error.value.path == path

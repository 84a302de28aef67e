"""Property tests over the whole front half: mutated and random blueprints give diagnostics, never exceptions.

Mutations work on the data of the shipped examples (drop, retype, duplicate, rename, swap values across
fields), so they reach past the loader into the schema and the semantic checks; whatever validates
must also compile, and compile may report nothing validate did not (one gate: every rule lives in checks/).
"""

from __future__ import annotations

import copy
from typing import Any

from builders import sourceless
from conftest import BLUEPRINTS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpustack.compile import compile_blueprint
from gpustack.diagnostic import Diagnostic
from gpustack.load import parse_document
from gpustack.validation import folder_templates, validate_text
from gpustack.yamlout import dump_yaml

EXAMPLES = [parse_document(p.read_text(), p.name).data for p in sorted(BLUEPRINTS.glob("*.yaml"))]
ODD_VALUES = [
    None, True, False, 0, -1, 1, 2, 7, 1000, 2**40, 1.5, "", "x", "yes", "NoSchedule", "3g.40gb", "3g.20gb",
    "1g.10gb", "A100-SXM4-80GB", "L4", "Tesla-T4", "mig", "mps", "time-slicing", "hami", "none", "mixed",
    "single", "VolcanoJob", "Deployment", "24Gi", "0.5", "1e3", "nvidia.com/gpu", "gpu", [], {}, [1, 2],
    {"a": 1}, {"3g.40gb": 2}, {"strategy": "mig"}, ["n1", "n1"],
]  # fmt: skip


def paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            found += paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += paths(value, (*prefix, index))
    return found


def parent_of(data: Any, path: tuple[Any, ...]) -> Any:
    for part in path[:-1]:
        data = data[part]
    return data


@st.composite
def mutated_blueprints(draw: st.DrawFn) -> Any:
    data = copy.deepcopy(draw(st.sampled_from(EXAMPLES)))
    for _ in range(draw(st.integers(1, 4))):
        targets = [p for p in paths(data) if p]
        if not targets:
            break
        path = draw(st.sampled_from(targets))
        parent = parent_of(data, path)
        action = draw(st.sampled_from(["drop", "set", "duplicate", "rename", "copy"]))
        key = path[-1]
        if action == "drop":
            del parent[key]
        elif action == "set":
            parent[key] = copy.deepcopy(draw(st.sampled_from(ODD_VALUES)))
        elif action == "duplicate" and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[key]))
        elif action == "rename" and isinstance(parent, dict):
            parent[draw(st.sampled_from(["nodes", "pools", "name", "x-typo", "strategy", "count"]))] = parent.pop(key)
        elif action == "copy":
            donor = parent_of(data, (*draw(st.sampled_from(targets)), "_"))
            parent[key] = copy.deepcopy(donor)
    return data


def unplaced(diagnostic: Diagnostic) -> tuple[str, str, tuple[str | int, ...], str]:
    """What a diagnostic says, wherever it was raised: compile has no document to point into."""
    return (diagnostic.code, str(diagnostic.severity), diagnostic.path, diagnostic.message)


def assert_only_diagnostics(text: str) -> None:
    # The examples' workload templates are read from their folder, as `gpustack validate` reads them.
    result = validate_text(text, "fuzz.yaml", folder_templates(BLUEPRINTS))
    for diagnostic in result.diagnostics:
        assert diagnostic.code.startswith("GS") and diagnostic.message
        assert diagnostic.span is not None and diagnostic.span.start.line >= 1
    if result.ok and result.blueprint is not None:
        plan = compile_blueprint(sourceless(result.blueprint))
        validated = {unplaced(d) for d in result.diagnostics}
        assert {unplaced(d) for d in plan.diagnostics} <= validated, plan.diagnostics


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_blueprints())
def test_mutated_blueprints_give_diagnostics_or_compile(data: Any) -> None:
    assert_only_diagnostics(dump_yaml(data))


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet=" \n-:[]{}#&*!|>'\"abcdefgnopstu01.", max_size=200))
def test_random_text_gives_diagnostics(text: str) -> None:
    assert_only_diagnostics(text)


@settings(max_examples=100, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=8),
        lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
        max_leaves=20,
    )
)
def test_random_documents_give_diagnostics(data: Any) -> None:
    assert_only_diagnostics(dump_yaml({"apiVersion": "gpustack.io/v1alpha1", "kind": "ClusterBlueprint", "spec": data}))

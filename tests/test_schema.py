"""The blueprint JSON Schema, and the diagnostics (GS101-GS108) made from its errors."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from conftest import BLUEPRINTS, missing_reference
from jsonschema import Draft202012Validator

from gpustack import schema as shape
from gpustack import schema_fast
from gpustack.codes import (
    BAD_FORMAT,
    COMBINATION,
    DUPLICATE_ITEM,
    MISSING_FIELD,
    NOT_ALLOWED_VALUE,
    OUT_OF_RANGE,
    UNKNOWN_FIELD,
    WRONG_TYPE,
)
from gpustack.diagnostic import Severity
from gpustack.load import parse_document

REPO = Path(__file__).resolve().parents[1]
CASES = Path(__file__).parent / "cases" / "schema"
VALID = CASES / "valid"
SKETCH = REPO.parent / "shared" / "design" / "blueprint-sketch.yaml"

# The sketch's `pretrain` workload has no image, but docs/blueprint-format.md makes image required
# (a VolcanoJob cannot run without one). The spec wins; this is the only difference allowed.
SKETCH_GAPS = {(MISSING_FIELD, ("spec", "workloads", 1), "missing required field 'image' in workloads[1]")}


def check(text: str, file: str = "blueprint.yaml") -> list[Any]:
    return shape.check_shape(parse_document(text, file))


# --- the schema itself -------------------------------------------------------------------------


def walk(node: Any, pointer: str = "#") -> Iterator[tuple[str, Any]]:
    """Every subschema with its pointer, skipping `if` conditions (they test values, they declare nothing)."""
    if isinstance(node, dict):
        yield pointer, node
        for key, value in node.items():
            if key in ("if", "examples", "default", "enum", "const"):
                continue
            yield from walk(value, f"{pointer}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from walk(value, f"{pointer}/{index}")


def test_schema_is_valid_2020_12() -> None:
    schema = shape.load_schema()
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == "https://gpustack.io/schemas/blueprint/v1alpha1.json"
    assert schema["title"] and schema["description"]


def test_schemas_dir_serves_the_same_file() -> None:
    linked = REPO / "schemas" / "blueprint.schema.json"
    assert json.loads(linked.read_text()) == shape.load_schema()


def test_every_property_definition_and_value_schema_has_a_description() -> None:
    schema = shape.load_schema()
    missing = [f"#/$defs/{name}" for name, sub in schema["$defs"].items() if not sub.get("description")]
    for pointer, node in walk(schema):
        for name, sub in node.get("properties", {}).items() if isinstance(node.get("properties"), dict) else ():
            if isinstance(sub, dict) and not sub.get("description"):
                missing.append(f"{pointer}/properties/{name}")
        for key in ("items", "additionalProperties"):
            if isinstance(node.get(key), dict) and not node[key].get("description"):
                missing.append(f"{pointer}/{key}")
    assert missing == []


def test_every_object_is_closed_or_a_typed_map() -> None:
    def closed(node: dict[str, Any]) -> bool:
        extra = node.get("additionalProperties")
        return extra is False or isinstance(extra, dict)

    open_objects = [p for p, node in walk(shape.load_schema()) if node.get("type") == "object" and not closed(node)]
    assert open_objects == []


def test_schema_avoids_keywords_that_make_poor_errors() -> None:
    # oneOf buries the real error in its context; unevaluatedProperties cascades (research §5).
    text = json.dumps(shape.load_schema())
    assert '"oneOf"' not in text
    assert '"unevaluatedProperties"' not in text


def test_every_pattern_can_be_explained_in_words() -> None:
    # GS105 says the format with the first sentence of the description next to the pattern.
    schema = shape.load_schema()
    inline = [pointer for pointer, node in walk(schema) if "pattern" in node and not pointer.startswith("#/$defs/")]
    assert inline == []
    for name, node in schema["$defs"].items():
        if "pattern" in node:
            assert node.get("title"), name
            assert len(node["description"].split(". ")[0]) > 20, name


def test_every_ref_is_local() -> None:
    # gpustack.schema caches $ref lookups by ref string, which is only sound for refs into this file.
    schema = shape.load_schema()
    refs = [node["$ref"] for _, node in walk(schema) if "$ref" in node]
    assert refs and all(r.startswith("#/$defs/") and r.split("/")[-1] in schema["$defs"] for r in refs)


def test_every_enum_is_of_strings() -> None:
    for pointer, node in walk(shape.load_schema()):
        if "enum" in node:
            assert all(isinstance(v, str) for v in node["enum"]), pointer


# --- data-driven invalid cases -----------------------------------------------------------------


@dataclass
class Expected:
    code: str
    line: int
    column: int
    messages: list[str] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)


def expectations(text: str) -> list[Expected]:
    """`# expect: GS104 at 12:17`, optionally followed by `# message: ...` / `# hint: ...` substrings."""
    found: list[Expected] = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        if m := re.match(r"# expect: (GS\d{3}) at (\d+):(\d+)\s*$", line):
            found.append(Expected(m.group(1), int(m.group(2)), int(m.group(3))))
        elif m := re.match(r"# (message|hint): (.+)$", line):
            (found[-1].messages if m.group(1) == "message" else found[-1].hints).append(m.group(2))
    return found


CASE_FILES = sorted(CASES.glob("*.yaml"))


def test_cases_cover_every_shape_code() -> None:
    codes = {e.code for path in CASE_FILES for e in expectations(path.read_text())}
    assert codes == {f"GS10{n}" for n in range(1, 9)}


@pytest.mark.parametrize("path", CASE_FILES, ids=[p.stem for p in CASE_FILES])
def test_invalid_case(path: Path) -> None:
    text = path.read_text()
    expected = expectations(text)
    assert expected, f"{path.name} has no '# expect:' line"
    diagnostics = check(text, path.name)
    for d in diagnostics:
        assert d.span is not None, d
        assert d.span.file == path.name
        assert d.severity is Severity.ERROR
        assert d.hint, f"{d.code} has no hint"
        assert path.name not in d.message and not re.search(r"\bline \d", d.message), d.message
    shown = [
        f"{d.code} at {d.span.start.line}:{d.span.start.column}: {d.message} (hint: {d.hint})" for d in diagnostics
    ]
    for e in expected:
        matching = [
            d for d in diagnostics if (d.code, d.span.start.line, d.span.start.column) == (e.code, e.line, e.column)
        ]
        assert matching, f"{e.code} at {e.line}:{e.column} not among {shown}"
        d = matching[0]
        for part in e.messages:
            assert part in d.message, shown
        for part in e.hints:
            assert d.hint and part in d.hint, shown
    # Cases hold one mistake each: anything more is noise the collapsing should have removed.
    assert len(diagnostics) == len(expected), shown


# --- valid blueprints --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["minimal.yaml", "maximal.yaml"])
def test_valid_blueprint_has_no_diagnostics(name: str) -> None:
    path = VALID / name
    assert check(path.read_text(), name) == []


def declared_fields(schema: dict[str, Any]) -> set[str]:
    found: set[str] = set()

    def visit(node: Any, pointer: str) -> None:
        if not isinstance(node, dict):
            return
        for name, sub in node.get("properties", {}).items():
            found.add(f"{pointer}/properties/{name}")
            visit(sub, f"{pointer}/properties/{name}")
        for key in ("items", "additionalProperties"):
            visit(node.get(key), f"{pointer}/{key}")
        for index, sub in enumerate(node.get("anyOf", [])):
            visit(sub, f"{pointer}/anyOf/{index}")

    visit(schema, "#")
    for name, sub in schema["$defs"].items():
        visit(sub, f"#/$defs/{name}")
    return found


def used_fields(schema: dict[str, Any], data: Any) -> set[str]:
    found: set[str] = set()

    def visit(node: Any, pointer: str, value: Any) -> None:
        if not isinstance(node, dict):
            return
        if "$ref" in node:
            target = node["$ref"]
            visit(schema["$defs"][target.rsplit("/", 1)[1]], target, value)
        if isinstance(value, dict):
            for key, item in value.items():
                if key in node.get("properties", {}):
                    found.add(f"{pointer}/properties/{key}")
                    visit(node["properties"][key], f"{pointer}/properties/{key}", item)
                elif isinstance(node.get("additionalProperties"), dict):
                    visit(node["additionalProperties"], f"{pointer}/additionalProperties", item)
        if isinstance(value, list) and isinstance(node.get("items"), dict):
            for item in value:
                visit(node["items"], f"{pointer}/items", item)
        for index, sub in enumerate(node.get("anyOf", [])):
            visit(sub, f"{pointer}/anyOf/{index}", value)

    visit(schema, "#", data)
    return found


def test_maximal_blueprint_uses_every_field() -> None:
    schema = shape.load_schema()
    doc = parse_document((VALID / "maximal.yaml").read_text(), "maximal.yaml")
    assert sorted(declared_fields(schema) - used_fields(schema, doc.data)) == []


def test_maximal_blueprint_uses_every_strategy_and_kind() -> None:
    data = parse_document((VALID / "maximal.yaml").read_text(), "maximal.yaml").data
    spec = data["spec"]
    assert {p.get("sharing", {}).get("strategy") for p in spec["nodePools"]} >= {
        "none",
        "time-slicing",
        "mps",
        "mig",
        "hami",
    }
    assert {w["kind"] for w in spec["workloads"]} == {
        "Deployment",
        "StatefulSet",
        "Job",
        "VolcanoJob",
        "JobSet",
        "LeaderWorkerSet",
    }


def test_sketch_validates() -> None:
    if not SKETCH.exists():
        pytest.skip(
            missing_reference(
                "The original blueprint design sketch (blueprint-sketch.yaml)",
                "that the schema accepts it",
                "shared/design",
            )
        )
    diagnostics = check(SKETCH.read_text(), SKETCH.name)
    assert [(d.code, d.path, d.message) for d in diagnostics if (d.code, d.path, d.message) not in SKETCH_GAPS] == []


# --- messages and positions --------------------------------------------------------------------

BASE = """\
apiVersion: gpustack.io/v1alpha1
kind: ClusterBlueprint
metadata: {name: demo}
spec:
  kubernetes: {version: "1.31"}
  nodePools:
"""


def test_unknown_field_without_a_close_match_lists_the_allowed_fields() -> None:
    [d] = check(BASE + "    - {name: a, gpu: {model: L4, count: 1, vendor: nvidia}, nodes: [n1]}\n")
    assert d.code == UNKNOWN_FIELD
    assert d.message == "unknown field 'vendor' in nodePools[0].gpu"
    assert d.hint == "allowed fields here: model, count"
    assert d.path == ("spec", "nodePools", 0, "gpu", "vendor")
    assert (d.span.start.line, d.span.start.column) == (7, 44)


def test_missing_field_says_what_the_field_is_for() -> None:
    [d] = check(BASE + "    - {name: a, gpu: {model: L4}, nodes: [n1]}\n")
    assert d.code == MISSING_FIELD
    assert d.message == "missing required field 'count' in nodePools[0].gpu"
    assert d.hint == "'count': How many GPUs each node has."
    assert d.path == ("spec", "nodePools", 0, "gpu")


def test_every_error_is_reported_in_source_order() -> None:
    text = BASE + (
        "    - name: Pool_A\n"
        "      gpu: {model: L4, count: 0}\n"
        "      nodes: [n1]\n"
        "      taints: [{key: k, effect: NoExecut}]\n"
    )
    diagnostics = check(text)
    assert [(d.code, d.span.start.line) for d in diagnostics] == [
        (BAD_FORMAT, 7),
        (OUT_OF_RANGE, 8),
        (NOT_ALLOWED_VALUE, 10),
    ]


def test_duplicate_points_at_the_repeat_and_relates_the_first() -> None:
    [d] = check(BASE + "    - {name: a, gpu: {model: L4, count: 1}, nodes: [n1, n2, n1]}\n")
    assert d.code == DUPLICATE_ITEM
    assert d.path == ("spec", "nodePools", 0, "nodes", 2)
    assert d.span.start.column == 61
    assert [s.start.column for s in d.related] == [53]


def test_wrong_type_in_a_choice_of_types_names_both() -> None:
    [d] = check(BASE + "    - {name: a, gpu: {model: L4, count: 1}, nodes: [n1], nodeResources: {cpu: true}}\n")
    assert d.code == WRONG_TYPE
    assert d.message == "wrong type for nodePools[0].nodeResources.cpu: expected a string or a number, got boolean true"
    # "true" quoted is no CPU amount either: no quote-it hint, say what a CPU amount is instead
    assert d.hint and d.hint.startswith("A CPU amount: a number of cores or a Kubernetes quantity")


def test_quote_it_only_when_the_quoted_value_would_pass() -> None:
    text = BASE + "    - {name: a, gpu: {model: L4, count: 1}, nodes: [n1], labels: {version: 1.10}}\n"
    [d] = check(text)
    assert (d.code, d.hint) == (WRONG_TYPE, 'quote it: "1.10"')
    pool = "    - {name: a, gpu: {model: L4, count: 1}, nodes: [n1]}\n"
    text = BASE + pool + "  devicePlugin: {flags: {deviceIDStrategy: 1}}\n"
    [d] = check(text)
    assert (d.code, d.hint) == (WRONG_TYPE, "allowed values: uuid, index")


def test_yes_is_a_string_and_gets_a_hint_where_a_bool_belongs() -> None:
    text = BASE + "    - {name: a, gpu: {model: L4, count: 1}, nodes: [n1]}\n  devicePlugin: {gfd: yes}\n"
    [d] = check(text)
    assert d.code == WRONG_TYPE
    assert d.message == "wrong type for devicePlugin.gfd: expected true or false, got string 'yes'"
    assert d.hint and d.hint.startswith("write true or false")


def test_root_that_is_not_a_mapping() -> None:
    [d] = check("- a\n- b\n")
    assert d.code == WRONG_TYPE
    assert d.message == "wrong type for the blueprint: expected a mapping, got a list"
    assert d.path == ()


def test_mig_block_beside_mps_is_left_to_the_semantic_check() -> None:
    # GS401 (gpustack.checks.sharing) names MPS+MIG and explains the device plugin's refusal.
    text = BASE + (
        "    - name: a\n"
        "      gpu: {model: A100-SXM4-80GB, count: 8}\n"
        "      nodes: [n1]\n"
        '      sharing: {strategy: mps, mps: {replicas: 4}, mig: {strategy: mixed, layout: {"3g.40gb": 2}}}\n'
    )
    assert check(text) == []


def test_a_forbidden_block_hides_the_errors_inside_it() -> None:
    text = BASE + (
        "    - name: a\n"
        "      gpu: {model: L4, count: 1}\n"
        "      nodes: [n1]\n"
        "      sharing: {strategy: none, timeSlicing: {replicas: 0, bogus: 1}}\n"
    )
    [d] = check(text)
    assert d.code == COMBINATION
    assert d.path == ("spec", "nodePools", 0, "sharing", "timeSlicing")


# --- speed -------------------------------------------------------------------------------------


def big_blueprint(pools: int) -> str:
    lines = [BASE.rstrip("\n")]
    for i in range(pools):
        lines += [
            f"    - name: pool-{i}",
            "      gpu: {model: A100-SXM4-80GB, count: 8}",
            f"      nodes: [node-{i}-a, node-{i}-b]",
            "      labels: {gpu-pool: inference}",
            "      taints: [{key: gpu-pool, value: inference, effect: NoSchedule}]",
            '      sharing: {strategy: mig, mig: {strategy: mixed, layout: {"3g.40gb": 2, "1g.10gb": 1}}}',
        ]
    return "\n".join(lines) + "\n"


def test_validator_is_built_once_and_a_thousand_pools_check_clean() -> None:
    doc = parse_document(big_blueprint(1000), "big.yaml")
    assert shape.check_shape(doc) == []
    built = schema_fast.shape_validator.cache_info().misses
    assert shape.check_shape(doc) == []
    assert schema_fast.shape_validator.cache_info().misses == built == 1
    assert shape.load_schema() is shape.load_schema()


# --- robustness --------------------------------------------------------------------------------

ODD_VALUES: list[Any] = [None, True, 0, -1, 1.5, "", "Bad_Name", [], [1, "a"], {}, {"z": 1}, "NoSchedul"]


def test_mangled_blueprints_give_located_hinted_diagnostics_never_exceptions() -> None:
    # Bad input must become diagnostics, never a traceback: mangle the maximal blueprint at random
    # (fixed seed) and check that every diagnostic is located, hinted and reported once.
    import copy
    import random

    import yaml

    from gpustack.diagnostic import DiagnosticError

    base = parse_document((VALID / "maximal.yaml").read_text(), "maximal.yaml").data
    rnd = random.Random(20260101)

    def paths(node: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
        if at:
            yield at
        children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, child in children:
            yield from paths(child, (*at, key))

    for _ in range(100):
        data = copy.deepcopy(base)
        for _ in range(rnd.randint(1, 3)):
            path = rnd.choice(list(paths(data)))
            parent = data
            for step in path[:-1]:
                parent = parent[step]
            if rnd.random() < 0.7:
                parent[path[-1]] = copy.deepcopy(rnd.choice(ODD_VALUES))
            elif isinstance(parent, dict):
                del parent[path[-1]]
        try:
            doc = parse_document(yaml.safe_dump(data, sort_keys=False), "mangled.yaml")
        except DiagnosticError:
            continue
        diagnostics = shape.check_shape(doc)
        assert len({(d.code, d.path, d.message) for d in diagnostics}) == len(diagnostics)
        assert all(d.span is not None and d.hint and d.code in shape.SHAPE_CODES for d in diagnostics)


def test_the_shape_check_forgets_the_values_it_found_valid() -> None:
    """The values a `$ref` target passed are one document's (schema_fast._VALID): remembered during its check, gone
    once it is done, so they are not held through the compile that follows, and a check of the same document again
    finds what the first found."""
    doc = parse_document((BLUEPRINTS / "multi-tenant.yaml").read_text(encoding="utf-8"), "multi-tenant.yaml")
    assert shape.check_shape(doc) == [] and not schema_fast._VALID
    broken = parse_document(doc.text.rstrip("\n") + "\nbogus: 1\n", "broken.yaml")
    first = shape.check_shape(broken)
    assert [d.code for d in first] == [UNKNOWN_FIELD] and not schema_fast._VALID
    assert shape.check_shape(broken) == first

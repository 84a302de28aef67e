"""YAML anchors and aliases: accepted, copied where they are used, and bounded by go-yaml's expansion budget.

Issue 32 item 7: aliases are everyday YAML (Compose, CI files, Helm values); the threat is expansion, so a budget
relative to the document (go-yaml v3's allowedAliasRatio) refuses alias bombs before they are copied, and a
diagnostic about an aliased value stands where the alias is used, with a note where the anchor is written.
"""

from __future__ import annotations

import time
import tracemalloc
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpustack.cli import group
from gpustack.cluster.snapshot import parse_snapshot
from gpustack.codes import ALIAS, TOO_DEEP, YAML_SYNTAX
from gpustack.diagnostic import Diagnostic, DiagnosticError, Position
from gpustack.event_reader import MAX_DEPTH, allowed_alias_ratio, over_alias_budget
from gpustack.load import parse_document

BLUEPRINT = """\
apiVersion: gpustack.io/v1alpha1
kind: ClusterBlueprint
metadata:
  name: aliases
spec:
  kubernetes:
    version: "1.31"
  nodePools:
    - name: h100
      gpu: {model: H100-SXM5-80GB, count: 8}
      nodes: [n1, n2]
      taints: &taints
        - {key: gpustack.io/pool, value: h100, effect: NoSchedule}
    - name: h100b
      gpu: {model: H100-SXM5-80GB, count: 8}
      nodes: [n3]
      taints: *taints
  tenants:
    - name: research
      namespaces: [research]
      pools: [h100]
      quota:
        h100: &quota {gpu: 16}
    - name: other
      namespaces: [other]
      pools: [h100b]
      quota:
        h100b: *quota
"""


def refused(text: str) -> tuple[Diagnostic, ...]:
    with pytest.raises(DiagnosticError) as raised:
        parse_document(text, "b.yaml")
    return raised.value.diagnostics


def run_cli(tmp_path: Path, text: str) -> tuple[int, str]:
    (tmp_path / "b.yaml").write_text(text)
    result = CliRunner().invoke(group, ["validate", str(tmp_path / "b.yaml")])
    return result.exit_code, result.output


# --- accepted ---------------------------------------------------------------------------------------


def test_a_blueprint_with_anchors_and_aliases_validates(tmp_path: Path) -> None:
    code, output = run_cli(tmp_path, BLUEPRINT)
    assert code == 0, output


def test_an_alias_is_a_copy_located_where_it_is_used() -> None:
    document = parse_document(BLUEPRINT, "b.yaml")
    pools = document.data["spec"]["nodePools"]
    assert pools[1]["taints"] == pools[0]["taints"]
    assert pools[1]["taints"] is not pools[0]["taints"]  # no two paths share a container
    assert pools[1]["taints"][0] is not pools[0]["taints"][0]
    taints = ("spec", "nodePools", 1, "taints")
    assert document.span(taints).start == Position(17, 15)  # `*taints`
    assert document.span((*taints, 0, "key")).start == Position(17, 15)  # inside the alias: still the use site
    assert document.alias_origins[taints] == Position(12, 15)  # `&taints`
    # What compile keeps finds the same places again from the text.
    assert document.text_only().alias_origins[taints] == Position(12, 15)


def test_a_diagnostic_inside_an_aliased_value_stands_where_it_is_used_with_a_note_at_the_anchor(
    tmp_path: Path,
) -> None:
    text = BLUEPRINT.replace("&quota {gpu: 16}", "&quota {gpu: 16, bogus: 1}")
    code, output = run_cli(tmp_path, text)
    assert code == 1
    file = str(tmp_path / "b.yaml")
    # Where it is written: no note. Where it is used: the alias's line, and a note at the anchor's.
    assert f"{file}:23:32: error[GS105]" in output
    assert f"{file}:28:16: error[GS105]" in output
    assert output.count(f"note: see {file}:23:15") == 1
    assert output.index(f"{file}:28:16") < output.index(f"note: see {file}:23:15")


def test_scalars_and_keys_may_be_aliased() -> None:
    document = parse_document("name: &n pool-a\nother: *n\n? *n\n: 3\nport: &p 8000\nagain: *p\n", "b.yaml")
    assert document.data == {"name": "pool-a", "other": "pool-a", "pool-a": 3, "port": 8000, "again": 8000}


def test_an_anchor_may_be_redefined_and_the_latest_wins() -> None:
    document = parse_document("a: &x 1\nb: *x\nc: &x 2\nd: *x\n", "b.yaml")
    assert document.data == {"a": 1, "b": 1, "c": 2, "d": 2}


def test_what_go_yaml_allows_is_allowed() -> None:
    # One anchor of 100 scalars aliased 150 times: 15,150 aliased nodes beside 255 written out (98.3%).
    anchor = "base: &b [" + ", ".join("x" for _ in range(100)) + "]\n"
    document = parse_document(anchor + "".join(f"c{n}: *b\n" for n in range(150)), "b.yaml")
    assert len(document.data) == 151


# --- refused ----------------------------------------------------------------------------------------


def test_the_budget_is_go_yamls() -> None:
    assert allowed_alias_ratio(1_000) == allowed_alias_ratio(400_000) == 0.99
    assert allowed_alias_ratio(4_000_000) == allowed_alias_ratio(8_000_000) == 0.10
    assert allowed_alias_ratio(2_200_000) == pytest.approx(0.545)
    assert not over_alias_budget(1, 100)  # up to 100 aliased nodes are always allowed
    assert not over_alias_budget(5, 995)  # so is any document of up to 1,000 nodes
    assert over_alias_budget(5, 996)
    assert not over_alias_budget(1_000, 99_000)  # 99%
    assert over_alias_budget(1_000, 99_001)


def test_a_wide_bomb_is_refused_before_it_is_copied() -> None:
    # One anchor of 1,000 scalars aliased 10,000 times: 10 million nodes once expanded, from 60 kB of text.
    anchor = "base: &b [" + ", ".join("x" for _ in range(1000)) + "]\n"
    text = anchor + "all: [" + ", ".join("*b" for _ in range(10_000)) + "]\n"
    tracemalloc.start()
    started = time.perf_counter()
    try:
        (diagnostic,) = refused(text)
        elapsed = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert diagnostic.code == ALIAS
    assert diagnostic.path == ("all", 99)  # the first alias over budget, none after it
    assert diagnostic.related[0].start == Position(1, 7)  # where `&b` is
    assert elapsed < 2
    assert peak < 20_000_000  # 99 copies of 1,001 nodes at most


def test_a_nested_bomb_in_a_cluster_snapshot_is_refused() -> None:
    levels = ["a0: &a0 [" + ", ".join(["lol"] * 10) + "]"]
    levels += [f"a{n}: &a{n} [" + ", ".join([f"*a{n - 1}"] * 10) + "]" for n in range(1, 12)]
    text = "apiVersion: v1\nkind: List\nmetadata: {}\n" + "\n".join(levels) + "\nitems: []\n"
    started = time.perf_counter()
    with pytest.raises(DiagnosticError) as raised:
        parse_snapshot(text, "snapshot.yaml")
    assert time.perf_counter() - started < 2
    assert [d.code for d in raised.value.diagnostics] == [ALIAS]


def test_an_alias_of_its_own_enclosing_anchor_or_of_nothing_is_a_syntax_error() -> None:
    (cycle,) = refused("a: &x [1, *x]\n")
    assert (cycle.code, cycle.span.start if cycle.span else None) == (YAML_SYNTAX, Position(1, 11))
    (later,) = refused("a: *x\nb: &x 1\n")
    assert later.code == YAML_SYNTAX and "names no anchor defined before it" in later.message


def test_an_alias_that_would_nest_too_deep_where_it_is_used_is_refused() -> None:
    depth = MAX_DEPTH - 2
    text = "a: &deep " + "[" * depth + "]" * depth + "\nb: [[*deep]]\n"
    (diagnostic,) = refused(text)
    assert diagnostic.code == TOO_DEEP
    assert parse_document("a: &deep " + "[" * depth + "]" * depth + "\nb: [*deep]\n", "b.yaml").data["b"]


def test_merge_keys_stay_refused_once() -> None:
    found = refused("base: &b {x: 1}\none:\n  <<: *b\ntwo:\n  <<: *b\n")
    assert [(d.code, d.span.start if d.span else None) for d in found] == [(ALIAS, Position(3, 3))]
    assert "YAML 1.2 has no merge keys" in found[0].message

"""Compile's memory tricks (bench/README.md, "memory") leave every object as it was: the parts objects share within a
compile (`plan.shared_part`), the apply order sorted in two passes, and Manifest's slots."""

from __future__ import annotations

import contextlib
import importlib.util
import marshal
import pickle
import random
from pathlib import Path
from typing import Any

import pytest
from builders import sourceless
from conftest import BLUEPRINTS, REPO

import gpustack.compile as compile_package
from gpustack.compile import KIND_RANK, WORKLOAD_RANK, apply_order, compile_blueprint
from gpustack.compile.cel import declare
from gpustack.compile.nodes import TAINTS_FAMILY
from gpustack.outputs import render_files
from gpustack.plan import Manifest, Plan, shared_part, shared_text, sharing_parts
from gpustack.simulate import run_simulation
from gpustack.validation import validate_path, validate_text

EXAMPLES = sorted(BLUEPRINTS.glob("*.yaml")) + sorted((BLUEPRINTS / "cloud").glob("*.yaml"))


def many_pools() -> str:
    """bench's many-pools shape at 1x: 100 pools, 1,000 nodes, 50 tenants, 50 workloads."""
    spec = importlib.util.spec_from_file_location("fleet", REPO / "bench" / "fleet.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text: str = module.many_pools(1)
    return text


def exactly(plan: Plan) -> list[tuple[str, str, bytes]]:
    # marshal version 2 writes no back-references: the bytes are the value's, whatever parts it shares.
    return [(m.family, m.file, marshal.dumps(m.obj, 2)) for m in plan.objects]


def unshared(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compile_package, "sharing_parts", contextlib.nullcontext)


@pytest.mark.parametrize("example", [*EXAMPLES, "many-pools"], ids=lambda p: getattr(p, "stem", p))
def test_shared_parts_change_no_object_and_no_file(example: Path | str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each part is keyed by all it is made of, and no builder changes a part once another object holds it (a policy
    that matches KAI's PodGroups too gets match constraints of its own): compiled with and without sharing, every
    object has the same bytes, in the same order, in the same files."""
    result = validate_text(many_pools(), "many-pools.yaml") if example == "many-pools" else validate_path(example)
    assert result.blueprint is not None
    shared = compile_blueprint(sourceless(result.blueprint))
    unshared(monkeypatch)
    fresh = compile_blueprint(sourceless(result.blueprint))
    assert exactly(shared) == exactly(fresh)
    assert render_files(shared) == render_files(fresh)


@pytest.mark.parametrize("example", [*EXAMPLES, "many-pools"], ids=lambda p: getattr(p, "stem", p))
def test_simulating_a_plan_changes_none_of_its_shared_parts(example: Path | str) -> None:
    """Simulate reads the compiled objects (its pods from their templates): were it to change a shared part, every
    other object holding it would change too. (Writing, reviewing and registering: tests/test_registration.py.)"""
    result = validate_text(many_pools(), "many-pools.yaml") if example == "many-pools" else validate_path(example)
    assert result.context is not None
    plan = compile_blueprint(result.context)
    pristine = exactly(plan)
    run_simulation(result.context, [m.obj for m in plan.objects])
    assert exactly(plan) == pristine


def distinct(parts: list[Any]) -> int:
    return len({id(part) for part in parts})


def test_a_fleet_holds_each_repeated_part_once() -> None:
    """What keeps compile's peak within 3x its stream at many-pools 10x: the tenants' policies hold one object per
    distinct variable, CEL message and match constraints, a tenant's objects one labels mapping, and a pool's taint
    patches one spec."""
    result = validate_text(many_pools(), "many-pools.yaml")
    assert result.context is not None
    plan = compile_blueprint(result.context)
    policies = [m.obj for m in plan.objects if m.kind == "ValidatingAdmissionPolicy"]
    assert len(policies) > 50
    variables = [v for p in policies for v in p["spec"]["variables"]]
    assert distinct(variables) * 4 < len(variables)
    assert distinct([p["spec"]["matchConstraints"] for p in policies]) == 1
    messages = [v["messageExpression"] for p in policies for v in p["spec"]["validations"]]
    assert len({id(m) for m in messages}) < len(messages) * 0.7
    tenant_objects = [m.obj for m in plan.objects if m.file == "tenants/tenant-0000.yaml"]
    assert len(tenant_objects) >= 3 and distinct([o["metadata"]["labels"] for o in tenant_objects]) == 1
    for pool in plan.pools[:3]:
        patches = [m.obj for m in plan.by_family(TAINTS_FAMILY) if m.name in pool.nodes]
        assert len(patches) > 1 and distinct([o["spec"] for o in patches]) == 1


def test_outside_a_compile_every_part_is_fresh() -> None:
    """The fallback: a builder called by a check, a test or a tool shares nothing."""
    assert declare("specs", "[object.spec]") == declare("specs", "[object.spec]")
    assert declare("specs", "[object.spec]") is not declare("specs", "[object.spec]")
    assert shared_part(("k",), dict) is not shared_part(("k",), dict)
    text = "".join(["a", "b"])
    assert shared_text(text) is text
    with sharing_parts():
        outer = shared_part(("k",), dict)
        assert shared_part(("k",), dict) is outer
        assert shared_text("".join(["a", "b"])) is shared_text("".join(["a", "b"]))
        with sharing_parts():  # a compile inside a compile has parts of its own
            assert shared_part(("k",), dict) is not outer
        assert shared_part(("k",), dict) is outer
    assert shared_part(("k",), dict) is not shared_part(("k",), dict)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_the_two_pass_apply_order_is_the_one_key_order(example: Path) -> None:
    result = validate_path(example)
    assert result.blueprint is not None
    plan = compile_blueprint(sourceless(result.blueprint))
    objects = list(plan.objects)
    random.Random(example.stem).shuffle(objects)

    def one_key(m: Manifest) -> tuple[int, str, str, str]:
        return (KIND_RANK.get(m.kind, WORKLOAD_RANK), m.namespace or "", m.kind, m.name)

    assert apply_order(list(objects)) == tuple(sorted(objects, key=one_key))


def test_a_manifest_keeps_its_key_and_travels_whole() -> None:
    """Slots instead of a dict per Manifest; the key is still worked out once, and a Manifest pickles (the fleet's
    worker processes)."""
    manifest = Manifest("tenants", "t.yaml", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}})
    assert not hasattr(manifest, "__dict__")
    assert manifest.key == "v1/Namespace//a" and manifest.key is manifest.key
    copied = pickle.loads(pickle.dumps(manifest))
    assert copied == manifest and copied.key == manifest.key
    assert "_key" not in repr(manifest)

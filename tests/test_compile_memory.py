"""Compile's memory tricks (bench/README.md, "memory") leave every object as it was: the apply order sorted in two
passes, and Manifest's slots."""

from __future__ import annotations

import pickle
import random
from pathlib import Path

import pytest
from builders import sourceless
from conftest import BLUEPRINTS

from gpustack.compile import KIND_RANK, WORKLOAD_RANK, apply_order, compile_blueprint
from gpustack.plan import Manifest
from gpustack.validation import validate_path

EXAMPLES = sorted(BLUEPRINTS.glob("*.yaml")) + sorted((BLUEPRINTS / "cloud").glob("*.yaml"))


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

"""The stages that run with the cyclic collector paused (gpustack/collector.py) leave no cycles behind on a valid
blueprint but one Jinja sandbox per distinct template: a cycle made in a pause is kept until the pause ends."""

from __future__ import annotations

import gc
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from builders import sourceless
from cluster_from import snapshot_data
from conftest import BLUEPRINTS, shipped_examples

from gpustack.capacity import measure_capacity
from gpustack.catalog import load_catalog
from gpustack.cluster.drift import compare, format_markdown, format_text, report_data
from gpustack.cluster.importer import import_snapshot
from gpustack.cluster.snapshot import parse_snapshot
from gpustack.collector import paused
from gpustack.compile import compile_blueprint
from gpustack.context import Context, unplaced
from gpustack.diagnostic import DiagnosticError
from gpustack.load import parse_document, read_document
from gpustack.outputs import render_files, render_stream
from gpustack.review.review import review_change
from gpustack.review.snapshot import Snapshot
from gpustack.simulate import run_simulation
from gpustack.validation import validate_path, validate_text
from gpustack.yamlout import dump_yaml

# Plain containers (what a Jinja sandbox's cycle is made of, with the kinds in JINJA); anything else is a bug.
CONTAINERS = {"dict", "list", "tuple", "deque", "cell", "function", "set"}


@pytest.fixture
def cyclic_garbage() -> Iterator[Callable[[Callable[[], Any]], list[Any]]]:
    def collect(action: Callable[[], Any]) -> list[Any]:
        action()  # once first: the first validation builds jsonschema's validator class, once per process
        gc.collect()
        gc.disable()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            action()
            gc.collect()
            found = list(gc.garbage)
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
            gc.enable()
        return found

    yield collect


def _kinds(objects: list[Any]) -> set[str]:
    return {f"{type(o).__module__}.{type(o).__name__}" for o in objects if type(o).__name__ not in CONTAINERS}


# One sandbox per distinct template and run (workload_templates._compiled) is a cycle of Jinja objects, whatever the
# number of workloads that use it. Nothing else may.
JINJA = {
    "jinja2.sandbox.SandboxedEnvironment",
    "jinja2.environment.Template",
    "jinja2.loaders.FunctionLoader",
    "jinja2.utils.LRUCache",
    "collections.ChainMap",
    "_thread.lock",
    "weakref.ReferenceType",
    "builtins.builtin_function_or_method",
}
EXAMPLES = shipped_examples()


def _sandboxes(objects: list[Any]) -> int:
    return sum(type(o).__name__ == "SandboxedEnvironment" for o in objects)


def _templates(path: Path) -> int:
    blueprint = validate_path(path).blueprint
    assert blueprint is not None
    return len({w.template for w in blueprint.workloads if w.template is not None})


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_compiling_writing_simulating_and_reviewing_make_no_cycles_but_one_sandbox_per_template(
    cyclic_garbage: Any, path: Path
) -> None:
    blueprint = validate_path(path).blueprint
    assert blueprint is not None

    def stages() -> None:
        plan = compile_blueprint(sourceless(blueprint))
        render_files(plan)
        render_stream(plan)
        run_simulation(sourceless(blueprint), [m.obj for m in plan.objects])
        measure_capacity(Context(blueprint, load_catalog(), unplaced))
        review_change(Snapshot("base", None), Snapshot(str(path), sourceless(blueprint)))
        review_change(Snapshot("old", sourceless(blueprint)), Snapshot("new", sourceless(blueprint)))

    garbage = cyclic_garbage(stages)
    assert _kinds(garbage) <= JINJA
    assert _sandboxes(garbage) == 4 * _templates(path)  # compiled four times: above and for three review sides


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_validating_leaves_no_cycles_but_one_sandbox_per_template(cyclic_garbage: Any, path: Path) -> None:
    garbage = cyclic_garbage(lambda: validate_path(path))
    assert _kinds(garbage) <= JINJA
    assert _sandboxes(garbage) == _templates(path)
    if not _templates(path):  # validate_document then hands what it built over unwalked: it must hold no cycle
        assert garbage == []


def test_a_pause_restores_the_collector_and_nests() -> None:
    assert gc.isenabled()
    with paused():
        assert not gc.isenabled()
        with paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer pause still holds
    assert gc.isenabled()
    gc.disable()
    try:
        with paused():
            pass
        assert not gc.isenabled()  # a collector that was off stays off
    finally:
        gc.enable()


def _generation_of(obj: Any) -> int | None:
    return next((g for g in range(3) if any(o is obj for o in gc.get_objects(generation=g))), None)


def test_the_readers_data_is_handed_to_the_oldest_generation_unwalked() -> None:
    # Read with the collector on, as a command does: the young collection that follows a pause would walk the whole
    # document to find no cycle; instead its data goes straight to the oldest generation (gpustack/collector.py).
    assert gc.isenabled()
    document = read_document(EXAMPLES[0])
    assert _generation_of(document.data) == 2


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_a_validation_hands_over_what_it_built_only_where_no_template_was_rendered(path: Path) -> None:
    assert gc.isenabled()
    result = validate_path(path)
    assert result.blueprint is not None
    assert (_generation_of(result.blueprint) == 2) == (not result.blueprint.templates)
    with pytest.raises(DiagnosticError):  # a failed read hands nothing over: its error and traceback stay young
        parse_document("a: [1\n", "broken.yaml")


def test_an_acyclic_pause_thaws_nothing_another_froze() -> None:
    kept = {"frozen": ["by someone else"]}
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with paused(acyclic=True):
            made = {"young": []}
        assert gc.get_freeze_count() == frozen  # not thawed into the oldest generation
        assert _generation_of(made) in (0, 1)  # and the block's objects were left to the young collections
        assert _generation_of(kept) is None  # still frozen: in no generation
    finally:
        gc.unfreeze()


def test_workloads_sharing_a_template_share_one_sandbox(cyclic_garbage: Any, tmp_path: Path) -> None:
    shutil.copytree(BLUEPRINTS / "templates", tmp_path / "templates")
    text = (BLUEPRINTS / "multi-tenant.yaml").read_text(encoding="utf-8")
    second = text[text.index("    - name: finetune\n") :].split("\n      prefer:")[0]
    text = text.replace(second, second + "\n" + second.replace("name: finetune", "name: finetune-again", 1), 1)
    path = tmp_path / "multi-tenant.yaml"
    path.write_text(text, encoding="utf-8")
    result = validate_path(path)
    assert result.ok and result.blueprint is not None, [d.message for d in result.diagnostics]
    assert [w.template for w in result.blueprint.workloads].count("templates/finetune-job.yaml.j2") == 2
    assert _sandboxes(cyclic_garbage(lambda: validate_path(path))) == 1
    assert _sandboxes(cyclic_garbage(lambda: compile_blueprint(sourceless(result.blueprint)))) == 1  # type: ignore[arg-type]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_reading_a_cluster_makes_no_cycles_but_one_sandbox_per_template(cyclic_garbage: Any, path: Path) -> None:
    """`gpustack drift` and `gpustack import` run paused whole (commands/): reading the snapshot, comparing it or
    inferring a blueprint from it and validating that, the reports."""
    blueprint = validate_path(path).blueprint
    assert blueprint is not None
    text = dump_yaml(snapshot_data(blueprint))

    def stages() -> None:
        context = sourceless(blueprint)
        drift = compare(context, compile_blueprint(context), parse_snapshot(text, "cluster.yaml"), str(path))
        format_text(drift)
        format_markdown(drift)
        report_data(drift)
        imported = import_snapshot(parse_snapshot(text, "cluster.yaml"), "imported")
        assert imported.text and validate_text(imported.text, "imported.yaml").ok

    garbage = cyclic_garbage(stages)
    assert _kinds(garbage) <= JINJA
    assert _sandboxes(garbage) == _templates(path)

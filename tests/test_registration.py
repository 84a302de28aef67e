"""What GpuCluster registers, decided without Pulumi: every compiled object once, in stages, each stage after all
earlier ones. tests/test_deploy.py checks that the Pulumi half registers exactly this."""

from __future__ import annotations

import copy
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from builders import sourceless
from conftest import BLUEPRINTS, CASES, shipped_examples

from gpustack.compile import compile_blueprint
from gpustack.compile.nodes import FAMILY as NODES_FAMILY
from gpustack.compile.nodes import TAINTS_FAMILY
from gpustack.outputs import KUSTOMIZATION, render_files
from gpustack.registration import (
    FIELD_MANAGER_ANNOTATION,
    ChartInstall,
    DeployPlan,
    InvalidBlueprint,
    NodeLabels,
    ObjectGroup,
    Registration,
    RegistrationOptions,
    ReleaseNamespace,
    deploy_plan,
    load_blueprint,
    registrations,
)
from gpustack.review.review import review_change
from gpustack.review.snapshot import Snapshot
from gpustack.validation import validate_path

EXAMPLES = shipped_examples()
# The stage of each ConfigGroup: a registration waits for exactly the registrations of earlier stages.
GROUP_STAGES = {
    "namespaces": 0,
    "cluster": 1,
    "tenancy": 1,
    "custom-resources": 4,
    "workloads": 5,
    "custom-workloads": 5,
}


def cut(path: Path, **kwargs: Any) -> DeployPlan:
    context = validate_path(path).context
    assert context is not None
    return deploy_plan(context, **kwargs)


def stage(step: Registration) -> int:
    if isinstance(step, ObjectGroup):
        return GROUP_STAGES[step.group]
    if isinstance(step, ReleaseNamespace):
        return 0
    return 2 if isinstance(step, NodeLabels) else 3


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_each_registration_waits_for_every_earlier_stage_and_nothing_else(path: Path) -> None:
    steps = registrations(cut(path), "gs")
    stages = [stage(s) for s in steps]
    assert stages == sorted(stages)  # registered in stage order
    for step, at in zip(steps, stages, strict=True):
        earlier = {s.name for s, other in zip(steps, stages, strict=True) if other < at}
        assert set(step.depends_on) == earlier, step.name
    assert len({s.name for s in steps}) == len(steps)  # Pulumi names are unique


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_the_registrations_carry_exactly_what_gpustack_compile_writes(path: Path) -> None:
    plan = compile_blueprint(sourceless(validate_path(path).blueprint))  # type: ignore[arg-type]
    files = render_files(plan)
    written = [doc for f in yaml.safe_load(files[KUSTOMIZATION])["resources"] for doc in yaml.safe_load_all(files[f])]
    steps = registrations(cut(path), "gs")
    objects = [obj for s in steps if isinstance(s, ObjectGroup) for obj in s.objects]
    assert sorted(map(repr, objects)) == sorted(repr(d) for d in written if d["kind"] != "Node")
    # Node objects stay out of the kustomization (applying one that does not exist creates it); Pulumi patches the
    # static pools' nodes with exactly the labels of nodes/nodes.yaml.
    labelled = {m.name: m.obj["metadata"]["labels"] for m in plan.objects if m.kind == "Node" and m.family == "nodes"}
    assert not any(d["kind"] == "Node" for d in written)
    assert {s.node: s.metadata["labels"] for s in steps if isinstance(s, NodeLabels)} == labelled
    charts = [s.release for s in steps if isinstance(s, ChartInstall)]
    assert charts == list(plan.releases)


def test_the_gpu_operator_volcano_and_hami_install_as_helm_releases_for_their_hooks() -> None:
    for path in (BLUEPRINTS / "volcano.yaml", BLUEPRINTS / "hami.yaml"):
        installs = {
            s.release.chart: s.as_release for s in registrations(cut(path), "gs") if isinstance(s, ChartInstall)
        }
        assert installs.pop("gpu-operator") is True
        assert installs and all(installs.values()), installs


def test_options_reach_the_registrations_without_touching_the_plan() -> None:
    plan = cut(BLUEPRINTS / "quickstart.yaml", own_node_taints=True)
    options = RegistrationOptions(
        retain_node_labels_on_delete=False, object_field_manager="gpustack", await_workloads=False
    )
    steps = registrations(plan, "gs", options)
    groups = [s for s in steps if isinstance(s, ObjectGroup)]
    assert all(o["metadata"]["annotations"][FIELD_MANAGER_ANNOTATION] == "gpustack" for g in groups for o in g.objects)
    assert not any(
        "annotations" in o["metadata"] and FIELD_MANAGER_ANNOTATION in o["metadata"]["annotations"]
        for o in plan.groups["cluster"]
    )
    assert [g.group for g in groups if g.skip_await] == ["workloads"]
    nodes = [s for s in steps if isinstance(s, NodeLabels)]
    assert nodes and all(not n.retain_on_delete and n.spec is not None and n.spec["taints"] for n in nodes)
    assert all(
        n.spec is None and n.retain_on_delete
        for n in registrations(cut(BLUEPRINTS / "quickstart.yaml"), "gs")
        if isinstance(n, NodeLabels)
    )


def test_release_namespaces_the_plan_lacks_are_created_first() -> None:
    # The GPU Operator's namespace is in the Plan (it carries the Pod Security label); Volcano's is not.
    steps = registrations(cut(BLUEPRINTS / "volcano.yaml"), "gs")
    namespaces = [s for s in steps if isinstance(s, ReleaseNamespace)]
    assert [(n.name, n.namespace, n.depends_on) for n in namespaces] == [
        ("gs-namespace-volcano-system", "volcano-system", ())
    ]


def test_an_invalid_blueprint_is_refused_with_validates_text() -> None:
    with pytest.raises(InvalidBlueprint) as raised:
        load_blueprint(CASES / "invalid" / "seed-a100-4x3g20gb.yaml")
    assert "error[GS303]" in str(raised.value) and str(raised.value).endswith("nothing applied")


def test_the_pure_half_needs_no_pulumi() -> None:
    code = textwrap.dedent(
        f"""
        import sys
        from gpustack.registration import deploy_plan, registrations
        from gpustack.validation import validate_path
        context = validate_path({str(BLUEPRINTS / "seed-article.yaml")!r}).context
        steps = registrations(deploy_plan(context), "gs")
        print(len(steps), sorted(m for m in sys.modules if m.split(".")[0] in ("pulumi", "pulumi_kubernetes")))
        """
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    count, loaded = result.stdout.split(" ", 1)
    assert int(count) > 10 and loaded.strip() == "[]"


def test_node_families_are_never_in_an_object_group() -> None:
    plan = cut(BLUEPRINTS / "seed-article.yaml", own_node_taints=True)
    node_objects = [m.obj for m in plan.plan.objects if m.family in (NODES_FAMILY, TAINTS_FAMILY)]
    grouped = [o for s in registrations(plan, "gs") if isinstance(s, ObjectGroup) for o in s.objects]
    assert node_objects and not any(o in grouped for o in node_objects)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_nothing_downstream_changes_a_compiled_object(path: Path) -> None:
    """Compiled objects may share parts (a pool's nodes share one labels mapping and one taint list), which is
    safe only while writing, reviewing and registering leave every object as compile made it."""
    deploy = cut(path, own_node_taints=True)
    plan = deploy.plan
    pristine = copy.deepcopy([m.obj for m in plan.objects])
    render_files(plan)
    registrations(deploy, "gs")
    snapshot = Snapshot(str(path), sourceless(deploy.blueprint))
    snapshot.__dict__["plan"] = plan  # review this very plan, not a fresh compile
    review_change(Snapshot("base", None), snapshot)
    review_change(snapshot, snapshot)
    assert [m.obj for m in plan.objects] == pristine

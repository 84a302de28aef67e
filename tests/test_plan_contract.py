"""Apply reads the Plan: what deploy, registration, rollout, drift and review need of each node pool is a typed part of
the Plan, derived once by compile, and pyproject.toml's `apply-reads-the-plan` contract keeps them out of compile's
families. A copy of the package with a planted import shows the contract bites; the consumers' results are checked
against what compile's families give (the way they computed them before).
"""

from __future__ import annotations

import marshal
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest
from builders import blueprint, planned
from cluster_from import snapshot_data
from conftest import BLUEPRINTS, REPO, shipped_examples
from test_cloud import pool as cloud_pool
from test_layers import copy_of_package, lint_imports

from gpustack.cluster.drift import compare
from gpustack.cluster.snapshot import parse_snapshot
from gpustack.compile.cloud import node_pool_specs
from gpustack.compile.mig import mig_config_label
from gpustack.compile.nodes import FAMILY, TAINTS_FAMILY, node_labels, node_taints
from gpustack.names import MIG_CONFIG_LABEL
from gpustack.plan import Plan
from gpustack.registration import deploy_plan
from gpustack.review.manifests import manifest_changes
from gpustack.review.risks.cloud import cloud_pool_replaced, replacing_changes
from gpustack.review.snapshot import Snapshot
from gpustack.rollout.nodes import node_states
from gpustack.taints import taint_object
from gpustack.validation import Validation, validate_path
from gpustack.yamlout import dump_yaml

EXAMPLES = shipped_examples()
CONSUMERS = [
    "gpustack.deploy",
    "gpustack.registration",
    "gpustack.rollout",
    "gpustack.cluster.drift",
    "gpustack.review",
]


def validated(path: Path) -> Validation:
    result = validate_path(path)
    assert result.ok and result.context is not None, [d.message for d in result.diagnostics]
    return result


def test_the_contract_names_every_consumer_and_only_compile_s_front_door() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    [contract] = [c for c in config["contracts"] if c["id"] == "apply-reads-the-plan"]
    assert contract["type"] == "forbidden" and contract["forbidden_modules"] == ["gpustack.compile"]
    assert sorted(contract["source_modules"]) == sorted(CONSUMERS)
    # The two places that compile a side go through gpustack.compile itself (compile_blueprint), nothing deeper.
    assert sorted(contract["ignore_imports"]) == [
        "gpustack.registration -> gpustack.compile",
        "gpustack.review.snapshot -> gpustack.compile",
    ]


PLANTED = {
    # module (path under gpustack/) -> the import planted at its end, and what lint-imports must report
    "rollout/nodes.py": (
        "from gpustack.compile.nodes import node_labels",
        "gpustack.rollout.nodes -> gpustack.compile.nodes",
    ),
    "cluster/drift.py": ("from gpustack.compile import mig", "gpustack.cluster.drift -> gpustack.compile.mig"),
    "review/risks/cloud.py": (
        "from gpustack.compile.cloud import node_pool_specs",
        "gpustack.review.risks.cloud -> gpustack.compile.cloud",
    ),
    "deploy.py": ("from gpustack.compile.cloud import NodePoolSpec", "gpustack.deploy -> gpustack.compile.cloud"),
    # registration may call compile_blueprint, but not reach past it into a family
    "registration.py": ("from gpustack.compile.nodes import FAMILY", "gpustack.registration -> gpustack.compile.nodes"),
    # a review module other than the side's snapshot may not even call compile_blueprint
    "review/risks/nodes.py": (
        "from gpustack.compile import compile_blueprint",
        "gpustack.review.risks.nodes -> gpustack.compile",
    ),
}


def test_a_consumer_that_imports_a_compile_family_breaks_the_contract(tmp_path: Path) -> None:
    root = copy_of_package(tmp_path)
    for module, (line, _) in PLANTED.items():
        path = root / "gpustack" / module
        path.write_text(path.read_text(encoding="utf-8") + f"\n{line}  # noqa\n", encoding="utf-8")
    result = lint_imports(root)
    assert result.returncode == 1
    broken = result.stdout.split("apply reads the Plan", 2)[-1]
    assert "BROKEN" in result.stdout
    for module, (_, reported) in PLANTED.items():
        assert reported in broken, (module, result.stdout)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_the_plan_s_pools_are_what_the_node_patches_carry(path: Path) -> None:
    """Per pool: labels, taints and MIG config in the Plan equal every Node patch of the pool and compile's families."""
    result = validated(path)
    ctx = result.context
    assert ctx is not None
    compiled = planned_plan(result)
    assert [p.pool for p in compiled.pools] == [pool.name for pool in ctx.blueprint.pools]
    labels = {m.name: m.obj["metadata"]["labels"] for m in compiled.objects if m.family == FAMILY}
    taints = {m.name: m.obj["spec"]["taints"] for m in compiled.objects if m.family == TAINTS_FAMILY}
    for pool in ctx.blueprint.pools:
        planned_pool = compiled.pool(pool.name)
        assert planned_pool is not None
        assert dict(planned_pool.labels) == dict(node_labels(ctx, pool))
        assert planned_pool.mig_config == mig_config_label(ctx, pool) == planned_pool.labels.get(MIG_CONFIG_LABEL)
        taint_objects = [taint_object(t) for t in planned_pool.taints]
        assert taint_objects == node_taints(pool)
        assert planned_pool.nodes == (pool.nodes if pool.selector is None else ())
        for node in planned_pool.nodes:
            assert labels[node] == dict(planned_pool.labels)
            assert taints.get(node, []) == taint_objects
    assert compiled.node_pools == tuple(node_pool_specs(ctx))


CLOUD_POOLS = [
    ("gke", "L4", 1, "g2-standard-8"),
    ("eks", "A10G", 1, "g5.2xlarge"),
    ("aks", "A100-SXM4-80GB", 8, "Standard_ND96amsr_A100_v4"),
    ("karpenter", "L4", 8, "g6.48xlarge"),
]


@pytest.mark.parametrize(("provider", "model", "count", "machine"), CLOUD_POOLS, ids=[p[0] for p in CLOUD_POOLS])
def test_the_plan_s_cloud_node_pools_are_compile_s(provider: str, model: str, count: int, machine: str) -> None:
    """What deploy registers and review compares: one spec per cloud pool, as compile's cloud family builds it, with
    the pool's labels (a copy each: the provider's inputs are its own)."""
    ctx, compiled = planned(blueprint(cloud_pool(provider, model, count, machine), static_pool()))
    [spec] = compiled.node_pools
    assert [spec] == node_pool_specs(ctx)
    assert spec.pool == "gpus" and spec.provider == provider
    pool = compiled.pool("gpus")
    assert pool is not None and pool.nodes == () and pool.selector is not None
    args = spec.args["spec"]["template"]["metadata"] if provider == "karpenter" else spec.args
    key = {"gke": None, "eks": "labels", "aks": "node_labels", "karpenter": "labels"}[provider]
    given = spec.args["node_config"]["labels"] if key is None else args[key]
    assert {k: v for k, v in given.items() if k in pool.labels} == dict(pool.labels)
    assert given is not pool.labels


def static_pool() -> dict[str, object]:
    return {"name": "static", "gpu": {"model": "L4", "count": 4}, "nodes": ["n1"]}


def planned_plan(result: Validation) -> Plan:
    from gpustack.compile import compile_blueprint

    assert result.context is not None
    return compile_blueprint(result.context)


def test_the_shared_labels_are_read_only_and_write_as_before() -> None:
    result = validated(BLUEPRINTS / "multi-tenant.yaml")
    plan = planned_plan(result)
    pool = plan.pools[0]
    with pytest.raises(TypeError):
        pool.labels["gpustack.io/pool"] = "elsewhere"  # type: ignore[index]
    # The Node patches hold plain data: the review's marshal compare and the YAML writer take them as they are.
    assert manifest_changes(plan, planned_plan(validated(BLUEPRINTS / "multi-tenant.yaml"))) == ()
    node = next(m for m in plan.objects if m.family == FAMILY)
    assert type(node.obj["metadata"]["labels"]) is dict
    assert marshal.dumps(node.obj, 2)  # what the review's compare writes (it cannot write a mappingproxy)
    owner = plan.pool(node.obj["metadata"]["labels"]["gpustack.io/pool"])
    assert owner is not None and dump_yaml(node.obj["metadata"]["labels"]) == dump_yaml(dict(owner.labels))


def test_mypy_refuses_a_change_to_a_pool_s_labels(tmp_path: Path) -> None:
    """The type says it, not a comment: mypy fails a program that writes into a compiled pool's labels."""
    program = tmp_path / "writes.py"
    program.write_text(
        textwrap.dedent(
            """
            from gpustack.plan import Plan


            def relabel(plan: Plan) -> None:
                plan.pools[0].labels["gpustack.io/pool"] = "elsewhere"
            """
        ),
        encoding="utf-8",
    )
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "--follow-imports=silent", str(program)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert "Unsupported target for indexed assignment" in run.stdout


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_rollout_reads_the_labels_compile_gives(path: Path) -> None:
    result = validated(path)
    ctx = result.context
    assert ctx is not None
    states = node_states(Snapshot(str(path), ctx))
    for pool in ctx.blueprint.pools:
        for node in pool.nodes:
            assert states[node].labels == tuple(node_labels(ctx, pool).items())
            assert states[node].mig_config == mig_config_label(ctx, pool)
            assert states[node].taints == tuple((t.key, t.value, t.effect) for t in pool.taints)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_drift_expects_the_labels_compile_gives(path: Path) -> None:
    """Nodes stripped of every label: drift expects, per node, exactly compile's labels for its pool."""
    result = validated(path)
    assert result.blueprint is not None
    data = snapshot_data(result.blueprint)
    for item in data["items"]:
        if item["kind"] == "Node":
            item["metadata"]["labels"] = {}
    ctx, plan = planned(result.blueprint)
    drift = compare(ctx, plan, parse_snapshot(dump_yaml(data), "cluster.yaml"), "bp.yaml")
    expected = {
        (node, key, value)
        for pool in ctx.blueprint.pools
        if pool.selector is None
        for node in pool.nodes
        for key, value in node_labels(ctx, pool).items()
    }
    # issue 27: on a node with none of gpustack's labels, its own (gpustack.io/*, the config labels) are adoption
    found = [*drift.differences, *drift.adoption]
    assert {(d.node, d.key, d.expected) for d in found if d.kind == "label"} == expected


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_registration_patches_the_nodes_as_the_node_objects_say(path: Path) -> None:
    """The patches read from the Plan's pools equal the Node objects of the `nodes` and `node-taints` families."""
    result = validated(path)
    assert result.context is not None
    cut = deploy_plan(result.context, own_node_taints=True)
    labels = {m.name: m.obj["metadata"]["labels"] for m in cut.plan.objects if m.family == FAMILY}
    taints = {m.name: m.obj["spec"]["taints"] for m in cut.plan.objects if m.family == TAINTS_FAMILY}
    assert [s.node for s in cut.node_patches] == list(dict.fromkeys([*labels, *taints]))
    for spec in cut.node_patches:
        assert dict(spec.labels) == labels[spec.node]
        assert (list(spec.taints) if spec.taints is not None else None) == taints.get(spec.node)


def test_the_cloud_risk_reads_each_side_s_plan() -> None:
    """The risk compares the two Plans' node pools: what it reports is what compile's specs differ in."""
    old_ctx, old_plan = planned(blueprint(cloud_pool("gke", "L4", 1, "g2-standard-4")))
    new_ctx, new_plan = planned(blueprint(cloud_pool("gke", "L4", 1, "g2-standard-8")))
    before, after = Snapshot("old", old_ctx), Snapshot("new", new_ctx)
    [risk] = cloud_pool_replaced(before, after)
    [old_spec], [new_spec] = node_pool_specs(old_ctx), node_pool_specs(new_ctx)
    assert (
        risk.details == tuple(replacing_changes(old_spec.args, new_spec.args, "gke")) == ("node_config.machine_type",)
    )
    assert before.plan.node_pools == old_plan.node_pools and after.plan.node_pools == new_plan.node_pools

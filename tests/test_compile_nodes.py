"""The nodes family: labels and taints as apply patches and as an equivalent kubectl script."""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from builders import blueprint, context

from gpustack.compile.device_plugin import compile_device_plugin
from gpustack.compile.mig import compile_mig
from gpustack.compile.nodes import compile_nodes, node_labels, node_taints
from gpustack.context import Context
from gpustack.model import Blueprint
from gpustack.names import DEVICE_PLUGIN_CONFIG_LABEL, MIG_CONFIG_LABEL, POOL_LABEL
from gpustack.plan import Artifact, FamilyOutput

LABEL_VALUE_MAX = 63
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")  # blueprint-format.md `label-value`


def script_of(output: FamilyOutput) -> Artifact:
    return next(a for a in output.artifacts if a.path == "nodes/label-nodes.sh")


def pool(name: str, model: str = "L4", *, nodes: list[str], **extra: Any) -> dict:
    return {"name": name, "gpu": {"model": model, "count": 8}, "nodes": nodes, **extra}


@functools.cache
def sample() -> Blueprint:
    return blueprint(
        pool(
            "inference",
            "A100-SXM4-80GB",
            nodes=["gpu-node-02", "gpu-node-01"],
            labels={"gpu-pool": "inference", "example.com/team": "search"},
            taints=[
                {"key": "gpu-pool", "value": "inference", "effect": "NoSchedule"},
                {"key": "dedicated", "effect": "NoExecute"},
            ],
            sharing={"strategy": "mig", "mig": {"strategy": "mixed", "layout": {"3g.40gb": 2}}},
        ),
        pool("training", "H100-SXM5-80GB", nodes=["gpu-node-03"]),
        pool(
            "dev",
            nodes=["dev-1.example.com"],
            sharing={"strategy": "time-slicing", "timeSlicing": {"replicas": 4}},
            taints=[{"key": "gpu-pool", "value": "dev", "effect": "PreferNoSchedule"}],
        ),
        pool("hami", nodes=["hami-1"], sharing={"strategy": "hami"}),
    )


def test_labels_tie_nodes_to_pool_configs() -> None:
    ctx = context(sample())
    labels = {p.name: node_labels(ctx, p) for p in sample().pools}
    assert labels == {
        "inference": {
            POOL_LABEL: "inference",
            DEVICE_PLUGIN_CONFIG_LABEL: "mig-mixed",
            MIG_CONFIG_LABEL: "gpustack-inference",
            "gpu-pool": "inference",
            "example.com/team": "search",
        },
        "training": {POOL_LABEL: "training", DEVICE_PLUGIN_CONFIG_LABEL: "whole-gpu", MIG_CONFIG_LABEL: "all-disabled"},
        "dev": {POOL_LABEL: "dev", DEVICE_PLUGIN_CONFIG_LABEL: "time-slicing-4"},
        # HAMi's device plugin selects its nodes by gpu=on and gpustack's own HAMi label (compile/hami.py).
        "hami": {POOL_LABEL: "hami", "gpu": "on", "gpustack.io/device-plugin": "hami"},
    }


def test_label_values_name_configs_that_exist() -> None:
    ctx = context(sample())
    (release,) = compile_device_plugin(ctx).releases
    (mig_config_map,) = compile_mig(ctx).objects
    mig_configs = yaml.safe_load(mig_config_map.obj["data"]["config.yaml"])["mig-configs"]
    for bp_pool in sample().pools:
        labels = node_labels(ctx, bp_pool)
        if DEVICE_PLUGIN_CONFIG_LABEL in labels:
            assert labels[DEVICE_PLUGIN_CONFIG_LABEL] in release.values["config"]["map"]
        if MIG_CONFIG_LABEL in labels:
            assert labels[MIG_CONFIG_LABEL] in mig_configs
        assert all(len(value) <= LABEL_VALUE_MAX and LABEL_VALUE.match(value) for value in labels.values())


def test_mig_label_stays_a_label_value_for_long_pool_names() -> None:
    layout = {"strategy": "mig", "mig": {"strategy": "mixed", "layout": {"7g.80gb": 1}}}
    names = ["m" * 62 + "a", "m" * 62 + "b"]
    bp = blueprint(*(pool(name, "H100-SXM5-80GB", nodes=[f"n{i}"], sharing=layout) for i, name in enumerate(names)))
    ctx = context(bp)
    values = [node_labels(ctx, p)[MIG_CONFIG_LABEL] for p in bp.pools]
    assert len(set(values)) == 2
    assert all(len(value) <= LABEL_VALUE_MAX and LABEL_VALUE.match(value) for value in values)
    (mig_config_map,) = compile_mig(ctx).objects
    assert set(values) <= set(yaml.safe_load(mig_config_map.obj["data"]["config.yaml"])["mig-configs"])


def test_taints_are_core_v1_taints() -> None:
    inference, training, *_ = sample().pools
    assert node_taints(inference) == [
        {"key": "gpu-pool", "value": "inference", "effect": "NoSchedule"},
        {"key": "dedicated", "effect": "NoExecute"},
    ]
    assert node_taints(training) == []


def test_one_patch_per_node_in_pool_then_node_order() -> None:
    output = compile_nodes(context(sample()))
    labels = [m for m in output.objects if m.family == "nodes"]
    assert [m.name for m in labels] == [
        "gpu-node-02",
        "gpu-node-01",
        "gpu-node-03",
        "dev-1.example.com",
        "hami-1",
    ]
    assert {m.file for m in labels} == {"nodes/nodes.yaml"}
    taints = [m for m in output.objects if m.family == "node-taints"]
    assert {m.file for m in taints} == {"nodes/taints.yaml"}
    assert {m.name for m in taints} == {n for p in sample().pools if p.taints for n in p.nodes}


def test_patch_shape() -> None:
    ctx = context(sample())
    output = compile_nodes(ctx).objects
    objects = {m.name: m.obj for m in output if m.family == "nodes"}
    taints = {m.name: m.obj for m in output if m.family == "node-taints"}
    first = objects["gpu-node-02"]
    assert list(first) == ["apiVersion", "kind", "metadata"]
    assert first["apiVersion"] == "v1"
    assert first["kind"] == "Node"
    assert first["metadata"] == {"name": "gpu-node-02", "labels": node_labels(ctx, sample().pools[0])}
    # Taints are an atomic list: they live in their own patch, kept out of the kustomization.
    assert taints["gpu-node-02"] == {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "gpu-node-02"},
        "spec": {"taints": node_taints(sample().pools[0])},
    }
    assert "gpu-node-03" not in taints


STUB = """#!/bin/sh
for arg in "$@"; do printf '%s\\n' "$arg" >> "$KUBECTL_LOG"; done
printf '%s\\n' '--end--' >> "$KUBECTL_LOG"
"""


def run_script(text: str, tmp_path: Path) -> list[list[str]]:
    """Run the script with a `kubectl` stub first on PATH; return each call's arguments."""
    sh = shutil.which("sh")
    if sh is None:
        pytest.skip("the POSIX shell sh is not installed: this test runs the generated node script with it")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stub = bin_dir / "kubectl"
    stub.write_text(STUB, encoding="utf-8")
    stub.chmod(0o755)
    script = tmp_path / "label-nodes.sh"
    script.write_text(text, encoding="utf-8")
    log = tmp_path / "kubectl.log"
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "KUBECTL_LOG": str(log)}
    subprocess.run([sh, str(script)], env=env, check=True, cwd=tmp_path)
    calls: list[list[str]] = [[]]
    for line in log.read_text(encoding="utf-8").splitlines():
        if line == "--end--":
            calls.append([])
        else:
            calls[-1].append(line)
    return calls[:-1]


def expected_calls(ctx: Context) -> list[list[str]]:
    calls = []
    for bp_pool in ctx.blueprint.pools:
        labels = [f"{key}={value}" for key, value in node_labels(ctx, bp_pool).items()]
        taints = [
            f"{t['key']}={t['value']}:{t['effect']}" if "value" in t else f"{t['key']}:{t['effect']}"
            for t in node_taints(bp_pool)
        ]
        for node in bp_pool.nodes:
            calls.append(["label", "node", node, *labels, "--overwrite"])
            if taints:
                calls.append(["taint", "node", node, *taints, "--overwrite"])
    return calls


def test_script_runs_the_same_labels_and_taints(tmp_path: Path) -> None:
    ctx = context(sample())
    artifact = script_of(compile_nodes(ctx))
    assert artifact.path == "nodes/label-nodes.sh"
    assert artifact.text.startswith("#!/bin/sh\n")
    assert "\nset -eu\n" in artifact.text
    assert artifact.text.endswith("\n")
    assert run_script(artifact.text, tmp_path) == expected_calls(ctx)


def test_script_quotes_what_the_shell_would_interpret(tmp_path: Path) -> None:
    # Validation never lets these through; the script must stay safe if something ever does.
    bp = sample()
    hostile = dataclasses.replace(
        bp.pools[3], labels=(("note", "a b;$(touch pwned)'\""),), nodes=("node with space", "$HOME")
    )
    ctx = context(dataclasses.replace(bp, pools=(*bp.pools[:3], hostile)))
    artifact = script_of(compile_nodes(ctx))
    calls = run_script(artifact.text, tmp_path)
    assert calls == expected_calls(ctx)
    hami = ["gpustack.io/pool=hami", "gpu=on", "gpustack.io/device-plugin=hami"]
    assert ["label", "node", "$HOME", *hami, "note=a b;$(touch pwned)'\"", "--overwrite"] in calls
    assert not (tmp_path / "pwned").exists()


def test_sh_parses_the_script_without_running_it(tmp_path: Path) -> None:
    sh = shutil.which("sh")
    if sh is None:
        pytest.skip("the POSIX shell sh is not installed: this test runs the generated node script with it")
    artifact = script_of(compile_nodes(context(sample())))
    script = tmp_path / "label-nodes.sh"
    script.write_text(artifact.text, encoding="utf-8")
    subprocess.run([sh, "-n", str(script)], check=True)


def test_compiling_twice_gives_equal_output() -> None:
    assert compile_nodes(context(sample())) == compile_nodes(context(sample()))

"""Node pools chosen by labels their provider sets: compile, simulate and capacity work from the selector."""

from __future__ import annotations

import json
from typing import Any

import yaml
from admission_cel import Admission, Request
from builders import blueprint, context, sourceless
from click.testing import CliRunner

from gpustack.cli import group
from gpustack.codes import COMBINATION, SELECTOR_RANGE
from gpustack.compile import compile_blueprint
from gpustack.compile.device_plugin import build_values as device_plugin_values
from gpustack.compile.nodes import node_labels
from gpustack.outputs import render_files
from gpustack.validation import validate_text

KARPENTER = {
    "name": "h100",
    "gpu": {"model": "H100-SXM5-80GB", "count": 8},
    "selector": {
        "matchLabels": {"karpenter.sh/nodepool": "gpu-h100"},
        "matchExpressions": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}],
    },
    "minNodes": 1,
    "maxNodes": 3,
    "taints": [{"key": "gpustack.io/pool", "value": "h100", "effect": "NoSchedule"}],
    "sharing": {"strategy": "mig", "mig": {"strategy": "mixed", "layout": {"3g.40gb": 2}}},
}
GKE = {
    "name": "l4",
    "gpu": {"model": "L4", "count": 2},
    "selector": {"matchLabels": {"cloud.google.com/gke-nodepool": "l4-pool"}},
    "count": 2,
}
STATIC = {"name": "t4", "gpu": {"model": "T4", "count": 1}, "nodes": ["t4-node"]}
TENANT = {
    "name": "ml",
    "namespaces": ["ml"],
    "pools": ["h100", "l4"],
    "quota": {"h100": {"mig-3g.40gb": 48}, "l4": "unlimited"},
}
WORKLOADS = [
    {
        "name": "chat",
        "tenant": "ml",
        "pool": "h100",
        "kind": "Deployment",
        "replicas": 4,
        "image": "vllm/vllm-openai:v0.6.3",
        "gpu": {"count": 1, "profile": "3g.40gb"},
        "resources": {"cpu": "8", "memory": "64Gi"},
    },
    {
        "name": "embed",
        "tenant": "ml",
        "pool": "l4",
        "kind": "Deployment",
        "image": "example/embed:1",
        "gpu": {"count": 1},
        "resources": {"cpu": "4", "memory": "32Gi"},
    },
]


def spec(**extra: Any) -> dict[str, Any]:
    return {"stack": "gpu-operator", "tenants": [TENANT], "workloads": WORKLOADS, **extra}


def test_the_output_says_exactly_what_each_node_pool_must_carry() -> None:
    ctx = context(blueprint(KARPENTER, GKE, STATIC, **spec()))
    files = render_files(compile_blueprint(sourceless(ctx.blueprint)))
    fragment = yaml.safe_load(files["nodes/h100.node-pool.yaml"])
    assert fragment["labels"] == node_labels(ctx, ctx.pools["h100"])
    assert fragment["labels"]["nvidia.com/mig.config"] == "gpustack-h100"
    assert "nvidia.com/device-plugin.config" in fragment["labels"]
    assert fragment["taints"] == [{"key": "gpustack.io/pool", "value": "h100", "effect": "NoSchedule"}]
    assert fragment["taintsAsText"] == ["gpustack.io/pool=h100:NoSchedule"]  # AKS nodeTaints, eksctl
    assert fragment["selector"] == "karpenter.sh/nodepool=gpu-h100,karpenter.sh/capacity-type=on-demand"
    readme = files["README.md"]
    assert "`nodes/h100.node-pool.yaml`" in readme and "`nodes/l4.node-pool.yaml`" in readme
    # No Node object is made up for a selector pool; the static pool's nodes are labelled by kubectl.
    nodes = [doc for doc in yaml.safe_load_all(files["nodes/nodes.yaml"]) if doc]
    assert [n["metadata"]["name"] for n in nodes] == ["t4-node"]
    script = files["nodes/label-nodes.sh"]
    assert "kubectl label node t4-node" in script and "selected by karpenter.sh/nodepool=gpu-h100" in script


def test_workloads_and_the_plugin_select_nodes_by_the_selector() -> None:
    bp = blueprint(KARPENTER, GKE, STATIC, **{**spec(), "stack": "device-plugin"})
    plan = compile_blueprint(sourceless(bp))
    chat = plan.find("Deployment", "chat", "ml")
    assert chat is not None
    terms = chat.obj["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert terms == [
        {
            "matchExpressions": [
                {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["gpu-h100"]},
                {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
            ]
        }
    ]
    plugin_terms = device_plugin_values(context(bp))["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert {"matchExpressions": [{"key": "gpustack.io/pool", "operator": "In", "values": ["t4"]}]} in plugin_terms
    assert {
        "matchExpressions": [{"key": "cloud.google.com/gke-nodepool", "operator": "In", "values": ["l4-pool"]}]
    } in plugin_terms


def test_the_verify_step_lists_each_pool_by_its_selector_with_what_it_promises() -> None:
    files = render_files(compile_blueprint(sourceless(blueprint(KARPENTER, GKE, **spec()))))
    script = files["verify-nodes.sh"]
    assert "pool h100: every node should show nvidia.com/mig-3g.40gb=16" in script
    assert "get nodes -l karpenter.sh/nodepool=gpu-h100,karpenter.sh/capacity-type=on-demand -o" in script
    assert "MIG-3G.40GB:.status.allocatable.nvidia\\.com/mig-3g\\.40gb" in script
    assert "sh verify-nodes.sh" in files["README.md"]


def write(tmp_path: Any, data: dict[str, Any]) -> str:
    path = tmp_path / "blueprint.yaml"
    path.write_text(json.dumps(data))
    return str(path)


def document(**spec_fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "gpustack.io/v1alpha1",
        "kind": "ClusterBlueprint",
        "metadata": {"name": "autoscaled"},
        "spec": {"kubernetes": {"version": "1.31"}, "nodePools": [KARPENTER, GKE], **spec_fields},
    }


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(group, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout


def test_a_selector_pool_simulates_on_as_many_nodes_as_it_may_hold(tmp_path: Any) -> None:
    path = write(tmp_path, document(tenants=[TENANT], workloads=WORKLOADS))
    code, out = run("simulate", path, "--output", "json")
    data = json.loads(out)
    assert code == 0 and data["ok"] is True, out
    assert {p["name"]: p["nodes"] for p in data["pools"]} == {"h100": 3, "l4": 2}
    # 4 replicas of one 3g.40gb slice each: the selector pool's simulated nodes carry its labels and taints.
    code, text = run("simulate", path)
    assert "chat" in text and "h100-1" in text


def test_a_selector_pool_reports_capacity_at_its_maximum_and_says_its_range(tmp_path: Any) -> None:
    code, out = run("capacity", write(tmp_path, document(tenants=[TENANT])))
    assert code == 0, out
    assert "h100: 3 node(s) x 8" in out
    assert "nodes selected by karpenter.sh/nodepool=gpu-h100,karpenter.sh/capacity-type=on-demand, 1 to 3 nodes" in out
    assert "l4: 2 node(s) x 2" in out


def diagnostics_for(pool: dict[str, Any]) -> list[tuple[str, str]]:
    data = document()
    data["spec"]["nodePools"] = [pool]
    result = validate_text(json.dumps(data), "b.json")
    return [(d.code, d.json_path) for d in result.diagnostics]


def test_a_pool_names_its_nodes_or_selects_them_not_both_and_says_how_many() -> None:
    assert diagnostics_for({**GKE, "nodes": ["n1"]})[0] == (COMBINATION, "$.spec.nodePools[0].nodes")
    without_size = {k: v for k, v in GKE.items() if k != "count"}
    assert diagnostics_for(without_size) == [
        (COMBINATION, "$.spec.nodePools[0]"),
        (COMBINATION, "$.spec.nodePools[0]"),
    ]  # count, or minNodes and maxNodes
    assert diagnostics_for({**STATIC, "count": 2})[0] == (COMBINATION, "$.spec.nodePools[0].count")
    assert [c for c, _ in diagnostics_for({**KARPENTER, "minNodes": 4})] == [SELECTOR_RANGE]
    assert [c for c, _ in diagnostics_for({**GKE, "minNodes": 1, "maxNodes": 2})] == [COMBINATION, COMBINATION]


def test_admission_keeps_other_tenants_off_a_selector_pool_by_its_provider_label() -> None:
    other = {"name": "web", "namespaces": ["web"], "pools": ["t4"]}
    bp = blueprint(KARPENTER, GKE, STATIC, stack="gpu-operator", tenants=[TENANT, other])
    objects = [m.obj for m in compile_blueprint(sourceless(bp)).by_family("admission")]

    def review(namespace: str, selector: dict[str, str]) -> bool:
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": namespace},
            "spec": {"nodeSelector": selector, "containers": [{"name": "main", "image": "busybox"}]},
        }
        ns = {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {
                "name": namespace,
                "labels": {"kubernetes.io/metadata.name": namespace, "gpustack.io/tenant": namespace},
            },
        }
        return Admission(objects).review(Request("CREATE", pod, ns)).admitted

    # The tenant granted the pool may name it by the label Karpenter sets; another tenant may not.
    assert review("ml", {"karpenter.sh/nodepool": "gpu-h100"})
    assert not review("web", {"karpenter.sh/nodepool": "gpu-h100"})
    assert not review("web", {"cloud.google.com/gke-nodepool": "l4-pool"})

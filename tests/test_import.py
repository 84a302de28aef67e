"""`gpustack import`: blueprints inferred from cluster snapshots, and the round trip back to the same nodes."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders import sourceless
from click.testing import CliRunner
from cluster_from import snapshot_text
from conftest import shipped_examples

from gpustack.build import build_blueprint
from gpustack.cli import group
from gpustack.cluster.importer import import_snapshot
from gpustack.cluster.snapshot import parse_snapshot, read_snapshot
from gpustack.codes import (
    GPU_TAINT_ON_DEDICATED_POOL,
    SNAPSHOT_MALFORMED,
    SNAPSHOT_MIG_UNREADABLE,
    SNAPSHOT_NO_PRODUCT_LABEL,
    SNAPSHOT_UNKNOWN_PRODUCT,
)
from gpustack.compile import compile_blueprint
from gpustack.load import parse_document
from gpustack.validation import validate_path, validate_text

CASES = Path(__file__).parent / "cases" / "import"
BLUEPRINTS = Path(__file__).parent.parent / "blueprints"


def _imported(name: str = "mixed-cluster.yaml"):
    return import_snapshot(read_snapshot(str(CASES / name)), "mixed")


def _pool(result, name: str) -> dict:
    return next(p for p in result.data["spec"]["nodePools"] if p["name"] == name)


def test_pools_follow_gfd_and_cloud_labels() -> None:
    result = _imported()
    assert [p["name"] for p in result.data["spec"]["nodePools"]] == [
        "a100-pcie-80gb-mig",
        "l4-pool",
        "h100-sxm5-80gb-mig",
        "a100-train",
        "nvidia-quantum-q9000",  # issue 27: an unknown GPU's node has a pool of its own, without gpu
    ]
    # MIG single: GFD counts 7 slices, the blueprint one whole A100 with seven 1g.10gb.
    single = _pool(result, "a100-pcie-80gb-mig")
    assert single["gpu"] == {"model": "A100-PCIE-80GB", "count": 1}
    # issue 27: the node's mig.config name is kept, so the MIG manager has nothing to redo
    mig = {"strategy": "single", "layout": {"1g.10gb": 7}, "configName": "all-1g.10gb"}
    assert single["sharing"] == {"strategy": "mig", "mig": mig}
    assert single["maxPods"] == 58  # the node's allocatable pods, where it is not the kubelet's default
    # Time-slicing read from the device plugin ConfigMap the node's label names, renamed to gpu.shared.
    # GKE made these nodes: a selector pool on GKE's node-pool label, sized by the nodes found.
    l4 = _pool(result, "l4-pool")
    assert "nodes" not in l4
    assert l4["selector"] == {"matchLabels": {"cloud.google.com/gke-nodepool": "l4-pool"}} and l4["count"] == 2
    assert l4["labels"] == {"team": "vision"}  # cloud, GFD and kubernetes.io labels are not the pool's
    assert l4["sharing"]["timeSlicing"] == {"replicas": 4, "renameByDefault": True, "failRequestsGreaterThanOne": True}
    # The cordon's own taint is Kubernetes', not the pool's.
    assert l4["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    # A selector pool names no nodes, so the cordon is a comment, not a `cordoned` list the schema would refuse.
    assert "cordoned" not in l4 and "maxPods" not in l4
    assert (
        "  # guessed: cordoned now: gke-l4-pool-2 (a selector pool names no nodes, so none is listed)"
        in result.text.splitlines()
    )
    # A pre-R470 product name without NVIDIA-, MIG disabled: whole GPUs.
    a100 = _pool(result, "a100-train")
    assert a100["gpu"] == {"model": "A100-SXM4-40GB", "count": 8} and "sharing" not in a100
    assert a100["selector"] == {"matchLabels": {"eks.amazonaws.com/nodegroup": "a100-train"}} and a100["count"] == 1
    assert _pool(result, "h100-sxm5-80gb-mig")["nodes"] == ["h100-a", "h100-b"]  # no provider label: named nodes
    h100 = _pool(result, "h100-sxm5-80gb-mig")
    assert h100["sharing"]["mig"] == {"strategy": "mixed", "layout": {"1g.10gb": 7}, "configName": "all-1g.10gb"}
    assert result.data["spec"]["kubernetes"] == {"version": "1.31"}  # the oldest kubelet


def test_tenants_from_namespaces_with_gpu_quotas() -> None:
    tenants = _imported().data["spec"]["tenants"]
    assert tenants == [
        {
            "name": "payments",
            "namespaces": ["payments"],
            "pools": ["h100-sxm5-80gb-mig"],
            "priority": "critical",  # its pods run at gpustack-critical
            "quota": {"h100-sxm5-80gb-mig": {"mig-1g.10gb": 28}},
        },
        {
            "name": "vision",
            "namespaces": ["vision"],
            "pools": ["l4-pool"],
            "priority": "normal",
            "quota": {"l4-pool": {"gpu.shared": 8}},
        },
    ]  # kube-system's quota is not a tenant's


def test_unknown_product_is_reported_and_kept_in_a_pool_of_its_own() -> None:
    result = _imported()
    (diagnostic,) = result.diagnostics
    assert diagnostic.code == SNAPSHOT_UNKNOWN_PRODUCT
    assert diagnostic.message == (
        "unknown GPU product 'NVIDIA-Quantum-Q9000' on ws-1: expected a model in gpustack's catalog (gpustack models);"
        " pool 'nvidia-quantum-q9000' is written without gpu"
    )
    assert diagnostic.span is not None and (diagnostic.span.start.line, diagnostic.span.start.column) == (147, 31)
    assert diagnostic.json_path == "$.items[7].metadata.labels['nvidia.com/gpu.product']"
    pool = _pool(result, "nvidia-quantum-q9000")
    assert pool["nodes"] == ["ws-1"] and "gpu" not in pool and "sharing" not in pool
    assert (
        "  # guessed: gpu: not understood (GPU product 'NVIDIA-Quantum-Q9000' is not in gpustack's catalog on ws-1); "
        "a pool of its own, without gpu, until it is set" in result.text.splitlines()
    )


def test_written_blueprint_validates_and_marks_guesses() -> None:
    result = _imported()
    check = validate_text(result.text, "imported.yaml")
    assert check.ok, [d.message for d in check.diagnostics]
    assert [d.code for d in check.diagnostics] == [
        GPU_TAINT_ON_DEDICATED_POOL
    ]  # GKE's own nvidia.com/gpu taint: worth a warning
    lines = result.text.splitlines()
    guess = lines.index(
        "  # guessed: MIG layout: the same on every GPU, from the node's MIG device counts divided by its 8 GPUs "
        "(the mig-parted config 'all-1g.10gb' was not in the snapshot)"
    )
    assert lines[guess + 1] == "  - name: h100-sxm5-80gb-mig"
    assert parse_document(result.text, "x").data == result.data  # the comments change nothing
    assert import_snapshot(read_snapshot(str(CASES / "mixed-cluster.yaml")), "mixed").text == result.text


@pytest.mark.parametrize("example", shipped_examples(), ids=lambda p: p.name)
def test_round_trip_reproduces_labels_and_taints(example: Path) -> None:
    """blueprint -> compiled nodes (+ GFD's labels) -> import -> compile: each node gets the same labels and taints."""
    original = validate_path(example)
    assert original.blueprint is not None
    # Kubelets of the blueprint's own version (DRA's resource.k8s.io/v1 needs 1.34).
    kubelet = f"v{original.blueprint.kubernetes_version}.0"
    snapshot = parse_snapshot(snapshot_text(original.blueprint, kubelet), "cluster.yaml")
    result = import_snapshot(snapshot, "round-trip")
    assert result.diagnostics == ()
    check = validate_text(result.text, "imported.yaml")
    assert check.ok, [d.message for d in check.diagnostics]
    assert check.blueprint is not None and check.blueprint.stack is original.blueprint.stack

    def nodes(plan) -> dict[str, tuple[dict, list]]:
        taints = {m.name: m.obj["spec"]["taints"] for m in plan.by_family("node-taints")}
        return {m.name: (m.obj["metadata"]["labels"], taints.get(m.name, [])) for m in plan.by_family("nodes")}

    def node_pools(plan) -> dict[str, str]:
        """Selector pools: the labels and taints their provider must set (nodes/<pool>.node-pool.yaml)."""
        return {a.path: a.text.split("\n", 1)[1] for a in plan.artifacts if a.path.endswith(".node-pool.yaml")}

    def quotas(plan) -> dict[str, dict]:
        return {m.namespace: m.obj["spec"]["hard"] for m in plan.objects if m.kind == "ResourceQuota"}

    before, after = (
        compile_blueprint(sourceless(original.blueprint)),
        compile_blueprint(sourceless(build_blueprint(result.data))),
    )
    assert nodes(after) == nodes(before)
    assert node_pools(after) == node_pools(before)
    # A name no quota line limits is one the tenant holds a pool of whole (N4: every other name of its pools is
    # closed); no quota names that pool, so import cannot see it, and the imported blueprint closes the name ("0"):
    # never more than the cluster enforces (hami.yaml: apps's whole h100 pool, and with it nvidia.com/gpu).
    imported, compiled = quotas(after), quotas(before)
    assert imported.keys() == compiled.keys()
    for namespace, hard in compiled.items():
        assert {k: v for k, v in imported[namespace].items() if k in hard} == hard
        assert {v for k, v in imported[namespace].items() if k not in hard} <= {"0"}, namespace
    tenants = {t.name: t.namespaces for t in original.blueprint.tenants}
    assert {t["name"]: tuple(t["namespaces"]) for t in result.data["spec"].get("tenants", [])} == tenants


def test_cli_writes_the_blueprint_and_reports_warnings(tmp_path: Path) -> None:
    out = tmp_path / "blueprint.yaml"
    run = CliRunner().invoke(group, ["import", str(CASES / "mixed-cluster.yaml"), "-o", str(out)])
    assert run.exit_code == 0, run.output
    assert "warning[GS021]: unknown GPU product 'NVIDIA-Quantum-Q9000'" in run.stderr
    assert "147 |       nvidia.com/gpu.product: NVIDIA-Quantum-Q9000" in run.stderr
    assert run.stderr.endswith("wrote " + str(out) + ": 5 pool(s), 2 tenant(s)\n")
    assert validate_path(out).ok


def test_cli_refuses_a_malformed_snapshot(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: List\nitems:\n- kind: Node\n  metadata: {name: n1, labels: [a]}\n")
    out = tmp_path / "blueprint.yaml"
    run = CliRunner().invoke(group, ["import", str(bad), "-o", str(out)])
    assert run.exit_code == 1
    assert f"{bad}:5:32: error[GS020]: the label map is a list; expected a mapping" in run.stderr
    assert not out.exists()


def test_cli_without_gpu_nodes_writes_nothing(tmp_path: Path) -> None:
    cpu = tmp_path / "cpu.json"
    cpu.write_text('{"apiVersion": "v1", "kind": "List", "items": [{"kind": "Node", "metadata": {"name": "c1"}}]}')
    run = CliRunner().invoke(group, ["import", str(cpu)])
    assert run.exit_code == 1
    assert run.stderr == f"{cpu}: no node with NVIDIA GPUs that gpustack knows; nothing written\n"


def test_legacy_gfd_labels() -> None:
    """-SHARED without a sharing-strategy label is a guessed time-slicing; a node without gpu.product is GS022."""
    result = import_snapshot(read_snapshot(str(CASES / "legacy-gfd.yaml")), "legacy")
    rtx, t4 = result.data["spec"]["nodePools"]
    assert rtx == {"name": "gpu", "nodes": ["rtx-1"], "nodeResources": {"cpu": "31", "memory": "120Gi"}}
    assert t4["name"] == "t4-ts4" and t4["gpu"] == {"model": "T4", "count": 1}
    assert t4["sharing"] == {"strategy": "time-slicing", "timeSlicing": {"replicas": 4, "renameByDefault": False}}
    assert "  # guessed: time-slicing: the product ends in -SHARED but no label says time-slicing or MPS" in (
        result.text.splitlines()
    )
    (missing,) = result.diagnostics
    assert (missing.code, missing.message) == (
        SNAPSHOT_NO_PRODUCT_LABEL,
        "node rtx-1 has GPUs but no nvidia.com/gpu.product label; pool 'gpu' (rtx-1) is written without gpu",
    )
    assert validate_text(result.text, "legacy.yaml").ok


UNEVEN_MIG = """
apiVersion: v1
kind: List
items:
- kind: Node
  metadata:
    name: h100-x
    labels:
      nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3
      nvidia.com/gpu.count: "8"
      nvidia.com/mig.strategy: mixed
      nvidia.com/mig.config: half-and-half
      nvidia.com/mig-1g.10gb.count: "28"
      nvidia.com/mig-3g.40gb.count: "8"
  status: {allocatable: {nvidia.com/mig-1g.10gb: "28", nvidia.com/mig-3g.40gb: "8"}}
- kind: Node
  metadata:
    name: l4-x
    labels: {nvidia.com/gpu.product: NVIDIA-L4, nvidia.com/gpu.count: "1"}
  status: {allocatable: {nvidia.com/gpu: "1"}}
"""


def test_uneven_mig_without_its_config_is_reported() -> None:
    """28 1g.10gb and 8 3g.40gb on 8 GPUs is no single layout: without the mig-parted ConfigMap, GS023."""
    result = import_snapshot(parse_snapshot(UNEVEN_MIG, "cluster.yaml"), "uneven")
    (problem,) = result.diagnostics
    assert (problem.code, problem.message) == (
        SNAPSHOT_MIG_UNREADABLE,
        "the MIG layout of h100-x (mig.config 'half-and-half') cannot be read from the labels: expected the same "
        "layout on every GPU, or the mig-parted ConfigMap; pool 'h100-sxm5-80gb-mig' is written without sharing",
    )
    # issue 27: the node keeps a pool of its own, without the layout that could not be read
    assert [p["name"] for p in result.data["spec"]["nodePools"]] == ["h100-sxm5-80gb-mig", "l4"]
    assert "sharing" not in result.data["spec"]["nodePools"][0]


def test_every_snapshot_code_is_exercised() -> None:
    from gpustack.codes import CODES

    tested = {
        SNAPSHOT_MALFORMED,
        SNAPSHOT_UNKNOWN_PRODUCT,
        SNAPSHOT_NO_PRODUCT_LABEL,
        SNAPSHOT_MIG_UNREADABLE,
        "GS024",  # devicePlugin.configName, which import writes: tests/test_import_roundtrip.py
        "GS025",  # sharing.mig.configName, the same
    }  # by the tests above
    assert {code for code in CODES if "GS020" <= code <= "GS029"} == tested


def test_cli_reports_an_unwritable_output(tmp_path: Path) -> None:
    out = tmp_path / "missing" / "blueprint.yaml"
    run = CliRunner().invoke(group, ["import", str(CASES / "legacy-gfd.yaml"), "-o", str(out)])
    assert run.exit_code == 1
    assert (
        f"error[GS901]: cannot write {out}: No such file or directory; expected a writable file in an existing "
        "directory" in run.stderr
    )
    assert not out.parent.exists()


def test_hostile_label_values_stay_inside_comments() -> None:
    """A value that reaches a comment (here the MIG config name) cannot break out of it into the blueprint."""
    hostile = UNEVEN_MIG.replace(
        "nvidia.com/mig.config: half-and-half", 'nvidia.com/mig.config: "x\\nspec: {}\\u2028y"'
    )
    hostile = hostile.replace('nvidia.com/mig-1g.10gb.count: "28"', 'nvidia.com/mig-1g.10gb.count: "56"')
    hostile = hostile.replace('nvidia.com/mig-3g.40gb.count: "8"', 'nvidia.com/mig-3g.40gb.count: "16"')
    result = import_snapshot(parse_snapshot(hostile, "cluster\nspec: {}.yaml"), "hostile")
    comments = [line for line in result.text.splitlines() if line.lstrip().startswith("#")]
    assert (
        "  # guessed: MIG layout: the same on every GPU, from the node's MIG device counts divided by its 8 GPUs "
        "(the mig-parted config 'x?spec: {}?y' was not in the snapshot)" in comments
    )
    assert result.text.splitlines()[0].startswith("# Imported by `gpustack import` from cluster?spec: {}.yaml: ")
    assert parse_document(result.text, "x").data == result.data


def test_a_shared_resource_name_goes_to_the_pools_the_tenant_uses() -> None:
    """payments' requests.nvidia.com/gpu could be the A100s' or the time-sliced L4s' (both advertise nvidia.com/gpu);
    without pods it is split in pool order (a guess, commented), with a payments pod on an L4 it goes there."""
    from cluster_from import snapshot_data

    from gpustack.yamlout import dump_yaml

    original = validate_path(BLUEPRINTS / "multi-tenant.yaml").blueprint
    assert original is not None
    data = snapshot_data(original)
    blind = import_snapshot(parse_snapshot(dump_yaml(data), "cluster.yaml"), "blind")
    payments = next(t for t in blind.data["spec"]["tenants"] if t["name"] == "payments")
    assert payments["pools"] == ["a100-40-training", "h100-mig"]
    assert "  # guessed: quota nvidia.com/gpu: several pools advertise it; split over a100-40-training, l4-shared" in (
        blind.text.splitlines()
    )
    pod = {
        "kind": "Pod",
        "metadata": {"name": "scorer", "namespace": "payments"},
        "spec": {"nodeName": "l4-a", "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
        "status": {"phase": "Running"},
    }
    data["items"].append(pod)
    seen = import_snapshot(parse_snapshot(dump_yaml(data), "cluster.yaml"), "seen")
    payments = next(t for t in seen.data["spec"]["tenants"] if t["name"] == "payments")
    assert payments["pools"] == ["h100-mig", "l4-shared"]  # as the blueprint it came from says
    assert payments["quota"]["l4-shared"] == {"gpu": 8}
